"""Calibration intercept/slope (statsmodels GLM), O/E, ICI/E50/E90 (the published definition
transcribed here), and Hosmer-Lemeshow (hand-computed cases)."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import ndtr
from scipy.stats import chi2

import mcviz
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.measures import calibration_curve_summary, hosmer_lemeshow, logistic_recalibration


@pytest.fixture(scope="module")
def demo():
    return mcviz.load_demo("adult")


def _synthetic(n=6000, seed=5, a=0.4, b=0.6):
    # Known miscalibration: logit P(R = 1 | S) = a + b logit S.
    rng = np.random.default_rng(seed)
    score = rng.beta(2, 3, n)
    truth = 1.0 / (1.0 + np.exp(-(a + b * np.log(score / (1 - score)))))
    return score, (rng.random(n) < truth).astype(float)


# ---------------------------------------------------------------------------------------------
# Intercept and slope against a statsmodels GLM (Binomial, logit link)


def _glm(score, label, weight):
    eta = np.log(score / (1 - score))
    family = sm.families.Binomial()
    offset = sm.GLM(label, np.ones((score.size, 1)), family=family, offset=eta,
                    freq_weights=weight).fit(tol=1e-12)
    slope = sm.GLM(label, sm.add_constant(eta), family=family,
                   freq_weights=weight).fit(tol=1e-12)
    return offset, slope


def _recalibration_cases(demo):
    score, label = _synthetic()
    rng = np.random.default_rng(8)
    yield "demo", demo.score, demo.label, None
    yield "demo, weights", demo.score, demo.label, rng.uniform(0.2, 3.0, demo.n)
    yield "synthetic", score, label, None
    yield "synthetic, weights", score, label, rng.integers(1, 5, score.size).astype(float)


def test_intercept_and_slope_equal_statsmodels_glm(demo):
    for case, score, label, weight in _recalibration_cases(demo):
        ours = logistic_recalibration(Predictions.from_arrays(score, label, weight))
        offset, slope = _glm(score, label, weight)
        low, high = offset.conf_int(alpha=0.05)[0]
        assert ours.intercept == pytest.approx(offset.params[0], abs=1e-6), case
        assert ours.intercept_se == pytest.approx(offset.bse[0], abs=1e-6), case
        assert (ours.intercept_low, ours.intercept_high) == pytest.approx((low, high), abs=1e-6)
        low, high = slope.conf_int(alpha=0.05)[1]
        assert ours.slope == pytest.approx(slope.params[1], abs=1e-6), case
        assert ours.slope_se == pytest.approx(slope.bse[1], abs=1e-6), case
        assert ours.slope_model_intercept == pytest.approx(slope.params[0], abs=1e-6), case
        assert (ours.slope_low, ours.slope_high) == pytest.approx((low, high), abs=1e-6)
        assert ours.converged
        w = np.ones_like(score) if weight is None else weight
        assert ours.oe_ratio == pytest.approx(np.sum(w * label) / np.sum(w * score), rel=1e-12)


def test_known_miscalibration_is_recovered():
    # a = 0.4, b = 0.6 in the truth: the slope's 95% interval covers 0.6, not 1
    score, label = _synthetic(n=20000)
    ours = logistic_recalibration(Predictions.from_arrays(score, label))
    assert ours.slope_low < 0.6 < ours.slope_high
    assert ours.slope_high < 0.9
    assert ours.slope_model_intercept == pytest.approx(0.4, abs=4 * 0.05)


def test_degenerate_fits_are_nan():
    # all responses 1: no finite maximum; constant scores: no slope
    all_ones = logistic_recalibration(Predictions.from_arrays([0.2, 0.5, 0.7], [1, 1, 1]))
    assert np.isnan(all_ones.intercept)
    assert np.isnan(all_ones.slope)
    assert not all_ones.converged
    constant = logistic_recalibration(Predictions.from_arrays([0.5] * 4, [1, 1, 1, 0]))
    assert constant.intercept == pytest.approx(np.log(3), abs=1e-12)
    assert np.isnan(constant.slope)


# ---------------------------------------------------------------------------------------------
# ICI, E50, E90: Austin & Steyerberg (2019), transcribed here from the paper (R: loess(y ~ p),
# span 0.75, degree 2, tricube weights, gaussian family; ICI = mean |p_calibrated - p|,
# E50 = median, E90 = 90th percentile).


def _loess_direct(x, y, w, at, span=0.75):
    n = x.size
    q = int(np.floor(n * span + 1e-5))
    fit = np.empty(at.size)
    for j, v in enumerate(at):
        distance = np.abs(x - v)
        h = np.partition(distance, q - 1)[q - 1]  # distance to the q-th nearest observation
        u = np.clip(distance / h, 0, 1)
        k = w * (1 - u**3) ** 3
        design = np.column_stack((np.ones(n), x - v, (x - v) ** 2))
        root = np.sqrt(k)
        beta = np.linalg.lstsq(design * root[:, None], y * root, rcond=None)[0]
        fit[j] = beta[0]
    return fit


def _ici_reference(score, label, weight=None):
    w = np.ones(score.size) if weight is None else weight
    distinct, inverse = np.unique(score, return_inverse=True)
    gap = np.abs(_loess_direct(score, label, w, distinct)[inverse] - score)
    if weight is None:
        e50, e90 = np.quantile(gap, [0.5, 0.9])  # R's default type 7
    else:  # integer weights: the quantile of the rows repeated by their weights
        repeated = np.repeat(gap, w.astype(int))
        e50, e90 = np.quantile(repeated, [0.5, 0.9], method="inverted_cdf")
    return np.sum(w * gap) / w.sum(), e50, e90


def _check_ici(result, reference, tolerance):
    assert (result.ici, result.e50, result.e90) == pytest.approx(reference, abs=tolerance)


def test_ici_exact_path_unweighted_and_weighted():
    score, label = _synthetic(n=180)  # 180 distinct scores <= 200: evaluated at each
    result = calibration_curve_summary(Predictions.from_arrays(score, label))
    assert not result.interpolated
    _check_ici(result, _ici_reference(score, label), 1e-9)
    weight = np.random.default_rng(2).integers(1, 4, score.size)
    result = calibration_curve_summary(Predictions.from_arrays(score, label, weight))
    _check_ici(result, _ici_reference(score, label, weight.astype(float)), 1e-9)


def test_ici_with_ties():
    score, label = _synthetic(n=2500)
    score = np.round(score, 2).clip(0.01, 0.99)
    result = calibration_curve_summary(Predictions.from_arrays(score, label))
    _check_ici(result, _ici_reference(score, label), 1e-9)


def test_ici_interpolated_path_on_demo_subpopulation(demo):
    # 2,000 rows of the demo with as many distinct scores: the curve is evaluated at 200 points
    index = np.sort(np.random.default_rng(0).choice(demo.n, 2000, replace=False))
    result = calibration_curve_summary(demo, index=index)
    assert result.interpolated
    _check_ici(result, _ici_reference(demo.score[index], demo.label[index]), 2e-5)
    # weighted (measured difference 1.0e-5: linear interpolation between 200 points)
    weight = np.random.default_rng(5).integers(1, 4, index.size).astype(float)
    pred = Predictions.from_arrays(demo.score[index], demo.label[index], weight)
    reference = _ici_reference(demo.score[index], demo.label[index], weight)
    _check_ici(calibration_curve_summary(pred), reference, 5e-5)


def test_ici_of_a_known_curve():
    # LOESS reproduces a quadratic exactly: responses equal to g(s) = s² give |g(s) - s|
    score = np.linspace(0.01, 0.99, 99)
    pred = Predictions.from_arrays(score, score**2, response="continuous")
    result = calibration_curve_summary(pred)
    gap = score - score**2
    assert result.ici == pytest.approx(gap.mean(), abs=1e-10)
    assert result.e50 == pytest.approx(np.median(gap), abs=1e-10)
    assert result.emax == pytest.approx(0.25 - 0.0, abs=1e-3)


# ---------------------------------------------------------------------------------------------
# Hosmer-Lemeshow


def test_hosmer_lemeshow_hand_computed_unweighted():
    # Scores 0.1, 0.1, 0.3, 0.5, 0.7, 0.9, responses 0, 1, 0, 1, 1, 1; 3 groups of weight 2:
    # {0.1, 0.1}: O=1, E=0.2, N=2 -> 0.64 / (0.2 * 0.9) = 3.5556
    # {0.3, 0.5}: O=1, E=0.8, N=2 -> 0.04 / (0.8 * 0.6) = 0.08333
    # {0.7, 0.9}: O=2, E=1.6, N=2 -> 0.16 / (1.6 * 0.2) = 0.5
    pred = Predictions.from_arrays([0.1, 0.1, 0.3, 0.5, 0.7, 0.9], [0, 1, 0, 1, 1, 1])
    result = hosmer_lemeshow(pred, groups=3)
    expected = 0.64 / 0.18 + 0.04 / 0.48 + 0.16 / 0.32
    assert result.statistic == pytest.approx(expected, abs=1e-12)
    assert result.df == 1
    assert result.p_value == pytest.approx(2 * ndtr(-np.sqrt(expected)), abs=1e-12)  # chi2(1)
    np.testing.assert_allclose(result.observed, [1, 1, 2])
    np.testing.assert_allclose(result.expected, [0.2, 0.8, 1.6])


def test_hosmer_lemeshow_hand_computed_weighted_with_an_empty_group():
    # Weights 2, 1, 1, 1, 1, 2 (total 8), 4 groups with edges 2, 4, 6. Cumulative weight at the
    # ends of the runs: 0.1 -> 3 (group 2: the tie is not split, group 1 stays empty), 0.3 -> 4,
    # 0.5 -> 5, 0.7 -> 6, 0.9 -> 8. Groups {0.1 x2, 0.3}, {0.5, 0.7}, {0.9}:
    # O = 1, E = 0.1*3 + 0.3 = 0.6, N = 4 -> 0.16 / (0.6 * 0.85)
    # O = 2, E = 1.2, N = 2 -> 0.64 / (1.2 * 0.4);  O = 2, E = 1.8, N = 2 -> 0.04 / (1.8 * 0.1)
    pred = Predictions.from_arrays(
        [0.1, 0.1, 0.3, 0.5, 0.7, 0.9], [0, 1, 0, 1, 1, 1], [2, 1, 1, 1, 1, 2]
    )
    result = hosmer_lemeshow(pred, groups=4)
    expected = 0.16 / 0.51 + 0.64 / 0.48 + 0.04 / 0.18
    assert result.statistic == pytest.approx(expected, abs=1e-12)
    assert result.df == 1
    np.testing.assert_allclose(result.weight, [4, 2, 2])
    np.testing.assert_allclose(result.upper_score, [0.3, 0.7, 0.9])
    assert "depends on the number of groups" in result.note


def test_hosmer_lemeshow_deciles_without_ties():
    # n = 1,000 distinct scores: ten groups of exactly 100 rows in score order
    score, label = _synthetic(n=1000)
    order = np.argsort(score)
    groups = np.split(order, 10)
    statistic = 0.0
    for g in groups:
        o, e, n = label[g].sum(), score[g].sum(), g.size
        statistic += (o - e) ** 2 / e + (o - e) ** 2 / (n - e)  # both outcome cells
    result = hosmer_lemeshow(Predictions.from_arrays(score, label))
    assert result.statistic == pytest.approx(statistic, rel=1e-12)
    assert result.p_value == pytest.approx(chi2.sf(statistic, 8), rel=1e-10)


def test_validation():
    pred = Predictions.from_arrays([0.2, 0.4, 0.5], [0, 1, 1])
    with pytest.raises(ValidationError, match="groups must be at least 3"):
        hosmer_lemeshow(pred, groups=2)
    with pytest.raises(ValidationError, match="every score is the same"):
        calibration_curve_summary(Predictions.from_arrays([0.3, 0.3], [0, 1]))
    with pytest.raises(ValidationError, match="curve_points"):
        calibration_curve_summary(pred, curve_points=1)
