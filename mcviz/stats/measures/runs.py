r"""The classical measures from sums per distinct score: data an engine aggregated out of core.

Every measure of :func:`~mcviz.stats.measures.classical_measures` depends on binary-response
rows only through their sums per run of tied scores -- the rows :math:`n_j`, :math:`\sum W`,
:math:`\sum WR` and :math:`\sum W^2` at each distinct score :math:`s_j` (the tie rule:
nothing depends on the order of tied rows) -- except the LOESS of ICI/E50/E90, whose
neighbourhoods count rows (:func:`~mcviz.stats.smoothing.loess_fit_from_counts` counts them
from :math:`n_j`), and four totals over the rows that the runs carry too: :math:`\sum W (S-R)^2`
(Brier), :math:`\sum W [R\log S_c + (1-R)\log(1-S_c)]` (log loss) and Spiegelhalter's
:math:`\sum W (R-S)(1-2S)` and :math:`\sum W^2 (1-2S)^2 S(1-S)`. So :func:`classical_from_runs`
gives the in-memory numbers, up to the order of floating-point additions, from a table of one
row per distinct score (``GROUP BY score``: :func:`mcviz.engines.calibration.score_runs_table`;
:func:`score_runs` builds the same from rows in memory).

Binned runs. With more distinct scores than the engine may return, the rows are grouped by
fine score bins instead: ``bins`` equal-width bins nested in the 10 equal-width bins of the
ECE (bin :math:`b` of width :math:`h = 1/\text{bins}`, right-closed as the ECE's), each run
standing at its bin's weighted mean score. This moves every score by less than :math:`h` and
keeps :math:`\sum W S` and :math:`\sum W R` of every bin; hence

- exact (to rounding) still: Brier, log loss, Spiegelhalter's Z and p (from the totals),
  calibration-in-the-large, O/E, the equal-width ECE, MCE and ACE (each fine bin lies in one
  ECE bin with its rows), the Brier and log-loss uncertainty (base rate only);
- equal-count ECE: only fine bins holding an equal-count edge can put rows in another group;
  moving weight :math:`m` between two groups changes :math:`\sum_k |\sum_{i\in k} W_i(S_i-R_i)|`
  by at most :math:`2m` (each :math:`|S-R| \le 1`), so
  :math:`|\Delta\,\mathrm{ECE}_{\text{count}}| \le 2\sum_{b \ni \text{edge}} W_b / W`
  (:attr:`BinnedBound.ece_equal_count`, computed from the bins);
- the others (intercept, slope, ICI/E50/E90, smECE, CORP MCB/DSC, Hosmer-Lemeshow) are the
  measures of data with every score moved by less than :math:`h`; no general bound is claimed
  for them. Measured on 6,000 planted rows (``tests/stats/measures/test_measures_runs.py``;
  continuous, spiked and U-shaped scores, weighted or not) with 2,000 bins
  (:math:`h = 5\cdot 10^{-4}`), the largest changes were smECE 1.1e-6, ICI 4.4e-6, E50 4.7e-5,
  E90 8.7e-5, intercept 6.4e-8, slope 2.3e-4, Brier MCB/DSC 1.1e-4, log-loss MCB/DSC 3.1e-4
  (the test asserts about 3 times these); the Hosmer-Lemeshow statistic moved by up to 2.55
  (its group edges move with the bins). The engines' default of :math:`2^{20}` bins gives
  :math:`h \approx 10^{-6}`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from mcviz.core.special import ndtr
from mcviz.core.ratio import safe_ratio
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.binning import calibration_metrics
from mcviz.stats.measures._data import CLIP, _Rows
from mcviz.stats.measures.clinical import _curve_summary, _hosmer_lemeshow, _recalibration
from mcviz.stats.measures.corp import _decomposition, _pav
from mcviz.stats.measures.smooth import SmoothEce, _smece
from mcviz.stats.measures.summary import ClassicalMeasures

__all__ = ["BinnedBound", "ScoreRuns", "binned_bound", "classical_from_runs", "score_runs"]


@dataclass(frozen=True, slots=True, eq=False)
class ScoreRuns:
    """Binary-response rows as sums per distinct score (or per fine score bin).

    Attributes
    ----------
    score : ndarray
        Ascending: the distinct scores, or each bin's weighted mean score.
    count, weight, positive, square_weight : ndarray
        Per run: rows, :math:`\\sum W`, :math:`\\sum W R`, :math:`\\sum W^2`.
    square_error, log_likelihood, spiegelhalter_numerator, spiegelhalter_variance : float
        Totals over the rows: :math:`\\sum W (S - R)^2`,
        :math:`\\sum W [R \\log S_c + (1 - R) \\log (1 - S_c)]` (:math:`S_c` clipped to
        :math:`[10^{-15}, 1 - 10^{-15}]`), :math:`\\sum W (R - S)(1 - 2S)`,
        :math:`\\sum W^2 (1 - 2S)^2 S (1 - S)`.
    weighted : bool
        The rows have a weight column.
    bins : int or None
        None: one run per distinct score (exact); else the number of fine equal-width bins.
    bin_index : ndarray of int or None
        With fine bins, each run's bin :math:`k` (its rows' scores in
        :math:`(k/\\text{bins}, (k+1)/\\text{bins}]`, the first bin also 0); else None.
    """

    score: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    positive: np.ndarray
    square_weight: np.ndarray
    square_error: float
    log_likelihood: float
    spiegelhalter_numerator: float
    spiegelhalter_variance: float
    weighted: bool
    bins: int | None = None
    bin_index: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class BinnedBound:
    """What binning may change (module notes). ``bin_width``: the largest move of a score."""

    bin_width: float
    ece_equal_count: float


def score_runs(pred: Predictions) -> ScoreRuns:
    """Return the runs of ``pred``'s rows (binary responses), as an engine's ``GROUP BY``."""
    if pred.response_kind != "binary":
        raise ValidationError("the runs hold binary responses only.")
    score, label, weight = pred.score, pred.label, pred.weight
    starts = np.concatenate(([0], np.flatnonzero(pred.run_end[:-1]) + 1))
    clipped = np.clip(score, CLIP, 1.0 - CLIP)

    def total(values: np.ndarray) -> float:
        return float(np.sum(weight * values))

    return ScoreRuns(
        score=score[starts],
        count=np.diff(np.append(starts, score.size)),
        weight=np.add.reduceat(weight, starts),
        positive=np.add.reduceat(weight * label, starts),
        square_weight=np.add.reduceat(weight * weight, starts),
        square_error=total((score - label) ** 2),
        log_likelihood=total(label * np.log(clipped) + (1.0 - label) * np.log1p(-clipped)),
        spiegelhalter_numerator=total((label - score) * (1.0 - 2.0 * score)),
        spiegelhalter_variance=float(np.sum(weight**2 * (1.0 - 2.0 * score) ** 2 * score
                                            * (1.0 - score))),
        weighted=pred.weighted,
    )


def classical_from_runs(runs: ScoreRuns, *, n_bins: int = 10, hl_groups: int = 10,
                        curve_points: int = 200) -> ClassicalMeasures:
    """Compute :func:`~mcviz.stats.measures.classical_measures` from runs (module notes)."""
    rows = _runs_as_rows(runs)
    metrics = _metrics(runs, n_bins)
    fitted = _pav(rows)
    smece, sigma = _smece(rows)
    n, total, weighted = int(runs.count.sum()), rows.total, runs.weighted
    same = {"n": n, "weighted": weighted}
    curve = _curve_summary(rows, int(curve_points), constant_ok=True)
    return ClassicalMeasures(
        metrics=metrics,
        smooth=SmoothEce(smece, sigma, n, total, weighted),
        recalibration=dataclasses.replace(_recalibration(rows), **same),
        curve=dataclasses.replace(curve, **same),
        brier=_decomposition(rows, fitted, "brier", observed=metrics.brier),
        log_loss=_decomposition(rows, fitted, "log_loss", observed=metrics.log_loss),
        hosmer_lemeshow=_hosmer_lemeshow(rows, int(hl_groups)),
        n=n, weight_total=total, weighted=weighted,
    )


def binned_bound(runs: ScoreRuns, *, n_bins: int = 10) -> BinnedBound | None:
    """Return the bound of the binned runs (None for exact runs): module notes."""
    if runs.bins is None:
        return None
    cumulative = np.cumsum(runs.weight)
    total = float(cumulative[-1])
    edges = (np.arange(1, n_bins) + 1e-9) * (total / n_bins)  # equal_count_runs' thresholds
    holding = np.unique(np.searchsorted(cumulative, edges, side="right"))
    holding = holding[holding < runs.weight.size]
    return BinnedBound(bin_width=1.0 / runs.bins,
                       ece_equal_count=float(2.0 * runs.weight[holding].sum() / total))


def _runs_as_rows(runs: ScoreRuns) -> _Rows:
    """The runs as :class:`_Rows` whose entries are runs (weights: their sums of W)."""
    if runs.score.size == 0:
        raise ValidationError("there are no rows.")
    weight = np.asarray(runs.weight, dtype=float)
    return _Rows(score=np.asarray(runs.score, dtype=float),
                 label=np.asarray(runs.positive, dtype=float) / weight, weight=weight,
                 starts=np.arange(weight.size), weighted=True, binary=True,
                 counts=np.asarray(runs.count, dtype=np.int64))


def _metrics(runs: ScoreRuns, n_bins: int):
    """The binned metrics: ECE/MCE/ACE from the runs, the rest from the totals."""
    # two weighted rows per run (its positives and its negatives): the same bin sums
    negative = runs.weight - runs.positive
    keep_p, keep_n = runs.positive > 0, negative > 0
    pred = Predictions.from_arrays(
        np.concatenate((runs.score[keep_p], runs.score[keep_n])),
        np.concatenate((np.ones(int(keep_p.sum())), np.zeros(int(keep_n.sum())))),
        np.concatenate((runs.positive[keep_p], negative[keep_n])))
    metrics = calibration_metrics(pred, n_bins=n_bins)
    total = float(runs.weight.sum())
    z = safe_ratio(runs.spiegelhalter_numerator, np.sqrt(runs.spiegelhalter_variance))
    return dataclasses.replace(
        metrics, brier=runs.square_error / total, log_loss=-runs.log_likelihood / total,
        spiegelhalter_z=float(z), spiegelhalter_p=float(2.0 * ndtr(-abs(z))),
        n=int(runs.count.sum()), weighted=runs.weighted)

