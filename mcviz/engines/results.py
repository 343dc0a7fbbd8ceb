"""Screening tables on disk: what ``mcviz screen --out`` writes, and the drill-down from it.

The per-subpopulation table is written as Parquet with the run's context in the file's
key-value metadata (key ``mcviz``): the data files, the column roles, the covariate kinds the
descriptions were written against, the engine and M. So a table alone is enough to reopen the
run later — in the dashboard or in Python — and to drill into any subpopulation by loading only
its rows: its description is parsed back into conditions by the filter language, and DuckDB
pushes them into the Parquet scan (row groups whose statistics exclude them are never read).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mcviz.engines.base import Columns, ScreenResult
from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions
from mcviz.subpopulations import parse_filter

__all__ = ["ScreenTable", "load_subpopulation", "read_screen", "write_screen"]

METADATA_KEY = b"mcviz"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True, eq=False)
class ScreenTable:
    """A screening run read back from its Parquet table.

    Attributes
    ----------
    table : DataFrame
        One row per subpopulation (id, depth, description, size, weight_total, kuiper,
        kuiper_bound, sigma, kuiper_z, normalized); row 0 is the full population.
    files : tuple of str
        The Parquet files that were screened.
    columns : Columns
        Score, label and weight roles (and the positive label text, if any).
    kinds : mapping of str to str
        ``"ordinal"`` or ``"nominal"`` per covariate (how the descriptions read).
    engine : str
    exact : bool
    metric : float
        M (eq. (4) of "Measuring multi-calibration").
    metric_bound : float or None
        How far M may lie above ``metric`` in histogram mode; None when exact.
    n : int
        Rows screened.
    argmax : int
        Row of ``table`` attaining M.
    """

    table: pd.DataFrame
    files: tuple[str, ...]
    columns: Columns
    kinds: Mapping[str, str]
    engine: str
    exact: bool
    metric: float
    metric_bound: float | None
    n: int
    argmax: int


def write_screen(
    result: ScreenResult,
    path: str | Path,
    *,
    files: tuple[str, ...],
    columns: Columns,
    kinds: Mapping[str, str],
) -> None:
    """Write ``result.table`` to Parquet with the run's context in the file metadata."""
    context = {
        "version": FORMAT_VERSION,
        "files": [str(Path(f).resolve()) for f in files],
        "columns": asdict(columns),
        "kinds": dict(kinds),
        "engine": result.engine,
        "exact": result.exact,
        "metric": result.metric,
        "metric_bound": result.metric_bound,
        "n": result.n,
        "argmax": result.argmax,
    }
    table = pa.Table.from_pandas(result.table, preserve_index=False)
    metadata = {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(context).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path)


def read_screen(source: str | Path | bytes) -> ScreenTable:
    """Read a table written by ``mcviz screen --out`` (a path, or the bytes of an upload).

    Raises
    ------
    ValidationError
        When the file is not Parquet or was not written by ``mcviz screen``.
    """
    try:
        table = pq.read_table(io.BytesIO(source) if isinstance(source, bytes) else source)
    except (OSError, pa.ArrowException) as error:
        raise ValidationError(f"not a screening table (Parquet) : {error}") from None
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ValidationError(
            "this Parquet file carries no mcviz screening context: write it with "
            "`mcviz screen ... --out FILE`."
        )
    context = json.loads(raw)
    if context.get("version") != FORMAT_VERSION:
        raise ValidationError(
            f"screening table format {context.get('version')!r} is not {FORMAT_VERSION}: "
            "screen the data again with this version of mcviz."
        )
    return ScreenTable(
        table=table.to_pandas(),
        files=tuple(context["files"]),
        columns=Columns(**context["columns"]),
        kinds=dict(context["kinds"]),
        engine=str(context["engine"]),
        exact=bool(context["exact"]),
        metric=float(context["metric"]),
        metric_bound=None if context["metric_bound"] is None else float(context["metric_bound"]),
        n=int(context["n"]),
        argmax=int(context["argmax"]),
    )


def load_subpopulation(
    screen: ScreenTable, row: int, *, memory_limit: str | None = None
) -> Predictions:
    """Load only the rows of one screened subpopulation, as predictions.

    Parameters
    ----------
    screen : ScreenTable
    row : int
        Row of ``screen.table`` (its ``argmax`` for the worst subpopulation).
    memory_limit : str, optional
        DuckDB's memory limit, e.g. ``"2GB"``.

    Returns
    -------
    Predictions
        The subpopulation's rows (the full population for row 0), with the screened columns'
        roles; every other column is a covariate.

    Raises
    ------
    ValidationError
        When the data files are gone, or the subpopulation has no rows any more.
    """
    from mcviz.engines.duckdb_engine import DuckDBEngine

    missing = [f for f in screen.files if not Path(f).exists()]
    if missing:
        raise ValidationError(
            f"the screened data file {missing[0]!r} is not on this machine (any more): the "
            "drill-down reads the rows from the files that were screened."
        )
    description = str(screen.table["description"].iloc[row])
    conditions = () if row == 0 else parse_filter(description, screen.kinds)
    columns = screen.columns
    with DuckDBEngine(screen.files, columns, memory_limit=memory_limit) as engine:
        frame = engine.subpopulation_rows(conditions)
    if frame.empty:
        raise ValidationError(f"no rows match {description!r} in the screened files now.")
    return load_predictions(
        frame, score=columns.score, label=columns.label, weight=columns.weight or False,
        positive=columns.positive, drop_invalid=True,
    )
