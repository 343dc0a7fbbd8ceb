"""The DuckDB engine: exact or histogram screening of Parquet files larger than memory.

DuckDB scans the files in parallel, evaluates every subpopulation predicate as a boolean
expression per row, explodes each row into the subpopulations it belongs to and aggregates per
(subpopulation, score bin). With ``memory_limit`` set, the aggregation and the window of the
exact pass spill to ``temp_directory``. See :mod:`mcviz.engines.base` for the two passes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence

import pandas as pd

from mcviz.engines import sql
from mcviz.engines.base import BinSummaries, Columns, Engine, SubpopulationSpec, expand_paths
from mcviz.errors import ValidationError

__all__ = ["DuckDBEngine", "duckdb_kind"]


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
    temp_directory : str, optional
        Where to spill (default: a fresh temporary directory).
    threads : int, optional
    drop_invalid : bool, default False
        Drop invalid rows (and count them) instead of raising.
    chunk_size : int, default 1000
        Subpopulations evaluated per scan of the data.
    """

    name = "duckdb"

    def __init__(
        self,
        paths,
        columns: Columns,
        *,
        memory_limit: str | None = None,
        temp_directory: str | None = None,
        threads: int | None = None,
        drop_invalid: bool = False,
        chunk_size: int = 1000,
    ) -> None:
        import duckdb

        self.files = expand_paths(paths)
        self.columns = columns
        self.drop_invalid = drop_invalid
        self.chunk_size = int(chunk_size)
        self._tmp = None
        if temp_directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mcviz-duckdb-")
            temp_directory = self._tmp.name
        self.temp_directory = temp_directory
        self.memory_limit = memory_limit
        self.con = duckdb.connect()
        self.con.execute("SET preserve_insertion_order = false")
        self.con.execute(f"SET temp_directory = '{_escape(temp_directory)}'")
        if memory_limit is not None:
            try:
                self.con.execute(f"SET memory_limit = '{_escape(str(memory_limit))}'")
            except duckdb.Error as error:
                self.close()
                raise ValidationError(
                    f"memory limit {memory_limit!r} is not understood (use e.g. 2GB or 500MB): "
                    f"{str(error).splitlines()[0]}"
                ) from None
        if threads is not None:
            self.con.execute(f"SET threads = {int(threads)}")
        listed = ", ".join(f"'{_escape(f)}'" for f in self.files)
        self.source = f"read_parquet([{listed}], union_by_name = true)"
        try:
            described = self.con.execute(f"DESCRIBE SELECT * FROM {self.source}").fetchall()
        except duckdb.Error as error:
            raise ValidationError(f"could not read {self.files[0]!r} as Parquet: {error}") from None
        self.kinds = {row[0]: duckdb_kind(row[1]) for row in described}
        for role in (columns.score, columns.label, columns.weight):
            if role is not None and role not in self.kinds:
                raise ValidationError(f"no column {role!r} in {self.files[0]!r}.", column=role)
        self._data: str | None = None
        self._data_columns: set[str] = set()
        self.n_dropped = 0

    def close(self) -> None:
        """Close the connection and remove the spill directory."""
        self.con.close()
        if self._tmp is not None:
            self._tmp.cleanup()

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

    def _data_sql(self, q: sql.Query) -> str:
        return "(" + sql.base_select(self.columns, self.kinds, q, self.source,
                                     drop_invalid=self.drop_invalid) + ") AS data"

    def _materialise(self, specs: Sequence[SubpopulationSpec]) -> str:
        """Copy the derived columns and the covariates the predicates use into a temp table.

        Both passes and every chunk then scan this table instead of re-deriving the columns
        from Parquet (about twice as fast); under ``memory_limit`` DuckDB spills it to
        ``temp_directory``.
        """
        used = sorted({c.column for spec in specs for c in spec.conditions})
        for name in used:
            if name not in self.kinds:
                raise ValidationError(f"no column {name!r} in the data.", column=name)
        if self._data is not None and set(used) <= self._data_columns:
            return self._data
        q = sql.Query(sql.DUCKDB)
        keep = ", ".join([sql.DUCKDB.ident(c) for c in used] +
                         [sql.S, sql.W, sql.D, sql.P, sql.Q, sql.V])
        self._execute(
            f"CREATE OR REPLACE TEMP TABLE __mcviz_data AS SELECT {keep} FROM {self._data_sql(q)}",
            q.params,
        )
        self._data, self._data_columns = "__mcviz_data", set(used)
        return self._data

    def histogram(self, specs: Sequence[SubpopulationSpec], lo: float, scale: float,
                  bins: int) -> BinSummaries:
        """Per-(subpopulation, bin) sums, one scan per chunk of subpopulations."""
        frames = []
        for start in range(0, len(specs), self.chunk_size):
            positions = range(start, min(start + self.chunk_size, len(specs)))
            q = sql.Query(sql.DUCKDB)
            text = sql.histogram_sql(specs, positions, self.kinds, q, self._materialise(specs),
                                     lo, scale, bins)
            frames.append(self._run(q, text))
        return BinSummaries.from_frame(pd.concat(frames, ignore_index=True))

    def refine(self, specs: Sequence[SubpopulationSpec], candidates: pd.DataFrame, lo: float,
               scale: float, bins: int) -> pd.DataFrame:
        """Exact within-bin extremes for the candidate cells (window over distinct scores)."""
        frames = []
        wanted = sorted(set(candidates["k"].tolist()))
        for start in range(0, len(wanted), self.chunk_size):
            positions = wanted[start:start + self.chunk_size]
            cells = candidates[candidates["k"].isin(positions)].reset_index(drop=True)
            self.con.register("__mcviz_cells", cells)
            try:
                q = sql.Query(sql.DUCKDB)
                text = sql.refine_sql(specs, positions, self.kinds, q,
                                      self._materialise(specs), "__mcviz_cells", lo, scale, bins)
                frames.append(self._run(q, text))
            finally:
                self.con.unregister("__mcviz_cells")
        return pd.concat(frames, ignore_index=True)

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
        """Return a reservoir sample of ``rows`` rows (all columns), reproducible for a seed."""
        return read_sample(self.files, rows, seed, con=self.con)


def read_sample(files: Sequence[str], rows: int, seed: int, *, con=None) -> pd.DataFrame:
    """Read a reproducible random sample of at most ``rows`` rows of Parquet files.

    Uses DuckDB's reservoir sampling (one streaming pass), or the first rows via pyarrow when
    DuckDB is not installed.
    """
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is a dev dependency
        import pyarrow.dataset as ds

        return ds.dataset(list(files), format="parquet").head(int(rows)).to_pandas()
    own = con is None
    con = duckdb.connect() if own else con
    try:
        listed = ", ".join(f"'{_escape(f)}'" for f in files)
        return con.execute(
            f"SELECT * FROM read_parquet([{listed}], union_by_name = true) "
            f"USING SAMPLE reservoir({int(rows)} ROWS) REPEATABLE ({int(seed)})"
        ).df()
    finally:
        if own:
            con.close()


def _limit_text(engine: DuckDBEngine) -> str:
    return "" if engine.memory_limit is None else f" under memory_limit {engine.memory_limit}"


def _escape(text: str) -> str:
    """Escape a file path or setting as the body of a single-quoted SQL literal."""
    if "\x00" in text:
        raise ValidationError("paths must not contain NUL characters.")
    return text.replace("'", "''")
