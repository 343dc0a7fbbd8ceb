"""Translate subpopulation predicates and the screening passes to SQL (DuckDB and Spark).

Column names are always quoted identifiers (double quotes for DuckDB, back quotes for Spark,
the quote character doubled inside) and every value is a bound parameter (``$p1`` for DuckDB,
``:p1`` for Spark): no user text is ever spliced into a statement.

Missing values follow :data:`mcviz.subpopulations.MISSING_RULE` exactly: a value is missing when
it is NULL or, in a floating-point column, NaN (pandas treats both as missing); a missing value
satisfies ``>``, ``>=``, ``!=``, ``not in`` and ``is missing`` and fails every other comparison.
Every clause is combined with its missing test (``AND NOT missing`` or ``OR missing``), so it is
never NULL and SQL's three-valued logic never leaks; comparisons are left bare (no ``COALESCE``)
so that DuckDB can push them into the Parquet scan and skip row groups by their statistics.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mcviz.engines.base import Columns, SubpopulationSpec
from mcviz.errors import ValidationError
from mcviz.subpopulations import OPERATORS, Condition

__all__ = ["Dialect", "Query", "condition_sql", "predicate_sql"]

# Reserved names of the derived columns (unlikely to clash with user columns).
S, R, W, D, P, Q, V, B = ("__mcviz_s", "__mcviz_r", "__mcviz_w", "__mcviz_d", "__mcviz_p",
                          "__mcviz_q", "__mcviz_v", "__mcviz_b")


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between DuckDB's and Spark's SQL."""

    name: str
    quote: str  # identifier quote character
    marker: str  # parameter marker prefix
    string_type: str
    filter_nulls: str  # template turning an array of nullable ints into its non-null items

    def ident(self, name: str) -> str:
        """Quote a column name (the quote character doubled inside)."""
        if not isinstance(name, str) or not name or "\x00" in name:
            raise ValidationError(f"invalid column name {name!r}.")
        return self.quote + name.replace(self.quote, self.quote * 2) + self.quote


DUCKDB = Dialect("duckdb", '"', "$", "VARCHAR", "list_filter([{items}], lambda x: x IS NOT NULL)")
SPARK = Dialect("spark", "`", ":", "STRING", "filter(array({items}), x -> x IS NOT NULL)")


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


def _missing(column: str, kind: str, q: Query) -> str:
    ident = q.dialect.ident(column)
    if kind == "float":
        return f"({ident} IS NULL OR isnan({ident}))"
    return f"({ident} IS NULL)"


def _python_value(value: object, kind: str, column: str) -> object:
    """Convert a condition value to the Python object the driver binds (type checked)."""
    if isinstance(value, pd.Timestamp):
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


def condition_sql(condition: Condition, kinds: Mapping[str, str], q: Query) -> str:
    """One condition as a SQL boolean expression that is never NULL."""
    column, op, value = condition.column, condition.op, condition.value
    if column not in kinds:
        raise ValidationError(f"no column {column!r} in the data for condition {condition}.",
                              column=column)
    if op not in OPERATORS:
        raise ValidationError(f"unknown operator {op!r} in a condition on {column!r}.",
                              column=column)
    kind = kinds[column]
    missing = _missing(column, kind, q)
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


def predicate_sql(conditions: Sequence[Condition], kinds: Mapping[str, str], q: Query) -> str:
    """Translate a conjunction of conditions (TRUE when empty)."""
    if not conditions:
        return "TRUE"
    return "(" + " AND ".join(condition_sql(c, kinds, q) for c in conditions) + ")"


def base_select(columns: Columns, kinds: Mapping[str, str], q: Query, source: str,
                *, drop_invalid: bool) -> str:
    """Select the data with derived columns S, R, W, D, P, Q, V (and only valid rows if asked)."""
    ident = q.dialect.ident
    score = f"CAST({ident(columns.score)} AS DOUBLE)"
    weight = "CAST(1.0 AS DOUBLE)" if columns.weight is None else (
        f"CAST({ident(columns.weight)} AS DOUBLE)")
    response = _response_sql(columns, kinds, q)
    inner = (f"SELECT *, {score} AS {S}, {response} AS {R}, {weight} AS {W} FROM {source}")
    where = f" WHERE {_valid_sql(columns, kinds, q)}" if drop_invalid else ""
    return (
        f"SELECT *, {W} * ({R} - {S}) AS {D}, "
        f"GREATEST({W} * ({R} - {S}), 0.0) AS {P}, GREATEST({W} * ({S} - {R}), 0.0) AS {Q}, "
        f"{S} * (1.0 - {S}) * {W} * {W} AS {V} FROM ({inner}) AS __mcviz_raw{where}"
    )


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _label_value(columns: Columns, kinds: Mapping[str, str], value: str,
                 q: Query) -> tuple[str, str]:
    """Return the label expression and the bound value, compared as numbers when both are.

    A numeric label column holding 0.0/1.0 casts to the text '0.0' in SQL, so a declared
    positive value '0' is compared numerically (as :func:`mcviz.io.load_predictions` does).
    """
    ident = q.dialect.ident(columns.label)
    number = _as_number(value) if kinds.get(columns.label) in ("float", "int") else None
    if number is not None:
        return f"CAST({ident} AS DOUBLE)", q.bind(number)
    return f"TRIM(CAST({ident} AS {q.dialect.string_type}))", q.bind(str(value).strip())


