r"""Subpopulation membership on integer codes, for engines that see the rows in batches.

Each covariate named in any condition is encoded once per batch into small integer *codes*
relative to the values the conditions mention (:class:`MembershipPlan`), so that every
condition becomes one integer comparison or one table lookup per row. A subpopulation whose
parent (``spec.parent``) comes earlier in the list is tested only for the conditions it adds to
its parent, on its parent's rows.

Ordinal columns (numbers, booleans, datetimes): with :math:`B_0 < \dots < B_{L-1}` the distinct
values in conditions, a value :math:`x` gets code :math:`2i` when :math:`B_{i-1} < x < B_i` and
:math:`2i + 1` when :math:`x = B_i`; a missing value gets :math:`2L + 1`, above every other
code. So ``x < B_i`` is ``code <= 2i``, ``x >= B_i`` is ``code > 2i`` (missing included, as
:data:`~mcviz.subpopulations.MISSING_RULE` says), and so on. Nominal columns: the index of the
category among the categories in conditions, :math:`L` for any other category and
:math:`L + 1` for missing. The codes mean the same in every batch, and the result is exactly
:func:`~mcviz.subpopulations.select_rows`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mcviz.core import kernels
from mcviz.core.conditions import OPERATORS, ordinal_keys, value_key
from mcviz.errors import ValidationError

__all__ = ["MembershipPlan", "last_run_start"]


def last_run_start(score: np.ndarray) -> int:
    """Index of the first row of the trailing tie run of a sorted batch (hold it back).

    Examples
    --------
    >>> last_run_start(np.array([0.1, 0.2, 0.3, 0.3]))
    2
    """
    if score.size == 0:
        return 0
    return int(np.searchsorted(score, score[-1], side="left"))


def _holds_numbers(series: pd.Series) -> bool:
    """True for integer and float columns (not booleans, not dates)."""
    return series.dtype.kind in "iuf" if isinstance(series.dtype, np.dtype) else (
        pd.api.types.is_integer_dtype(series) or pd.api.types.is_float_dtype(series))


def _number_text(value: str) -> bool:
    """True when ``value`` is a number's text, e.g. the level ``"42"`` of integer codes.

    A numeric column declared nominal (``--nominal code``) is searched in memory as text levels
    (the loader's ``astype("string")``: ``42`` -> ``"42"``); an engine reading the column as
    numbers compares ``code in ("3", "42")`` as ``code in (3, 42)``, the same rows.
    """
    try:
        return not np.isnan(float(value))
    except ValueError:
        return False


def _is_nominal(series: pd.Series) -> bool:
    return isinstance(series.dtype, pd.CategoricalDtype) or not (
        pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
        or pd.api.types.is_datetime64_any_dtype(series))


class MembershipPlan:
    """Compiled membership tests of a list of subpopulation specs.

    Parameters
    ----------
    specs : sequence
        Objects with ``id``, ``conditions`` (a tuple of
        :class:`~mcviz.subpopulations.Condition`) and ``parent`` (an id or None), e.g.
        :class:`~mcviz.engines.base.SubpopulationSpec` or
        :class:`~mcviz.subpopulations.Subpopulation`.
    """

    def __init__(self, specs: Sequence) -> None:
        self.specs = tuple(specs)
        position_of = {spec.id: k for k, spec in enumerate(self.specs)}
        self.parent: list[int | None] = []
        self.added: list[tuple] = []
        for k, spec in enumerate(self.specs):
            parent = position_of.get(getattr(spec, "parent", None))
            if parent is not None and parent < k:
                inherited = set(self.specs[parent].conditions)
                self.parent.append(parent)
                self.added.append(tuple(c for c in spec.conditions if c not in inherited))
            else:
                self.parent.append(None)
                self.added.append(tuple(spec.conditions))
            for condition in spec.conditions:
                if condition.op not in OPERATORS:
                    raise ValidationError(
                        f"unknown operator {condition.op!r} in a condition on "
                        f"{condition.column!r}; use one of {', '.join(OPERATORS)}.",
                        column=condition.column)
        self.columns = tuple(sorted({c.column for spec in self.specs for c in spec.conditions}))
        self._compiled: dict[str, tuple[str, np.ndarray]] | None = None
        last_child: dict[int, int] = {}
        for k, parent in enumerate(self.parent):
            if parent is not None:
                last_child[parent] = k
        self._last_child = last_child
        self._samples: dict[str, pd.Series] = {}  # an empty series of each column's dtype
        self._tests: dict = {}  # condition -> its compiled test (see _compile_test)
        self._flat: tuple | None = None  # the conditions as arrays (see _flat_plan)
        self._buffers = threading.local()  # each thread's members buffer (see _flat_members)

    def encode(self, columns: Mapping[str, object]) -> dict[str, np.ndarray]:
        """Codes of every column the conditions name, for one batch (see the module docstring).

        ``columns`` maps names to pandas Series, numpy arrays or pyarrow arrays of equal length.
        """
        codes = {}
        for name in self.columns:
            if name not in columns:
                raise ValidationError(f"a condition names column {name!r}, which the data "
                                      "do not have.", column=name)
            series = _as_series(columns[name])
            codes[name] = self._encode(name, series)
        return codes

    def members(self, columns: Mapping[str, object], n: int) -> list[np.ndarray]:
        """Sorted positions (within the batch of ``n`` rows) of each spec's members."""
        return self.members_from_codes(self.encode(columns), n)

    def members_from_codes(self, codes: Mapping[str, np.ndarray], n: int, *,
                           compiled: bool = False) -> list[np.ndarray] | kernels.FlatMembers:
        """As :meth:`members`, from codes of :meth:`encode` (e.g. a slice of the whole data's).

        A spec is tested only for the conditions it adds to its parent, on its parent's rows;
        a parent's rows are held only until its last child is done. ``compiled``: an engine's
        pass, where the compiled loop (:func:`mcviz.core._compiled.flat_members`, the same
        rows) runs when numba is installed and gives :class:`~mcviz.core.kernels.FlatMembers`
        held in a buffer of this thread's: valid until the plan's next compiled call in the
        same thread (an engine summarises a batch before it reads the next).
        """
        loops = kernels.loops(force=True) if compiled else None
        if loops is not None:
            return self._flat_members(loops, codes, n)
        everyone = np.arange(n, dtype=np.int64)
        out: list[np.ndarray] = []
        held: dict[int, np.ndarray] = {}
        for k in range(len(self.specs)):
            parent = self.parent[k]
            rows = everyone if parent is None else held[parent]
            for condition in self.added[k]:
                if rows.size == 0:
                    break
                if rows is everyone:  # every row: test the codes as they are (no gather)
                    rows = np.flatnonzero(self._test(condition, codes[condition.column]))
                    continue
                # np.take / np.compress: several times faster than fancy and boolean indexing
                rows = np.compress(self._test(condition, np.take(codes[condition.column], rows)),
                                   rows)
            out.append(rows)
            if k in self._last_child:
                held[k] = rows
            if parent is not None and self._last_child.get(parent) == k:
                del held[parent]
        return out

    def _flat_members(self, loops, codes: Mapping[str, np.ndarray], n: int) -> kernels.FlatMembers:
        """:meth:`members_from_codes` by the compiled loop: every condition a table lookup."""
        if self._flat is None:
            self._flat = self._flat_plan()
        parent, condition_start, condition_column, table_start, tables = self._flat
        stacked = np.empty((len(self.columns), n), dtype=np.int32)
        for c, name in enumerate(self.columns):
            stacked[c] = codes[name]
        buffer = getattr(self._buffers, "index", None)
        if buffer is None:
            buffer = np.empty(32 * n + 16, dtype=np.int32 if n < 2**31 else np.int64)
        buffer, total, start, length = loops.flat_members(
            stacked, parent, condition_start, condition_column, table_start, tables, n, buffer)
        self._buffers.index = buffer  # this thread's, used again by its next batch
        index = buffer[:total]
        return kernels.FlatMembers(index, start, length)

    def _flat_plan(self) -> tuple:
        """Return the conditions each spec adds as arrays: every test a table over the codes."""
        column_of = {name: c for c, name in enumerate(self.columns)}
        parent = np.array([-1 if p is None else p for p in self.parent], dtype=np.int64)
        condition_start = np.zeros(len(self.specs) + 1, dtype=np.int64)
        columns, tables, table_start, size = [], [], [], 0
        for k, added in enumerate(self.added):
            condition_start[k + 1] = condition_start[k] + len(added)
            for condition in added:
                table = self._table(condition)
                columns.append(column_of[condition.column])
                table_start.append(size)
                tables.append(table)
                size += table.size
        return (parent, condition_start, np.array(columns, dtype=np.int64),
                np.array(table_start, dtype=np.int64),
                np.concatenate(tables) if tables else np.zeros(1, dtype=bool))

    def _table(self, condition) -> np.ndarray:
        """Condition ``condition`` as a lookup: entry x says whether code x passes."""
        kind, cuts = self._compiled[condition.column]
        top = (cuts.size + 1) if kind == "nominal" else (2 * cuts.size + 1)  # missing: top
        self._test(condition, np.zeros(1, dtype=np.int32))  # compiles the test
        op, parameter = self._tests[condition]
        if op == "table":
            table = np.zeros(top + 1, dtype=bool)
            table[:parameter.size] = parameter[:top + 1]
            return table
        return np.asarray(op(np.arange(top + 1, dtype=np.int32), parameter), dtype=bool)

    # -- compilation ------------------------------------------------------------------------

    def _encode(self, name: str, series: pd.Series) -> np.ndarray:
        if self._compiled is None:
            self._compiled = {}
        nominal = _is_nominal(series)
        if name not in self._compiled:
            self._samples[name] = series.iloc[:0]
            self._compiled[name] = self._compile(name, series, nominal)
        kind, cuts = self._compiled[name]
        if kind == "nominal":
            if not isinstance(series.dtype, pd.CategoricalDtype):
                series = series.astype("string").astype("category")
            lookup = {value: i for i, value in enumerate(cuts.tolist())}
            categories = [str(c) for c in series.cat.categories]
            table = np.array([lookup.get(c, len(cuts)) for c in categories] + [len(cuts) + 1],
                             dtype=np.int32)
            return table[series.cat.codes.to_numpy()]  # code -1 (missing) -> last entry
        if nominal:
            raise ValidationError(f"column {name!r} holds text in one batch and numbers in "
                                  "another.", column=name)
        keys, missing = ordinal_keys(series)
        position = np.searchsorted(cuts, keys, side="left")
        codes = position.astype(np.int32)
        codes <<= 1  # 2 x (cuts below the key), + 1 when the key equals a cut
        if cuts.size:  # past the last cut the clipped take compares with a smaller cut: False
            codes += np.take(cuts, position, mode="clip") == keys
        np.putmask(codes, missing, 2 * cuts.size + 1)
        return codes

    def _compile(self, name: str, series: pd.Series, nominal: bool):
        conditions = [c for spec in self.specs for c in spec.conditions if c.column == name]
        values = [v for c in conditions if c.op not in ("is missing", "is not missing")
                  for v in (c.value if isinstance(c.value, tuple | list) else (c.value,))]
        if nominal:
            cuts = np.array(sorted({str(v) for v in values}), dtype=object)
            return "nominal", cuts
        numbers = _holds_numbers(series)
        for c in conditions:
            if c.op in ("in", "not in", "==", "!=", "<", "<=", ">", ">=") and any(
                    isinstance(v, str) and not (numbers and _number_text(v))
                    for v in (c.value if isinstance(c.value, tuple | list) else (c.value,))):
                raise ValidationError(
                    f"condition {c.column} {c.op} {c.value!r}: column {c.column!r} is numeric.",
                    column=c.column)
        keys = np.unique(np.array([value_key(series, v) for v in values]))
        return "ordinal", keys

    def _test(self, condition, codes: np.ndarray) -> np.ndarray:
        """Membership mask of ``condition`` on ``codes`` (its compiled form is cached)."""
        test = self._tests.get(condition)
        if test is None:
            test = self._tests[condition] = self._compile_test(condition)
        op, parameter = test
        if op == "table":
            return np.take(parameter, codes)  # several times faster than parameter[codes]
        return op(codes, parameter)

    def _compile_test(self, condition) -> tuple:
        """``("table", lookup)`` or ``(comparison ufunc, code)`` for one condition."""
        kind, cuts = self._compiled[condition.column]
        op = condition.op
        if kind == "nominal":
            top = cuts.size + 1  # missing
            if op in ("is missing", "is not missing"):
                return (np.equal if op == "is missing" else np.not_equal), top
            if op not in ("in", "==", "not in", "!="):
                raise ValidationError(
                    f"column {condition.column!r} is nominal; {op!r} needs an ordered "
                    "covariate (use ==, !=, in, not in).", column=condition.column)
            items = condition.value if op in ("in", "not in") else (condition.value,)
            if not isinstance(items, tuple | list):
                items = (items,)
            table = np.zeros(cuts.size + 2, dtype=bool)
            table[np.searchsorted(cuts, [str(v) for v in items])] = True
            return "table", (~table if op in ("not in", "!=") else table)
        top = 2 * cuts.size + 1
        if op in ("is missing", "is not missing"):
            return (np.equal if op == "is missing" else np.not_equal), top
        if op in ("in", "not in"):
            items = condition.value if isinstance(condition.value, tuple | list) else (
                condition.value,)
            table = np.zeros(top + 1, dtype=bool)
            table[2 * np.searchsorted(cuts, [self._key(condition.column, v) for v in items])
                  + 1] = True
            return "table", (table if op == "in" else ~table)
        i = int(np.searchsorted(cuts, self._key(condition.column, condition.value)))
        return {"<": (np.less_equal, 2 * i), "<=": (np.less, 2 * i + 2),
                ">": (np.greater_equal, 2 * i + 2), ">=": (np.greater, 2 * i),
                "==": (np.equal, 2 * i + 1), "!=": (np.not_equal, 2 * i + 1)}[op]

    def _key(self, column: str, value: object):
        sample = self._samples[column]
        return value_key(sample, value)


def _as_series(values: object) -> pd.Series:
    if isinstance(values, pd.Series):
        return values.reset_index(drop=True)
    if hasattr(values, "to_pandas"):  # pyarrow
        return values.to_pandas().reset_index(drop=True)
    return pd.Series(values)
