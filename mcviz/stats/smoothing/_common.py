"""Shared pieces of the smoothing package: quantiles, the span check, cell location.

``Z95``, :func:`sorted_copy` and :func:`weighted_quantile` live in :mod:`mcviz.core.arrays`
(imported here for the package's modules).
"""

from __future__ import annotations

import numpy as np

from mcviz.core.arrays import Z95, sorted_copy, weighted_quantile
from mcviz.errors import ValidationError

__all__ = ["LOCATE_STEPS", "Z95", "check_span", "locate", "sorted_copy", "sorted_quantile",
           "weighted_quantile"]


def check_span(span: float, low: float = 0.0) -> None:
    """Raise a :class:`ValidationError` unless ``low <= span <= 1`` (``0 < span`` when low is 0).

    Examples
    --------
    >>> check_span(0.5)
    >>> check_span(0.1, 0.3)
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: span must lie in [0.3, 1], not 0.1.
    """
    valid = np.isfinite(span) and (low <= span if low > 0 else span > 0) and span <= 1.0
    if not valid:
        bound = f"[{low:g}, 1]" if low > 0 else "(0, 1]"
        raise ValidationError(f"span must lie in {bound}, not {span!r}.")


def sorted_quantile(sorted_x: np.ndarray, probabilities: np.ndarray | list[float]) -> np.ndarray:
    """Quantiles of an ascending array with linear interpolation (R type 7, numpy default).

    Examples
    --------
    >>> sorted_quantile(np.array([1.0, 2.0, 4.0]), [0.25, 0.5]).tolist()
    [1.5, 2.0]
    """
    p = np.asarray(probabilities, dtype=float)
    position = p * (sorted_x.size - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, sorted_x.size - 1)
    fraction = position - below
    low, high = sorted_x[below], sorted_x[above]
    return np.where(fraction > 0, low + fraction * (high - low), low)


def counted_quantile(values: np.ndarray, counts: np.ndarray,
                     probabilities: np.ndarray | list[float]) -> np.ndarray:
    """:func:`sorted_quantile` of the rows that ascending distinct ``values`` stand for.

    Each value stands for ``counts`` rows (an engine's ``GROUP BY``): the same positions, the
    same order statistics, so the same quantiles as on the rows themselves.

    Examples
    --------
    >>> counted_quantile(np.array([1.0, 2.0, 4.0]), np.array([1, 1, 1]), [0.25, 0.5]).tolist()
    [1.5, 2.0]
    >>> counted_quantile(np.array([1.0, 4.0]), np.array([3, 1]), [0.5, 1.0]).tolist()
    [1.0, 4.0]
    """
    cum = np.cumsum(np.asarray(counts, dtype=np.int64))
    n = int(cum[-1])
    p = np.asarray(probabilities, dtype=float)
    position = p * (n - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, n - 1)
    fraction = position - below
    low = values[np.searchsorted(cum, below, side="right")]
    high = values[np.searchsorted(cum, above, side="right")]
    return np.where(fraction > 0, low + fraction * (high - low), low)


def _checked_weight(weight: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """Return the weights as floats, refused unless positive, finite and of ``shape``."""
    if weight is None:
        return None
    w = np.asarray(weight, dtype=float)
    bad = ~(np.isfinite(w) & (w > 0)) if w.shape == shape else np.ones(1, bool)
    if bad.any():
        size = int(np.prod(shape))
        raise ValidationError(
            f"weights: {int(bad.sum()):,} of {size:,} are not positive finite numbers (or the "
            f"shape {w.shape} differs from {shape}).", column="weight"
        )
    return w


LOCATE_STEPS = 8
"""Rows whose cell reaches more edges than this are located by a binary search."""


def locate(edges: np.ndarray, x: np.ndarray, top: int) -> np.ndarray:
    """``clip(searchsorted(edges, x, side="right") - 1, 0, top)`` for many unsorted rows.

    A binary search per row costs about log2(edges) mispredicted branches. Instead uniform
    cells over [edges[0], edges[-1]], finer than the closest edges, give each row the range
    of positions its cell can reach (the cell bounds widened by a margin larger than the
    rounding of the cell arithmetic, so the true position always lies in it); rows whose
    cell holds an edge then step up to their position. The result equals the binary search
    exactly.

    Examples
    --------
    >>> locate(np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.5, 0.0, 3.0, -1.0]), 2).tolist()
    [2, 0, 2, 0]
    """
    size = edges.size
    if x.size > 4 * size and not (x[1:] < x[:-1]).any():
        # ascending rows (score-sorted arrays): the edges cut them into ranges, found by one
        # binary search per edge; row i lies after every edge <= x[i] (the same count)
        cuts = np.searchsorted(x, edges, side="left")
        counts = np.diff(np.concatenate(([0], cuts, [x.size])))
        return np.clip(np.repeat(np.arange(-1, size, dtype=np.intp), counts), 0, top)
    low, high = float(edges[0]), float(edges[-1])
    extent = high - low
    cells = 0
    if size >= 8 and extent > 0:
        gaps = np.diff(edges)
        cells = int(min(8.0 * extent / gaps[gaps > 0].min(), 1 << 20, x.size // 4))
    if cells < 2 * size:
        return np.clip(np.searchsorted(edges, x, side="right") - 1, 0, top)
    step = extent / cells
    margin = 1e-9 * extent + 8.0 * float(np.spacing(max(abs(low), abs(high))))
    bounds = low + step * np.arange(cells + 1)
    first = np.clip(np.searchsorted(edges, bounds[:-1] - margin, side="right") - 1, 0, top)
    last = np.clip(np.searchsorted(edges, bounds[1:] + margin, side="right") - 1, 0, top)
    cell = (x - low) * (1.0 / step)
    np.clip(cell, 0.0, cells - 1, out=cell)
    cell = cell.astype(np.intp)
    position = first.astype(np.intp)[cell]
    reach = last.astype(np.intp)[cell]
    rows = np.flatnonzero(reach > position)
    near = reach[rows] - position[rows] <= LOCATE_STEPS
    wide = rows[~near]
    if wide.size:
        position[wide] = np.clip(np.searchsorted(edges, x[wide], side="right") - 1, 0, top)
    rows = rows[near]
    for _ in range(LOCATE_STEPS):  # each row steps at most reach - position times
        rows = rows[x[rows] >= edges[position[rows] + 1]]
        position[rows] += 1
        rows = rows[reach[rows] > position[rows]]
    return position
