"""The Spark engine: the same two SQL passes through PySpark (a cluster, or ``local[2]``).

The statements are those of :mod:`mcviz.engines.sql` in Spark's dialect (back-quoted names,
``:name`` parameters bound by ``SparkSession.sql(..., args=...)``). Needs ``pyspark`` and a Java
17 runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mcviz.engines import sql
from mcviz.engines.base import BinSummaries, Columns, Engine, SubpopulationSpec, expand_paths
from mcviz.errors import ValidationError

__all__ = ["SparkEngine", "local_session", "spark_kind"]


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


def local_session(master: str = "local[2]", *, app_name: str = "mcviz-screen"):
    """Start (or reuse) a local SparkSession bound to 127.0.0.1 with the web UI off."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.codegen.wholeStage", "false")  # huge predicates: skip compiling
        .config("spark.sql.session.timeZone", "UTC")
    )
    try:
        return builder.getOrCreate()
    except RuntimeError as error:  # pyspark's JAVA_GATEWAY_EXITED and kin
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValidationError(
            "the spark engine could not start a local Spark: it needs a Java 17+ runtime "
            f"(Debian: apt-get install default-jre-headless) ({reason})."
        ) from None


class SparkEngine(Engine):
    """Screen Parquet files with Spark SQL.

    Parameters
    ----------
    paths : path, glob or sequence of them
    columns : Columns
    spark : SparkSession, optional
        Default: :func:`local_session` (stopped by :meth:`close`).
    drop_invalid : bool, default False
    chunk_size : int, default 200
        Subpopulations per statement (keeps generated code within the JVM's method size).
    """

    name = "spark"

    def __init__(self, paths, columns: Columns, *, spark=None, drop_invalid: bool = False,
                 chunk_size: int = 200) -> None:
        self.files = expand_paths(paths)
        self.columns = columns
        self.drop_invalid = drop_invalid
        self.chunk_size = int(chunk_size)
        self._own = spark is None
        self.spark = local_session() if spark is None else spark
        frame = self.spark.read.parquet(*self.files)
        self.view = "__mcviz_data"
        frame.createOrReplaceTempView(self.view)
        self.kinds = {f.name: spark_kind(f.dataType) for f in frame.schema.fields}
        for role in (columns.score, columns.label, columns.weight):
            if role is not None and role not in self.kinds:
                raise ValidationError(f"no column {role!r} in {self.files[0]!r}.", column=role)
        self.source = self.view

    def close(self) -> None:
        """Stop the session if this engine started it."""
        if self._own:
            self.spark.stop()

    def _run(self, q: sql.Query, text: str) -> pd.DataFrame:
        rows = self.spark.sql(text, args=q.params).collect()
        if not rows:
            return pd.DataFrame()
        return pd.DataFrame([r.asDict() for r in rows])

    def overview(self) -> tuple[int, int, float, float]:
        """Validate once; return rows kept, dropped, lowest and highest score."""
        q = sql.Query(sql.SPARK)
        row = self._run(q, sql.overview_sql(self.columns, self.kinds, q, self.source)).iloc[0]
        return sql.read_overview(row, self.columns, self.kinds, drop_invalid=self.drop_invalid)

    def _data_sql(self, q: sql.Query) -> str:
        return "(" + sql.base_select(self.columns, self.kinds, q, self.source,
                                     drop_invalid=self.drop_invalid) + ") AS data"

    def histogram(self, specs: Sequence[SubpopulationSpec], lo: float, scale: float,
                  bins: int) -> BinSummaries:
        """Per-(subpopulation, bin) sums, one job per chunk of subpopulations."""
        frames = []
        for start in range(0, len(specs), self.chunk_size):
            positions = range(start, min(start + self.chunk_size, len(specs)))
            q = sql.Query(sql.SPARK)
            text = sql.histogram_sql(specs, positions, self.kinds, q, self._data_sql(q), lo,
                                     scale, bins)
            frames.append(self._run(q, text))
        frames = [f for f in frames if len(f)] or [pd.DataFrame({c: [] for c in "kbnwdpqv"})]
        return BinSummaries.from_frame(pd.concat(frames, ignore_index=True))

    def refine(self, specs: Sequence[SubpopulationSpec], candidates: pd.DataFrame, lo: float,
               scale: float, bins: int) -> pd.DataFrame:
        """Exact within-bin extremes for the candidate cells."""
        frames = []
        wanted = sorted(set(candidates["k"].tolist()))
        for start in range(0, len(wanted), self.chunk_size):
            positions = wanted[start:start + self.chunk_size]
            cells = candidates[candidates["k"].isin(positions)]
            self.spark.createDataFrame(
                [(int(k), int(b)) for k, b in zip(cells["k"], cells["b"], strict=True)],
                "k LONG, b LONG",
            ).createOrReplaceTempView("__mcviz_cells")
            q = sql.Query(sql.SPARK)
            text = sql.refine_sql(specs, positions, self.kinds, q, self._data_sql(q),
                                  "__mcviz_cells", lo, scale, bins)
            frames.append(self._run(q, text))
        frames = [f for f in frames if len(f)] or [pd.DataFrame({c: [] for c in ("k", "b", "hi",
                                                                                "lo")})]
        return pd.concat(frames, ignore_index=True)
