"""Subpopulations in words (re-parseable by the filter language) and in SQL."""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mcviz.core.conditions import OPERATORS, ConditionLike
from mcviz.errors import ValidationError
from mcviz.subpopulations.sql import DUCKDB, Query, _is_timestamp, predicate_sql

if TYPE_CHECKING:
    import pandas as pd

# --------------------------------------------------------------------------------------------
# Descriptions in words

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "missing", "null", "none", "na", "true", "false"}
)
_SYMBOL = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "==", "!=": "≠"}


@functools.lru_cache(maxsize=4096)
def _name_text(name: str) -> str:
    if _BARE.match(name) and name.lower() not in _KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


@functools.lru_cache(maxsize=65536)
def _string_text(text: str, *, bare: bool) -> str:
    if bare and _BARE.match(text) and text.lower() not in _KEYWORDS:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value_text(value: object, *, bare: bool = True) -> str:
    if type(value) is str:  # the common cases first (descriptions of 1,000s of splits)
        return _string_text(value, bare=bare)
    if type(value) is float:
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, bool | np.bool_):
        return "True" if value else "False"
    if _is_timestamp(value):
        return timestamp_text(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if number.is_integer() and abs(number) < 1e15:
            return str(int(number))
        return repr(number)
    return _string_text(str(value), bare=bare)


def timestamp_text(stamp: pd.Timestamp) -> str:
    """Write a date/time as the filter language reads it: ISO, as short as exact.

    A tz-naive midnight is a date; otherwise date and time (seconds always, fractions only
    when present, the UTC offset when time-zone aware). :func:`parse_filter` reads the text
    back to the same instant.

    Examples
    --------
    >>> import pandas as pd
    >>> timestamp_text(pd.Timestamp("2021-03-04")), timestamp_text(pd.Timestamp("2021-03-04 12:00"))
    ('2021-03-04', '2021-03-04 12:00:00')
    >>> timestamp_text(pd.Timestamp("2021-03-04 12:00:00.000000001", tz="UTC"))
    '2021-03-04 12:00:00.000000001+00:00'
    """
    if stamp.tzinfo is None and stamp == stamp.normalize():
        return stamp.date().isoformat()
    return stamp.isoformat(sep=" ")


_TIME_UNITS = ("D", "h", "min", "s", "ms", "us")


def shortest_timestamp(value: pd.Timestamp, previous: pd.Timestamp | None) -> pd.Timestamp:
    """Return the coarsest instant ``c`` with ``previous < c <= value`` (day, hour, ... ns).

    A split ``x < value`` / ``x >= value`` whose largest value below is ``previous`` selects
    the same rows at any such ``c``, so the shortest one is written (``date ≥ 2021-03-04``
    rather than the first observed instant of that day). Time-zone aware values are rounded
    in their own wall time.

    Examples
    --------
    >>> import pandas as pd
    >>> shortest_timestamp(pd.Timestamp("2021-03-04 05:00:00.5"),
    ...                    pd.Timestamp("2021-03-03 15:00"))
    Timestamp('2021-03-04 00:00:00')
    >>> shortest_timestamp(pd.Timestamp("2021-03-04 05:00:00.5"),
    ...                    pd.Timestamp("2021-03-04 05:00"))
    Timestamp('2021-03-04 05:00:00.500000')
    """
    for unit in _TIME_UNITS:
        try:
            candidate = value.floor(unit)
        except (ValueError, OverflowError):  # a wall time that DST makes ambiguous or absent
            continue
        if previous is None or candidate > previous:
            return candidate
    return value


def describe_conditions(conditions: Sequence[ConditionLike]) -> str:
    """Describe a conjunction in words, with the original column names and values.

    The text is valid input to :func:`parse_filter` (which selects the same rows).

    Examples
    --------
    >>> from mcviz.subpopulations import Condition
    >>> describe_conditions([Condition("age", ">=", 37.0),
    ...                      Condition("occupation", "in", ("Sales", "Tech support"))])
    'age ≥ 37 and occupation in {Sales, "Tech support"}'
    >>> describe_conditions([])
    'full population'
    """
    if not conditions:
        return "full population"
    parts = []
    for c in conditions:
        name = _name_text(c.column)
        if c.op in ("is missing", "is not missing"):
            parts.append(f"{name} {c.op}")
        elif c.op in ("in", "not in"):
            items = c.value if isinstance(c.value, tuple | list) else (c.value,)
            parts.append(f"{name} {c.op} {{{', '.join(_value_text(v) for v in items)}}}")
        elif c.op in _SYMBOL:
            parts.append(f"{name} {_SYMBOL[c.op]} {_value_text(c.value)}")
        else:
            raise ValidationError(
                f"unknown operator {c.op!r} in a condition on {c.column!r}; use one of "
                f"{', '.join(OPERATORS)}.", column=c.column)
    return " and ".join(parts)


def _sql_literal(value: object) -> str:
    if isinstance(value, _dt.datetime) and not _is_timestamp(value):
        import pandas as pd

        value = pd.Timestamp(value)
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if _is_timestamp(value):
        kind = "TIMESTAMPTZ" if value.tzinfo is not None else "TIMESTAMP"
        return f"{kind} '{value.isoformat(sep=' ')}'"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if np.isinf(number):  # standard SQL has no literal for infinity
            return f"CAST('{'-' if number < 0 else ''}Infinity' AS DOUBLE PRECISION)"
        return repr(number)
    return "'" + str(value).replace("'", "''") + "'"


def conditions_sql(conditions: Sequence[ConditionLike]) -> str:
    """Translate a conjunction into a standard SQL boolean expression (with the missing rule).

    The one translation of :mod:`mcviz.subpopulations.sql` (:func:`~.sql.predicate_sql`)
    with its bound parameters written inline as literals, and column kinds taken from the
    condition values (text, date/time, boolean, number). Missing values must be SQL NULLs (not
    NaN): ``>``, ``>=``, ``!=`` and ``not in`` add ``OR x IS NULL`` so that SQL's three-valued
    logic reproduces :data:`MISSING_RULE`.

    Examples
    --------
    >>> from mcviz.subpopulations import Condition
    >>> print(conditions_sql([Condition("age", ">=", 37), Condition("job", "in", ("A", "B"))]))
    (("age" >= 37.0 OR ("age" IS NULL)) AND ("job" IN ('A', 'B') AND NOT ("job" IS NULL)))
    >>> conditions_sql([])
    'TRUE'
    """
    kinds: dict[str, str] = {}
    for c in conditions:
        items = c.value if isinstance(c.value, tuple | list) else (c.value,)
        for value in items:
            if value is not None and c.column not in kinds:
                kinds[c.column] = _literal_kind(value)
        kinds.setdefault(c.column, "int")
    query = Query(DUCKDB)
    text = predicate_sql(conditions, kinds, query)

    def inline(match: re.Match) -> str:
        if match.group(1) is None:  # a quoted identifier: left as it is
            return match.group(0)
        return _sql_literal(query.params[f"p{match.group(1)}"])

    return re.sub(r'"(?:[^"]|"")*"|\$p(\d+)', inline, text)


def _literal_kind(value: object) -> str:
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, _dt.datetime | _dt.date):  # (a pandas Timestamp is a datetime)
        return "timestamp"
    if isinstance(value, str):
        return "string"
    return "int"  # a number; NaN is not a missing value in standard SQL
