r"""Paired statistics of two models scored on the same rows: losses, cumulative paths, decisions.

Two models A and B score the same labelled rows :math:`(S^A_j, S^B_j, R_j)` with weights
:math:`W_j`. Every statistic here is a function of per-row *paired* differences
:math:`d_j = L(S^B_j, R_j) - L(S^A_j, R_j)`, so the pairing (both models see the same
:math:`R_j`) is kept: the variability of :math:`R_j` that both losses share cancels in
:math:`d_j`, and intervals built on :math:`d_j` are the paired ones.

Losses
------
Brier :math:`L(s, r) = (s - r)^2`; log loss :math:`L(s, r) = -r \log \tilde s - (1 - r)
\log(1 - \tilde s)` with :math:`\tilde s` clipped to :math:`[c, 1 - c]`
(:data:`mcviz.settings.LOG_LOSS_CLIP`).

Mean difference and its interval
--------------------------------
:math:`\bar d = \sum_j W_j d_j / \sum_j W_j` with the 95% interval
:math:`\bar d \pm 1.96\,\widehat{se}`, :math:`\widehat{se}^2 = \frac{n}{n-1}
\sum_j W_j^2 (d_j - \bar d)^2 / (\sum_j W_j)^2` (the ratio-estimator variance of a weighted
mean of independent rows; unweighted it is :math:`s_d^2/n`, the paired t interval's). The
search's held-out effects use the same estimator.

Cumulative differences between paired samples
---------------------------------------------
Following Kloumann, Korevaar, McConnell, Tygert and Zhao [1], sort the rows by an ordering
variable :math:`X` (the models' average score, either model's score, or a covariate) and form

.. math::
    C_k = \frac{\sum_{j \le k} W_j d_j}{\sum_j W_j}, \quad C_0 = 0, \qquad
    A_k = \frac{\sum_{j \le k} W_j}{\sum_j W_j}
    \qquad \text{([1], the graph of cumulative differences)}

so the slope of the secant between two points of :math:`(A_k, C_k)` is the weighted average of
:math:`d` over the rows between them: where the path rises B's loss exceeds A's. The Kuiper
metric is :math:`D = \max_k C_k - \min_k C_k` ([1]; eq. (2) of paper 000), read under the tie
rule at :math:`C_0` and at the end of each run of tied :math:`X` (:mod:`mcviz.core.path`).

Null hypothesis and :math:`\sigma`. Under :math:`H_0`: :math:`E[d_j] = 0` for every :math:`j`
(B's expected loss equals A's at every value of :math:`X`), the rows independent,
:math:`C_n` has variance :math:`\sum_j W_j^2 \operatorname{Var}(d_j) / (\sum_j W_j)^2`, and
since :math:`E[d_j^2] = \operatorname{Var}(d_j)` under :math:`H_0`,

.. math::
    \sigma^2 = \frac{\sum_j W_j^2 d_j^2}{(\sum_j W_j)^2}
    \qquad \text{([1], the estimate of the variance of the random walk)}

is unbiased for it. This replaces the Bernoulli variance :math:`S_j(1 - S_j)` of eq. (5) of
paper 000: :math:`d_j` is no 0/1 response, and its variance is estimated from the paired
differences themselves (computed by :func:`mcviz.core.sigma.sigma_from_variance`, the common
form :math:`\sqrt{\sum W^2 v}/\sum W` with :math:`v_j = d_j^2`). Under an alternative
:math:`E[d_j^2] = \operatorname{Var}(d_j) + (E d_j)^2` overstates the variance, so the test errs
conservative. Under :math:`H_0` the path is a driftless random walk; scaled by :math:`\sigma`
it tends to standard Brownian motion on [0, 1], so the p-value of :math:`D/\sigma` is the tail
of the range of Brownian motion (:func:`mcviz.core.brownian.brownian_range_sf`), as in [1].
Nothing depends on the order of tied rows: the path is read at run ends and :math:`\sigma` is a
sum. Identical scores give :math:`d \equiv 0`, a flat path, :math:`D = \sigma = 0` and
:math:`D/\sigma = 0` (the safe-ratio rule), p = 1.

The two models' own residual paths in the same order (:math:`\sum_{j\le k} W_j(R_j - S^A_j)
/\sum W` and the same for B; eq. (1) of paper 000) are returned beside it with their ranges and
eq. (5) :math:`\sigma`: the residual *difference* :math:`(R - S^B) - (R - S^A) = S^A - S^B`
carries no sampling noise of :math:`R`, so it gets no test of its own; each model's residual
path has one.

Net benefit
-----------
At threshold :math:`t` a row is treated when its score is at least :math:`t`
(:mod:`mcviz.decision.net_benefit`, eq. (1) of Vickers & Elkin). Per row,
:math:`\delta_j(t) = (T^B_j - T^A_j)\,(R_j - (1 - R_j)\,t/(1-t))`, so
:math:`\mathrm{NB}_B(t) - \mathrm{NB}_A(t) = \sum_j W_j \delta_j / \sum_j W_j` exactly, and its
paired interval is the mean-difference interval above applied to :math:`\delta`.

References
----------
.. [1] I. Kloumann, H. Korevaar, C. McConnell, M. Tygert, J. Zhao, "Cumulative differences
   between paired samples", arXiv:2305.11323, 2023 (Section 2: the graph, the Kuiper metric,
   the driftless random walk and its variance estimate).
.. [2] M. Tygert, "A graphical method of cumulative differences between two subpopulations",
   J. Big Data 8, 2021.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.path import cumulative_path, path_axes, path_kuiper_ks, run_ends, value_order
from mcviz.core.sigma import sigma_bernoulli, sigma_from_variance
from mcviz.decision.net_benefit import check_thresholds
from mcviz.settings import LOG_LOSS_CLIP
from mcviz.stats.cumulative import path_statistics

__all__ = [
    "Z_95",
    "NetBenefitComparison",
    "PairedDifference",
    "PairedPath",
    "brier_loss",
    "log_loss",
    "mean_interval",
    "net_benefit_comparison",
    "paired_cumulative_differences",
    "paired_difference",
]

Z_95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""


def brier_loss(score: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Return the per-row Brier loss :math:`(S - R)^2`.

    Examples
    --------
    >>> brier_loss(np.array([0.2, 0.9]), np.array([0.0, 0.0])).round(12).tolist()
    [0.04, 0.81]
    """
    return (score - label) ** 2