def _response_sql(columns: Columns, kinds: Mapping[str, str], q: Query) -> str:
    ident = q.dialect.ident(columns.label)
    if columns.positive is None:
        return f"CAST({ident} AS DOUBLE)"
    label, marker = _label_value(columns, kinds, str(columns.positive), q)
    return f"CASE WHEN {label} = {marker} THEN 1.0 ELSE 0.0 END"


def _label_invalid(columns: Columns, kinds: Mapping[str, str], q: Query) -> str:
    ident = q.dialect.ident(columns.label)
    if columns.positive is None:
        value = f"CAST({ident} AS DOUBLE)"
        return f"({ident} IS NULL OR NOT ({value} = 0.0 OR {value} = 1.0))"
    if columns.negative is None:
        return f"({ident} IS NULL)"
    allowed = [str(columns.positive), str(columns.negative)]
    if kinds.get(columns.label) in ("float", "int") and all(
        _as_number(v) is not None for v in allowed
    ):
        text = f"CAST({ident} AS DOUBLE)"
        markers = ", ".join(q.bind(_as_number(v)) for v in allowed)
    else:
        text = f"TRIM(CAST({ident} AS {q.dialect.string_type}))"
        markers = ", ".join(q.bind(v.strip()) for v in allowed)
    return f"({ident} IS NULL OR {text} NOT IN ({markers}))"


def invalid_checks(columns: Columns, kinds: Mapping[str, str], q: Query) -> list[tuple]:
    """(column, problem, SQL condition) for each kind of invalid row."""
    ident = q.dialect.ident
    score = ident(columns.score)
    checks = [
        (columns.score, "are missing or NaN", _missing(columns.score, kinds[columns.score], q)),
        (columns.score, "lie outside [0, 1]",
         f"COALESCE(CAST({score} AS DOUBLE) < 0.0 OR CAST({score} AS DOUBLE) > 1.0, FALSE)"),
        (columns.label, "are missing or not one of the two labels",
         f"COALESCE({_label_invalid(columns, kinds, q)}, TRUE)"),
    ]
    if columns.weight is not None:
        weight = f"CAST({ident(columns.weight)} AS DOUBLE)"
        checks.append((
            columns.weight, "are missing, infinite, zero or negative",
            f"COALESCE({_missing(columns.weight, kinds[columns.weight], q)} OR NOT ({weight} > 0.0)"
            f" OR {weight} = CAST('Infinity' AS DOUBLE), TRUE)",
        ))
    return checks


def _valid_sql(columns: Columns, kinds: Mapping[str, str], q: Query) -> str:
    return "NOT (" + " OR ".join(c for _, _, c in invalid_checks(columns, kinds, q)) + ")"


def overview_sql(columns: Columns, kinds: Mapping[str, str], q: Query, source: str) -> str:
    """One pass: row count, each invalid-row count, and the score range of the valid rows."""
    checks = invalid_checks(columns, kinds, q)
    counts = ", ".join(f"SUM(CASE WHEN {c} THEN 1 ELSE 0 END) AS bad{i}"
                       for i, (_, _, c) in enumerate(checks))
    valid = "NOT (" + " OR ".join(c for _, _, c in checks) + ")"
    score = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    return (
        f"SELECT COUNT(*) AS n, {counts}, SUM(CASE WHEN {valid} THEN 1 ELSE 0 END) AS valid, "
        f"MIN(CASE WHEN {valid} THEN {score} END) AS lo, "
        f"MAX(CASE WHEN {valid} THEN {score} END) AS hi FROM {source}"
    )


