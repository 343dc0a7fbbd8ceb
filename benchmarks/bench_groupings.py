"""Groupings timings and peak memory: k-NN local calibration, one case per subprocess.

Run: python benchmarks/bench_groupings.py [--cases 1 2 3] [--limit 4GB] [--k 100]

Each case runs in its own Python subprocess (under ``prlimit --as`` when ``--limit`` is given,
so a case that would exhaust memory fails alone) and prints: the input space, rows, centres,
wall seconds of ``local_calibration``, its CPU seconds (all threads; less sensitive to a
loaded machine than wall time; the k-d tree searches use both cores) and the process's peak
resident memory before and after it (``ru_maxrss``; "before" includes building the
predictions). A refusal by the resource
model (:mod:`mcviz.budget`) is printed as such. The load average is printed because the machine
may be shared.

Cases (k = 100):
1. "2 num": two continuous covariates, 10^5 rows, every row a centre;
2. "3 int": three integer covariates with many tied inputs (census-like), 10^5, every row;
3. "4 num + 12-level": four continuous and one 12-level nominal covariate, 10^5, every row;
4. "4 num + 1 nominal": four continuous and one 100-level nominal, 10^5, 2,000 centres (the
   dashboard's default);
5. 10^6 rows, four continuous and one 500-level nominal, 2,000 centres;
6. 3 x 10^6 rows, three continuous, two integer and one 471-level nominal (the shape of the
   upload of issue 16), 2,000 centres.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CASES = {
    1: ("2 num", 100_000, {"num": 2}, None),
    2: ("3 int", 100_000, {"int": 3}, None),
    3: ("4 num + 12-level", 100_000, {"num": 4, "levels": 12}, None),
    4: ("4 num + 1 nominal (100)", 100_000, {"num": 4, "levels": 100}, 2_000),
    5: ("4 num + 500-level", 1_000_000, {"num": 4, "levels": 500}, 2_000),
    6: ("3 num + 2 int + 471-level", 3_000_000, {"num": 3, "int": 2, "levels": 471}, 2_000),
}


def _make(n: int, spec: dict, seed: int = 0):
    import numpy as np
    import pandas as pd

    from mcviz.io import Predictions

    rng = np.random.default_rng(seed)
    score = rng.random(n)
    covariates = {}
    for i in range(spec.get("num", 0)):
        covariates[f"x{i}"] = rng.normal(size=n)
    for i, high in zip(range(spec.get("int", 0)), (90, 99, 16), strict=False):
        covariates[f"i{i}"] = rng.integers(1, high, n)
    if spec.get("levels"):
        levels = spec["levels"]
        # Zipf-like level frequencies, as in real category columns.
        p = 1.0 / np.arange(1, levels + 1)
        covariates["c"] = pd.Categorical.from_codes(
            rng.choice(levels, size=n, p=p / p.sum()), [f"L{j}" for j in range(levels)]
        )
    label = (rng.random(n) < score**1.1).astype(np.int8)
    return Predictions.from_arrays(score, label, covariates=covariates)


def _child(case: int, k: int) -> None:
    from mcviz.errors import ValidationError
    from mcviz.stats.groupings import local_calibration

    _, n, spec, centres = CASES[case]
    pred = _make(n, spec)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start, cpu = time.perf_counter(), time.process_time()
    try:
        local = local_calibration(pred, None, k=k, max_centres=centres)
        outcome = f"{local.groups.n_groups:,} groups"
    except ValidationError as error:
        outcome = f"refused: {str(error)[:160]}"
    except MemoryError:
        outcome = "MemoryError"
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "cpu": cpu, "before": before, "peak": peak,
                      "outcome": outcome}))


def _run(case: int, k: int, limit: str | None) -> dict:
    command = [sys.executable, __file__, "--child", str(case), "--k", str(k)]
    if limit:
        command = ["prlimit", f"--as={_bytes(limit)}", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"seconds": float("nan"), "cpu": float("nan"), "before": 0, "peak": 0,
                "outcome": f"died: {tail[:120]}"}
    return json.loads(lines[-1])


def _bytes(text: str) -> int:
    from mcviz.budget import parse_bytes

    return parse_bytes(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, nargs="+", default=sorted(CASES))
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--limit", default=None, help="address-space limit, e.g. 4GB")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.k)
        return
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    header = f"{'case':<28} {'rows':>10} {'centres':>8} {'seconds':>8} {'cpu s':>7} " \
             f"{'RSS before':>10} {'peak RSS':>9}  outcome"
    print(header)
    print("-" * len(header))
    for case in args.cases:
        name, n, _, centres = CASES[case]
        r = _run(case, args.k, args.limit)
        print(
            f"{name:<28} {n:>10,} {centres or n:>8,} {r['seconds']:>8.2f} {r['cpu']:>7.2f} "
            f"{r['before'] / 1e9:>9.2f}G {r['peak'] / 1e9:>8.2f}G  {r['outcome']}",
            flush=True,
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