def log_loss(score: np.ndarray, label: np.ndarray, *, clip: float = LOG_LOSS_CLIP) -> np.ndarray:
    """Return the per-row log loss, the score clipped to ``[clip, 1 - clip]``.

    Examples
    --------
    >>> log_loss(np.array([0.5]), np.array([1.0])).round(12).tolist()
    [0.69314718056]
    """
    s = np.clip(score, clip, 1.0 - clip)
    return -(label * np.log(s) + (1.0 - label) * np.log1p(-s))


def mean_interval(values: np.ndarray, weight: np.ndarray) -> tuple[float, float, float]:
    r"""Return the weighted mean of ``values`` and its 95% interval (module docstring).

    One row: an infinite interval (no spread to estimate). Zero weight: NaN.

    Examples
    --------
    >>> mean, low, high = mean_interval(np.array([1.0, 3.0]), np.ones(2))
    >>> mean, round(high - mean, 6)  # se^2 = 2/1 * (1 + 1) / 4 = 1
    (2.0, 1.959964)
    """
    total = float(weight.sum())
    if not total > 0:
        return (float("nan"),) * 3
    mean = float(weight @ values) / total
    k = values.size
    spread = float(np.sum(weight**2 * (values - mean) ** 2)) / total**2
    se = float(np.sqrt(spread * k / (k - 1))) if k > 1 else float("inf")
    return mean, mean - Z_95 * se, mean + Z_95 * se


@dataclass(frozen=True, slots=True, eq=False)
class PairedDifference:
    r"""Mean loss of each model on the same rows and the paired difference B - A.

    Attributes
    ----------
    loss : {"brier", "log_loss"}
    a, b : float
        Weighted mean loss of A and of B.
    difference, ci_low, ci_high : float
        :math:`\\bar d` (B - A; positive: B is worse) and its paired 95% interval.
    n : int
    """

    loss: str
    a: float
    b: float
    difference: float
    ci_low: float
    ci_high: float
    n: int

    @property
    def relative(self) -> float:
        """``difference / a``: B's loss relative to A's (NaN when A's loss is 0)."""
        return self.difference / self.a if self.a > 0 else float("nan")


