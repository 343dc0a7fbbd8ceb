"""``mcviz screen``: generate subpopulations, evaluate them on the full data.

With ``--engine numpy`` (data that fits in memory) the subpopulations come from Algorithm 1 run on
every row; with DuckDB or Spark, on an in-memory simple random sample of the rows (drawn by DuckDB
in one parallel scan, :func:`mcviz.engines.duckdb_engine.read_sample`; ``--sample-rows``,
``--seed``), and the engine then evaluates their
predicates on every row (one pass over the score-sorted rows). The per-subpopulation table is
written to ``--out`` (Parquet, with the run's context in its metadata:
:mod:`mcviz.engines.results`, which the dashboard's Screening page opens) and M with its
argmax is printed (``--json``: the keys of ``mcviz metrics``).

Ctrl-C and SIGTERM cancel the running query (DuckDB ``interrupt``, Spark ``cancelAllJobs``);
DuckDB (``temp_directory``) and a Spark started here (``SPARK_LOCAL_DIRS``) spill into a temporary
directory that is removed however the command ends, and the
table is written to a temporary file renamed over ``--out`` only when complete.
"""

from __future__ import annotations

import argparse
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from mcviz.cli import _common
from mcviz.engines.base import Columns, Engine, as_specs, expand_paths, rows_in_files
from mcviz.engines.memory import (
    DRAW_RESIDUE,
    PYTHON_WORKER,
    duckdb_share,
    members_per_row,
    refuse_before_reading,
    release_memory,
    spark_heap,
)
from mcviz.engines.results import write_screen
from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions
from mcviz.subpopulations import generate_subpopulations

__all__ = ["make_engine", "register", "run", "sample_columns"]

HELP = "multi-calibration screening of Parquet data in memory, with DuckDB or with Spark"
DEFAULT_SAMPLE_ROWS = 1_000_000


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz screen``."""
    d = _common.default
    parser = subparsers.add_parser("screen", help=HELP, description=HELP)
    parser.add_argument("file", help="Parquet file, directory or glob (quote it)")
    parser.add_argument("--score", help="score column (probability of the positive class)")
    parser.add_argument("--label", help="label column")
    parser.add_argument("--positive", help="the label value of the positive class")
    parser.add_argument("--weight", help="weight column")
    parser.add_argument("--drop-invalid", action="store_true",
                        help="drop invalid rows (and say how many)")
    _common.add_kind_arguments(parser)
    parser.add_argument("--engine", choices=("numpy", "duckdb", "spark"), default="numpy")
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="memory limit of the whole screen, e.g. 2GB (a limit too small is "
                        "refused naming one that works): with duckdb, of this process (DuckDB gets "
                        "what the screen's buffers leave, and spills beyond it); with spark in "
                        "local mode, of this process, the JVM and Spark's Python workers (the "
                        "JVM's heap gets what they leave); with a cluster master, of the driver "
                        "only")
    master = _spark_master_default()
    parser.add_argument(
        "--spark-master", default=master, metavar="URL",
        help=f"Spark master (default {master}), e.g. spark://host:7077 or yarn; the files must "
        "then be URIs the executors can read and mcviz must be installed on them")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--exact", action="store_true", help="exact Kuiper statistics (default)")
    mode.add_argument("--histogram", type=int, metavar="BINS",
                      help="histogram mode with BINS score bins (reports the bound)")
    parser.add_argument("--covariates", help="comma-separated covariates to split on")
    n_subpopulations = d(generate_subpopulations, "n_subpopulations")
    parser.add_argument("--subpopulations", type=int, default=n_subpopulations, metavar="L",
                        help=f"number of random subpopulations (default {n_subpopulations})")
    parser.add_argument("--min-size", type=int, default=d(generate_subpopulations, "min_size"),
                        help="smallest subpopulation (default "
                        f"{d(generate_subpopulations, 'min_size')})")
    parser.add_argument("--sample-rows", type=int, default=DEFAULT_SAMPLE_ROWS, metavar="N",
                        help="rows sampled to generate the subpopulations with duckdb or spark "
                        f"(default {DEFAULT_SAMPLE_ROWS:,}; numpy uses every row)")
    parser.add_argument("--seed", type=int, default=d(generate_subpopulations, "seed"))
    parser.add_argument("--out", required=True, help="Parquet file for the per-subpopulation table")
    _common.add_json_argument(parser)
    parser.set_defaults(run=run)


def _spark_master_default() -> str:
    """Return the Spark engine's default master, read from its signature."""
    import inspect

    from mcviz.engines import spark_engine

    return inspect.signature(spark_engine.SparkEngine).parameters["spark_master"].default


