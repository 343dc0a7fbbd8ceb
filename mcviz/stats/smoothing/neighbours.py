"""Nearest-neighbour windows over sorted values: radii, index bounds, k-NN means."""

from __future__ import annotations

import numpy as np

__all__ = ["bisected_radius", "knn_mean", "neighbour_radius"]


def neighbour_radius(sorted_x: np.ndarray, at: np.ndarray, q: int) -> np.ndarray:
    """Distance from each point of ``at`` to its ``q``-th nearest value of ``sorted_x``.

    The ``q`` nearest values form a contiguous block ``sorted_x[i:i+q]``, the one minimising
    ``r(i) = max(v - x_i, x_{i+q-1} - v)``. In floating point ``a(i) = v - x_i`` is
    non-increasing and ``b(i) = x_{i+q-1} - v`` non-decreasing in ``i``, so ``b(i) >= a(i)`` from
    some ``i*`` on and the minimum is exactly ``min(b(i*), a(i*-1))``. ``i*`` is found by
    bisection between the blocks whose rounded pair sums ``x_i + x_{i+q-1}`` lie clearly below
    and clearly above ``2v`` (pair sums alone are not enough: ties in the scores make runs of
    equal rounded pair sums, and the best block can lie anywhere in such a run).

    Examples
    --------
    >>> neighbour_radius(np.array([0.0, 1.0, 2.0, 10.0]), np.array([1.0, 9.0]), 2).tolist()
    [1.0, 7.0]
    """
    x = np.asarray(sorted_x, dtype=float)
    shape = np.shape(at)
    at = np.asarray(at, dtype=float).ravel()
    n = x.size
    q = int(min(max(q, 1), n))
    blocks = n - q + 1
    pair_sum = x[:blocks] + x[q - 1 :]
    # Outside 2v ± tol the rounded pair sum decides the sign of b(i) - a(i): the rounding of
    # the pair sum and of a, b is at most eps (|x_i| + |x_{i+q-1}| + 2|v|) / 2 each.
    tol = 4.0 * np.finfo(float).eps * (max(abs(x[0]), abs(x[-1])) + np.abs(at))
    lo = np.searchsorted(pair_sum, 2.0 * at - tol, side="left")  # i* >= lo
    hi = lo.copy()  # i* <= hi, and i* = lo when the pair sum at lo lies clearly above 2v
    near = np.flatnonzero(pair_sum[np.minimum(lo, blocks - 1)] <= 2.0 * at + tol)
    hi[near] = np.searchsorted(pair_sum, 2.0 * at[near] + tol[near], side="right")
    return bisected_radius(x, at, q, lo, hi).reshape(shape)


