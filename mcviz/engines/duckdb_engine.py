r"""The DuckDB engine: exact or histogram screening of Parquet files larger than memory.

DuckDB reads the files in parallel, checks every row once (:meth:`DuckDBEngine.overview`:
invalid rows are an error with their counts, or dropped and counted), and then only *reads*:

* **exact mode** — ``ORDER BY score`` (out of core under ``memory_limit``, spilling to
  ``temp_directory``), streamed as Arrow record batches of ``batch_rows`` rows with only the
  score, response, weight and the covariates some condition names. The shared evaluator
  (:class:`~mcviz.core.batches.BatchAccumulator`) measures each batch: membership from integer
  codes (a child tested only for the conditions it adds to its parent), the ordered chunk
  summaries of eqs. (1)-(2) and (5) of [1], the trailing tie run of a batch held back to the
  next one. Cost: one sort and one pass; memory: one batch plus :math:`\ell`-wide summaries.
* **histogram mode** — the same stream *without* the sort (bin sums do not depend on the order
  of rows), through :class:`~mcviz.engines.base.HistogramAccumulator`. It is kept as the
  bounded-error option because it needs no sort: no spill to disk and memory
  :math:`\ell \times` bins at any number of rows. Its per-row cost is the same membership
  test as exact mode (never :math:`n \times \ell` SQL predicates), so on data whose sort fits
  in memory exact mode costs about the same and is the better choice.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1), (2), (4), (5).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence

import pandas as pd

from mcviz.budget import usable_cores
from mcviz.core.batches import BatchAccumulator
from mcviz.core.evaluator import ChunkSummaries
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
from mcviz.engines.spark_tasks import FILE_KEY, ROW_KEY
from mcviz.errors import ValidationError

__all__ = ["BATCH_ROWS", "FILE_KEY", "ROW_KEY", "DuckDBEngine", "connect", "duckdb_kind",
           "keyed_source", "parquet_source", "quote_literal"]

BATCH_ROWS = 60 * 2048
"""Rows per streamed Arrow batch (cache-sized work for the evaluator). DuckDB hands out whole
vectors of 2,048 rows, so a multiple of 2,048 makes each of its batches one block (1 << 17 made
blocks of two batches, 245,760 rows: at 10^6 rows the same CPU, and with two blocks summarised
at once 180 MB more peak memory)."""


def connect(temp_directory: str, *, memory_limit: str | None = None, threads: int | None = None,
            keep_order: bool = False):
    """Open an in-process DuckDB that spills into ``temp_directory`` under ``memory_limit``.

    ``keep_order``: results keep the files' row order (a table written back row for row);
    otherwise DuckDB may reorder rows, which costs less memory.
    """
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET preserve_insertion_order = {'true' if keep_order else 'false'}")
    con.execute("SET enable_progress_bar = false")  # never on stdout (--json)
    con.execute(f"SET temp_directory = {quote_literal(temp_directory)}")
    if memory_limit is not None:
        try:
            con.execute(f"SET memory_limit = {quote_literal(str(memory_limit))}")
        except duckdb.Error as error:
            con.close()
            raise ValidationError(
                f"memory limit {memory_limit!r} is not understood (use e.g. 2GB or 500MB): "
                f"{str(error).splitlines()[0]}"
            ) from None
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    return con


def parquet_source(files: Sequence[str]) -> str:
    """Return the ``read_parquet`` relation over the files (paths as escaped literals)."""
    listed = ", ".join(quote_literal(f) for f in files)
    return f"read_parquet([{listed}], union_by_name = true)"


def duckdb_kind(type_name: str) -> str:
    """Map a DuckDB type name to the kinds of :mod:`mcviz.engines.sql`."""
    t = type_name.upper()
    if t in ("DOUBLE", "FLOAT", "REAL") or t.startswith("DECIMAL"):
        return "float"
    if t in ("BOOLEAN",):
        return "bool"
    if any(t.startswith(x) for x in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                                     "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")):
        return "int"
    if t.startswith("VARCHAR") or t.startswith("ENUM"):
        return "string"
    if t.startswith("TIMESTAMP") or t == "DATE":
        return "timestamp"
    return "other"


class DuckDBEngine(Engine):
    """Screen Parquet files with DuckDB (in process, out of core).

    Parameters
    ----------
    paths : path, glob or sequence of them
        Parquet files (all with the same columns).
    columns : Columns
        Score, label and weight columns and the positive label.
    memory_limit : str, optional
        DuckDB's ``memory_limit`` (for example ``"2GB"``); larger intermediate results spill.
    stream_memory_limit : str, optional
        DuckDB's ``memory_limit`` once the sorted rows of exact mode start to stream (default:
        ``memory_limit``): the evaluator's buffers then sit beside DuckDB, while the sort
        before it may use their share too (``mcviz screen --memory-limit`` bounds the process
        this way, :func:`mcviz.engines.memory.duckdb_share`).
    temp_directory : str, optional
        Where to spill (default: a fresh temporary directory).
    threads : int, optional
        DuckDB's threads, and the Python threads that summarise the sorted batches of exact
        mode (default: DuckDB's default, and every core this process may use).
    drop_invalid : bool, default False
        Drop invalid rows (and count them) instead of raising.
    batch_rows : int, default :data:`BATCH_ROWS`
        Rows per streamed batch.
    """

    name = "duckdb"

    def __init__(
        self,
        paths,
        columns: Columns,
        *,
        memory_limit: str | None = None,
        stream_memory_limit: str | None = None,
        temp_directory: str | None = None,
        threads: int | None = None,
        drop_invalid: bool = False,
        batch_rows: int = BATCH_ROWS,
    ) -> None:
        import duckdb

        self.files = expand_paths(paths)
        self.columns = columns
        self.drop_invalid = drop_invalid
        self.batch_rows = int(batch_rows)
        self._tmp = None
        if temp_directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mcviz-duckdb-")
            temp_directory = self._tmp.name
        self.temp_directory = temp_directory
        self.memory_limit = memory_limit
        self.stream_memory_limit = stream_memory_limit
        self.threads = threads
        try:
            self.con = connect(temp_directory, memory_limit=memory_limit, threads=threads)
        except ValidationError:
            self.close()
            raise
        self.source = parquet_source(self.files)
        try:
            described = self.con.execute(f"DESCRIBE SELECT * FROM {self.source}").fetchall()
        except duckdb.Error as error:
            raise ValidationError(f"could not read {self.files[0]!r} as Parquet: {error}") from None
        self.kinds = {row[0]: duckdb_kind(row[1]) for row in described}
        for role in (columns.score, columns.label, columns.weight):
            if role is not None and role not in self.kinds:
                raise ValidationError(f"no column {role!r} in {self.files[0]!r}.", column=role)
        self.n_dropped = 0

    def interrupt(self) -> None:
        """Stop the running query (e.g. on Ctrl-C, from another thread)."""
        self.con.interrupt()

    def close(self) -> None:
        """Close the connection and remove the spill directory."""
        if getattr(self, "con", None) is not None:
            self.con.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _run(self, q: sql.Query, text: str) -> pd.DataFrame:
        return self._execute(text, q.params).df()

    def _execute(self, text: str, params: dict | None = None):
        """Run a statement; DuckDB's errors (out of memory, corrupt files) become messages."""
        import duckdb

        try:
            return self.con.execute(text, params)
        except duckdb.OutOfMemoryException as error:
            raise ValidationError(
                f"DuckDB ran out of memory{_limit_text(self)}: {str(error).splitlines()[0]} "
                "Raise --memory-limit, screen fewer subpopulations, or free disk space for "
                f"spilling in {self.temp_directory!r}."
            ) from None
        except duckdb.Error as error:
            raise ValidationError(
                f"DuckDB could not evaluate the screening on {self.files[0]!r}"
                f"{' and other files' if len(self.files) > 1 else ''}: "
                f"{str(error).splitlines()[0]}"
            ) from None

    def overview(self) -> tuple[int, int, float, float]:
        """Validate once (one scan); return rows kept, dropped, lowest and highest score."""
        q = sql.Query(sql.DUCKDB)
        row = self._run(q, sql.overview_sql(self.columns, self.kinds, q, self.source)).iloc[0]
        overview = sql.read_overview(row, self.columns, self.kinds, drop_invalid=self.drop_invalid)
        self.n_dropped = overview[1]
        return overview

    def _batches(self, plan: MembershipPlan, *, ordered: bool) -> Iterator[tuple]:
        """Stream (score, label, weight or None, covariates) batches of the valid rows."""
        import duckdb
        import pyarrow as pa

        q = sql.Query(sql.DUCKDB)
        text = sql.rows_sql(self.columns, self.kinds, q, self.source, plan.columns,
                            drop_invalid=self.drop_invalid, order=ordered)
        weighted = self.columns.weight is not None
        try:  # a relation streams; a DB-API result would copy the rows first
            reader = self.con.sql(text, params=q.params).to_arrow_reader(self.batch_rows)
            lowered = False
            for table in arrow_blocks(reader, self.batch_rows):
                if not lowered and ordered and self.stream_memory_limit is not None:
                    lowered = self._set_limit(self.stream_memory_limit)  # sorted: DuckDB
                    # makes room for the evaluator's buffers
                yield (table.column(sql.S).to_numpy(),
                       table.column(sql.R).to_numpy(),
                       table.column(sql.W).to_numpy() if weighted else None,
                       arrow_columns(table, sql.covariate_aliases(plan.columns)))
            if lowered and self.memory_limit is not None:
                self._set_limit(self.memory_limit)
        except (duckdb.Error, pa.ArrowException) as error:  # e.g. out of memory mid-sort
            raise ValidationError(
                f"DuckDB could not stream the rows{_limit_text(self)}: "
                f"{str(error).splitlines()[0]} Raise --memory-limit or free disk space "
                f"for spilling in {self.temp_directory!r}.") from None

    def _set_limit(self, limit: str) -> bool:
        """Set DuckDB's memory limit while a query streams (``stream_memory_limit``).

        Set from a second cursor of the same database (the first one is streaming); DuckDB
        writes out what no longer fits. The limit goes back when the stream ends.
        """
        cursor = self.con.cursor()
        try:
            cursor.execute(f"SET memory_limit = {quote_literal(limit)}")
        finally:
            cursor.close()
        return True

    def exact_summaries(self, specs: Sequence[SubpopulationSpec]) -> ChunkSummaries:
        """One pass over the rows sorted by score (out of core), measured batch by batch.

        The batches are summarised on ``threads`` Python threads (default: every core) while
        the next one streams in; the summaries are combined in score order.
        """
        accumulator = BatchAccumulator(MembershipPlan(specs), threads=self.threads or
                                       usable_cores())
        try:
            for score, label, weight, columns in self._batches(accumulator.plan, ordered=True):
                accumulator.add(score, label, weight, columns)
            return accumulator.finish()
        finally:
            accumulator.close()

    def histogram(self, specs: Sequence[SubpopulationSpec], lo: float, scale: float,
                  bins: int) -> BinSummaries:
        """Per-(subpopulation, bin) sums from one unsorted pass."""
        accumulator = HistogramAccumulator(MembershipPlan(specs), lo, scale, bins)
        for score, label, weight, columns in self._batches(accumulator.plan, ordered=False):
            accumulator.add(score, label, weight, columns)
        return accumulator.summaries()

    def subpopulation_rows(self, conditions, *, limit: int | None = None) -> pd.DataFrame:
        """Load only the rows of one subpopulation (the predicate is pushed into the scan).

        This is the drill-down from a screening table: parse the ``description`` column with
        :func:`~mcviz.subpopulations.parse_filter` (or keep the conditions) and load the rows.
        """
        q = sql.Query(sql.DUCKDB)
        where = sql.predicate_sql(tuple(conditions), self.kinds, q)
        text = f"SELECT * FROM {self.source} WHERE {where}"
        if limit is not None:
            text += f" LIMIT {int(limit)}"
        return self._run(q, text)

    def sample(self, rows: int, seed: int) -> pd.DataFrame:
        """Return a random sample of ``rows`` rows (all columns), reproducible for a seed."""
        return read_sample(self.files, rows, seed, con=self.con)


def read_sample(files: Sequence[str], rows: int, seed: int, *, con=None,
                keys: bool = False, columns: Sequence[str] | None = None) -> pd.DataFrame:
    r"""Read a reproducible simple random sample of at most ``rows`` rows of Parquet files.

    The sample is the ``rows`` rows with the smallest :math:`h = H(H(r + 2^{40} f) \oplus s)`
    (:math:`H` DuckDB's 64-bit hash, :math:`r` the row's number in file :math:`f`, :math:`s`
    the seed, :math:`\oplus` exclusive or): for a hash that behaves as independent uniform
    draws, the ``rows`` smallest of :math:`N` are a uniformly random
    subset of that size (a simple random sample without replacement). It is one parallel scan
    and a sort of slightly more than ``rows`` rows: the scan keeps only rows with
    :math:`h < t`, :math:`t = 2^{64} \min(1, (m + 6\sqrt{m} + 100)/N)` for :math:`m` =
    ``rows`` of :math:`N` rows in the files (the Parquet footers' counts), so fewer than
    :math:`m` rows pass with probability below :math:`10^{-9}`; then it is drawn again from
    every row. The drawn rows never depend on the order in which threads read them (DuckDB's
    reproducible reservoir sample runs on one thread: 22.7 CPU s for 1.4e6 of 10^7 rows,
    against 3.3 s here). All rows when ``rows`` >= N, read in file order without the hash
    (an order no caller depends on: the search and the comparison order rows by their
    content, :func:`mcviz.search.canonical_order`). Without DuckDB: the first rows (pyarrow).

    ``keys``: each row also gets its file's index in ``files`` and its row number in the file
    (:data:`mcviz.engines.holdout.FILE_KEY`, ``ROW_KEY``; DuckDB needed). ``columns``: only
    these columns are read (the same rows are drawn: the hash depends on the keys only).
    """
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is a dev dependency
        if keys:
            raise ValidationError("a search at scale draws its sample with DuckDB: pip install "
                                  "duckdb.") from None
        import pyarrow.dataset as ds

        return ds.dataset(list(files), format="parquet").head(int(rows)).to_pandas()
    own = con is None
    con = duckdb.connect() if own else con
    try:
        return _draw(con, files, int(rows), int(seed), keys=keys, columns=columns)
    finally:
        if own:
            con.close()


def _draw(con, files: Sequence[str], rows: int, seed: int, *, keys: bool,
          columns: Sequence[str] | None) -> pd.DataFrame:
    """Draw the sample of :func:`read_sample` on an open connection."""
    import math

    con.execute("SET enable_progress_bar = false")  # never on stdout (--json)
    cases = " ".join(f"WHEN {quote_literal(name)} THEN {k}" for k, name in enumerate(files))
    keyed = (f"(SELECT * EXCLUDE ({FILE_KEY}), (CASE {FILE_KEY} {cases} END)::BIGINT AS "
             f"{FILE_KEY} FROM {keyed_source(files)})")
    # DuckDB's hash of several values, hash(row, file, seed), is not fit: samples of nearby
    # seeds coincide (their overlap's variance 130x the hypergeometric one) and neighbouring
    # rows are drawn together; hashing the key, then its hash xor the seed, is.
    hashed = (f"hash(xor(hash({ROW_KEY} + ({FILE_KEY} << 40)), "
              f"{seed % (1 << 64)}::UBIGINT))")
    chosen = "* EXCLUDE (__mcviz_h)" if keys else f"* EXCLUDE (__mcviz_h, {FILE_KEY}, {ROW_KEY})"
    if columns is not None:
        chosen = ", ".join([*(sql.DUCKDB.ident(c) for c in columns),
                            *((FILE_KEY, ROW_KEY) if keys else ())])
    total = int(con.execute(f"SELECT COUNT(*) FROM {parquet_source(files)}").fetchone()[0])
    share = (rows + 6.0 * math.sqrt(rows) + 100.0) / max(total, 1)

    def draw(bounded: bool) -> pd.DataFrame:
        where = ""
        if bounded:
            where = f"WHERE __mcviz_h < {math.floor(share * 2.0**64)}::UBIGINT"
        return con.execute(
            f"SELECT {chosen} FROM (SELECT *, {hashed} AS __mcviz_h FROM {keyed}) {where} "
            f"ORDER BY __mcviz_h, {FILE_KEY}, {ROW_KEY} LIMIT {rows}").df()

    if rows >= total:  # every row: read in file order, no hash and no sort
        if columns is None:
            return con.execute(f"SELECT * FROM {keyed if keys else parquet_source(files)}").df()
        return con.execute(f"SELECT {chosen} FROM {keyed}").df()
    if share >= 1.0:
        return draw(False)
    sample = draw(True)
    return sample if len(sample) == rows else draw(False)


def keyed_source(files: Sequence[str]) -> str:
    """Return ``read_parquet`` over the files with each row's file path and row number."""
    listed = ", ".join(quote_literal(f) for f in files)
    return (f"(SELECT * EXCLUDE (file_row_number), file_row_number AS {ROW_KEY} FROM "
            f"read_parquet([{listed}], union_by_name = true, filename = '{FILE_KEY}', "
            "file_row_number = true))")


def _limit_text(engine: DuckDBEngine) -> str:
    return "" if engine.memory_limit is None else f" under memory_limit {engine.memory_limit}"


def quote_literal(text: str) -> str:
    """Return ``text`` as a single-quoted SQL literal (for paths and settings, never values)."""
    return f"'{_escape(text)}'"


def _escape(text: str) -> str:
    """Escape a file path or setting as the body of a single-quoted SQL literal."""
    if "\x00" in text:
        raise ValidationError("paths must not contain NUL characters.")
    return text.replace("'", "''")