def sample_columns(pred: Predictions, sample: pd.DataFrame) -> Columns:
    """Return the score/label/weight mapping a sample was loaded with, for the engines."""
    if pred.multiclass:
        raise ValidationError("mcviz screen needs one score column; multi-class files are not "
                              "supported out of core.")
    if pred.response_kind != "binary":
        raise ValidationError("mcviz screen needs binary labels.")
    label = sample[pred.label_column]
    numeric = pd.api.types.is_bool_dtype(label) or pd.api.types.is_numeric_dtype(label)
    if numeric and str(pred.positive) in ("1", "True", "1.0"):
        return Columns(pred.score_column, pred.label_column, pred.weight_column)
    return Columns(pred.score_column, pred.label_column, pred.weight_column,
                   positive=str(pred.positive).strip(), negative=pred.classes[0])


def make_engine(name: str, files, columns: Columns, *, memory_limit: str | None = None,
                drop_invalid: bool = False, temp_directory: str | None = None,
                spark_master: str | None = None, stream_memory_limit: str | None = None) -> Engine:
    """Build the named engine over the files (spilling into ``temp_directory``).

    DuckDB spills there, and so does a JVM started here (its shuffle and spill files).
    ``stream_memory_limit``: DuckDB's limit once the sorted rows stream (see
    :class:`~mcviz.engines.duckdb_engine.DuckDBEngine`); ``memory_limit`` with Spark: the
    JVM's heap (``spark.driver.memory``, :func:`~mcviz.engines.memory.spark_heap`).
    """
    if name == "numpy":
        from mcviz.engines.numpy_engine import NumpyEngine

        return NumpyEngine(files, columns, drop_invalid=drop_invalid)
    if name == "duckdb":
        try:
            from mcviz.engines.duckdb_engine import DuckDBEngine
        except ImportError:  # pragma: no cover
            raise ValidationError("the duckdb engine needs `pip install mcviz[duckdb]`.") from None
        return DuckDBEngine(files, columns, memory_limit=memory_limit, drop_invalid=drop_invalid,
                            temp_directory=temp_directory, stream_memory_limit=stream_memory_limit)
    if name == "spark":
        try:
            from mcviz.engines.spark_engine import SparkEngine
        except ImportError:  # pragma: no cover
            raise ValidationError("the spark engine needs `pip install mcviz[spark]` and Java "
                                  "17.") from None
        master = {} if spark_master is None else {"spark_master": spark_master}
        return SparkEngine(files, columns, drop_invalid=drop_invalid, memory=memory_limit,
                           local_dirs=temp_directory, **master)
    raise ValidationError(f"unknown engine {name!r}; use numpy, duckdb or spark.")


def _require_engine(name: str) -> None:
    """Refuse an engine whose package is missing, before the sample is read."""
    from mcviz.lazy import require_module

    if name == "duckdb":
        require_module("duckdb", needed_for="--engine duckdb",
                       install="pip install 'mcviz[duckdb]' (or pip install duckdb)")
    elif name == "spark":
        require_module("pyspark", needed_for="--engine spark",
                       install="pip install 'mcviz[spark]' (and Java 17)")