def bisected_radius(x, at: np.ndarray, q: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Finish :func:`neighbour_radius`: bisect ``i*`` in ``[lo, hi]``, then take the radius.

    ``x`` is anything indexed by arrays of row positions (the sorted values, or rows read
    from sums per distinct value) with ``x.n`` or ``x.size`` rows.
    """
    n = int(getattr(x, "n", None) or x.size)
    blocks = n - q + 1
    active = np.flatnonzero(lo < hi)
    while active.size:  # bisection for the first i with b(i) >= a(i), on the open ranges only
        mid = (lo[active] + hi[active]) // 2
        v = at[active]
        after = x[mid + q - 1] - v >= v - x[mid]
        hi[active] = np.where(after, mid, hi[active])
        lo[active] = np.where(after, lo[active], mid + 1)
        active = active[lo[active] < hi[active]]
    b = np.where(lo < blocks, x[np.minimum(lo, blocks - 1) + q - 1] - at, np.inf)
    a = np.where(lo > 0, at - x[np.maximum(lo - 1, 0)], np.inf)
    return np.minimum(a, b)


def _window_bounds(
    sorted_x: np.ndarray, at: np.ndarray, radius: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Index range [lo, hi) of the values with ``|x - v| <= radius`` (ties included)."""
    x = sorted_x
    n = x.size
    lo = np.searchsorted(x, at - radius, side="left")
    hi = np.searchsorted(x, at + radius, side="right")
    for _ in range(2):
        # Rounding of at ± radius can misplace the boundary by one distinct value: correct it
        # with the distances themselves, moving over whole runs of ties.
        prev = np.clip(lo - 1, 0, n - 1)
        grow = (lo > 0) & (np.abs(x[prev] - at) <= radius)
        lo = np.where(grow, np.searchsorted(x, x[prev], side="left"), lo)
        cur = np.clip(lo, 0, n - 1)
        shrink = (lo < n) & (np.abs(x[cur] - at) > radius) & (x[cur] < at)
        lo = np.where(shrink, np.searchsorted(x, x[cur], side="right"), lo)
        nxt = np.clip(hi, 0, n - 1)
        grow = (hi < n) & (np.abs(x[nxt] - at) <= radius)
        hi = np.where(grow, np.searchsorted(x, x[nxt], side="right"), hi)
        last = np.clip(hi - 1, 0, n - 1)
        shrink = (hi > 0) & (np.abs(x[last] - at) > radius) & (x[last] > at)
        hi = np.where(shrink, np.searchsorted(x, x[last], side="left"), hi)
    return lo, hi


def knn_mean(
    sorted_score: np.ndarray,
    label: np.ndarray,
    at: np.ndarray,
    k: int,
    weight: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean label of the ``k`` nearest scores to each point, ties at the boundary included.

    Parameters
    ----------
    sorted_score : ndarray of shape (n,)
        Ascending scores.
    label : ndarray of shape (n,)
        Labels in the same order.
    at : ndarray of shape (J,)
    k : int
    weight : ndarray of shape (n,), optional
        The mean is weighted; counts are not.

    Returns
    -------
    mean, count, events : ndarray of shape (J,)
        The (weighted) mean, the number of observations in the window and the (weighted)
        count of labels equal to 1, scaled to the window size.

    Examples
    --------
    Scores 0, 1, 1, 2 with labels 0, 1, 0, 1; the two nearest to 0.9 are both tied at 1:

    >>> mean, count, _ = knn_mean(np.array([0.0, 1.0, 1.0, 2.0]), np.array([0, 1, 0, 1.0]),
    ...                           np.array([0.9, 0.1]), 2)
    >>> mean.tolist(), count.tolist()
    ([0.5, 0.3333333333333333], [2, 3])
    """
    s = np.asarray(sorted_score, dtype=float)
    at = np.asarray(at, dtype=float)
    radius = neighbour_radius(s, at, k)  # the k-th smallest distance
    lo, hi = _window_bounds(s, at, radius)
    label = np.asarray(label, dtype=float)
    count = hi - lo
    if weight is None:
        (events,) = _window_sums([label], lo, hi)
        mean = events / count
    else:
        w = np.asarray(weight, dtype=float)
        total, labelled = _window_sums([w, w * label], lo, hi)
        mean = labelled / total
        events = mean * count
    return mean, count, events


def _window_sums(columns: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Return the sums of each column over the windows ``lo_j:hi_j``, shape (columns, J).

    Differences of prefix sums lose a light window after a heavy one (weights 1e9 then 1e-9:
    1e9 + 1e-9 - 1e9 = 0). Here the rows are cut at every window end into stretches, each
    summed directly (``np.add.reduceat``), and a window's sum adds the dyadic blocks of a
    segment tree over those stretches (at most 2 log2 of them): only disjoint parts are added.
    """
    shape = (len(columns), *np.shape(lo))
    lo, hi = np.ravel(lo), np.ravel(hi)
    n = columns[0].size
    if lo.size <= n // 64:  # few windows: sort their ends
        cuts = np.unique(np.concatenate((lo, hi)))
        left, right = np.searchsorted(cuts, lo), np.searchsorted(cuts, hi)
    else:  # many: mark them on the rows (linear time)
        marked = np.zeros(n + 1, dtype=bool)
        marked[lo] = marked[hi] = True
        cuts = np.flatnonzero(marked)
        rank = np.cumsum(marked) - 1
        left, right = rank[lo], rank[hi]
    m = len(columns)
    if cuts.size < 2:
        return np.zeros(shape)
    # Stretch i holds rows cuts[i]:cuts[i+1].
    stretch = np.column_stack([np.add.reduceat(c[: cuts[-1]], cuts[:-1]) for c in columns])
    size = 1 << max(stretch.shape[0] - 1, 0).bit_length()
    # Node i = node 2i + node 2i+1, leaves from `size` on; node 0 stays 0 (read for "nothing").
    tree = np.zeros((2 * size + 1, m))
    tree[size : size + stretch.shape[0]] = stretch
    level = size
    while level > 1:
        tree[level // 2 : level] = tree[level : 2 * level : 2] + tree[level + 1 : 2 * level : 2]
        level //= 2
    left, right = left + size, right + size  # leaves of the window's first and end stretch
    total = np.zeros((lo.size, m))
    while True:
        open_ = left < right
        if not open_.any():
            return total.T.reshape(shape)
        take = (left & 1) * open_  # a left end that is a right child: add it, step right
        total += tree[left * take]
        left += take
        take = (right & 1) * open_  # likewise at the (exclusive) right end
        right -= take
        total += tree[right * take]
        left >>= 1
        right >>= 1
