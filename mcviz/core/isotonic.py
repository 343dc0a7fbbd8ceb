r"""Weighted isotonic regression (the PAV solution) in exact arithmetic for counts.

The non-decreasing fit :math:`\hat x = \arg\min_{z_1 \le \dots \le z_B} \sum_k w_k (y_k - z_k)^2`
is the left derivative of the greatest convex minorant (GCM) of the cumulative sum diagram
:math:`P_0 = (0, 0)`, :math:`P_k = (\sum_{j \le k} w_j, \sum_{j \le k} w_j y_j)` (Barlow,
Bartholomew, Bremner & Brunk 1972, Theorem 1.1): the run :math:`k` between the GCM's vertices
:math:`a < k \le b` gets :math:`(Y_b - Y_a)/(X_b - X_a)`, the pooled mean of runs
:math:`a+1..b` — what pool-adjacent-violators computes.

When the weights and the weighted responses are whole numbers (unit weights and 0/1 responses,
or counts), the diagram's coordinates are integers, exact in floating point while
:math:`X_B Y_B < 2^{53}`; the GCM's vertices are then found exactly, by QuickHull on the
diagram: the point farthest below the chord of two vertices is a vertex, points on or above a
chord never are; every chord of one round is split at once (vectorised; :math:`O(B)` per round,
each round discarding the points above the new chords, :math:`O(\log B)` rounds on the shapes
met in calibration). Each block's mean is then a single correctly rounded division. Otherwise
(non-integer weights or responses, or too many rows for exact products, or an adversarial shape
that needs more than :data:`MAX_ROUNDS` rounds) ``scipy.optimize.isotonic_regression`` is used,
imported there and only then (it costs about 0.4 s of CPU to import). Both give the same values
to rounding (tests/core/test_isotonic.py).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_ROUNDS", "isotonic_fit"]

MAX_ROUNDS = 64
"""QuickHull rounds before handing the problem to SciPy's PAV."""
_EXACT = 2.0**53


