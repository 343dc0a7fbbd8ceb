r"""The multi-calibration metric M, eq. (4) of paper 000, once (library, engines, null draws).

.. math:: M = \max_{0 \le k \le \ell} \frac{D_k \, \sigma_0}{\sigma_k}

where subpopulation 0 is always the full population. Paper 000, right after eq. (4): "the
argument to the max for :math:`k = 0` is simply :math:`D_0`" (so :math:`\sigma_0 = 0` still
gives :math:`M \ge D_0`), and :math:`0/0 = 0` for :math:`k \ge 1`
(:func:`~mcviz.core.ratio.safe_ratio`; :math:`\sigma_0 = 0` makes every other argument 0).

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eq. (4) and the text after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.ratio import safe_ratio

__all__ = ["MetricValue", "multicalibration_metric", "normalized_kuiper"]


def normalized_kuiper(kuiper: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    r"""Arguments of the max in eq. (4): :math:`D_0` for row 0, :math:`D_k\sigma_0/\sigma_k` after.

    Parameters
    ----------
    kuiper, sigma : ndarray, shape (l + 1,) or (l + 1, N)
        Row 0 is the full population; a second axis holds independent sets of responses (null
        draws), each normalised by its own :math:`\sigma_0`. ``sigma`` may be (l + 1,) with a
        2-D ``kuiper`` (eq. (5) does not depend on the responses).

    Returns
    -------
    ndarray of the same shape

    Examples
    --------
    >>> normalized_kuiper(np.array([0.1, 0.3, 0.0]), np.array([0.05, 0.1, 0.0])).tolist()
    [0.1, 0.15, 0.0]
    >>> normalized_kuiper(np.array([0.1, 0.3]), np.array([0.0, 0.1])).tolist()  # sigma_0 = 0
    [0.1, 0.0]
    """
    kuiper = np.asarray(kuiper, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    if sigma.ndim < kuiper.ndim:  # one sigma per subpopulation for every set of responses
        sigma = np.broadcast_to(sigma[:, None], kuiper.shape)
    out = np.asarray(safe_ratio(kuiper * sigma[:1], sigma), dtype=float).copy()  # eq. (4)
    out[0] = kuiper[0]  # "the argument to the max for k = 0 is simply D_0"
    return out


@dataclass(frozen=True, slots=True, eq=False)
class MetricValue:
    """Eq. (4): the normalised values, M and the (first) row attaining it.

    Attributes
    ----------
    normalized : ndarray, shape (l + 1,) or (l + 1, N)
    metric : float or ndarray of shape (N,)
    argmax : int or ndarray of int, shape (N,)
    """

    normalized: np.ndarray
    metric: float | np.ndarray
    argmax: int | np.ndarray


def multicalibration_metric(kuiper: np.ndarray, sigma: np.ndarray) -> MetricValue:
    r"""Return :math:`M` of eq. (4) (per column when 2-D), its argmax and the normalised values.

    Examples
    --------
    >>> value = multicalibration_metric(np.array([0.1, 0.3]), np.array([0.05, 0.1]))
    >>> round(value.metric, 12), value.argmax
    (0.15, 1)
    """
    normalized = normalized_kuiper(kuiper, sigma)
    normalized.flags.writeable = False
    argmax = np.argmax(normalized, axis=0)
    metric = np.take_along_axis(normalized, argmax[None], axis=0)[0] if normalized.ndim > 1 \
        else normalized[argmax]
    if normalized.ndim == 1:
        return MetricValue(normalized, float(metric), int(argmax))
    return MetricValue(normalized, metric, argmax)
