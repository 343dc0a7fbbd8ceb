"""Timings of the classical calibration measures (mcviz.stats.measures), all together and one by one.

Run: python benchmarks/bench_measures.py [--sizes 10000 100000 1000000] [--repeats 3]
         [--weighted] [--ties]

Prints one row per n: ``all`` is :func:`classical_measures` (binned metrics, smECE, CORP
decompositions, intercept/slope/O-E, ICI/E50/E90, Hosmer-Lemeshow) on freshly validated rows;
the other columns time each part alone, each with its own validation. The diagrams with
resampling (smoothed diagram with 200 bootstrap replicates, CORP with 100 consistency
resamples) are timed separately: they are not part of ``all``. Times are the best of
``--repeats`` runs (seconds), wall-clock for ``all``, else the process's CPU time (the
code is single-threaded, so on a loaded machine the CPU time is the better guide to the
wall-clock time on a quiet one). Target: ``all`` <= 0.5 s at n = 10^6 on a quiet 2-core machine.
Scores are Beta(2, 5) with P(R = 1 | S) = S^1.2; ``--ties`` rounds them to 3 decimals.

``python benchmarks/bench_measures.py --references`` prints instead the largest differences from
the reference implementations (relplot, model-diagnostics, statsmodels: test dependencies).
"""

import argparse
import time

import numpy as np
from timing import best

from mcviz.io import Predictions
from mcviz.stats.binning import calibration_metrics
from mcviz.stats.measures import (
    calibration_curve_summary,
    classical_measures,
    corp_reliability,
    hosmer_lemeshow,
    logistic_recalibration,
    score_decomposition,
    smooth_ece,
    smooth_reliability,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--weighted", action="store_true")
    parser.add_argument("--ties", action="store_true")
    parser.add_argument("--diagrams", action="store_true",
                        help="also time the smoothed and CORP diagrams with their bands")
    args = parser.parse_args()
    parts = {
        "metrics": lambda p: calibration_metrics(p),
        "smECE": lambda p: smooth_ece(p),
        "CORP": lambda p: score_decomposition(p),
        "int/slope": lambda p: logistic_recalibration(p),
        "ICI": lambda p: calibration_curve_summary(p),
        "HL": lambda p: hosmer_lemeshow(p),
    }
    columns = ["n", "all", "all (CPU)", *parts]
    if args.diagrams:
        columns += ["smooth+200bs", "CORP+100rs"]
    print("".join(f"{name:>13}" for name in columns))
    for n in args.sizes:
        rng = np.random.default_rng(0)
        score = rng.beta(2, 5, n)
        if args.ties:
            score = np.round(score, 3).clip(0.001, 0.999)
        label = (rng.random(n) < score**1.2).astype(np.int8)
        weight = rng.uniform(0.5, 2.0, n) if args.weighted else None
        pred = Predictions.from_arrays(score, label, weight)
        row = [best(lambda: classical_measures(pred), args.repeats)]  # noqa: B023
        row.append(best(lambda: classical_measures(pred), args.repeats,  # noqa: B023
                        clock=time.process_time))
        row += [best(lambda f=f: f(pred), args.repeats, clock=time.process_time)  # noqa: B023
                for f in parts.values()]
        if args.diagrams:
            row.append(best(lambda: smooth_reliability(pred), 1))  # noqa: B023
            row.append(best(lambda: corp_reliability(pred), 1))  # noqa: B023
        print(f"{n:>13,}" + "".join(f"{t:>13.3f}" for t in row), flush=True)


def references() -> None:
    """Print the largest differences from the reference implementations (test dependencies).

    Cases: the demo and a synthetic set (Beta(2, 3) scores, logit P = 0.4 + 0.6 logit S),
    unweighted and with integer weights in 1..4 (relplot, which has no weights, gets the rows
    repeated by their weights).
    """
    import relplot
    import statsmodels.api as sm
    from model_diagnostics.scoring import LogLoss, SquaredError, decompose

    from mcviz.io import load_demo

    demo = load_demo("adult")
    rng = np.random.default_rng(11)
    score = rng.beta(2, 3, 20_000)
    truth = 1 / (1 + np.exp(-(0.4 + 0.6 * np.log(score / (1 - score)))))
    synthetic = (score, (rng.random(score.size) < truth).astype(float))
    print(f"{'measure':<28}{'reference':<34}{'data':<22}{'max |abs|':>11}{'max rel':>11}")
    for name, (s, y) in (("demo", (demo.score, demo.label)), ("synthetic", synthetic)):
        for weighted in (False, True):
            w = rng.integers(1, 5, s.size).astype(float) if weighted else None
            pred = Predictions.from_arrays(s, y, w)
            label = f"{name}, {'weighted' if weighted else 'unweighted'}"
            repeats = pred.weight.astype(int)
            ours = smooth_ece(pred)
            value, sigma = relplot.smECE(np.repeat(pred.score, repeats),
                                         np.repeat(pred.label, repeats), return_width=True)
            _row("smECE, sigma*", "relplot 1.0.3 smECE", label,
                 [(ours.smece, value), (ours.sigma, sigma)])
            pairs = []
            for score_name, function in (("brier", SquaredError()), ("log_loss", LogLoss())):
                d = score_decomposition(pred, score=score_name)
                ref = decompose(pred.label, pred.score, w if w is None else pred.weight,
                                scoring_function=function).row(0, named=True)
                pairs += [(getattr(d, k), ref[k]) for k in
                          ("miscalibration", "discrimination", "uncertainty", "score")]
            _row("MCB/DSC/UNC (Brier, log)", "model-diagnostics 1.5.0 decompose", label, pairs)
            fit = logistic_recalibration(pred)
            eta = np.log(pred.score / (1 - pred.score))
            family = sm.families.Binomial()
            weight = None if w is None else pred.weight
            offset = sm.GLM(pred.label, np.ones((pred.n, 1)), family=family, offset=eta,
                            freq_weights=weight).fit(tol=1e-12)
            slope = sm.GLM(pred.label, sm.add_constant(eta), family=family,
                           freq_weights=weight).fit(tol=1e-12)
            _row("intercept, slope (+SE)", "statsmodels 0.15 GLM Binomial", label,
                 [(fit.intercept, offset.params[0]), (fit.intercept_se, offset.bse[0]),
                  (fit.slope, slope.params[1]), (fit.slope_se, slope.bse[1])])


def _row(measure: str, reference: str, data: str, pairs: list) -> None:
    ours, theirs = np.array(pairs, dtype=float).T
    absolute = np.abs(ours - theirs)
    relative = absolute / np.maximum(np.abs(theirs), 1e-300)
    print(f"{measure:<28}{reference:<34}{data:<22}{absolute.max():>11.1e}{relative.max():>11.1e}")


if __name__ == "__main__":
    import sys

    if "--references" in sys.argv:
        references()
    else:
        main()
