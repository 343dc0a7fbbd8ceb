r"""The Spark engine: exact screening as one distributed pass over range partitions of the score.

How the job runs (exact mode, eqs. (1), (2), (4), (5) of [1]):

1. Spark reads the Parquet files and checks every row once (the invalid-row counts of
   :mod:`mcviz.engines.sql`, one aggregate job).
2. The valid rows, projected to score, response, weight and the covariates the conditions name,
   are **range-partitioned by score** (``repartitionByRange``) and sorted within each
   partition. Spark's range partitioner assigns a row's partition as a function of its score
   alone, so a run of tied scores never straddles two partitions; the driver verifies it (the
   partitions' score ranges must be disjoint) before combining.
3. On the executors, ``mapInArrow`` streams each partition's Arrow batches through the shared
   evaluator (:class:`~mcviz.core.batches.BatchAccumulator` with the
   :class:`~mcviz.core.membership.MembershipPlan` built from the broadcast specs) and returns
   **one row per partition**: its lowest and highest score and its :math:`\ell`-wide
   :class:`~mcviz.core.evaluator.ChunkSummaries`, serialised as ``.npz`` bytes.
4. The driver orders the partitions by score and combines their summaries
   (:func:`~mcviz.core.evaluator.combine_all`, associative), then
   :func:`~mcviz.core.evaluator.finish` and the one eq. (4) give :math:`D_k`, :math:`\sigma_k`
   and :math:`M` — exactly, after one pass over the data, with :math:`\ell \times` partitions
   numbers sent back to the driver.

Histogram mode streams the partitions as they are (no shuffle, no sort) through
:class:`~mcviz.engines.base.HistogramAccumulator` and adds the per-partition bin sums on the
driver.

Running on a cluster
--------------------
Pass a master URL (``--spark-master`` on the command line; ``spark_master`` here), for example
``spark://host:7077``, ``yarn`` or ``k8s://https://host:443``, or pass a ready session
(``spark=SparkSession.builder.getOrCreate()`` inside ``spark-submit`` or a notebook). Then:

* the files must be readable by every executor: give ``hdfs://``, ``s3a://`` or ``abfss://``
  URIs (they are passed to Spark unchanged) or a path on a shared file system;
* every executor needs Python with ``mcviz`` (and numpy, pandas, pyarrow) importable: install
  it on the nodes, or ship an environment with ``spark.archives`` / ``--py-files``;
* :func:`spark_session` binds the driver to 127.0.0.1 and turns the web UI off only for
  ``local[...]`` masters; for a cluster it leaves the network settings to Spark's defaults and
  ``spark-defaults.conf``.

Needs ``pyspark`` (3.3 or later, for ``mapInArrow``) and a Java 17 runtime.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1), (2), (4), (5).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import fields
from functools import partial

import numpy as np

from mcviz.core.batches import BatchAccumulator
from mcviz.core.evaluator import ChunkSummaries, combine_all
from mcviz.core.membership import MembershipPlan
from mcviz.engines import sql
from mcviz.engines.base import (
    BinSummaries,
    Columns,
    Engine,
    HistogramAccumulator,
    SubpopulationSpec,
    arrow_blocks,
    arrow_columns,
    expand_paths,
)
from mcviz.errors import ValidationError

__all__ = ["PARTITION_ROWS", "SparkEngine", "local_session", "spark_files", "spark_kind",
           "spark_local_dirs", "spark_session"]

PARTITION_ROWS = 1 << 21
"""Rows per range partition (at least one partition per core). A Python worker holds one
block of :data:`BATCH_ROWS` rows at a time (the partition is streamed), so this only sets the
tasks' granularity."""

BATCH_ROWS = 1 << 17
"""Rows per Arrow batch handed to the evaluator on an executor."""

_RESULT_SCHEMA = "lo DOUBLE, hi DOUBLE, rows LONG, payload BINARY"


def spark_kind(data_type: object) -> str:
    """Map a Spark SQL data type to the kinds of :mod:`mcviz.engines.sql`."""
    name = type(data_type).__name__
    if name in ("DoubleType", "FloatType", "DecimalType"):
        return "float"
    if name in ("ByteType", "ShortType", "IntegerType", "LongType"):
        return "int"
    if name == "BooleanType":
        return "bool"
    if name in ("StringType", "VarcharType", "CharType"):
        return "string"
    if name in ("TimestampType", "TimestampNTZType", "DateType"):
        return "timestamp"
    return "other"


