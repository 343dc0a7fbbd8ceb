"""Screening tables on disk: what ``mcviz screen --out`` writes, and the drill-down from it.

The per-subpopulation table is written as Parquet with the run's context in the file's
key-value metadata (key ``mcviz``): the data files, the column roles, the covariate kinds the
descriptions were written against, the engine and M. So a table alone is enough to reopen the
run later — in the dashboard or in Python — and to drill into any subpopulation by loading only
its rows: its description is parsed back into conditions by the filter language, and DuckDB
pushes them into the Parquet scan (row groups whose statistics exclude them are never read).

A table is untrusted input (a served dashboard accepts it as an upload): its context is checked
field by field, and the files it names are read only under the server's *data roots* -- the
directory the process started in plus those in ``MCVIZ_DATA_ROOTS`` (or the ``roots`` argument).
A name outside them is refused with the same message whether or not the file exists, so a table
can neither read nor probe files elsewhere.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mcviz.engines.base import Columns, ScreenResult
from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions, read_parquet_table
from mcviz.subpopulations import parse_filter
from mcviz.text import check_nesting

__all__ = ["DATA_ROOTS_VARIABLE", "KIND_COLUMNS", "ScreenTable", "data_roots", "engine_kinds",
           "load_subpopulation", "read_screen", "write_results", "write_screen"]

METADATA_KEY = b"mcviz"
FORMAT_VERSION = 1
DATA_ROOTS_VARIABLE = "MCVIZ_DATA_ROOTS"
"""Environment variable: more directories (``os.pathsep``-separated) a server may read data from."""
TABLE_COLUMNS = ("id", "description", "size", "kuiper", "sigma", "kuiper_z", "normalized")
KIND_COLUMNS = {
    "screen": TABLE_COLUMNS,
    "search": ("id", "description", "size", "holdout_size", "holdout_kuiper_z", "p_adjusted",
               "mean_residual", "ci_low", "ci_high"),
    "monitor": ("id", "description", "size", "alarm", "shift", "ci_low", "ci_high",
                "p_adjusted"),
}
"""The columns each kind of table must hold (row 0 is the full population in every kind):
``mcviz screen --out`` (every subpopulation), ``mcviz search --engine ... --out`` (the
findings, held-out numbers measured on every held-out row) and ``mcviz monitor --engine ...
--out`` (each monitored series: alarm, change window, shift and adjusted p)."""
_TEXT_COLUMNS = frozenset({"description", "sentence", "first_alarm", "change_start",
                           "change_end"})
_GLOB = frozenset("*?[]{}")


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
    kind: str = "screen"


def write_screen(
    result: ScreenResult,
    path: str | Path,
    *,
    files: tuple[str, ...],
    columns: Columns,
    kinds: Mapping[str, str],
) -> None:
    """Write ``result.table`` to Parquet with the run's context in the file metadata."""
    write_results(result.table, path, kind="screen", files=files, columns=columns, kinds=kinds,
                  engine=result.engine, n=result.n,
                  screen={"exact": result.exact, "metric": result.metric,
                          "metric_bound": result.metric_bound, "argmax": result.argmax})


def write_results(
    frame: pd.DataFrame,
    path: str | Path,
    *,
    kind: str,
    files: Sequence[str],
    columns: Columns,
    kinds: Mapping[str, str],
    engine: str,
    n: int,
    screen: Mapping[str, object] | None = None,
) -> None:
    """Write one kind of engine table (:data:`KIND_COLUMNS`) with the run's context.

    ``kinds`` are the covariates' kinds the descriptions are written against (``"ordinal"`` or
    ``"nominal"``); ``screen`` the screening fields (exact, metric, metric_bound, argmax).
    """
    context = {
        "version": FORMAT_VERSION,
        "kind": kind,
        "files": [str(Path(f).resolve()) for f in files],
        "columns": asdict(columns),
        "kinds": dict(kinds),
        "engine": engine,
        "n": int(n),
        **({"exact": True, "metric": None, "metric_bound": None, "argmax": 0}
           if screen is None else dict(screen)),
    }
    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(context).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path)


def engine_kinds(kinds: Mapping[str, str]) -> dict[str, str]:
    """The filter language's kinds (``nominal``/``ordinal``) of an engine table's columns."""
    return {name: "nominal" if kind in ("string", "bool") else "ordinal"
            for name, kind in kinds.items() if kind in ("string", "bool", "float", "int")}


