"""Multi-calibration screening at scale: the library vs numpy vs DuckDB (exact, histogram) vs Spark.

Generates --rows rows of predictions to Parquet (written in row groups, so 10^8 rows never sit
in memory), draws ℓ = --subpopulations subpopulations by Algorithm 1 on a 10^6-row sample, then
screens the full data with every engine, each in its own process, and prints the wall time, the
CPU time and the peak resident memory of that process tree (polled from /proc every 0.1 s;
DuckDB's threads, Spark's JVM and Python workers included). "library" loads the file into
:class:`~mcviz.io.Predictions`, selects each subpopulation's rows (``select_rows`` within its
parent) and runs :func:`mcviz.multicalibration`; every M is printed to compare (the engines
must agree with the library to 1e-12). --memory-limit bounds the DuckDB child as it bounds
``mcviz screen``: DuckDB gets the limit minus what the process holds and the evaluator's
buffers (:func:`mcviz.engines.memory.duckdb_share`).
With --limit-rows N (off by default; 10^8 is the issue's case), DuckDB also screens N rows
under that limit, and the table says whether it spilled to its temp_directory (largest size
seen) and finished. Under load from other processes CPU time is the more robust number.

Run: python benchmarks/bench_scale.py [--rows 1000000,10000000] [--limit-rows 100000000]
     [--limit-subpopulations L] [--limit-mode exact|hist] [--spark-master local[2]]
     [--engines library,numpy,duckdb-exact,duckdb-hist,spark-exact] [--bins 1000]
     [--threads N] [--dir /tmp/mcviz-scale]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mcviz.engines.base import Columns, as_specs

COLUMNS = Columns("score", "label", "weight")
CHUNK = 1_000_000


def write_data(directory: Path, rows: int, seed: int = 0) -> Path:
    """Parquet file with score (4-decimal ties), label, weight and four covariates."""
    path = directory / f"scale_{rows}.parquet"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    writer = None
    cats = np.array(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"])
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        x1 = rng.normal(size=n)
        x1[rng.random(n) < 0.05] = np.nan
        x2 = rng.integers(0, 100, n)
        cat = cats[rng.integers(0, 8, n)]
        flag = rng.random(n) < 0.3
        score = np.round(rng.random(n), 4)
        p = np.clip(score + 0.05 * (x2 > 60) - 0.04 * (cat == "beta") * flag, 0, 1)
        table = pa.table({
            "score": score, "label": (rng.random(n) < p).astype(np.int8),
            "weight": rng.random(n) + 0.5, "x1": x1, "x2": x2, "cat": cat, "flag": flag,
        })
        if writer is None:
            writer = pq.ParquetWriter(path.with_suffix(".tmp"), table.schema)
        writer.write_table(table, row_group_size=256_000)
    writer.close()
    path.with_suffix(".tmp").rename(path)
    return path


def make_specs(path: Path, n_subpopulations: int, seed: int) -> dict:
    """Algorithm 1's specs on a sample of at most 10^6 rows, and their members per row."""
    from mcviz.engines.duckdb_engine import read_sample
    from mcviz.engines.memory import members_per_row
    from mcviz.io import load_predictions
    from mcviz.subpopulations import generate_subpopulations

    sample = read_sample([str(path)], 1_000_000, seed)
    pred = load_predictions(sample, score="score", label="label", weight="weight",
                            covariates=["x1", "x2", "cat", "flag"])
    subpopulations = generate_subpopulations(pred, n_subpopulations=n_subpopulations, seed=seed)
    per_row = members_per_row([s.index.size for s in subpopulations], pred.n)
    return {"specs": as_specs(subpopulations), "members_per_row": per_row}


# ------------------------------------------------------------------------------ child process


TWIN_BYTES = 200 << 20
"""A child at least this large whose resident memory is its parent's (within 2%) is the parent's
pages seen twice, not counted: a child the JVM spawns (Hadoop's ``chmod``, ``rm -rf`` of its
directories, ``ps``) shows the JVM's resident memory until it execs. Polled every 0.2 s, such a
poll counted the JVM twice: ``mcviz compare --engine spark --memory-limit 2GB`` of 10^7 rows
peaked at 2,004 MB with the JVM's 853 MiB counted twice, ``report --memory-limit 2450MB`` at
3,048 MB with its 1,120 MiB twice in the run's last second (1 Dec 2026)."""


