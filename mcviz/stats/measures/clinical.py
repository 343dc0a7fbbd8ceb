r"""Clinical calibration measures: intercept, slope, O/E, ICI/E50/E90, Hosmer-Lemeshow.

Logistic recalibration ([1], "weak calibration"; [2]). With the linear predictor
:math:`\eta_i = \operatorname{logit} S_i` (scores clipped to :math:`[10^{-15}, 1 - 10^{-15}]`),

.. math::
    \text{intercept } a: \ \operatorname{logit} P(R_i = 1) = a + \eta_i \ (\text{slope fixed at 1,
    offset } \eta_i), \qquad
    \text{slope } b: \ \operatorname{logit} P(R_i = 1) = a' + b\,\eta_i ,

each fitted by maximum likelihood with frequency weights :math:`W_i` (the log-likelihood
:math:`\sum_i W_i [R_i \theta_i - \log(1 + e^{\theta_i})]`) by Newton's method until a step is
below :math:`10^{-9}` (relative; Newton converges quadratically, so the estimate is then exact to
rounding; the information is taken at the iterate before that last step, which moves it by
:math:`O(10^{-9})` relative). Both start where the fitted probabilities are the scores.
Perfect calibration gives :math:`a = 0` and :math:`b = 1`; :math:`a > 0` means the scores are
too low on average, :math:`b < 1` that they are too extreme (overfitting). The 95% Wald
intervals are :math:`\hat a \pm z_{0.975} \sqrt{(\sum_i W_i p_i (1 - p_i))^{-1}}` and
:math:`\hat b \pm z_{0.975} \sqrt{[I^{-1}]_{bb}}` with the Fisher information :math:`I` at the
estimate (the GLM with ``freq_weights`` and unit scale). Since :math:`\eta` is constant on a run of
tied scores, the fits use the run sums of :math:`W` and :math:`WR` (exact).

The observed/expected ratio is :math:`O/E = \sum_i W_i R_i / \sum_i W_i S_i`.

ICI, E50, E90 (Austin & Steyerberg [3]): a smoothed calibration curve
:math:`\hat g` is fitted by LOESS of the response on the score, as in their paper (R's
``loess(y ~ p)`` with its defaults: span 0.75, local quadratic, tricube weights, no robustness
iterations); then with :math:`d_i = |\hat g(S_i) - S_i|`

.. math:: \mathrm{ICI} = \frac{\sum_i W_i d_i}{\sum_i W_i}, \qquad
          E50 = \operatorname{median}_i d_i, \qquad E90 = \operatorname{quantile}_{0.9}\, d_i

(the ICI of [3]: the mean over the empirical distribution of the scores; R's type-7
quantiles unweighted, the lower weighted quantile when weighted). The LOESS is mcviz's own
(:func:`mcviz.stats.smoothing.loess_curve`, exact direct fits at up to 2,048 distinct scores, else its
Taylor-binned evaluation, within :math:`10^{-6}` of the direct fit); it is evaluated at every
distinct score when there are at most ``curve_points`` of them, else at ``curve_points`` equally
spaced scores between the smallest and the largest, linearly interpolated in between (the curve
has span 0.75: on the test sets ICI moves by about :math:`10^{-6}` and E50/E90 by up to
:math:`10^{-5}`, far below their statistical error). R's ``loess`` by
default interpolates its fit from a k-d tree (``surface = "interpolate"``); the direct fit here
is the definition that interpolation approximates.

Hosmer-Lemeshow ([4]): the rows are divided into ``groups`` (10: "deciles of risk") of about
equal total weight in score order, a run of tied scores going to the group in which its last
row's cumulative weight falls (so ties are never split; empty groups are dropped), and

.. math:: \hat C = \sum_{g} \frac{(O_g - E_g)^2}{E_g (1 - E_g / N_g)}, \qquad
          O_g = \sum_{i \in g} W_i R_i,\ E_g = \sum_{i \in g} W_i S_i,\ N_g = \sum_{i\in g} W_i ,

referred to :math:`\chi^2` with :math:`G - 2` degrees of freedom for :math:`G` non-empty groups.
Caveat: the statistic and its p-value depend on the number of groups and on how ties and group
edges are handled (different packages give different p-values on the same data), its power is
low in small samples and it rejects trivial miscalibration in large ones; mcviz reports it
because reviewers ask for it, and prefers the measures above.

References
----------
.. [1] B. Van Calster, D. J. McLernon, M. van Smeden, L. Wynants, E. W. Steyerberg, "Calibration:
   the Achilles heel of predictive analytics", BMC Medicine 17, 230, 2019.
.. [2] D. R. Cox, "Two further applications of a model for binary regression", Biometrika 45,
   1958 (the recalibration model).
.. [3] P. C. Austin, E. W. Steyerberg, "The Integrated Calibration Index (ICI) and related
   metrics for quantifying the calibration of logistic regression models", Statistics in
   Medicine 38, 2019 (definitions of ICI, E50, E90; the papers cited in this package are not
   in shared/papers, so they are cited by the names of their definitions, not equation numbers).
.. [4] D. W. Hosmer, S. Lemeshow, "Goodness of fit tests for the multiple logistic regression
   model", Communications in Statistics A 9, 1980.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mcviz.stats.binning import equal_count_runs
from mcviz.core.arrays import Z95  # the one 97.5% normal quantile
from mcviz.core.arrays import readonly as _readonly
from mcviz.core.special import chi2_sf, expit
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.measures._data import (
    CLIP,
    _dot,
    _Rows,
    _rows,
    _weighted_quantile,
    counted_quantile,
)
from mcviz.stats.smoothing import loess_curve, loess_fit_from_counts

__all__ = [
    "CalibrationCurveSummary",
    "HosmerLemeshow",
    "LogisticRecalibration",
    "calibration_curve_summary",
    "hosmer_lemeshow",
    "logistic_recalibration",
]

LOESS_SPAN = 0.75
LOESS_DEGREE = 2
_NEWTON_STEPS = 100
_NEWTON_TOLERANCE = 1e-9
_MAX_STEP = 4.0  # logits: the intercept's Newton steps are bounded (safeguarded Newton)


@dataclass(frozen=True, slots=True, eq=False)
class LogisticRecalibration:
    """Calibration intercept (slope fixed at 1) and slope, with 95% Wald intervals, and O/E.

    Attributes
    ----------
    intercept, intercept_se, intercept_low, intercept_high : float
    slope, slope_se, slope_low, slope_high : float
    slope_model_intercept : float
        The intercept :math:`a'` fitted together with the slope.
    oe_ratio : float
        Observed over expected events.
    converged : bool
        False when a fit has no finite maximum (all responses 0 or 1, separated or constant
        scores); that fit's estimates are then NaN.
    n : int
    weight_total : float
    weighted : bool
    """

    intercept: float
    intercept_se: float
    intercept_low: float
    intercept_high: float
    slope: float
    slope_se: float
    slope_low: float
    slope_high: float
    slope_model_intercept: float
    oe_ratio: float
    converged: bool
    n: int
    weight_total: float
    weighted: bool


@dataclass(frozen=True, slots=True, eq=False)
class CalibrationCurveSummary:
    """ICI, E50 and E90 from a LOESS calibration curve (Austin & Steyerberg 2019).

    Attributes
    ----------
    ici, e50, e90, emax : float
        Weighted mean, median, 90th percentile and maximum of |curve - score| over the rows.
    x, curve : ndarray
        The points where the LOESS was evaluated and its values there.
    span : float
    degree : int
    interpolated : bool
        True when the curve was evaluated on a grid and interpolated to the scores.
    n : int
    weighted : bool
    """

    ici: float
    e50: float
    e90: float
    emax: float
    x: np.ndarray
    curve: np.ndarray
    span: float
    degree: int
    interpolated: bool
    n: int
    weighted: bool


@dataclass(frozen=True, slots=True, eq=False)
class HosmerLemeshow:
    """The Hosmer-Lemeshow test over groups of about equal weight ("deciles of risk").

    Attributes
    ----------
    statistic : float
    df : int
        Non-empty groups minus 2.
    p_value : float
        Upper tail of chi-square with ``df`` degrees of freedom (NaN when df < 1).
    observed, expected, weight, upper_score : ndarray of shape (G,)
        Per group: :math:`O_g`, :math:`E_g`, :math:`N_g` and the largest score.
    note : str
        The caveat: the result depends on the grouping.
    """

    statistic: float
    df: int
    p_value: float
    observed: np.ndarray
    expected: np.ndarray
    weight: np.ndarray
    upper_score: np.ndarray
    note: str


HL_NOTE = (
    "depends on the number of groups and on where their edges fall (other software may give "
    "another p-value on the same data); low power in small samples, rejects trivial "
    "miscalibration in large ones"
)


def logistic_recalibration(
    pred: Predictions, *, index: np.ndarray | None = None
) -> LogisticRecalibration:
    r"""Calibration intercept and slope by logistic recalibration, with 95% Wald intervals; O/E.

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool mask, optional
        A subpopulation (sorted positions); default the full population.

    Returns
    -------
    LogisticRecalibration

    Notes
    -----
    See the module Notes (the two models, the Wald intervals and O/E).

    Examples
    --------
    Scores 1/2 everywhere and 3 of 4 responses 1: the intercept is logit(3/4) = log 3, with
    standard error :math:`1/\sqrt{4 \cdot 3/4 \cdot 1/4}`; O/E = 3 / 2.

    >>> pred = Predictions.from_arrays([0.5, 0.5, 0.5, 0.5], [1, 1, 1, 0])
    >>> fit = logistic_recalibration(pred)
    >>> bool(np.isclose(fit.intercept, np.log(3))), round(fit.intercept_se, 12), fit.oe_ratio
    (True, 1.154700538379, 1.5)
    """
    rows = _rows(pred, index, what="logistic recalibration")
    return _recalibration(rows)


def calibration_curve_summary(
    pred: Predictions,
    *,
    index: np.ndarray | None = None,
    curve_points: int = 200,
) -> CalibrationCurveSummary:
    r"""ICI, E50, E90 (and Emax) from a LOESS calibration curve (Austin & Steyerberg 2019).

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool mask, optional
    curve_points : int, default 200
        Evaluate at every distinct score when there are at most this many, else at this many
        equally spaced scores, interpolated linearly.

    Returns
    -------
    CalibrationCurveSummary

    Raises
    ------
    ValidationError
        When every score is the same (no curve can be fitted).

    Notes
    -----
    See the module Notes (span 0.75, quadratic, as R's ``loess`` defaults used in the paper).
    """
    if int(curve_points) < 2:
        raise ValidationError(f"curve_points must be at least 2, not {curve_points!r}.")
    rows = _rows(pred, index, what="the ICI")
    return _curve_summary(rows, int(curve_points))


def hosmer_lemeshow(
    pred: Predictions, *, index: np.ndarray | None = None, groups: int = 10
) -> HosmerLemeshow:
    r"""Test goodness of fit by Hosmer-Lemeshow over groups of equal weight (module Notes).

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool mask, optional
    groups : int, default 10

    Returns
    -------
    HosmerLemeshow

    Examples
    --------
    Four groups of one row: scores 0.2, 0.4, 0.6, 0.8, responses 0, 1, 0, 1. A group with
    :math:`N = 1` contributes :math:`(O - E)^2 / (E(1 - E))`: 0.04/0.16 + 0.36/0.24 + 0.36/0.24
    + 0.04/0.16 = 3.5 on 2 degrees of freedom, p = exp(-3.5/2).

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> hl = hosmer_lemeshow(pred, groups=4)
    >>> round(hl.statistic, 12), hl.df, bool(np.isclose(hl.p_value, np.exp(-1.75)))
    (3.5, 2, True)
    """
    if int(groups) < 3:
        raise ValidationError(f"groups must be at least 3 (df = groups - 2), not {groups!r}.")
    rows = _rows(pred, index, what="the Hosmer-Lemeshow test")
    return _hosmer_lemeshow(rows, int(groups))


# --------------------------------------------------------------------------------------------
# Private helpers (inputs are trusted)


def _recalibration(rows: _Rows) -> LogisticRecalibration:
    weight, positive = rows.run_sum("w"), rows.run_sum("wy")
    clipped = np.clip(rows.run_score, CLIP, 1.0 - CLIP)
    eta = np.log(clipped) - np.log1p(-clipped)  # logit
    total = rows.total
    expected = float(np.sum(rows.times_weight(rows.score)))
    oe = float(positive.sum() / expected) if expected > 0 else float("inf")
    intercept, info = _fit_offset(clipped, weight, positive)
    coefficients, covariance = _fit_slope(eta, clipped, weight, positive,
                                          ones=rows.unit_weights and rows.no_ties)
    converged = bool(np.isfinite(intercept) and np.isfinite(coefficients).all())
    se_a = float(1.0 / np.sqrt(info)) if np.isfinite(intercept) else np.nan
    se_b = float(np.sqrt(covariance[1, 1]))
    a = intercept
    a2, b = coefficients
    return LogisticRecalibration(
        intercept=float(a),
        intercept_se=se_a,
        intercept_low=float(a - Z95 * se_a),
        intercept_high=float(a + Z95 * se_a),
        slope=float(b),
        slope_se=se_b,
        slope_low=float(b - Z95 * se_b),
        slope_high=float(b + Z95 * se_b),
        slope_model_intercept=float(a2),
        oe_ratio=oe,
        converged=bool(converged),
        n=rows.n,
        weight_total=total,
        weighted=rows.weighted,
    )


def _fit_offset(
    clipped: np.ndarray, weight: np.ndarray, positive: np.ndarray
) -> tuple[float, float]:
    """Newton's method for a in logit p = a + logit S; returns (a, Fisher information).

    With the odds against, :math:`u = (1 - S)/S`, :math:`p = 1/(1 + e^{-a} u)`: no exponential
    per row and iteration.
    """
    events, total = float(positive.sum()), float(weight.sum())
    if events <= 0 or events >= total:
        return np.nan, np.nan
    odds_against = (1.0 - clipped) / clipped
    p = np.empty_like(clipped)
    q = np.empty_like(clipped)
    a = 0.0
    for _ in range(_NEWTON_STEPS):
        if a == 0.0:
            p[:] = clipped  # expit(0 + logit S) = S
        else:
            np.multiply(odds_against, np.exp(-a), out=p)
            p += 1.0
            np.reciprocal(p, out=p)
        np.multiply(p, p, out=q)
        np.subtract(p, q, out=q)  # p (1 - p)
        info = _dot(weight, q)
        score = events - _dot(weight, p)
        # the score is decreasing in a (concave log-likelihood): a Newton step, bounded so it
        # cannot jump to where every p(1 - p) underflows, or the bound itself when the
        # information has underflowed already
        step = score / info if info > 0 else math.copysign(_MAX_STEP, score)
        step = min(max(step, -_MAX_STEP), _MAX_STEP)
        a += step
        if abs(step) < _NEWTON_TOLERANCE * max(1.0, abs(a)):
            return a, info  # the information moves by O(step) in the last step
    return np.nan, np.nan


def _fit_slope(
    eta: np.ndarray, clipped: np.ndarray, weight: np.ndarray, positive: np.ndarray, *,
    ones: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method (IRLS) for (a', b) in logit p = a' + b eta; returns (coef, covariance).

    The iterations start at (0, 1), where p is the score itself (no exponential). ``ones``:
    every weight is 1 (W eta is eta itself).
    """
    nan = np.full(2, np.nan)
    events, total = float(positive.sum()), float(weight.sum())
    if events <= 0 or events >= total or np.ptp(eta) == 0:
        return nan, np.full((2, 2), np.nan)
    weight_eta = eta if ones else weight * eta
    weight_eta2 = weight_eta * eta
    target = np.array([events, _dot(positive, eta)])  # Σ W R (1, η)
    p = np.empty_like(eta)
    q = np.empty_like(eta)

    def information(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if beta[0] == 0.0 and beta[1] == 1.0:
            p[:] = clipped
        else:
            np.multiply(eta, beta[1], out=p)
            np.add(p, beta[0], out=p)
            expit(p, out=p)
        np.multiply(p, p, out=q)
        np.subtract(p, q, out=q)  # p (1 - p)
        off = _dot(weight_eta, q)
        info = np.array([[_dot(weight, q), off], [off, _dot(weight_eta2, q)]])
        fitted = np.array([_dot(weight, p), _dot(weight_eta, p)])
        return info, target - fitted  # Fisher information, score

    beta = np.array([0.0, 1.0])
    for _ in range(_NEWTON_STEPS):
        info, score = information(beta)
        try:
            step = np.linalg.solve(info, score)
        except np.linalg.LinAlgError:
            break
        beta = beta + step
        if not np.isfinite(beta).all() or np.abs(beta).max() > 1e8:
            break  # separation: the likelihood has no finite maximum
        if np.abs(step).max() < _NEWTON_TOLERANCE * max(1.0, np.abs(beta).max()):
            return beta, np.linalg.inv(info)  # the information moves by O(step)
    return nan, np.full((2, 2), np.nan)


def _curve_summary(
    rows: _Rows, curve_points: int, *, constant_ok: bool = False
) -> CalibrationCurveSummary:
    distinct = rows.run_score
    if distinct.size < 2:
        if not constant_ok:
            raise ValidationError(
                "every score is the same; the ICI needs a calibration curve against the score."
            )
        empty = _readonly(np.empty(0))
        return CalibrationCurveSummary(ici=np.nan, e50=np.nan, e90=np.nan, emax=np.nan, x=empty,
                                       curve=empty, span=LOESS_SPAN, degree=LOESS_DEGREE,
                                       interpolated=False, n=rows.n, weighted=rows.weighted)
    interpolated = distinct.size > curve_points
    at = np.linspace(distinct[0], distinct[-1], curve_points) if interpolated else distinct
    weight = rows.weight if rows.weighted else None
    if rows.counts is not None:  # runs standing for their rows: the same fit from their sums
        fit = loess_fit_from_counts(distinct, rows.counts, rows.weight, rows.label, at,
                                    span=LOESS_SPAN, degree=LOESS_DEGREE)
    else:
        fit = loess_curve(rows.score, rows.label, weight, span=LOESS_SPAN, degree=LOESS_DEGREE,
                          at=at, name="score").fit
    run_fit = np.interp(distinct, at, fit) if interpolated else fit
    run_weight = rows.run_sum("w")
    gap = np.abs(run_fit - distinct)  # d_i, constant on a run of tied scores
    ones = rows.unit_weights and rows.no_ties  # every run one row of weight 1: W d = d
    ici = float(np.sum(gap if ones else run_weight * gap) / rows.total)  # the ICI of [3]
    if rows.counts is not None and np.array_equal(run_weight, rows.counts):  # unit weights
        e50, e90 = counted_quantile(gap, rows.counts, [0.5, 0.9])
    elif rows.weighted:
        e50, e90 = _weighted_quantile(gap, run_weight, [0.5, 0.9], equal=False)
    else:  # each row's gap once (np.quantile leaves its input as it is)
        every = gap if ones else np.repeat(gap, run_weight.astype(np.int64))
        e50, e90 = _weighted_quantile(every, run_weight, [0.5, 0.9], equal=True)
    return CalibrationCurveSummary(
        ici=ici,
        e50=float(e50),
        e90=float(e90),
        emax=float(gap.max()),
        x=_readonly(np.array(at, dtype=float)),
        curve=_readonly(np.array(fit, dtype=float)),
        span=LOESS_SPAN,
        degree=LOESS_DEGREE,
        interpolated=bool(interpolated),
        n=rows.n,
        weighted=rows.weighted,
    )


def _hosmer_lemeshow(rows: _Rows, groups: int) -> HosmerLemeshow:
    run_weight = rows.run_sum("w")
    # the group in which each run's last row's cumulative weight falls, ((g-1)W/G, gW/G]: the
    # equal-count rule of mcviz.stats.binning; empty groups are dropped
    # (unit weights, no ties: the cumulative weights are the integers 1..n, exactly)
    cumulative = np.arange(1.0, rows.n + 1.0) if rows.unit_weights and rows.no_ties else (
        np.cumsum(run_weight))
    bounds = np.unique(np.concatenate(([0], equal_count_runs(cumulative, groups))))
    first = bounds[:-1]
    n_g = np.diff(np.append(first, run_weight.size)).astype(float) if (
        rows.unit_weights and rows.no_ties) else (
        np.add.reduceat(run_weight, first))  # (sums of ones: the counts, exactly)
    observed = np.add.reduceat(rows.run_sum("wy"), first)
    weighted_score = rows.times_weight(rows.score)
    expected_run = weighted_score if rows.no_ties else np.add.reduceat(weighted_score, rows.starts)
    expected = np.add.reduceat(expected_run, first)
    variance = expected * (1.0 - expected / n_g)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(variance > 0, (observed - expected) ** 2 / variance, 0.0)
    statistic = float(terms.sum())
    df = int(first.size - 2)
    # chi-squared survival function, P(X > x) = Q(df/2, x/2) (regularised upper gamma)
    p_value = chi2_sf(statistic, df) if df >= 1 else float("nan")
    last = bounds[1:] - 1
    return HosmerLemeshow(
        statistic=statistic,
        df=df,
        p_value=p_value,
        observed=_readonly(observed),
        expected=_readonly(expected),
        weight=_readonly(n_g),
        upper_score=_readonly(rows.run_score[last]),
        note=HL_NOTE,
    )
