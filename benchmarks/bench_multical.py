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

The naive reference (issue 28)
------------------------------
:func:`naive_multicalibration` is what a competent data scientist writes without mcviz from the
paper's Algorithm 1 and eq. (4): the rows sorted by score once, then for every split a
full-length boolean mask of the members (``mask & (x < v)``), the members' rows taken with it,
the cumulative differences of eq. (1) at the ends of the runs of tied scores, D (eq. (2)) and
sigma (eq. (5)) of those rows, and M = max_k D_k sigma_0 / sigma_k (eq. (4), 0/0 = 0). It is
vectorised numpy throughout (no Python loop over rows) and uses the same conventions as mcviz,
so that the two give the same subpopulations and the same M (checked by ``--check`` and by
tests/stats/test_multical_naive.py): the median of the members' distinct values is the upper one
(``sorted_distinct[size // 2]``), the random stream draws the covariate and then the side at
every step (``rng.integers(p)``, ``rng.integers(2)``; NumPy's PCG64 seeded with ``seed``), a
split that leaves fewer than m members ends the path, one that removes nobody counts as stalled
(at most 64 in a row), a membership generated before is not counted again (Section 2.3's
refinement; the reference remembers a 16-byte digest of each mask, not the mask), and the walk
stops after 1,000 paths that added nothing or 50 ℓ + 1,000 paths in all. Its cost is O(n) per
split (the masks are full length), O(n) memory. Why it is the fair reference: it is the paper's
algorithm written directly with the standard tools, with no deliberate slowness (no pandas
row filtering, no Python loops over rows, no re-sorting per subpopulation); what it does not do
is what mcviz adds (index arrays of the members instead of full masks, split points from
counts, the block evaluator of eqs. (1)-(5) over all subpopulations at once).

    python benchmarks/bench_multical.py --naive FILE.parquet   # M as a process would print it
    python benchmarks/bench_multical.py --check 100000         # naive M == mcviz M (rel 1e-9)
    python benchmarks/bench_multical.py --library 1000000      # library-only times and ratio
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


STALLED_STEPS, IDLE_PATHS, PATHS_PER_SUBPOPULATION = 64, 1000, 50  # mcviz's effort bounds


def naive_multicalibration(score: np.ndarray, label: np.ndarray, covariates: list[np.ndarray],
                           n_subpopulations: int = 1000, min_size: int = 10,
                           seed: int = 0) -> tuple[float, int]:
    """Return (M, subpopulations found) by Algorithm 1 and eq. (4) with boolean masks.

    ``score``, ``label`` and the covariates are in any row order (sorted by score here, once).
    See the module docstring for what it does and why it is the fair reference.
    """
    import hashlib

    order = np.argsort(score, kind="stable")
    s = np.asarray(score, dtype=float)[order]
    r = np.asarray(label, dtype=float)[order]
    xs = [np.asarray(x)[order] for x in covariates]
    n, p = s.size, len(xs)

    def kuiper_sigma(mask: np.ndarray) -> tuple[float, float]:
        ss, rr = s[mask], r[mask]
        ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))  # last row of each tie run
        path = np.concatenate(([0.0], np.cumsum(rr - ss)[ends] / ss.size))  # eq. (1)
        return float(path.max() - path.min()), float(np.sqrt(np.sum(ss * (1 - ss))) / ss.size)

    def digest(mask: np.ndarray) -> bytes:
        return hashlib.blake2b(np.packbits(mask).tobytes(), digest_size=16).digest()

    everyone = np.ones(n, dtype=bool)
    kuiper0, sigma0 = kuiper_sigma(everyone)
    metric = kuiper0  # eq. (4): the full population's argument is D_0
    seen = {digest(everyone)}
    rng = np.random.default_rng(seed)
    found = idle = paths = 0
    while (found < n_subpopulations and idle < IDLE_PATHS
           and paths < PATHS_PER_SUBPOPULATION * n_subpopulations + IDLE_PATHS):
        paths += 1
        mask, size, stalled, added = everyone, n, 0, False
        while found < n_subpopulations:
            x = xs[int(rng.integers(p))]
            side = int(rng.integers(2))
            distinct = np.unique(x[mask])  # sorted distinct values of the members
            below = x < distinct[distinct.size // 2]
            child = mask & (below if side == 0 else ~below)
            child_size = int(np.count_nonzero(child))
            if child_size < min_size:
                break
            if child_size == size:
                stalled += 1
                if stalled >= STALLED_STEPS:
                    break
                continue
            mask, size, stalled = child, child_size, 0
            key = digest(child)
            if key in seen:
                continue
            seen.add(key)
            found += 1
            added = True
            kuiper, sigma = kuiper_sigma(child)
            if sigma > 0:  # eq. (4); 0/0 = 0
                metric = max(metric, kuiper * sigma0 / sigma)
        idle = 0 if added else idle + 1
    return metric, found


def _naive_file(path: str) -> None:
    """Read score, label, x0..x9 of a Parquet file and print the naive M (a whole process)."""
    import pyarrow.parquet as pq

    names = [f"x{j}" for j in range(10)]
    table = pq.read_table(path, columns=["score", "label", *names])
    metric, found = naive_multicalibration(
        table.column("score").to_numpy(), table.column("label").to_numpy(),
        [table.column(name).to_numpy() for name in names])
    print(found, metric)


def _check(n: int) -> None:
    """Print the naive and mcviz's M on both cases at n rows; fail unless they agree."""
    from mcviz.stats.multical import multicalibration
    from mcviz.subpopulations import generate_subpopulations

    for case in ("discrete", "continuous"):
        pred = make_predictions(n, case)
        # the reference gets the rows in file order, not mcviz's sorted arrays
        rng = np.random.default_rng(0)
        shuffle = rng.permutation(n)
        covariates = [pred.covariates[f"x{j}"].to_numpy()[shuffle] for j in range(10)]
        naive, found = naive_multicalibration(pred.score[shuffle], pred.label[shuffle],
                                              covariates)
        subpopulations = generate_subpopulations(pred, n_subpopulations=1000, min_size=10, seed=0)
        ours = multicalibration(pred, subpopulations).metric
        agree = abs(naive - ours) <= 1e-9 * abs(ours)
        print(f"{case:<10} n={n:,} naive M={naive:.15g} ({found} subpopulations)  "
              f"mcviz M={ours:.15g} ({len(subpopulations.subpopulations) - 1})  "
              f"{'agree' if agree else 'DIFFER'}")
        if not agree:
            raise SystemExit(1)


def _library(n: int, repeat: int) -> None:
    """Time the naive reference and mcviz's library (generation + M) in one process at n rows.

    Both get arrays already in memory (no file, no imports timed); the naive reference gets the
    rows in file order and sorts them itself. Prints wall and CPU times and their ratios.
    """
    from mcviz.stats.multical import multicalibration
    from mcviz.subpopulations import generate_subpopulations

    pred = make_predictions(n, "discrete")
    shuffle = np.random.default_rng(0).permutation(n)
    covariates = [pred.covariates[f"x{j}"].to_numpy()[shuffle] for j in range(10)]
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        naive, _found = naive_multicalibration(pred.score[shuffle], pred.label[shuffle],
                                               covariates)
        naive_wall, naive_cpu = time.perf_counter() - wall, time.process_time() - cpu
        wall, cpu = time.perf_counter(), time.process_time()
        subpopulations = generate_subpopulations(pred, n_subpopulations=1000, min_size=10, seed=0)
        ours = multicalibration(pred, subpopulations).metric
        ours_wall, ours_cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"n={n:,}: naive {naive_wall:.2f} s wall {naive_cpu:.2f} s CPU; mcviz library "
              f"{ours_wall:.2f} s wall {ours_cpu:.2f} s CPU; ratio {ours_wall / naive_wall:.3f} "
              f"wall {ours_cpu / naive_cpu:.3f} CPU; same M: {naive == ours}")


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
    from mcviz.stats.multical import multicalibration
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
    parser.add_argument("--naive", metavar="FILE", help="print the naive reference's M for FILE")
    parser.add_argument("--check", type=int, metavar="N",
                        help="compare the naive reference's M with mcviz's at N rows")
    parser.add_argument("--library", type=int, metavar="N",
                        help="time the naive reference and mcviz's library in one process")
    args = parser.parse_args()
    if args.naive:
        _naive_file(args.naive)
        return
    if args.check:
        _check(args.check)
        return
    if args.library:
        _library(args.library, args.repeat)
        return
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