def isotonic_fit(y: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    r"""Non-decreasing weighted least-squares fit of ``y`` in the given order (PAV solution).

    Parameters
    ----------
    y : ndarray of shape (B,)
    weight : ndarray of shape (B,), optional
        Positive weights (default 1).

    Returns
    -------
    ndarray of shape (B,)

    Examples
    --------
    >>> isotonic_fit(np.array([0.0, 1.0, 0.0, 1.0, 1.0])).tolist()
    [0.0, 0.5, 0.5, 1.0, 1.0]
    >>> isotonic_fit(np.array([1.0, 0.0]), np.array([1.0, 3.0])).tolist()
    [0.25, 0.25]
    """
    y = np.asarray(y, dtype=float)
    if y.size < 2:
        return y.copy()
    w = None if weight is None else np.asarray(weight, dtype=float)
    wy = y if w is None else w * y
    x_total = float(y.size) if w is None else float(w.sum())
    whole = (x_total * max(float(np.abs(wy).sum()), 1.0) < _EXACT
             and np.array_equal(wy, np.round(wy))
             and (w is None or np.array_equal(w, np.round(w))))
    if whole:
        # adjacent equal responses always share a PAV block (a block's last response is at
        # most its mean, the next block's first at least its larger mean): pool them first
        first = np.flatnonzero(np.concatenate(([True], y[1:] != y[:-1])))
        run_x = (np.diff(np.append(first, y.size)).astype(float) if w is None
                 else np.add.reduceat(w, first))
        xs = np.concatenate(([0.0], np.cumsum(run_x)))
        ys = np.concatenate(([0.0], np.cumsum(np.add.reduceat(wy, first))))
        at = _gcm_vertices(xs, ys)
        if at is not None:
            bounds = np.append(first, y.size)[at]  # block boundaries in rows
            slopes = np.diff(ys[at]) / np.diff(xs[at])  # exact sums: one rounding each
            return np.repeat(slopes, np.diff(bounds))
    from scipy.optimize import isotonic_regression  # only where the exact path does not apply

    return isotonic_regression(y, weights=w).x


def _gcm_vertices(xs: np.ndarray, ys: np.ndarray) -> np.ndarray | None:
    """Sorted indices of the GCM's vertices of the points (xs, ys) (integers, xs increasing).

    First some vertices from a coarse hull (:func:`_seed_vertices`), then QuickHull from the
    chords between them; None after :data:`MAX_ROUNDS` rounds.
    """
    vertices = _seed_vertices(xs, ys)
    found = [vertices]
    inside = np.ones(xs.size, dtype=bool)
    inside[vertices] = False
    points = np.flatnonzero(inside)
    chord = np.searchsorted(vertices, points)  # chord (vertices[c - 1], vertices[c])
    ax, ay = xs[vertices[chord - 1]], ys[vertices[chord - 1]]
    bx, by = xs[vertices[chord]], ys[vertices[chord]]
    px, py = xs[points], ys[points]
    for _ in range(MAX_ROUNDS):
        # twice the signed area below the chord (negative: strictly below), exact in integers
        below = (py - ay) * (bx - ax) - (by - ay) * (px - ax)
        keep = below < 0
        if not keep.any():
            return np.unique(np.concatenate(found))
        points, px, py, ax, ay, bx, by, below = (
            v[keep] for v in (points, px, py, ax, ay, bx, by, below))
        # per chord, the point farthest below it (the first of equally low ones) is a vertex
        starts = np.flatnonzero(np.concatenate(([True], ax[1:] != ax[:-1])))
        sizes = np.diff(np.append(starts, points.size))
        lowest = np.repeat(np.minimum.reduceat(below, starts), sizes)
        hit = np.flatnonzero(below == lowest)
        chord = np.repeat(np.arange(starts.size), sizes)
        hit = hit[np.concatenate(([True], chord[hit][1:] != chord[hit][:-1]))]
        found.append(points[hit])
        # each chord (a, b) splits at its apex c into (a, c) and (c, b); c itself drops out
        apex = np.repeat(hit, sizes)
        position = np.arange(points.size)
        before = position < apex
        cx, cy = px[apex], py[apex]
        bx, by = np.where(before, cx, bx), np.where(before, cy, by)
        ax, ay = np.where(before, ax, cx), np.where(before, ay, cy)
        keep = position != apex
        points, px, py, ax, ay, bx, by = (v[keep] for v in (points, px, py, ax, ay, bx, by))
    return None


def _seed_vertices(xs: np.ndarray, ys: np.ndarray, step: int = 512) -> np.ndarray:
    """Vertices of the GCM found cheaply: the supporting points of a coarse hull's slopes.

    The hull of every ``step``-th point has edges of slopes dy/dx (integers); for each, the first
    point minimising dx·Y - dy·X over all points is a vertex of the full GCM (a supporting line's
    leftmost contact), found exactly in integers. The minimisers move right as the slope grows,
    so each search is confined between its neighbours' (divide and conquer, O(B log E)).
    """
    last = xs.size - 1
    ends = np.array([0, last])
    if xs.size <= 4 * step:
        return ends
    sample = np.unique(np.append(np.arange(0, xs.size, step), last))
    coarse = _gcm_vertices(xs[sample], ys[sample])
    if coarse is None or coarse.size < 3:
        return ends
    corners = sample[coarse]
    dx, dy = np.diff(xs[corners]), np.diff(ys[corners])
    contact = np.empty(dx.size, dtype=np.int64)
    pending = [(0, dx.size - 1, 0, last)]
    while pending:
        low, high, left, right = pending.pop()
        if low > high:
            continue
        middle = (low + high) // 2
        values = dx[middle] * ys[left:right + 1] - dy[middle] * xs[left:right + 1]
        contact[middle] = left + int(np.argmin(values))
        pending.append((low, middle - 1, left, contact[middle]))
        pending.append((middle + 1, high, contact[middle], right))
    return np.unique(np.concatenate((ends, contact)))
