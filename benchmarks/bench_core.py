"""Core timings: reading CSV and Parquet, building Predictions, D/G/sigma/p, decimation.

Run: python benchmarks/bench_core.py [--sizes 10000 100000 1000000]
Prints one row per n; times are the best of --repeats runs (seconds).
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from timing import best

from mcviz import cumulative_differences, decimate_path, load_predictions, read_table


def make_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Twelve columns: score, label, weight, six numeric and three categorical covariates."""
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    frame = pd.DataFrame(
        {
            "score": score,
            "label": (rng.random(n) < score**1.1).astype(np.int8),
            "weight": rng.random(n) + 0.5,
        }
    )
    for i in range(6):
        frame[f"x{i}"] = rng.normal(size=n).round(3)
    for i, levels in enumerate((3, 12, 40)):
        frame[f"c{i}"] = pd.Categorical(rng.integers(0, levels, n).astype(str))
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    header = (
        f"{'n':>10} {'csv read':>9} {'pq read':>9} {'csv load':>9} {'pq load':>9} {'build':>9} "
        f"{'+covs':>9} "
        f"{'D/G/σ/p':>9} {'decimate':>9}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for n in args.sizes:
            frame = make_frame(n)
            csv_path = Path(folder) / f"p{n}.csv"
            parquet_path = Path(folder) / f"p{n}.parquet"
            frame.to_csv(csv_path, index=False)
            frame.to_parquet(parquet_path)
            csv_read = best(lambda p=csv_path: read_table(p), args.repeats)
            parquet_read = best(lambda p=parquet_path: read_table(p), args.repeats)
            csv_load = best(lambda p=csv_path: load_predictions(p, weight="weight"), args.repeats)
            parquet_load = best(
                lambda p=parquet_path: load_predictions(p, weight="weight"), args.repeats
            )
            table = read_table(parquet_path)
            build = best(lambda t=table: load_predictions(t, weight="weight"), args.repeats)
            covariates = best(
                lambda t=table: load_predictions(t, weight="weight").covariates, args.repeats
            )
            pred = load_predictions(table, weight="weight")
            statistics = best(lambda p=pred: cumulative_differences(p), args.repeats)
            path = cumulative_differences(pred).path
            decimation = best(lambda p=path: decimate_path(p), args.repeats)
            print(
                f"{n:>10,} {csv_read:>9.3f} {parquet_read:>9.3f} {csv_load:>9.3f} "
                f"{parquet_load:>9.3f} {build:>9.3f} {covariates:>9.3f} {statistics:>9.3f} "
                f"{decimation:>9.4f}"
            )
    print("\ncsv/pq read: file to DataFrame; csv/pq load: file to validated, sorted Predictions")
    print("(what `mcviz metrics FILE` loads); build: DataFrame to Predictions; +covs: build and")
    print("read .covariates (all 9 in score order); D/G/σ/p: cumulative_differences.")


if __name__ == "__main__":
    main()