def _quiet_pandas_warning() -> None:
    """Silence PySpark's one FutureWarning about pandas >= 3, and nothing else.

    PySpark 4.3 (the newest) warns on every conversion that it "does not yet fully support
    pandas >= 3.0.0"; mcviz pins pandas 3. The engine passes only plain numeric, boolean,
    string and timestamp columns through Arrow, and tests/engines/test_engines_spark.py checks
    that the Spark engine gives the library's M and every statistic to 1e-12 on such data, with
    this same pandas: the warning is about features the engine does not use.
    """
    warnings.filterwarnings(
        "ignore", message=r"PySpark does not yet fully support pandas >= 3\.0\.0",
        category=FutureWarning)


@contextlib.contextmanager
def spark_local_dirs(directory: str | None) -> Iterator[None]:
    """Point ``SPARK_LOCAL_DIRS`` at ``directory`` inside the block, then restore it.

    The JVM that ``spark-submit`` starts copies this process's environment, so a Spark started
    inside the block writes its shuffle and spill files into ``directory`` (a run's temporary
    directory). The variable is restored when the block ends (removed when it was unset): the
    run's directory is deleted when the run ends, and a Spark started later by this process
    must not inherit it. None: the variable is left as it is.
    """
    if directory is None:
        yield
        return
    previous = os.environ.get("SPARK_LOCAL_DIRS")
    os.environ["SPARK_LOCAL_DIRS"] = str(directory)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("SPARK_LOCAL_DIRS", None)
        else:
            os.environ["SPARK_LOCAL_DIRS"] = previous


def local_session(master: str = "local[2]", *, app_name: str = "mcviz-screen"):
    """Start (or reuse) a local SparkSession bound to 127.0.0.1 with the web UI off."""
    return spark_session(master, app_name=app_name)


def spark_session(master: str = "local[2]", *, app_name: str = "mcviz-screen",
                  memory: str | None = None, local_dirs: str | None = None):
    """Start (or reuse) a SparkSession for ``master``.

    ``memory`` (Spark's form, e.g. ``"2048m"``) sets ``spark.driver.memory``: in ``local[...]``
    mode the driver's JVM holds the executors too, so it caps the whole job's heap (it takes
    effect only when this call starts the JVM). ``--memory-limit`` gives it what the limit
    leaves beside this process, the JVM's non-heap memory and Spark's Python workers
    (:func:`mcviz.engines.memory.spark_heap`).

    ``local_dirs``: the directory a JVM started by this call spills into
    (:func:`spark_local_dirs`; ``SPARK_LOCAL_DIRS`` is restored once it has started).

    ``local[...]`` masters are bound to 127.0.0.1 with the web UI off; any other master URL
    (``spark://host:7077``, ``yarn``, ``k8s://...``) keeps Spark's network defaults.
    """
    from pyspark.sql import SparkSession

    _quiet_pandas_warning()
    if master.startswith("local"):
        # Python workers start this interpreter (with mcviz's dependencies), not the first
        # `python3` on PATH, which may lack pandas and pyarrow.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))
        .config("spark.ui.showConsoleProgress", "false")
    )
    if memory is not None:
        builder = builder.config("spark.driver.memory", memory)
    if master.startswith("local"):
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "4"))
    try:
        with spark_local_dirs(local_dirs):
            return builder.getOrCreate()
    except RuntimeError as error:  # pyspark's JAVA_GATEWAY_EXITED and kin
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValidationError(
            f"the spark engine could not start a local Spark for master {master!r}: it needs a "
            "Java 17+ runtime (Debian: apt-get install default-jre-headless) "
            f"({reason})."
        ) from None


def spark_files(paths) -> tuple[str, ...]:
    """URIs (``scheme://...``) go to Spark unchanged; local paths and globs are expanded."""
    items = [paths] if isinstance(paths, str) or not hasattr(paths, "__iter__") else list(paths)
    remote = tuple(str(p) for p in items if "://" in str(p))
    local = [p for p in items if "://" not in str(p)]
    return remote + (expand_paths(local) if local else ())


