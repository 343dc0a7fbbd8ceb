r"""The one safe-ratio rule: :math:`0/0 = 0` and :math:`d/0 = \infty` for :math:`d > 0`.

Paper 000 states the rule right after eq. (4) (a subpopulation whose responses and scores agree
exactly has :math:`D_k = \sigma_k = 0` and contributes 0); every normalised statistic in mcviz
(:math:`D/\sigma`, :math:`G/\sigma`, :math:`D_k \sigma_0/\sigma_k`, path divided by total
weight) divides through :func:`safe_ratio`.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; the text after eq. (4).
"""

from __future__ import annotations

import numpy as np

__all__ = ["safe_ratio"]


def safe_ratio(numerator, denominator):
    r"""Divide elementwise with :math:`0/0 = 0` and :math:`d/0 = \infty` (:math:`d > 0`).

    Parameters
    ----------
    numerator, denominator : float or ndarray
        Broadcast together; the denominator is non-negative (a scale or a total weight). A
        negative numerator over 0 gives :math:`-\infty`.

    Returns
    -------
    float or ndarray
        A float when both inputs are scalars, else an array of the broadcast shape.

    Examples
    --------
    >>> safe_ratio(0.0, 0.0), safe_ratio(1.0, 0.0), safe_ratio(1.0, 4.0)
    (0.0, inf, 0.25)
    """
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    positive = den > 0
    if positive.all():  # every scale positive (a path over its total weight): a division
        with np.errstate(invalid="ignore"):  # (inf / inf is nan either way)
            out = num / den
        return float(out) if out.ndim == 0 else out
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(positive, num / np.where(positive, den, 1.0),
                       np.sign(num) * np.where(num != 0, np.inf, 0.0))
    return float(out) if out.ndim == 0 else out