def check_parquet(name: str, *, what: str = "mcviz screen",
                  instead: str = "analyse a file that fits in memory with mcviz metrics or "
                                 "mcviz subpopulations") -> None:
    """Refuse a file that is not Parquet (a CSV, a FIFO) in one line, before any work.

    Every engine reads Parquet only (DuckDB's ``read_parquet``, the pyarrow fallback); a CSV
    ended in the engine's traceback. ``what`` reads the files (the command, its engine) and
    ``instead`` says what else to do.
    """
    try:
        regular = stat.S_ISREG(os.stat(name).st_mode)
        if regular:
            with open(name, "rb") as stream:  # noqa: PTH123
                head = stream.read(4)
    except OSError as error:
        raise ValidationError(f"file {name!r} cannot be read ({error.strerror}).") from None
    if not regular or head != b"PAR1":
        kind = "not a regular file" if not regular else "not a Parquet file"
        raise ValidationError(
            f"{what} reads Parquet files, and {name!r} is {kind}. Convert a CSV first "
            f"(e.g. pandas: pd.read_csv(FILE).to_parquet('FILE.parquet')), or {instead}.")


def cancel_engine(engine: Engine) -> None:
    """Cancel the engine's running query, if it has one to cancel (called on a signal)."""
    con = getattr(engine, "con", None)  # DuckDB
    if con is not None:
        con.interrupt()
    spark = getattr(engine, "spark", None)  # Spark
    if spark is not None:
        spark.sparkContext.cancelAllJobs()


