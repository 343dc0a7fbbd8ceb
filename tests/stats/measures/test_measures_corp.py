"""CORP curves, consistency bands and MCB-DSC-UNC against model-diagnostics and scikit-learn."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcviz
from mcviz.stats.binning import calibration_metrics
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.measures import corp_reliability, score_decomposition

scoring = pytest.importorskip("model_diagnostics.scoring")
isotonic = pytest.importorskip("sklearn.isotonic")

FIELDS = ("miscalibration", "discrimination", "uncertainty", "score")


@pytest.fixture(scope="module")
def demo():
    return mcviz.load_demo("adult")


def _synthetic(n=5000, seed=11, ties=False):
    # Known miscalibration: logit P(R = 1 | S) = 0.4 + 0.6 logit S (too extreme, too low).
    rng = np.random.default_rng(seed)
    score = rng.beta(2, 3, n)
    if ties:
        score = np.round(score, 2).clip(0.01, 0.99)  # 99 distinct scores
    truth = 1.0 / (1.0 + np.exp(-(0.4 + 0.6 * np.log(score / (1 - score)))))
    return score, (rng.random(n) < truth).astype(float)


def _cases(demo):
    score, label = _synthetic()
    tied_score, tied_label = _synthetic(ties=True)
    rng = np.random.default_rng(4)
    yield "demo", demo.score, demo.label, None
    yield "demo, real weights", demo.score, demo.label, rng.uniform(0.2, 3.0, demo.n)
    yield "synthetic", score, label, None
    yield "synthetic, weights", score, label, rng.uniform(0.5, 2.0, score.size)
    yield "synthetic ties, weights", tied_score, tied_label, rng.integers(1, 5, score.size)


@pytest.mark.parametrize("name", ["brier", "log_loss"])
def test_decomposition_equals_model_diagnostics(demo, name):
    function = scoring.SquaredError() if name == "brier" else scoring.LogLoss()
    for case, score, label, weight in _cases(demo):
        pred = Predictions.from_arrays(score, label, weight)
        ours = score_decomposition(pred, score=name)
        reference = scoring.decompose(
            label, score, weight, scoring_function=function
        ).row(0, named=True)
        for field in FIELDS:
            assert getattr(ours, field) == pytest.approx(reference[field], abs=1e-9), (case, field)


def test_decomposition_adds_up_to_calibration_metrics(demo):
    # S = MCB - DSC + UNC, with S the Brier score / log loss of calibration_metrics
    weight = np.random.default_rng(0).uniform(0.5, 2, demo.n)
    pred = Predictions.from_arrays(demo.score, demo.label, weight)
    metrics = calibration_metrics(pred)
    result = corp_reliability(pred, n_resamples=0)
    pairs = ((result.brier, metrics.brier), (result.log_loss, metrics.log_loss))
    for decomposition, score in pairs:
        total = decomposition.miscalibration - decomposition.discrimination
        assert total + decomposition.uncertainty == pytest.approx(score, abs=1e-12)
    # UNC of the Brier score is r(1 - r) with the weighted base rate r
    r = np.sum(weight * demo.label) / weight.sum()
    assert result.brier.uncertainty == pytest.approx(r * (1 - r), abs=1e-14)


def test_curve_equals_scikit_learn_isotonic_regression(demo):
    for case, score, label, weight in _cases(demo):
        pred = Predictions.from_arrays(score, label, weight)
        result = corp_reliability(pred, n_resamples=0)
        reference = isotonic.IsotonicRegression().fit(score, label, sample_weight=weight)
        expected = reference.predict(pred.score)  # scikit-learn pools tied scores too
        block = np.searchsorted(result.block_high, pred.score, side="left")
        np.testing.assert_allclose(result.block_value[block], expected, atol=1e-12, err_msg=case)
        assert np.all(pred.score >= result.block_low[block])
        assert np.all(np.diff(result.block_value) > 0)
        assert result.block_count.sum() == pred.n
        assert result.block_weight.sum() == pytest.approx(pred.weight.sum(), rel=1e-12)


def test_hand_example_with_ties():
    # Scores 0.2 (responses 1, 0), 0.4 (0), 0.6 (1, 1): the tie at 0.2 is pooled to 1/2 first,
    # which violates 0 at 0.4, so PAV pools the first three rows: 1/3; then 1.
    pred = Predictions.from_arrays([0.6, 0.2, 0.4, 0.2, 0.6], [1, 1, 0, 0, 1])
    result = corp_reliability(pred, n_resamples=0)
    np.testing.assert_allclose(result.block_value, [1 / 3, 1.0])
    np.testing.assert_allclose(result.block_low, [0.2, 0.6])
    np.testing.assert_allclose(result.block_high, [0.4, 0.6])
    # Brier: S̄_X = (0.64 + 0.04 + 0.16 + 0.16 + 0.16)/5 = 0.232;
    # S̄_C = (4/9 + 1/9 + 1/9 + 0 + 0)/5 = 2/15; S̄_R = 0.6 * 0.4 = 0.24
    d = result.brier
    assert d.score == pytest.approx(0.232, abs=1e-15)
    assert d.miscalibration == pytest.approx(0.232 - 2 / 15, abs=1e-15)
    assert d.discrimination == pytest.approx(0.24 - 2 / 15, abs=1e-15)
    assert d.uncertainty == pytest.approx(0.24, abs=1e-15)


def test_ties_in_any_row_order_give_one_result():
    score, label = _synthetic(n=800, ties=True)
    weight = np.random.default_rng(9).uniform(0.5, 2.0, score.size)
    order = np.random.default_rng(10).permutation(score.size)
    a = corp_reliability(Predictions.from_arrays(score, label, weight), n_resamples=0)
    b = corp_reliability(
        Predictions.from_arrays(score[order], label[order], weight[order]), n_resamples=0
    )
    np.testing.assert_allclose(a.block_value, b.block_value, rtol=1e-12)
    assert a.log_loss.miscalibration == pytest.approx(b.log_loss.miscalibration, rel=1e-12)


def test_consistency_band_under_calibration_and_miscalibration():
    rng = np.random.default_rng(21)
    score = rng.uniform(0.05, 0.95, 3000)
    calibrated = (rng.random(score.size) < score).astype(float)
    result = corp_reliability(Predictions.from_arrays(score, calibrated), n_resamples=100, rng=1)
    assert result.band_x.size > 100
    assert np.all(result.band_lower <= result.band_upper)
    # the band is around the diagonal (it is the CORP curve's spread under calibration)
    middle = (result.band_x > 0.2) & (result.band_x < 0.8)
    assert np.all(result.band_lower[middle] <= result.band_x[middle] + 0.02)
    assert np.all(result.band_upper[middle] >= result.band_x[middle] - 0.02)
    # a calibrated model's curve stays mostly inside; the miscalibrated synthetic one does not
    def inside(res):
        x, y = res.curve()
        value = np.interp(res.band_x, x, y)
        return np.mean((res.band_lower <= value) & (value <= res.band_upper))

    assert inside(result) > 0.8
    score2, label2 = _synthetic(n=3000)
    miscalibrated = corp_reliability(Predictions.from_arrays(score2, label2), rng=1)
    assert inside(miscalibrated) < 0.5
    again = corp_reliability(Predictions.from_arrays(score2, label2), rng=1)
    np.testing.assert_array_equal(again.band_upper, miscalibrated.band_upper)


def test_subpopulation(demo):
    index = np.flatnonzero(demo.covariates["age"].to_numpy() >= 40)
    ours = score_decomposition(demo, index=index)
    reference = scoring.decompose(
        demo.label[index], demo.score[index], scoring_function=scoring.SquaredError()
    ).row(0, named=True)
    assert ours.miscalibration == pytest.approx(reference["miscalibration"], abs=1e-9)


def test_validation():
    pred = Predictions.from_arrays([0.2, 0.4], [0, 1])
    with pytest.raises(ValidationError, match="score must be"):
        score_decomposition(pred, score="crps")
    with pytest.raises(ValidationError, match="n_resamples"):
        corp_reliability(pred, n_resamples=-1)
    with pytest.raises(ValidationError, match="outside"):
        corp_reliability(pred, index=np.array([5]))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95]),  # ties are likely
            st.integers(0, 1),
            st.floats(0.1, 5.0),
        ),
        min_size=2,
        max_size=40,
    )
)
def test_decomposition_properties(rows):
    # PAV is optimal among non-decreasing functions of the score for every proper score, and
    # both the score itself and the constant base rate are such functions: MCB >= 0, DSC >= 0.
    score, label, weight = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    pred = Predictions.from_arrays(score, label, weight)
    order = np.random.default_rng(0).permutation(score.size)
    shuffled = Predictions.from_arrays(score[order], label[order], weight[order])
    for name in ("brier", "log_loss"):
        d = score_decomposition(pred, score=name)
        assert d.miscalibration >= -1e-12
        assert d.discrimination >= -1e-12
        assert d.miscalibration - d.discrimination + d.uncertainty == pytest.approx(
            d.score, abs=1e-12
        )
        e = score_decomposition(shuffled, score=name)
        assert e.miscalibration == pytest.approx(d.miscalibration, abs=1e-12)
