"""The ``--engine``, ``--memory-limit`` and ``--spark-master`` options.

The commands that run on DuckDB or Spark as well as in memory take the same flags as
``mcviz screen``.
"""

from __future__ import annotations

import argparse

__all__ = ["add_engine_arguments", "engine_files", "engine_share", "on_table", "read_whole",
           "refuse_before_reading", "refuse_unsupported", "require_engine", "sample_roles",
           "sample_share", "spark_limit"]


def add_engine_arguments(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Add ``--engine numpy|duckdb|spark``, ``--memory-limit`` and ``--spark-master``."""
    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy",
                        help=help_text)
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="memory limit of the whole run, e.g. 2GB (a limit too small is "
                        "refused naming one that works): with duckdb, of this process (DuckDB "
                        "gets what the command does not hold and spills beyond); with spark in "
                        "local mode, of this process, the JVM and Spark's Python workers (the "
                        "JVM's heap gets what they leave); with a cluster master, of the "
                        "driver only")
    # no default here: the Spark engine's own (local mode), without importing it at start-up
    parser.add_argument("--spark-master", metavar="URL",
                        help="Spark master, e.g. spark://host:7077 (default: local mode, as "
                        "mcviz screen)")


def require_engine(name: str) -> None:
    """Refuse, in one line naming what to install, an engine whose package is missing."""
    from mcviz.cli.screen import _require_engine

    _require_engine(name)


def engine_files(args: argparse.Namespace) -> tuple[str, ...]:
    """Return the files ``args.file`` names (:func:`~mcviz.engines.base.expand_paths`).

    DuckDB and Spark read Parquet only: a file that is not (a CSV, a FIFO) is refused in one
    line naming it, before any work (it ended in a DuckDB traceback); the numpy engine's
    commands read a CSV in memory.
    """
    from mcviz.cli.screen import check_parquet
    from mcviz.engines.base import expand_paths

    files = expand_paths(args.file)
    if args.engine in ("duckdb", "spark"):
        for name in files:
            check_parquet(name, what=f"mcviz {args.command} --engine {args.engine}",
                          instead="analyse it in memory without --engine")
        _check_numeric_scores(args, files[0])
    return files


def _check_numeric_scores(args: argparse.Namespace, first: str) -> None:
    """Refuse a score stored as text in the Parquet file, naming it.

    The engines compare and sort it as a number: the search's score bands ended in "column
    'score' is nominal; '<' needs an ordered covariate".
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mcviz.errors import ValidationError

    try:
        schema = pq.read_schema(first)
    except (OSError, pa.ArrowException):  # said where the rows are read
        return
    name = getattr(args, "score", None)  # compare checks --score-b itself
    if not name or name not in schema.names:
        return
    kind = schema.field(name).type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
            or pa.types.is_decimal(kind)):
        held = ("text" if pa.types.is_string(kind) or pa.types.is_large_string(kind)
                else f"{kind} values")
        raise ValidationError(
            f"column {name!r} holds {held} in {first!r}; --engine {args.engine} "
            "needs a numeric score: cast it to float in the file (e.g. pandas: "
            f"df[{name!r}] = df[{name!r}].astype(float)), or analyse it in memory without "
            "--engine.", column=name)


def engine_share(memory_limit: str | None, *, reserve: int = 0, what: str = "this command",
                 floor: int | None = None) -> str | None:
    """Return DuckDB's share of ``--memory-limit`` while a command's main pass runs.

    ``--memory-limit`` bounds the whole process, as ``mcviz screen``'s: DuckDB gets the limit
    minus what this process holds now, ``reserve`` (what the command itself adds beside
    DuckDB while it works: :data:`~mcviz.engines.memory.AGGREGATE_RESERVE`,
    :func:`~mcviz.engines.memory.stream_reserve`), a margin and DuckDB's own overshoot
    (:func:`mcviz.engines.memory.duckdb_share`). A limit that leaves DuckDB less than its
    floor is refused (:class:`~mcviz.errors.ValidationError` naming ``--memory-limit`` and
    the smallest limit that holds ``what``; ``floor``: DuckDB's least, by default
    :data:`~mcviz.engines.memory.DUCKDB_FLOOR`). None: no limit given (DuckDB's default).
    Every command with ``--memory-limit`` refuses this way: a limit it cannot hold.

    Examples
    --------
    >>> engine_share(None) is None
    True
    >>> int(engine_share("100GB")[:-3]) > 90_000
    True
    """
    if memory_limit is None:
        return None
    from mcviz.engines.memory import DUCKDB_FLOOR, duckdb_share

    return duckdb_share(memory_limit, reserve=reserve, refuse=True, what=what,
                        floor=DUCKDB_FLOOR if floor is None else floor)