def read_screen(source: str | Path | bytes) -> ScreenTable:
    """Read a table written by ``mcviz screen --out`` (a path, or the bytes of an upload).

    Every field of the stored context is checked (the table may come from anyone).

    Raises
    ------
    ValidationError
        When the file is not Parquet, was not written by ``mcviz screen``, or a field of its
        context or a column of its table is missing or of the wrong type.
    """
    try:  # the guarded reader: columns, decoded size and memory checked from the footer
        table = read_parquet_table(source)
    except ValidationError as error:
        raise ValidationError(f"not a screening table: {error}") from None
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ValidationError(
            "this Parquet file carries no mcviz screening context: write it with "
            "`mcviz screen ... --out FILE`."
        )
    check_nesting(raw.decode("utf-8", "replace"), what="the screening table's context")
    try:
        context = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        context = None
    if not isinstance(context, dict):
        raise ValidationError("the screening table's context is not a JSON object.")
    if context.get("version") != FORMAT_VERSION:
        raise ValidationError(
            f"screening table format {context.get('version')!r} is not {FORMAT_VERSION}: "
            "screen the data again with this version of mcviz."
        )
    kind = context.get("kind", "screen")
    if kind not in KIND_COLUMNS:
        raise ValidationError(f"the table's kind {str(kind)[:40]!r} is not one of "
                              f"{', '.join(KIND_COLUMNS)}.")
    frame = table.to_pandas()
    required = KIND_COLUMNS[kind]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValidationError(f"the {kind} table lacks the column(s) {', '.join(missing)}.")
    not_numbers = [c for c in required if c not in _TEXT_COLUMNS
                   and not pd.api.types.is_numeric_dtype(frame[c])]
    if not_numbers:
        raise ValidationError(f"the screening table's column {not_numbers[0]!r} does not hold "
                              "numbers.")
    argmax = _field(context, "argmax", int)
    if not 0 <= argmax < len(frame):
        raise ValidationError(f"the screening table's field 'argmax' ({argmax}) is not one of "
                              f"its {len(frame):,} rows.")
    bound = context.get("metric_bound")
    return ScreenTable(
        table=frame,
        files=_files_field(context),
        columns=_columns_field(context),
        kinds=_kinds_field(context),
        engine=_field(context, "engine", str),
        exact=_field(context, "exact", bool),
        metric=_field(context, "metric", float) if kind == "screen" else float("nan"),
        metric_bound=None if bound is None else _field(context, "metric_bound", float),
        n=_field(context, "n", int),
        argmax=argmax,
        kind=kind,
    )


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a text", bool: "true or false"}


def _field(context: Mapping, name: str, kind: type) -> object:
    """One scalar field of a table's context, checked: ``kind`` (int, float, str or bool)."""
    value = context.get(name)
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, int | float) and not isinstance(value, bool)
        and math.isfinite(value),
        str: isinstance(value, str) and len(value) <= 200,
    }[kind]
    if not ok:
        raise ValidationError(
            f"the screening table's field {name!r} is not {_TYPE_NAMES[kind]}"
            + (" (it is missing)." if value is None else ".")
        )
    return kind(value)


def _files_field(context: Mapping) -> tuple[str, ...]:
    files = context.get("files")
    if not isinstance(files, list) or not files or not all(
            isinstance(f, str) and f and "\0" not in f for f in files):
        raise ValidationError("the screening table's field 'files' is not a list of file names.")
    return tuple(files)


def _columns_field(context: Mapping) -> Columns:
    columns = context.get("columns")
    allowed = set(Columns.__slots__)
    if not isinstance(columns, dict):
        raise ValidationError("the screening table's field 'columns' is not a mapping of roles.")
    unknown = sorted(str(k) for k in columns if k not in allowed)
    if unknown:
        raise ValidationError(
            f"the screening table's field 'columns' has {len(unknown)} unexpected entr"
            f"{'y' if len(unknown) == 1 else 'ies'} ({', '.join(map(repr, unknown[:5]))}); "
            f"expected {', '.join(sorted(allowed))}."
        )
    for role in ("score", "label"):
        if not isinstance(columns.get(role), str):
            raise ValidationError(f"the screening table's field 'columns' names no {role} column.")
    bad = [k for k, v in columns.items() if v is not None and not isinstance(v, str)]
    if bad:
        raise ValidationError(f"the screening table's column role {bad[0]!r} is not a text.")
    return Columns(**columns)


