"""``mcviz monitor --engine duckdb|spark``: the cell sums by one grouped pass in the engine.

The score, label and weight columns (and the time column, when ``--time`` is not given) are
recognised on a 10,000-row sample as in memory; the engine then checks every row and sums the
cells (:mod:`mcviz.monitor.at_scale`, which states the one approximation: the null draws are
the cell-level normal ones).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile

from mcviz.cli import _common
from mcviz.cli.engine_options import (
    engine_files,
    refuse_before_reading,
    require_engine,
    sample_roles,
)
from mcviz.errors import ValidationError

__all__ = ["monitor_in_engine"]

def monitor_in_engine(args: argparse.Namespace, settings):
    """Run the monitor on the engine; return the :class:`~mcviz.monitor.MonitorResult`.

    With it, where the rows are (the keywords of :func:`mcviz.engines.results.write_results`:
    files, columns, the columns' kinds, engine), for ``--out``.
    """
    from mcviz.engines.memory import MONITOR_RESERVE
    from mcviz.engines.results import engine_kinds
    from mcviz.engines.tables import open_table
    from mcviz.monitor.at_scale import monitor_table
    from mcviz.monitor.periods import infer_time_column

    require_engine(args.engine)
    files = engine_files(args)
    refuse_before_reading(args, reserve=MONITOR_RESERVE, what="this monitor")
    with tempfile.TemporaryDirectory(prefix="mcviz-monitor-", ignore_cleanup_errors=True) as spill:
        columns, sample = sample_roles(args, files, spill)
        time = settings.time or infer_time_column(
            sample, exclude=[c for c in (columns.score, columns.label, columns.weight) if c])
        if time is None:
            raise ValidationError("no time column recognised in the file: name it with --time.")
        settings = dataclasses.replace(settings, time=time)
        del sample
        # the whole process (DuckDB), or this process, the JVM and Spark's workers (local Spark)
        from mcviz.cli.engine_options import engine_share, spark_limit

        limit = spark_limit(args, what="this monitor")
        if args.engine == "duckdb":
            limit = engine_share(args.memory_limit, reserve=MONITOR_RESERVE, what="this monitor")
        table = open_table(args.engine, files, memory_limit=limit,
                           temp_directory=spill, spark_master=args.spark_master)
        where = {"files": files, "columns": columns, "kinds": engine_kinds(table.kinds),
                 "engine": args.engine}
        try:
            return _common.interruptible(
                lambda: monitor_table(table, columns, time=time, settings=settings),
                table.cancel), where
        finally:
            if not _common.work_abandoned():
                table.close()
