"""Whole tables inside an engine: aggregate queries and a SELECT written as Parquet.

The screening engines (:mod:`mcviz.engines.duckdb_engine`, :mod:`mcviz.engines.spark_engine`)
stream score-sorted rows into the shared evaluator. Some commands need less: one aggregate row
(a validation count), grouped sums, or a new column computed row by row and written back
(``mcviz apply --engine``: the fix map compiled to SQL by
:mod:`mcviz.recalibration.compiled`). A :class:`Table` is the files as one SQL relation
(:attr:`Table.source`) with its columns' kinds, run on DuckDB (:class:`DuckDBTable`, in process,
out of core under ``memory_limit``) or on Spark (:class:`SparkTable`, local or a cluster).

Statements come with their parameters bound (:class:`~mcviz.engines.sql.Query`): column names
are quoted identifiers and every value a marker, so no user text is ever spliced into SQL. The
only literals are the file paths and settings DuckDB does not accept as parameters, escaped as
single-quoted strings (:func:`~mcviz.engines.duckdb_engine.quote_literal`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from mcviz.engines import sql
from mcviz.engines.base import expand_paths
from mcviz.errors import ValidationError

__all__ = ["DuckDBTable", "SparkTable", "Table", "open_table", "replace_directory", "spark_memory"]


class Table:
    """The files as one relation of an engine (subclassed per engine).

    Attributes
    ----------
    dialect : :class:`~mcviz.engines.sql.Dialect`
    source : str
        The relation to select from (a ``read_parquet`` call or a temporary view).
    kinds : dict
        Column name to kind (``float``, ``int``, ``bool``, ``string``, ``timestamp``, ``other``),
        in the files' column order.
    types : dict
        Column name to the engine's own type name (``TIMESTAMP WITH TIME ZONE``, ``date``).
    """

    name = ""
    dialect: sql.Dialect
    source: str
    kinds: dict[str, str]
    types: dict[str, str]

    def query(self) -> sql.Query:
        """Return an empty statement of this engine's dialect."""
        return sql.Query(self.dialect)

    def frame(self, q: sql.Query, text: str) -> pd.DataFrame:
        """Run a (small-result) statement; return its rows."""
        raise NotImplementedError

    def large_frame(self, q: sql.Query, text: str) -> pd.DataFrame:
        """Run a statement of many rows (runs per distinct score); return its rows in order.

        :meth:`frame` here; Spark on a local master brings them through files instead.
        """
        return self.frame(q, text)

    def large_parts(self, q: sql.Query, text: str):
        """Yield a statement's rows as frames, one part at a time (here: one, :meth:`frame`)."""
        yield self.frame(q, text)

    def write_parquet(self, q: sql.Query, text: str, out: str | Path) -> None:
        """Write the rows of a statement to ``out`` as Parquet."""
        raise NotImplementedError

    def relation(self, path: str | Path) -> str:
        """Return a relation over Parquet this engine wrote at ``path`` (to read it back)."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Cancel the running statement (from another thread, on a signal)."""

    def close(self) -> None:
        """Release the engine (connection, session, spill directory)."""

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DuckDBTable(Table):
    """Parquet files read by DuckDB, spilling under ``memory_limit`` into ``temp_directory``."""

    name = "duckdb"
    dialect = sql.DUCKDB

    def __init__(self, paths, *, memory_limit: str | None = None,
                 temp_directory: str | None = None, threads: int | None = None) -> None:
        import duckdb

        from mcviz.engines.duckdb_engine import connect, parquet_source

        self.files = expand_paths(paths)
        self.memory_limit = memory_limit
        self._tmp = None
        if temp_directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mcviz-duckdb-")
            temp_directory = self._tmp.name
        self.temp_directory = temp_directory
        # rows keep the files' order: a table written back is the input plus a column
        self.con = connect(temp_directory, memory_limit=memory_limit, threads=threads,
                           keep_order=True)
        self.source = parquet_source(self.files)
        try:
            described = self.con.execute(f"DESCRIBE SELECT * FROM {self.source}").fetchall()
        except duckdb.Error as error:
            self.close()
            raise ValidationError(f"could not read {self.files[0]!r} as Parquet: "
                                  f"{str(error).splitlines()[0]}") from None
        from mcviz.engines.duckdb_engine import duckdb_kind

        self.kinds = {row[0]: duckdb_kind(row[1]) for row in described}
        self.types = {row[0]: str(row[1]) for row in described}

    def _execute(self, q: sql.Query, text: str):
        import duckdb

        try:
            return self.con.execute(text, q.params)
        except duckdb.OutOfMemoryException as error:
            limit = ("" if self.memory_limit is None
                     else f" under --memory-limit {self.memory_limit}")
            raise ValidationError(f"DuckDB ran out of memory{limit}: "
                                  f"{str(error).splitlines()[0]} Raise --memory-limit or free "
                                  f"disk space for spilling in {self.temp_directory!r}.") from None
        except duckdb.Error as error:
            raise ValidationError(f"DuckDB could not run the query on {self.files[0]!r}: "
                                  f"{str(error).splitlines()[0]}") from None

    def frame(self, q: sql.Query, text: str) -> pd.DataFrame:
        """Run a (small-result) statement; return its rows."""
        return self._execute(q, text).df()

    def write_parquet(self, q: sql.Query, text: str, out: str | Path) -> None:
        """Write the rows of a statement to ``out`` as Parquet."""
        from mcviz.engines.duckdb_engine import quote_literal

        self._execute(q, f"COPY ({text}) TO {quote_literal(str(out))} (FORMAT PARQUET)")

    def relation(self, path: str | Path) -> str:
        """Return a relation over Parquet this engine wrote at ``path``."""
        from mcviz.engines.duckdb_engine import parquet_source

        return parquet_source([str(path)])

    def cancel(self) -> None:
        """Cancel the running statement."""
        self.con.interrupt()

    def close(self) -> None:
        """Release the engine."""
        self.con.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _naive_utc(frame: pd.DataFrame) -> pd.DataFrame:
    """Spark's zoned timestamps as naive UTC (as ``collect()`` gave them); return ``frame``."""
    for name in frame.columns:
        if isinstance(frame[name].dtype, pd.DatetimeTZDtype):
            frame[name] = frame[name].dt.tz_convert("UTC").dt.tz_localize(None)
    return frame


