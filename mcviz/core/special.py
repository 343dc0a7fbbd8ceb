r"""The few special functions the metrics need, without importing SciPy (issue 28).

``scipy.special`` takes about a quarter of a second of CPU to import (it loads
``scipy._lib.array_api_compat`` and, through NumPy's lazy attributes, ``numpy.f2py``), more than
``mcviz metrics`` spends on its statistics. These functions give the same values to rounding
(tests/core/test_special.py compares them with SciPy's to :math:`10^{-13}` relative):

* :func:`ndtr` — the standard normal CDF :math:`\Phi(x) = \tfrac12\operatorname{erfc}(-x/\sqrt2)`
  (``math.erfc``, correctly rounded to within an ulp or so, per value);
* :func:`ndtri` — its inverse (``statistics.NormalDist.inv_cdf``: Wichura's AS 241, accurate to
  about :math:`10^{-16}`), :math:`\pm\infty` at 0 and 1;
* :func:`expit` — :math:`1/(1 + e^{-x})`, as SciPy computes it (:math:`e^x/(1 + e^x)` for
  :math:`x < 0`, so it never overflows);
* :func:`xlogy` — :math:`x \log y` with :math:`0 \log y = 0`;
* :func:`chi2_sf` — the :math:`\chi^2` survival function for integer degrees of freedom,
  :math:`Q(k/2, x/2)`, by its finite sums (even :math:`k`:
  :math:`e^{-x/2}\sum_{j<k/2} (x/2)^j/j!`; odd :math:`k`:
  :math:`\operatorname{erfc}\sqrt{x/2} + e^{-x/2}\sum_{j<(k-1)/2} (x/2)^{j+1/2}/\Gamma(j+3/2)`;
  Abramowitz & Stegun 26.4.4-5), each term through its logarithm so nothing overflows.

:func:`ndtr` and :func:`ndtri` call ``math`` per value: they are meant for scalars and arrays of
up to some thousands of values (p-values of subpopulations); per-row arrays use SciPy.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

__all__ = ["chi2_sf", "expit", "ndtr", "ndtri", "xlogy"]

_SQRT_HALF = math.sqrt(0.5)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


@cache
def _standard():
    """Return the standard normal distribution (``statistics`` imported on first use)."""
    from statistics import NormalDist

    return NormalDist()


def _inverse(p: float) -> float:
    if p != p:  # NaN
        return math.nan
    if p <= 0.0:
        return -math.inf if p == 0.0 else math.nan
    if p >= 1.0:
        return math.inf if p == 1.0 else math.nan
    return _standard().inv_cdf(p)


_INVERSE = np.frompyfunc(_inverse, 1, 1)


def _like(values: np.ndarray, scalar: bool) -> float | np.ndarray:
    result = np.asarray(values, dtype=float)
    return float(result) if scalar else result


def ndtr(x):
    r"""Return the standard normal CDF :math:`\Phi(x)` (float for a scalar, else an array).

    Examples
    --------
    >>> round(ndtr(1.959963984540054), 12)
    0.975
    >>> ndtr(np.array([-np.inf, 0.0, np.inf])).tolist()
    [0.0, 0.5, 1.0]
    """
    values = np.asarray(x, dtype=float)
    return _like(0.5 * _ERFC(-values * _SQRT_HALF), values.ndim == 0)


def ndtri(p):
    r"""Inverse of :func:`ndtr`: :math:`\Phi^{-1}(p)`; :math:`\pm\infty` at 1 and 0, NaN outside.

    Examples
    --------
    >>> round(ndtri(0.975), 12)
    1.95996398454
    """
    values = np.asarray(p, dtype=float)
    with np.errstate(invalid="ignore"):  # NaN in, NaN out
        return _like(_INVERSE(values), values.ndim == 0)


def expit(x, out: np.ndarray | None = None):
    r"""Return the logistic function :math:`1/(1 + e^{-x})` (``out`` may be ``x`` itself).

    Examples
    --------
    >>> expit(np.array([-800.0, 0.0, 800.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    values = np.asarray(x, dtype=float)
    negative = values < 0
    e = np.abs(values)
    np.negative(e, out=e)
    np.exp(e, out=e)  # e^{-|x|} <= 1: no overflow
    numerator = np.where(negative, e, 1.0)
    e += 1.0
    result = np.divide(numerator, e, out=out)
    return float(result) if values.ndim == 0 and out is None else result


def xlogy(x, y):
    r""":math:`x \log y`, 0 where :math:`x = 0` (whatever :math:`y`, as SciPy's ``xlogy``).

    Examples
    --------
    >>> xlogy(np.array([0.0, 2.0]), np.array([0.0, np.e])).tolist()
    [0.0, 2.0]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(x == 0, 0.0, x * np.log(y))
    return float(result) if result.ndim == 0 else result


def chi2_sf(x: float, df: int) -> float:
    r"""Survival function of :math:`\chi^2` with ``df`` (a positive integer) degrees of freedom.

    Examples
    --------
    >>> round(chi2_sf(3.841458820694124, 1), 12)
    0.05
    >>> round(chi2_sf(2.0, 2), 12) == round(math.exp(-1.0), 12)
    True
    """
    x, df = float(x), int(df)
    if df < 1:
        raise ValueError(f"df must be a positive integer, not {df!r}.")
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    if math.isinf(x):
        return 0.0
    half = x / 2.0
    log_half = math.log(half)
    if df % 2 == 0:
        terms = (j * log_half - math.lgamma(j + 1.0) - half for j in range(df // 2))
        return min(1.0, math.fsum(math.exp(t) for t in terms))
    terms = ((j + 0.5) * log_half - math.lgamma(j + 1.5) - half for j in range((df - 1) // 2))
    return min(1.0, math.erfc(math.sqrt(half)) + math.fsum(math.exp(t) for t in terms))
