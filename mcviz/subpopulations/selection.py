"""Selecting the rows that satisfy a conjunction of conditions (one rule for missing values)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.core._arrays import readonly as _readonly
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations.model import OPERATORS, Condition, _index_dtype

# --------------------------------------------------------------------------------------------
# Column access shared by selection and generation (one rule for values and missingness)


def _is_datetime(series: pd.Series) -> bool:
    return pd.api.types.is_datetime64_any_dtype(series)


def _is_nominal(series: pd.Series) -> bool:
    return isinstance(series.dtype, pd.CategoricalDtype)


def _is_bool(series: pd.Series) -> bool:
    return pd.api.types.is_bool_dtype(series)


def _categories(series: pd.Series) -> list[str]:
    return [str(c) for c in series.cat.categories]


def _ordinal_keys(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return comparable keys (float64, or int64 ns for datetimes) and the missing mask."""
    missing = series.isna().to_numpy()
    if _is_datetime(series):
        keys = pd.DatetimeIndex(series).as_unit("ns").asi8.copy()
        return keys, missing
    keys = series.to_numpy(dtype=float, na_value=np.nan)
    return keys, missing


def _ordinal_values(series: pd.Series) -> np.ndarray:
    """Return an ordinal column as float64 (datetimes as ns since the epoch), NaN where missing.

    The one numeric view of a covariate (ordering variables, covariate bins, curves along a
    variable), from the keys of :func:`_ordinal_keys`.
    """
    keys, missing = _ordinal_keys(series)
    if not _is_datetime(series):
        return keys  # already NaN where missing
    values = keys.astype(float)
    values[missing] = np.nan
    return values


def _value_key(series: pd.Series, value: object) -> float | int:
    """Return the key of a condition value on an ordinal column (see :func:`_ordinal_keys`)."""
    if _is_datetime(series):
        stamp = pd.Timestamp(value)
        tz = series.dt.tz
        if tz is not None and stamp.tzinfo is None:
            stamp = stamp.tz_localize(tz)
        elif tz is None and stamp.tzinfo is not None:
            stamp = stamp.tz_convert(None)
        return int(stamp.as_unit("ns").value)
    return float(value)


def _validate_index(pred: Predictions, index: np.ndarray) -> np.ndarray:
    """Return the subpopulation's positions as a sorted int64 array, or raise.

    The one validation rule for a subpopulation given by index (sorted or not, distinct
    positions in score order, or a boolean mask over the rows), shared by the deviation, the
    reliability diagrams and the measures.
    """
    array = np.asarray(index)
    if array.dtype == bool:
        if array.shape != (pred.n,):
            raise ValidationError(
                f"subpopulation mask has shape {array.shape}; expected ({pred.n},) "
                "(one entry per observation)."
            )
        array = np.flatnonzero(array)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValidationError(
            "subpopulation index must be a 1-D array of integer positions or a boolean mask."
        )
    if array.size == 0:
        raise ValidationError("the subpopulation is empty (0 rows); nothing to compare.")
    array = array.astype(np.int64, copy=False)
    outside = (array < 0) | (array >= pred.n)
    if outside.any():
        raise ValidationError(
            f"subpopulation index: {int(outside.sum()):,} of {array.size:,} positions lie "
            f"outside [0, {pred.n - 1}] (first {int(array[outside][0])})."
        )
    if np.any(array[1:] <= array[:-1]):
        array = np.sort(array)
        repeated = np.flatnonzero(array[1:] == array[:-1])
        if repeated.size:
            raise ValidationError(
                f"subpopulation index: {repeated.size:,} positions are repeated "
                f"(first {int(array[repeated[0]])})."
            )
    return array


def is_score_column(pred: Predictions, column: str) -> bool:
    """Return True when ``column`` names the score (and no covariate has that name).

    Conditions may bound the score itself (``score >= 0.6``: where the model says 0.6 or
    more); the filter language reads the score column by its name in the input.
    """
    return column == pred.score_column and column not in pred.covariate_kinds


