"""apply, monitor, decide, search, compare, metrics and report on numpy, DuckDB, Spark: wall, CPU, memory, spill.

Generates --rows rows of planted predictions (:func:`mcviz.recalibration.simulate.planted_fix_data`
in chunks of 10^6, plus a timestamp over 52 weeks and a 50-level segment column) to one Parquet
file under --dir (row groups: the rows never sit in memory together), fits a ``findings`` map
on 10^5 other rows, and runs each command on each engine as its own ``python -m mcviz``
process, under ``nice -n 10``:

* ``apply MAP FILE --out ...`` (the map compiled to SQL on the engines);
* ``monitor FILE --time when --period week --segments segment`` (52 weeks x 50 segments);
* ``decide FILE --no-fix --thresholds 0.1,0.2,0.3,0.5``;
* ``search FILE --covariates region,age,channel,tenure --findings 5`` (on the engines: a sample
  sized from the memory budget searched in memory, the findings measured on every row and
  confirmed on every row not searched);
* ``compare FILE --score-b score_b --covariates region,age,channel,tenure`` on a copy of the
  file with a second score (:func:`write_compare_data`: A's score moved up by 0.15 where
  region is r1 and channel is web, equal elsewhere, clipped to [0.001, 0.999]: a group where B
  is worse, which the comparison finds and confirms on the rows not searched);
* ``metrics FILE`` (the calibration block and the classical measures; on the engines from one
  ``GROUP BY`` by score, or 2^20 fine score bins above that many distinct scores);
* ``report FILE --covariates region,age,channel,tenure --deck OUT.pptx`` (the review: the
  verdict, the four charts of the full population and of each of up to 5 findings, the curves
  along each covariate; on the engines from sums, the findings searched on a sample).

For each run it prints the wall time, the CPU time and the peak resident memory of the process
tree (polled from /proc every 0.2 s: DuckDB's threads, Spark's JVM and Python workers
included; :func:`bench_scale._tree_stats`), and the peak size of its temporary directory
(``TMPDIR`` is a fresh directory per run: DuckDB's and Spark's spill files go there). DuckDB
and Spark get ``--memory-limit`` (DuckDB's memory_limit; Spark's driver memory in local mode);
numpy and DuckDB runs are capped at --as-limit bytes of address space (``prlimit --as``; the
JVM cannot run under such a cap). Under load from other processes CPU time is the more robust
number.

A file ``engines_<rows>.parquet`` already in --dir is used as it is: for 10^8 rows the 10^7 file
repeated ten times by DuckDB (``COPY (SELECT b.* FROM range(10), read_parquet('.../engines_
10000000.parquet') AS b) TO '.../engines_100000000.parquet'``) is much faster to make.

Run: python benchmarks/bench_engines.py [--rows 10000000] [--engines numpy,duckdb,spark]
     [--commands apply,monitor,decide,search,compare] [--memory-limit 2GB]
     [--dir /tmp/mcviz-engines]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from bench_scale import _dir_size, _tree_stats

CHUNK = 1_000_000
COVARIATES = ["region", "age", "channel", "tenure"]


def write_data(directory: Path, rows: int) -> Path:
    """Parquet with score, label, region, age, channel, tenure, when (52 weeks), segment (50)."""
    from mcviz.recalibration.simulate import planted_fix_data

    path = directory / f"engines_{rows}.parquet"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    writer = None
    start = pd.Timestamp("2025-01-06")
    for k, first in enumerate(range(0, rows, CHUNK)):
        n = min(CHUNK, rows - first)
        frame = planted_fix_data(n, seed=100 + k).drop(columns="truth")
        rng = np.random.default_rng(k)
        frame["when"] = (start + pd.to_timedelta(rng.integers(0, 364 * 86_400, n), unit="s")
                         ).astype("datetime64[us]")
        frame["segment"] = np.char.add("s", np.char.zfill(rng.integers(0, 50, n).astype(str), 2))
        for name in ("region", "channel"):
            frame[name] = frame[name].astype(str)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(path.with_suffix(".tmp"), table.schema)
        writer.write_table(table, row_group_size=CHUNK)
    writer.close()
    path.with_suffix(".tmp").rename(path)
    return path


def write_map(directory: Path) -> Path:
    """A findings map fitted on 10^5 planted rows (the search finds the planted segments)."""
    from mcviz.io import load_predictions
    from mcviz.recalibration import Recalibrator
    from mcviz.recalibration.simulate import planted_fix_data

    path = directory / "findings_map.json"
    if not path.exists():
        frame = planted_fix_data(100_000, seed=1).drop(columns="truth")
        pred = load_predictions(frame, score="score", label="label", covariates=COVARIATES)
        path.write_text(Recalibrator("findings").fit(pred).to_json())
    return path


def write_compare_data(data: Path) -> Path:
    """The data with a second model's score ``score_b``, worse in one group (DuckDB COPY).

    ``score_b`` is A's score plus 0.15 where ``region == 'r1' AND channel == 'web'`` (5% of
    the rows at 10^7), A's score elsewhere, clipped to [0.001, 0.999]: the comparison's
    groups' search finds B worse there, so the held-out pass (the rows not searched, through
    Spark's Python workers) runs and is measured. In the file before (A moved up by 0.08 in
    region r1 and by a small hashed noise elsewhere, ``*_ab.parquet``) the 10^7 samples of
    DuckDB and Spark found no group, and the benchmark never ran that pass (1 Dec 2026). No
    rows in memory.
    """
    import duckdb

    path = data.with_name(data.stem + "_ab_planted.parquet")
    if path.exists():
        return path
    con = duckdb.connect()
    con.execute(f"COPY (SELECT *, LEAST(GREATEST(score + CASE WHEN region = 'r1' AND channel = "
                f"'web' THEN 0.15 ELSE 0.0 END, 0.001), 0.999) AS score_b FROM "
                f"read_parquet('{data}')) TO '{path.with_suffix('.tmp')}' (FORMAT parquet)")
    con.close()
    path.with_suffix(".tmp").rename(path)
    return path


def command(name: str, engine: str, data: Path, fix_map: Path, out_dir: Path,
            memory_limit: str) -> list[str]:
    """The mcviz command line of one run."""
    tail = [] if engine == "numpy" else ["--engine", engine, "--memory-limit", memory_limit]
    covariates = ["--covariates", ",".join(COVARIATES)]
    if name == "search":
        return ["search", str(data), "--score", "score", "--label", "label", "--no-weight",
                *covariates, "--findings", "5", "--json", *tail]
    if name == "compare":
        return ["compare", str(write_compare_data(data)), "--score", "score", "--score-b",
                "score_b", "--label", "label", "--no-weight", *covariates, "--json", *tail]
    if name == "apply":
        out = out_dir / f"scored_{engine}.parquet"
        return ["apply", str(fix_map), str(data), "--out", str(out), "--json", *tail]
    if name == "monitor":
        return ["monitor", str(data), "--score", "score", "--label", "label", "--no-weight",
                "--time", "when", "--period", "week", "--segments", "segment", "--json", *tail]
    if name == "report":  # the verdict and the deck
        return ["report", str(data), "--score", "score", "--label", "label", "--no-weight",
                *covariates, "--findings", "5", "--deck", str(out_dir / f"deck_{engine}.pptx"),
                "--json", *tail]
    if name == "metrics":  # the calibration block and the classical measures
        return ["metrics", str(data), "--score", "score", "--label", "label", "--no-weight",
                "--json", *tail]
    return ["decide", str(data), "--score", "score", "--label", "label", "--no-weight",
            "--no-fix", "--thresholds", "0.1,0.2,0.3,0.5", "--json", *tail]


def run(argv: list[str], engine: str, as_limit: int) -> dict:
    """Run one command; return wall, CPU, peak RSS, peak spill, status and its JSON."""
    spill = tempfile.mkdtemp(prefix="bench-engines-", dir=os.environ.get("BENCH_TMP"))
    env = {**os.environ, "TMPDIR": spill, "PYSPARK_PYTHON": sys.executable}
    prefix = ["nice", "-n", "10"]
    if engine != "spark":
        prefix += ["prlimit", f"--as={as_limit}", "--"]
    started = time.perf_counter()
    process = subprocess.Popen([*prefix, sys.executable, "-m", "mcviz", *argv], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"rss": 0, "spill": 0}
    cpu: dict[int, float] = {}
    done = threading.Event()

    def watch() -> None:
        tick = 0
        while not done.is_set():
            peak["rss"] = max(peak["rss"], _tree_stats(process.pid, cpu))
            if tick % 5 == 0:
                peak["spill"] = max(peak["spill"], _dir_size(spill))
            tick += 1
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = process.communicate()
    done.set()
    watcher.join()
    wall = time.perf_counter() - started
    shutil.rmtree(spill, ignore_errors=True)
    result = {"wall": wall, "cpu": sum(cpu.values()), "rss": peak["rss"], "spill": peak["spill"],
              "status": process.returncode}
    if process.returncode == 0:
        result["json"] = json.loads(out)
    else:
        result["error"] = err.strip().splitlines()[-1] if err.strip() else "?"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--engines", default="numpy,duckdb,spark")
    parser.add_argument("--commands", default="apply,monitor,decide")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--as-limit", type=int, default=12_000_000_000)
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "mcviz-engines"))
    parser.add_argument("--results", help="append each run's numbers as a JSON line here")
    args = parser.parse_args()
    directory = Path(args.dir)
    data = write_data(directory, args.rows)
    fix_map = write_map(directory)
    print(f"{args.rows:,} rows: {data} ({data.stat().st_size / 2**20:,.0f} MiB)")
    print("| command | engine | rows | wall s | CPU s | peak RSS GiB | spill GiB | status |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.commands.split(","):
        for engine in args.engines.split(","):
            result = run(command(name, engine, data, fix_map, directory, args.memory_limit),
                         engine, args.as_limit)
            status = "ok" if result["status"] == 0 else f"exit {result['status']}: " \
                f"{result['error'][:80]}"
            print(f"| {name} | {engine} | {args.rows:,} | {result['wall']:.1f} | "
                  f"{result['cpu']:.1f} | {result['rss'] / 2**30:.2f} | "
                  f"{result['spill'] / 2**30:.2f} | {status} |", flush=True)
            if args.results:
                with Path(args.results).open("a") as stream:
                    record = {k: v for k, v in result.items() if k != "json"}
                    stream.write(json.dumps({"command": name, "engine": engine,
                                             "rows": args.rows, **record,
                                             "output": _summary(name, result)}) + "\n")


def _summary(name: str, result: dict) -> object:
    """The numbers to compare across engines (the same answers)."""
    output = result.get("json")
    if output is None:
        return None
    if name == "apply":
        return [output["n"], output["mean_recalibrated"]]
    if name == "monitor":
        return [[s["description"], s["alarm"], s["first_alarm"], s["p_adjusted"]]
                for s in [output["full"], *output["segments"]] if s["alarm"]]
    if name == "search":
        return [[f["description"], f["holdout_size"], f["p_adjusted"], f["mean_residual"]]
                for f in output["findings"]] + [output.get("held_out"), output.get("sample")]
    if name == "compare":
        return [output["paired"]["brier_difference"], output["paired"]["kuiper_z"],
                [f["description"] for f in output["regressions"]]]
    if name == "report":
        return [output.get("verdict"), [f.get("description") for f in output.get("findings", [])]]
    if name == "metrics":
        return [output["calibration"]["kuiper_z"], output["classical"]["ece"],
                output["classical"]["ici"], output.get("classical_runs")]
    return output["net_benefit"]["model"]


if __name__ == "__main__":
    main()