def paired_difference(loss_a: np.ndarray, loss_b: np.ndarray, weight: np.ndarray, *,
                      loss: str) -> PairedDifference:
    """Return the :class:`PairedDifference` of two per-row losses (module docstring).

    Examples
    --------
    >>> r = paired_difference(np.array([0.1, 0.3]), np.array([0.2, 0.3]), np.ones(2),
    ...                       loss="brier")
    >>> round(r.difference, 12), round(r.b - r.a, 12)
    (0.05, 0.05)
    """
    total = float(weight.sum())
    difference = loss_b - loss_a
    mean, low, high = mean_interval(difference, weight)
    return PairedDifference(loss=loss, a=float(weight @ loss_a) / total,
                            b=float(weight @ loss_b) / total, difference=mean, ci_low=low,
                            ci_high=high, n=int(difference.size))


@dataclass(frozen=True, slots=True, eq=False)
class PairedPath:
    r"""The cumulative differences of the paired losses along one ordering variable.

    Attributes
    ----------
    order_by : str
        The ordering variable's name.
    x, fraction : ndarray
        :math:`A_k` (cumulative weight share; :math:`k/n` unweighted) and :math:`k/n` at each
        point (origin first).
    position : ndarray
        The ordering variable's value at each point (``position[0]`` repeats the first).
    path : ndarray
        :math:`C_k` of :math:`d = L_B - L_A` (module docstring); rising where B is worse.
    kuiper, ks, sigma, kuiper_z, ks_z, p_value : float
        :math:`D`, :math:`\max|C|`, the paired :math:`\sigma`, :math:`D/\sigma`,
        :math:`G/\sigma` and the Brownian-range p-value of :math:`D/\sigma`.
    path_a, path_b : ndarray
        Each model's residual path :math:`\sum_{j \le k} W_j (R_j - S_j) / \sum W` in the same
        order (eq. (1) of paper 000).
    kuiper_a, kuiper_b, sigma_a, sigma_b : float
        Their ranges and eq. (5) :math:`\sigma`.
    plot_index : ndarray
        Points that keep every extreme of the loss path (for drawing).
    loss : str
    n, n_missing : int
        Rows on the path, and rows left off because the ordering variable is missing.
    """

    order_by: str
    x: np.ndarray
    fraction: np.ndarray
    position: np.ndarray
    path: np.ndarray
    kuiper: float
    ks: float
    sigma: float
    kuiper_z: float
    ks_z: float
    p_value: float
    path_a: np.ndarray
    path_b: np.ndarray
    kuiper_a: float
    kuiper_b: float
    sigma_a: float
    sigma_b: float
    plot_index: np.ndarray
    loss: str
    n: int
    n_missing: int


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array


def paired_cumulative_differences(
    score_a: np.ndarray,
    score_b: np.ndarray,
    label: np.ndarray,
    *,
    order_values: np.ndarray,
    weight: np.ndarray | None = None,
    order_by: str = "score",
    loss: str = "brier",
    void: bool = False,
) -> PairedPath:
    r"""Cumulative differences of B's and A's losses ordered by ``order_values`` ([1]).

    Parameters
    ----------
    score_a, score_b, label : ndarray, shape (n,)
        The two models' scores and the responses (in [0, 1]), row by row.
    order_values : ndarray, shape (n,)
        The ordering variable (float; NaN where missing: those rows are left off and counted).
    weight : ndarray, shape (n,), optional
        Positive weights (default all ones).
    order_by : str
        The ordering variable's name (for the result).
    loss : {"brier", "log_loss"}
    void : bool
        True when the weights depend on the labels: the p-value is then NaN.

    Returns
    -------
    PairedPath

    Notes
    -----
    See the module docstring for the equations and the derivation of :math:`\sigma`.

    Examples
    --------
    B worse by a constant 0.01 on every row: the path is a straight line to 0.01, D = 0.01.

    >>> a, label = np.array([0.2, 0.4, 0.6, 0.8]), np.array([0.0, 1.0, 0.0, 1.0])
    >>> b = np.where(label == 1, a - 0.1, a + 0.1)  # farther from every label
    >>> r = paired_cumulative_differences(a, b, label, order_values=a)
    >>> bool(np.all(np.diff(r.path) > 0)), bool(r.kuiper == r.path[-1])
    (True, True)
    """
    n_all = label.size
    weight = np.ones(n_all) if weight is None else np.asarray(weight, dtype=float)
    values = np.asarray(order_values, dtype=float)
    present = ~np.isnan(values)
    order = np.flatnonzero(present)[value_order(values[present])]  # ties in any order
    s_a, s_b, r, w = score_a[order], score_b[order], label[order], weight[order]
    losses = {"brier": brier_loss, "log_loss": log_loss}[loss]
    difference = losses(s_b, r) - losses(s_a, r)  # d_j = L_B - L_A
    run_end = run_ends(values[order])
    total = float(w.sum())
    path, ends = cumulative_path(w * difference, total, run_end)  # C_k
    kuiper, ks = path_kuiper_ks(path)  # D = max C - min C
    sigma = float(sigma_from_variance(float(np.sum(w**2 * difference**2)), total))  # [1]
    x, fraction = path_axes(w, ends, weighted=not np.all(w == w[:1]))
    path_a, _ = cumulative_path(w * (r - s_a), total, run_end)  # eq. (1) of paper 000
    path_b, _ = cumulative_path(w * (r - s_b), total, run_end)
    position = values[order]
    return PairedPath(
        order_by=order_by, x=_readonly(x), fraction=_readonly(fraction),
        position=_readonly(np.concatenate((position[:1], position[ends]))),
        **path_statistics(path, kuiper, ks, sigma, void=void),
        path_a=_readonly(path_a), path_b=_readonly(path_b),
        kuiper_a=path_kuiper_ks(path_a)[0], kuiper_b=path_kuiper_ks(path_b)[0],
        sigma_a=sigma_bernoulli(s_a, w), sigma_b=sigma_bernoulli(s_b, w),
        loss=loss, n=int(order.size), n_missing=int(n_all - order.size),
    )