def _tree_stats(pid: int, cpu: dict[int, float]) -> int:
    """Resident bytes of a process and all its descendants; CPU seconds per pid into ``cpu``.

    A child that is its parent's pages seen twice (:data:`TWIN_BYTES`) is not counted.
    """
    total, stack = 0, [(pid, -1)]
    tick = os.sysconf("SC_CLK_TCK")
    while stack:
        p, parent = stack.pop()
        proc = Path("/proc") / str(p)
        try:
            rss = 0
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
            if not (rss >= TWIN_BYTES and abs(rss - parent) <= 0.02 * rss):
                total += rss
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cpu[p] = max(cpu.get(p, 0.0), (int(stat[11]) + int(stat[12])) / tick)  # utime+stime
            for task in (proc / "task").iterdir():
                stack.extend((int(c), rss) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
    return total


def _dir_size(path: str) -> int:
    size = 0
    for file in Path(path).rglob("*"):
        with contextlib.suppress(OSError):
            size += file.stat().st_size if file.is_file() else 0
    return size


def _library(data: str, specs):
    """The in-memory library path: Predictions, rows of each subpopulation, eq. (4)."""
    import pyarrow.parquet as parquet

    from mcviz.io import load_predictions
    from mcviz.stats.multical import multicalibration
    from mcviz.subpopulations import Subpopulation, select_rows

    used = sorted({c.column for spec in specs for c in spec.conditions})
    frame = parquet.read_table(data, columns=["score", "label", "weight", *used]).to_pandas()
    pred = load_predictions(frame, score="score", label="label", weight="weight",
                            covariates=used, id_columns=[])
    del frame
    rows: dict[int, np.ndarray] = {}
    subpopulations = []
    for spec in specs[1:]:
        within = rows.get(spec.parent)
        index = select_rows(pred, spec.conditions, within=within)
        rows[spec.id] = index
        subpopulations.append(Subpopulation(spec.id, spec.depth, spec.conditions,
                                            spec.description, index, spec.parent))
    return multicalibration(pred, subpopulations, sigma_method="bernoulli"), pred.n


def _duckdb_limits(args: argparse.Namespace, drawn: dict) -> tuple:
    """DuckDB's share of --memory-limit while it sorts and while the rows stream, as ``mcviz
    screen`` gives them (the limit bounds the process: what it holds, and while the rows
    stream the evaluator's buffers and the compiled loops it loads, are set aside)."""
    from mcviz.budget import usable_cores
    from mcviz.engines.duckdb_engine import BATCH_ROWS
    from mcviz.engines.memory import compiled_loops_reserve, duckdb_share, screen_reserve

    if args.memory_limit is None:
        return None, None
    threads = 1 if args.child.endswith("hist") else (args.threads or usable_cores())
    reserve = screen_reserve(drawn["members_per_row"], threads=threads,
                             batch_rows=BATCH_ROWS) + compiled_loops_reserve()
    if args.child.endswith("hist"):
        reserve += 40 * len(drawn["specs"]) * args.bins
        share = duckdb_share(args.memory_limit, reserve=reserve, refuse=True)
        return share, share
    stream = duckdb_share(args.memory_limit, reserve=reserve, refuse=True)
    return duckdb_share(args.memory_limit), stream


def child(args: argparse.Namespace) -> None:
    drawn = pickle.loads(Path(args.specs).read_bytes())
    specs = drawn["specs"]
    engine_name, _, mode = args.child.partition("-")
    spill = {"max": 0}
    stop = threading.Event()
    temp = tempfile.mkdtemp(prefix="mcviz-spill-", dir=args.spill_dir)

    def watch():
        while not stop.is_set():
            spill["max"] = max(spill["max"], _dir_size(temp))
            time.sleep(0.2)

    start = time.perf_counter()
    if engine_name == "library":
        result, n = _library(args.data, specs)
        print(json.dumps({"seconds": time.perf_counter() - start, "load_seconds": 0.0,
                          "metric": result.metric, "metric_bound": None, "n": n,
                          "spill_bytes": 0}))
        return
    if engine_name == "numpy":
        from mcviz.engines.numpy_engine import NumpyEngine

        engine = NumpyEngine(args.data, COLUMNS, threads=args.threads)
    elif engine_name == "duckdb":
        from mcviz.engines.duckdb_engine import DuckDBEngine

        limit, stream_limit = _duckdb_limits(args, drawn)
        engine = DuckDBEngine(args.data, COLUMNS, memory_limit=limit, temp_directory=temp,
                              threads=args.threads, stream_memory_limit=stream_limit)
        threading.Thread(target=watch, daemon=True).start()
    else:
        from mcviz.engines.spark_engine import SparkEngine, local_session

        session = local_session(args.spark_master)
        session.sparkContext.setLogLevel("ERROR")
        engine = SparkEngine(args.data, COLUMNS, spark=session)
    loaded = time.perf_counter() - start
    result = engine.screen(specs, exact=mode != "hist", bins=args.bins if mode == "hist" else None)
    total = time.perf_counter() - start
    stop.set()
    engine.close()
    shutil.rmtree(temp, ignore_errors=True)
    if engine_name == "spark":
        session.stop()
    print(json.dumps({
        "seconds": total, "load_seconds": loaded, "metric": result.metric,
        "metric_bound": result.metric_bound, "n": result.n, "spill_bytes": spill["max"],
    }))


# ------------------------------------------------------------------------------ parent


def run_child(name: str, data: Path, specs: Path, args, memory_limit: str | None = None) -> dict:
    command = [sys.executable, __file__, "--child", name, "--data", str(data), "--specs",
               str(specs), "--bins", str(args.bins), "--spill-dir", str(args.dir),
               "--spark-master", args.spark_master]
    if args.threads:
        command += ["--threads", str(args.threads)]
    if memory_limit:
        command += ["--memory-limit", memory_limit]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    peak, cpu = 0, {}
    while process.poll() is None:
        peak = max(peak, _tree_stats(process.pid, cpu))
        time.sleep(0.1)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    if process.returncode != 0:
        return {"name": name, "error": err.strip().splitlines()[-1] if err.strip() else "failed",
                "wall": wall, "peak": peak, "cpu": sum(cpu.values())}
    result = json.loads(out.strip().splitlines()[-1])
    result.update(name=name, wall=wall, peak=peak, cpu=sum(cpu.values()))
    return result


def row(result: dict, rows: int, limit: str | None = None) -> str:
    if "error" in result:
        return (f"| {result['name']:<13} | {rows:>11,} | {limit or '-':>5} | failed: "
                f"{result['error'][:60]} |")
    bound = result.get("metric_bound")
    spill = result.get("spill_bytes", 0)
    return (
        f"| {result['name']:<13} | {rows:>11,} | {limit or '-':>5} | {result['wall']:>8.1f} | "
        f"{result['cpu']:>8.1f} | {result['seconds']:>8.1f} | {result['peak'] / 2**30:>7.2f} | "
        f"{result['metric']:.14f} | "
        f"{'-' if bound is None else f'{bound:.2e}':>8} | "
        f"{(f'{spill / 2**20:,.0f} MiB' if spill else 'no'):>10} |"
    )


HEADER = (
    "| engine        |        rows | limit |  wall s |   CPU s | in-child s | peak GiB | M "
    "               | M bound  |     spill  |\n|---|---|---|---|---|---|---|---|---|---|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,10000000",
                        help="comma-separated row counts (each gets its own data and specs)")
    parser.add_argument("--limit-rows", type=int, default=0,
                        help="rows for the extra memory-limited DuckDB run (default 0: skip; "
                             "the issue's case is 100000000)")
    parser.add_argument("--memory-limit", default="1GB",
                        help="memory limit of every DuckDB run (the whole process, as mcviz "
                        "screen --memory-limit)")
    parser.add_argument("--limit-subpopulations", type=int,
                        help="subpopulations of the memory-limited run (default --subpopulations)")
    parser.add_argument("--limit-mode", choices=("exact", "hist"), default="exact",
                        help="mode of the memory-limited DuckDB run")
    parser.add_argument("--subpopulations", type=int, default=1000)
    parser.add_argument("--engines",
                        default="library,numpy,duckdb-exact,duckdb-hist,spark-exact")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--bins", type=int, default=1000)
    parser.add_argument("--threads", type=int,
                        help="threads of the numpy and DuckDB engines (default: every core; 1 "
                             "= the exact pass on one thread, DuckDB on one thread too)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "mcviz-scale"))
    parser.add_argument("--child")
    parser.add_argument("--data")
    parser.add_argument("--specs")
    parser.add_argument("--spill-dir")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    directory = Path(args.dir)
    specs_path = None
    for rows in [int(r) for r in args.rows.split(",") if r.strip()]:
        data, specs_path = _prepare(directory, rows, args.subpopulations, args.seed)
        print(HEADER, flush=True)
        for name in [e.strip() for e in args.engines.split(",") if e.strip()]:
            limit = args.memory_limit if name.startswith("duckdb") else None
            print(row(run_child(name, data, specs_path, args, limit), rows, limit), flush=True)
    if args.limit_rows:
        big = write_data(directory, args.limit_rows, args.seed)
        limited = args.limit_subpopulations or args.subpopulations
        _, specs_path = _prepare(directory, args.limit_rows, limited, args.seed, data=big)
        result = run_child(f"duckdb-{args.limit_mode}", big, specs_path, args, args.memory_limit)
        print(HEADER, flush=True)
        print(row(result, args.limit_rows, args.memory_limit), flush=True)


def _prepare(directory: Path, rows: int, subpopulations: int, seed: int,
             data: Path | None = None) -> tuple[Path, Path]:
    """Write (or reuse) the data and draw the specs on a sample of at most 10^6 rows."""
    start = time.perf_counter()
    data = write_data(directory, rows, seed) if data is None else data
    print(f"data: {data} ({data.stat().st_size / 2**20:,.0f} MiB, "
          f"{time.perf_counter() - start:.0f} s)", flush=True)
    start = time.perf_counter()
    drawn = make_specs(data, subpopulations, seed)
    specs_path = directory / f"specs_{rows}_{subpopulations}.pkl"
    specs_path.write_bytes(pickle.dumps(drawn))
    print(f"{len(drawn['specs']) - 1} subpopulations from a sample of at most 10^6 rows, "
          f"{drawn['members_per_row']:.1f} members per row "
          f"({time.perf_counter() - start:.0f} s)", flush=True)
    return data, specs_path


if __name__ == "__main__":
    main()
