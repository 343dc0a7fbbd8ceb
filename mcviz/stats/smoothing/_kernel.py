"""The tricube kernel, its derivatives and the binned moment sums of the LOESS evaluation."""

from __future__ import annotations

import numpy as np


def _tricube_both(
    t: np.ndarray,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(K, K', K'') and (K², (K²)', (K²)'') from shared intermediate terms."""
    a = np.minimum(np.abs(t), 1.0)
    a2 = a * a
    a4 = a2 * a2
    one = 1.0 - a2 * a
    one2 = one * one
    ta = t * a
    kernel = (one2 * one, -9.0 * ta * one2, 54.0 * a4 * one - 18.0 * a * one2)
    one4 = one2 * one2
    one5 = one4 * one
    squared = (one5 * one, -18.0 * ta * one5, 270.0 * a4 * one4 - 36.0 * a * one5)
    return kernel, squared


def _tricube_only(t: np.ndarray) -> tuple[tuple[np.ndarray], tuple[np.ndarray]]:
    """(K,) and (K²,) alone: bins on distinct values need no derivatives.

    The arithmetic of :func:`_tricube_both`, so the values are identical.
    """
    a = np.minimum(np.abs(t), 1.0)
    one = np.multiply(a, a)
    one *= a
    np.subtract(1.0, one, out=one)
    power = one * one
    kernel = power * one
    power *= power
    power *= one
    power *= one  # ((one² · one²) · one) · one, as in _tricube_both
    return (kernel,), (power,)


def _moments(
    kernel: tuple[np.ndarray, ...],
    t: np.ndarray,
    h: np.ndarray,
    sums: np.ndarray,
    top: int,
) -> np.ndarray:
    r"""Return :math:`\sum_b \sum_{i \in b} c_i \varphi_m(z_i)` for :math:`\varphi_m = K z^m`.

    ``kernel`` is :math:`(K)` (bins are distinct values) or :math:`(K, K', K'')` (second-order
    expansion about the bin centres); ``sums`` is (B, c·J): the per-bin power sums of the
    c weighted columns for j = 0..J-1, J = len(kernel). The result has shape (top + 1, G, c).
    """
    orders = len(kernel)
    powers = [t]  # t^1 .. t^top (t^0 = 1 needs no product)
    for _ in range(top - 1):
        powers.append(powers[-1] * t)
    stack = np.empty((orders, top + 1, *t.shape))
    for a in range(orders):
        stack[a, 0] = kernel[a]
        for j in range(1, top + 1):
            np.multiply(kernel[a], powers[j - 1], out=stack[a, j])
    products = stack.reshape(orders * (top + 1) * t.shape[0], t.shape[1]) @ sums
    products = products.reshape(orders, top + 1, t.shape[0], sums.shape[1])
    c = sums.shape[1] // orders
    out = np.empty((top + 1, t.shape[0], c))
    for m in range(top + 1):
        value = products[0, m, :, :c].copy()
        if orders == 3:
            d1 = products[1, m, :, c : 2 * c].copy()
            d2 = products[2, m, :, 2 * c :].copy()
            if m >= 1:
                d1 += m * products[0, m - 1, :, c : 2 * c]
                d2 += 2.0 * m * products[1, m - 1, :, 2 * c :]
            if m >= 2:
                d2 += m * (m - 1) * products[0, m - 2, :, 2 * c :]
            value += d1 / h[:, None] + 0.5 * d2 / h[:, None] ** 2
        out[m] = value
    return out
