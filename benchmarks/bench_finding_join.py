"""What DuckDB needs to sum every row between a finding's scores, on several data shapes.

``mcviz report --engine duckdb`` draws a finding's deviation exactly by summing every row of
the table in the bins of eq. (7) between the finding's distinct scores
(:func:`mcviz.engines.calibration.comparison_sums_table`: an ASOF join of the rows to the
finding's edges), in passes of score ranges planned by
:func:`~mcviz.engines.calibration.comparison_passes` so that each fits DuckDB's
``memory_limit``: :data:`~mcviz.engines.memory.DUCKDB_FLOOR` plus
:data:`~mcviz.engines.memory.FINDING_ENGINE_RUN_BYTES` an edge plus
:data:`~mcviz.engines.memory.FINDING_ENGINE_ROW_BYTES` a row. This measures that model.

How: per shape (rows; scores continuous or rounded to a few decimals, i.e. ties; weighted or
not; the finding's share of the rows, ``x < share``, which sets its edges) a Parquet file is
written in chunks of 10^6 rows (never all in memory). Each run is its own subprocess under an
address-space cap (``RLIMIT_AS``, as ``prlimit --as``; 8 GB by default: under 3 GB DuckDB's
result frames failed to reserve their address space however small its limit) that opens the
file with DuckDB under one ``memory_limit``, takes the finding's runs and edges as the report does
(:func:`~mcviz.engines.calibration.finding_runs_table`,
:func:`~mcviz.stats.deviation.deviation_edges`) and sums the rows:

* ``one``: the one join of every row (no ``full_runs``), the need the model predicts
  (floor + 16 an edge + 3 a row). The least ``memory_limit`` that runs is bisected between
  the floor and the prediction (or above it, doubling, if the prediction fails).
* ``passes``: with the full population's runs (fine bins when it has more than
  :data:`~mcviz.settings.ENGINE_SCORE_RUNS` distinct scores, as the report has them), so
  the join runs in the passes planned for that limit: run at the limits given
  (``--pass-limits``, MiB), each must run.

The sums of the run at the prediction and of every ``passes`` run are checked against
numpy's (each row's bin by ``searchsorted`` over the edges, read a row group at a time):
``match`` means every bin's count equal and its sums to 1e-9 (the bisection's other runs are
only run). Printed: the shape, the rows and edges, the predicted MiB, the least limit that
ran and the greatest that failed (MiB; 0: none failed, the floor not tried), the need beyond
the floor over the model's beyond it, the process's peak RSS during the sums (its mark reset
just before), their wall and CPU seconds, the passes, match, and the load::

    nice -n 10 python benchmarks/bench_finding_join.py                 # every shape
    nice -n 10 python benchmarks/bench_finding_join.py cont_10m tied3_10m
    nice -n 10 python benchmarks/bench_finding_join.py --big /path/engines_100000000.parquet \
        --where "channel == 'web'" --limit 300MB                   # one run at 10^8
    ... --big FILE --mode one --spaced 1000 --limit 230MiB   # the one join, spaced edges

``--big`` runs one finding (a filter over the file's columns) under one limit, through the
passes (or ``--mode one``: the one join; ``--spaced N``: N evenly spaced edges instead of the
finding's) and checks it against numpy; one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_budget import _status  # the process's VmRSS and VmHWM
from bench_finding_runs import run_child, shape_columns

ROOT = Path(__file__).resolve().parents[1]
CAP = int(os.environ.get("BENCH_BUDGET_CAP", 8_000_000_000))
FOLDER = Path(os.environ.get("BENCH_FINDING_DIR", "/tmp/bench_finding_join"))
MIB = 1 << 20

# shape -> rows, the finding's share (x < share), scores (continuous, or rounded to `round`
# decimals: ties), weighted (the columns of bench_finding_runs.py's shapes)
SHAPES = {
    "cont_1m": {"rows": 1_000_000, "share": 0.5, "round": None, "weighted": False},
    "cont_2m": {"rows": 2_000_000, "share": 0.5, "round": None, "weighted": False},
    "weighted_4m": {"rows": 4_000_000, "share": 0.5, "round": None, "weighted": True},
    "cont_10m": {"rows": 10_000_000, "share": 0.5, "round": None, "weighted": False},
    "cont_10m_small": {"rows": 10_000_000, "share": 0.02, "round": None, "weighted": False},
    "weighted_10m": {"rows": 10_000_000, "share": 0.5, "round": None, "weighted": True},
    "tied6_10m": {"rows": 10_000_000, "share": 0.5, "round": 6, "weighted": False},
    "tied3_10m": {"rows": 10_000_000, "share": 0.5, "round": 3, "weighted": False},
}


def _file(p: dict) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    FOLDER.mkdir(parents=True, exist_ok=True)
    path = FOLDER / f"rows{p['rows']}_{p['round']}_{int(p['weighted'])}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(11)
    writer = None
    for start in range(0, p["rows"], 1_000_000):
        chunk = pa.table(shape_columns(rng, min(1_000_000, p["rows"] - start), p))
        if writer is None:
            writer = pq.ParquetWriter(f"{path}.tmp", chunk.schema)
        writer.write_table(chunk, row_group_size=1_000_000)
    writer.close()
    Path(f"{path}.tmp").rename(path)
    return path


def _conditions(where: str) -> tuple:
    """The conditions of the filter ``where`` over ``x`` (numeric) or string columns."""
    import numpy as np

    from mcviz.io import Predictions
    from mcviz.subpopulations.filters import filter_subpopulation

    rng = np.random.default_rng(0)
    covariates = {"x": rng.random(100), "channel": np.array(["web", "app"] * 50),
                  "region": np.array(["r1", "r2", "r3", "r4"] * 25)}
    small = Predictions.from_arrays(rng.random(100), rng.integers(0, 2, 100),
                                    covariates=covariates)
    return tuple(filter_subpopulation(small, where).conditions)


def _reference(path: str, edges, weight: str | None) -> tuple:
    """Every row's count, sum W and sum WR per bin of eq. (7) by numpy, a row group at a time."""
    import numpy as np
    import pyarrow.parquet as pq

    out = tuple(np.zeros(edges.size + 1, dtype=kind) for kind in (np.int64, float, float))
    file = pq.ParquetFile(path)
    names = ["score", "label"] + ([weight] if weight else [])
    for group in range(file.num_row_groups):
        part = file.read_row_group(group, columns=names)
        s = part.column("score").to_numpy()
        k = np.searchsorted(edges, s, side="left")  # edges below s: B_k < s <= B_{k+1}
        w = part.column(weight).to_numpy() if weight else np.ones(s.size)
        r = part.column("label").to_numpy().astype(float)
        out[0][:] += np.bincount(k, minlength=edges.size + 1)
        out[1][:] += np.bincount(k, weights=w, minlength=edges.size + 1)
        out[2][:] += np.bincount(k, weights=w * r, minlength=edges.size + 1)
        del part, s, k, w, r
    return out