def refuse_before_reading(args: argparse.Namespace, *, reserve=0, what: str = "this command",
                          floor: int | None = None, worker: int = 0) -> None:
    """Refuse, before any row is read, a ``--memory-limit`` the command can never hold.

    :func:`mcviz.engines.memory.refuse_before_reading` with ``--engine duckdb`` (``reserve``:
    the command's fixed bytes beside DuckDB, the same as its later check's, or a function
    returning them; ``floor``: DuckDB's least). A limit enough for this but not for what the
    sample adds is still refused by the command's later check (:func:`engine_share`). With
    ``--engine spark``, :func:`spark_limit` with what a sample's draw leaves (``worker``: the
    bytes of each Python worker Spark starts for the command), and the note of a cluster
    master.
    """
    from mcviz.engines import memory

    if getattr(args, "engine", "numpy") == "spark":
        spark_limit(args, worker=worker, what=what, reserve=memory.DRAW_RESIDUE, note=True)
    if getattr(args, "engine", "numpy") != "duckdb":
        return

    memory.refuse_before_reading(args.memory_limit, reserve=reserve, what=what,
                                 floor=memory.DUCKDB_FLOOR if floor is None else floor)


def spark_limit(args: argparse.Namespace, *, worker: int = 0, what: str = "this command",
                reserve: int = 0, note: bool = False) -> str | None:
    """Return the Spark JVM's heap under ``--memory-limit`` (Spark's form); None without one.

    :func:`mcviz.engines.memory.spark_heap` for ``--spark-master`` (local mode by default):
    in local mode the limit bounds this process, the JVM and Spark's Python workers
    (``worker`` bytes each); a limit too small is refused naming one that works. None unless
    ``--engine spark``.
    """
    if getattr(args, "engine", "numpy") != "spark" or args.memory_limit is None:
        return None
    from mcviz.cli.screen import _spark_master_default
    from mcviz.engines.memory import spark_heap

    master = getattr(args, "spark_master", None) or _spark_master_default()
    return spark_heap(args.memory_limit, master=master, worker=worker, reserve=reserve,
                      what=what, note=note)


def spark_room(args: argparse.Namespace, *, worker: int = 0) -> int | None:
    """Bytes this process may add while Spark runs at its least under ``--memory-limit``.

    :func:`mcviz.engines.memory.spark_room` for ``--spark-master`` (local mode by default);
    None unless ``--engine spark`` with a limit.
    """
    if getattr(args, "engine", "numpy") != "spark" or args.memory_limit is None:
        return None
    from mcviz.cli.screen import _spark_master_default
    from mcviz.engines import memory

    master = getattr(args, "spark_master", None) or _spark_master_default()
    return memory.spark_room(args.memory_limit, master=master, worker=worker)


def sample_share(memory_limit: str | None) -> str | None:
    """DuckDB's share of ``--memory-limit`` while a sample is drawn (never refused here).

    As ``mcviz screen``'s draw: the limit minus what this process holds, at least
    :data:`~mcviz.engines.memory.DUCKDB_FLOOR` (or a quarter of the limit). The command
    refuses a limit it cannot hold once it knows what it holds beside DuckDB
    (:func:`engine_share`, after the sample's work). None: no limit given.
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
    sample = read_sample_interruptible(  # under --memory-limit too (DuckDB's sample share)
        files, SAMPLE_ROWS, 0, spill,
        memory_limit=sample_share(args.memory_limit) if args.engine == "duckdb" else None)
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


def on_table(args: argparse.Namespace, work, *, reserve: int | None = None,
             what: str = "this command", worker: int = 0, spark_reserve: int = 0):
    """Run ``work(table, columns)`` on ``args.file`` in ``args.engine``; return its result.

    The roles come from :func:`sample_roles`; the engine spills into a temporary directory
    removed however the command ends, and a signal cancels the running query. DuckDB gets
    :func:`engine_share` of ``--memory-limit``, ``reserve`` (default
    :data:`~mcviz.engines.memory.AGGREGATE_RESERVE`) kept for what ``work`` holds beside it;
    a limit that cannot hold ``what`` is refused before the roles' sample is read
    (:func:`refuse_before_reading`) and, counting what the sample left, before the table opens.
    Spark's JVM gets :func:`spark_limit` (``worker``: the bytes of each Python worker;
    ``spark_reserve``: bytes ``work`` adds here beside the JVM).
    """
    import tempfile

    from mcviz.cli import _common
    from mcviz.engines.memory import AGGREGATE_RESERVE
    from mcviz.engines.tables import open_table

    require_engine(args.engine)
    files = engine_files(args)
    reserve = AGGREGATE_RESERVE if reserve is None else reserve
    refuse_before_reading(args, reserve=reserve, what=what, worker=worker)
    with tempfile.TemporaryDirectory(prefix="mcviz-engine-", ignore_cleanup_errors=True) as spill:
        columns, _ = sample_roles(args, files, spill)
        # --memory-limit bounds the process: DuckDB gets what this process does not hold
        limit = spark_limit(args, worker=worker, what=what, reserve=spark_reserve)
        if args.engine == "duckdb":
            limit = engine_share(args.memory_limit, what=what, reserve=reserve)
        table = open_table(args.engine, files, memory_limit=limit,
                           temp_directory=spill, spark_master=args.spark_master)
        try:
            return _common.interruptible(lambda: work(table, columns), table.cancel)
        finally:
            if not _common.work_abandoned():
                table.close()
