"""Groupings timings: local k-NN calibration (target: 10^5 rows, k = 100 in a few seconds).

Run: python benchmarks/bench_groupings.py [--sizes 10000 100000] [--k 100] [--repeats 3]
Prints one row per (n, input space); times are the best of --repeats runs (seconds). The load
average is printed because the machine may be shared.

Input spaces: "2 num" (two continuous covariates, no ties), "4 num + cat" (four continuous and
one 12-level nominal covariate, 16 dimensions), "3 int" (three integer covariates with many
tied inputs, as in census data).
"""

import argparse
import os
import time

import numpy as np
import pandas as pd

from mcviz.agglomeration import calibration_score, cvar_curve
from mcviz.groupings import (
    covariate_bins,
    kernel_calibration,
    local_calibration,
    neighbourhood_tradeoff,
    score_bins,
)
from mcviz.io import Predictions


def make_predictions(n: int, seed: int = 0) -> Predictions:
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    covariates = {f"x{i}": rng.normal(size=n) for i in range(4)}
    covariates["c"] = pd.Categorical(rng.integers(0, 12, n).astype(str))
    covariates["age"] = rng.integers(17, 90, n)
    covariates["hours"] = rng.integers(1, 99, n)
    covariates["years"] = rng.integers(1, 16, n)
    label = (rng.random(n) < score**1.1).astype(np.int8)
    return Predictions.from_arrays(score, label, covariates=covariates)


SPACES = {
    "2 num": ["x0", "x1"],
    "4 num + cat": ["x0", "x1", "x2", "x3", "c"],
    "3 int": ["age", "hours", "years"],
}


def best(function, repeats: int) -> float:
    return best_with_cpu(function, repeats)[0]


def best_with_cpu(function, repeats: int) -> tuple[float, float]:
    """Best wall time and the CPU time of that run (all threads of this process)."""
    runs = []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        function()
        runs.append((time.perf_counter() - start, time.process_time() - cpu))
    return min(runs)


def row(pred: Predictions, name: str, covariates: list[str], k: int, repeats: int) -> str:
    holder = {}

    def run_local():
        holder["local"] = local_calibration(pred, covariates, k=k)

    t_local, cpu_local = best_with_cpu(run_local, repeats)
    local = holder["local"]
    t_cvar = best(
        lambda: (cvar_curve(local.groups), calibration_score(local.groups, "cvar:0.9")), repeats
    )
    t_kernel = best(
        lambda: kernel_calibration(pred, covariates, bandwidth=0.3, max_centres=10_000), 1
    )
    t_tradeoff = best(lambda: neighbourhood_tradeoff(pred, covariates), 1)
    t_bins = best(
        lambda: (score_bins(pred, n_bins=20, strategy="count"),
                 covariate_bins(pred, ["age", "c"], n_bins=10)),
        repeats,
    )
    dims = local.space.matrix.shape[1]
    return (
        f"{pred.n:>8,} {name:>12} {dims:>5} {t_local:>8.2f} {cpu_local:>8.2f} {t_cvar:>8.3f} "
        f"{t_kernel:>8.2f} {t_tradeoff:>10.2f} {t_bins:>8.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    header = (
        f"{'n':>8} {'space':>12} {'dims':>5} {'k-NN':>8} {'k-NN cpu':>8} {'CVaR':>8} "
        f"{'kernel*':>8} {'tradeoff*':>10} {'bins':>8}"
    )
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        pred = make_predictions(n)
        for name, covariates in SPACES.items():
            print(row(pred, name, covariates, args.k, args.repeats))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print(
        f"k-NN: local_calibration with k = {args.k} at every point (tree build, search, sums); "
        "k-NN cpu: CPU seconds of that run (all threads); "
        "CVaR: curve of 201 alphas plus one score; kernel*: bandwidth 0.3 at 10,000 sampled "
        "centres; tradeoff*: k in 10..1000 at 2,000 sampled centres; bins: 20 score bins and "
        "an age x c grid."
    )


if __name__ == "__main__":
    main()
