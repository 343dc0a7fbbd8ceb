"""Every row summed between a finding's scores on DuckDB: one ASOF join, or passes that fit.

:func:`mcviz.engines.calibration.comparison_sums_table` joins every row of the table to the
edges of eq. (7) between a finding's distinct scores. The one join's need grows with the rows
(:data:`~mcviz.engines.memory.FINDING_ENGINE_ROW_BYTES`), so with the full population's fine
bins given it runs in the passes of :func:`~mcviz.engines.calibration.comparison_passes`, each
planned within DuckDB's ``memory_limit``. This script takes the full population's runs (2^20
fine bins above that many distinct scores) and the finding's runs per distinct score under 1GiB,
then sums every row between them under each limit given: in passes (default), or as the one
join (``--one-pass``: no fine bins given). Per limit it prints the wall and CPU seconds, the
passes and the joined passes, or DuckDB's error. With two limits the two results are compared
(counts exactly, sums relatively). Run it in a fresh process per configuration, under an
address-space cap::

    nice -n 10 prlimit --as=8000000000 python benchmarks/bench_comparison_passes.py \\
        --file engines_100000000.parquet --where channel=web 304MiB 1GiB
    ... --one-pass 304MiB                     # the one join under the same share

Measured (10^8 rows of ``bench_engines.py``, the finding ``channel == web``: 3,999,346 distinct
scores, 39,993,470 rows; 2 cores, load 15): under 304MiB the one join ran out of memory after
37 s ("could not allocate block of size 256.0 KiB (303.9 MiB/304.0 MiB used)"); in passes it
took 2 joined passes, 61-80 s wall, 39-41 CPU s, process peak 931 MiB (the runs taken under 1GiB
before); the one join under 1GiB took 83 s, 39 CPU s; the two results' counts were equal and
their sums identical.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from mcviz.engines import calibration as cal
from mcviz.engines.base import Columns
from mcviz.engines.tables import open_table
from mcviz.stats.deviation import deviation_edges
from mcviz.stats.measures.runs import ScoreRuns
from mcviz.subpopulations.model import Condition


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("limits", nargs="+", help="DuckDB memory_limit per run, e.g. 304MiB")
    parser.add_argument("--file", required=True)
    parser.add_argument("--where", default="channel=web", help="COLUMN=VALUE: the finding")
    parser.add_argument("--one-pass", action="store_true", help="no fine bins: the one join")
    args = parser.parse_args()
    column, value = args.where.split("=", 1)
    columns = Columns("score", "label", None)
    with open_table("duckdb", [args.file], memory_limit="1GiB") as table:
        start = time.time()
        full = ScoreRuns(**cal.score_runs_table(table, columns, limit=1 << 20))
        mine = ScoreRuns(**cal.finding_runs_table(table, columns,
                                                  (Condition(column, "==", value),)))
    edges = deviation_edges(mine.score)
    log: dict = {"runs_s": round(time.time() - start, 1), "full_bins": full.bins,
                 "edges": int(edges.size), "finding_rows": int(mine.count.sum())}
    print(log, flush=True)
    plans: list = []
    plan = cal.comparison_passes
    cal.comparison_passes = lambda *a: plans.append(plan(*a)) or plans[-1]
    results = {}
    for limit in args.limits:
        with open_table("duckdb", [args.file], memory_limit=limit) as table:
            start, cpu = time.time(), time.process_time()
            try:
                results[limit] = cal.comparison_sums_table(
                    table, columns, edges, full_runs=None if args.one_pass else full)
                log[limit] = {"s": round(time.time() - start, 1),
                              "cpu": round(time.process_time() - cpu, 1),
                              "passes": len(plans[-1]),
                              "joined": sum(a < b for a, b in plans[-1])}
            except Exception as error:  # DuckDB's error is the measurement
                log[limit] = {"error": str(error)[:300], "s": round(time.time() - start, 1)}
        print(log[limit], flush=True)
    if len(results) == 2:
        a, b = results.values()
        log["counts_equal"] = bool(np.array_equal(a[0], b[0]))
        log["max_relative_wr"] = float(np.max(np.abs(a[2] - b[2])
                                              / np.maximum(1.0, np.abs(b[2]))))
    log["maxrss_MiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(log))


if __name__ == "__main__":
    main()
