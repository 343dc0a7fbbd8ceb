"""The filter language: tokenizer, recursive-descent parser, ad-hoc subpopulations."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mcviz.core.conditions import is_datetime
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.settings import FILTER_MAX_CHARS
from mcviz.subpopulations.describe import _KEYWORDS, describe_conditions
from mcviz.subpopulations.model import Condition, Subpopulation
from mcviz.subpopulations.selection import (
    _categories,
    _is_bool,
    is_score_column,
    select_rows,
)
from mcviz.text import check_nesting

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
_DATE = re.compile(  # an ISO date or timestamp, unquoted as descriptions write it
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?(?![A-Za-z0-9_.:\-])"
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
        date = _DATE.match(expression, i) if ch.isdigit() else None
        if date:
            tokens.append(_Token("date", date.group(), i, date.end()))
            i = date.end()
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
        import pandas as pd

        kind = self.kinds[column]
        series = None if self.pred is None else (
            pd.Series(self.pred.score, copy=False) if is_score_column(self.pred, column)
            else self.pred.covariates[column])
        if token.kind not in ("number", "string", "name", "date"):
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
        if (series is not None and is_datetime(series)) or (
            series is None and token.kind in ("string", "date")
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
        kinds.setdefault(pred_or_kinds.score_column, "ordinal")  # score bands: "score >= 0.6"
    else:
        pred, kinds = None, dict(pred_or_kinds)
    if not isinstance(expression, str):
        raise ValidationError(f"filter: expected text, got {type(expression).__name__}.")
    if expression.strip().lower() == "full population":
        return ()
    if len(expression) > FILTER_MAX_CHARS:  # bounded before it is parsed
        raise ValidationError(f"filter: the expression has {len(expression):,} characters; at "
                              f"most {FILTER_MAX_CHARS:,} are accepted. Shorten it (for many "
                              "levels, name the few that matter).")
    # the parser recurses once per parenthesis: refuse deep nesting before it starts
    check_nesting(expression, what="filter: the expression", pairs="()[]{}", quotes="\"'`")
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
