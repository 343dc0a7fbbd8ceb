"""Benchmark the command line's start and its two main runs against bare numpy scripts (issue 28).

Three ratios, each the median of ``--repeat`` runs of whole processes (interpreter start,
imports, reading the file and the work), timed wall-clock and run one after the other:

1. ``mcviz --help`` against ``python -c "import numpy"``
   (targets: at most 0.3 s and at most 2.5 times ``import numpy``);
2. ``mcviz metrics FILE --json`` at 10^6 rows (D, G, σ, D/σ, p and the classical measures)
   against a bare numpy + pyarrow script that reads the same Parquet file and computes D, G, σ
   and p (paper 000 eqs. (1), (2), (5); the Brownian-range tail) (target: at most 2 times);
3. ``mcviz metrics FILE --covariates x0,...,x9 --subpopulations 1000 --json`` at 10^6 rows
   against the naive reference ``benchmarks/bench_multical.py --naive FILE`` (numpy + pyarrow:
   Algorithm 1 of paper 000 with a full-length boolean mask per split, ℓ = 1000, m = 10, and
   eq. (4); same subpopulations and M as mcviz, see that file) (target: at most 0.25 times).

Each process's CPU time (user + system, from ``getrusage``) is reported beside its wall time:
on a shared machine the CPU ratio is the steadier one.

Both sides run as an installed program does: with their modules' bytecode cached (``pip install``
compiles it; an editable install writes it on first import). The caches go to a private
directory (``PYTHONPYCACHEPREFIX``, filled by each command's untimed warm-up run), and a
``PYTHONDONTWRITEBYTECODE`` in the caller's environment is dropped for the timed processes: with
it, every run compiled mcviz's ~70 modules again (about 0.15-0.2 s a run, measured on
30 Nov 2026 with ``python -v``: "source_to_code" for each of them), a cost no installed copy pays.

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
import resource
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
    import math
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
    # P(range of Brownian motion on [0, 1] > z): the series mcviz sums (core/brownian.py)
    if z >= 1.5:
        p = 8 * sum((-1) ** (k - 1) * k * 0.5 * math.erfc(k * z / math.sqrt(2))
                    for k in range(1, 60))
    else:
        p = 1 - sum((8 / z**2 + 8 / (math.pi * (2 * j + 1)) ** 2)
                    * math.exp(-((math.pi * (2 * j + 1)) ** 2) / (2 * z**2)) for j in range(60))
    print(kuiper, ks, sigma, p)
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


_BYTECODE: list[str] = []  # the private bytecode directory, made by main()


def environment() -> dict[str, str]:
    """The timed processes' environment: the tree on the path, bytecode cached privately."""
    env = {key: value for key, value in os.environ.items()
           if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": _BYTECODE[0]}


def timed(command: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) time of one process (output discarded; failure stops)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env=environment())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(ours: list[str], reference: list[str], repeat: int) -> tuple:
    """Wall and CPU times of two commands run alternately (one warm-up run each first).

    Returns the medians (ours wall, ours cpu, reference wall, reference cpu), then the minima.
    """
    timed(ours), timed(reference)
    a, b = [], []
    for _ in range(repeat):
        a.append(timed(ours))
        b.append(timed(reference))
    return (statistics.median(w for w, _ in a), statistics.median(c for _, c in a),
            statistics.median(w for w, _ in b), statistics.median(c for _, c in b),
            min(w for w, _ in a), min(c for _, c in a), min(w for w, _ in b), min(c for _, c in b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (medians)")
    parser.add_argument("--skip-multical", action="store_true")
    parser.add_argument("--skip-help", action="store_true")
    args = parser.parse_args()
    python = sys.executable
    rows = []
    if not args.skip_help:
        rows.append(("mcviz --help", 'python -c "import numpy"', "<= 2.5 (<= 0.3 s)",
                     *compare([python, "-m", "mcviz", "--help"],
                              [python, "-c", "import numpy"], args.repeat)))
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as directory:
        path = str(make_file(args.rows, Path(directory)))
        base = [python, "-m", "mcviz", "metrics", path, "--score", "score", "--label", "label",
                "--json"]
        rows.append((f"mcviz metrics --json ({args.rows:,} rows)",
                     "bare numpy+pyarrow: D, G, sigma, p", "<= 2",
                     *compare(base, [python, "-c", BARE_METRICS, path], args.repeat)))
        if not args.skip_multical:
            covariates = ",".join(f"x{j}" for j in range(10))
            naive = [python, str(ROOT / "benchmarks" / "bench_multical.py"), "--naive", path]
            rows.append((f"mcviz metrics --subpopulations 1000 ({args.rows:,})",
                         "bench_multical.py --naive (Alg. 1 + eq. 4)", "<= 0.25",
                         *compare([*base, "--covariates", covariates, "--subpopulations", "1000"],
                                  naive, max(1, args.repeat // 2))))
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"({os.cpu_count()} CPUs); medians of {args.repeat} runs; wall s and CPU s (user+sys)")
    print(f"{'command':<44} {'wall':>6} {'cpu':>6}   {'reference':<42} {'wall':>6} {'cpu':>6} "
          f"{'ratio':>5} {'cpu':>5}  target")
    for name, reference, target, a, a_cpu, b, b_cpu, *_least in rows:
        print(f"{name:<44} {a:>6.2f} {a_cpu:>6.2f}   {reference:<42} {b:>6.2f} {b_cpu:>6.2f} "
              f"{a / b:>5.2f} {a_cpu / b_cpu:>5.2f}  {target}")
    print("fastest runs (a loaded machine slows the longer, larger process more; the minima are "
          "the least disturbed):")
    for name, _reference, _target, *_medians, a, a_cpu, b, b_cpu in rows:
        print(f"  {name:<44} wall {a:.2f} / {b:.2f} = {a / b:.2f}   "
              f"cpu {a_cpu:.2f} / {b_cpu:.2f} = {a_cpu / b_cpu:.2f}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="bench-cli-pycache-") as bytecode:
        _BYTECODE.append(bytecode)
        main()
