r"""The scale of a cumulative path under perfect calibration: one family, one enum of methods.

Every method returns :math:`\sigma = \sqrt{\textstyle\sum_j W_j^2 v_j} / \sum_j W_j` for some
per-observation variance :math:`v_j`, or Appendix C's adjacent-difference estimate:

``"bernoulli"``
    :math:`v_j = S_j(1-S_j)`: eq. (5) of [1] for 0/1 responses (:func:`sigma_bernoulli`). For the
    deviation of a subpopulation from the full population, paper 003 uses the same form with
    :math:`v = \tilde R(1-\tilde R)` (eqs. (21), (31) of [2]).
``"adjacent"``
    Appendix C eq. (6) of [1] for real-valued responses (:func:`sigma_adjacent`), with the tie
    rule stated there.
``"variance"``
    :math:`v` = the empirical variance of the full population's responses in the bin around
    each member: eqs. (22)-(23), (32)-(33) of [2] (the deviation statistics only).
``"auto"``
    ``"bernoulli"`` for 0/1 responses, otherwise ``"adjacent"`` for calibration statistics and
    ``"variance"`` for the deviation statistics.

Every public function that takes ``sigma_method`` accepts exactly :data:`SIGMA_METHODS` and
resolves it with :func:`resolve_sigma_method`.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eq. (5) and Appendix C eq. (6).
.. [2] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023; eqs. (21)-(23), (31)-(33).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import numpy as np

from mcviz.core.ratio import safe_ratio
from mcviz.errors import ValidationError

__all__ = [
    "SIGMA_METHODS",
    "SigmaMethod",
    "adjacent_terms",
    "resolve_sigma_method",
    "sigma_adjacent",
    "sigma_adjacent_from_terms",
    "sigma_bernoulli",
    "sigma_from_variance",
]


class SigmaMethod(StrEnum):
    """How sigma is estimated (see the module docstring)."""

    BERNOULLI = "bernoulli"
    ADJACENT = "adjacent"
    VARIANCE = "variance"


SIGMA_METHODS: tuple[str, ...] = ("auto", "bernoulli", "adjacent", "variance")
"""The values every ``sigma_method`` parameter accepts."""

Statistic = Literal["calibration", "deviation"]


def resolve_sigma_method(
    sigma_method: str | SigmaMethod, response_kind: str, *, statistic: Statistic = "calibration"
) -> SigmaMethod:
    """Resolve ``"auto"`` and check that the method applies to the statistic.

    Parameters
    ----------
    sigma_method : {"auto", "bernoulli", "adjacent", "variance"} or SigmaMethod
    response_kind : {"binary", "continuous"}
    statistic : {"calibration", "deviation"}
        Calibration (cumulative differences, multi-calibration, screening) takes ``"bernoulli"``
        or ``"adjacent"``; the deviation from the full population ``"bernoulli"`` or
        ``"variance"``.

    Raises
    ------
    ValidationError
        An unknown value, or a method that does not apply to the statistic.

    Examples
    --------
    >>> resolve_sigma_method("auto", "continuous").value
    'adjacent'
    >>> resolve_sigma_method("auto", "continuous", statistic="deviation").value
    'variance'
    """
    value = sigma_method.value if isinstance(sigma_method, SigmaMethod) else sigma_method
    if value not in SIGMA_METHODS:
        raise ValidationError(
            f"sigma_method must be one of {', '.join(SIGMA_METHODS)}, not {sigma_method!r}."
        )
    if value == "auto":
        if response_kind == "binary":
            return SigmaMethod.BERNOULLI
        return SigmaMethod.ADJACENT if statistic == "calibration" else SigmaMethod.VARIANCE
    method = SigmaMethod(value)
    if statistic == "calibration" and method is SigmaMethod.VARIANCE:
        raise ValidationError(
            "sigma_method='variance' (paper 003 eqs. (22)-(23)) applies to the deviation of a "
            "subpopulation from the full population; for calibration use 'bernoulli' (eq. (5)) "
            "or 'adjacent' (Appendix C eq. (6))."
        )
    if statistic == "deviation" and method is SigmaMethod.ADJACENT:
        raise ValidationError(
            "sigma_method='adjacent' (Appendix C eq. (6)) applies to calibration statistics; "
            "for the deviation from the full population use 'bernoulli' (eq. (21)) or "
            "'variance' (eqs. (22)-(23))."
        )
    return method


def sigma_from_variance(variance_sum, weight_total):
    r"""Return :math:`\sqrt{\sum_j W_j^2 v_j} / \sum_j W_j` (0 when the weight is 0).

    The common form of eq. (5) of [1] and eqs. (21)-(22), (31)-(32) of [2], from the sums
    :math:`\sum_j W_j^2 v_j` and :math:`\sum_j W_j` (scalars or arrays).

    Examples
    --------
    >>> sigma_from_variance(0.25 * 4, 4.0)
    0.25
    """
    return safe_ratio(np.sqrt(np.maximum(variance_sum, 0.0)), weight_total)


def sigma_bernoulli(score: np.ndarray, weight: np.ndarray) -> float:
    r"""Return the standard deviation of :math:`C_n` under perfect calibration, eq. (5) of [1].

    .. math:: \sigma = \sqrt{\textstyle\sum_j S_j(1-S_j)W_j^2} \,/\, \textstyle\sum_j W_j

    Examples
    --------
    >>> round(sigma_bernoulli(np.array([0.5, 0.5, 0.5, 0.5]), np.ones(4)), 12)
    0.25
    """
    return float(sigma_from_variance(np.sum(score * (1.0 - score) * weight**2),
                                     np.sum(weight)))  # eq. (5)


def adjacent_terms(residual_sum: np.ndarray, weight: np.ndarray) -> np.ndarray:
    r"""Terms :math:`(e_t - e_{t+1})^2 (V_t + V_{t+1})^2` of eq. (6) over consecutive tie runs.

    Parameters
    ----------
    residual_sum : ndarray, shape (q,) or (q, N)
        :math:`\sum_{j \in t} W_j (R_j - S_j)` for each tie run :math:`t` in score order (one
        column per set of responses).
    weight : ndarray, shape (q,)
        :math:`V_t = \sum_{j \in t} W_j`.

    Returns
    -------
    ndarray, shape (q - 1,) or (q - 1, N)
    """
    shape = (-1,) + (1,) * (residual_sum.ndim - 1)
    mean = safe_ratio(residual_sum, weight.reshape(shape))  # an empty run has no residual
    pair = (weight[1:] + weight[:-1]).reshape(shape)
    return np.diff(mean, axis=0) ** 2 * pair**2


def sigma_adjacent_from_terms(term_sum, weight_total, first_weight, last_weight):
    r"""Eq. (6) from its pieces: :math:`\sqrt{\text{terms} / (4 W (2W - V_1 - V_q))}`.

    ``term_sum`` is the sum of :func:`adjacent_terms`, ``weight_total`` :math:`W = \sum_t V_t`,
    ``first_weight`` and ``last_weight`` :math:`V_1` and :math:`V_q`. With one run the
    denominator and the terms are 0 and so is :math:`\sigma` (0/0 = 0).
    """
    weight_total = np.asarray(weight_total, dtype=float)
    denominator = 4.0 * weight_total * (2.0 * weight_total - first_weight - last_weight)
    shape = np.shape(denominator) + (1,) * (np.ndim(term_sum) - np.ndim(denominator))
    return np.sqrt(safe_ratio(term_sum, np.reshape(denominator, shape)))


def sigma_adjacent(
    residual: np.ndarray, weight: np.ndarray, run_end: np.ndarray | None = None
) -> float:
    r"""Variance estimate for real-valued responses, Appendix C eq. (6) of [1], tie-aware.

    .. math::
        \sigma^2 = \frac{\sum_{t=1}^{q-1} (e_t - e_{t+1})^2 (V_t + V_{t+1})^2}
        {4 \left(\sum_t V_t\right)\left(V_1 + V_q + 2\sum_{t=2}^{q-1} V_t\right)},
        \qquad e_t = \frac{\sum_{j \in t} W_j (R_j - S_j)}{V_t}, \quad
        V_t = \sum_{j \in t} W_j,

    over the :math:`q` runs of tied scores :math:`t` in score order. Tie rule: eq. (6) is
    stated for distinct scores, where each run is one observation (:math:`e_t = d_j`,
    :math:`V_t = W_j`) and this is exactly the paper's formula; with ties the observations of a
    run are aggregated first (total weight, weighted mean residual), so :math:`\sigma` does not
    depend on the order of tied rows. Differences of adjacent residuals cancel any slowly
    varying miscalibration.

    Parameters
    ----------
    residual : ndarray, shape (n,)
        :math:`d_j = R_j - S_j` in score order.
    weight : ndarray, shape (n,)
    run_end : ndarray of bool, shape (n,), optional
        True at the last row of each run of tied scores (default: no ties).

    Examples
    --------
    Residuals alternating +1, -1 with unit weights: numerator (n-1)·4·4, denominator
    4·n·(2n-2), so sigma**2 = 2/n.

    >>> round(sigma_adjacent(np.array([1.0, -1.0, 1.0, -1.0]), np.ones(4)) ** 2, 12)
    0.5

    Tied rows are one run: swapping the two tied rows changes nothing.

    >>> ends = np.array([True, False, True, True])
    >>> a = sigma_adjacent(np.array([0.1, 0.5, -0.2, 0.3]), np.ones(4), ends)
    >>> b = sigma_adjacent(np.array([0.1, -0.2, 0.5, 0.3]), np.ones(4), ends)
    >>> bool(abs(a - b) < 1e-15)
    True
    """
    if residual.size == 0:
        return 0.0
    if run_end is None or run_end.all():
        runs_residual, runs_weight = weight * residual, weight
    else:
        starts = np.concatenate(([0], np.flatnonzero(run_end[:-1]) + 1))
        runs_residual = np.add.reduceat(weight * residual, starts)
        runs_weight = np.add.reduceat(weight, starts)
    total = runs_weight.sum()
    terms = adjacent_terms(runs_residual, runs_weight).sum()  # eq. (6), numerator
    return float(sigma_adjacent_from_terms(terms, total, runs_weight[0], runs_weight[-1]))