def _child(p: dict) -> dict:
    import numpy as np

    from mcviz.engines import calibration
    from mcviz.engines.base import Columns
    from mcviz.engines.tables import open_table
    from mcviz.settings import ENGINE_SCORE_RUNS
    from mcviz.stats.deviation import deviation_edges
    from mcviz.stats.measures.runs import ScoreRuns

    columns = Columns("score", "label", "w" if p["weighted"] else None)
    table = open_table("duckdb", [p["path"]], memory_limit=p["limit"])
    full = (ScoreRuns(**calibration.score_runs_table(table, columns, limit=ENGINE_SCORE_RUNS))
            if p["mode"] == "passes" else None)
    saved = Path(p["edges"]) if p.get("edges") else None
    if p.get("spaced"):  # evenly spaced edges, not a finding's: the rows' need alone
        edges = np.linspace(0.0, 1.0, int(p["spaced"]) + 2)[1:-1]
    elif saved is not None and saved.exists():  # the finding's edges taken once, not under test
        edges = np.load(saved)
    else:
        runs = ScoreRuns(**calibration.finding_runs_table(table, columns,
                                                          _conditions(p["where"])))
        edges = deviation_edges(runs.score)
        del runs
        if saved is not None:
            np.save(saved, edges)
    passes = (len(calibration.comparison_passes(edges, full, calibration._join_budget(table)))
              if full is not None else 1)
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    started, cpu = time.perf_counter(), time.process_time()
    try:
        sums = calibration.comparison_sums_table(table, columns, edges, full_runs=full)
    except Exception as error:  # DuckDB's out of memory: this limit failed
        import traceback

        return {"ran": False, "error": f"{type(error).__name__}: {str(error)[:300]} at "
                f"{traceback.format_exc()[-400:]}", "edges": int(edges.size)}
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = _status("VmHWM")
    table.close()
    match = None
    if p["check"]:
        want = _reference(p["path"], edges, columns.weight)
        match = bool(np.array_equal(sums[0], want[0]) and all(
            np.allclose(a, b, rtol=1e-9, atol=1e-9) for a, b in zip(sums[1:], want[1:],
                                                                   strict=True)))
    return {"ran": True, "edges": int(edges.size), "rows": int(sums[0].sum()),
            "peak_bytes": peak, "rss_before": before, "seconds": seconds,
            "cpu_seconds": cpu, "passes": passes,
            "full_bins": None if full is None else full.bins, "match": match}


