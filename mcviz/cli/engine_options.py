"""The ``--engine``, ``--memory-limit`` and ``--spark-master`` options.

The commands that run on DuckDB or Spark as well as in memory take the same flags as
``mcviz screen``.
"""

from __future__ import annotations

import argparse

__all__ = ["add_engine_arguments", "engine_share", "on_table", "read_whole", "refuse_unsupported",
           "require_engine", "sample_roles"]


def add_engine_arguments(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Add ``--engine numpy|duckdb|spark``, ``--memory-limit`` and ``--spark-master``."""
    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy",
                        help=help_text)
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="memory limit of the engine, e.g. 2GB: DuckDB's memory_limit "
                        "(spills beyond), Spark's driver memory in local mode")
    # no default here: the Spark engine's own (local mode), without importing it at start-up
    parser.add_argument("--spark-master", metavar="URL",
                        help="Spark master, e.g. spark://host:7077 (default: local mode, as "
                        "mcviz screen)")


def require_engine(name: str) -> None:
    """Refuse, in one line naming what to install, an engine whose package is missing."""
    from mcviz.cli.screen import _require_engine

    _require_engine(name)


def engine_share(memory_limit: str | None) -> str | None:
    """DuckDB's share of ``--memory-limit``: the limit minus what this process holds now.

    ``--memory-limit`` bounds the whole process: a search at scale keeps its sample's rows
    and findings in Python while DuckDB sorts, so DuckDB gets the rest, less its own overshoot
    (:func:`mcviz.engines.memory.duckdb_share`; at least a quarter of the limit). None: no
    limit given (DuckDB's own default).

    Examples
    --------
    >>> engine_share(None) is None
    True
    >>> int(engine_share("100GB")[:-3]) > 90_000
    True
    """
    if memory_limit is None:
        return None
    from mcviz.engines.memory import duckdb_share

    return duckdb_share(memory_limit)


SAMPLE_ROWS = 10_000
"""Rows read to recognise the columns' roles (and a time column) before the engine runs."""


def sample_roles(args: argparse.Namespace, files, spill: str):
    """Recognise the score, label and weight on a sample as in memory; return (columns, sample).

    Options the engines do not support (``--drop-invalid``, ``--weighting``,
    ``--probabilities``, ``--response continuous``) are refused, naming the flag.
    """
    from mcviz.cli.screen import read_sample_interruptible, sample_columns
    from mcviz.io import load_predictions

    refuse_unsupported(args)
    sample = read_sample_interruptible(files, SAMPLE_ROWS, 0, spill)
    pred = load_predictions(sample, score=args.score, label=args.label, positive=args.positive,
                            weight=args.weight, covariates=[], drop_invalid=True)
    return sample_columns(pred, sample), sample


def refuse_unsupported(args: argparse.Namespace) -> None:
    """Refuse, naming the flag, an option the engines do not support (:func:`sample_roles`)."""
    from mcviz.errors import ValidationError

    for flag, value in (("--drop-invalid", args.drop_invalid), ("--weighting", args.weighting),
                        ("--probabilities", args.probabilities),
                        ("--response continuous", args.response == "continuous")):
        if value:
            raise ValidationError(f"{flag} is not supported with --engine {args.engine}; use "
                                  "--engine numpy.")


def read_whole(files, spill: str, *, seed: int = 0, memory_limit: str | None = None):
    """Every row of a table that the engine's sample would hold whole, as a DataFrame.

    One file no larger than the in-memory input budget is read as ``mcviz`` reads it without
    ``--engine`` (:func:`mcviz.io.read_table`: the same frame, so the same answer, and no
    DuckDB); several files (or a larger one) by DuckDB, all rows in file order
    (:func:`mcviz.engines.duckdb_engine.read_sample` with ``rows`` = every row).
    """
    import os

    from mcviz.io import read_table
    from mcviz.io.readers import default_max_bytes

    if len(files) == 1 and os.path.getsize(files[0]) <= default_max_bytes():
        return read_table(files[0])
    from mcviz.cli.screen import read_sample_interruptible
    from mcviz.engines.base import rows_in_files

    total = rows_in_files(files)
    return read_sample_interruptible(files, max(int(total or 0), 1), seed, spill,
                                     memory_limit=memory_limit)


def on_table(args: argparse.Namespace, work):
    """Run ``work(table, columns)`` on ``args.file`` in ``args.engine``; return its result.

    The roles come from :func:`sample_roles`; the engine spills into a temporary directory
    removed however the command ends, and a signal cancels the running query.
    """
    import tempfile

    from mcviz.cli import _common
    from mcviz.engines.base import expand_paths
    from mcviz.engines.tables import open_table

    require_engine(args.engine)
    files = expand_paths(args.file)
    with tempfile.TemporaryDirectory(prefix="mcviz-engine-", ignore_cleanup_errors=True) as spill:
        columns, _ = sample_roles(args, files, spill)
        # --memory-limit bounds the process: DuckDB gets what this process does not hold
        limit = engine_share(args.memory_limit) if args.engine == "duckdb" else args.memory_limit
        table = open_table(args.engine, files, memory_limit=limit,
                           temp_directory=spill, spark_master=args.spark_master)
        try:
            return _common.interruptible(lambda: work(table, columns), table.cancel)
        finally:
            if not _common.work_abandoned():
                table.close()