def _bin_sql(q: Query, lo: float, scale: float, bins: int) -> str:
    # Same IEEE operations as numpy: (S - lo) * scale, floored, clipped to the last bin.
    return (f"LEAST(CAST(FLOOR(({S} - {q.bind(float(lo))}) * {q.bind(float(scale))}) AS BIGINT), "
            f"{q.bind(int(bins - 1))})")


def membership_sql(specs: Sequence[SubpopulationSpec], positions: Sequence[int],
                   kinds: Mapping[str, str], q: Query) -> str:
    """Return the array of positions (in ``specs``) of the subpopulations a row belongs to."""
    items = ", ".join(
        f"CASE WHEN {predicate_sql(specs[k].conditions, kinds, q)} THEN "
        f"CAST({q.bind(int(k))} AS BIGINT) END"
        for k in positions
    )
    return q.dialect.filter_nulls.format(items=items)


def histogram_sql(specs, positions, kinds, q: Query, data: str, lo: float, scale: float,
                  bins: int) -> str:
    """Per-(subpopulation, bin) sums over the exploded membership (one scan of the data)."""
    explode = "unnest" if q.dialect.name == "duckdb" else "explode"
    member = membership_sql(specs, positions, kinds, q)
    binned = _bin_sql(q, lo, scale, bins)
    return (
        f"SELECT k, b, COUNT(*) AS n, SUM({W}) AS w, SUM({D}) AS d, SUM({P}) AS p, "
        f"SUM({Q}) AS q, SUM({V}) AS v FROM (SELECT {explode}({member}) AS k, {binned} AS b, "
        f"{W}, {D}, {P}, {Q}, {V} FROM {data}) AS m GROUP BY k, b"
    )


def refine_sql(specs, positions, kinds, q: Query, data: str, cells: str, lo: float,
               scale: float, bins: int) -> str:
    """Exact within-bin extremes of the running sum for the candidate cells.

    Rows are aggregated per (subpopulation, bin, score) first, so a run of tied scores is one
    step, then a window running sum over the distinct scores inside the bin (eq. (1) evaluated
    at the ends of tie runs).
    """
    explode = "unnest" if q.dialect.name == "duckdb" else "explode"
    member = membership_sql(specs, positions, kinds, q)
    binned = _bin_sql(q, lo, scale, bins)
    return (
        f"WITH rows_in AS (SELECT *, {binned} AS {B} FROM {data}), "
        f"m AS (SELECT {explode}({member}) AS k, {B} AS b, {S} AS s, {D} AS d FROM rows_in "
        f"WHERE {B} IN (SELECT DISTINCT b FROM {cells})), "
        f"t AS (SELECT m.k AS k, m.b AS b, m.s AS s, SUM(m.d) AS d FROM m "
        f"JOIN {cells} AS c ON m.k = c.k AND m.b = c.b GROUP BY m.k, m.b, m.s), "
        f"r AS (SELECT k, b, SUM(d) OVER (PARTITION BY k, b ORDER BY s "
        f"ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run FROM t) "
        f"SELECT k, b, MAX(run) AS hi, MIN(run) AS lo FROM r GROUP BY k, b"
    )


def read_overview(row: pd.Series, columns: Columns, kinds: Mapping[str, str], *,
                  drop_invalid: bool) -> tuple[int, int, float, float]:
    """Check the one-row result of :func:`overview_sql`; return kept, dropped, lowest, highest.

    Raises the ValidationError of :func:`raise_invalid` when rows are invalid and may not be
    dropped, and one when no valid row is left.
    """
    total, valid = int(row["n"]), int(row["valid"] or 0)
    counts = [int(row[f"bad{i}"] or 0) for i in range(len(row) - 4)]
    if valid < total and not drop_invalid:
        raise_invalid(columns, kinds, counts, total)
    if valid == 0:
        raise ValidationError("no valid rows to screen.")
    return valid, total - valid, float(row["lo"]), float(row["hi"])


def raise_invalid(columns: Columns, kinds: Mapping[str, str], counts: Sequence[int],
                  total: int) -> None:
    """Raise the ValidationError naming the first kind of invalid rows found."""
    q = Query(DUCKDB)
    for (column, problem, _), count in zip(invalid_checks(columns, kinds, q), counts,
                                           strict=True):
        if count:
            raise ValidationError(
                f"column {column!r}: {int(count):,} of {int(total):,} rows {problem}; "
                "fix them or pass --drop-invalid (drop_invalid=True).",
                column=column,
            )
