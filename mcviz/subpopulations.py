r"""Subpopulations as predicates: Algorithm 1 of paper 000, user groups, and a filter language.

A subpopulation is a conjunction of :class:`Condition` objects on covariates (its *path*), a
description of that path in words, and the sorted positions of its members in the
:class:`~mcviz.io.Predictions` score order. Because the path alone determines the members
(:func:`select_rows`), other engines (SQL, out of core) can evaluate the same subpopulations.

Random subpopulations (Algorithm 1 with the refinements of Section 2.3)
---------------------------------------------------------------------------
Each path starts at the full population. A step chooses a covariate uniformly at random (with
replacement), takes the median of the *distinct* values the covariate takes among the current
members and, with probability 1/2, keeps the members below it, otherwise those at or above it.
With :math:`u` distinct values :math:`v_0 < \dots < v_{u-1}` the split point is
:math:`v_{\lfloor u/2 \rfloor}`: for odd :math:`u` that is the median itself and for even
:math:`u` the first value above the median (the average of the two middle values), so "below the
median" keeps :math:`v_0, \dots, v_{\lfloor u/2 \rfloor - 1}` in both cases and the threshold is
always a value that occurs in the data. A path stops when the new set has fewer than ``min_size``
members (that set is discarded); every node along the path is kept. Nominal covariates are
split on a random order of their categories, drawn afresh at the start of every path. A split
that does not shrink the set adds nothing; a membership already generated (by this path or
another) is not returned twice, and repeated split paths are replayed from a cache rather than
recomputed. Generation stops with exactly ``n_subpopulations`` distinct proper subpopulations,
or with fewer and a notice when 1,000 consecutive paths (or 50 per requested subpopulation in
all) add nothing new. Nominal covariates with more than 1,000 categories (identifiers, free
text) are left out with a notice: their descriptions would list thousands of categories.

Missing values (one rule for the whole library)
-----------------------------------------------
A missing covariate value is a value of its own that sorts after every observed value (NULLS
LAST). Hence it satisfies ``>``, ``>=``, ``!=``, ``not in`` and ``is missing`` and fails ``<``,
``<=``, ``==``, ``in`` and ``is not missing``. In Algorithm 1 "missing" counts as one more distinct
value (the largest), so the "at or above the median" side keeps the missing rows. SQL
translations: ``x >= v`` becomes ``(x >= v OR x IS NULL)``, ``x != v`` becomes
``(x <> v OR x IS NULL)``, ``x NOT IN (...)`` becomes ``(x NOT IN (...) OR x IS NULL)``; ``<``,
``<=``, ``=`` and ``IN`` need nothing extra (:func:`conditions_sql` writes them).

Filter language
---------------
A conjunction of clauses joined by ``and`` (or ``&``)::

    age >= 40 and sex == "Female"
    occupation in {"Sales", "Tech-support"} and `capital gain` > 0
    hours_per_week < 45 and workclass is not missing

Columns are bare names (letters, digits, ``_``, ``.``, ``-``) or back-quoted; values are numbers
(``inf`` and ``-inf`` included), ``true``/``false``, quoted strings or bare words; operators
``< <= > >= == = != <> ≤ ≥ ≠``, ``in``, ``not in``, ``is missing``, ``is not missing``. The
text is tokenised and parsed here; nothing is passed to ``eval`` or ``pandas.query``. Errors
point at the offending token.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; Section 2.3 and Algorithm 1.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io import Predictions

__all__ = [
    "MISSING_RULE",
    "OPERATORS",
    "Condition",
    "Subpopulation",
    "SubpopulationSet",
    "conditions_sql",
    "describe_conditions",
    "filter_subpopulation",
    "full_population",
    "generate_subpopulations",
    "group_subpopulations",
    "parse_filter",
    "select_rows",
]

MISSING_RULE = (
    "A missing covariate value is a value of its own that sorts after every observed value "
    "(NULLS LAST): it satisfies '>', '>=', '!=', 'not in' and 'is missing', and fails '<', '<=', "
    "'==', 'in' and 'is not missing'. In SQL: x >= v -> (x >= v OR x IS NULL); x != v -> "
    "(x <> v OR x IS NULL); x NOT IN (...) -> (x NOT IN (...) OR x IS NULL)."
)
"""The one documented rule for missing covariate values (engines must reproduce it exactly)."""

OPERATORS = ("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is missing", "is not missing")

MAX_IDLE_PATHS = 1000
"""Generation gives up after this many consecutive paths that add no new subpopulation."""

MAX_PATHS_PER_SUBPOPULATION = 50
MAX_NOMINAL_CATEGORIES = 1000
"""Nominal covariates with more categories are left out of Algorithm 1 (with a notice)."""
MAX_STALLED_STEPS = 64
"""A path ends after this many consecutive splits that do not shrink the set."""


@dataclass(frozen=True, slots=True)
class Condition:
    """One split or filter clause: ``column op value``.

    Attributes
    ----------
    column : str
    op : str
        One of :data:`OPERATORS`.
    value : float, int, bool, str, pandas.Timestamp, tuple or None
        A number (ordinal), a category string (nominal ``==``/``!=``), a tuple of values for
        ``in``/``not in``, a Timestamp for datetime covariates, None for the missing tests.
    """

    column: str
    op: str
    value: float | int | str | tuple | None = None

    def __str__(self) -> str:
        return describe_conditions((self,))


@dataclass(frozen=True, slots=True, eq=False)
class Subpopulation:
    """A subpopulation: its path (a conjunction of conditions), description and members.

    Attributes
    ----------
    id : int
        0 for the full population.
    depth : int
        Number of splits of Algorithm 1 (0 for the full population, user groups and filters).
    conditions : tuple of Condition
        Conjunction; empty for the full population.
    description : str
        The conditions in words, re-parseable by :func:`parse_filter`.
    index : ndarray of int32 (int64 beyond 2**31 rows)
        Sorted positions of the members in the score order of the predictions (read-only).
    parent : int or None
        Id of the subpopulation this one was split from (Algorithm 1 only).
    """

    id: int
    depth: int
    conditions: tuple[Condition, ...]
    description: str
    index: np.ndarray
    parent: int | None = None

    @property
    def size(self) -> int:
        """Number of members."""
        return int(self.index.size)


@dataclass(frozen=True, slots=True, eq=False)
class SubpopulationSet:
    """Generated subpopulations: ``subpopulations[0]`` is the full population.

    Attributes
    ----------
    subpopulations : tuple of Subpopulation
    notice : str or None
        Why fewer than the requested number were generated (None when all were).
    seed : int
    min_size : int
    n_requested : int
    covariates : tuple of str
    n_paths : int
        Random paths drawn.
    """

    subpopulations: tuple[Subpopulation, ...]
    notice: str | None
    seed: int
    min_size: int
    n_requested: int
    covariates: tuple[str, ...]
    n_paths: int

    def __len__(self) -> int:
        return len(self.subpopulations)

    def __iter__(self):
        return iter(self.subpopulations)

    def __getitem__(self, item: int) -> Subpopulation:
        return self.subpopulations[item]


# --------------------------------------------------------------------------------------------
# Column access shared by selection and generation (one rule for values and missingness)


def _index_dtype(n: int) -> type:
    """Member positions are int32 when they fit (half the memory of int64), else int64."""
    return np.int32 if n < 2**31 - 1 else np.int64


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


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
    pred.require_covariate(column, " in the condition")
    if op not in OPERATORS:
        raise ValidationError(
            f"unknown operator {op!r} in a condition on {column!r}; use one of "
            f"{', '.join(OPERATORS)}.",
            column=column,
        )
    series = pred.covariates[column]
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


# --------------------------------------------------------------------------------------------
# The filter language: tokenizer and recursive-descent parser


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # name, quoted_name, string, number, op, punct, end
    text: str  # the value (unescaped for strings/quoted names)
    start: int
    end: int


_OPERATOR_TOKENS = ("<=", ">=", "==", "!=", "<>", "&&", "≤", "≥", "≠", "<", ">", "=", "&")
_NUMBER = re.compile(
    r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]inf(?:inity)?(?![A-Za-z0-9_.\-])",
    re.IGNORECASE,
)
_INFINITY = frozenset({"inf", "infinity"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_OP_CANONICAL = {"<": "<", "<=": "<=", "≤": "<=", ">": ">", ">=": ">=", "≥": ">=",
                 "==": "==", "=": "==", "!=": "!=", "<>": "!=", "≠": "!="}


def _filter_error(expression: str, start: int, end: int, problem: str, column: str | None = None):
    width = max(end - start, 1)
    pointer = " " * start + "^" * width
    return ValidationError(
        f"filter: {problem} (at position {start}):\n  {expression}\n  {pointer}", column=column
    )


def _tokenize(expression: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(expression)
    while i < n:
        ch = expression[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "\"'":
            j, chars = i + 1, []
            while j < n and expression[j] != ch:
                if expression[j] == "\\" and j + 1 < n:
                    j += 1
                chars.append(expression[j])
                j += 1
            if j >= n:
                raise _filter_error(expression, i, n, f"unterminated string starting with {ch}")
            tokens.append(_Token("string", "".join(chars), i, j + 1))
            i = j + 1
            continue
        if ch == "`":
            j, chars = i + 1, []
            while j < n:
                if expression[j] == "`":
                    if j + 1 < n and expression[j + 1] == "`":
                        chars.append("`")
                        j += 2
                        continue
                    break
                chars.append(expression[j])
                j += 1
            if j >= n:
                raise _filter_error(expression, i, n, "unterminated `quoted column name`")
            tokens.append(_Token("quoted_name", "".join(chars), i, j + 1))
            i = j + 1
            continue
        if ch in "{}()[],":
            tokens.append(_Token("punct", ch, i, i + 1))
            i += 1
            continue
        number = _NUMBER.match(expression, i)
        if number and (ch.isdigit() or ch == "." or (
            ch in "+-" and (not tokens or tokens[-1].kind in ("op", "punct")))
        ):
            tokens.append(_Token("number", number.group(), i, number.end()))
            i = number.end()
            continue
        operator = next((op for op in _OPERATOR_TOKENS if expression.startswith(op, i)), None)
        if operator:
            tokens.append(_Token("op", operator, i, i + len(operator)))
            i += len(operator)
            continue
        name = _NAME.match(expression, i)
        if name:
            tokens.append(_Token("name", name.group(), i, name.end()))
            i = name.end()
            continue
        raise _filter_error(expression, i, i + 1, f"unexpected character {ch!r}")
    tokens.append(_Token("end", "", n, n + 1))
    return tokens


class _Parser:
    def __init__(self, expression: str, kinds: Mapping[str, str], pred: Predictions | None):
        self.expression = expression
        self.tokens = _tokenize(expression)
        self.position = 0
        self.kinds = kinds
        self.pred = pred

    def peek(self) -> _Token:
        return self.tokens[self.position]

    def take(self) -> _Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def error(self, token: _Token, problem: str, column: str | None = None) -> ValidationError:
        return _filter_error(self.expression, token.start, token.end, problem, column)

    def keyword(self, token: _Token, *words: str) -> bool:
        return token.kind == "name" and token.text.lower() in words

    def parse(self) -> tuple[Condition, ...]:
        if self.peek().kind == "end":
            raise self.error(self.peek(), "empty filter: write a condition such as age >= 40")
        conditions = self.conjunction()
        token = self.peek()
        if token.kind != "end":
            if self.keyword(token, "or") or token.text in ("|", "||"):
                raise self.error(
                    token, "'or' is not supported: a subpopulation is a conjunction of conditions "
                    "joined by 'and'"
                )
            raise self.error(
                token, f"expected 'and' or the end of the filter, found {token.text!r}"
            )
        return tuple(conditions)

    def conjunction(self) -> list[Condition]:
        conditions = self.clause()
        while True:
            token = self.peek()
            if self.keyword(token, "and") or (token.kind == "op" and token.text in ("&", "&&")):
                self.take()
                conditions.extend(self.clause())
            else:
                return conditions

    def clause(self) -> list[Condition]:
        token = self.peek()
        if token.kind == "punct" and token.text == "(":
            self.take()
            inner = self.conjunction()
            closing = self.take()
            if closing.text != ")" or closing.kind != "punct":
                raise self.error(closing, f"expected ')' to close the '(' at position "
                                          f"{token.start}, found {closing.text or 'the end'!r}")
            return inner
        if self.keyword(token, "not"):
            raise self.error(token, "'not' must follow a column name ('x not in {...}', "
                                    "'x is not missing'); negate a comparison with != instead")
        column = self.column()
        kind = self.kinds[column]
        token = self.take()
        if token.kind == "op" and token.text in _OP_CANONICAL:
            op = _OP_CANONICAL[token.text]
            value_token = self.take()
            if kind == "nominal" and op not in ("==", "!="):
                raise self.error(
                    token, f"column {column!r} is nominal (unordered categories); use ==, !=, "
                           "in or not in", column)
            return [Condition(column, op, self.value(value_token, column))]
        if self.keyword(token, "in"):
            return [Condition(column, "in", self.items(column))]
        if self.keyword(token, "not"):
            after = self.take()
            if not self.keyword(after, "in"):
                raise self.error(after, "expected 'in' after 'not'")
            return [Condition(column, "not in", self.items(column))]
        if self.keyword(token, "is"):
            after = self.take()
            negated = self.keyword(after, "not")
            if negated:
                after = self.take()
            if not self.keyword(after, "missing", "null", "na", "none"):
                raise self.error(after, "expected 'missing' after 'is' / 'is not'")
            return [Condition(column, "is not missing" if negated else "is missing")]
        found = token.text or "the end of the filter"
        raise self.error(token, f"expected an operator (<, <=, >, >=, ==, !=, in, not in, is "
                                f"missing) after {column!r}, found {found!r}", column)

    def column(self) -> str:
        token = self.take()
        if token.kind == "quoted_name" or (
            token.kind == "name" and token.text.lower() not in _KEYWORDS
        ):
            name = token.text
            if name in self.kinds:
                return name
            close = difflib.get_close_matches(name, list(self.kinds), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else (
                f"; covariates are {', '.join(map(repr, list(self.kinds)[:12]))}"
                + (", ..." if len(self.kinds) > 12 else ""))
            raise self.error(token, f"unknown column {name!r}{hint}", name)
        found = token.text or "the end of the filter"
        raise self.error(token, f"expected a column name, found {found!r}")

    def items(self, column: str) -> tuple:
        opening = self.take()
        closers = {"{": "}", "(": ")", "[": "]"}
        if opening.kind != "punct" or opening.text not in closers:
            raise self.error(opening, "expected a set of values such as {\"a\", \"b\"}", column)
        values = []
        while True:
            token = self.take()
            if token.kind == "punct" and token.text == closers[opening.text] and values:
                break
            values.append(self.value(token, column))
            separator = self.take()
            if separator.kind == "punct" and separator.text == closers[opening.text]:
                break
            if not (separator.kind == "punct" and separator.text == ","):
                raise self.error(separator, f"expected ',' or {closers[opening.text]!r} in the "
                                            "set of values", column)
        return tuple(dict.fromkeys(values))

    def value(self, token: _Token, column: str):
        kind = self.kinds[column]
        series = None if self.pred is None else self.pred.covariates[column]
        if token.kind not in ("number", "string", "name"):
            found = token.text or "the end of the filter"
            raise self.error(token, f"expected a value for {column!r}, found {found!r}", column)
        if kind == "nominal":
            text = token.text
            if series is not None:
                categories = _categories(series)
                if text not in categories:
                    close = difflib.get_close_matches(text, categories, n=3)
                    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else (
                        f"; categories are {', '.join(map(repr, categories[:12]))}"
                        + (", ..." if len(categories) > 12 else ""))
                    raise self.error(token, f"column {column!r} has no category {text!r}{hint}",
                                     column)
            return text
        if series is not None and _is_bool(series):
            lowered = token.text.lower()
            if lowered in ("true", "1", "1.0"):
                return True
            if lowered in ("false", "0", "0.0"):
                return False
            raise self.error(token, f"column {column!r} is boolean; expected true or false, "
                                    f"found {token.text!r}", column)
        if (series is not None and _is_datetime(series)) or (
            series is None and token.kind == "string"
        ):
            try:
                return pd.Timestamp(token.text)
            except (ValueError, TypeError):
                raise self.error(token, f"column {column!r} holds dates; {token.text!r} is not a "
                                        "date (write it like \"2024-01-31\")", column) from None
        if token.kind == "number":
            text = token.text
            return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
        if self.keyword(token, *_INFINITY):  # an infinite covariate value is a split point too
            return float("inf")
        if self.keyword(token, "true", "false"):
            return token.text.lower() == "true"
        raise self.error(token, f"column {column!r} is numeric; expected a number, found "
                                f"{token.text!r}", column)


def parse_filter(
    expression: str, pred_or_kinds: Predictions | Mapping[str, str]
) -> tuple[Condition, ...]:
    """Parse a filter expression into a conjunction of :class:`Condition` objects.

    Parameters
    ----------
    expression : str
        For example ``age >= 40 and sex == "Female"`` or
        ``occupation in {"Sales", "Tech-support"}`` (see the module docstring for the grammar).
    pred_or_kinds : Predictions or mapping of column name to "ordinal"/"nominal"
        The known columns. With predictions, categories, booleans and dates are checked too.

    Returns
    -------
    tuple of Condition

    Raises
    ------
    ValidationError
        Naming the problem and pointing at the offending token.

    Examples
    --------
    >>> parse_filter('age >= 40 and sex == "Female"', {"age": "ordinal", "sex": "nominal"})
    (Condition(column='age', op='>=', value=40), Condition(column='sex', op='==', value='Female'))
    """
    if isinstance(pred_or_kinds, Predictions):
        pred: Predictions | None = pred_or_kinds
        kinds: Mapping[str, str] = dict(pred_or_kinds.covariate_kinds)
    else:
        pred, kinds = None, dict(pred_or_kinds)
    if not isinstance(expression, str):
        raise ValidationError(f"filter: expected text, got {type(expression).__name__}.")
    if expression.strip().lower() == "full population":
        return ()
    return _Parser(expression, kinds, pred).parse()


def filter_subpopulation(pred: Predictions, expression: str, *, id: int = 1) -> Subpopulation:
    """One ad-hoc subpopulation from a filter expression (depth 0).

    Raises
    ------
    ValidationError
        Bad expressions, or an expression that selects no rows.
    """
    conditions = parse_filter(expression, pred)
    index = select_rows(pred, conditions)
    if index.size == 0:
        raise ValidationError(f"filter {expression!r} selects none of the {pred.n:,} rows.")
    return Subpopulation(id, 0, conditions, describe_conditions(conditions), index)


def full_population(pred: Predictions) -> Subpopulation:
    """Subpopulation 0: every row."""
    index = np.arange(pred.n, dtype=_index_dtype(pred.n))
    return Subpopulation(0, 0, (), "full population", _readonly(index))


# --------------------------------------------------------------------------------------------
# User groups


def group_subpopulations(
    pred: Predictions, columns: Sequence[str], *, first_id: int = 1
) -> tuple[Subpopulation, ...]:
    """User-defined groups as subpopulations (depth 0, ids from ``first_id``).

    A boolean (or 0/1) column is one group (its true rows); a categorical column gives one group
    per level present (and one for missing values).

    Raises
    ------
    ValidationError
        Unknown columns, or numeric columns that are not 0/1 (use a filter such as
        ``age >= 40`` instead).
    """
    groups: list[Subpopulation] = []
    for column in columns:
        if column not in pred.covariates.columns:
            raise ValidationError(
                f"group column {column!r} is not a covariate; covariates are "
                f"{', '.join(map(repr, pred.covariates.columns[:12]))}.",
                column=column,
            )
        series = pred.covariates[column]
        if _is_nominal(series):
            condition_sets = [(Condition(column, "==", name),) for name in _categories(series)]
            if series.isna().any():
                condition_sets.append((Condition(column, "is missing"),))
        elif _is_bool(series):
            condition_sets = [(Condition(column, "==", True),)]
        elif pd.api.types.is_numeric_dtype(series) and set(
            np.unique(series.dropna().to_numpy(dtype=float))
        ) <= {0.0, 1.0}:
            condition_sets = [(Condition(column, "==", 1),)]
        else:
            raise ValidationError(
                f"group column {column!r} is neither boolean (0/1) nor categorical; describe "
                f"the group with a filter instead (for example '{column} >= ...').",
                column=column,
            )
        for conditions in condition_sets:
            index = select_rows(pred, conditions)
            if index.size:
                groups.append(Subpopulation(
                    first_id + len(groups), 0, conditions, describe_conditions(conditions), index
                ))
    return tuple(groups)


# --------------------------------------------------------------------------------------------
# Algorithm 1


_MISSING = object()


@dataclass(slots=True, eq=False)
class _Column:
    """A covariate prepared once for fast splitting."""

    name: str
    kind: str                   # "ordinal", "nominal" or "bool"
    mode: str                   # "codes" or "distinct" (ordinal floats, all observed distinct)
    data: np.ndarray            # int32 codes (missing = levels) or float64 keys (NaN missing)
    levels: int                 # distinct observed values (codes mode)
    values: object              # sorted distinct observed values (codes) or categories (nominal)
    has_missing: bool
    datetime_tz: object = None
    is_datetime: bool = False


def _prepare_column(name: str, series: pd.Series, kind: str) -> _Column:
    missing = series.isna().to_numpy()
    has_missing = bool(missing.any())
    if _is_nominal(series):
        categories = _categories(series)
        order = np.argsort(np.array(categories, dtype=object), kind="stable")
        rank = np.empty(len(categories), dtype=np.int32)
        rank[order] = np.arange(len(categories), dtype=np.int32)
        raw = series.cat.codes.to_numpy().astype(np.int64)
        codes = np.where(raw < 0, len(categories), rank[np.maximum(raw, 0)]).astype(np.int32)
        sorted_categories = tuple(categories[i] for i in order)
        return _Column(name, "nominal", "codes", codes, len(categories), sorted_categories,
                       has_missing)
    if _is_bool(series):
        codes = np.where(missing, 2, series.to_numpy(dtype=float, na_value=0.0)).astype(np.int32)
        return _Column(name, "bool", "codes", codes, 2, np.array([False, True]), has_missing)
    keys, missing = _ordinal_keys(series)
    observed = keys[~missing]
    if _is_datetime(series):
        uniques, inverse = np.unique(observed, return_inverse=True)
        codes = np.full(keys.size, uniques.size, dtype=np.int32)
        codes[~missing] = inverse
        return _Column(name, "ordinal", "codes", codes, uniques.size, uniques, has_missing,
                       datetime_tz=series.dt.tz, is_datetime=True)
    fast = _decimal_codes(observed)
    if fast is not None:
        observed_codes, uniques = fast
        codes = np.full(keys.size, uniques.size, dtype=np.int32)
        codes[~missing] = observed_codes
        return _Column(name, "ordinal", "codes", codes, uniques.size, uniques, has_missing)
    ordered = np.sort(observed)
    new_value = np.empty(ordered.size, dtype=bool)
    new_value[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_value[1:])
    uniques = ordered[new_value]
    if uniques.size == observed.size and uniques.size > 4096:
        data = np.where(missing, np.nan, keys) if has_missing else keys
        return _Column(name, "ordinal", "distinct", data, uniques.size, None, has_missing)
    codes = np.full(keys.size, uniques.size, dtype=np.int32)
    scale = _decimal_scale(uniques, keys.size)
    if scale is not None:  # integers, or decimals with few digits: codes by table lookup
        scaled = np.round(uniques * scale)
        offset = scaled[0]
        table = np.zeros(int(scaled[-1] - offset) + 1, dtype=np.int32)
        table[(scaled - offset).astype(np.int64)] = np.arange(uniques.size, dtype=np.int32)
        codes[~missing] = table[(np.round(observed * scale) - offset).astype(np.int64)]
    elif uniques.size <= 65536:
        factor_codes, factor_uniques = pd.factorize(observed, sort=False)
        remap = np.searchsorted(uniques, factor_uniques).astype(np.int32)
        codes[~missing] = remap[factor_codes]
    else:
        codes[~missing] = np.searchsorted(uniques, observed).astype(np.int32)
    return _Column(name, "ordinal", "codes", codes, uniques.size, uniques, has_missing)


def _decimal_codes(observed: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Codes and sorted distinct values without sorting, for integers and short decimals.

    When every value equals ``round(value * 10**d) / 10**d`` (d ≤ 6) and the scaled values
    span a small range, the distinct values are found by counting (O(n)); the map is exact and
    monotone, so the codes rank the values exactly as a sort would.
    """
    n = observed.size
    if n == 0:
        return None
    sample = observed[:1000]
    if not np.isfinite(sample).all():
        return None
    low, high = float(observed.min()), float(observed.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    for digits in range(7):
        scale = 10.0**digits
        if (high - low) * scale >= 4 * n + 65536:
            return None
        scaled_sample = np.round(sample * scale)
        if not np.array_equal(scaled_sample / scale if digits else scaled_sample, sample):
            continue
        scaled = np.round(observed * scale)
        if not np.array_equal(scaled / scale if digits else scaled, observed):
            return None
        offset = scaled.min()
        shifted = (scaled - offset).astype(np.int64)
        present = np.zeros(int(shifted.max()) + 1, dtype=bool)
        present[shifted] = True
        table = (np.cumsum(present, dtype=np.int64) - 1).astype(np.int32)
        steps = np.flatnonzero(present).astype(float) + offset
        uniques = steps / scale if digits else steps
        return table[shifted], uniques
    return None


def _decimal_scale(uniques: np.ndarray, n: int) -> float | None:
    """Find a power of ten mapping the distinct values to distinct integers in a small range.

    The map ``round(value * scale)`` is monotone; when it is also injective on the distinct
    values it ranks them exactly, so codes come from a lookup table instead of a hash or sort.
    """
    if uniques.size == 0 or not np.isfinite(uniques[[0, -1]]).all():
        return None
    for digits in range(7):
        scale = 10.0**digits
        scaled = np.round(uniques * scale)
        if scaled[-1] - scaled[0] >= 4 * n + 65536:
            return None
        if np.all(np.diff(scaled) > 0):  # injective on the distinct values
            return scale
    return None


def _median_code(sub: np.ndarray, levels: int) -> tuple[int, int, np.ndarray | None]:
    """Code of the split point and the number of distinct codes (plus counts when computed)."""
    size = sub.size
    if levels + 1 <= 4 * size + 1024:
        counts = np.bincount(sub, minlength=levels + 1)
        present = np.flatnonzero(counts)
        return int(present[present.size // 2]), present.size, counts
    ordered = np.sort(sub)
    distinct = np.empty(size, dtype=bool)
    distinct[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=distinct[1:])
    values = ordered[distinct]
    return int(values[values.size // 2]), values.size, None


@dataclass(slots=True, eq=False)
class _Node:
    index: np.ndarray
    conditions: tuple[Condition, ...]
    depth: int
    id: int = -1
    children: dict = field(default_factory=dict)
    splits: dict = field(default_factory=dict)


class _Generator:
    def __init__(self, pred: Predictions, columns: list[_Column], min_size: int):
        self.pred = pred
        self.columns = columns
        self.min_size = min_size
        self.by_membership: dict[tuple, list[_Node]] = {}
        self.columns_by_name = {c.name: c for c in columns}
        n = pred.n  # work buffers reused by every split (no fresh pages per split)
        self.codes_buffer = np.empty(n, dtype=np.int32)
        self.float_buffer = np.empty(n if any(c.mode == "distinct" for c in columns) else 0)
        self.order_buffer = np.empty_like(self.float_buffer)
        self.mask_buffer = np.empty(n, dtype=bool)

    def take(self, column: _Column, index: np.ndarray) -> np.ndarray:
        """Gather the column at the members into a work buffer."""
        if index.size == column.data.size:  # the full population: nothing to gather
            return column.data
        buffer = self.float_buffer if column.mode == "distinct" else self.codes_buffer
        return np.take(column.data, index, out=buffer[: index.size], mode="clip")

    # -- membership bookkeeping
    @staticmethod
    def key(index: np.ndarray) -> tuple:
        return (index.size, int(index[0]), int(index[-1]), int(index.sum(dtype=np.int64)))

    def known(self, index: np.ndarray) -> _Node | None:
        for node in self.by_membership.get(self.key(index), ()):
            if np.array_equal(node.index, index):
                return node
        return None

    def remember(self, node: _Node) -> None:
        self.by_membership.setdefault(self.key(node.index), []).append(node)

    # -- one split
    def split(self, node: _Node, j: int, side: int, ranks: list) -> tuple[str, _Node | None]:
        """Split ``node`` on covariate ``j``: ("small"|"same"|"old"|"new", node)."""
        column = self.columns[j]
        if column.kind == "nominal":
            return self.split_nominal(node, j, side, ranks[j])
        cache_key = (j, side)
        if cache_key in node.children:
            return node.children[cache_key]
        sub = None
        info = node.splits.get(j)
        if info is None:
            threshold, n_lower, sub = self.split_point(node, column)
            node.splits[j] = (threshold, n_lower)
        else:
            threshold, n_lower = info
        n = node.index.size
        n_child = n_lower if side == 0 else n - n_lower
        if n_child < self.min_size:
            result = ("small", None)
        elif n_child == n:
            result = ("same", node)
        else:
            if sub is None:
                sub = self.take(column, node.index)
            mask = self.mask_buffer[: sub.size]
            if threshold is None:  # the split point is "missing": below it = observed
                np.isnan(sub, out=mask)
                np.logical_not(mask, out=mask)
            else:
                np.less(sub, threshold, out=mask)
            if side == 1:
                np.logical_not(mask, out=mask)
            index = np.compress(mask, node.index)
            condition = self.ordinal_condition(column, threshold, side)
            result = self.child(node, index, condition)
        node.children[cache_key] = ("old", result[1]) if result[0] == "new" else result
        return result

    def split_point(self, node: _Node, column: _Column) -> tuple:
        sub = self.take(column, node.index)
        if column.mode == "distinct":
            missing = np.isnan(sub) if column.has_missing else None
            n_missing = int(missing.sum()) if missing is not None else 0
            n_observed = sub.size - n_missing
            distinct = n_observed + (1 if n_missing else 0)
            t = distinct // 2
            if t >= n_observed:
                return None, n_observed, sub  # the split point is "missing"
            work = self.order_buffer[: sub.size]
            np.copyto(work, sub)
            work.partition(t)
            threshold = float(work[t])
            return threshold, t, sub
        threshold, _, counts = _median_code(sub, column.levels)
        if counts is not None:
            n_lower = int(counts[:threshold].sum())
        else:
            n_lower = int(np.count_nonzero(sub < threshold))
        return threshold, n_lower, sub

    def ordinal_condition(self, column: _Column, threshold: float, side: int) -> Condition:
        name = column.name
        if column.mode == "distinct":
            if threshold is None:
                return Condition(name, "is not missing" if side == 0 else "is missing")
            return Condition(name, "<" if side == 0 else ">=", threshold)
        threshold = int(threshold)
        if threshold >= column.levels:
            return Condition(name, "is not missing" if side == 0 else "is missing")
        if column.kind == "bool":  # split point True: below is False
            return Condition(name, "==" if side == 0 else "!=", False)
        value = column.values[threshold]
        if column.is_datetime:
            value = pd.Timestamp(int(value), tz=column.datetime_tz)
        elif isinstance(value, np.floating):
            value = float(value)
        return Condition(name, "<" if side == 0 else ">=", value)

    def split_nominal(self, node: _Node, j: int, side: int, rank: np.ndarray) -> tuple:
        column = self.columns[j]
        counts = node.splits.get(j)
        if counts is None:
            counts = np.bincount(self.take(column, node.index), minlength=column.levels + 1)
            node.splits[j] = counts
        present = np.flatnonzero(counts)
        present = present[np.argsort(rank[present], kind="stable")]
        t = present.size // 2
        lower = np.sort(present[:t])
        cache_key = (j, side, lower.tobytes())
        if cache_key in node.children:
            return node.children[cache_key]
        n_lower = int(counts[lower].sum())
        n = node.index.size
        n_child = n_lower if side == 0 else n - n_lower
        if n_child < self.min_size:
            result = ("small", None)
        elif n_child == n:
            result = ("same", node)
        else:
            table = np.zeros(column.levels + 1, dtype=bool)
            table[lower] = True
            if side == 1:
                table = ~table
            codes = self.take(column, node.index)
            mask = np.take(table, codes, out=self.mask_buffer[:n], mode="clip")
            index = np.compress(mask, node.index)
            names = tuple(column.values[c] for c in lower if c < column.levels)
            if t == present.size - 1 and present[-1] == column.levels:
                condition = Condition(column.name, "is not missing" if side == 0 else "is missing")
            else:
                condition = Condition(column.name, "in" if side == 0 else "not in", names)
            result = self.child(node, index, condition)
        node.children[cache_key] = ("old", result[1]) if result[0] == "new" else result
        return result

    def child(self, node: _Node, index: np.ndarray, condition: Condition) -> tuple:
        existing = self.known(index)
        if existing is not None:
            return ("old", existing)
        conditions = _simplify((*node.conditions, condition), self.columns_by_name)
        new = _Node(_readonly(index), conditions, node.depth + 1)
        self.remember(new)
        return ("new", new)


def _simplify(conditions: Sequence[Condition], columns: Mapping[str, _Column]) -> tuple:
    """Merge the conditions on each column into the fewest equivalent ones (exact on all rows)."""
    order: list[str] = []
    grouped: dict[str, list[Condition]] = {}
    for condition in conditions:
        if condition.column not in grouped:
            order.append(condition.column)
            grouped[condition.column] = []
        grouped[condition.column].append(condition)
    result: list[Condition] = []
    for name in order:
        column = columns[name]
        group = grouped[name]
        if column.kind in ("nominal", "bool"):
            result.extend(_simplify_set(column, group))
        else:
            result.extend(_simplify_range(column, group))
    return tuple(result)


def _simplify_set(column: _Column, group: list[Condition]) -> list[Condition]:
    universe = [False, True] if column.kind == "bool" else list(column.values)
    allowed = {*universe, _MISSING}
    for c in group:
        if c.op == "is missing":
            allowed &= {_MISSING}
        elif c.op == "is not missing":
            allowed.discard(_MISSING)
        elif c.op in ("in", "=="):
            items = c.value if c.op == "in" else (c.value,)
            allowed &= set(items)
        elif c.op in ("not in", "!="):
            items = c.value if c.op == "not in" else (c.value,)
            allowed -= set(items)
        else:  # not produced by Algorithm 1
            return list(group)
    name = column.name
    inside = [v for v in universe if v in allowed]
    outside = [v for v in universe if v not in allowed]
    with_missing = _MISSING in allowed
    if not inside:
        return [Condition(name, "is missing")] if with_missing else list(group)
    if not outside:
        return [] if with_missing or not column.has_missing else [Condition(name, "is not missing")]
    # "in inside" excludes missing; "not in outside" includes it: equal when nothing is missing
    use_in = not with_missing or (not column.has_missing and len(inside) <= len(outside))
    if use_in:
        if len(inside) == 1:
            return [Condition(name, "==", inside[0])]
        return [Condition(name, "in", tuple(inside))]
    if len(outside) == 1:
        return [Condition(name, "!=", outside[0])]
    return [Condition(name, "not in", tuple(outside))]


def _simplify_range(column: _Column, group: list[Condition]) -> list[Condition]:
    low = high = None
    missing: bool | None = None
    for c in group:
        if c.op == ">=":
            low = c.value if low is None else max(low, c.value)
        elif c.op == "<":
            high = c.value if high is None else min(high, c.value)
        elif c.op == "is missing":
            missing = True
        elif c.op == "is not missing":
            missing = False
        else:  # not produced by Algorithm 1
            return list(group)
    name = column.name
    if missing is True:
        return [Condition(name, "is missing")]
    result = []
    if low is not None:
        result.append(Condition(name, ">=", low))
    if high is not None:
        result.append(Condition(name, "<", high))
    elif missing is False and column.has_missing:
        result.append(Condition(name, "is not missing"))
    return result


def generate_subpopulations(
    pred: Predictions,
    *,
    covariates: Sequence[str] | None = None,
    n_subpopulations: int = 1000,
    min_size: int = 10,
    seed: int = 0,
) -> SubpopulationSet:
    r"""Random subpopulations by Algorithm 1 of [1] (random median splits of covariates).

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
        Covariates to split on (default: all of ``pred.covariates``).
    n_subpopulations : int, default 1000
        :math:`\ell`, the number of distinct proper subpopulations wanted.
    min_size : int, default 10
        :math:`m`: a split leaving fewer members ends the path (and is discarded).
    seed : int, default 0
        Same inputs and seed, same result (NumPy's PCG64 generator).

    Returns
    -------
    SubpopulationSet
        The full population (id 0) and up to ``n_subpopulations`` distinct subpopulations
        (ids 1, 2, ... in order of generation), each with its split path and description;
        ``notice`` says why there are fewer when the data cannot yield that many.

    Raises
    ------
    ValidationError
        Unknown covariates or invalid parameters.

    Notes
    -----
    See the module docstring: median of distinct values (missing counting as the largest),
    nominal categories in a fresh random order per path, no duplicate memberships, bounded
    effort. Members are kept as sorted index arrays in score order (never an
    :math:`\ell \times n` mask).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> pred = Predictions.from_arrays(rng.random(200), rng.integers(0, 2, 200),
    ...                                covariates={"x": rng.normal(size=200)})
    >>> subpops = generate_subpopulations(pred, n_subpopulations=5, seed=3)
    >>> len(subpops), subpops[0].description
    (6, 'full population')
    """
    names = list(pred.covariates.columns) if covariates is None else list(covariates)
    for name in names:
        if name not in pred.covariates.columns:
            raise ValidationError(
                f"covariate {name!r} is not among the loaded covariates "
                f"({', '.join(map(repr, pred.covariates.columns[:12]))}).",
                column=name,
            )
    for label, value, lowest in (("n_subpopulations", n_subpopulations, 0),
                                 ("min_size", min_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lowest:
            raise ValidationError(f"{label} must be an integer >= {lowest}, not {value!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, not {seed!r}.")
    names = list(dict.fromkeys(names))
    notes: list[str] = []
    many = [name for name in names if _is_nominal(pred.covariates[name])
            and len(pred.covariates[name].cat.categories) > MAX_NOMINAL_CATEGORIES]
    if many:
        names = [name for name in names if name not in many]
        notes.append(
            f"left out of Algorithm 1: {', '.join(map(repr, many))} (nominal with more than "
            f"{MAX_NOMINAL_CATEGORIES:,} categories; descriptions would list thousands of them). "
            "Declare such a covariate ordinal if its values are ordered."
        )
    full = full_population(pred)
    subpopulations: list[Subpopulation] = [full]
    if not names or n_subpopulations == 0:
        if n_subpopulations:
            notes.append("no covariates to split on: only the full population is used.")
        notice = " ".join(notes) or None
        return SubpopulationSet(tuple(subpopulations), notice, int(seed), int(min_size),
                                int(n_subpopulations), tuple(names), 0)
    columns = [
        _prepare_column(name, pred.covariates[name], pred.covariate_kinds.get(name, "ordinal"))
        for name in names
    ]
    generator = _Generator(pred, columns, int(min_size))
    root = _Node(full.index, (), 0, 0)
    generator.remember(root)
    rng = np.random.default_rng(int(seed))
    p = len(columns)
    nominal = [j for j, c in enumerate(columns) if c.kind == "nominal"]
    idle = paths = 0
    max_paths = MAX_PATHS_PER_SUBPOPULATION * n_subpopulations + MAX_IDLE_PATHS
    found = 0
    while found < n_subpopulations and idle < MAX_IDLE_PATHS and paths < max_paths:
        paths += 1
        ranks: list = [None] * p
        for j in nominal:
            levels = columns[j].levels
            rank = np.empty(levels + 1, dtype=np.int64)
            rank[:levels] = rng.permutation(levels)
            rank[levels] = levels  # missing stays last
            ranks[j] = rank
        node, stalled, added = root, 0, False
        while found < n_subpopulations:
            j = int(rng.integers(p))
            side = int(rng.integers(2))
            status, child = generator.split(node, j, side, ranks)
            if status == "small":
                break
            if status == "same":
                stalled += 1
                if stalled >= MAX_STALLED_STEPS:
                    break
                continue
            stalled = 0
            if status == "new":
                found += 1
                added = True
                child.id = found
                subpopulations.append(Subpopulation(
                    found, child.depth, child.conditions,
                    describe_conditions(child.conditions), child.index, parent=node.id,
                ))
            node = child
        idle = 0 if added else idle + 1
    if found < n_subpopulations:
        notes.append(
            f"only {found:,} distinct subpopulations with at least {min_size:,} members could be "
            f"generated from {p} covariate{'s' if p != 1 else ''} (asked for "
            f"{n_subpopulations:,}); stopped after {paths:,} random paths, the last "
            f"{idle:,} of which added nothing new."
        )
    notice = " ".join(notes) or None
    return SubpopulationSet(tuple(subpopulations), notice, int(seed), int(min_size),
                            int(n_subpopulations), tuple(names), paths)
