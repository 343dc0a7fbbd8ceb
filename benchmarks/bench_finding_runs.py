"""What a finding's exact runs cost at their peak in ``mcviz report --engine duckdb``'s deck.

:data:`mcviz.engines.memory.FINDING_RUN_BYTES` (bytes per distinct score of a finding whose
deviation is drawn exactly; :data:`~mcviz.engines.memory.FINDING_WEIGHTED_RUN_BYTES` with a
weight column) against the measured peak, as ``bench_budget.py`` measures: each
shape runs in a fresh subprocess under an address-space cap (4 GB by default). The child opens
the Parquet file with DuckDB under a 384MB limit (well over
:data:`~mcviz.engines.memory.FINDING_ENGINE_RUN_BYTES` per edge of eq. (7) beside its 128 MiB
floor), takes the full
population's runs (fine bins above 2^20 distinct scores) and the finding's counts as the deck
does, collects
garbage and trims, resets the kernel's peak-RSS mark (``/proc/self/clear_refs``), then draws the
finding's charts as the deck draws a finding whose rows are not read
(``mcviz.cli.report``'s ``_finding_charts``: its runs per distinct score, every row summed
between them, the deviation, its own calibration, reliability and LCS from the runs, the
figures). Printed per shape: the finding's runs, the estimate, the peak RSS above the RSS just
before (DuckDB's work included, under its limit), the peak of Python's allocations
(``tracemalloc``, numpy's and pandas' arrays; a second child, as tracing slows it), each per
run, and the wall and CPU time::

    nice -n 10 python benchmarks/bench_finding_runs.py             # every shape
    nice -n 10 python benchmarks/bench_finding_runs.py runs_1m     # some
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAP = int(os.environ.get("BENCH_BUDGET_CAP", 4_000_000_000))
FOLDER = Path(os.environ.get("BENCH_FINDING_DIR", "/tmp/bench_finding_runs"))

# shape -> rows, the finding's share of them, scores (continuous, or rounded to `round`
# decimals: ties), weighted
SHAPES = {
    "runs_1m": {"rows": 2_000_000, "share": 0.5, "round": None, "weighted": False},
    "runs_2m": {"rows": 4_000_000, "share": 0.5, "round": None, "weighted": False},
    "runs_4m": {"rows": 8_000_000, "share": 0.5, "round": None, "weighted": False},
    "weighted_1m": {"rows": 2_000_000, "share": 0.5, "round": None, "weighted": True},
    "weighted_2m": {"rows": 4_000_000, "share": 0.5, "round": None, "weighted": True},
    "tied_1m": {"rows": 6_000_000, "share": 0.5, "round": 6, "weighted": False},
}


def _file(p: dict) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    FOLDER.mkdir(parents=True, exist_ok=True)
    path = FOLDER / (f"rows{p['rows']}_{p['round']}_{int(p['weighted'])}.parquet")
    if path.exists():
        return path
    pq.write_table(pa.table(shape_columns(np.random.default_rng(7), p["rows"], p)), path)
    return path


def shape_columns(rng, n: int, p: dict) -> dict:
    """``n`` rows of a shape: score (rounded to ``p['round']`` decimals), label, x, (w)."""
    import numpy as np

    score = rng.random(n)
    if p["round"] is not None:
        score = np.round(score, p["round"])
    x = rng.random(n)
    label = (rng.random(n) < np.clip(score + 0.1 * (x < 0.3), 0, 1)).astype(np.int8)
    columns = {"score": score, "label": label, "x": x}
    if p["weighted"]:
        columns["w"] = rng.uniform(0.3, 2.5, n)
    return columns


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def _child(p: dict) -> dict:
    import argparse
    import ctypes
    import gc
    from types import SimpleNamespace

    import numpy as np
    import pyarrow as pa

    from mcviz.cli import report
    from mcviz.engines.base import Columns
    from mcviz.engines.calibration import finding_counts_table, score_runs_table
    from mcviz.engines.memory import finding_runs_bytes
    from mcviz.io import Predictions
    from mcviz.present.review import review_from_runs
    from mcviz.settings import ENGINE_SCORE_RUNS
    from mcviz.stats.measures.runs import ScoreRuns
    from mcviz.subpopulations.filters import filter_subpopulation

    columns = Columns("score", "label", "w" if p["weighted"] else None)
    table = __import__("mcviz.engines.tables", fromlist=["open_table"]).open_table(
        "duckdb", [p["path"]], memory_limit=p["duckdb_limit"])
    full = ScoreRuns(**score_runs_table(table, columns, limit=ENGINE_SCORE_RUNS))
    bins = (10, 20)
    full_review, _ = review_from_runs(full, bins=bins)
    rng = np.random.default_rng(0)
    small = Predictions.from_arrays(rng.random(100), rng.integers(0, 2, 100),
                                    covariates={"x": rng.random(100)})
    sub = filter_subpopulation(small, f"x < {p['share']}")
    (size, distinct), = finding_counts_table(table, columns, (tuple(sub.conditions),))
    at_scale = SimpleNamespace(pred=SimpleNamespace(covariate_kinds={"x": "ordinal"},
                                                score_column="score"))
    grouped = {1: (False, finding_runs_bytes(distinct, weighted=p["weighted"]))}
    gc.collect()
    pa.default_memory_pool().release_unused()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    if p["trace"]:
        import tracemalloc

        tracemalloc.start()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    started, cpu = time.perf_counter(), time.process_time()
    _, exact = report._finding_charts(argparse.Namespace(), table, columns, at_scale,
                                      {1: sub}, set(), bins, full, full_review.reliability,
                                      grouped)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = _status("VmHWM") - before
    traced = tracemalloc.get_traced_memory()[1] if p["trace"] else 0
    assert exact == {1}, exact
    table.close()
    return {"rows": size, "distinct": distinct, "estimate_bytes": grouped[1][1],
            "peak_bytes": peak, "traced_bytes": traced, "seconds": seconds,
            "cpu_seconds": cpu, "full_bins": full.bins}


def run_child(script: str, params: dict, *, cap: int, timeout: int
              ) -> subprocess.CompletedProcess:
    """Run ``script --child PARAMS`` (JSON) in a subprocess under an address-space cap."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, script, "--child", json.dumps(params)],
                          capture_output=True, text=True, env=env, preexec_fn=limit,
                          timeout=timeout, check=False)


