r"""Net benefit of decisions taken by thresholding a score (decision-curve analysis).

A row is treated when its score is at least the threshold :math:`t`. With weights :math:`W`,
responses :math:`R` and :math:`T_i = 1\{S_i \ge t\}`:

.. math::
    \mathrm{NB}(t) = \frac{\sum_i W_i T_i R_i}{\sum_i W_i}
        - \frac{\sum_i W_i T_i (1 - R_i)}{\sum_i W_i}\,\frac{t}{1 - t}
    \qquad \text{([1], eq. (1); weighted)}

-- true positives minus false positives per decision, the false ones weighted by the odds of
the threshold: treating at :math:`t` says a false positive costs :math:`t/(1-t)` of a true
positive's benefit, so :math:`t = c_{FP}/(c_{FP} + c_{TP})` for costs :math:`c_{FP}` of
treating a negative and :math:`c_{TP}` of not treating a positive. *Treat all* sets
:math:`T \equiv 1`, *treat none* :math:`T \equiv 0` (NB = 0). For real-valued responses in
[0, 1] the same formula is the expected net benefit. Tied scores are all treated or all not,
so nothing depends on the order of tied rows.

References
----------
.. [1] A. J. Vickers, E. B. Elkin, "Decision curve analysis: a novel method for evaluating
   prediction models", Medical Decision Making 26(6), 565-574, 2006.
.. [2] B. Van Calster, A. J. Vickers, "Calibration of risk prediction models: impact on
   decision-analytic performance", Medical Decision Making 35(2), 162-169, 2015.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcviz.errors import ValidationError
from mcviz.io import Predictions

__all__ = ["NetBenefit", "check_thresholds", "net_benefit", "net_benefit_from_sums",
           "threshold_from_costs"]


def check_thresholds(thresholds: Sequence[float] | np.ndarray) -> np.ndarray:
    """Return the thresholds as a sorted float array, or raise for any outside (0, 1).

    Examples
    --------
    >>> check_thresholds([0.3, 0.1]).tolist()
    [0.1, 0.3]
    >>> check_thresholds([0.2, 1.0])
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: thresholds must lie in (0, 1); got 1.
    """
    try:
        values = np.asarray(thresholds, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValidationError(f"thresholds must be numbers in (0, 1), not {thresholds!r}.") \
            from None
    if values.size == 0:
        raise ValidationError("give at least one threshold in (0, 1).")
    bad = values[~((values > 0) & (values < 1))]
    if bad.size:
        raise ValidationError("thresholds must lie in (0, 1); got "
                              + ", ".join(f"{v:g}" for v in bad) + ".")
    return np.unique(values)


def threshold_from_costs(c_fp: float, c_tp: float) -> float:
    r"""Return :math:`t = c_{FP} / (c_{FP} + c_{TP})` (module docstring).

    Examples
    --------
    >>> threshold_from_costs(1, 4)
    0.2
    """
    if not (np.isfinite(c_fp) and np.isfinite(c_tp) and c_fp > 0 and c_tp > 0):
        raise ValidationError(f"costs must be positive numbers, not {c_fp!r} and {c_tp!r}.")
    return float(c_fp) / (float(c_fp) + float(c_tp))


@dataclass(frozen=True, slots=True, eq=False)
class NetBenefit:
    r"""Net benefit at each threshold of the model, of treating all and of treating none.

    Attributes
    ----------
    thresholds : ndarray
    model, treat_all, treat_none : ndarray
        :math:`\\mathrm{NB}(t)` (module docstring) per threshold.
    treated : ndarray
        Weighted share of the rows treated by the model at each threshold.
    n : int
    weight_total : float
    """

    thresholds: np.ndarray
    model: np.ndarray
    treat_all: np.ndarray
    treat_none: np.ndarray
    treated: np.ndarray
    n: int
    weight_total: float

    def as_json(self) -> dict:
        """``{"model", "treat_all", "treat_none"}`` lists (``mcviz decide --json``)."""
        return {"model": self.model.tolist(), "treat_all": self.treat_all.tolist(),
                "treat_none": self.treat_none.tolist()}


def treated_sums(score: np.ndarray, label: np.ndarray, weight: np.ndarray,
                 thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return sums of W R and W (1 - R) over the rows with score >= each threshold.

    ``score`` must be sorted ascending.
    """
    start = np.searchsorted(score, thresholds, side="left")
    positive = np.concatenate((np.cumsum((weight * label)[::-1])[::-1], [0.0]))
    negative = np.concatenate((np.cumsum((weight * (1.0 - label))[::-1])[::-1], [0.0]))
    return positive[start], negative[start]


def net_benefit(pred: Predictions, *, thresholds: Sequence[float],
                index: np.ndarray | None = None) -> NetBenefit:
    r"""Net benefit of the model, treat-all and treat-none at each threshold (module docstring).

    Parameters
    ----------
    pred : Predictions
    thresholds : sequence of float
        Each in (0, 1).
    index : ndarray of int, optional
        Sorted positions of a subpopulation (default every row).

    Returns
    -------
    NetBenefit

    Raises
    ------
    ValidationError
        Thresholds outside (0, 1), responses outside [0, 1].

    Examples
    --------
    Scores 0.2, 0.4, 0.6, 0.8 with responses 0, 1, 0, 1 at t = 0.5: rows 3 and 4 are
    treated, one true and one false positive: NB = 1/4 - 1/4 · 1 = 0.

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> net_benefit(pred, thresholds=[0.5]).model.tolist()
    [0.0]
    """
    t = check_thresholds(thresholds)
    score, label, weight = pred.score, pred.label, pred.weight
    if index is not None:
        index = np.asarray(index)
        score, label, weight = score[index], label[index], weight[index]
    if np.any((label < 0) | (label > 1)):
        raise ValidationError(f"column {pred.label_column!r}: net benefit needs responses in "
                              "[0, 1].", column=pred.label_column)
    positive, negative = treated_sums(score, label, weight, t)
    return net_benefit_from_sums(t, positive, negative, all_positive=float(weight @ label),
                                 total=float(weight.sum()), n=int(score.size))


def net_benefit_from_sums(t: np.ndarray, positive: np.ndarray, negative: np.ndarray, *,
                          all_positive: float, total: float, n: int) -> NetBenefit:
    r"""Return the net benefits from their sufficient statistics (eq. (1)).

    ``positive`` and ``negative``: :math:`\sum W R` and :math:`\sum W (1 - R)` over the rows
    treated at each threshold ``t`` (sorted, checked); ``all_positive`` and ``total``:
    :math:`\sum W R` and :math:`\sum W` over every row; ``n`` the rows. The engines
    (:mod:`mcviz.decision.at_scale`) compute the sums in SQL.
    """
    odds = t / (1.0 - t)
    model = (positive - negative * odds) / total  # eq. (1)
    treat_all = (all_positive - (total - all_positive) * odds) / total
    return NetBenefit(thresholds=t, model=model, treat_all=treat_all, treat_none=np.zeros_like(t),
                      treated=(positive + negative) / total, n=int(n), weight_total=float(total))
