"""Benchmark Algorithm 1 and the metric M (issue 3): time and peak memory.

n = 10^4, 10^5, 10^6 rows, p = 10 covariates, ℓ = 1000 subpopulations, m = 10, in two cases:
covariates with about 1,000 distinct values each (five integer-valued, five rounded reals) and
continuous covariates (about n distinct values). Each case runs in a fresh process. Memory:
"rss" is the resident size once the predictions are loaded, "peak" the high-water mark of the
resident size during generation plus metric (the kernel's counter is reset first, so loading
the data does not count), and "traced" the tracemalloc peak of the allocations made by
generation plus metric alone. Times are wall-clock ("s") and CPU ("cpu", robust to a busy
machine), the best of ``--repeat`` runs.

Run:  python benchmarks/bench_multical.py [--sizes 10000,100000,1000000] [--repeat 3]
Targets at n = 10^6 (2-core machine): generation + metric ≤ 1.5 s (1,000 distinct values) and
≤ 3 s (continuous); peak memory ≤ 600 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np


def make_predictions(n: int, case: str, seed: int = 0):
    from mcviz.io import Predictions

    rng = np.random.default_rng(seed)
    score = rng.random(n)
    label = (rng.random(n) < score).astype(np.int8)
    covariates = {}
    for j in range(10):
        if case == "discrete":
            values = rng.integers(0, 1000, n).astype(float) if j < 5 else np.round(
                rng.random(n), 3
            )
        else:
            values = rng.normal(size=n)
        covariates[f"x{j}"] = values
    return Predictions.from_arrays(score, label, covariates=covariates)


def _status(field: str) -> float:
    """A memory field of /proc/self/status in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux >= 4.0)


def _release_free_memory() -> None:
    """Hand freed heap pages back to the system (glibc) so "rss" shows what is in use."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def run_case(n: int, case: str, repeat: int) -> dict:
    from mcviz.multical import multicalibration
    from mcviz.subpopulations import generate_subpopulations

    pred = make_predictions(n, case)
    gc.collect()
    _release_free_memory()
    rss = _status("VmRSS")
    best = {"generation_s": float("inf"), "metric_s": float("inf"),
            "generation_cpu": float("inf"), "metric_cpu": float("inf")}
    peak = traced = 0.0
    for attempt in range(repeat + 1):
        trace = attempt == repeat  # the last run only measures memory
        gc.collect()
        _reset_peak()
        if trace:
            tracemalloc.start()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        subpopulations = generate_subpopulations(pred, n_subpopulations=1000, min_size=10, seed=0)
        wall1, cpu1 = time.perf_counter(), time.process_time()
        result = multicalibration(pred, subpopulations)
        wall2, cpu2 = time.perf_counter(), time.process_time()
        if trace:
            traced = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        else:
            peak = max(peak, _status("VmHWM"))
            for key, value in (("generation_s", wall1 - wall0), ("metric_s", wall2 - wall1),
                               ("generation_cpu", cpu1 - cpu0), ("metric_cpu", cpu2 - cpu1)):
                best[key] = min(best[key], value)
        count = result.n_subpopulations
        members = int(sum(s.size for s in result.subpopulations))
        del subpopulations, result  # nothing of this run is alive during the next one
    return {
        "n": n,
        "case": case,
        **best,
        "rss_mb": rss,
        "peak_mb": peak,
        "traced_mb": traced,
        "subpopulations": count,
        "members": members,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (best kept)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        n, case = args.one.split(":")
        print(json.dumps(run_case(int(n), case, args.repeat)))
        return
    rows = []
    for case in ("discrete", "continuous"):
        for n in (int(s) for s in args.sizes.split(",")):
            output = subprocess.run(
                [sys.executable, __file__, "--one", f"{n}:{case}", "--repeat", str(args.repeat)],
                check=True, capture_output=True, text=True,
            ).stdout
            rows.append(json.loads(output.strip().splitlines()[-1]))
    header = (f"{'case':<11} {'n':>9} {'gen s':>6} {'metric s':>8} {'total s':>7} "
              f"{'gen cpu':>7} {'met cpu':>7} {'tot cpu':>7} {'rss MB':>6} {'peak MB':>7} "
              f"{'traced MB':>9} {'subpops':>7} {'members':>10}")
    print(header)
    print("-" * len(header))
    for r in rows:
        label = "1,000 dist." if r["case"] == "discrete" else "continuous"
        print(f"{label:<11} {r['n']:>9,} {r['generation_s']:>6.3f} {r['metric_s']:>8.3f} "
              f"{r['generation_s'] + r['metric_s']:>7.3f} {r['generation_cpu']:>7.3f} "
              f"{r['metric_cpu']:>7.3f} {r['generation_cpu'] + r['metric_cpu']:>7.3f} "
              f"{r['rss_mb']:>6.0f} {r['peak_mb']:>7.0f} {r['traced_mb']:>9.0f} "
              f"{r['subpopulations']:>7,} {r['members']:>10,}")

if __name__ == "__main__":
    main()
