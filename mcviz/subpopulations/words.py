"""Subpopulations in plain words: what a person reads (never parsed back).

:func:`~mcviz.subpopulations.describe_conditions` writes the exact filter expression a link or a
machine re-parses (``fnlwgt ≥ 30730 and fnlwgt < 88840``); :func:`conditions_words` writes the
same group for a sentence, with no filter operator (no ``==``, ``!=``, ``>=``, ``<=``, ``≥``,
``≤``, ``<``, ``>`` or ``in {``) and bounds rounded to three significant digits:

* two bounds on a column of whole numbers below 1,000: "age 29 to 49" (``age ≥ 29 and
  age < 50``);
* two bounds on another number: "fnlwgt between 30,700 and 88,800";
* one bound: "age 50 or more", "capital_gain below 100", "x above 0.123", "x 7 or less";
* categories: "region is South", "region is not South", "marital_status is Married-civ-spouse
  or Married-AF-spouse", "workclass is none of Private, State-gov";
* the score column: "where the model predicts 60% or more", "below 0.0176%";
* missing values: "bmi is missing", "bmi is known", and "or missing" after a lower bound whose
  missing rows are among the group's (the library's missing rule).

Rounding is for reading only; the exact expression stays in the description. Names and levels
are user text: :func:`mcviz.text.sentence_text` shows their control characters (bidi
controls, line breaks, tabs) as ``[U+XXXX]``, so none reaches a sentence.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mcviz.text import format_time, readable_number, sentence_text

if TYPE_CHECKING:
    from mcviz.io import Predictions
    from mcviz.subpopulations.model import Condition, Subpopulation

__all__ = ["FILTER_OPERATORS", "MAX_LEVELS_SAID", "conditions_words", "integer_columns",
           "split_words", "subpopulation_words"]

MAX_LEVELS_SAID = 5
"""A sentence lists at most this many levels of a set, then "or K more"."""

SAID_EXACTLY = 1000
"""Whole-number ranges below this are said exactly ("age 29 to 49"); above, rounded
("fnlwgt between 30,700 and 88,800")."""

FILTER_OPERATORS = ("==", "!=", ">=", "<=", "≥", "≤", "≠", "<", ">", " in {")
"""What a sentence in words never holds (tests read it)."""

_LOWER = (">=", ">")
_UPPER = ("<", "<=")


def conditions_words(conditions: Sequence[Condition], *, score_column: str | None = None,
                     integers: Collection[str] = (), missing: Collection[str] = ()) -> str:
    """Write a conjunction of conditions in plain words, bounds rounded for reading.

    Parameters
    ----------
    conditions : sequence of Condition
    score_column : str, optional
        Its conditions read "where the model predicts ..." (percentages), said last.
    integers : collection of str
        Columns holding whole numbers: two bounds read "29 to 49".
    missing : collection of str
        Columns whose missing rows are among the group's: a lower bound reads "or missing".

    Examples
    --------
    >>> from mcviz.subpopulations import Condition
    >>> conditions_words([Condition("fnlwgt", ">=", 30730.0), Condition("fnlwgt", "<", 88840.0),
    ...                   Condition("age", ">=", 29.0), Condition("age", "<", 50.0)],
    ...                  integers={"age"})
    'fnlwgt between 30,700 and 88,800 and age 29 to 49'
    >>> conditions_words([Condition("region", "==", "South"),
    ...                   Condition("product", "in", ("personal_loan",))])
    'region is South and product is personal_loan'
    >>> conditions_words([Condition("s", "<", 0.00017567), Condition("capital_gain", "<", 100)],
    ...                  score_column="s")
    'capital_gain below 100, where the model predicts below 0.0176%'
    >>> conditions_words([Condition("bmi", ">=", 37.4)], missing={"bmi"})
    'bmi 37.4 or more, or missing'
    >>> conditions_words([])
    'all rows'
    """
    if not conditions:
        return "all rows"
    by_column: dict[str, list[Condition]] = {}
    for condition in conditions:
        by_column.setdefault(condition.column, []).append(condition)
    parts, said = [], ""
    for name, group in by_column.items():
        column = sentence_text(name)  # user text: no control character reaches a sentence
        if name == score_column:
            said = "where the model predicts " + _bounds_words(group, score=True)
            continue
        text = _column_words(column, group, integer=name in integers)
        if name in missing and all(c.op in (">", ">=", "!=", "not in") for c in group):
            text += ", or missing" if any(c.op in _LOWER for c in group) else " or missing"
        parts.append(text)
    return ", ".join(part for part in (" and ".join(parts), said) if part)


def _column_words(column: str, group: list[Condition], *, integer: bool) -> str:
    bounds = [c for c in group if c.op in _LOWER + _UPPER]
    others = [_other_words(column, c) for c in group if c not in bounds]
    if bounds:
        others.insert(0, f"{column} {_bounds_words(bounds, integer=integer)}")
    return " and ".join(others)


def _value_words(value: Any, *, score: bool = False) -> str:
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return format_time(value)
    if isinstance(value, int | float | np.integer | np.floating):
        if score:
            return readable_number(100.0 * float(value)) + "%"
        return readable_number(float(value))
    return sentence_text(value)


def _bounds_words(group: list[Condition], *, integer: bool = False, score: bool = False) -> str:
    lower = next((c for c in group if c.op in _LOWER), None)
    upper = next((c for c in group if c.op in _UPPER), None)
    numeric = all(isinstance(c.value, int | float | np.integer | np.floating)
                  and not isinstance(c.value, bool | np.bool_) for c in group)
    if integer and numeric and not score:
        low = None if lower is None else _whole_low(lower)  # first whole number in
        end = None if upper is None else _whole_high(upper) + 1  # first whole number out
        if low is not None and end is not None and end - 1 < SAID_EXACTLY:
            return f"{low:,}" if low == end - 1 else f"{low:,} to {end - 1:,}"
        if low is not None and end is None:
            return f"{readable_number(low)} or more"
        if end is not None and low is None:
            return f"below {readable_number(end)}"
        if low is not None and end is not None:
            lower, upper = (replace(lower, op=">=", value=low),  # type: ignore[arg-type]
                            replace(upper, op="<", value=end))  # type: ignore[arg-type]
    low_text = None if lower is None else _value_words(lower.value, score=score)
    high_text = None if upper is None else _value_words(upper.value, score=score)
    if low_text is not None and high_text is not None:
        if low_text == high_text:  # rounding merged them: say them exactly
            low_text, high_text = str(lower.value), str(upper.value)  # type: ignore[union-attr]
        return f"between {low_text} and {high_text}"
    if low_text is not None:
        return f"{low_text} or more" if lower.op == ">=" else f"above {low_text}"  # type: ignore[union-attr]
    return f"below {high_text}" if upper.op == "<" else f"{high_text} or less"  # type: ignore[union-attr]


def _whole_low(condition: Condition) -> int:
    value = float(condition.value)  # type: ignore[arg-type]
    return int(np.ceil(value)) if condition.op == ">=" else int(np.floor(value)) + 1


def _whole_high(condition: Condition) -> int:
    value = float(condition.value)  # type: ignore[arg-type]
    return int(np.ceil(value)) - 1 if condition.op == "<" else int(np.floor(value))


def _levels(values: Sequence[Any], joiner: str) -> str:
    said = [_value_words(v) for v in values[:MAX_LEVELS_SAID]]
    more = len(values) - len(said)
    if more:
        return ", ".join(said) + f" {joiner} {more:,} more"
    if len(said) == 1:
        return said[0]
    return ", ".join(said[:-1]) + f" {joiner} {said[-1]}"


def _other_words(column: str, condition: Condition) -> str:
    op, value = condition.op, condition.value
    if op == "is missing":
        return f"{column} is missing"
    if op == "is not missing":
        return f"{column} is known"
    if op == "==":
        return f"{column} is {_value_words(value)}"
    if op == "!=":
        return f"{column} is not {_value_words(value)}"
    values = tuple(value) if isinstance(value, tuple | list) else (value,)
    if op == "in":
        return f"{column} is {_levels(values, 'or')}"
    if len(values) == 1:
        return f"{column} is not {_value_words(values[0])}"
    return f"{column} is none of {_levels(values, 'and')}"


def integer_columns(pred: Predictions, columns: Collection[str]) -> frozenset[str]:
    """Return those of ``columns`` whose observed values are all whole numbers.

    Read through :meth:`~mcviz.io.Predictions.covariate_column` (numpy arrays, no pandas on the
    Parquet path): a number column whose finite keys are all integral.
    """
    wanted = [column for column in columns if column in pred.covariate_kinds]
    whole = set()
    for column, values in pred.covariate_columns(wanted).items():
        if values.kind != "number" or values.keys is None:
            continue
        finite = values.keys[np.isfinite(values.keys)]
        if finite.size and bool(np.all(finite == np.round(finite))):
            whole.add(column)
    return frozenset(whole)


def subpopulation_words(pred: Predictions, subpopulation: Subpopulation) -> str:
    """Write a subpopulation of ``pred`` in plain words (:func:`conditions_words`).

    Integer columns are read from the data; "or missing" where the group's rows hold missing
    values of a column bounded from below.
    """
    conditions, integers, missing = _read_from_data(pred, subpopulation)
    return conditions_words(conditions, score_column=pred.score_column, integers=integers,
                            missing=missing)


def split_words(pred: Predictions, subpopulation: Subpopulation) -> list[str]:
    """Write each split of a subpopulation's path in plain words, in the order taken.

    One entry per condition (the drill-down's "path of splits"), written as
    :func:`subpopulation_words` writes the group, with no filter operator.
    """
    conditions, integers, missing = _read_from_data(pred, subpopulation)
    return [conditions_words((condition,), score_column=pred.score_column, integers=integers,
                             missing=missing) for condition in conditions]


def _read_from_data(pred: Predictions, subpopulation: Subpopulation) -> tuple:
    """The conditions, their whole-number columns and the columns with missing members."""
    conditions = tuple(subpopulation.conditions)
    columns = {c.column for c in conditions}
    members = np.asarray(subpopulation.index)
    missing = {c for c in columns if c in pred.covariate_kinds
               and bool(pred.covariate_column(c).missing[members].any())}
    return conditions, integer_columns(pred, columns), missing