def run(params: dict, cap: int = CAP) -> dict:
    """One run in a subprocess under an address-space cap; returns its measurement."""
    done = run_child(__file__, params, cap=cap, timeout=3600)
    if done.returncode != 0:
        return {"ran": False, "error": done.stderr[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def predicted(edges: int, rows: int) -> int:
    """The model's bytes for the one join: floor, edges and rows."""
    from mcviz.engines.memory import (
        DUCKDB_FLOOR,
        FINDING_ENGINE_ROW_BYTES,
        FINDING_ENGINE_RUN_BYTES,
    )

    return DUCKDB_FLOOR + FINDING_ENGINE_RUN_BYTES * edges + FINDING_ENGINE_ROW_BYTES * rows


def _ran(result: dict) -> bool:
    """Whether a run ran; False for DuckDB's out of memory, else an error is raised."""
    if not result["ran"] and "out of memory" not in result["error"].lower():
        raise RuntimeError(result["error"])
    return result["ran"]


def least_limit(base: dict, prediction: int, steps: int = 3) -> tuple[int, int, dict]:
    """Bisect the least ``memory_limit`` (MiB) the one join runs at; (ran, failed, its run)."""
    low, high = 0, -(-prediction // MIB)  # 0: no limit failed
    best = run({**base, "limit": f"{high}MiB", "check": True})
    for _ in range(4):  # the prediction failed: double until it runs
        if _ran(best):
            break
        low, high = high, 2 * high
        best = run({**base, "limit": f"{high}MiB", "check": True})
    for _ in range(steps):
        if high - max(low, 128) <= 8:
            break
        middle = (max(low, 128) + high) // 2
        tried = run({**base, "limit": f"{middle}MiB", "check": False})
        if _ran(tried):
            high, best = middle, tried | {"match": best["match"]}
        else:
            low = middle
    return high, low, best


def main(shapes: list[str], pass_limits: list[int]) -> None:
    print(f"{'shape':<15}{'mode':<8}{'rows':>11}{'edges':>10}{'pred MiB':>9}{'ran MiB':>8}"
          f"{'fail MiB':>9}{'need/pred':>10}{'peak MiB':>9}{'s':>6}{'CPU s':>6}{'passes':>7}"
          f"{'match':>6}{'load':>6}", flush=True)
    for shape in shapes or list(SHAPES):
        p = SHAPES[shape]
        base = {"path": str(_file(p)), "where": f"x < {p['share']}", "weighted": p["weighted"],
                "mode": "one", "edges": str(FOLDER / f"edges_{shape}.npy")}
        probe = run({**base, "limit": "4GB", "check": False})
        prediction = predicted(probe["edges"], p["rows"])
        ran, failed, r = least_limit(base, prediction)
        need = (ran * MIB - 128 * MIB) / max(prediction - 128 * MIB, 1)
        print(f"{shape:<15}{'one':<8}{p['rows']:>11,}{probe['edges']:>10,}"
              f"{prediction / MIB:>9.0f}{ran:>8}{failed:>9}{need:>10.2f}"
              f"{r['peak_bytes'] / MIB:>9.0f}{r['seconds']:>6.1f}{r['cpu_seconds']:>6.1f}"
              f"{r['passes']:>7}{r['match']!s:>6}{os.getloadavg()[0]:>6.1f}", flush=True)
        for mib in pass_limits:
            r = run({**base, "mode": "passes", "limit": f"{mib}MiB", "check": True})
            if not r["ran"]:
                print(f"{shape:<15}{'passes':<8} {mib} MiB FAILED: {r['error']}", flush=True)
                continue
            print(f"{shape:<15}{'passes':<8}{p['rows']:>11,}{r['edges']:>10,}{'':>9}{mib:>8}"
                  f"{'':>9}{'':>10}{r['peak_bytes'] / MIB:>9.0f}{r['seconds']:>6.1f}"
                  f"{r['cpu_seconds']:>6.1f}{r['passes']:>7}{r['match']!s:>6}"
                  f"{os.getloadavg()[0]:>6.1f}", flush=True)


def big(path: str, where: str, limit: str, *, mode: str = "passes", spaced: int = 0) -> None:
    """One finding of a large file through the passes under ``limit``, checked by numpy.

    ``mode`` ``one``: the one join; ``spaced``: that many evenly spaced edges, not the finding's.
    """
    started = time.perf_counter()
    r = run({"path": path, "where": where, "weighted": False, "mode": mode,
             "limit": limit, "check": True, "spaced": spaced})
    print(json.dumps(r | {"wall": time.perf_counter() - started,
                          "load": os.getloadavg()[0]}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(json.loads(sys.argv[2]))))
    else:
        parser = argparse.ArgumentParser()
        parser.add_argument("shapes", nargs="*")
        parser.add_argument("--pass-limits", default="160,256",
                            help="MiB limits the passes run at, comma-separated")
        parser.add_argument("--big", help="one run of a large file's finding (--where)")
        parser.add_argument("--where", default="channel == 'web'")
        parser.add_argument("--limit", default="300MB")
        parser.add_argument("--mode", default="passes", choices=("passes", "one"))
        parser.add_argument("--spaced", type=int, default=0,
                            help="with --big: this many evenly spaced edges, not the finding's")
        args = parser.parse_args()
        if args.big:
            big(args.big, args.where, args.limit, mode=args.mode, spaced=args.spaced)
        else:
            main(args.shapes, [int(v) for v in args.pass_limits.split(",") if v])
