"""smECE and the smoothed reliability diagram against relplot (Błasiok & Nakkiran's package)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcviz
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.measures import smooth_ece, smooth_reliability

relplot = pytest.importorskip("relplot")
from relplot.kernels import ReflectedGaussianKernel  # noqa: E402


@pytest.fixture(scope="module")
def demo():
    return mcviz.load_demo("adult")


def _synthetic(n=4000, seed=7):
    # Known miscalibration: P(R = 1 | S) = S**2 (every score too high, most in the middle).
    rng = np.random.default_rng(seed)
    score = rng.beta(2, 2, n)
    label = (rng.random(n) < score**2).astype(float)
    return score, label


def _relplot(score, label):
    value, sigma = relplot.smECE(np.asarray(score), np.asarray(label), return_width=True)
    return float(value), float(sigma)


def _check(result, reference):
    value, sigma = reference
    assert result.smece == pytest.approx(value, rel=1e-3)
    assert result.sigma == pytest.approx(sigma, rel=1e-3)


def test_demo_unweighted(demo):
    _check(smooth_ece(demo), _relplot(demo.score, demo.label))


def test_demo_weighted_equals_repeated_rows(demo):
    # Integer (frequency) weights give the smECE of the rows repeated by their weights.
    weight = np.random.default_rng(3).integers(1, 4, demo.n)
    pred = Predictions.from_arrays(demo.score, demo.label, weight)
    repeats = pred.weight.astype(int)
    reference = _relplot(np.repeat(pred.score, repeats), np.repeat(pred.label, repeats))
    _check(smooth_ece(pred), reference)


def test_synthetic_unweighted_and_weighted():
    score, label = _synthetic()
    _check(smooth_ece(Predictions.from_arrays(score, label)), _relplot(score, label))
    weight = np.random.default_rng(1).integers(1, 6, score.size)
    pred = Predictions.from_arrays(score, label, weight)
    repeats = pred.weight.astype(int)
    reference = _relplot(np.repeat(pred.score, repeats), np.repeat(pred.label, repeats))
    _check(smooth_ece(pred), reference)
    # the miscalibration is real: E|S - S²| = E[S(1 - S)] = 0.2 for Beta(2, 2); smECE is of
    # that order and far above its value on calibrated labels drawn from the same scores
    calibrated = (np.random.default_rng(2).random(score.size) < score).astype(float)
    assert smooth_ece(Predictions.from_arrays(score, label)).smece > 0.1
    assert smooth_ece(Predictions.from_arrays(score, calibrated)).smece < 0.05


def test_subpopulation_equals_relplot_on_its_rows(demo):
    index = np.flatnonzero(demo.covariates["sex"].to_numpy() == demo.covariates["sex"].iloc[0])
    _check(smooth_ece(demo, index=index), _relplot(demo.score[index], demo.label[index]))


def test_smoothed_curve_equals_relplot_kernel_smoother(demo):
    result = smooth_reliability(demo, n_bootstrap=0)
    reference, _ = ReflectedGaussianKernel(result.sigma).smooth(demo.score, demo.label, result.x)
    np.testing.assert_allclose(result.fit, reference, rtol=1e-9, atol=1e-12)
    assert np.isnan(result.lower).all()
    # the density integrates to 1 over [0, 1] (trapezoid rule on 200 points)
    assert np.trapezoid(result.density, result.x) == pytest.approx(1.0, abs=0.02)


def test_bootstrap_band_is_seeded_and_ordered():
    score, label = _synthetic(n=1500)
    pred = Predictions.from_arrays(score, label)
    first = smooth_reliability(pred, n_bootstrap=40, rng=5)
    again = smooth_reliability(pred, n_bootstrap=40, rng=5)
    np.testing.assert_array_equal(first.lower, again.lower)
    assert np.all(first.lower <= first.upper)
    # the band is about the fit: it covers the fitted curve at most points
    inside = (first.lower <= first.fit) & (first.fit <= first.upper)
    assert inside.mean() > 0.8


def test_row_order_of_ties_does_not_matter():
    score = np.repeat([0.2, 0.5, 0.8], 4)
    label = np.array([0, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0], dtype=float)
    weight = np.arange(1, 13, dtype=float)
    order = np.random.default_rng(0).permutation(score.size)
    a = smooth_ece(Predictions.from_arrays(score, label, weight))
    b = smooth_ece(Predictions.from_arrays(score[order], label[order], weight[order]))
    # equal up to the order of floating-point additions of the tied rows
    assert a.smece == pytest.approx(b.smece, rel=1e-12)
    assert a.sigma == b.sigma


def test_validation():
    pred = Predictions.from_arrays([0.2, 0.4], [0, 1])
    with pytest.raises(ValidationError, match="subpopulation is empty"):
        smooth_ece(pred, index=np.array([], dtype=int))
    with pytest.raises(ValidationError, match="confidence"):
        smooth_reliability(pred, confidence=1.5)
    with pytest.raises(ValidationError, match="Predictions object"):
        smooth_ece(np.array([0.2, 0.4]))
    continuous = Predictions.from_arrays([0.2, 0.4, 0.6], [0.5, 2.0, -1], response="continuous")
    with pytest.raises(ValidationError, match=r"2 of 3 rows .* lie outside"):
        smooth_ece(continuous)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.integers(0, 1), st.floats(0.1, 5.0)),
        min_size=2,
        max_size=40,
    )
)
def test_smece_is_an_average_of_smoothed_residuals(rows):
    # r̂(t) is a weighted average of residuals S - R (the guard only shrinks it), so
    # 0 <= smECE <= max |S - R|; and sigma* lies in (0, 1].
    score, label, weight = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    result = smooth_ece(Predictions.from_arrays(score, label, weight))
    assert 0.0 <= result.smece <= np.abs(score - label).max() + 1e-12
    assert 0.0 < result.sigma <= 1.0