def read_sample_interruptible(
    files: Sequence[str], rows: int, seed: int, temp_directory: str, *, keys: bool = False,
    memory_limit: str | None = None, columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Sample the rows (:func:`read_sample`) on a connection that a signal can interrupt.

    ``keys``: each row also gets its file and row number (:func:`read_sample`);
    ``memory_limit``: DuckDB's memory limit for the draw; ``columns``: only these are read.
    """
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the pyarrow fallback of read_sample
        from mcviz.engines.duckdb_engine import read_sample

        return read_sample(files, rows, seed, keys=keys)
    from mcviz.engines.duckdb_engine import read_sample

    config = {"temp_directory": temp_directory}
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    con = duckdb.connect(config=config)
    try:
        return _common.interruptible(lambda: read_sample(files, rows, seed, con=con, keys=keys,
                                                         columns=columns), con.interrupt)
    finally:
        if not _common.work_abandoned():
            con.close()


def _duckdb_limits(files, limit: str, per_row: float, specs: int,
                   bins: int | None) -> tuple[str, str]:
    """DuckDB's ``memory_limit`` while it sorts and while the rows stream, under ``limit``.

    ``--memory-limit`` bounds the whole screen. While DuckDB sorts it gets the limit minus
    what this process holds now; once the sorted rows stream, that minus what the screen's
    own buffers take beside it (:func:`~mcviz.engines.memory.screen_reserve`: one block of
    :data:`~mcviz.engines.duckdb_engine.BATCH_ROWS` rows and its members, ``per_row`` per row
    as Algorithm 1 found them on the sample, per summarising thread (a smaller table: one
    block of all its rows)); DuckDB writes out what no longer fits when the stream starts.
    Histogram mode (no sort) gets the second limit all along, less one thread's block and the
    ``specs`` x ``bins`` cells. A limit that cannot hold the screen is refused with the
    smallest one that can (:func:`~mcviz.engines.memory.duckdb_share`).
    """
    reserve = _screen_reserve(files, per_row, specs, bins)
    if bins is not None:  # no sort: the cells sit beside DuckDB all along
        share = duckdb_share(limit, reserve=reserve, refuse=True, what="this screen")
        return share, share
    stream = duckdb_share(limit, reserve=reserve, refuse=True, what="this screen")
    return duckdb_share(limit), stream


def _screen_reserve(files, per_row: float, specs: int, bins: int | None) -> int:
    """Bytes the screen holds beside DuckDB while the rows stream (:func:`_duckdb_limits`)."""
    from mcviz.budget import usable_cores
    from mcviz.engines.duckdb_engine import BATCH_ROWS
    from mcviz.engines.memory import compiled_loops_reserve, screen_reserve

    threads = usable_cores() if bins is None else 1
    reserve = screen_reserve(per_row, threads=threads, batch_rows=BATCH_ROWS,
                             rows=rows_in_files(files)) + compiled_loops_reserve()
    if bins is not None:  # no sort: the cells sit beside DuckDB all along
        reserve += 40 * specs * bins  # five float64 sums per (subpopulation, bin)
    return reserve


def run(args: argparse.Namespace) -> dict:
    """Run ``mcviz screen``; return the summary (the table goes to ``--out``)."""
    out = Path(args.out)
    _common.check_output(out, flag="--out")  # say so before the work, not after it
    _require_engine(args.engine)
    files = expand_paths(args.file)
    for name in files:
        check_parquet(name)
    if args.sample_rows < 1:
        raise ValidationError(f"--sample-rows must be positive, not {args.sample_rows}.")
    # before the sample is drawn: the blocks at one member a row (the population), no cells
    refuse_before_reading(args.memory_limit if args.engine == "duckdb" else None,
                          what="this screen",
                          reserve=lambda: _screen_reserve(files, 1.0, 0, args.histogram))
    if args.engine == "spark":  # this process, the JVM and Spark's Python workers
        spark_heap(args.memory_limit, master=args.spark_master, worker=PYTHON_WORKER,
                   reserve=DRAW_RESIDUE, what="this screen", note=True)
    with tempfile.TemporaryDirectory(prefix="mcviz-screen-", ignore_cleanup_errors=True) as spill:
        sample = read_sample_interruptible(  # under --memory-limit too (the process's share)
            files, args.sample_rows, args.seed, spill,
            memory_limit=None if args.memory_limit is None else duckdb_share(args.memory_limit))
        covariates = _common.split(args.covariates)
        # Invalid rows of the sample are skipped here: the engine validates every row of the
        # full data and reports counts of the file, not row numbers of a random sample.
        pred = load_predictions(
            sample, score=args.score, label=args.label, positive=args.positive,
            weight=args.weight, covariates=covariates, drop_invalid=True,
            **_common.kind_options(args),
        )
        columns = sample_columns(pred, sample)
        del sample
        generate = {"covariates": covariates or list(pred.covariates.columns),
                    "n_subpopulations": args.subpopulations, "min_size": args.min_size,
                    "seed": args.seed}
        kinds = pred.covariate_kinds
        specs, limit, stream_limit = None, args.memory_limit, None
        if args.engine != "numpy":  # Algorithm 1 on the sample, before the engine starts:
            subpopulations = generate_subpopulations(pred, **generate)
            specs = as_specs(subpopulations)  # conditions only
            per_row = members_per_row([s.index.size for s in subpopulations], pred.n)
            del pred, subpopulations  # the sample's rows and the members' index arrays go
            release_memory()  # back to the system, not kept by the allocators beside DuckDB
            if args.engine == "duckdb" and limit is not None:
                limit, stream_limit = _duckdb_limits(files, limit, per_row, len(specs),
                                                     args.histogram)
            elif args.engine == "spark":  # the JVM's heap: what the rest leaves of the limit
                limit = spark_heap(limit, master=args.spark_master, worker=PYTHON_WORKER,
                                   what="this screen")
        engine = make_engine(args.engine, files, columns, memory_limit=limit,
                             stream_memory_limit=stream_limit,
                             drop_invalid=args.drop_invalid, temp_directory=spill,
                             spark_master=args.spark_master)
        options = ({"exact": False, "bins": args.histogram} if args.histogram is not None
                   else {"exact": True})
        try:
            if args.engine == "numpy":  # Algorithm 1 on every row; Python code: the main
                subpopulations = generate_subpopulations(engine.pred, **generate)  # thread's
                result = engine.screen(subpopulations, **options)  # signal handlers run
            else:  # a query in native code: cancelled from the main thread on a signal
                result = _common.interruptible(lambda: engine.screen(specs, **options),
                                               lambda: cancel_engine(engine))
        finally:
            if not _common.work_abandoned():  # a query that ignored the cancel keeps its engine
                engine.close()
    with _common.atomic_output(out) as temporary:
        write_screen(result, temporary, files=files, columns=columns, kinds=kinds)
    return result.summary()
