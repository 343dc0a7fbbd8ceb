"""Random subpopulations by Algorithm 1 of paper 000 (random median splits of covariates).

See :mod:`mcviz.subpopulations` for the rules (Section 2.3 refinements, missing values).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mcviz.core.conditions import is_datetime, ordinal_keys
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.settings import SubpopulationSettings
from mcviz.subpopulations.describe import describe_conditions, shortest_timestamp
from mcviz.subpopulations.model import (
    MAX_IDLE_PATHS,
    MAX_NOMINAL_CATEGORIES,
    MAX_PATHS_PER_SUBPOPULATION,
    MAX_STALLED_STEPS,
    Condition,
    Subpopulation,
    SubpopulationSet,
    _readonly,
    full_population,
)
from mcviz.subpopulations.selection import (
    _categories,
    _is_bool,
    _is_nominal,
    _require_covariates,
)

if TYPE_CHECKING:
    import pandas as pd

# --------------------------------------------------------------------------------------------
# Algorithm 1


_MISSING = object()


@dataclass(slots=True, eq=False)
class _Column:
    """A covariate prepared once for fast splitting."""

    name: str
    kind: str                   # "ordinal", "nominal" or "bool"
    mode: str                   # "codes" or "distinct" (ordinal floats, all observed distinct)
    data: np.ndarray            # int16/int32 codes (missing = levels) or float64 keys (NaN)
    levels: int                 # distinct observed values (codes mode)
    values: object              # sorted distinct observed values (codes) or categories (nominal)
    has_missing: bool
    datetime_tz: object = None
    is_datetime: bool = False
    counts: np.ndarray | None = None  # rows per code over the full population, when known


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
    keys, missing = ordinal_keys(series)
    if is_datetime(series):
        observed = keys[~missing] if has_missing else keys
        uniques, inverse = np.unique(observed, return_inverse=True)
        codes = np.full(keys.size, uniques.size, dtype=np.int32)
        codes[~missing] = inverse
        return _Column(name, "ordinal", "codes", codes, uniques.size, uniques, has_missing,
                       datetime_tz=series.dt.tz, is_datetime=True)
    return _number_column(name, keys, missing, has_missing)


def _number_column(name: str, keys: np.ndarray, missing: np.ndarray,
                   has_missing: bool, low: float | None = None) -> _Column:
    """Prepare an ordinal number column from its float64 keys (NaN where ``missing``).

    Row by row: each row's code (or key, in "distinct" mode) depends only on its own value and
    on the set of values, so the column built from rows in any order, then put in score order,
    is the one built from the rows in score order. ``low``: the smallest key, when known and
    nothing is missing.
    """
    observed = keys[~missing] if has_missing else keys  # (no copy when nothing is missing)
    fast = _decimal_codes(observed, None if has_missing else low)
    if fast is not None:
        codes, uniques, counts = fast  # (every row observed when nothing is missing)
        if has_missing:
            codes = np.full(keys.size, uniques.size, dtype=codes.dtype)
            codes[~missing] = fast[0]
        counts = np.append(counts, keys.size - observed.size)  # missing: the last code
        return _Column(name, "ordinal", "codes", codes, uniques.size, uniques, has_missing,
                       counts=counts)
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
    elif uniques.size <= 65536 and "pandas" in sys.modules:  # hashing: faster than a search
        import pandas as pd

        factor_codes, factor_uniques = pd.factorize(observed, sort=False)
        remap = np.searchsorted(uniques, factor_uniques).astype(np.int32)
        codes[~missing] = remap[factor_codes]
    else:
        codes[~missing] = np.searchsorted(uniques, observed).astype(np.int32)
    return _Column(name, "ordinal", "codes", codes, uniques.size, uniques, has_missing)


def _number_columns(pred: Predictions, numbers: Mapping[str, np.ndarray],
                    names: Sequence[str]) -> list[_Column]:
    """Columns from :meth:`Predictions.covariate_numbers` (input-row order), in score order.

    Built over the input rows, then each row's code (or key) is put in score order
    (:func:`_number_column`: the same column as from the DataFrame in score order).
    """
    columns = []
    for name in names:
        keys = numbers[name]
        low = float(np.min(keys)) if keys.size else None
        has_missing = low is not None and math.isnan(low)  # NaN propagates to the minimum
        missing = np.isnan(keys) if has_missing else np.zeros(keys.size, dtype=bool)
        column = _number_column(name, keys, missing, has_missing, low)
        column.data = np.take(column.data, pred.row)
        columns.append(column)
    return columns


def _decimal_codes(observed: np.ndarray,
                   low: float | None = None) -> tuple[np.ndarray, ...] | None:
    """Codes, sorted distinct values and their counts without sorting, for short decimals.

    When every value equals ``round(value * 10**d) / 10**d`` (d ≤ 6) and the scaled values
    span a small range, the distinct values are found by counting (O(n)); the map is exact and
    monotone, so the codes rank the values exactly as a sort would. ``low``: the minimum of
    ``observed`` when already known.
    """
    n = observed.size
    if n == 0:
        return None
    sample = observed[:1000]
    if not np.isfinite(sample).all():
        return None
    low = float(observed.min()) if low is None else low
    high = float(observed.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    for digits in range(7):
        scale = 10.0**digits
        if (high - low) * scale >= 4 * n + 65536:
            return None
        scaled_sample = np.round(sample * scale)
        if not np.array_equal(scaled_sample / scale if digits else scaled_sample, sample):
            continue
        if digits:
            scaled = np.multiply(observed, scale)  # in place from here: one array of n floats
            np.round(scaled, out=scaled)
        else:
            scaled = np.round(observed)
        if not np.array_equal(np.divide(scaled, scale) if digits else scaled, observed):
            return None
        offset = np.round(low * scale)  # rounding is monotone: the smallest and largest
        shifted = np.empty(n, dtype=np.int64)  # scaled values come from low and high
        np.subtract(scaled, offset, out=shifted, casting="unsafe")  # (integral: exact)
        del scaled
        counts = np.bincount(shifted, minlength=int(np.round(high * scale) - offset) + 1)
        present = counts > 0
        ranks = np.cumsum(present, dtype=np.int64) - 1
        # int16 codes (the missing code too) when they fit: half the bytes to gather
        table = ranks.astype(np.int16 if ranks[-1] + 2 < 2**15 else np.int32)
        steps = np.flatnonzero(present).astype(float) + offset
        uniques = steps / scale if digits else steps
        return np.take(table, shifted), uniques, counts[present]
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


def _median_code(sub: np.ndarray, levels: int,
                 counts: np.ndarray | None = None) -> tuple[int, int, np.ndarray | None]:
    """Code of the split point and the number of distinct codes (plus counts when computed).

    ``counts``: ``np.bincount(sub, minlength=levels + 1)`` when already known.
    """
    size = sub.size
    if counts is not None or levels + 1 <= 4 * size + 1024:
        if counts is None:
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
        self.codes_buffers = {dtype: np.empty(n, dtype=dtype) for dtype in
                              {c.data.dtype for c in columns if c.mode == "codes"}}
        self.float_buffer = np.empty(n if any(c.mode == "distinct" for c in columns) else 0)
        self.order_buffer = np.empty_like(self.float_buffer)
        self.mask_buffer = np.empty(n, dtype=bool)

    def take(self, column: _Column, index: np.ndarray) -> np.ndarray:
        """Gather the column at the members into a work buffer."""
        if index.size == column.data.size:  # the full population: nothing to gather
            return column.data
        buffer = self.float_buffer if column.mode == "distinct" else (
            self.codes_buffers[column.data.dtype])
        return np.take(column.data, index, out=buffer[: index.size], mode="clip")

    @staticmethod
    def members(mask: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Return the members ``index[mask]`` (the full population's: the mask's positions)."""
        if index.size == 0 or index[-1] != index.size - 1:
            return np.compress(mask, index)
        # index is 0, 1, ..., size - 1 (sorted and distinct): the positions themselves
        return np.flatnonzero(mask).astype(index.dtype, copy=False)

    # -- membership bookkeeping
    @staticmethod
    def key(index: np.ndarray) -> tuple:
        """Return the size, the ends and the sum of about 256 evenly spaced members.

        Equal memberships have equal keys; :meth:`known` compares the members themselves.
        """
        step = max(index.size // 256, 1)
        return (index.size, int(index[0]), int(index[-1]),
                int(index[::step].sum(dtype=np.int64)))

    def known(self, index: np.ndarray, key: tuple | None = None) -> _Node | None:
        for node in self.by_membership.get(self.key(index) if key is None else key, ()):
            if np.array_equal(node.index, index):
                return node
        return None

    def remember(self, node: _Node, key: tuple | None = None) -> None:
        self.by_membership.setdefault(self.key(node.index) if key is None else key,
                                      []).append(node)

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
        result = self.trivial(node, n_lower, side)
        if result is None:
            if sub is None:
                sub = self.take(column, node.index)
            mask = self.mask_buffer[: sub.size]
            if threshold is None:  # the split point is "missing": below it = observed
                np.isnan(sub, out=mask)
                if side == 0:
                    np.logical_not(mask, out=mask)
            elif side == 1 and column.mode == "codes":  # (codes: no NaN, >= is not <)
                np.greater_equal(sub, threshold, out=mask)
            else:
                np.less(sub, threshold, out=mask)
                if side == 1:
                    np.logical_not(mask, out=mask)
            index = self.members(mask, node.index)
            condition = self.ordinal_condition(column, threshold, side)
            result = self.child(node, index, condition)
        node.children[cache_key] = ("old", result[1]) if result[0] == "new" else result
        return result

    def trivial(self, node: _Node, n_lower: int, side: int) -> tuple | None:
        """("small", None) or ("same", node) when the split adds nothing, else None."""
        n = node.index.size
        n_child = n_lower if side == 0 else n - n_lower
        if n_child < self.min_size:
            return ("small", None)
        if n_child == n:
            return ("same", node)
        return None

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
        known = column.counts if node.index.size == column.data.size else None  # all rows
        threshold, _, counts = _median_code(sub, column.levels, known)
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
        if column.is_datetime:  # written as the coarsest instant that keeps the same rows
            import pandas as pd

            previous = column.values[threshold - 1] if threshold else None
            value = shortest_timestamp(
                pd.Timestamp(int(value), tz=column.datetime_tz),
                None if previous is None else pd.Timestamp(int(previous), tz=column.datetime_tz),
            )
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
        result = self.trivial(node, n_lower, side)
        if result is None:
            table = np.zeros(column.levels + 1, dtype=bool)
            table[lower] = True
            if side == 1:
                table = ~table
            codes = self.take(column, node.index)
            mask = np.take(table, codes, out=self.mask_buffer[:n], mode="clip")
            index = self.members(mask, node.index)
            names = tuple(column.values[c] for c in lower if c < column.levels)
            if t == present.size - 1 and present[-1] == column.levels:
                condition = Condition(column.name, "is not missing" if side == 0 else "is missing")
            else:
                condition = Condition(column.name, "in" if side == 0 else "not in", names)
            result = self.child(node, index, condition)
        node.children[cache_key] = ("old", result[1]) if result[0] == "new" else result
        return result

    def child(self, node: _Node, index: np.ndarray, condition: Condition) -> tuple:
        key = self.key(index)  # once for both look-ups
        existing = self.known(index, key)
        if existing is not None:
            return ("old", existing)
        conditions = _simplify((*node.conditions, condition), self.columns_by_name)
        new = _Node(_readonly(index), conditions, node.depth + 1)
        self.remember(new, key)
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


def _draw_paths(pred: Predictions, columns: list, full: Subpopulation, min_size: int,
                n_subpopulations: int, seed: int) -> tuple[list[Subpopulation], int, int, int]:
    """Walk random split paths until ``n_subpopulations`` are found or effort runs out.

    Returns the subpopulations (the full population first), how many were found, the paths
    drawn and the trailing paths that added nothing.
    """
    subpopulations: list[Subpopulation] = [full]
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
    return subpopulations, found, paths, idle


def generate_subpopulations(
    pred: Predictions,
    *,
    covariates: Sequence[str] | None = None,
    n_subpopulations: int = SubpopulationSettings.n_subpopulations,
    min_size: int = SubpopulationSettings.min_size,
    seed: int = SubpopulationSettings.seed,
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
    # Public-boundary validation with its messages, then the random paths (_draw_paths).
    names = list(pred.covariates.columns) if covariates is None else list(covariates)
    # plain number covariates straight from the file, before any DataFrame (the same columns)
    numbers = pred.covariate_numbers(names) if covariates is not None else None
    if numbers is None:
        _require_covariates(pred, names, "column")
    for label, value, lowest in (("n_subpopulations", n_subpopulations, 0),
                                 ("min_size", min_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lowest:
            raise ValidationError(f"{label} must be an integer >= {lowest}, not {value!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, not {seed!r}.")
    names = list(dict.fromkeys(names))
    notes: list[str] = []
    many = [] if numbers is not None else [
        name for name in names if _is_nominal(pred.covariates[name])
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
        return _result(subpopulations, notes, seed, min_size, n_subpopulations, names, 0)
    columns = _number_columns(pred, numbers, names) if numbers is not None else [
        _prepare_column(name, pred.covariates[name], pred.covariate_kinds.get(name, "ordinal"))
        for name in names
    ]
    numbers = None  # the float keys (8 bytes x rows x covariates): the members reuse that memory
    subpopulations, found, paths, idle = _draw_paths(
        pred, columns, full, int(min_size), int(n_subpopulations), int(seed))
    p = len(columns)
    if found < n_subpopulations:
        notes.append(
            f"only {found:,} distinct subpopulations with at least {min_size:,} members could be "
            f"generated from {p} covariate{'s' if p != 1 else ''} (asked for "
            f"{n_subpopulations:,}); stopped after {paths:,} random paths, the last "
            f"{idle:,} of which added nothing new."
        )
    return _result(subpopulations, notes, seed, min_size, n_subpopulations, names, paths)


def _result(subpopulations, notes, seed, min_size, requested, names, paths) -> SubpopulationSet:
    """Algorithm 1's result, built by keyword."""
    return SubpopulationSet(subpopulations=tuple(subpopulations), notice=" ".join(notes) or None,
                            seed=int(seed), min_size=int(min_size), n_requested=int(requested),
                            covariates=tuple(names), n_paths=paths)
