"""Reliability bins (paper 003 eqs. (1)-(4), (34)-(40), Remark 5) and classical metrics."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from mcviz.stats.binning import (
    CalibrationMetrics,
    calibration_metrics,
    reliability_bins,
    reliability_diagrams,
)
from mcviz.errors import ValidationError
from mcviz.io import Predictions

# ---------------------------------------------------------------------------------------------
# Bins


def test_equal_width_right_closed():
    # Bins (-inf, 0.5] and (0.5, inf): 0.5 falls in the first (B_{k-1} < S <= B_k).
    pred = Predictions.from_arrays([0.05, 0.1, 0.15, 0.5, 0.95, 1.0], [0, 0, 1, 1, 1, 1])
    bins = reliability_bins(pred, n_bins=2)
    assert bins.count.tolist() == [4, 2]
    np.testing.assert_allclose(bins.mean_score, [0.2, 0.975])  # eq. (3)
    np.testing.assert_allclose(bins.mean_response, [0.5, 1.0])  # eq. (1)
    np.testing.assert_allclose(bins.lower_edge, [0, 0.5])
    np.testing.assert_allclose(bins.upper_edge, [0.5, 1])


def test_equal_width_exact_decimal_edges():
    # 0.3 belongs to (0.2, 0.3], not (0.3, 0.4] (edges are k/10, not k*0.1).
    pred = Predictions.from_arrays([0.3, 0.7], [0, 1])
    bins = reliability_bins(pred, n_bins=10)
    assert bins.count.tolist() == [0, 0, 1, 0, 0, 0, 1, 0, 0, 0]


def test_empty_bins_are_nan():
    pred = Predictions.from_arrays([0.05, 0.95], [0, 1])
    bins = reliability_bins(pred, n_bins=4)
    assert bins.nonempty.tolist() == [True, False, False, True]
    assert np.isnan(bins.mean_response[1])
    assert np.isnan(bins.interval_low[1])
    assert len(bins.to_frame()) == 2


def test_weighted_bins_eqs_34_36():
    # Bin 1: scores .1, .2 with weights 1, 3 -> X = (.1 + .6)/4 = .175, Y = (0 + 3)/4 = .75.
    pred = Predictions.from_arrays([0.1, 0.2, 0.7], [0, 1, 1], weight=[1, 3, 2])
    bins = reliability_bins(pred, n_bins=2)
    np.testing.assert_allclose(bins.mean_score, [0.175, 0.7])
    np.testing.assert_allclose(bins.mean_response, [0.75, 1.0])
    np.testing.assert_allclose(bins.weight, [4, 2])
    # Kish effective size: (1 + 3)^2 / (1 + 9) = 1.6
    np.testing.assert_allclose(bins.effective_size, [1.6, 1.0])


def test_equal_count_keeps_ties_together():
    # Cumulative counts at run ends 1, 4, 5, 6 of 6 -> 3 * (1/6, 4/6, 5/6, 1) = .5, 2, 2.5, 3
    # -> bins ceil(.) - 1 = 0, 1, 2, 2.
    pred = Predictions.from_arrays([0.1, 0.2, 0.2, 0.2, 0.3, 0.4], [0, 1, 0, 1, 1, 1])
    bins = reliability_bins(pred, n_bins=3, kind="equal_count")
    assert bins.count.tolist() == [1, 3, 2]
    np.testing.assert_allclose(bins.lower_edge, [0.1, 0.2, 0.3])
    np.testing.assert_allclose(bins.upper_edge, [0.1, 0.2, 0.4])


def test_equal_count_equal_weight():
    # Weights 3, 1, 1, 1 (total 6): the first observation alone holds half the weight.
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 1, 1], weight=[3, 1, 1, 1])
    bins = reliability_bins(pred, n_bins=2, kind="equal_count")
    assert bins.count.tolist() == [1, 3]
    np.testing.assert_allclose(bins.weight, [3, 3])


def _unweighted(n):
    rng = np.random.default_rng(n)
    score = np.sort(rng.random(n))
    return Predictions.from_arrays(score, rng.random(n) < score)


def test_similar_ratio_unweighted_is_equal_count_and_keeps_a_large_last_bin():
    # U = 1/sqrt(10) (eq. (40), n = 105, 10 bins): bins of 10; the last holds 5, which is not
    # fewer than half of 10, so it stays.
    bins = reliability_bins(_unweighted(105), n_bins=10, kind="similar_ratio")
    assert bins.count.tolist() == [10] * 10 + [5]


def test_similar_ratio_merges_a_small_last_bin():
    # n = 104: the remainder of 4 < 10/2 merges into the bin before (Remark 5).
    bins = reliability_bins(_unweighted(104), n_bins=10, kind="similar_ratio")
    assert bins.count.tolist() == [10] * 9 + [14]


def _similar_ratio_reference(weight, n_bins, seed):
    """Slow transcription of Remark 5 (distinct scores) with U from eq. (40)."""
    n = weight.size
    size = max(n // n_bins, 1)
    sample = weight[np.random.default_rng(seed).choice(n, size, replace=False)]
    target = np.sqrt(np.sum(sample**2)) / np.sum(sample)
    counts, current = [], []
    for w in weight:
        current.append(w)
        if np.sqrt(np.sum(np.square(current))) / np.sum(current) <= target * (1 + 1e-12):
            counts.append(len(current))
            current = []
    if current:
        counts.append(len(current))
    if len(counts) >= 2 and counts[-1] < counts[-2] / 2:
        counts[-2:] = [counts[-2] + counts[-1]]
    return counts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_similar_ratio_weighted_matches_reference(seed):
    rng = np.random.default_rng(seed + 10)
    n = 400
    score = np.sort(rng.random(n))
    weight = rng.exponential(size=n) + 0.05
    pred = Predictions.from_arrays(score, rng.random(n) < score, weight=weight)
    bins = reliability_bins(pred, n_bins=8, kind="similar_ratio", rng=seed)
    assert bins.count.tolist() == _similar_ratio_reference(pred.weight, 8, seed)
    ratio = np.sqrt(
        [np.sum(pred.weight[a:b] ** 2) for a, b in _pairs(bins.count)]
    ) / np.array([np.sum(pred.weight[a:b]) for a, b in _pairs(bins.count)])
    # U_k (eq. (38)) is similar for every bin but the last.
    assert ratio[:-1].max() / ratio[:-1].min() < 1.5


def _pairs(counts):
    ends = np.cumsum(counts)
    return zip(ends - counts, ends, strict=True)


def test_wilson_matches_statsmodels_unweighted():
    score = np.full(100, 0.35)
    label = np.r_[np.ones(37), np.zeros(63)]
    bins = reliability_bins(Predictions.from_arrays(score, label), n_bins=2)
    low, high = proportion_confint(37, 100, alpha=0.05, method="wilson")
    assert bins.interval_low[0] == pytest.approx(low)
    assert bins.interval_high[0] == pytest.approx(high)


def test_wilson_uses_effective_size_when_weighted():
    # Weights 1 and 3 on ten rows each: n_eff = 40^2 / (10 + 90) = 16; p = (3*10)/40 = .75.
    score = np.full(20, 0.4)
    label = np.r_[np.zeros(10), np.ones(10)]
    weight = np.r_[np.ones(10), np.full(10, 3.0)]
    bins = reliability_bins(Predictions.from_arrays(score, label, weight=weight), n_bins=1)
    assert bins.effective_size[0] == pytest.approx(16)
    low, high = proportion_confint(0.75 * 16, 16, alpha=0.05, method="wilson")
    assert bins.interval_low[0] == pytest.approx(low)
    assert bins.interval_high[0] == pytest.approx(high)


def test_normal_interval_for_continuous_responses():
    # Responses 0.2, 0.4, 0.6, 0.8: mean .5, (population) variance .05, n = 4.
    pred = Predictions.from_arrays([0.5] * 4, [0.2, 0.4, 0.6, 0.8], response="continuous")
    bins = reliability_bins(pred, n_bins=1, confidence=0.95)
    half = 1.959963984540054 * np.sqrt(0.05 / 4)
    assert bins.interval_low[0] == pytest.approx(0.5 - half)
    assert bins.interval_high[0] == pytest.approx(0.5 + half)


def test_bootstrap_seeded_and_shaped():
    pred = _unweighted(300)
    a = reliability_bins(pred, n_bins=5, n_bootstrap=20, rng=4)
    b = reliability_bins(pred, n_bins=5, n_bootstrap=20, rng=4)
    c = reliability_bins(pred, n_bins=5, n_bootstrap=20, rng=5)
    assert a.bootstrap_response.shape == (20, 5)
    np.testing.assert_array_equal(a.bootstrap_response, b.bootstrap_response)
    assert not np.array_equal(a.bootstrap_response, c.bootstrap_response)
    # Replicates scatter around the estimate.
    spread = np.nanstd(a.bootstrap_response, axis=0)
    assert np.all(spread > 0)
    assert np.all(np.abs(np.nanmean(a.bootstrap_response, axis=0) - a.mean_response) < 0.1)


def test_reliability_diagrams_several_counts_with_subpopulation():
    rng = np.random.default_rng(0)
    n = 2000
    score = rng.random(n)
    pred = Predictions.from_arrays(score, rng.random(n) < score, weight=rng.random(n) + 0.5)
    index = np.arange(0, n, 7)
    result = reliability_diagrams(pred, index=index, description="every 7th", n_bootstrap=5)
    assert result.n_bins == (10, 20, 50)
    assert [d.n_bins for d in result.full] == [10, 20, 50]
    assert [d.n for d in result.subpopulation] == [index.size] * 3
    assert result.subpopulation[0].bootstrap_response.shape == (5, 10)
    assert result.full[0].bootstrap_response.shape == (0, 10)
    assert result.histogram_full.sum() == pytest.approx(pred.weight_total)
    assert result.histogram_subpopulation.sum() == pytest.approx(pred.weight[index].sum())
    assert result.has_subpopulation
    frame = result.to_frame()
    assert set(frame["population"]) == {"full", "subpopulation"}
    assert frame["count"].sum() == 3 * n + 3 * index.size
    # The subpopulation alone gives the same diagram as reliability_bins on its rows.
    alone = reliability_bins(pred, n_bins=20, index=index)
    np.testing.assert_array_equal(alone.mean_response, result.subpopulation[1].mean_response)


def test_reliability_diagrams_full_only():
    result = reliability_diagrams(_unweighted(500), n_bins=[4, 8], kind="equal_count")
    assert not result.has_subpopulation
    assert [d.count.sum() for d in result.full] == [500, 500]
    assert result.full[0].bootstrap_response.shape == (20, 4)
    assert result.histogram_subpopulation.size == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kind": "quantile"}, "kind must be one of"),
        ({"n_bins": 0}, "positive integers"),
        ({"confidence": 1.5}, "confidence"),
        ({"n_bootstrap": -1}, "n_bootstrap"),
        ({"index": np.array([], dtype=int)}, "empty"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(ValidationError, match=message):
        reliability_bins(_unweighted(20), **options)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["equal_width", "equal_count",
                                                             "similar_ratio"]))
def test_bins_invariant_to_row_order(seed, kind):
    rng = np.random.default_rng(seed)
    n = 80
    frame = pd.DataFrame({"score": rng.integers(0, 8, n) / 7, "label": rng.integers(0, 2, n),
                          "weight": rng.random(n) + 0.2})
    out = []
    for order in (np.arange(n), rng.permutation(n)):
        f = frame.iloc[order]
        pred = Predictions.from_arrays(f["score"], f["label"], weight=f["weight"])
        out.append(reliability_bins(pred, n_bins=4, kind=kind))
    np.testing.assert_array_equal(out[0].count, out[1].count)
    np.testing.assert_allclose(out[0].mean_response, out[1].mean_response)
    assert out[0].count.sum() == n


# ---------------------------------------------------------------------------------------------
# Classical metrics


def test_metrics_hand_computed():
    # Scores .2 .4 .6 .8, responses 0 1 1 1, two bins (0, .5], (.5, 1]:
    # c = ((.2 - 0) + (.4 - 1))/2 = -.2 and ((.6 - 1) + (.8 - 1))/2 = -.3 (paper 002 eq. (6)).
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 1])
    m = calibration_metrics(pred, n_bins=2)
    assert isinstance(m, CalibrationMetrics)
    assert m.ece_equal_width == pytest.approx((2 * 0.2 + 2 * 0.3) / 4)  # eq. (14)
    assert m.ece_equal_count == pytest.approx(0.25)  # the same bins here
    assert m.mce == pytest.approx(0.3)  # eq. (16)
    assert m.ace == pytest.approx(0.25)  # eq. (15)
    assert m.brier == pytest.approx((0.04 + 0.36 + 0.16 + 0.04) / 4)
    assert m.log_loss == pytest.approx(-(np.log(0.8) + np.log(0.4) + np.log(0.6) + np.log(0.8)) / 4)
    assert m.calibration_in_the_large == pytest.approx(0.5 - 0.75)
    # Spiegelhalter: sum (y - s)(1 - 2s) = -.12 + .12 - .08 - .12 = -.2;
    # variance sum (1 - 2s)^2 s (1 - s) = .0576 + .0096 + .0096 + .0576 = .1344.
    z = -0.2 / np.sqrt(0.1344)
    assert m.spiegelhalter_z == pytest.approx(z)
    assert m.spiegelhalter_p == pytest.approx(0.5854, abs=1e-4)  # 2 * Phi(-0.5455)
    frame = m.to_frame()
    assert list(frame.columns) == ["metric", "value", "meaning"]
    assert len(frame) == 9
    assert frame.loc[frame["metric"] == "MCE", "value"].item() == pytest.approx(0.3)


def test_metrics_weighted_hand_computed():
    # Weights 1 1 1 3. Equal width: c1 = -.2 (weights 1, 1), c2 = (-.4 - 3*.2)/4 = -.25,
    # ECE = (2*.2 + 4*.25)/6. Equal weight: cumulative weight shares 1/3, 2/3, 1, 2 -> bins
    # {.2, .4, .6} (c = -.8/3) and {.8} (c = -.2): ECE = (3 * .8/3 + 3 * .2)/6.
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 1], weight=[1, 1, 1, 3])
    m = calibration_metrics(pred, n_bins=2)
    assert m.ece_equal_width == pytest.approx(1.4 / 6)
    assert m.ece_equal_count == pytest.approx((0.8 + 0.6) / 6)
    assert m.mce == pytest.approx(0.25)
    assert m.ace == pytest.approx(0.225)
    assert m.brier == pytest.approx((0.04 + 0.36 + 0.16 + 3 * 0.04) / 6)
    assert m.calibration_in_the_large == pytest.approx((0.2 + 0.4 + 0.6 + 2.4) / 6 - 5 / 6)
    numerator = -0.12 + 0.12 - 0.08 - 3 * 0.12
    variance = 0.0576 + 0.0096 + 0.0096 + 9 * 0.0576
    assert m.spiegelhalter_z == pytest.approx(numerator / np.sqrt(variance))
    assert m.weighted


def test_weighted_log_loss_hand_computed():
    # Weights 1 and 3; scores 0.2 (response 0) and 0.6 (response 1):
    # -(1 * log(0.8) + 3 * log(0.6)) / 4.
    pred = Predictions.from_arrays([0.2, 0.6], [0, 1], weight=[1.0, 3.0])
    m = calibration_metrics(pred, n_bins=2)
    assert m.log_loss == pytest.approx(-(np.log(0.8) + 3 * np.log(0.6)) / 4)
    # Brier (1 * 0.04 + 3 * 0.16)/4; calibration-in-the-large (0.2 + 1.8)/4 - 3/4.
    assert m.brier == pytest.approx(0.52 / 4)
    assert m.calibration_in_the_large == pytest.approx(0.5 - 0.75)


def test_similar_ratio_keeps_ties_together_hand_computed():
    # Unweighted, n = 6, 3 bins: U = sqrt(2)/2 (eq. (40)), so a bin closes once it holds two
    # observations; the run of three tied 0.2 scores cannot be split, so the bins are
    # {0.1, 0.2, 0.2, 0.2} (the first run end with U_k <= U) and {0.3, 0.4}.
    pred = Predictions.from_arrays([0.1, 0.2, 0.2, 0.2, 0.3, 0.4], [0, 1, 0, 1, 1, 1])
    bins = reliability_bins(pred, n_bins=3, kind="similar_ratio")
    assert bins.count.tolist() == [4, 2]
    np.testing.assert_allclose(bins.mean_response, [0.5, 1.0])


def test_log_loss_clip():
    # A score of 0 with response 1 costs -log(1e-15) ~ 34.54, not infinity.
    m = calibration_metrics(Predictions.from_arrays([0.0, 0.5], [1, 1]))
    assert m.log_loss == pytest.approx((-np.log(1e-15) - np.log(0.5)) / 2)
    assert m.clip == 1e-15


def test_metrics_subpopulation_and_perfect_case():
    pred = Predictions.from_arrays([0.5, 0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1, 1])
    m = calibration_metrics(pred, index=np.array([0, 1, 2, 3]))
    assert m.n == 4
    assert m.ece_equal_width == pytest.approx(0)
    assert m.spiegelhalter_z == 0  # (1 - 2s) = 0: 0/0 = 0
    assert m.spiegelhalter_p == 1


def test_metrics_bad_clip():
    with pytest.raises(ValidationError, match="clip"):
        calibration_metrics(_unweighted(10), clip=0.7)


def test_ece_hypothesis_bounds():
    rng = np.random.default_rng(8)
    score = rng.random(1000)
    m = calibration_metrics(Predictions.from_arrays(score, rng.random(1000) < score))
    assert 0 <= m.ace <= m.mce
    assert m.ece_equal_width <= m.mce
    assert abs(m.calibration_in_the_large) <= m.ece_equal_width + 1e-12