def measure(shape: str, *, trace: bool, duckdb_limit: str = "384MB", cap: int = CAP) -> dict:
    """Run one shape in a subprocess under an address-space cap; returns the measurement."""
    params = {**SHAPES[shape], "path": str(_file(SHAPES[shape])), "trace": trace,
              "duckdb_limit": duckdb_limit}
    done = run_child(__file__, params, cap=cap, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{shape} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(shapes: list[str]) -> None:
    print(f"{'shape':<13}{'runs':>10}{'est. MB':>9}{'peak MB':>9}{'B/run':>7}{'traced MB':>10}"
          f"{'B/run':>7}{'est./peak':>10}{'run s':>7}{'CPU s':>7}{'load':>6}")
    for shape in shapes or list(SHAPES):
        r = measure(shape, trace=False)
        t = measure(shape, trace=True)
        runs = max(r["distinct"], 1)
        print(f"{shape:<13}{runs:>10,}{r['estimate_bytes'] / 1e6:>9.0f}"
              f"{r['peak_bytes'] / 1e6:>9.0f}{r['peak_bytes'] / runs:>7.0f}"
              f"{t['traced_bytes'] / 1e6:>10.0f}{t['traced_bytes'] / runs:>7.0f}"
              f"{r['estimate_bytes'] / max(r['peak_bytes'], 1):>10.2f}{r['seconds']:>7.1f}"
              f"{r['cpu_seconds']:>7.1f}{os.getloadavg()[0]:>6.1f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(json.loads(sys.argv[2]))))
    else:
        main(sys.argv[1:])
