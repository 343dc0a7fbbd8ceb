"""Timings of the classical calibration measures (mcviz.measures), all together and one by one.

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
"""

import argparse
import time

import numpy as np

from mcviz.binning import calibration_metrics
from mcviz.io import Predictions
from mcviz.measures import (
    calibration_curve_summary,
    classical_measures,
    corp_reliability,
    hosmer_lemeshow,
    logistic_recalibration,
    score_decomposition,
    smooth_ece,
    smooth_reliability,
)


def best(function, repeats: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeats):
        start = clock()
        function()
        times.append(clock() - start)
    return min(times)


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


if __name__ == "__main__":
    main()
