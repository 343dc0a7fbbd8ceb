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
  its smallest and largest values differ. The footer's statistics prove most columns usable
  without reading them (:func:`_statistics`: a smallest value below the largest); only the
  others, and the score, label and weight, are read (``columns=`` of the reader, whose footer
  checks still cover the whole file);
* its kind: numbers, booleans and timestamps are ordinal, text nominal; a boolean column with a
  missing value is nominal (pandas holds it as objects);
* the covariates are read, and become a DataFrame in score order, only when a statistic reads
  them (:class:`ArrowCovariates`, through the loader's own :func:`covariates_in_order`).

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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from mcviz.io.columns import CovariateColumn
from mcviz.io.model import EVERY_VALUE_MISSING, SINGLE_VALUE, LoadReport
from mcviz.io.predictions import PendingColumns, Predictions, sorted_predictions

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["ArrowCovariates", "parquet_predictions"]

_NUMBERS = {"int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1",
            "uint16": "u2", "uint32": "u4", "uint64": "u8", "float": "f4", "double": "f8"}
_INT64_MIN = np.iinfo(np.int64).min  # a timestamp pandas reads as NaT (missing)
_STATISTICS_TYPES = {"BOOLEAN", "INT32", "INT64", "FLOAT", "DOUBLE"}
# The dtypes pandas' metadata may name for each kind (it restores its nullable dtypes); any
# other (Float64, whose NaN is not missing; object numbers...) is left to the loader.
_PANDAS_TYPES = {
    "number": re.compile(r"u?int\d+|U?Int\d+|float\d+"),
    "bool": re.compile(r"bool|boolean|object"),
    "time": re.compile(r"datetime64\[.*\]"),
    "text": re.compile(r"object|str|string"),
    "category": re.compile(r"category"),
}


class ArrowCovariates(PendingColumns):
    """Covariate columns of a Parquet file, read from it when a statistic first needs them.

    :meth:`in_order` reads them with the reader's limits (:func:`mcviz.io.read_parquet_table`),
    converts them as the loader does (``to_pandas`` with one block per column) and puts them in
    score order with the loader's :func:`~mcviz.io.covariates.covariates_in_order`. A file
    changed since it was loaded is refused (its size and modification time are kept).
    """

    __slots__ = ("held", "kinds", "max_bytes", "path", "stamp")

    def __init__(self, path: str | Path, kinds: dict[str, str], max_bytes: int | None,
                 held: dict[str, pa.ChunkedArray] | None = None) -> None:
        self.path = str(path)
        self.kinds = kinds
        self.max_bytes = max_bytes
        self.stamp = _stamp(self.path)
        self.held = dict(held or {})  # columns read with the roles, until :meth:`arrays`

    @property
    def names(self) -> tuple[str, ...]:
        """The kept columns, in order."""
        return tuple(self.kinds)

    def in_order(self, rows: np.ndarray) -> pd.DataFrame:
        """Return the covariates at input rows ``rows`` (score order), with a RangeIndex."""
        from mcviz.io.covariates import covariates_in_order
        from mcviz.io.readers import read_parquet_table

        self._check_unchanged()
        import pandas as pd

        table = read_parquet_table(self.path, max_bytes=self.max_bytes, columns=list(self.kinds))
        frame = table.to_pandas(split_blocks=True)
        frame.columns = pd.Index(list(self.kinds), dtype="str")  # the loader's names (even none)
        return covariates_in_order(frame, self.kinds, rows)


    def arrays(self, names: Sequence[str], rows: np.ndarray) -> dict[str, CovariateColumn]:
        """Return the named columns at input rows ``rows`` as arrays, read without pandas.

        Numbers, booleans, text and dictionaries of text (:func:`_covariate_column`: what
        :func:`mcviz.io.columns.column_of_series` gives for the column of :meth:`in_order`);
        timestamps, and anything this path cannot promise is the same, are left out (the
        caller reads them from the DataFrame). Read at once with the reader's limits; a file
        changed since loading is refused as by :meth:`in_order`. Columns read when the file was
        loaded (``hold_covariates``) are converted from memory, and let go.
        """
        from mcviz.io.readers import read_parquet_table

        read = {name: self.held.pop(name) for name in names if name in self.held}
        rest = [name for name in names if name not in read]
        if rest:
            self._check_unchanged()
            table = read_parquet_table(self.path, max_bytes=self.max_bytes, columns=rest)
            read.update((name, table.column(name)) for name in rest)
            del table
        found = {}
        for name in names:
            column = _covariate_column(read.pop(name), self.kinds[name], rows)
            if column is not None:
                found[name] = column
        return found

    def numbers(self, names: Sequence[str]) -> dict[str, np.ndarray] | None:
        """Return the named columns as float64 over every row (NaN where missing), no pandas.

        Only integer and real columns (what ``to_pandas`` makes float64 keys of, the same
        values); None when one is of another type. Read with the reader's limits; a file
        changed since loading is refused as by :meth:`in_order`.
        """
        from mcviz.io.readers import read_parquet_table

        self._check_unchanged()
        table = read_parquet_table(self.path, max_bytes=self.max_bytes, columns=list(names))
        if any(str(table.column(name).type) not in _NUMBERS for name in names):
            return None
        return {name: _keys(table.column(name)) for name in names}

    def _check_unchanged(self) -> None:
        from mcviz.errors import ValidationError

        if _stamp(self.path) != self.stamp:
            raise ValidationError(f"file {Path(self.path).name!r} changed since it was loaded; "
                                  "load it again to use its covariates.")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = Path(path).stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


def parquet_predictions(
    source: object,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    response: Literal["binary", "continuous"] = "binary",
    covariates: Sequence[str] | None = None,
    max_bytes: int | None = None,
    hold_covariates: bool = False,
) -> Predictions | None:
    """Load a Parquet file as ``load_predictions(source, score=, label=, weight=, ...)``.

    Parameters
    ----------
    source : object
        A path; anything else (a file object, a DataFrame) returns None.
    score, label : str
        The score and label columns (named: no role is inferred from values here).
    weight : str, optional
        The weight column; None infers it from the names as the loader does; ``""``: unweighted.
    response : {"binary", "continuous"}
    covariates : sequence of str, optional
        As for the loader: these columns (less the score, label and weight); default every
        other column that is not an id or score-like.
    max_bytes : int, optional
        As for :func:`mcviz.io.read_parquet_table` (the same limits as the loader's).
    hold_covariates : bool, default False
        Read every candidate covariate with the score and label (one read of the file) and
        keep the kept ones for :meth:`ArrowCovariates.arrays` (for a caller that will read
        them all, such as the search); else only those the footer does not prove usable.

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
    footer = _footer(source)
    if footer is None:
        return None
    schema, parquet = footer
    pandas = _pandas_metadata(schema)
    names = schema.names
    if pandas is None or parquet.num_rows == 0 or not names or len(set(names)) != len(names):
        return None
    kinds = {field.name: _kind(field.type, pandas.get(field.name)) for field in schema}
    if None in kinds.values():
        return None
    weight = _weight_column(kinds, weight)
    roles = [score, label, *([weight] if weight else [])]
    if weight is None or len(set(roles)) != len(roles) or not set(roles) <= set(kinds):
        return None
    id_names: list[str] = []
    if covariates is None:
        candidates, id_names = _candidates(kinds, score, label, weight)
    elif set(covariates) <= set(kinds) and len(set(covariates)) == len(covariates):
        candidates = [c for c in covariates if c not in roles]  # (an unknown one: the loader)
    else:
        return None
    position = {name: j for j, name in enumerate(names)}
    counted = {name: _statistics(parquet, position[name], kinds[name],
                                 str(schema.field(name).type).startswith("uint"))
               for name in candidates}
    from mcviz.io.readers import read_parquet_table

    read = [*roles, *(name for name in candidates
                       if hold_covariates or not counted[name][0])]
    table = read_parquet_table(source, max_bytes=max_bytes, columns=read)
    arrays = _role_arrays(table, kinds, score, label, weight, response)
    if arrays is None or table.num_rows != parquet.num_rows:
        return None
    candidates, id_notices = _ids_left_out(table, candidates, kinds, names, id_names,
                                           default=covariates is None)
    found = _covariate_kinds(table, candidates, counted, kinds, pandas)
    if found is None:
        return None
    covariate_kinds, notices = found
    notices = [*id_notices, *notices]
    n = table.num_rows
    scores, labels, weights = arrays
    return sorted_predictions(
        scores, np.ones(n, dtype=bool),
        ArrowCovariates(source, covariate_kinds, max_bytes,
                        {name: table.column(name) for name in covariate_kinds}
                        if hold_covariates else None),
        report=LoadReport(n_read=n, n_kept=n, notices=tuple(notices)),
        arrays={"label": labels, "weight": weights, "predicted_class": None,
                "true_class": None},
        columns={"covariate_kinds": covariate_kinds, "score_column": score,
                 "label_column": label, "weight_column": weight or None,
                 "probability_columns": (),
                 "classes": ("0", "1") if response == "binary" else (),
                 "positive": 1 if response == "binary" else None, "response_kind": response},
    )


def _covariate_kinds(table: pa.Table, candidates: list[str], counted: dict, kinds: dict,
                     pandas: dict) -> tuple[dict[str, str], list[str]] | None:
    """Return each kept covariate's kind and the notices of those dropped, as the loader would.

    None when a column's usability cannot be decided here (the caller then uses the loader).
    """
    nullable = {name for name, dtype in pandas.items() if dtype == "boolean"}
    covariate_kinds, notices = {}, []
    for name in candidates:
        proven, nulls = counted[name]
        reason = "" if proven else _unusable(table.column(name), kinds[name])
        if reason is None:
            return None
        if reason:
            notices.append(f"covariate {name!r} dropped: {reason}.")
            continue
        if not proven:
            nulls = table.column(name).null_count
        nominal = kinds[name] in ("text", "category") or (
            kinds[name] == "bool" and nulls > 0 and name not in nullable)
        covariate_kinds[name] = "nominal" if nominal else "ordinal"
    return covariate_kinds, notices


def _footer(source: object) -> tuple[pa.Schema, pa.parquet.FileMetaData] | None:
    """Return a plain Parquet file's schema and footer (None: not one, or unreadable).

    Too many columns are refused at once with the reader's message; an unreadable footer
    returns None (the loader then says why, in its words).
    """
    if not isinstance(source, str | Path) or not Path(source).is_file():
        return None
    with Path(source).open("rb") as stream:
        if stream.read(4) != b"PAR1":
            return None  # CSV, compressed: the loader reads those
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mcviz.io.chunked import too_many_columns
    from mcviz.io.readers import default_max_columns

    try:
        with pq.ParquetFile(str(source)) as parquet:
            metadata = parquet.metadata
            schema = parquet.schema_arrow
    except (pa.ArrowException, OSError, ValueError):
        return None
    if metadata.num_columns > default_max_columns():  # the reader's message, before any work
        raise too_many_columns(Path(source).name, metadata.num_columns, default_max_columns())
    return schema, metadata


def _candidates(kinds: dict[str, str], score: str, label: str,
                weight: str) -> tuple[list[str], list[str]]:
    """Return the default covariate candidates and the id columns (by name) left out of them.

    The loader's rule: no role, id or score-like column.
    """
    from mcviz.io.roles import roles_from_columns

    columns = list(kinds)
    roles = roles_from_columns(columns, {c for c in columns if kinds[c] == "number"})
    taken = {score, label, weight, *roles.score_candidates, *roles.probabilities, roles.score,
             roles.weight}
    ids = [c for c in roles.id_columns if c not in taken]
    return [c for c in columns if c not in taken and c not in ids], ids


def _ids_left_out(table: pa.Table, candidates: list[str], kinds: dict, names: list[str],
                  id_names: list[str], *, default: bool) -> tuple[list[str], list[str]]:
    """Return the candidates without text ids (the loader's rule) and the ids' notes.

    Only for the default covariates (``default``); ``id_names`` are the ids by name.
    """
    if not default:
        return candidates, []
    from mcviz.io.roles import id_note

    text_ids = {name for name in candidates if kinds[name] in ("text", "category")
                and name in table.column_names and _text_id(table.column(name))}
    return ([name for name in candidates if name not in text_ids],
            [id_note(name) for name in names if name in text_ids or name in id_names])


def _text_id(column: pa.ChunkedArray) -> bool:
    """Apply the loader's content rule for text ids (:func:`mcviz.io.roles.text_looks_like_id`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from mcviz.io.roles import ID_MIN_ROWS, text_looks_like_id

    present = len(column) - column.null_count
    if present < ID_MIN_ROWS:
        return False
    if pa.types.is_dictionary(column.type):  # categories: count the decoded values
        column = column.cast(column.type.value_type)
    return text_looks_like_id(present, pc.count_distinct(column, mode="only_valid").as_py())


def _statistics(parquet: pa.parquet.FileMetaData, j: int, kind: str,
                unsigned: bool) -> tuple[bool, int | None]:
    """Tell from the footer's statistics whether column ``j`` holds two distinct values.

    Returns (proven, missing values): proven when the smallest value of the file is below its
    largest - two distinct values, hence usable whatever else it holds (missing is one more
    value). Only signed integers, reals, booleans and timestamps, from their exact physical
    minima and maxima (reals' statistics leave NaN out; -0.0 and 0.0 compare equal; text and
    unsigned integers are decoded instead); the missing values counted when every row group
    says. A column not proven so is decoded and checked (:func:`_unusable`). The statistics are
    the writer's own account of the values, as every Parquet reader trusts them to skip row
    groups.
    """
    column = parquet.schema.column(j)
    if kind in ("text", "category") or unsigned or column.physical_type not in _STATISTICS_TYPES:
        return False, None
    low = high = None
    nulls: int | None = 0
    for i in range(parquet.num_row_groups):
        statistics = parquet.row_group(i).column(j).statistics
        if statistics is None:
            nulls = None
            continue
        counted = nulls is not None and statistics.has_null_count
        nulls = nulls + statistics.null_count if counted else None
        if statistics.has_min_max:
            low = statistics.min_raw if low is None else min(low, statistics.min_raw)
            high = statistics.max_raw if high is None else max(high, statistics.max_raw)
    proven = low is not None and high is not None and bool(low < high)
    if kind == "bool" and nulls is None:
        proven = False  # its kind depends on whether a value is missing: decode it
    return proven, nulls


def _pandas_metadata(schema: pa.Schema) -> dict[str, str] | None:
    """Return the dtype pandas' metadata names per column ({} without it; None: not handled).

    None when pandas wrote an index as columns, several levels of column names, or metadata
    this path does not read.
    """
    metadata = (schema.metadata or {}).get(b"pandas")
    if metadata is None:
        return {}
    try:
        pandas = json.loads(metadata)
        if (any(not isinstance(i, dict) for i in pandas.get("index_columns", []))
                or len(pandas.get("column_indexes", [])) > 1):
            return None
        return {str(c["field_name"]): "category" if c.get("pandas_type") == "categorical"
                else str(c["numpy_type"]) for c in pandas["columns"]}
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # unreadable metadata: let the loader decide what it means


def _kind(kind: pa.DataType, dtype: str | None) -> str | None:
    """Return ``number``, ``bool``, ``time``, ``text`` or ``category``; None for other types.

    ``category``: a dictionary of text (a pandas categorical of text: its categories are the
    dictionary's values).

    ``dtype``: the pandas dtype its metadata names, which must be of the same kind.
    """
    import pyarrow as pa

    if str(kind) in _NUMBERS:
        found = "number"
    elif pa.types.is_boolean(kind):
        found = "bool"
    elif pa.types.is_timestamp(kind):
        found = "time"
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        found = "text"
    elif pa.types.is_dictionary(kind) and (pa.types.is_string(kind.value_type)
                                           or pa.types.is_large_string(kind.value_type)):
        found = "category"
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
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Score, response and weight (None: unweighted) as floats, when every value is valid."""
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
        return scores, labels, None  # all ones (made in score order)
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


def _keys(column: pa.ChunkedArray) -> np.ndarray:
    """Return a number column as float64 (NaN where missing), copied once from Arrow."""
    dtype = np.dtype(_NUMBERS[str(column.type)])
    keys = np.empty(len(column))
    start = 0
    for chunk in column.chunks:
        length = len(chunk)
        buffers = chunk.buffers()
        part = keys[start:start + length]
        part[...] = np.frombuffer(buffers[1], dtype=dtype, count=length,
                                  offset=chunk.offset * dtype.itemsize)
        if chunk.null_count:
            part[~_bits(buffers[0], chunk.offset, length)] = np.nan
        start += length
    return keys


def _covariate_column(column: pa.ChunkedArray, kind: str,
                      rows: np.ndarray) -> CovariateColumn | None:
    """Return a covariate at input rows ``rows`` as the loader's DataFrame holds it (or None).

    ``to_pandas`` makes a number column float64 or an integer (keys: float64, NaN where
    missing), a boolean column without missing values (or a nullable one) bool, a dictionary of
    text a categorical of its values in the dictionary's order (chunks' dictionaries unified in
    order, as ``to_pandas`` does), and text - like a boolean column with missing values - an
    object column that :func:`~mcviz.io.covariates.covariates_in_order` turns into a
    categorical of its distinct values as text, sorted (by code point: Arrow compares UTF-8
    bytes, which orders as code points do).
    """
    kind_of = _kind(column.type, None)
    if kind_of == "number" and kind == "ordinal":
        keys = _keys(column).take(rows)  # take: twice as fast as [rows] for a permutation
        return CovariateColumn("number", np.isnan(keys), keys=keys)
    if kind_of == "bool":
        codes = _int_codes(column, rows)
        missing = codes < 0
        if kind == "ordinal":
            return CovariateColumn("bool", missing, codes=codes, levels=(False, True))
        present = np.bincount(codes[~missing], minlength=2) > 0  # text "False" < "True"
        if not present[0]:
            codes[~missing] = 0
        levels = tuple(text for text, here in zip(("False", "True"), present, strict=True)
                       if here)
        return CovariateColumn("nominal", missing, codes=codes, levels=levels)
    if kind != "nominal" or kind_of not in ("text", "category"):
        return None
    if kind_of == "category":
        coded = _dictionary_codes(column, rows)
        if coded is None:
            return None
        codes, levels = coded
    else:
        import pyarrow.compute as pc

        distinct = pc.unique(column).drop_null()
        distinct = distinct.take(pc.array_sort_indices(distinct))
        codes = _int_codes(pc.index_in(column, value_set=distinct), rows)
        levels = tuple(distinct.to_pylist())
    return CovariateColumn("nominal", codes < 0, codes=codes, levels=levels)


def _dictionary_codes(column: pa.ChunkedArray, rows: np.ndarray | None = None
                      ) -> tuple[np.ndarray, tuple[str, ...]] | None:
    """Return a dictionary column's codes (int32, -1: missing) and values, as ``to_pandas``.

    The codes at input rows ``rows`` (every row: None).

    The chunks' dictionaries unified in chunk order (pyarrow's DictionaryUnifier, which
    ``to_pandas`` uses for a categorical's categories); None when the dictionary holds a missing
    or repeated value (pandas' categories cannot: the loader decides).
    """
    import pyarrow as pa

    unified = column.unify_dictionaries()
    if unified.num_chunks == 0:
        return None
    dictionary = unified.chunk(0).dictionary
    levels = tuple(dictionary.to_pylist())
    if dictionary.null_count or len(set(levels)) != len(levels):
        return None
    indices = pa.chunked_array([chunk.indices for chunk in unified.chunks],
                               type=unified.type.index_type)
    return _int_codes(indices, rows), levels


def _int_codes(indices: pa.ChunkedArray | pa.Array, rows: np.ndarray | None) -> np.ndarray:
    """Return integer (or boolean) codes at input rows ``rows`` as int32, -1 where missing.

    Gathered in their own width (an int8 gather moves a quarter of the bytes), then widened;
    no pyarrow scalar is made (``pa.scalar`` imports pandas).
    """
    import pyarrow as pa

    if isinstance(indices, pa.Array):
        indices = pa.chunked_array([indices])
    values, valid = _values(indices)
    if rows is not None:
        values = values.take(rows)
        valid = None if valid is None else valid.take(rows)
    codes = values.astype(np.int32)
    if valid is not None:
        codes[~valid] = -1
    return codes


def _bits(buffer: pa.Buffer, start: int, length: int) -> np.ndarray:
    """Arrow's bit-packed booleans (least significant bit first) as a numpy bool array."""
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")
    return bits[start:start + length].astype(bool)


def _unusable(column: pa.ChunkedArray, kind: str) -> str | None:
    """Why a column cannot be a covariate ('' when it can; None: leave it to the loader)."""
    n = len(column)
    if column.null_count == n:
        return EVERY_VALUE_MISSING
    if kind == "category":
        if column.null_count:
            return ""
        coded = _dictionary_codes(column)
        if coded is None:
            return None
        codes = coded[0]
        return "" if codes.min() != codes.max() else SINGLE_VALUE
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