class SparkEngine(Engine):
    """Screen Parquet files with Spark (local or a cluster): see the module docstring.

    Parameters
    ----------
    paths : path, glob, URI or sequence of them
    columns : Columns
    spark : SparkSession, optional
        A session to use (not stopped by :meth:`close`). Default: :func:`spark_session` for
        ``spark_master`` (stopped by :meth:`close`).
    spark_master : str, default ``"local[2]"``
        Master URL when no session is given, e.g. ``"spark://host:7077"`` or ``"yarn"``.
    drop_invalid : bool, default False
    partition_rows : int, default :data:`PARTITION_ROWS`
        Rows per range partition of exact mode.
    memory : str, optional
        ``spark.driver.memory`` of a session started here (Spark's form, e.g. ``"1024m"``;
        ``mcviz screen --memory-limit`` gives :func:`mcviz.engines.memory.spark_heap`).
    local_dirs : str, optional
        Where a JVM started here spills (:func:`spark_local_dirs`).
    """

    name = "spark"

    def __init__(self, paths, columns: Columns, *, spark=None, spark_master: str = "local[2]",
                 drop_invalid: bool = False, partition_rows: int = PARTITION_ROWS,
                 memory: str | None = None, local_dirs: str | None = None) -> None:
        self.files = spark_files(paths)
        self.columns = columns
        self.drop_invalid = drop_invalid
        self.partition_rows = int(partition_rows)
        self._own = spark is None
        self.spark = (spark_session(spark_master, memory=memory, local_dirs=local_dirs)
                      if spark is None else spark)
        frame = self.spark.read.parquet(*self.files)
        self.view = "__mcviz_data"
        frame.createOrReplaceTempView(self.view)
        self.kinds = {f.name: spark_kind(f.dataType) for f in frame.schema.fields}
        for role in (columns.score, columns.label, columns.weight):
            if role is not None and role not in self.kinds:
                raise ValidationError(f"no column {role!r} in {self.files[0]!r}.", column=role)
        self.source = self.view
        self.n = 0
        self.partitions: list[tuple[float, float, int]] = []
        """(lowest score, highest score, rows) of each partition of the last exact pass."""

    def close(self) -> None:
        """Stop the session if this engine started it."""
        if self._own:
            self.spark.stop()

    def overview(self) -> tuple[int, int, float, float]:
        """Validate once; return rows kept, dropped, lowest and highest score."""
        q = sql.Query(sql.SPARK)
        rows = self.spark.sql(sql.overview_sql(self.columns, self.kinds, q, self.source),
                              args=q.params).collect()
        import pandas as pd

        row = pd.Series(rows[0].asDict())
        overview = sql.read_overview(row, self.columns, self.kinds,
                                     drop_invalid=self.drop_invalid)
        self.n = overview[0]
        return overview

    def _rows(self, plan: MembershipPlan):
        q = sql.Query(sql.SPARK)
        text = sql.rows_sql(self.columns, self.kinds, q, self.source, plan.columns,
                            drop_invalid=self.drop_invalid, order=False)
        return self.spark.sql(text, args=q.params)

    def _partition_count(self) -> int:
        cores = max(int(self.spark.sparkContext.defaultParallelism), 1)
        return cores * max(math.ceil(self.n / (cores * self.partition_rows)), 1)

    def exact_summaries(self, specs: Sequence[SubpopulationSpec]) -> ChunkSummaries:
        """Range partitions by score, summarised on the executors, combined in score order."""
        plan = MembershipPlan(specs)
        frame = self._rows(plan)
        if not self.n:
            self.overview()
        ranged = frame.repartitionByRange(self._partition_count(), sql.S)
        ranged = ranged.sortWithinPartitions(sql.S)
        specs_broadcast = self.spark.sparkContext.broadcast(tuple(specs))
        task = partial(_summarise_partition, specs_broadcast, self.columns.weight is not None)
        try:
            rows = ranged.mapInArrow(task, _RESULT_SCHEMA).collect()
        finally:
            specs_broadcast.unpersist()
        rows = sorted(rows, key=lambda r: r["lo"])
        self.partitions = [(r["lo"], r["hi"], r["rows"]) for r in rows]
        check_partitions(self.partitions)
        if not rows:
            return ChunkSummaries.empty(len(specs))
        return combine_all(unpack_summaries(r["payload"]) for r in rows)

    def histogram(self, specs: Sequence[SubpopulationSpec], lo: float, scale: float,
                  bins: int) -> BinSummaries:
        """Per-(subpopulation, bin) sums per partition (no shuffle), added on the driver."""
        plan = MembershipPlan(specs)
        accumulator = HistogramAccumulator(plan, lo, scale, bins)
        specs_broadcast = self.spark.sparkContext.broadcast(tuple(specs))
        task = partial(_histogram_partition, specs_broadcast, self.columns.weight is not None,
                       (lo, scale, bins))
        try:
            rows = self._rows(plan).mapInArrow(task, _RESULT_SCHEMA).collect()
        finally:
            specs_broadcast.unpersist()
        for row in rows:
            accumulator.merge(np.load(io.BytesIO(row["payload"]), allow_pickle=False))
        return accumulator.summaries()


