"""A Parquet file to :class:`~mcviz.io.Predictions` with Arrow and numpy alone (no pandas).

``mcviz metrics FILE --score S --label L`` needs the score, the label and the weight as arrays,
and of the other columns only which are usable covariates (their names are reported). The
loader (:func:`mcviz.io.load_predictions`) builds a DataFrame of every column for that; this
path reads the same file with the same reader and limits (:func:`mcviz.io.read_parquet_table`:
the column limit, the decoded size and the memory of the read, checked from the footer and by
batches, with the same messages) and decides everything else from the Arrow columns:

* roles from the names and the Arrow types (:func:`mcviz.io.roles.roles_from_columns`, the
  loader's rules; the score and label are named by the caller);
* each other column's usability one column at a time, by the rule of the loader
  (:func:`mcviz.io.covariates.plan_covariates`): every value missing (null, or NaN in a real
  column), else usable when any value is missing (missing is one more value), else usable when
  its smallest and largest values differ;
* its kind: numbers, booleans and timestamps are ordinal, text nominal; a boolean column with a
  missing value is nominal (pandas holds it as objects);
* the covariates become a DataFrame, in score order, only when a statistic reads them
  (:class:`ArrowCovariates`, through the loader's own :func:`covariates_in_order`).

It answers only when the result is certainly the loader's: a plain (uncompressed) Parquet file
whose columns are all of the types above, with a score and a label named, clean values (no
missing or out-of-range score, label or weight; two label values) and no stored pandas index.
Anything else returns None and the caller loads the file with :func:`load_predictions`, which
gives the same :class:`Predictions` or the message naming the problem.
tests/io/test_io_arrow_path.py compares both on many column kinds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from mcviz.io.model import EVERY_VALUE_MISSING, SINGLE_VALUE, LoadReport
from mcviz.io.predictions import PendingColumns, Predictions, sorted_predictions

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["ArrowCovariates", "parquet_predictions"]

_NUMBERS = {"int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1",
            "uint16": "u2", "uint32": "u4", "uint64": "u8", "float": "f4", "double": "f8"}
_INT64_MIN = np.iinfo(np.int64).min  # a timestamp pandas reads as NaT (missing)
# The dtypes pandas' metadata may name for each kind (it restores its nullable dtypes); any
# other (Float64, whose NaN is not missing; object numbers...) is left to the loader.
_PANDAS_TYPES = {
    "number": re.compile(r"u?int\d+|U?Int\d+|float\d+"),
    "bool": re.compile(r"bool|boolean|object"),
    "time": re.compile(r"datetime64\[.*\]"),
    "text": re.compile(r"object|str|string"),
}


class ArrowCovariates(PendingColumns):
    """Covariate columns held as Arrow columns until a statistic reads them.

    :meth:`in_order` converts them as the loader does (``to_pandas`` with one block per
    column), then puts them in score order with the loader's
    :func:`~mcviz.io.covariates.covariates_in_order`.
    """

    __slots__ = ("kinds", "table")

    def __init__(self, table: pa.Table, kinds: dict[str, str]) -> None:
        self.table = table
        self.kinds = kinds

    @property
    def names(self) -> tuple[str, ...]:
        """The kept columns, in order."""
        return tuple(self.table.column_names)

    def in_order(self, rows: np.ndarray) -> pd.DataFrame:
        """Return the covariates at input rows ``rows`` (score order), with a RangeIndex."""
        from mcviz.io.covariates import covariates_in_order

        frame = self.table.to_pandas(split_blocks=True)
        return covariates_in_order(frame, self.kinds, rows)


def parquet_predictions(
    source: object,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    response: Literal["binary", "continuous"] = "binary",
    max_bytes: int | None = None,
) -> Predictions | None:
    """Load a Parquet file as ``load_predictions(source, score=, label=, weight=, response=)``.

    Parameters
    ----------
    source : object
        A path; anything else (a file object, a DataFrame) returns None.
    score, label : str
        The score and label columns (named: no role is inferred from values here).
    weight : str, optional
        The weight column; None infers it from the names as the loader does; ``""``: unweighted.
    response : {"binary", "continuous"}
    max_bytes : int, optional
        As for :func:`mcviz.io.read_parquet_table` (the same limits as the loader's).

    Returns
    -------
    Predictions or None
        Equal to the loader's result (arrays, covariate names and kinds, notices); None when
        this path cannot promise that (the caller then calls :func:`load_predictions`).

    Raises
    ------
    ValidationError
        From the reader: above a limit, too many columns, corrupt (the loader's messages).
    """
    if not isinstance(source, str | Path) or not Path(source).is_file():
        return None
    with Path(source).open("rb") as stream:
        if stream.read(4) != b"PAR1":
            return None  # CSV, compressed: the loader reads those
    from mcviz.io.readers import read_parquet_table

    table = read_parquet_table(source, max_bytes=max_bytes)
    metadata = _pandas_metadata(table)
    if table.num_rows == 0 or table.num_columns == 0 or metadata is None:
        return None
    kinds = {name: _kind(column, metadata.get(name)) for name, column
             in zip(table.column_names, table.columns, strict=True)}
    if None in kinds.values():
        return None
    weight = _weight_column(kinds, weight)
    roles = [score, label, *([weight] if weight else [])]
    if weight is None or len(set(roles)) != len(roles):
        return None
    arrays = _role_arrays(table, kinds, score, label, weight, response)
    if arrays is None:
        return None
    nullable = {name for name, dtype in metadata.items() if dtype == "boolean"}
    covariates, covariate_kinds, notices = _covariates(table, kinds, score, label, weight,
                                                       nullable)
    if covariates is None:
        return None
    n = table.num_rows
    scores, labels, weights = arrays
    return sorted_predictions(
        scores, np.ones(n, dtype=bool), covariates,
        report=LoadReport(n_read=n, n_kept=n, notices=tuple(notices)),
        arrays={"label": labels, "weight": weights, "predicted_class": None,
                "true_class": None},
        columns={"covariate_kinds": covariate_kinds, "score_column": score,
                 "label_column": label, "weight_column": weight or None,
                 "probability_columns": (),
                 "classes": ("0", "1") if response == "binary" else (),
                 "positive": 1 if response == "binary" else None, "response_kind": response},
    )


def _pandas_metadata(table: pa.Table) -> dict[str, str] | None:
    """Return the dtype pandas' metadata names per column ({} without it; None: not handled).

    None when pandas wrote an index as columns, several levels of column names, or metadata
    this path does not read.
    """
    metadata = (table.schema.metadata or {}).get(b"pandas")
    if metadata is None:
        return {}
    try:
        pandas = json.loads(metadata)
        if (any(not isinstance(i, dict) for i in pandas.get("index_columns", []))
                or len(pandas.get("column_indexes", [])) > 1):
            return None
        return {str(c["field_name"]): str(c["numpy_type"]) for c in pandas["columns"]}
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # unreadable metadata: let the loader decide what it means


def _kind(column: pa.ChunkedArray, dtype: str | None) -> str | None:
    """Return ``number``, ``bool``, ``time`` or ``text``; None for any other type.

    ``dtype``: the pandas dtype its metadata names, which must be of the same kind.
    """
    import pyarrow as pa

    kind = column.type
    if str(kind) in _NUMBERS:
        found = "number"
    elif pa.types.is_boolean(kind):
        found = "bool"
    elif pa.types.is_timestamp(kind):
        found = "time"
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        found = "text"
    else:
        return None
    return found if dtype is None or _PANDAS_TYPES[found].fullmatch(dtype) else None


def _weight_column(kinds: dict[str, str], weight: str | None) -> str | None:
    """Return the weight column, given or inferred by the loader's rule (None: the loader's).

    The loader takes the first weight-named numeric column, else the first weight-named
    non-boolean column holding a value (checked, and named, as a weight): here only the first.
    """
    from mcviz.io.roles import _WEIGHT_NAME

    if weight is not None:
        return weight if weight == "" or kinds.get(weight) == "number" else None
    named = [c for c in kinds if _WEIGHT_NAME.match(c)]
    numeric = next((c for c in named if kinds[c] == "number"), None)
    if numeric is not None:
        return numeric
    return "" if all(kinds[c] == "bool" for c in named) else None


def _role_arrays(
    table: pa.Table, kinds: dict[str, str], score: str, label: str, weight: str,
    response: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Score, response and weight as floats, when every value is valid (else None)."""
    if kinds.get(score) != "number" or kinds.get(label) not in ("number", "bool"):
        return None
    scores = _floats(table.column(score))
    labels = _floats(table.column(label))
    if scores is None or labels is None:
        return None
    if not (np.isfinite(scores).all() and scores.min() >= 0 and scores.max() <= 1):
        return None
    if response == "binary":
        if not np.isin(labels, (0.0, 1.0)).all() or labels.min() == labels.max():
            return None  # the loader names other values; it warns on a single class
    elif kinds[label] != "number" or not np.isfinite(labels).all():
        return None
    if not weight:
        return scores, labels, np.ones(scores.size)
    weights = _floats(table.column(weight))
    if weights is None or not (np.isfinite(weights).all() and weights.min() > 0):
        return None
    return scores, labels, weights


def _floats(column: pa.ChunkedArray) -> np.ndarray | None:
    """Return a column without missing values as float64 (None when one is missing)."""
    if column.null_count:
        return None
    values, _valid = _values(column)
    return values.astype(float)


def _values(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray | None]:
    """Return a number, boolean or timestamp column's values (int64 for times) and validity.

    Read from the Arrow buffers (``to_numpy`` would import pandas); validity is None without
    missing values. Values at missing positions are arbitrary.
    """
    import pyarrow as pa

    kind = column.type
    dtype = np.dtype(_NUMBERS.get(str(kind), "i8"))
    parts, valid = [], []
    for chunk in column.chunks:
        start, length = chunk.offset, len(chunk)
        buffers = chunk.buffers()
        if pa.types.is_boolean(kind):
            parts.append(_bits(buffers[1], start, length))
        else:
            parts.append(np.frombuffer(buffers[1], dtype=dtype, count=length,
                                       offset=start * dtype.itemsize))
        if column.null_count:
            valid.append(_bits(buffers[0], start, length) if buffers[0] is not None
                         else np.ones(length, dtype=bool))
    values = np.concatenate(parts) if parts else np.empty(0, dtype=dtype)
    return values, (np.concatenate(valid) if valid else None)


def _bits(buffer: pa.Buffer, start: int, length: int) -> np.ndarray:
    """Arrow's bit-packed booleans (least significant bit first) as a numpy bool array."""
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")
    return bits[start:start + length].astype(bool)


def _covariates(
    table: pa.Table, kinds: dict[str, str], score: str, label: str, weight: str,
    nullable: set[str],
) -> tuple[ArrowCovariates | None, dict[str, str], list[str]]:
    """Return the default covariates: the kept ones, their kinds, a notice per dropped one.

    ``nullable``: boolean columns pandas restores as its nullable boolean dtype (ordinal);
    other booleans with a missing value become objects (nominal).
    """
    from mcviz.io.roles import roles_from_columns

    columns = list(kinds)
    roles = roles_from_columns(columns, {c for c in columns if kinds[c] == "number"})
    excluded = {score, label, weight, *roles.id_columns, *roles.score_candidates,
                *roles.probabilities, roles.score, roles.weight}
    kept: dict[str, str] = {}
    notices = []
    for name in (c for c in columns if c not in excluded):
        column = table.column(name)
        reason = _unusable(column, kinds[name])
        if reason is None:
            return None, {}, []
        if reason:
            notices.append(f"covariate {name!r} dropped: {reason}.")
            continue
        nominal = kinds[name] == "text" or (
            kinds[name] == "bool" and column.null_count > 0 and name not in nullable)
        kept[name] = "nominal" if nominal else "ordinal"
    return ArrowCovariates(table.select(list(kept)), kept), kept, notices


def _unusable(column: pa.ChunkedArray, kind: str) -> str | None:
    """Why a column cannot be a covariate ('' when it can; None: leave it to the loader)."""
    n = len(column)
    if column.null_count == n:
        return EVERY_VALUE_MISSING
    if kind == "text":
        if column.null_count:
            return ""
        import pyarrow.compute as pc

        extremes = pc.min_max(column)
        return "" if extremes["min"] != extremes["max"] else SINGLE_VALUE
    values, valid = _values(column)
    if kind == "time" and (values == _INT64_MIN).any():
        return None  # pandas reads that value as NaT
    missing = ~valid if valid is not None else np.zeros(n, dtype=bool)
    if values.dtype.kind == "f":
        missing |= np.isnan(values)
    if missing.all():
        return EVERY_VALUE_MISSING
    if missing.any():
        return ""
    return "" if values.min() != values.max() else SINGLE_VALUE
