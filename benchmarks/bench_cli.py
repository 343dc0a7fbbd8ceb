"""Benchmark the command line's start and its two main runs against bare numpy scripts (issue 28).

Three ratios, each the median of ``--repeat`` runs of whole processes (interpreter start,
imports, reading the file and the work), timed wall-clock and run one after the other:

1. ``mcviz --help`` against ``python -c "import numpy"``
   (targets: at most 0.3 s and at most 2.5 times ``import numpy``);
2. ``mcviz metrics FILE --json`` at 10^6 rows (D, G, σ, D/σ, p and the classical measures)
   against a bare numpy + pyarrow script that reads the same Parquet file and computes D, G, σ
   and p (paper 000 eqs. (1), (2), (5); the Brownian-range tail) (target: at most 2 times);
3. ``mcviz metrics FILE --covariates x0,...,x9 --subpopulations 1000 --json`` at 10^6 rows
   against the naive reference: the same bare script running Algorithm 1 of paper 000 with a
   full-length boolean mask per split (random median splits of the distinct values of the
   members, ℓ = 1000, m = 10) and eq. (4) over the subpopulations (target: at most 0.25 times).

The data are ``bench_multical.py``'s "1,000 distinct values" case: uniform scores, labels drawn
from them, ten covariates (five integers in [0, 1000), five reals rounded to 3 decimals).

Run:  nice -n 10 prlimit --as=4000000000 -- python benchmarks/bench_cli.py [--rows 1000000]
      [--repeat 5]
The machine's load average is printed with the table: on a shared machine the ratios are the
numbers to read (both sides of each ratio run under the same load, alternately).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

BARE_METRICS = textwrap.dedent("""
    import sys
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(sys.argv[1], columns=["score", "label"])
    score = table.column("score").to_numpy()
    label = table.column("label").to_numpy().astype(float)
    order = np.argsort(score)
    s, r = score[order], label[order]
    n = s.size
    ends = np.flatnonzero(np.append(s[1:] != s[:-1], True))  # last row of each tie run
    path = np.concatenate(([0.0], np.cumsum(r - s)[ends] / n))  # eq. (1)
    kuiper = path.max() - path.min()  # eq. (2)
    ks = np.abs(path).max()
    sigma = np.sqrt(np.sum(s * (1 - s))) / n  # eq. (5)
    z = kuiper / sigma
    k = np.arange(1, 200)
    p = min(1.0, max(0.0, float(np.sum(2 * (4 * k**2 * z**2 - 1) * np.exp(-2 * k**2 * z**2)))))
    print(kuiper, ks, sigma, p)
""")

NAIVE_MULTICAL = textwrap.dedent("""
    import sys
    import numpy as np
    import pyarrow.parquet as pq

    names = [f"x{j}" for j in range(10)]
    table = pq.read_table(sys.argv[1], columns=["score", "label", *names])
    score = table.column("score").to_numpy()
    order = np.argsort(score)
    s = score[order]
    r = table.column("label").to_numpy().astype(float)[order]
    xs = [table.column(name).to_numpy()[order] for name in names]
    n, ell, m = s.size, 1000, 10

    def measure(mask):
        rows = np.flatnonzero(mask)
        ss, rr = s[rows], r[rows]
        ends = np.flatnonzero(np.append(ss[1:] != ss[:-1], True))
        path = np.concatenate(([0.0], np.cumsum(rr - ss)[ends] / rows.size))
        return path.max() - path.min(), np.sqrt(np.sum(ss * (1 - ss))) / rows.size

    rng = np.random.default_rng(0)
    d0, sigma0 = measure(np.ones(n, bool))
    best, found, idle = d0, 0, 0
    while found < ell and idle < 1000:
        mask, size, added, stalled = np.ones(n, bool), n, False, 0
        while found < ell:
            x = xs[int(rng.integers(10))]
            median = np.median(np.unique(x[mask]))
            child = mask & ((x < median) if rng.integers(2) == 0 else (x >= median))
            child_size = int(child.sum())
            if child_size < m:
                break
            if child_size == size:
                stalled += 1
                if stalled >= 64:
                    break
                continue
            mask, size, stalled, added = child, child_size, 0, True
            found += 1
            d, sigma = measure(mask)
            best = max(best, d * sigma0 / sigma if sigma > 0 else 0.0)  # eq. (4)
        idle = 0 if added else idle + 1
    print(found, best)
""")


def make_file(rows: int, directory: Path) -> Path:
    """Write the benchmark's Parquet file (``bench_multical.py``'s discrete case)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    score = rng.random(rows)
    frame = {"score": score, "label": (rng.random(rows) < score).astype(np.int8)}
    for j in range(10):
        frame[f"x{j}"] = (rng.integers(0, 1000, rows).astype(float) if j < 5
                          else np.round(rng.random(rows), 3))
    path = directory / f"bench_{rows}.parquet"
    pd.DataFrame(frame).to_parquet(path, index=False)
    return path


def timed(command: list[str]) -> float:
    """Wall time of one process (its output discarded; a failure stops the benchmark)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - start


def compare(ours: list[str], reference: list[str], repeat: int) -> tuple[float, float]:
    """Median times of two commands run alternately (one warm-up run of each first)."""
    timed(ours), timed(reference)
    a, b = [], []
    for _ in range(repeat):
        a.append(timed(ours))
        b.append(timed(reference))
    return statistics.median(a), statistics.median(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (medians)")
    parser.add_argument("--skip-multical", action="store_true")
    args = parser.parse_args()
    python = sys.executable
    rows = []
    help_s, numpy_s = compare([python, "-m", "mcviz", "--help"],
                              [python, "-c", "import numpy"], args.repeat)
    rows.append(("mcviz --help", help_s, 'python -c "import numpy"', numpy_s, "<= 2.5 (<= 0.3 s)"))
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as directory:
        path = str(make_file(args.rows, Path(directory)))
        base = [python, "-m", "mcviz", "metrics", path, "--score", "score", "--label", "label",
                "--json"]
        ours, bare = compare(base, [python, "-c", BARE_METRICS, path], args.repeat)
        rows.append((f"mcviz metrics --json ({args.rows:,} rows)", ours,
                     "bare numpy+pyarrow: D, G, sigma, p", bare, "<= 2"))
        if not args.skip_multical:
            covariates = ",".join(f"x{j}" for j in range(10))
            ours, naive = compare([*base, "--covariates", covariates, "--subpopulations", "1000"],
                                  [python, "-c", NAIVE_MULTICAL, path], max(1, args.repeat // 2))
            rows.append((f"mcviz metrics --subpopulations 1000 ({args.rows:,})", ours,
                         "naive Algorithm 1 + eq. (4)", naive, "<= 0.25"))
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"({os.cpu_count()} CPUs); medians of {args.repeat} runs")
    print(f"{'command':<46} {'s':>7}   {'reference':<36} {'s':>7} {'ratio':>6}  target")
    for name, a, reference, b, target in rows:
        print(f"{name:<46} {a:>7.3f}   {reference:<36} {b:>7.3f} {a / b:>6.2f}  {target}")


if __name__ == "__main__":
    main()
