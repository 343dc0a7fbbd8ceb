"""Selecting the rows that satisfy a conjunction of conditions (one rule for missing values)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.conditions import OPERATORS, index_dtype, value_key
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.io.columns import CovariateColumn, column_of_series
from mcviz.subpopulations.model import Condition, Subpopulation

if TYPE_CHECKING:
    import pandas as pd

# --------------------------------------------------------------------------------------------
# Column access shared by selection and generation (one rule for values and missingness)


def _is_nominal(series: pd.Series) -> bool:
    import pandas as pd

    return isinstance(series.dtype, pd.CategoricalDtype)


def _is_bool(series: pd.Series) -> bool:
    import pandas as pd

    return pd.api.types.is_bool_dtype(series)


def _categories(series: pd.Series) -> list[str]:
    return [str(c) for c in series.cat.categories]


def is_score_column(pred: Predictions, column: str) -> bool:
    """Return True when ``column`` names the score (and no covariate has that name).

    Conditions may bound the score itself (``score >= 0.6``: where the model says 0.6 or
    more); the filter language reads the score column by its name in the input.
    """
    return column == pred.score_column and column not in pred.covariate_kinds


SCORE_ALONE = ("bounded by the model's score alone, the group holds every row at its scores, "
               "so its deviation from the full population is zero by construction")
"""Why a group bounded by the score alone is judged and drawn by its own calibration
(:func:`on_score_alone`)."""


def on_score_alone(pred: Predictions, scope: Sequence[Condition] | Subpopulation | None) -> bool:
    """Return True when every condition of ``scope`` (at least one) bounds the score itself.

    ``scope`` is a sequence of conditions, a subpopulation, or None (the full population).

    Such a group holds every row at its scores, so its deviation from the full population
    (paper 003: the full population's average response in a bin around each of its scores,
    eqs. (6)-(7)) is its own response there: zero by construction but for the two end bins,
    which reach past the group. It is judged and drawn by its own calibration instead
    (:data:`SCORE_ALONE`).

    >>> from mcviz.io.predictions import Predictions
    >>> from mcviz.subpopulations.model import Condition
    >>> pred = Predictions.from_arrays([0.1, 0.5], [0, 1])
    >>> on_score_alone(pred, [Condition("score", "<", 0.3)]), on_score_alone(pred, [])
    (True, False)
    >>> on_score_alone(pred, None), on_score_alone(pred, Subpopulation(
    ...     id=1, depth=0, conditions=(Condition("score", "<", 0.3),),
    ...     description="score < 0.3", index=np.array([0])))
    (False, True)
    """
    conditions = tuple(getattr(scope, "conditions", scope) or ())
    return bool(conditions) and all(is_score_column(pred, c.column) for c in conditions)


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
    return _readonly(rows.astype(index_dtype(pred.n), copy=False))


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
    values, key_of = _column_values(pred, column, scored, rows)
    missing = values.missing
    if op == "is missing":
        return missing.copy()
    if op == "is not missing":
        return ~missing
    if values.kind == "nominal":
        codes = values.codes
        wanted = value if op in ("in", "not in") else (value,)
        if not isinstance(wanted, tuple | list):
            wanted = (wanted,)
        lookup = {name: code for code, name in enumerate(values.levels)}
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
    keys = values.ordinal_keys()
    if op in ("in", "not in"):
        items = value if isinstance(value, tuple | list) else (value,)
        member = np.isin(keys, np.array([key_of(v) for v in items])) & ~missing
        return member if op == "in" else ~member
    key = key_of(value)
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


def _column_values(
    pred: Predictions, column: str, scored: bool, rows: np.ndarray | None
) -> tuple[CovariateColumn, Callable[[object], float | int]]:
    """Return the column at ``rows`` (every row: None) as arrays, and a value's key function.

    The score and, while the covariates are pending, every covariate but a datetime are read
    without pandas (:meth:`~mcviz.io.Predictions.covariate_column`); the others from the
    DataFrame, taken at ``rows`` first (the cost follows the rows tested). A categorical is
    nominal; numbers, booleans (keys 0.0 and 1.0) and datetimes are ordinal.
    """
    if scored:
        keys = np.asarray(pred.score, dtype=float)
        keys = keys if rows is None else keys[rows]
        return CovariateColumn("number", np.isnan(keys), keys=keys), float
    if pred.covariates_pending:
        values = pred.covariate_column(column)
        if values.kind != "time":
            return (values if rows is None else values.take(rows)), float
    series = pred.covariates[column]
    if rows is not None:
        series = series.take(rows)
    return column_of_series(series), functools.partial(value_key, series)
