r"""What miscalibration costs at the decision threshold: NB(recalibrated) - NB(model), with a CI.

On rows the fix never saw, the *loss per 1,000 decisions* at threshold :math:`t` is

.. math::
    L(t) = 1000\,\left(\mathrm{NB}_{\text{recalibrated}}(t) - \mathrm{NB}_{\text{model}}(t)\right)
    = \frac{1000}{\sum_i W_i} \sum_i W_i \left(T^{r}_i - T^{m}_i\right)
      \left(R_i - (1 - R_i)\frac{t}{1-t}\right),

net true positives per 1,000 decisions that taking decisions on the recalibrated scores
:math:`T^r_i = 1\{\hat p_i \ge t\}` instead of the model's :math:`T^m_i = 1\{S_i \ge t\}` gains;
only rows whose decision changes contribute. Van Calster and Vickers [1] show miscalibration
can only lower the net benefit of a correct risk; :math:`L(t) \le 0` means the fix did not
help at :math:`t` on these rows.

Bootstrap (exact and fast). Every statistic here is a function of the sums of
:math:`a_i = W_i R_i` and :math:`b_i = W_i (1 - R_i)` within *cells*: rows with the same
interval of the model's score between consecutive thresholds, the same for the recalibrated
score, and (for 0/1 responses) the same response. A bootstrap resample of the :math:`n` rows
puts :math:`K^*_c` rows in cell :math:`c`, :math:`(K^*_c) \sim \mathrm{Multinomial}(n,
(K_c/n)_c)`; given :math:`K^*_c`, the cell's sums are the sums of :math:`K^*_c` draws with
replacement from its rows. Without weights and with 0/1 responses each cell's :math:`(a, b)` is
constant, so drawing the multinomial counts *is* the row bootstrap, exactly. Otherwise the
within-cell sums are drawn from their central-limit approximation,
:math:`K^*_c \bar v_c + \sqrt{K^*_c}\,\Sigma_c^{1/2} z` (:math:`\bar v_c, \Sigma_c` the mean and
covariance of :math:`(a, b)` in the cell). Cost :math:`O(B \cdot \text{cells})`, not
:math:`O(B n)`. The interval is the percentile interval of :math:`B` replicates; its coverage of
the population value (given the fitted map) is measured by ``benchmarks/bench_decision.py``.

References
----------
.. [1] B. Van Calster, A. J. Vickers, "Calibration of risk prediction models: impact on
   decision-analytic performance", Medical Decision Making 35(2), 162-169, 2015.
.. [2] B. Efron, R. Tibshirani, "An Introduction to the Bootstrap", 1993; Section 13.3
   (percentile intervals).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcviz.budget import Budget, bootstrap_estimate, check
from mcviz.decision.net_benefit import check_thresholds, net_benefit
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.text import format_fixed, format_percent

__all__ = ["CURVE_THRESHOLDS", "DecisionImpact", "decision_impact", "impact_sentence"]

CURVE_THRESHOLDS = np.round(np.arange(0.01, 1.0, 0.01), 2)
"""Thresholds of the decision curve (besides the user's)."""


@dataclass(frozen=True, slots=True, eq=False)
class DecisionImpact:
    """Net benefit of the model and of the recalibrated scores on one scope, with the loss.

    Attributes
    ----------
    scope : str
        "full population" or a finding's description.
    thresholds : ndarray
    model, recalibrated, treat_all, treat_none : ndarray
        Net benefit per threshold.
    model_ci, recalibrated_ci : ndarray of shape (2, T)
        95% bootstrap intervals of the two net benefits.
    loss_per_1000 : ndarray
        :math:`L(t)` (module docstring).
    ci_low, ci_high : ndarray
        Its 95% bootstrap interval.
    changed : ndarray
        Weighted share of rows whose decision the recalibration changes, per threshold.
    n : int
    n_bootstrap : int
    """

    scope: str
    thresholds: np.ndarray
    model: np.ndarray
    recalibrated: np.ndarray
    treat_all: np.ndarray
    treat_none: np.ndarray
    model_ci: np.ndarray
    recalibrated_ci: np.ndarray
    loss_per_1000: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    changed: np.ndarray
    n: int
    n_bootstrap: int

    def sentences(self, thresholds: Sequence[float] | None = None) -> list[str]:
        """One sentence per threshold (default all; see :func:`impact_sentence`)."""
        wanted = self.thresholds if thresholds is None else np.asarray(thresholds, dtype=float)
        out = []
        for k in self._positions(wanted):
            out.append(impact_sentence(float(self.thresholds[k]), float(self.loss_per_1000[k]),
                                       float(self.ci_low[k]), float(self.ci_high[k]),
                                       float(self.changed[k])))
        return out

    def _positions(self, thresholds: Sequence[float]) -> list[int]:
        keys = [int(np.argmin(np.abs(self.thresholds - t))) for t in thresholds]
        missing = [t for t, k in zip(thresholds, keys, strict=True)
                   if abs(self.thresholds[k] - t) > 1e-12]
        if missing:
            raise ValidationError("threshold(s) " + ", ".join(f"{t:g}" for t in missing)
                                  + " were not computed; pass them to decision_impact.")
        return keys

    def at(self, thresholds: Sequence[float]) -> dict:
        """Return the JSON object at these thresholds (each must be one of :attr:`thresholds`)."""
        keys = self._positions(thresholds)
        pick = lambda a: [float(a[k]) for k in keys]  # noqa: E731
        return {"scope": self.scope, "n": self.n,
                "net_benefit": {"model": pick(self.model), "recalibrated": pick(self.recalibrated),
                                "treat_all": pick(self.treat_all),
                                "treat_none": pick(self.treat_none)},
                "loss_per_1000": pick(self.loss_per_1000), "ci_low": pick(self.ci_low),
                "ci_high": pick(self.ci_high), "changed_share": pick(self.changed),
                "sentences": self.sentences([self.thresholds[k] for k in keys])}


def impact_sentence(t: float, loss: float, low: float, high: float, changed: float) -> str:
    """Say what miscalibration costs at one threshold, in words.

    Examples
    --------
    >>> impact_sentence(0.3, 4.1, 2.0, 6.3, 0.05)[-61:]
    'costs 4.1 net true positives per 1,000 decisions (CI 2.0–6.3)'
    >>> impact_sentence(0.3, 0.0, 0.0, 0.0, 0.0)
    'at a threshold of 0.3, this miscalibration does not change decisions'
    >>> said = impact_sentence(0.1, -0.04, -0.2, 0.1, 0.0021)
    >>> said[said.index("changes"):said.index(" but")], said[said.index("noise"):said.index(" per")]
    ('changes 0.21% of decisions', 'noise: 0.0 net true positives')
    """
    head = f"at a threshold of {t:g}, "
    if changed == 0:
        return head + "this miscalibration does not change decisions"
    one = format_fixed  # one number formatter: no "−0.0" (#40)
    ci = (f"(CI {one(low)}–{one(high)})" if low >= 0 else f"(CI {one(low)} to {one(high)})")
    if low > 0:
        return (head + f"this miscalibration costs {one(loss)} net true positives per 1,000 "
                f"decisions {ci}")
    if high < 0:
        return (head + f"the recalibrated scores do worse: {one(-loss)} fewer net true "
                f"positives per 1,000 decisions {ci}")
    return (head + f"the recalibration changes {format_percent(changed, digits=2)} of "
            f"decisions but its effect is within noise: {one(loss, signed=True)} net true "
            f"positives per 1,000 decisions {ci}")


def _cells(model_bin, recal_bin, a, b, binary_unweighted):
    """Group rows into cells; return their bins, counts, means and covariance factors."""
    n_bins = int(max(model_bin.max(), recal_bin.max())) + 1
    code = model_bin.astype(np.int64) * n_bins + recal_bin
    if binary_unweighted:
        code = code * 2 + (a > 0)
    keys, inverse, counts = np.unique(code, return_inverse=True, return_counts=True)
    sums = np.column_stack((np.bincount(inverse, a), np.bincount(inverse, b)))
    mean = sums / counts[:, None]
    if binary_unweighted:
        factor = None
    else:  # 2x2 covariance square roots, per cell
        da, db = a - mean[inverse, 0], b - mean[inverse, 1]
        saa = np.bincount(inverse, da * da) / counts
        sbb = np.bincount(inverse, db * db) / counts
        sab = np.bincount(inverse, da * db) / counts
        l11 = np.sqrt(saa)
        l21 = np.divide(sab, l11, out=np.zeros_like(sab), where=l11 > 0)
        l22 = np.sqrt(np.maximum(sbb - l21**2, 0.0))
        factor = (l11, l21, l22)
    if binary_unweighted:
        keys = keys // 2
    return keys // n_bins, keys % n_bins, counts, mean, factor


def _aggregate(values: np.ndarray, bins: np.ndarray, n_bins: int) -> np.ndarray:
    """Sum columns of ``values`` (B, C) by cell bin, then suffix-sum: rows treated per t."""
    out = np.zeros((values.shape[0], n_bins + 1))
    for k in range(n_bins + 1):  # bins are few (thresholds + 1)
        hit = bins == k
        if hit.any():
            out[:, k] = values[:, hit].sum(axis=1)
    return np.cumsum(out[:, ::-1], axis=1)[:, ::-1]  # out[:, j] = sum over bins >= j


def decision_impact(
    pred: Predictions,
    recalibrated: np.ndarray,
    *,
    thresholds: Sequence[float] = CURVE_THRESHOLDS,
    index: np.ndarray | None = None,
    scope: str = "full population",
    n_bootstrap: int = 1000,
    seed: int = 0,
    budget: Budget | int | str | None = None,
) -> DecisionImpact:
    r"""Net benefit of the model and of recalibrated scores, and the loss per 1,000 with its CI.

    Parameters
    ----------
    pred : Predictions
        Rows the recalibration never saw, with the model's scores.
    recalibrated : ndarray of shape (pred.n,)
        The recalibrated scores of the same rows, in ``pred``'s order.
    thresholds : sequence of float, default 0.01, 0.02, ..., 0.99
    index : ndarray of int, optional
        Sorted positions of a scope (a finding's rows).
    scope : str
        Its description.
    n_bootstrap : int, default 1000
    seed : int, default 0
    budget : Budget, int, str or None
        Memory budget (default: :func:`mcviz.budget.default_budget`); the bootstrap
        (``n_bootstrap × cells`` values) is refused above it before it starts.

    Returns
    -------
    DecisionImpact

    Raises
    ------
    ValidationError
        Thresholds outside (0, 1), a length mismatch, recalibrated scores outside [0, 1]; a
        bootstrap over the budget.
    """
    t = check_thresholds(thresholds)
    recalibrated = np.asarray(recalibrated, dtype=float)
    if recalibrated.shape != (pred.n,):
        raise ValidationError(f"recalibrated scores: {recalibrated.size:,} values for "
                              f"{pred.n:,} rows.")
    if not np.all((recalibrated >= 0) & (recalibrated <= 1)):
        raise ValidationError("recalibrated scores must lie in [0, 1].")
    if int(n_bootstrap) < 20:
        raise ValidationError(f"n_bootstrap must be at least 20, not {n_bootstrap!r}.")
    rows = np.arange(pred.n) if index is None else np.asarray(index)
    if rows.size == 0:
        raise ValidationError(f"scope {scope!r} has no rows.")
    score, label, weight, fixed = (pred.score[rows], pred.label[rows], pred.weight[rows],
                                   recalibrated[rows])
    base = net_benefit(pred, thresholds=t, index=rows)
    order = np.argsort(fixed, kind="stable")
    fixed_nb = net_benefit(_sorted_view(pred, fixed[order], label[order], weight[order]),
                           thresholds=t)
    a, b = weight * label, weight * (1.0 - label)
    model_bin = np.searchsorted(t, score, side="right")  # thresholds <= score
    recal_bin = np.searchsorted(t, fixed, side="right")
    exact = pred.response_kind == "binary" and not pred.weighted
    m_bin, r_bin, counts, mean, factor = _cells(model_bin, recal_bin, a, b, exact)
    check(bootstrap_estimate(counts.size, thresholds=t.size, n_bootstrap=int(n_bootstrap),
                             exact=exact), budget)  # before the replicates are drawn
    rng = np.random.default_rng(int(seed))
    draws = rng.multinomial(rows.size, counts / rows.size, size=int(n_bootstrap)).astype(float)
    sum_a, sum_b = draws * mean[:, 0], draws * mean[:, 1]
    if factor is not None:
        root = np.sqrt(draws)
        z1, z2 = rng.standard_normal(draws.shape), rng.standard_normal(draws.shape)
        sum_a += root * factor[0] * z1
        sum_b += root * (factor[1] * z1 + factor[2] * z2)
    total = (sum_a + sum_b).sum(axis=1, keepdims=True)
    odds = t / (1.0 - t)
    n_t = t.size
    model_a, model_b = _aggregate(sum_a, m_bin, n_t), _aggregate(sum_b, m_bin, n_t)
    recal_a, recal_b = _aggregate(sum_a, r_bin, n_t), _aggregate(sum_b, r_bin, n_t)
    # treated at t_j <=> bin >= j + 1
    model_star = (model_a[:, 1:] - model_b[:, 1:] * odds) / total
    recal_star = (recal_a[:, 1:] - recal_b[:, 1:] * odds) / total
    loss_star = 1000.0 * (recal_star - model_star)
    quantiles = lambda x: np.quantile(x, [0.025, 0.975], axis=0)  # noqa: E731
    loss_ci = quantiles(loss_star)
    changed = np.array([float(weight[(score >= v) != (fixed >= v)].sum()) for v in t])
    return DecisionImpact(scope=scope, thresholds=t, model=base.model, recalibrated=fixed_nb.model,
                          treat_all=base.treat_all, treat_none=base.treat_none,
                          model_ci=quantiles(model_star), recalibrated_ci=quantiles(recal_star),
                          loss_per_1000=1000.0 * (fixed_nb.model - base.model), ci_low=loss_ci[0],
                          ci_high=loss_ci[1], changed=changed / float(weight.sum()),
                          n=int(rows.size), n_bootstrap=int(n_bootstrap))


def _sorted_view(pred: Predictions, score: np.ndarray, label: np.ndarray,
                 weight: np.ndarray) -> Predictions:
    from dataclasses import replace

    run_end = np.ones(score.size, dtype=bool)
    run_end[:-1] = score[1:] != score[:-1]
    import pandas as pd

    return replace(pred, score=score, label=label, weight=weight,
                   row=np.arange(score.size), run_end=run_end,
                   covariates=pd.DataFrame(index=pd.RangeIndex(score.size)),
                   covariate_kinds={}, predicted_class=None, true_class=None)