def _require_covariates(pred: Predictions, names: Sequence[str], role: str) -> None:
    """Raise a ValidationError naming the first of ``names`` that is not a covariate."""
    for name in names:
        if name not in pred.covariates.columns:
            raise ValidationError(
                f"{role} {name!r} is not a covariate; covariates are "
                f"{', '.join(map(repr, pred.covariates.columns[:12]))}.",
                column=name,
            )


def select_rows(
    pred: Predictions, conditions: Sequence[Condition], *, within: np.ndarray | None = None
) -> np.ndarray:
    """Sorted positions (in score order) of the rows satisfying every condition.

    Missing values follow :data:`MISSING_RULE`.

    Parameters
    ----------
    pred : Predictions
    conditions : sequence of Condition
        A conjunction; empty selects every row.
    within : ndarray of int, optional
        Sorted positions known to contain the answer (a parent subpopulation's members): only
        these rows are tested, so the cost is proportional to their number, not to ``pred.n``.

    Returns
    -------
    ndarray of int64, read-only

    Raises
    ------
    ValidationError
        Unknown columns or operators, or values of the wrong type.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1],
    ...                                covariates={"age": [30.0, np.nan, 50.0, 40.0]})
    >>> select_rows(pred, [Condition("age", ">=", 40)]).tolist()   # missing sorts last
    [1, 2, 3]
    >>> select_rows(pred, [Condition("age", "<", 45)]).tolist()
    [0, 3]
    >>> select_rows(pred, [Condition("age", "<", 45)], within=np.array([1, 2, 3])).tolist()
    [3]
    """
    if within is None:
        mask = np.ones(pred.n, dtype=bool)
        for condition in conditions:
            mask &= _condition_mask(pred, condition)
        rows = np.flatnonzero(mask)
    else:
        rows = np.asarray(within)
        for condition in conditions:
            rows = rows[_condition_mask(pred, condition, rows)]
    return _readonly(rows.astype(_index_dtype(pred.n), copy=False))


def _condition_mask(
    pred: Predictions, condition: Condition, rows: np.ndarray | None = None
) -> np.ndarray:
    column, op, value = condition.column, condition.op, condition.value
    scored = is_score_column(pred, column)
    if not scored:
        pred.require_covariate(column, " in the condition")
    if op not in OPERATORS:
        raise ValidationError(
            f"unknown operator {op!r} in a condition on {column!r}; use one of "
            f"{', '.join(OPERATORS)}.",
            column=column,
        )
    series = pd.Series(pred.score, copy=False) if scored else pred.covariates[column]
    if rows is not None:
        series = series.take(rows)
    missing = series.isna().to_numpy()
    if op == "is missing":
        return missing
    if op == "is not missing":
        return ~missing
    if _is_nominal(series):
        categories = _categories(series)
        codes = series.cat.codes.to_numpy()
        wanted = value if op in ("in", "not in") else (value,)
        if not isinstance(wanted, tuple | list):
            wanted = (wanted,)
        lookup = {name: code for code, name in enumerate(categories)}
        targets = np.array([lookup.get(str(v), -2) for v in wanted], dtype=codes.dtype)
        member = np.isin(codes, targets) & ~missing
        if op in ("in", "=="):
            return member
        if op in ("not in", "!="):
            return ~member
        raise ValidationError(
            f"column {column!r} is nominal; {op!r} needs an ordered covariate (use ==, !=, in, "
            "not in).",
            column=column,
        )
    keys, _ = _ordinal_keys(series)
    if op in ("in", "not in"):
        items = value if isinstance(value, tuple | list) else (value,)
        member = np.isin(keys, np.array([_value_key(series, v) for v in items])) & ~missing
        return member if op == "in" else ~member
    key = _value_key(series, value)
    observed = ~missing
    if op == "<":
        return (keys < key) & observed
    if op == "<=":
        return (keys <= key) & observed
    if op == ">":
        return (keys > key) | missing
    if op == ">=":
        return (keys >= key) | missing
    if op == "==":
        return (keys == key) & observed
    return ~(keys == key) | missing  # "!="
