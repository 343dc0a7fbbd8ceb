"""Benchmark the null distribution of M (issue 14): time, CPU and peak memory.

n = 10^5 and 10^6 rows, 10 continuous covariates, l = 1000 Algorithm-1 subpopulations
(m = 10), N = 200 draws of Bernoulli(score) responses. Each size runs in a fresh process;
"peak" is the high-water mark of the resident size during the draws (reset after the data and
the subpopulations are made), "cpu" the process CPU time (robust to a busy machine).

Run:  python benchmarks/bench_null.py [--sizes 100000,1000000] [--draws 200]
Targets (2-core machine): N = 200 at 10^5 rows in <= 10 s, at 10^6 rows in <= 60 s.

Measured (2-core machine shared with other jobs, load 5-14: "s" is inflated, "cpu" is the
robust figure; same seeds, same p/median/q95 before and after):

    rows        draws  before s  before cpu  after s  after cpu
    100,000       200      26.0        15.3      4.0        3.5
    1,000,000      64     566.8        97.6     27.9       13.9
    1,000,000     200         -           -     68.7       38.6

"before": the residual matrix (rows x 32, float64) gathered member by member and summed along
axis 0; "after": 0/1 draws gathered as bytes, a row per member, transposed per group, summed
along contiguous memory (integers when unweighted), large subpopulations cut into pieces.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(n: int, draws: int) -> dict:
    import mcviz
    from mcviz.stats.significance import null_distribution

    rng = np.random.default_rng(0)
    covariates = {f"x{j}": rng.normal(size=n) for j in range(10)}
    score = 1 / (1 + np.exp(-(0.8 * covariates["x0"] + 0.5 * covariates["x1"] - 1.0)))
    label = (rng.random(n) < score).astype(np.int8)
    pred = mcviz.Predictions.from_arrays(score, label, covariates=covariates)
    subs = mcviz.generate_subpopulations(pred, n_subpopulations=1000, min_size=10, seed=0)
    members = sum(s.size for s in subs.subpopulations)
    _reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    null = null_distribution(pred, subs, draws=draws, seed=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "n": n, "l": len(subs.subpopulations) - 1, "members": members, "draws": draws,
        "s": wall, "cpu": cpu, "peak_mb": _peak_mb(), "p": null.p_value,
        "median": null.metric_z_median, "q95": null.metric_z_q95,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.draws)))
        return
    print(f"{'n':>9} {'l':>5} {'members':>11} {'draws':>5} {'s':>7} {'cpu':>7} {'peak MB':>8} "
          f"{'p':>6} {'median':>7} {'q95':>6}")
    for n in (int(x) for x in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--draws",
                              str(args.draws)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['n']:>9,} {r['l']:>5} {r['members']:>11,} {r['draws']:>5} {r['s']:>7.1f} "
              f"{r['cpu']:>7.1f} {r['peak_mb']:>8.0f} {r['p']:>6.3f} {r['median']:>7.2f} "
              f"{r['q95']:>6.2f}")


if __name__ == "__main__":
    main()
