"""The classical measures from sums per distinct score (what an engine's GROUP BY returns).

Reference: :func:`mcviz.stats.measures.classical_measures` on the rows themselves. Exact runs
(one per distinct score) must give its numbers to 1e-9 on tied, continuous, weighted and
unweighted rows. Binned runs are built here independently of the engines' SQL (numpy: the ECE
bin by ``searchsorted``, the fine bin inside it by the share of its width), with few bins
(h = 1/2,000) so that the approximation shows: the measures the module calls exact stay
exact, the equal-count ECE stays within its computed bound, and the others move by less than
the tolerances stated in :data:`BINNED_TOLERANCE` (the largest change measured over the six
binned cases below, times about 3). The Hosmer-Lemeshow statistic is not bounded (its groups'
edges move with the bins: 2.55 on the extreme design).
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.io import Predictions
from mcviz.stats.measures import classical_measures
from mcviz.stats.measures.runs import ScoreRuns, binned_bound, classical_from_runs, score_runs

EXACT_WHEN_BINNED = ("ece", "brier", "log_loss", "spiegelhalter_z", "spiegelhalter_p",
                     "calibration_in_the_large", "oe_ratio", "ece_bins", "mce", "ace",
                     "brier_uncertainty", "log_loss_uncertainty", "n", "weight_total",
                     "weighted")
BINNED_TOLERANCE = {  # absolute, h = 5e-4; measured largest change (6 cases) in the comments
    "smece": 4e-6,  # 1.05e-6
    "ici": 1.5e-5,  # 4.4e-6
    "e50": 1.5e-4,  # 4.7e-5
    "e90": 3e-4,  # 8.7e-5
    "emax": 2e-4,  # 6.5e-5
    "calibration_intercept": 2e-7,  # 6.4e-8
    "calibration_slope": 7e-4,  # 2.3e-4
    "brier_miscalibration": 4e-4,  # 1.1e-4
    "brier_discrimination": 4e-4,  # 1.1e-4
    "log_loss_miscalibration": 1e-3,  # 3.1e-4
    "log_loss_discrimination": 1e-3,  # 3.1e-4
}


def _rows(design: str, weighted: bool) -> Predictions:
    rng = np.random.default_rng(["tied", "continuous", "spiked", "extreme"].index(design))
    n = 6_000
    score = rng.beta(2, 5, n)
    if design == "tied":
        score = np.round(score, 2)
    elif design == "spiked":
        score[rng.random(n) < 0.3] = 0.25
    elif design == "extreme":
        score = np.clip(rng.beta(0.3, 0.3, n), 1e-9, 1 - 1e-9)
    truth = np.clip(1.2 * score - 0.05 * (score > 0.5), 0, 1)
    label = (rng.random(n) < truth).astype(float)
    weight = rng.uniform(0.2, 3.0, n) if weighted else None
    return Predictions.from_arrays(score, label, weight)


def _compare(expected: dict, got: dict, keys, tolerance) -> None:
    for key in keys:
        a, b = expected[key], got[key]
        if isinstance(a, list):
            assert b == pytest.approx(a, rel=tolerance, abs=tolerance), key
        elif a is None or isinstance(a, bool | str):
            assert b == a, key
        else:
            assert b == pytest.approx(a, rel=tolerance, abs=tolerance), key


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("design", ["tied", "continuous", "spiked", "extreme"])
def test_exact_runs_give_the_in_memory_measures(design, weighted):
    pred = _rows(design, weighted)
    expected = classical_measures(pred).as_json()
    got = classical_from_runs(score_runs(pred)).as_json()
    assert list(got) == list(expected)
    _compare(expected, got, expected, 1e-9)


def _binned(pred: Predictions, bins: int) -> ScoreRuns:
    """Fine equal-width bins nested in the ECE's 10, each run at its weighted mean score."""
    exact = score_runs(pred)
    per = bins // 10
    coarse = np.searchsorted(np.arange(1, 10) / 10, pred.score, side="left")  # (c/10, (c+1)/10]
    sub = np.clip(np.ceil((pred.score - coarse / 10) * 10 * per).astype(int) - 1, 0, per - 1)
    key = coarse * per + sub
    _, slot = np.unique(key, return_inverse=True)

    def per_bin(values):
        return np.bincount(slot, weights=values)

    w = pred.weight
    weight = per_bin(w)
    lo = np.full(weight.size, np.inf)
    hi = np.full(weight.size, -np.inf)
    np.minimum.at(lo, slot, pred.score)
    np.maximum.at(hi, slot, pred.score)
    return ScoreRuns(score=np.clip(per_bin(w * pred.score) / weight, lo, hi),
                     count=np.bincount(slot), weight=weight, positive=per_bin(w * pred.label),
                     square_weight=per_bin(w * w), square_error=exact.square_error,
                     log_likelihood=exact.log_likelihood,
                     spiegelhalter_numerator=exact.spiegelhalter_numerator,
                     spiegelhalter_variance=exact.spiegelhalter_variance,
                     weighted=pred.weighted, bins=bins)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("design", ["continuous", "spiked", "extreme"])
def test_binned_runs_keep_the_exact_measures_and_the_stated_bounds(design, weighted):
    pred = _rows(design, weighted)
    runs = _binned(pred, 2_000)
    assert runs.score.size < pred.n and (np.diff(runs.score) > 0).all()
    expected = classical_measures(pred).as_json()
    got = classical_from_runs(runs).as_json()
    _compare(expected, got, EXACT_WHEN_BINNED, 1e-9)
    bound = binned_bound(runs)
    assert bound.bin_width == 1 / 2_000
    assert abs(got["ece_equal_count"] - expected["ece_equal_count"]) <= (
        bound.ece_equal_count + 1e-12)
    for key, tolerance in BINNED_TOLERANCE.items():
        assert abs(got[key] - expected[key]) <= tolerance, (key, got[key], expected[key])


def test_binned_runs_are_not_the_rows():
    # the tolerances above are not vacuous: binning into 20 bins moves the smooth measures
    pred = _rows("continuous", False)
    expected = classical_measures(pred).as_json()
    got = classical_from_runs(_binned(pred, 20)).as_json()
    assert max(abs(got[k] - expected[k]) - t for k, t in BINNED_TOLERANCE.items()) > 0
    assert binned_bound(score_runs(pred)) is None
