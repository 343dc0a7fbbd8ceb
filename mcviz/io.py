r"""Read and validate prediction files into one immutable, score-sorted :class:`Predictions`.

A prediction file holds one row per observation: a score (the predicted probability of the
positive class) or several per-class probability columns, a label, an optional weight, and any
number of covariates. :func:`load_predictions` reads CSV/TSV (optionally gzip- or zip-compressed)
and Parquet from a path, a file-like object (a browser upload) or a DataFrame, checks every
column once, sorts by score once (a stable sort, so tied scores keep their file order), and
returns a :class:`Predictions` whose arrays every other module reuses in that order.

Rules that every module relies on
---------------------------------
* **Sort order.** Arrays are in ascending score order; ``row`` holds each observation's 0-based
  row number in the input, so results can always point back at the file.
* **Ties.** ``run_end[i]`` is True when observation ``i`` is the last of a run of tied scores.
  Cumulative statistics are evaluated only there, which makes them independent of the order of
  tied rows (with no ties this is exactly the papers' definition).
* **Multi-class (top label).** With per-class probability columns the score is the largest
  probability, the predicted class is its argmax, and the response is 1 when the label equals
  the predicted class (Kelly & Smyth, Section 6; Guy et al. use the same reduction).
* **Missing covariate values** are kept, never dropped: ordinal covariates hold NaN (or NaT) and
  nominal ones a missing category. Downstream code treats "missing" as one more value that sorts
  after every observed value (see :mod:`mcviz.subpopulations`).
* **Invalid rows** (NaN or infinite scores, labels or weights; scores outside [0, 1]; unknown
  labels; non-positive weights) raise :class:`~mcviz.errors.ValidationError` unless the caller
  passes ``drop_invalid=True``; then they are dropped and :class:`LoadReport` says how many and why.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError, describe_rows

__all__ = [
    "DEFAULT_MAX_BYTES",
    "LoadReport",
    "Predictions",
    "Roles",
    "demo_path",
    "infer_roles",
    "load_demo",
    "load_predictions",
    "read_table",
]

DEFAULT_MAX_BYTES = 1 << 30
"""Files larger than this (1 GiB) are refused with a message rather than exhausting memory."""

PROBABILITY_SUM_TOLERANCE = 1e-6

Source = str | Path | IO[bytes] | pd.DataFrame

_SCORE_NAME = re.compile(
    r"^(score|scores|prob|probs|probability|proba|pred|prediction|predicted|y_prob|y_proba|"
    r"y_score|y_pred_proba|y_pred|p|p_hat|phat)([_\-\s.].*)?$|.*[_\-\s.](score|prob|proba|pred)$",
    re.IGNORECASE,
)
_LABEL_NAME = re.compile(
    r"^(label|labels|y|y_true|target|outcome|class|truth|response|actual)$", re.IGNORECASE
)
_WEIGHT_NAME = re.compile(r"^(weight|weights|w|sample_weight|wt)$", re.IGNORECASE)
_ID_NAME = re.compile(r"^(id|row_id|rowid|index|unnamed: ?0|record_id|uid)$", re.IGNORECASE)
_PROBABILITY_PREFIX = re.compile(
    r"^(prob|proba|probability|p|score|pred)[_\-.:](.+)$", re.IGNORECASE
)

_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"


# --------------------------------------------------------------------------------------------
# Result objects


@dataclass(frozen=True, slots=True, eq=False)
class LoadReport:
    """What loading did to the input.

    Attributes
    ----------
    n_read : int
        Rows in the input.
    n_kept : int
        Rows in the returned predictions.
    dropped : tuple of (str, int)
        Each reason rows were dropped (only with ``drop_invalid=True``) and how many rows it cost;
        a row with several problems counts once, under the first reason checked.
    warnings : tuple of str
        Problems that did not stop the load (a single class, probabilities not summing to 1).
    notices : tuple of str
        Decisions taken for the caller (covariates dropped for being constant or all missing).
    """

    n_read: int
    n_kept: int
    dropped: tuple[tuple[str, int], ...] = ()
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def n_dropped(self) -> int:
        """Total rows dropped."""
        return sum(count for _, count in self.dropped)


@dataclass(frozen=True, slots=True, eq=False)
class Predictions:
    """Validated predictions, sorted once by ascending score.

    Attributes
    ----------
    score : ndarray of shape (n,)
        Predicted probability of the positive class (top-label probability for multi-class).
    label : ndarray of shape (n,)
        The response R: 0/1 for binary labels (1 = positive class); for multi-class, 1 when the
        label equals the predicted class; real-valued when loaded with ``response="continuous"``.
    weight : ndarray of shape (n,)
        Positive weights; all ones when the file has no weight column.
    row : ndarray of shape (n,)
        0-based row number of each observation in the input.
    run_end : ndarray of bool, shape (n,)
        True at the last index of each run of tied scores.
    covariates : DataFrame
        Covariates in the same (score) order, with a RangeIndex.
    covariate_kinds : Mapping[str, str]
        ``"ordinal"`` or ``"nominal"`` per covariate.
    score_column, label_column : str
        The input columns used (``score_column`` is ``"top-label probability"`` for multi-class).
    weight_column : str or None
    probability_columns : tuple of str
        Per-class probability columns (multi-class only, else empty).
    classes : tuple of str
        Class names for multi-class, ``(negative, positive)`` for binary labels.
    predicted_class : ndarray or None
        Multi-class only: the argmax class name of each row.
    true_class : ndarray or None
        Multi-class only: the label of each row as a class name.
    positive : object
        The label value counted as the positive class (binary only).
    response_kind : {"binary", "continuous"}
    report : LoadReport
    """

    score: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    row: np.ndarray
    run_end: np.ndarray
    covariates: pd.DataFrame
    covariate_kinds: Mapping[str, str]
    score_column: str
    label_column: str
    weight_column: str | None = None
    probability_columns: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    predicted_class: np.ndarray | None = None
    true_class: np.ndarray | None = None
    positive: object = 1
    response_kind: Literal["binary", "continuous"] = "binary"
    report: LoadReport = field(default_factory=lambda: LoadReport(0, 0))

    @property
    def n(self) -> int:
        """Number of observations."""
        return int(self.score.size)

    @property
    def weighted(self) -> bool:
        """True when a weight column was given."""
        return self.weight_column is not None

    @property
    def weight_total(self) -> float:
        """Sum of the weights (n when unweighted)."""
        return float(self.weight.sum())

    @property
    def multiclass(self) -> bool:
        """True when the score is a top-label probability from per-class columns."""
        return bool(self.probability_columns)

    def require_covariate(self, name: str, purpose: str = "") -> None:
        """Raise a :class:`ValidationError` unless ``name`` is a covariate.

        The message says why a column is not one when loading dropped it (constant, all
        missing), and otherwise lists the covariates there are.

        Examples
        --------
        >>> pred = Predictions.from_arrays([0.2, 0.8], [0, 1], covariates={"c": [1, 1]})
        >>> pred.require_covariate("c")
        Traceback (most recent call last):
        ...
        mcviz.errors.ValidationError: covariate 'c' dropped: it takes a single value.
        """
        if name in self.covariates.columns:
            return
        dropped = next(
            (n for n in self.report.notices if n.startswith(f"covariate {name!r} dropped")), None
        )
        if dropped is not None:
            raise ValidationError(dropped, column=name)
        listed = ", ".join(map(str, self.covariates.columns[:20])) or "none"
        raise ValidationError(f"no covariate {name!r}{purpose}; covariates: {listed}.",
                              column=name)

    @classmethod
    def from_arrays(
        cls,
        score: np.ndarray | Sequence[float],
        label: np.ndarray | Sequence[float],
        weight: np.ndarray | Sequence[float] | None = None,
        *,
        covariates: pd.DataFrame | Mapping[str, Sequence] | None = None,
        response: Literal["binary", "continuous"] = "binary",
    ) -> Predictions:
        """Validate and sort plain arrays (the library's entry point without a file).

        Examples
        --------
        >>> pred = Predictions.from_arrays([0.9, 0.1, 0.5], [1, 0, 0])
        >>> pred.score.tolist(), pred.row.tolist()
        ([0.1, 0.5, 0.9], [1, 2, 0])
        """
        frame = pd.DataFrame({"score": np.asarray(score), "label": np.asarray(label)})
        if weight is not None:
            frame["weight"] = np.asarray(weight)
        if covariates is not None:
            covariate_frame = pd.DataFrame(covariates).reset_index(drop=True)
            for name in covariate_frame.columns:
                frame[name] = covariate_frame[name].to_numpy()
            names: Sequence[str] | None = list(covariate_frame.columns)
        else:
            names = []
        return load_predictions(
            frame,
            score="score",
            label="label",
            weight="weight" if weight is not None else False,
            covariates=names,
            response=response,
        )


@dataclass(frozen=True, slots=True)
class Roles:
    """Column roles inferred from names and contents; every field can be overridden.

    Attributes
    ----------
    score : str or None
        The score column (the first score-like column).
    score_candidates : tuple of str
        Every score-like numeric column (for choosing or comparing models).
    probabilities : tuple of str
        Per-class probability columns, when three or more share a prefix such as ``prob_``.
    label, weight : str or None
    id_columns : tuple of str
    covariates : tuple of str
        All other columns.
    """

    score: str | None
    score_candidates: tuple[str, ...]
    probabilities: tuple[str, ...]
    label: str | None
    weight: str | None
    id_columns: tuple[str, ...]
    covariates: tuple[str, ...]


# --------------------------------------------------------------------------------------------
# Reading


def read_table(source: Source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> pd.DataFrame:
    """Read a CSV/TSV (plain, .gz or .zip) or Parquet file into a DataFrame.

    The format is recognised from the content (Parquet, gzip and zip magic bytes), so a file
    uploaded under any name works. CSV versus TSV is decided from the header line.

    Parameters
    ----------
    source : path, file-like or DataFrame
        A DataFrame is returned as is (after the duplicate-name check).
    max_bytes : int, default 1 GiB
        Larger files are refused with a message (use the out-of-core ``mcviz screen``).

    Raises
    ------
    ValidationError
        Unreadable, empty or oversized files, wrong formats, and duplicate column names.
    """
    if isinstance(source, pd.DataFrame):
        _check_duplicate_names(list(source.columns))
        return source
    name, size = _source_name_and_size(source)
    if size is not None and size > max_bytes:
        raise ValidationError(
            f"file {name!r} is {size / 2**30:.2f} GiB; the limit is {max_bytes / 2**30:.2f} GiB. "
            "Sample it, or screen it out of core with `mcviz screen --engine duckdb`."
        )
    try:
        raw = _read_bytes(source)
    except OSError as error:
        reason = error.strerror or error
        raise ValidationError(f"file {name!r} could not be read: {reason}.") from None
    if len(raw) > max_bytes:
        raise ValidationError(
            f"file {name!r} is {len(raw) / 2**30:.2f} GiB; the limit is "
            f"{max_bytes / 2**30:.2f} GiB."
        )
    if not raw.strip():
        raise ValidationError(f"file {name!r} is empty.")
    try:
        if raw[:4] == _PARQUET_MAGIC:
            frame = _read_parquet(raw)
        else:
            if raw[:2] == _GZIP_MAGIC:
                raw = _gunzip_limited(raw, name, max_bytes)
            elif raw[:4] == _ZIP_MAGIC:
                raw = _unzip_single(raw, name, max_bytes)
            frame = _read_delimited(raw, name)
    except ValidationError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, EOFError, zipfile.BadZipFile) as error:
        raise ValidationError(
            f"file {name!r} could not be read as CSV, TSV or Parquet: {error}"
        ) from None
    if frame.shape[1] == 0:
        raise ValidationError(f"file {name!r} has no columns.")
    if frame.shape[0] == 0:
        raise ValidationError(f"file {name!r} has a header but no rows.")
    return frame


def _source_name_and_size(source: str | Path | IO[bytes]) -> tuple[str, int | None]:
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise ValidationError(f"file {str(path)!r} does not exist.")
        return path.name, path.stat().st_size
    name = getattr(source, "name", None) or "upload"
    size = getattr(source, "size", None)
    return str(name), size if isinstance(size, int) else None


def _read_bytes(source: str | Path | IO[bytes]) -> bytes:
    if isinstance(source, str | Path):
        return Path(source).read_bytes()
    if hasattr(source, "getvalue"):
        return bytes(source.getvalue())
    if hasattr(source, "seek"):
        source.seek(0)
    return source.read()


def _read_parquet(raw: bytes) -> pd.DataFrame:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(raw))
    _check_duplicate_names(table.column_names)
    return table.to_pandas()


def _too_large(name: str, max_bytes: int) -> ValidationError:
    return ValidationError(
        f"file {name!r} decompresses to more than {max_bytes / 2**30:.2f} GiB, the limit. "
        "Sample it, or screen it out of core with `mcviz screen --engine duckdb`."
    )


def _gunzip_limited(raw: bytes, name: str, max_bytes: int) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(name, max_bytes)
    return data


def _unzip_single(raw: bytes, name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        members = [m for m in archive.namelist() if not m.endswith("/")]
        if len(members) != 1:
            raise ValidationError(
                f"zip file {name!r} holds {len(members)} files; it must hold exactly one."
            )
        if archive.getinfo(members[0]).file_size > max_bytes:
            raise _too_large(name, max_bytes)
        return archive.read(members[0])


def _read_delimited(raw: bytes, name: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    first_line = raw.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
    delimiter = "\t" if first_line.count("\t") > first_line.count(",") else ","
    if first_line.count(delimiter) == 0 and first_line.count(";") > 0:
        delimiter = ";"
    header = next(csv.reader([first_line], delimiter=delimiter))
    _check_duplicate_names([h.strip() for h in header])

    def parse(encoding: str) -> pa.Table:
        return pacsv.read_csv(
            pa.py_buffer(raw),
            read_options=pacsv.ReadOptions(encoding=encoding),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                null_values=["", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?"],
                strings_can_be_null=True,
            ),
        )

    try:
        table = parse("utf8")
        if any(pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
               for f in table.schema):
            table = parse("latin-1")  # not UTF-8: read the bytes as Latin-1 text
    except pa.ArrowInvalid as error:
        raise ValidationError(f"file {name!r} is not a valid CSV/TSV file: {error}") from None
    frame = table.to_pandas()
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _check_duplicate_names(names: Sequence[str]) -> None:
    seen: set[str] = set()
    duplicated = sorted({str(n) for n in names if n in seen or seen.add(n)})
    if duplicated:
        raise ValidationError(
            f"duplicate column names: {', '.join(repr(d) for d in duplicated)}; "
            "rename them so every column is unique.",
            column=duplicated[0],
        )


# --------------------------------------------------------------------------------------------
# Roles


def infer_roles(frame: pd.DataFrame) -> Roles:
    """Guess column roles from common names and contents.

    Score: a numeric column named like ``score``, ``prob``, ``pred``, ``y_prob``, ``p`` (or
    ending in ``_score``/``_prob``). Probabilities: three or more numeric columns sharing a prefix
    such as ``prob_``. Label: ``label``/``y``/``target``/``outcome``..., else the last column
    holding only 0 and 1. Weight: ``weight``/``w``. Id: ``id``/``row_id``/``index``.

    Examples
    --------
    >>> frame = pd.DataFrame({"id": [1, 2], "age": [30, 40], "score": [0.2, 0.7],
    ...                       "label": [0, 1]})
    >>> roles = infer_roles(frame)
    >>> roles.score, roles.label, roles.id_columns, roles.covariates
    ('score', 'label', ('id',), ('age',))
    """
    columns = [str(c) for c in frame.columns]
    numeric = {c for c in columns if _is_numeric(frame[c])}

    groups: dict[str, list[str]] = {}
    for column in columns:
        match = _PROBABILITY_PREFIX.match(column)
        if match and column in numeric:
            groups.setdefault(match.group(1).lower(), []).append(column)
    probabilities: tuple[str, ...] = ()
    for members in groups.values():
        if len(members) >= 3 and len(members) > len(probabilities):
            probabilities = tuple(members)

    candidates = tuple(
        c for c in columns if c in numeric and _SCORE_NAME.match(c) and c not in probabilities
    )
    score = candidates[0] if candidates and not probabilities else None

    label = next((c for c in columns if _LABEL_NAME.match(c)), None)
    if label is None:
        taken = set(candidates) | set(probabilities)
        binary = [
            c
            for c in columns
            if c in numeric and c not in taken and set(pd.unique(frame[c].dropna())) <= {0, 1}
            and frame[c].nunique() == 2
        ]
        label = binary[-1] if binary else None
    if label is None and probabilities:
        class_names = set(_class_names(probabilities))
        for column in columns:
            if column in probabilities:
                continue
            values = {str(v) for v in pd.unique(frame[column].dropna())}
            if values and values <= class_names:
                label = column
                break

    weight = next((c for c in columns if _WEIGHT_NAME.match(c) and c in numeric), None)
    id_columns = tuple(c for c in columns if _ID_NAME.match(c))
    used = {score, label, weight, *candidates, *probabilities, *id_columns}
    covariates = tuple(c for c in columns if c not in used)
    return Roles(
        score=score,
        score_candidates=candidates,
        probabilities=probabilities,
        label=label,
        weight=weight,
        id_columns=id_columns,
        covariates=covariates,
    )


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _class_names(probability_columns: Sequence[str]) -> list[str]:
    """Class names from per-class column names: what follows their common prefix."""
    prefix = _common_prefix(probability_columns)
    names = [c[len(prefix) :] for c in probability_columns]
    if any(not n for n in names) or len(set(names)) != len(names):
        return list(probability_columns)
    return names


def _matching_class_names(probability_columns: Sequence[str], labels: np.ndarray) -> list[str]:
    """Class names for the columns that match the most label values.

    Tried in order: what follows the columns' common prefix (``prob_a`` -> ``a``), what follows
    the prefix cut back to its last separator (``prob_a1``, ``prob_a2`` -> ``a1``, ``a2``),
    the full column names.
    """
    first = _class_names(probability_columns)
    options = [first]
    prefix = _common_prefix(probability_columns)
    cut = max(prefix.rfind(ch) for ch in "_-.: ") + 1
    if 0 < cut < len(prefix):
        options.append([c[cut:] for c in probability_columns])
    options.append(list(probability_columns))
    values = np.array(pd.unique(labels[:100_000]), dtype=object)
    best, best_hits = first, -1
    for names in options:
        if len(set(names)) != len(names) or not all(names):
            continue
        known = set(_numeric_labels_as_classes(values, names))
        hits = len(known & set(names))
        if hits > best_hits:
            best, best_hits = names, hits
    return best


def _numeric_labels_as_classes(labels: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
    """Map labels such as ``'1.0'`` to a class named ``'1'`` (float labels, numeric names)."""
    numeric: dict[float, str] = {}
    for name in class_names:
        try:
            numeric.setdefault(float(name), name)
        except ValueError:
            continue
    if not numeric:
        return labels
    names = set(class_names)
    out = labels.copy()
    for value in pd.unique(labels):
        if value in names:
            continue
        try:
            match = numeric.get(float(value))
        except (TypeError, ValueError):
            continue
        if match is not None:
            out[labels == value] = match
    return out


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return first[:length]


# --------------------------------------------------------------------------------------------
# Loading


class _RowFilter:
    """Collect invalid rows: raise at once, or drop them and count them per reason."""

    def __init__(self, n: int, drop_invalid: bool) -> None:
        self.n = n
        self.drop_invalid = drop_invalid
        self.keep = np.ones(n, dtype=bool)
        self.dropped: list[tuple[str, int]] = []

    def reject(self, bad: np.ndarray, *, column: str, problem: str, example: str = "") -> None:
        bad = bad & self.keep
        count = int(bad.sum())
        if count == 0:
            return
        if not self.drop_invalid:
            rows = np.flatnonzero(bad)
            raise ValidationError(
                f"column {column!r}: {describe_rows(rows, self.n)} {problem}{example}. "
                "Fix the file, choose another column, or drop invalid rows.",
                column=column,
            )
        self.keep &= ~bad
        self.dropped.append((f"column {column!r}: {problem}", count))


def load_predictions(
    source: Source,
    *,
    score: str | None = None,
    probabilities: Sequence[str] | None = None,
    label: str | None = None,
    positive: object = None,
    weight: str | Literal[False] | None = None,
    covariates: Sequence[str] | None = None,
    nominal: Sequence[str] = (),
    ordinal: Sequence[str] = (),
    id_columns: Sequence[str] | None = None,
    response: Literal["binary", "continuous"] = "binary",
    drop_invalid: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Predictions:
    """Read, validate and sort predictions.

    Parameters
    ----------
    source : path, file-like or DataFrame
        CSV/TSV (optionally .gz/.zip) or Parquet.
    score : str, optional
        Column of positive-class probabilities. Inferred from the names when omitted.
    probabilities : sequence of str, optional
        Per-class probability columns (multi-class; replaces ``score``). The class names are what
        follows the columns' common prefix (``prob_A`` -> ``A``) and labels must be among them.
    label : str, optional
        The label column: 0/1, booleans, or two values with ``positive`` naming the positive one.
    positive : optional
        The positive label value (required when the two label values are not 0/1 or booleans).
    weight : str or False, optional
        Positive weights. Inferred from the names (``weight``, ``w``) when omitted; ``False``
        means unweighted.
    covariates : sequence of str, optional
        Default: every column not used for another role, not score-like and not an id column.
    nominal, ordinal : sequence of str
        Override the covariate kinds (default: numeric, boolean and datetime columns are ordinal;
        strings and categoricals are nominal).
    id_columns : sequence of str, optional
        Columns excluded from the covariates (default: inferred ``id``-like names).
    response : {"binary", "continuous"}
        ``"continuous"`` accepts real-valued responses (paper 000 Appendix C).
    drop_invalid : bool
        Drop invalid rows (and report them) instead of raising.
    max_bytes : int
        Refuse larger files.

    Returns
    -------
    Predictions

    Raises
    ------
    ValidationError
        With the column, the problem, the number of rows and the first row numbers.
    """
    if response not in ("binary", "continuous"):
        raise ValidationError(f"response must be 'binary' or 'continuous', not {response!r}.")
    frame = read_table(source, max_bytes=max_bytes)
    frame.columns = [str(c) for c in frame.columns]
    roles = infer_roles(frame)
    n = len(frame)
    warnings: list[str] = []
    notices: list[str] = []

    probability_columns = tuple(probabilities or ())
    if not probability_columns and score is None:
        score = roles.score
        if score is None and roles.probabilities:
            probability_columns = roles.probabilities
        if score is None and not probability_columns:
            # A score-named column that is not numeric: check it, so the message names it.
            score = next((c for c in frame.columns if _SCORE_NAME.match(c)), None)
        if score is None and not probability_columns:
            raise ValidationError(
                "no score column: name one (for example score='prob'), or give per-class "
                f"probability columns. Columns: {', '.join(frame.columns[:20])}."
            )
    if weight is None:
        weight = roles.weight or next(
            (c for c in frame.columns if _WEIGHT_NAME.match(c)
             and not pd.api.types.is_bool_dtype(frame[c]) and frame[c].notna().any()),
            None,
        )  # a weight-named column holding text is checked (and named), never silently ignored
    weight = weight or None
    if label is None:
        label = roles.label
        if label is None:
            raise ValidationError(
                f"no label column: name one. Columns: {', '.join(frame.columns[:20])}."
            )
    if probability_columns and len(set(probability_columns)) != len(probability_columns):
        raise ValidationError(
            f"probability columns are listed twice: {', '.join(probability_columns)}."
        )
    if len(probability_columns) == 1:
        raise ValidationError(
            f"one probability column ({probability_columns[0]!r}): give one column per class "
            "(two or more), or pass it as the score.",
            column=probability_columns[0],
        )
    wanted = [*probability_columns, label, *filter(None, (score, weight))]
    for column in wanted:
        _require_column(frame, column)

    rows = _RowFilter(n, drop_invalid)
    score_columns = probability_columns or (score,)
    numeric_scores = {}
    for column in score_columns:
        values = _numeric_column(frame, column, rows, what="scores")
        rows.reject(~np.isfinite(values), column=column, problem="are NaN or infinite")
        outside = np.isfinite(values) & ((values < 0) | (values > 1))
        rows.reject(
            outside, column=column, problem="lie outside [0, 1]",
            example=_examples(values[outside & rows.keep]),
        )
        numeric_scores[column] = values

    weight_values = np.ones(n)
    if weight:
        weight_values = _numeric_column(frame, weight, rows, what="weights")
        rows.reject(~np.isfinite(weight_values), column=weight, problem="are NaN or infinite")
        non_positive = np.isfinite(weight_values) & (weight_values <= 0)
        rows.reject(
            non_positive, column=weight, problem="are zero or negative",
            example=_examples(weight_values[non_positive & rows.keep]),
        )

    label_series = frame[label]
    rows.reject(label_series.isna().to_numpy(), column=label, problem="are missing (NaN)")

    true_class = predicted_class = None
    classes: tuple[str, ...]
    if probability_columns:
        label_text = label_series.astype("string").str.strip().to_numpy(dtype=object, na_value="")
        class_names = _matching_class_names(probability_columns, label_text)
        label_text = _numeric_labels_as_classes(label_text, class_names)
        known = np.isin(label_text, np.array(class_names, dtype=object))
        unknown = ~known & rows.keep
        rows.reject(
            ~known, column=label, problem="are not a known class",
            example=f" (values {', '.join(map(repr, pd.unique(label_text[unknown])[:5]))}; "
            f"classes are {', '.join(class_names[:10])}{'...' if len(class_names) > 10 else ''})",
        )
        matrix = np.column_stack([numeric_scores[c] for c in probability_columns])
        keep = rows.keep
        sums = matrix[keep].sum(axis=1)
        off = np.abs(sums - 1) > PROBABILITY_SUM_TOLERANCE
        if off.any():
            warnings.append(
                f"probability columns: {describe_rows(np.flatnonzero(keep)[off], n)} do not sum "
                f"to 1 within {PROBABILITY_SUM_TOLERANCE:g} (largest deviation "
                f"{np.abs(sums - 1).max():.3g}); the top-label probability is used as given."
            )
        argmax = np.argmax(np.where(np.isfinite(matrix), matrix, -np.inf), axis=1)
        score_values = matrix[np.arange(n), argmax]
        predicted_class = np.array(class_names, dtype=object)[argmax]
        true_class = label_text
        response_values = (true_class == predicted_class).astype(float)
        classes = tuple(class_names)
        score_name = "top-label probability"
        positive_value: object = None
    else:
        score_values = numeric_scores[score]
        score_name = score
        response_values, classes, positive_value = _binary_response(
            label_series, label, positive, rows, response, n
        )

    keep = rows.keep
    n_kept = int(keep.sum())
    if n_kept == 0:
        raise ValidationError(f"no valid rows left: all {n:,} rows were dropped as invalid.")

    if response != "continuous" and not probability_columns:
        kept_labels = response_values[keep]
        if kept_labels.min() == kept_labels.max():
            warnings.append(
                f"column {label!r}: every kept row has the same label "
                f"({'positive' if kept_labels[0] == 1 else 'negative'}); calibration can still be "
                "measured but reliability is limited."
            )

    excluded = {score_name, label, weight, *probability_columns}
    if covariates is None:
        ids = set(roles.id_columns if id_columns is None else id_columns)
        score_like = set(roles.score_candidates) | set(roles.probabilities)
        covariates = [c for c in frame.columns if c not in excluded | ids | score_like]
    else:
        for column in covariates:
            _require_column(frame, column)
        covariates = [c for c in covariates if c not in excluded]
    _check_declared_kinds(frame, covariates, nominal, ordinal)

    order = np.argsort(score_values[keep], kind="stable")
    kept_rows = np.flatnonzero(keep)[order]
    sorted_scores = np.ascontiguousarray(score_values[kept_rows], dtype=float)
    run_end = np.ones(n_kept, dtype=bool)
    run_end[:-1] = sorted_scores[1:] != sorted_scores[:-1]

    covariate_frame, kinds, covariate_notices = _prepare_covariates(
        frame, covariates, kept_rows, nominal, ordinal
    )
    notices.extend(covariate_notices)

    report = LoadReport(
        n_read=n,
        n_kept=n_kept,
        dropped=tuple(rows.dropped),
        warnings=tuple(warnings),
        notices=tuple(notices),
    )
    return Predictions(
        score=_readonly(sorted_scores),
        label=_readonly(np.ascontiguousarray(response_values[kept_rows], dtype=float)),
        weight=_readonly(np.ascontiguousarray(weight_values[kept_rows], dtype=float)),
        row=_readonly(kept_rows.astype(np.int64)),
        run_end=_readonly(run_end),
        covariates=covariate_frame,
        covariate_kinds=kinds,
        score_column=score_name,
        label_column=label,
        weight_column=weight,
        probability_columns=probability_columns,
        classes=classes,
        predicted_class=None if predicted_class is None else _readonly(predicted_class[kept_rows]),
        true_class=None if true_class is None else _readonly(true_class[kept_rows]),
        positive=positive_value,
        response_kind=response,
        report=report,
    )


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _check_declared_kinds(
    frame: pd.DataFrame, covariates: Sequence[str], nominal: Sequence[str],
    ordinal: Sequence[str],
) -> None:
    # A declaration that cannot apply is a typo or a mapping mistake: say so, never ignore it.
    for column in (*nominal, *ordinal):
        _require_column(frame, column)
        if column not in covariates:
            kind = "nominal" if column in nominal else "ordinal"
            raise ValidationError(
                f"column {column!r} is declared {kind} but is not one of the covariates "
                f"({', '.join(map(str, covariates[:20])) or 'none'}).", column=column,
            )
    both = sorted(set(nominal) & set(ordinal), key=str)
    if both:
        raise ValidationError(
            f"column {both[0]!r} is declared both nominal and ordinal; choose one.",
            column=both[0],
        )


def _require_column(frame: pd.DataFrame, column: str) -> None:
    if column not in frame.columns:
        listed = ", ".join(map(str, frame.columns[:20]))
        raise ValidationError(
            f"column {column!r} is missing from the file. Columns: {listed}.", column=column
        )


def _examples(values: np.ndarray, shown: int = 3) -> str:
    if values.size == 0:
        return ""
    return f" (e.g. {', '.join(f'{v:g}' for v in values[:shown])})"


def _numeric_column(frame: pd.DataFrame, column: str, rows: _RowFilter, *, what: str) -> np.ndarray:
    series = frame[column]
    if pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=float)
    if pd.api.types.is_numeric_dtype(series):
        return series.to_numpy(dtype=float, na_value=np.nan)
    converted = pd.to_numeric(series, errors="coerce")
    not_numbers = converted.isna().to_numpy() & series.notna().to_numpy()
    examples = pd.unique(series[not_numbers & rows.keep].astype(str))[:3]
    rows.reject(
        not_numbers, column=column, problem=f"are not numbers ({what} must be numeric)",
        example=f" (e.g. {', '.join(map(repr, examples))})" if len(examples) else "",
    )
    return converted.to_numpy(dtype=float, na_value=np.nan)


def _binary_response(
    series: pd.Series,
    column: str,
    positive: object,
    rows: _RowFilter,
    response: str,
    n: int,
) -> tuple[np.ndarray, tuple[str, ...], object]:
    """Map a label column to the 0/1 response (or real values for continuous responses)."""
    present = series.notna().to_numpy()
    if response == "continuous":
        values = _numeric_column(series.to_frame(), column, rows, what="responses")
        rows.reject(~np.isfinite(values) & present, column=column, problem="are infinite")
        return values, (), None

    if pd.api.types.is_bool_dtype(series) or (
        pd.api.types.is_numeric_dtype(series) and positive is None
    ):
        values = series.to_numpy(dtype=float, na_value=np.nan)
        other = present & ~np.isin(values, [0.0, 1.0])
        rows.reject(
            other, column=column, problem="are neither 0 nor 1",
            example=f" (values {', '.join(f'{v:g}' for v in pd.unique(values[other])[:5])}; "
            "give the positive value to use two other labels)",
        )
        return values, ("0", "1"), 1

    text = series.astype("string").str.strip()
    observed = list(pd.unique(text.dropna()))
    if positive is None:
        lowered = {str(v).lower() for v in observed}
        for negative_word, positive_word in (("false", "true"), ("no", "yes"), ("0", "1")):
            if lowered <= {negative_word, positive_word}:
                if len(lowered) < len(observed):  # "yes" and "YES": one label, any case
                    text = text.str.lower()
                    observed = list(pd.unique(text.dropna()))
                positive = next(v for v in observed if str(v).lower() == positive_word) if (
                    positive_word in lowered
                ) else positive_word
                break
    if positive is None:
        raise ValidationError(
            f"column {column!r}: labels are {', '.join(map(repr, observed[:5]))}; name the "
            "positive value (for example positive='yes').",
            column=column,
        )
    positive_text = str(positive).strip()
    if positive_text not in {str(v) for v in observed} and _looks_numeric(positive_text):
        positive_text = next((str(v) for v in observed if _same_number(v, positive_text)),
                             positive_text)
    values_text = text.to_numpy(dtype=object, na_value=None)
    others = sorted({str(v) for v in observed} - {positive_text})
    if positive_text not in {str(v) for v in observed} and len(others) > 1:
        raise ValidationError(
            f"column {column!r}: the positive value {positive_text!r} is not one of its labels "
            f"({', '.join(map(repr, observed[:5]))}{', ...' if len(observed) > 5 else ''}).",
            column=column,
        )
    if len(others) > 1:
        counts = text.value_counts()
        negative_value = max(others, key=lambda v: counts.get(v, 0))
        extra = present & (values_text != positive_text) & (values_text != negative_value)
        rows.reject(
            extra, column=column,
            problem=f"have a third label value besides {positive_text!r} and {negative_value!r}",
            example=_listed_values(values_text[extra & rows.keep]),
        )
    else:
        negative_value = others[0] if others else f"not {positive_text}"
    result = (values_text == positive_text).astype(float)
    result[~present] = np.nan
    return result, (str(negative_value), positive_text), positive


def _listed_values(values: np.ndarray) -> str:
    return f" (values {', '.join(map(repr, pd.unique(values)[:5]))})" if values.size else ""


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _same_number(value: object, text: str) -> bool:
    try:
        return float(str(value)) == float(text)
    except ValueError:
        return False


def _prepare_covariates(
    frame: pd.DataFrame,
    covariates: Sequence[str],
    kept_rows: np.ndarray,
    nominal: Sequence[str],
    ordinal: Sequence[str],
) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """Covariates in score order, with kinds; constant or all-missing ones dropped."""
    kinds: dict[str, str] = {}
    notices: list[str] = []
    columns: dict[str, pd.Series] = {}
    for name in covariates:
        series = frame[name].iloc[kept_rows].reset_index(drop=True)
        if series.dtype == object and series.map(
            lambda v: isinstance(v, list | dict | set | tuple | np.ndarray)
        ).any():
            notices.append(
                f"covariate {name!r} dropped: it holds lists or records, not single values."
            )
            continue
        if series.isna().all():
            notices.append(f"covariate {name!r} dropped: every value is missing.")
            continue
        if series.nunique(dropna=True) <= 1 and not series.isna().any():
            notices.append(f"covariate {name!r} dropped: it takes a single value.")
            continue
        if name in ordinal:
            kind = "ordinal"
        elif name in nominal:
            kind = "nominal"
        elif pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series) or (
            pd.api.types.is_datetime64_any_dtype(series)
        ):
            kind = "ordinal"
        else:
            kind = "nominal"
        if kind == "ordinal" and not (
            pd.api.types.is_numeric_dtype(series) or pd.api.types.is_datetime64_any_dtype(series)
            or pd.api.types.is_bool_dtype(series)
        ):
            converted = pd.to_numeric(series, errors="coerce")
            bad = converted.isna() & series.notna()
            if bad.any():
                raise ValidationError(
                    f"covariate {name!r} was declared ordinal but "
                    f"{describe_rows(np.flatnonzero(bad.to_numpy()), len(series))} are not "
                    "numbers; declare it nominal instead.",
                    column=name,
                )
            series = converted
        if kind == "nominal" and not isinstance(series.dtype, pd.CategoricalDtype):
            series = series.astype("string").astype("category")
        kinds[name] = kind
        columns[name] = series
    covariate_frame = pd.DataFrame(columns, index=pd.RangeIndex(len(kept_rows)))
    return covariate_frame, kinds, notices


# --------------------------------------------------------------------------------------------
# Embedded demos

_DEMOS = {
    "adult": "adult.parquet",
    "letter": "letter.parquet",
}


def demo_path(name: str = "adult") -> Path:
    """Path of an embedded demo dataset (``"adult"`` binary or ``"letter"`` multi-class)."""
    if name not in _DEMOS:
        raise ValidationError(f"unknown demo {name!r}; choose one of {', '.join(_DEMOS)}.")
    return Path(__file__).parent / "data" / _DEMOS[name]


def load_demo(name: str = "adult", *, score: str | None = None, **options: object) -> Predictions:
    """Load an embedded demo as :class:`Predictions` (Adult: ``score_gbm`` by default).

    The Adult demo uses ``fnlwgt`` as a covariate unless it is passed as ``weight``.
    """
    path = demo_path(name)
    if name == "adult":
        options.setdefault("label", "income_gt_50k")
        return load_predictions(path, score=score or "score_gbm", **options)
    frame = read_table(path)
    probability_columns = [c for c in frame.columns if c.startswith("prob_")]
    options.setdefault("label", "letter")
    return load_predictions(frame, probabilities=probability_columns, **options)
