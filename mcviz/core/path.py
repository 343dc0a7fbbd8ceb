r"""The tie-aware cumulative path and its range (Kuiper) and largest excursion (KS).

With observations sorted by score (or by any variable),

.. math:: C_k = \frac{\sum_{j \le k} W_j (R_j - S_j)}{\sum_j W_j}, \qquad C_0 = 0
   \qquad \text{(eq. (1) of [1])},

.. math:: D = \max_k C_k - \min_k C_k \quad \text{(eq. (2))}, \qquad G = \max_k |C_k|.

Tie rule (everywhere in mcviz): the path is evaluated only at :math:`C_0` and at the last row
of each run of tied scores, so no statistic depends on the order of tied rows; with distinct
scores this is exactly the paper's path.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(3).
.. [2] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023; Appendix A, eqs. (44)-(50).
"""

from __future__ import annotations

import numpy as np

from mcviz.core.ratio import safe_ratio

__all__ = ["cumulative_path", "integer_codes", "path_axes", "path_kuiper_ks", "run_ends",
           "value_order"]

_RADIX_SPAN = 1 << 16
"""Integers spanning fewer values than this are ordered by numpy's radix sort (16-bit codes)."""


def run_ends(values: np.ndarray) -> np.ndarray:
    """Mark the last element of each run of equal values of a sorted array.

    Examples
    --------
    >>> run_ends(np.array([0.1, 0.2, 0.2, 0.3])).tolist()
    [True, False, True, True]
    """
    ends = np.ones(values.size, dtype=bool)
    np.not_equal(values[1:], values[:-1], out=ends[:-1])
    return ends


def integer_codes(values: np.ndarray, max_span: int, dtype: type) -> np.ndarray | None:
    """Return ``values - min(values)`` as ``dtype`` for integers spanning < ``max_span`` values.

    None otherwise, and for fewer than 4,096 values (a plain sort is as fast there).
    The one test behind the linear-time orders (:func:`value_order`, the counting sort of
    :func:`mcviz.stats.smoothing.sorted_copy`). Floats are checked on their first 256 values first,
    then exactly; NaN gives None.

    Examples
    --------
    >>> integer_codes(np.arange(5000.0) + 7, 1 << 16, np.uint16)[:3].tolist()
    [0, 1, 2]
    >>> integer_codes(np.arange(5000.0) + 0.5, 1 << 16, np.uint16) is None
    True
    """
    if values.size < 4096 or values.dtype.kind not in "fiu":
        return None
    head = values[:256]
    if values.dtype.kind == "f" and not np.array_equal(head, np.round(head)):
        return None
    low, high = values.min(), values.max()
    if not float(high) - float(low) < max_span:
        return None
    offset = (values - low if values.dtype.kind == "f"  # exact for integers this close
              else values.astype(np.int64) - np.int64(low))  # no int8 overflow
    codes = offset.astype(dtype)
    return codes if np.array_equal(codes, offset) else None


def value_order(values: np.ndarray) -> np.ndarray:
    """Return an order putting ``values`` (no NaN) in ascending order, ties in any order.

    Under the tie rule the order inside a run of equal values is irrelevant, so the default
    (unstable) sort serves; integer values spanning fewer than 65,536 values (ages, counts)
    are ordered in linear time by numpy's radix sort of 16-bit codes (3 ms instead of 37 ms
    at 10^6 rows).

    Examples
    --------
    >>> value_order(np.array([3.0, 1.0, 2.0])).tolist()
    [1, 2, 0]
    """
    values = np.asarray(values)
    codes = integer_codes(values, _RADIX_SPAN, np.uint16)
    return np.argsort(values) if codes is None else np.argsort(codes, kind="stable")


def cumulative_path(
    weighted_residual: np.ndarray, weight_total: float, run_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Return :math:`C_0 = 0, C_{k_1}, C_{k_2}, \dots` at the ends of tie runs, and those ends.

    Parameters
    ----------
    weighted_residual : ndarray, shape (n,)
        :math:`W_j (R_j - S_j)` (or :math:`W_j (R_j - \tilde R_j)`) in sorted order.
    weight_total : float
        :math:`\sum_j W_j` (the path is divided by it; 0 gives a zero path).
    run_end : ndarray of bool, shape (n,)
        True at the last row of each run of tied values.

    Returns
    -------
    path : ndarray, shape (q + 1,)
        The path at the origin and at the q run ends.
    ends : ndarray of int, shape (q,)
        Row of each run end.

    Examples
    --------
    >>> path, ends = cumulative_path(np.array([0.5, -1.0, 0.25]), 2.0,
    ...                              np.array([True, False, True]))
    >>> path.tolist(), ends.tolist()
    ([0.0, 0.25, -0.125], [0, 2])
    """
    ends = np.flatnonzero(run_end)
    steps = np.cumsum(weighted_residual)  # eq. (1), times the total weight
    if ends.size < steps.size:  # (every row ends a run when no score is tied)
        steps = steps[ends]
    path = np.concatenate(([0.0], safe_ratio(steps, weight_total)))  # total 0: steps are 0
    return path, ends


def path_kuiper_ks(path: np.ndarray) -> tuple[float, float]:
    r"""Return the Kuiper range :math:`D` (eq. (2)) and :math:`G = \max |C|` of a path.

    The path must contain its origin (0), as :func:`cumulative_path` returns it.

    Examples
    --------
    >>> path_kuiper_ks(np.array([0.0, 0.25, -0.125]))
    (0.375, 0.25)
    """
    high, low = float(path.max()), float(path.min())  # max |C| = max(|max C|, |min C|)
    return high - low, max(abs(high), abs(low))  # eq. (2)


def path_axes(
    weight: np.ndarray, ends: np.ndarray, *, weighted: bool
) -> tuple[np.ndarray, np.ndarray]:
    r"""Return the abscissae of a path's points: ``x`` and ``fraction`` (origin first).

    ``fraction`` is :math:`k/n` at the origin and at the end of each tie run; ``x`` is the
    cumulative weight :math:`A_k = \sum_{j \le k} W_j / \sum_j W_j` (eq. (28) of [2]) when
    ``weighted``, else ``fraction`` itself.

    Parameters
    ----------
    weight : ndarray, shape (n,)
        Weights in the path's order.
    ends : ndarray of int, shape (q,)
        The last position of each tie run (as :func:`cumulative_path` returns them).
    weighted : bool

    Examples
    --------
    >>> x, fraction = path_axes(np.array([1.0, 1.0, 2.0]), np.array([1, 2]), weighted=True)
    >>> x.tolist(), fraction.round(6).tolist()
    ([0.0, 0.5, 1.0], [0.0, 0.666667, 1.0])
    """
    fraction = np.concatenate(([0.0], (ends + 1.0) / weight.size))
    if not weighted:
        return fraction, fraction
    return np.concatenate(([0.0], np.cumsum(weight)[ends] / weight.sum())), fraction
