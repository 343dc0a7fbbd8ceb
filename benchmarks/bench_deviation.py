"""Timings of the subpopulation deviation, reliability bins and classical metrics.

Run: python benchmarks/bench_deviation.py [--sizes 10000 100000 1000000] [--repeats 3]
Prints one row per n; the subpopulation is a random 10% of the rows; the data are weighted.
Times are the best of --repeats runs (seconds). Target: deviation at n = 10^6 with a 10^5-row
subpopulation in about 0.05 s.
"""

import argparse

import numpy as np
from timing import best

from mcviz.io import Predictions
from mcviz.present.figures import deviation_figure, reliability_figure
from mcviz.stats.binning import calibration_metrics, reliability_diagrams
from mcviz.stats.deviation import subpopulation_deviation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    columns = [
        ("n", 10), ("deviation", 10), ("dev fig", 9), ("width", 8), ("count", 8),
        ("ratio", 8), ("width+20bs", 11), ("rel fig", 8), ("metrics", 8),
    ]
    print("".join(f"{name:>{width}}" for name, width in columns))
    print("reliability: bins 10/20/50 for the full population and the subpopulation")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        score = rng.random(n)
        pred = Predictions.from_arrays(
            score, (rng.random(n) < score**1.1).astype(np.int8), weight=rng.random(n) + 0.5
        )
        index = np.sort(rng.choice(n, n // 10, replace=False))
        deviation = subpopulation_deviation(pred, index)
        reliability = reliability_diagrams(pred, index=index, n_bootstrap=20)
        row = [
            best(lambda: subpopulation_deviation(pred, index), args.repeats),  # noqa: B023
            best(lambda: deviation_figure(deviation), args.repeats),  # noqa: B023
        ]
        for kind in ("equal_width", "equal_count", "similar_ratio"):
            row.append(best(
                lambda kind=kind: reliability_diagrams(pred, index=index, kind=kind,  # noqa: B023
                                                       n_bootstrap=0),
                args.repeats,
            ))
        row.append(best(lambda: reliability_diagrams(pred, index=index, n_bootstrap=20),  # noqa: B023
                        args.repeats))
        row.append(best(lambda: reliability_figure(reliability), args.repeats))  # noqa: B023
        row.append(best(lambda: calibration_metrics(pred), args.repeats))  # noqa: B023
        cells = [f"{n:>{columns[0][1]},}"]
        cells += [f"{value:>{width}.4f}" for value, (_, width) in zip(row, columns[1:],
                                                                       strict=True)]
        print("".join(cells))


if __name__ == "__main__":
    main()
