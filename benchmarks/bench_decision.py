"""Coverage of the bootstrap 95% interval of the loss per 1,000 decisions (mcviz.decision).

    nice -n 10 prlimit --as=6000000000 -- python benchmarks/bench_decision.py [--datasets 300]

For each simulated dataset (planted data of mcviz.recalibration.simulate: a global distortion
and two findings; ``--rows`` rows, half held out), a Platt fix is fitted on the fit half and
``decision_impact`` gives the loss per 1,000 decisions on the held-out half with its 95%
bootstrap interval (1,000 replicates). The population value of that loss *for the fitted map*
is measured on one fixed reference sample of 10^6 rows from the same process, with the true
probabilities in place of the responses (its Monte-Carlo error is ~20 times smaller than the
intervals). Prints, per threshold and for unweighted and weighted data (weights 0.5/1/2), the
share of intervals that cover the population value, with its binomial standard error.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mcviz.decision import decision_impact
from mcviz.io import load_predictions
from mcviz.recalibration import Recalibrator, holdout_split, subset
from mcviz.recalibration.simulate import planted_fix_data

THRESHOLDS = (0.2, 0.3, 0.5)


def _load(frame, weighted):
    return load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            weight="weight" if weighted else False,
                            covariates=["region", "age", "channel", "tenure"])


def population_loss(reference, fix, weighted):
    """1,000 x (NB(recalibrated) - NB(model)) with E over the reference rows' true p."""
    pred, truth = reference
    fixed = fix.transform(pred)
    w = pred.weight
    out = []
    for t in THRESHOLDS:
        odds = t / (1 - t)
        gain = truth - (1 - truth) * odds
        change = (fixed >= t).astype(float) - (pred.score >= t)
        out.append(1000 * float(np.sum(w * change * gain)) / float(w.sum()))
    return np.array(out)


def coverage(datasets: int, rows: int, weighted: bool, seed: int) -> tuple[np.ndarray, float]:
    frame = planted_fix_data(1_000_000, seed=10_000 + seed, weighted=weighted)
    reference_pred = _load(frame, weighted)
    truth = frame["truth"].to_numpy()[reference_pred.row]
    reference = (reference_pred, truth)
    hits = np.zeros(len(THRESHOLDS))
    widths = []
    started = time.perf_counter()
    for d in range(datasets):
        pred = _load(planted_fix_data(rows, seed=seed + d, weighted=weighted), weighted)
        fit, held = holdout_split(pred, 0.5, seed=d)
        fix = Recalibrator("platt").fit(subset(pred, fit))
        evaluation = subset(pred, held)
        impact = decision_impact(evaluation, fix.transform(evaluation), thresholds=THRESHOLDS,
                                 n_bootstrap=1000, seed=d)
        true = population_loss(reference, fix, weighted)
        hits += (impact.ci_low <= true) & (true <= impact.ci_high)
        widths.append(impact.ci_high - impact.ci_low)
    return hits / datasets, time.perf_counter() - started, np.mean(widths, axis=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=300)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    se = np.sqrt(0.95 * 0.05 / args.datasets)
    print(f"{args.datasets} datasets of {args.rows:,} rows (held out {args.rows // 2:,}); "
          f"binomial SE of a 95% coverage: {se:.3f}")
    print("| data | threshold | coverage | mean CI width (per 1,000) | seconds |")
    print("|---|---|---|---|---|")
    for weighted in (False, True):
        share, seconds, width = coverage(args.datasets, args.rows, weighted, seed=1 + weighted)
        for k, t in enumerate(THRESHOLDS):
            print(f"| {'weighted' if weighted else 'unweighted'} | {t} | {share[k]:.3f} | "
                  f"{width[k]:.2f} | {seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