def check_partitions(partitions: Sequence[tuple[float, float, int]]) -> None:
    """Raise unless the partitions' score ranges are ordered and disjoint (no split tie run)."""
    for (_, high, _), (low, _, _) in itertools.pairwise(partitions):
        if not high < low:
            raise RuntimeError(
                f"Spark put score {low!r} into two range partitions: a tie run was split; the "
                "exact combination needs every tie run inside one partition.")


def pack_summaries(summaries: ChunkSummaries) -> bytes:
    """Serialise chunk summaries as ``.npz`` bytes (no pickle)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{f.name: getattr(summaries, f.name) for f in fields(summaries)})
    return buffer.getvalue()


def unpack_summaries(payload: bytes) -> ChunkSummaries:
    """Inverse of :func:`pack_summaries`."""
    with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
        return ChunkSummaries(**{f.name: arrays[f.name] for f in fields(ChunkSummaries)})


def _batches(batches: Iterator, weighted: bool, names: Sequence[str]) -> Iterator[tuple]:
    """(score, label, weight or None, covariates) of each Arrow batch of a partition."""
    for table in arrow_blocks(batches, BATCH_ROWS):
        yield (table.column(sql.S).to_numpy(), table.column(sql.R).to_numpy(),
               table.column(sql.W).to_numpy() if weighted else None,
               arrow_columns(table, sql.covariate_aliases(names)))


def _summarise_partition(specs_broadcast, weighted: bool, batches: Iterator) -> Iterator:
    """Executor side of exact mode: one partition's sorted batches -> one summary row."""
    import pyarrow as pa

    accumulator = BatchAccumulator(MembershipPlan(specs_broadcast.value))
    low, high, rows = math.inf, -math.inf, 0
    for score, label, weight, columns in _batches(batches, weighted, accumulator.plan.columns):
        if score[0] < high or np.any(score[1:] < score[:-1]):
            raise RuntimeError("a Spark partition arrived unsorted by score.")
        low, high, rows = min(low, float(score[0])), float(score[-1]), rows + score.size
        accumulator.add(score, label, weight, columns)
    if rows:
        yield pa.RecordBatch.from_pydict(
            {"lo": [low], "hi": [high], "rows": [rows],
             "payload": [pack_summaries(accumulator.finish())]},
            schema=pa.schema([("lo", pa.float64()), ("hi", pa.float64()), ("rows", pa.int64()),
                              ("payload", pa.binary())]))


def _histogram_partition(specs_broadcast, weighted: bool, binning: tuple,
                         batches: Iterator) -> Iterator:
    """Executor side of histogram mode: one partition's rows (any order) -> its bin sums."""
    import pyarrow as pa

    accumulator = HistogramAccumulator(MembershipPlan(specs_broadcast.value), *binning)
    rows = 0
    for score, label, weight, columns in _batches(batches, weighted, accumulator.plan.columns):
        rows += score.size
        accumulator.add(score, label, weight, columns)
    if rows:
        buffer = io.BytesIO()
        np.save(buffer, accumulator.sums, allow_pickle=False)
        yield pa.RecordBatch.from_pydict(
            {"lo": [math.nan], "hi": [math.nan], "rows": [rows], "payload": [buffer.getvalue()]},
            schema=pa.schema([("lo", pa.float64()), ("hi", pa.float64()), ("rows", pa.int64()),
                              ("payload", pa.binary())]))