def _kinds_field(context: Mapping) -> dict[str, str]:
    kinds = context.get("kinds")
    if not isinstance(kinds, dict) or not all(
            isinstance(k, str) and v in ("ordinal", "nominal") for k, v in kinds.items()):
        raise ValidationError("the screening table's field 'kinds' is not a mapping of covariate "
                              "names to 'ordinal' or 'nominal'.")
    return dict(kinds)


def data_roots(roots: Sequence[str | Path] | None = None) -> tuple[Path, ...]:
    """Return the directories a server may read data files from, symlinks resolved.

    Parameters
    ----------
    roots : sequence of path, optional
        The roots to use. Default: the current working directory (the directory the app was
        started in) and every directory in the ``MCVIZ_DATA_ROOTS`` environment variable
        (``os.pathsep``-separated).
    """
    if roots is None:
        extra = os.environ.get(DATA_ROOTS_VARIABLE, "")
        roots = [Path.cwd(), *(p for p in extra.split(os.pathsep) if p.strip())]
    return tuple(Path(r).expanduser().resolve() for r in roots)


def _readable_files(files: Sequence[str], roots: Sequence[Path]) -> tuple[str, ...]:
    """Resolve the files (symlinks, ``..``) and check that each lies under a root.

    The refusal is the same whether or not the file exists: the check runs before any look.
    """
    resolved = []
    for name in files:
        path = Path(name).expanduser()
        target = path.resolve() if path.is_absolute() else None
        if target is None or _GLOB & set(name) or not any(
                target == root or root in target.parents for root in roots):
            raise ValidationError(
                f"the screening table names a data file ({name!r}) outside the directories "
                f"this server reads data from: the directory it was started in and those in "
                f"{DATA_ROOTS_VARIABLE} (or the 'roots' option of load_subpopulation). Ask "
                f"whoever runs the server to add the file's directory to {DATA_ROOTS_VARIABLE}."
            )
        resolved.append(target)
    for target, name in zip(resolved, files, strict=True):
        if not target.is_file():
            raise ValidationError(
                f"the screened data file {name!r} is not on this machine (any more): the "
                "drill-down reads the rows from the files that were screened."
            )
    return tuple(str(t) for t in resolved)


def load_subpopulation(
    screen: ScreenTable,
    row: int,
    *,
    memory_limit: str | None = None,
    roots: Sequence[str | Path] | None = None,
) -> Predictions:
    """Load only the rows of one screened subpopulation, as predictions.

    Parameters
    ----------
    screen : ScreenTable
    row : int
        Row of ``screen.table`` (its ``argmax`` for the worst subpopulation).
    memory_limit : str, optional
        DuckDB's memory limit, e.g. ``"2GB"``.
    roots : sequence of path, optional
        Directories the data files must lie in (after resolving symlinks and ``..``); default
        :func:`data_roots` (the working directory and ``MCVIZ_DATA_ROOTS``).

    Returns
    -------
    Predictions
        The subpopulation's rows (the full population for row 0), with the screened columns'
        roles; every other column is a covariate.

    Raises
    ------
    ValidationError
        When a data file lies outside the data roots (whether or not it exists), the files
        are gone, or the subpopulation has no rows any more.
    """
    from mcviz.engines.duckdb_engine import DuckDBEngine

    files = _readable_files(screen.files, data_roots(roots))
    if not 0 <= row < len(screen.table):
        raise ValidationError(f"row {row} is not one of the table's {len(screen.table):,} rows.")
    description = str(screen.table["description"].iloc[row])
    conditions = () if row == 0 else parse_filter(description, screen.kinds)
    columns = screen.columns
    with DuckDBEngine(files, columns, memory_limit=memory_limit) as engine:
        frame = engine.subpopulation_rows(conditions)
    if frame.empty:
        raise ValidationError(f"no rows match {description!r} in the screened files now.")
    return load_predictions(
        frame, score=columns.score, label=columns.label, weight=columns.weight or False,
        positive=columns.positive, drop_invalid=True,
    )