ROW_GROUP = 16 << 20
"""Bytes of a Parquet row group :meth:`SparkTable.large_frame` has its writers buffer."""


class SparkTable(Table):
    """Parquet files (paths or URIs) read by Spark, as the temporary view ``__mcviz_table``."""

    name = "spark"
    dialect = sql.SPARK

    def __init__(self, paths, *, spark=None, spark_master: str = "local[2]",
                 memory_limit: str | None = None, local_dirs: str | None = None) -> None:
        from mcviz.engines.spark_engine import spark_files, spark_kind, spark_session

        self.files = spark_files(paths)
        self._own = spark is None
        self.spark = (spark_session(spark_master, memory=spark_memory(memory_limit),
                                    local_dirs=local_dirs) if spark is None else spark)
        try:
            frame = self.spark.read.parquet(*self.files)
        except Exception as error:  # AnalysisException and kin: one line, not a traceback
            self.close()
            raise ValidationError(f"Spark could not read {self.files[0]!r} as Parquet: "
                                  f"{_first_line(error)}") from None
        self.source = "__mcviz_table"
        frame.createOrReplaceTempView(self.source)
        self.kinds = {f.name: spark_kind(f.dataType) for f in frame.schema.fields}
        self.types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}

    def _sql(self, q: sql.Query, text: str):
        return self.spark.sql(text, args=q.params)

    def frame(self, q: sql.Query, text: str) -> pd.DataFrame:
        """Run a statement; return its rows (as Arrow batches, then one pandas frame).

        Not ``collect()``: a Python ``Row`` and a ``dict`` per row held the driver at 1,530 MiB
        for the score runs of ``mcviz metrics --engine spark`` of 3*10^6 rows (2^20 fine bins
        of 11 sums; the process tree at 2,591 MiB under ``--memory-limit 2GB``). The values
        and dtypes are ``collect()``'s, and an empty result keeps its columns; timestamps,
        which Arrow gives in the session's time zone (UTC:
        :func:`~mcviz.engines.spark_engine.spark_session`), are given without it, as
        ``collect()`` gave them.
        """
        try:
            frame = self._sql(q, text).toArrow().to_pandas()
        except Exception as error:  # Py4J / Spark errors: one line
            raise ValidationError(f"Spark could not run the query: {_first_line(error)}") from None
        return _naive_utc(frame)

    def large_frame(self, q: sql.Query, text: str) -> pd.DataFrame:
        """Run a statement of many rows; return them in order, not through the JVM's heap.

        On a local master the executors write the rows as Parquet part files under the
        directory Spark spills into (:func:`~mcviz.engines.holdout.spill_root`); they are read
        here in part order (a sorted result's ranges in order) and the directory removed
        (:meth:`large_parts`). Else :meth:`frame`. ``toArrow`` gathers every Arrow batch in the
        JVM's heap before serving it: a report at 10^7 rows (``--memory-limit 2450MB``, a heap
        of 550 MiB) died there in the comparison's sums per cell (issue #44).
        """
        parts = list(self.large_parts(q, text))
        if len(parts) == 1:
            return parts[0]
        return pd.concat(parts, ignore_index=True)

    def large_parts(self, q: sql.Query, text: str):
        """Yield a statement's rows as frames, one Parquet part file at a time, in part order.

        As :meth:`large_frame` (which joins them); a consumer that sums them part by part holds
        one part's rows at once. Not on a local master: one frame (:meth:`frame`).
        """
        import pyarrow.parquet as pq

        from mcviz.engines.holdout import local_master, spill_root

        if not local_master(self.spark):
            yield self.frame(q, text)
            return
        directory = Path(tempfile.mkdtemp(prefix="mcviz-frame-", dir=spill_root(self.spark)))
        try:
            try:  # row groups of 16 MiB: the writers' buffers in the heap, not 128 MiB each
                self._sql(q, text).write.option("parquet.block.size", str(ROW_GROUP)).parquet(
                    str(directory / "rows"))
            except Exception as error:  # Py4J / Spark errors: one line
                raise ValidationError(f"Spark could not run the query: "
                                      f"{_first_line(error)}") from None
            parts = sorted((directory / "rows").glob("part-*.parquet"))
            if not parts:  # no rows: the result's columns as toArrow gives them
                yield self.frame(q, text)
            for part in parts:
                frame = pq.read_table(part).to_pandas()
                part.unlink()
                yield _naive_utc(frame)
                del frame
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def write_parquet(self, q: sql.Query, text: str, out: str | Path) -> None:
        """Write a directory of Parquet part files (Spark's own layout) at ``out``."""
        try:
            self._sql(q, text).write.mode("overwrite").parquet(str(out))
        except Exception as error:
            raise ValidationError(f"Spark could not write {str(out)!r}: "
                                  f"{_first_line(error)}") from None

    def relation(self, path: str | Path) -> str:
        """Return a relation over Parquet this engine wrote at ``path``."""
        name = "__mcviz_written"
        self.spark.read.parquet(str(path)).createOrReplaceTempView(name)
        return name

    def cancel(self) -> None:
        """Cancel the running statement."""
        self.spark.sparkContext.cancelAllJobs()

    def close(self) -> None:
        """Release the engine."""
        if self._own:
            self.spark.stop()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def spark_memory(limit: str | None) -> str | None:
    """Turn a DuckDB-style memory limit (``2GB``, ``500MB``, ``1.5GiB``) into Spark's ``2048m``.

    Examples
    --------
    >>> spark_memory("2GB"), spark_memory("500 MB"), spark_memory(None)
    ('2048m', '500m', None)
    """
    if limit is None:
        return None
    match = _SIZE.match(str(limit))
    if match is None:
        raise ValidationError(f"--memory-limit {limit!r} is not understood (use e.g. 2GB or "
                              "500MB).")
    number, unit = float(match.group(1)), match.group(2).lower()
    mib = number * {"": 1.0 / (1 << 20), "k": 1.0 / 1024, "m": 1.0, "g": 1024.0,
                    "t": 1024.0 ** 2}[unit]
    if mib < 64:
        raise ValidationError(f"--memory-limit {limit!r} is below 64 MB; Spark cannot run in it.")
    return f"{int(mib)}m"


def open_table(engine: str, paths, *, memory_limit: str | None = None,
               temp_directory: str | None = None, spark_master: str | None = None) -> Table:
    """Open the files on the named engine (``duckdb`` or ``spark``).

    Both spill into ``temp_directory`` (a JVM started here: its shuffle and spill files,
    :func:`~mcviz.engines.spark_engine.spark_local_dirs`).
    """
    if engine == "duckdb":
        return DuckDBTable(paths, memory_limit=memory_limit, temp_directory=temp_directory)
    if engine == "spark":
        options = {} if spark_master is None else {"spark_master": spark_master}
        return SparkTable(paths, memory_limit=memory_limit, local_dirs=temp_directory, **options)
    raise ValidationError(f"unknown engine {engine!r}; use duckdb or spark.")


def replace_directory(temporary: Path, out: Path) -> None:
    """Move a written directory over ``out`` (a previous directory there is removed first)."""
    if out.is_dir():
        shutil.rmtree(out)
    Path(temporary).replace(out)
