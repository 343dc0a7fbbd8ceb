"""Subpopulation predicates in SQL (DuckDB and Spark dialects), with bound parameters.

The one translation of a conjunction of conditions to a SQL boolean expression
(:func:`predicate_sql`), used by the engines' drill-down (:mod:`mcviz.engines.sql` re-exports it)
and by :func:`~mcviz.subpopulations.conditions_sql`. Column names are always quoted identifiers
(double quotes for DuckDB, back quotes for Spark, the quote character doubled inside) and every
value is a bound parameter (``$p1`` for DuckDB, ``:p1`` for Spark): no user text is ever spliced
into a statement.

Missing values follow :data:`~mcviz.core.conditions.MISSING_RULE` exactly: a value is missing
when it is NULL or, in a floating-point column, NaN; every clause is combined with its missing
test (``AND NOT missing`` or ``OR missing``), so it is never NULL.
"""

from __future__ import annotations

import datetime as _dt
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mcviz.core.conditions import OPERATORS, ConditionLike
from mcviz.errors import ValidationError

__all__ = ["DUCKDB", "SPARK", "Dialect", "Query", "condition_sql", "missing_sql", "predicate_sql"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between DuckDB's and Spark's SQL."""

    name: str
    quote: str  # identifier quote character
    marker: str  # parameter marker prefix
    string_type: str

    def ident(self, name: str) -> str:
        """Quote a column name (the quote character doubled inside)."""
        if not isinstance(name, str) or not name or "\x00" in name:
            raise ValidationError(f"invalid column name {name!r}.")
        return self.quote + name.replace(self.quote, self.quote * 2) + self.quote


DUCKDB = Dialect("duckdb", '"', "$", "VARCHAR")
SPARK = Dialect("spark", "`", ":", "STRING")


@dataclass(slots=True)
class Query:
    """A statement under construction: SQL text plus its bound parameters."""

    dialect: Dialect
    params: dict[str, object] = field(default_factory=dict)

    def bind(self, value: object) -> str:
        """Add a parameter and return its marker."""
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f"{self.dialect.marker}{name}"


# Column kinds from the engines' schema: "float", "int", "bool", "string", "timestamp", "other".


def missing_sql(column: str, kind: str, q: Query) -> str:
    """Return the SQL test that a value of ``column`` is missing (NULL, or NaN in a float)."""
    ident = q.dialect.ident(column)
    if kind == "float":
        return f"({ident} IS NULL OR isnan({ident}))"
    return f"({ident} IS NULL)"


def _is_timestamp(value: object) -> bool:
    """Tell whether ``value`` is a pandas Timestamp (never, while pandas is not imported)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.Timestamp)


def _python_value(value: object, kind: str, column: str) -> object:
    """Convert a condition value to the Python object the driver binds (type checked)."""
    if _is_timestamp(value):
        if kind != "timestamp":
            raise ValidationError(f"column {column!r} is not a date/time; got {value}.",
                                  column=column)
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        value = value.item()
    if kind == "string":
        return str(value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        return float(value)
    if kind == "timestamp":
        if isinstance(value, str | _dt.datetime | _dt.date):
            import pandas as pd

            return pd.Timestamp(value).to_pydatetime()
        raise ValidationError(f"column {column!r} is a date/time; {value!r} is not.",
                              column=column)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
        if np.isnan(number):  # +-inf are thresholds like any other (the filter language's too)
            raise ValidationError(f"condition on {column!r}: the value {value!r} is not a "
                                  "number.", column=column)
        return number
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValidationError(
            f"column {column!r} is numeric; the condition value {value!r} is not a number.",
            column=column,
        ) from None


def _operand(column: str, kind: str, value: object, q: Query) -> str:
    """Return the column expression compared against ``value`` (cast where the types differ)."""
    ident = q.dialect.ident(column)
    if kind == "bool" and not isinstance(value, bool | np.bool_):
        return f"CAST({ident} AS DOUBLE)"
    if kind in ("other",):
        return f"CAST({ident} AS {q.dialect.string_type})"
    return ident


def condition_sql(condition: ConditionLike, kinds: Mapping[str, str], q: Query) -> str:
    """One condition as a SQL boolean expression that is never NULL."""
    column, op, value = condition.column, condition.op, condition.value
    if column not in kinds:
        raise ValidationError(f"no column {column!r} in the data for condition {condition}.",
                              column=column)
    if op not in OPERATORS:
        raise ValidationError(f"unknown operator {op!r} in a condition on {column!r}.",
                              column=column)
    kind = kinds[column]
    missing = missing_sql(column, kind, q)
    if op == "is missing":
        return missing
    if op == "is not missing":
        return f"(NOT {missing})"
    if op in ("in", "not in"):
        items = value if isinstance(value, tuple | list) else (value,)
        if not items:
            member = "FALSE"
        else:
            operand = _operand(column, kind, items[0], q)
            markers = ", ".join(q.bind(_python_value(v, kind, column)) for v in items)
            member = f"{operand} IN ({markers})"
        if op == "in":
            return f"({member} AND NOT {missing})"
        return f"(NOT {member} OR {missing})"
    operand = _operand(column, kind, value, q)
    marker = q.bind(_python_value(value, kind, column))
    sql_op = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "<>"}[op]
    compare = f"{operand} {sql_op} {marker}"
    if op in (">", ">=", "!="):  # missing sorts last: it satisfies these
        return f"({compare} OR {missing})"
    return f"({compare} AND NOT {missing})"


def predicate_sql(conditions: Sequence[ConditionLike], kinds: Mapping[str, str], q: Query) -> str:
    """Translate a conjunction of conditions (TRUE when empty)."""
    if not conditions:
        return "TRUE"
    return "(" + " AND ".join(condition_sql(c, kinds, q) for c in conditions) + ")"
