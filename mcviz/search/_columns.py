"""Covariates prepared once for the guided search: codes for screening, keys for exact masks.

A numeric (ordinal or datetime) covariate gets comparable keys (float64, NaN where missing) and
codes of up to ``RULES.numeric_bins`` bins cut at quantiles of the search rows (the candidate cut
points); the missing rows get a code of their own. A nominal or boolean covariate gets its level
codes (missing last). Every candidate condition is a :class:`Cut` that turns into
:class:`~mcviz.subpopulations.Condition` objects with exactly the members the filter language
gives them (the missing rule of :data:`~mcviz.subpopulations.MISSING_RULE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from mcviz.io import Predictions
from mcviz.io.columns import CovariateColumn
from mcviz.search.rules import RULES
from mcviz.subpopulations import Condition
from mcviz.subpopulations.describe import shortest_timestamp


@dataclass(slots=True, eq=False)
class Column:
    """One covariate prepared for the search.

    Attributes
    ----------
    name : str
    kind : {"numeric", "nominal"}
    codes : ndarray of int32, shape (n,)
        Bin (numeric) or level (nominal) code of every row; ``n_codes - 1`` means missing.
    n_codes : int
        Observed bins or levels, plus one for missing.
    keys : ndarray of float64 or None
        Numeric only: comparable values (NaN where missing).
    edges : ndarray or None
        Numeric only: the lower edge of bins 1..B-1 (bin j holds edges[j-1] <= x < edges[j]).
    levels : tuple
        Nominal only: the level of each code (strings, or False/True for booleans).
    has_missing : bool
        Missing anywhere in the data (decides the form of set conditions).
    datetime_tz : object
        For datetime covariates: the time zone (``is_datetime`` True).
    is_score : bool
        The score itself (conditions such as ``score >= 0.6``: where the model says 0.6+).
    ranges : Column or None
        For the level view of a whole-number column (:func:`integer_levels`): the column as
        ranges (its sets must beat the best range, :func:`~mcviz.search._screen.screen_column`).
    """

    name: str
    kind: str
    codes: np.ndarray
    n_codes: int
    keys: np.ndarray | None
    edges: np.ndarray | None
    levels: tuple
    has_missing: bool
    is_datetime: bool = False
    datetime_tz: object = None
    is_score: bool = False
    ranges: Column | None = None

    def value(self, key: float) -> object:
        """Return the condition value of a numeric key (a Timestamp for datetimes)."""
        if self.is_datetime:
            import pandas as pd

            stamp = pd.Timestamp(int(key), unit="ns")
            return stamp.tz_localize("UTC").tz_convert(self.datetime_tz) if self.datetime_tz \
                else stamp
        return float(key)


def prepare_columns(
    pred: Predictions, names: list[str], search_rows: np.ndarray
) -> tuple[list[Column], list[tuple[str, str]]]:
    """Prepare each covariate; return the columns and those left out, each with why.

    Left out: a nominal covariate of more than ``RULES.max_levels`` levels, and a numeric one
    holding infinite values (no bin edge or condition can bound them; ``mcviz variables``
    refuses to draw along it for the same reason), each ``(name, why)``.

    The covariates are read as numpy arrays (:meth:`~mcviz.io.Predictions.covariate_columns`:
    from a Parquet file without pandas when it can, else from the DataFrame; the same values).
    """
    columns, left_out, codes = [], [], []
    values = pred.covariate_columns(names)
    for name in names:
        value = values[name]
        if value.kind in ("nominal", "bool"):
            if len(value.levels) > RULES.max_levels:
                left_out.append((name, f"nominal with more than {RULES.max_levels:,} levels"))
                continue
            columns.append(_nominal(name, value))
        elif value.kind != "time" and (infinite := int(np.isinf(value.keys).sum())):
            left_out.append((name, f"{infinite:,} of {value.keys.size:,} rows infinite"))
        else:
            columns.append(_numeric(name, value, search_rows))
            view = integer_levels(columns[-1])
            if view is not None:
                codes.append(view)
    if pred.score_column not in pred.covariate_kinds:  # score bands: "where the model says"
        columns.append(_numeric_keys(pred.score_column, np.asarray(pred.score, dtype=float),
                                     search_rows, is_score=True))
    return columns + codes, left_out


def integer_levels(column: Column) -> Column | None:
    """The level view of a whole-number column of few values, or None.

    A numeric column whose values over all rows are whole numbers, 3 to ``RULES.code_levels``
    of them, is cut at every value (``RULES.distinct_bins`` is larger), so its bin codes are
    level codes: the view shares them (no copy) and names each level by its number; the search
    then offers ``code in {3, 11, 19}`` beside ``code >= 3`` (the held-out test judges the
    finding). Datetimes and the score are never viewed so; the two views are one covariate
    (a finding uses one of them, :meth:`~mcviz.search._rows.SearchRows.expand`).
    """
    if column.is_datetime or column.is_score or column.edges is None:
        return None
    bins = column.n_codes - 1
    if not 3 <= bins <= RULES.code_levels or column.edges.size != bins - 1:
        return None
    present = ~np.isnan(column.keys)
    first = column.keys[present].min() if present.any() else np.nan
    values = np.concatenate(([first], column.edges))
    if not np.all(values == np.round(values)):
        return None
    if not np.array_equal(values.take(column.codes[present]), column.keys[present]):
        return None  # a value of a held-out row is not one of the search rows' values
    return Column(column.name, "nominal", column.codes, column.n_codes, None, None,
                  tuple(int(v) for v in values), column.has_missing, ranges=column)


def _nominal(name: str, value: CovariateColumn) -> Column:
    """Level codes, missing last (a boolean's levels are False and True)."""
    levels = value.levels
    raw = value.codes
    codes = np.where(raw < 0, len(levels), raw).astype(np.int32)
    return Column(name, "nominal", codes, len(levels) + 1, None, None, levels,
                  bool((raw < 0).any()))


def _numeric(name: str, value: CovariateColumn, search_rows: np.ndarray) -> Column:
    is_datetime = value.kind == "time"
    if is_datetime:
        keys = value.keys.astype(float)
        keys[value.missing] = np.nan
    else:
        keys = value.keys
    column = _numeric_keys(name, keys, search_rows)
    column.is_datetime, column.datetime_tz = is_datetime, value.tz
    return column


def _numeric_keys(name: str, keys: np.ndarray, search_rows: np.ndarray, *,
                  is_score: bool = False) -> Column:
    missing = np.isnan(keys)
    observed = keys[search_rows]
    observed = np.sort(observed[~np.isnan(observed)])
    if observed.size == 0:
        edges = np.empty(0)
    else:
        uniques = observed[np.concatenate(([True], observed[1:] != observed[:-1]))]
        if uniques.size <= RULES.distinct_bins:
            edges = uniques[1:]
        else:  # quantiles of the search rows, each an observed value
            at = (np.arange(1, RULES.numeric_bins) * observed.size) // RULES.numeric_bins
            edges = np.unique(observed[at])
            edges = edges[edges > observed[0]]
    bins = edges.size + 1
    codes = bin_codes(edges, keys)
    codes[missing] = bins
    return Column(name, "numeric", codes, bins + 1, keys, edges, (), bool(missing.any()),
                  is_score=is_score)


def select(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Return ``values[mask]`` (a gather at the mask's positions).

    The same array as boolean indexing, several times faster when the mask mixes True and
    False evenly (numpy's boolean indexing branches on every element).
    """
    return values.take(np.flatnonzero(mask))


BIN_CHUNK = 1 << 15
"""Keys coded at a time by :func:`bin_codes` (its work arrays stay in cache: 2x faster)."""


def bin_codes(edges: np.ndarray, keys: np.ndarray) -> np.ndarray:
    r"""Return ``np.searchsorted(edges, keys, side="right")`` as int32 (``edges`` sorted).

    The number of edges at or below each key, by a binary search over the few edges run for
    all keys at once (one compare per halving: a few passes over the keys instead of a
    branching search per key; 13 vs 45 ms for 10^6 keys and 63 edges), :data:`BIN_CHUNK`
    keys at a time. The edges are padded to :math:`2^k - 1` with :math:`+\infty`; a key of
    :math:`+\infty` counts every edge; NaN none (the caller codes missing keys).
    """
    size = 1 << int(edges.size).bit_length()  # a power of two above the number of edges
    padded = np.full(size, np.inf)
    padded[: edges.size] = edges
    out = np.empty(keys.size, dtype=np.int32)
    for start in range(0, keys.size, BIN_CHUNK):
        part = keys[start: start + BIN_CHUNK]
        step = size // 2
        codes = (part >= padded[step - 1]).astype(np.intp) * step
        above = np.empty(part.size, dtype=bool)
        step //= 2
        while step:  # codes: edges known to be at or below the key; test the next `step`
            np.greater_equal(part, padded.take(codes + (step - 1)), out=above)
            codes += above * step
            step //= 2
        out[start: start + BIN_CHUNK] = np.minimum(codes, edges.size)
    return out


@dataclass(frozen=True, slots=True)
class Cut:
    """One candidate condition on one covariate.

    ``op`` is ``"lt"`` (x < hi), ``"ge"`` (x >= lo, missing included as the filter language
    has it), ``"band"`` (lo <= x < hi), ``"missing"``, ``"present"`` or ``"in"`` (the levels
    of codes ``levels``; missing excluded).
    """

    column: int
    op: str
    lo: float = np.nan
    hi: float = np.nan
    levels: tuple[int, ...] = ()

    def mask(self, column: Column, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` satisfy the condition (the filter language's missing rule)."""
        if self.op in ("in", "missing", "present"):
            return self.mask_codes(column, column.codes[rows])
        return self.mask_keys(column.keys[rows])

    def mask_codes(self, column: Column, codes: np.ndarray) -> np.ndarray | None:
        """:meth:`mask` from the column's ``codes`` at the rows (gathered by the caller).

        A threshold or band whose points are candidate cuts (``column.edges``, as the screen
        gives them) is a range of bin codes: bin ``j`` holds ``edges[j-1] <= x < edges[j]``,
        so ``x < edges[b-1]`` is ``code < b`` and ``x >= edges[a-1]`` is ``code >= a`` (the
        missing code, the last, included as the filter language has it). None for other
        points (compare the keys: :meth:`mask`).
        """
        if self.op == "in":
            table = np.zeros(column.n_codes, dtype=bool)
            table[list(self.levels)] = True
            return table.take(codes)  # take: faster than table[codes]
        if self.op in ("missing", "present"):
            missing = codes == column.n_codes - 1
            return missing if self.op == "missing" else ~missing
        low = _edge_code(column.edges, self.lo) if self.op in ("ge", "band") else 0
        high = _edge_code(column.edges, self.hi) if self.op in ("lt", "band") else 0
        if low is None or high is None:  # not at candidate cuts: compare the values
            return None
        if self.op == "lt":
            return codes < high
        if self.op == "ge":
            return codes >= low
        return (codes >= low) & (codes < high)

    def mask_keys(self, keys: np.ndarray) -> np.ndarray:
        """Which numeric keys (NaN: missing) satisfy a threshold or band."""
        with np.errstate(invalid="ignore"):
            if self.op == "lt":
                return keys < self.hi
            if self.op == "ge":
                return ~(keys < self.lo)  # NaN (missing) satisfies >=
            return (keys >= self.lo) & (keys < self.hi)

    def conditions(self, column: Column) -> tuple[Condition, ...]:
        """Return the same rows as filter-language conditions."""
        name = column.name
        if self.op == "missing":
            return (Condition(name, "is missing"),)
        if self.op == "present":
            return (Condition(name, "is not missing"),)
        if self.op == "lt":
            return (Condition(name, "<", column.value(self.hi)),)
        if self.op == "ge":
            return (Condition(name, ">=", column.value(self.lo)),)
        if self.op == "band":
            return (Condition(name, ">=", column.value(self.lo)),
                    Condition(name, "<", column.value(self.hi)))
        chosen = [column.levels[c] for c in sorted(self.levels)]
        if len(chosen) == 1:
            return (Condition(name, "==", chosen[0]),)
        chosen_codes = set(self.levels)
        others = [v for c, v in enumerate(column.levels) if c not in chosen_codes]
        if not column.has_missing and len(others) < len(chosen):  # "not in" would add missing
            if len(others) == 1:
                return (Condition(name, "!=", others[0]),)
            return (Condition(name, "not in", tuple(others)),)
        return (Condition(name, "in", tuple(chosen)),)

    def key(self) -> tuple:
        """Identity of the condition (for de-duplication)."""
        lo = None if np.isnan(self.lo) else float(self.lo)
        hi = None if np.isnan(self.hi) else float(self.hi)
        return (self.column, self.op, lo, hi, self.levels)


def _edge_code(edges: np.ndarray, point: float) -> int | None:
    """Return ``j + 1`` when ``point == edges[j]`` (the first bin at or above it), else None."""
    j = int(np.searchsorted(edges, point))
    return j + 1 if j < edges.size and edges[j] == point else None


def round_cut(column: Column, cut: Cut) -> Cut:
    """Write each cut point with the fewest digits that keep the same rows (on all rows).

    A point ``c`` may move to any ``c'`` with ``prev < c' <= c``, where ``prev`` is the largest
    value below ``c`` among all rows: ``x < c'`` and ``x >= c'`` then select the same rows.
    """
    if column.kind != "numeric" or cut.op not in ("lt", "ge", "band"):
        return cut
    points = {}
    for side in ("lo", "hi"):
        value = getattr(cut, side)
        if not np.isnan(value):
            shortest = _shortest_time if column.is_datetime else _shortest
            points[side] = shortest(column, value)
    return replace(cut, **points)


def _shortest_time(column: Column, value: float) -> float:
    """Dates: the coarsest instant (day, hour, ...) above the previous value of all rows."""
    with np.errstate(invalid="ignore"):
        below = column.keys[column.keys < value]
    previous = column.value(float(below.max())) if below.size else None
    return float(shortest_timestamp(column.value(value), previous).value)


def _shortest(column: Column, value: float) -> float:
    with np.errstate(invalid="ignore"):
        below = column.keys[column.keys < value]
    previous = float(below.max()) if below.size else -math.inf
    for digits in range(-6, 18):
        if digits >= 0:
            candidate = math.floor(value * 10**digits) / 10**digits
        else:
            candidate = float(math.floor(value / 10**-digits) * 10**-digits)
        if previous < candidate <= value:
            return candidate
    return value