@dataclass(frozen=True, slots=True, eq=False)
class NetBenefitComparison:
    r"""Net benefit of A and B at each threshold, and the paired difference B - A.

    Attributes
    ----------
    thresholds : ndarray
    a, b : ndarray
        :math:`\mathrm{NB}(t)` of each model (net true positives per decision).
    difference, ci_low, ci_high : ndarray
        :math:`\mathrm{NB}_B - \mathrm{NB}_A` and its paired 95% interval (per decision).
    treat_all : ndarray
    changed : ndarray
        Weighted share of rows whose decision differs between the models.
    """

    thresholds: np.ndarray
    a: np.ndarray
    b: np.ndarray
    difference: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    treat_all: np.ndarray
    changed: np.ndarray

    def as_json(self) -> dict:
        """Return the ``"net_benefit"`` object of ``mcviz compare --json``."""
        per = 1000.0
        return {
            "thresholds": self.thresholds.tolist(), "a": self.a.tolist(), "b": self.b.tolist(),
            "difference": self.difference.tolist(), "ci_low": self.ci_low.tolist(),
            "ci_high": self.ci_high.tolist(),
            "difference_per_1000": (self.difference * per).tolist(),
            "ci_low_per_1000": (self.ci_low * per).tolist(),
            "ci_high_per_1000": (self.ci_high * per).tolist(),
            "changed_share": self.changed.tolist(),
        }


def net_benefit_comparison(score_a: np.ndarray, score_b: np.ndarray, label: np.ndarray,
                           weight: np.ndarray, *, thresholds) -> NetBenefitComparison:
    r"""Net benefit of A and B and the paired difference at each threshold (module docstring).

    Examples
    --------
    A treats rows 1-2 at t = 0.5, B rows 2-3; labels 1, 1, 0: B trades a true positive for a
    false one, :math:`\delta = (-1, 0, -1)`, the difference is -2/3 per decision.

    >>> r = net_benefit_comparison(np.array([0.6, 0.7, 0.2]), np.array([0.2, 0.7, 0.6]),
    ...                            np.array([1.0, 1.0, 0.0]), np.ones(3), thresholds=[0.5])
    >>> round(float(r.difference[0]), 12), round(float(r.b[0] - r.a[0]), 12)
    (-0.666666666667, -0.666666666667)
    """
    t = check_thresholds(thresholds)
    total = float(weight.sum())
    columns = []
    for threshold in t:  # O(n) memory per threshold
        gain = label - (1.0 - label) * (threshold / (1.0 - threshold))  # benefit of treating
        treated_a, treated_b = score_a >= threshold, score_b >= threshold
        switch = treated_b.astype(float) - treated_a  # T^B - T^A
        columns.append((float(weight @ (treated_a * gain)) / total,  # eq. (1), model A
                        float(weight @ (treated_b * gain)) / total,
                        *mean_interval(switch * gain, weight),  # delta_j(t)
                        float(weight @ (switch != 0)) / total))
    a, b, difference, low, high, changed = (np.array(c) for c in zip(*columns, strict=True))
    positive = float(weight @ label)
    treat_all = (positive - (total - positive) * t / (1.0 - t)) / total
    return NetBenefitComparison(thresholds=t, a=a, b=b, difference=difference, ci_low=low,
                                ci_high=high, treat_all=treat_all, changed=changed)
