"""Subpopulations in words (re-parseable by the filter language) and in SQL."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.subpopulations.model import Condition

# --------------------------------------------------------------------------------------------
# Descriptions in words

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "missing", "null", "none", "na", "true", "false"}
)
_SYMBOL = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "==", "!=": "≠"}


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
    if isinstance(value, pd.Timestamp):
        if value.tzinfo is None and value == value.normalize():
            return f'"{value.date().isoformat()}"'
        return f'"{value}"'
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if number.is_integer() and abs(number) < 1e15:
            return str(int(number))
        return repr(number)
    return _string_text(str(value), bare=bare)


def describe_conditions(conditions: Sequence[Condition]) -> str:
    """Describe a conjunction in words, with the original column names and values.

    The text is valid input to :func:`parse_filter` (which selects the same rows).

    Examples
    --------
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
        else:
            parts.append(f"{name} {_SYMBOL[c.op]} {_value_text(c.value)}")
    return " and ".join(parts)


def _sql_literal(value: object) -> str:
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, pd.Timestamp):
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


def conditions_sql(conditions: Sequence[Condition]) -> str:
    """Translate a conjunction into a standard SQL boolean expression (with the missing rule).

    Missing values must be SQL NULLs (not NaN). ``>``, ``>=``, ``!=`` and ``not in`` add
    ``OR x IS NULL`` so that SQL's three-valued logic reproduces :data:`MISSING_RULE`.

    Examples
    --------
    >>> print(conditions_sql([Condition("age", ">=", 37), Condition("job", "in", ("A", "B"))]))
    ("age" >= 37 OR "age" IS NULL) AND "job" IN ('A', 'B')
    >>> conditions_sql([])
    'TRUE'
    """
    if not conditions:
        return "TRUE"
    parts = []
    for c in conditions:
        name = '"' + c.column.replace('"', '""') + '"'
        if c.op == "is missing":
            parts.append(f"{name} IS NULL")
        elif c.op == "is not missing":
            parts.append(f"{name} IS NOT NULL")
        elif c.op in ("in", "not in"):
            items = c.value if isinstance(c.value, tuple | list) else (c.value,)
            listed = ", ".join(_sql_literal(v) for v in items)
            if c.op == "in":
                parts.append(f"{name} IN ({listed})")
            else:
                parts.append(f"({name} NOT IN ({listed}) OR {name} IS NULL)")
        elif c.op in ("<", "<=", "=="):
            parts.append(f"{name} {'=' if c.op == '==' else c.op} {_sql_literal(c.value)}")
        elif c.op in (">", ">=", "!="):
            sql_op = "<>" if c.op == "!=" else c.op
            parts.append(f"({name} {sql_op} {_sql_literal(c.value)} OR {name} IS NULL)")
        else:
            raise ValidationError(f"unknown operator {c.op!r} on {c.column!r}.", column=c.column)
    return " AND ".join(parts)
