"""Array helpers every package shares: read-only results, sorted copies, weighted quantiles.

Also :data:`Z95`, the one 97.5% quantile of the standard normal distribution.
"""

from __future__ import annotations

import numpy as np

from mcviz.core.path import integer_codes

__all__ = ["Z95", "after_zero", "readonly", "sorted_copy", "weighted_quantile"]

Z95 = 1.959963984540054
"""The 97.5% quantile of the standard normal distribution (two-sided 95% bands)."""


def readonly(array) -> np.ndarray:
    """Return ``array`` as a C-contiguous ndarray that cannot be written to.

    A C-contiguous ndarray is frozen in place (no copy); anything else (a list, a strided view)
    is first copied into a contiguous array, so the caller's data are never frozen through a view.

    Examples
    --------
    >>> a = readonly(np.arange(3.0))
    >>> a.flags.writeable, a.flags.c_contiguous
    (False, True)
    """
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array


def after_zero(values: np.ndarray, scale: float | None = None) -> np.ndarray:
    """Return ``concatenate(([0.0], values / scale))`` (or of ``values``): no copy between.

    The same numbers (each value divided once), written straight into the result: a path's
    points after its origin without a second array of their size.

    >>> after_zero(np.array([1.0, 3.0]), 2.0).tolist()
    [0.0, 0.5, 1.5]
    """
    out = np.empty(np.size(values) + 1)
    out[0] = 0.0
    if scale is None:
        out[1:] = values
    else:
        with np.errstate(invalid="ignore"):  # inf / inf is nan either way
            np.divide(values, scale, out=out[1:])
    return out


def weighted_quantile(
    values: np.ndarray, weight: np.ndarray, probabilities: np.ndarray | list[float]
) -> np.ndarray:
    """Lower weighted quantiles: the smallest value whose cumulative weight reaches p of the total.

    For integer weights this is the type-1 quantile of the values repeated by their weights; a
    relative tolerance of 1e-12 keeps a cumulative weight equal to p times the total (up to
    rounding) in the lower value. The one weighted quantile of mcviz (the measures' E50/E90, the
    local-error distribution).

    Examples
    --------
    Sorted values 1, 2, 3 with weights 1, 2, 1: cumulative weights 1, 3, 4 of 4, so the 0.25
    quantile is 1, the 0.5 and 0.75 quantiles are 2 and the 0.8 quantile is 3.

    >>> v, w = np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0])
    >>> weighted_quantile(v, w, [0.25, 0.5, 0.75, 0.8]).tolist()
    [1.0, 2.0, 2.0, 3.0]
    """
    order = np.argsort(values)  # ties: equal values, so their order does not matter
    cumulative = np.cumsum(weight[order])
    target = (np.asarray(probabilities, dtype=float) - 1e-12) * cumulative[-1]
    at = np.searchsorted(cumulative, target, side="left")
    return values[order[np.minimum(at, values.size - 1)]]


def sorted_copy(x: np.ndarray) -> np.ndarray:
    """``np.sort(x)`` of a float array; integers spanning at most n values by counting.

    Rows already ascending (score-sorted arrays, NaN-free) are copied, not sorted again.

    Examples
    --------
    >>> sorted_copy(np.array([3.0, 1.0, 2.0, 1.0])).tolist()
    [1.0, 1.0, 2.0, 3.0]
    """
    index = integer_codes(x, x.size + 1, np.intp)  # integers spanning at most n values
    if index is None:
        if x.size > 1 and bool(np.all(x[1:] >= x[:-1])):  # (False with any NaN)
            return x.copy()
        return np.sort(x)
    counts = np.bincount(index)
    return np.repeat(float(x.min()) + np.arange(counts.size, dtype=float), counts)
