import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mcviz.stats import binning
from mcviz.stats.agglomeration import (
    Agglomeration,
    average_calibration_error,
    calibration_score,
    cvar,
    cvar_curve,
    expected_calibration_error,
    maximum_calibration_error,
    parse_agglomeration,
    range_deviation,
    standard_deviation,
    superquantile_deviation,
)
from mcviz.errors import ValidationError
from mcviz.stats.groupings import covariate_bins, score_bins
from mcviz.io import Predictions

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
alpha_strategy = st.floats(0, 1)
RISKS = [
    lambda c, m, a: float(np.sum(np.asarray(c) * m)),  # CVaR_0 = the mean
    lambda c, m, a: cvar(c, a, m),
    lambda c, m, a: cvar(c, 1.0, m),  # the maximum
]


@st.composite
def errors_and_mass(draw, size=None):
    n = draw(st.integers(1, 12)) if size is None else size
    values = draw(arrays(float, n, elements=finite))
    mass = draw(arrays(float, n, elements=st.floats(0.05, 1.0)))
    return values, mass / mass.sum()


def _brute_cvar(values, alpha, mass, grid=200_001):
    # Riemann sum of the quantile function Q(t) = inf{c : F(c) >= t} over (alpha, 1).
    order = np.argsort(values)
    v, cumulative = values[order], np.cumsum(mass[order])
    t = alpha + (np.arange(grid) + 0.5) * (1 - alpha) / grid
    return v[np.minimum(np.searchsorted(cumulative, t, side="left"), v.size - 1)].mean()


# ---------------------------------------------------------------------------------------------
# CVaR: hand-computed values and the quantile integral


def test_cvar_hand_computed_with_mass():
    # Values 1, 2, 3 with mass 0.5, 0.3, 0.2. alpha = 0.6: the atom 2 contributes mass
    # 0.8 - 0.6 = 0.2, the atom 3 mass 0.2 -> (0.4 + 0.6)/0.4 = 2.5. alpha = 0.9: only 3.
    values, mass = np.array([3.0, 1.0, 2.0]), np.array([0.2, 0.5, 0.3])
    assert cvar(values, 0.6, mass) == pytest.approx(2.5)
    assert cvar(values, 0.9, mass) == pytest.approx(3.0)
    assert cvar(values, 0.0, mass) == pytest.approx(0.5 + 0.6 + 0.6)
    assert cvar(values, 1.0, mass) == 3.0
    # A value with zero mass never counts, not even for the maximum.
    assert cvar([1.0, 9.0], 1.0, [1.0, 0.0]) == 1.0


@settings(max_examples=60, deadline=None)
@given(errors_and_mass(), st.floats(0, 0.99))
def test_cvar_is_the_quantile_integral(data, alpha):
    values, mass = data
    assert cvar(values, alpha, mass) == pytest.approx(
        _brute_cvar(values, alpha, mass), abs=1e-3 * (1 + np.abs(values).max())
    )


@settings(max_examples=60, deadline=None)
@given(errors_and_mass())
def test_cvar_endpoints_are_mean_and_max(data):
    values, mass = data
    assert cvar(values, 0.0, mass) == pytest.approx(np.sum(values * mass), abs=1e-9)
    assert cvar(values, 1.0, mass) == values.max()
    assert cvar(values, 1 - 1e-9, mass) == pytest.approx(values.max(), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(errors_and_mass())
def test_cvar_curve_is_non_decreasing_from_mean_to_max(data):
    values, _mass = data
    curve = cvar_curve(values)
    assert curve.alpha[0] == 0
    assert curve.alpha[-1] == 1
    assert np.all(np.diff(curve.value) >= -1e-12)
    assert curve.value[0] == pytest.approx(np.abs(values).mean())
    assert curve.value[-1] == np.abs(values).max()


# ---------------------------------------------------------------------------------------------
# Axioms A1-A5 for the risk measures (mean, CVaR_alpha, max), on a fixed measure


def _axiom_case(data):
    """Draw n groups' errors c and mass, other errors c2, alpha, a shift, a scale, a tolerance."""
    n = data.draw(st.integers(1, 10))
    c, mass = data.draw(errors_and_mass(n))
    c2 = data.draw(arrays(float, n, elements=finite))
    alpha = data.draw(alpha_strategy)
    shift = data.draw(finite)
    scale = data.draw(st.floats(0.01, 10))
    tol = 1e-9 * (1 + np.abs(c).max() + np.abs(c2).max() + abs(shift)) * 10
    return n, c, mass, c2, alpha, shift, scale, tol


@pytest.mark.parametrize("risk", RISKS)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_risk_measure_axioms(risk, data):
    n, c, mass, c2, alpha, shift, scale, tol = _axiom_case(data)
    # A1 monotonicity
    bigger = c + np.abs(c2)
    assert risk(c, mass, alpha) <= risk(bigger, mass, alpha) + tol
    # A2 translation equivariance
    assert risk(c + shift, mass, alpha) == pytest.approx(risk(c, mass, alpha) + shift, abs=tol)
    # A3 positive homogeneity
    assert risk(np.zeros(n), mass, alpha) == 0
    assert risk(scale * c, mass, alpha) == pytest.approx(scale * risk(c, mass, alpha),
                                                         abs=tol * scale)
    # A4 subadditivity
    assert risk(c + c2, mass, alpha) <= risk(c, mass, alpha) + risk(c2, mass, alpha) + tol
    # A5 law invariance: permuting the groups, or splitting a group into two halves
    permutation = np.random.default_rng(n).permutation(n)
    assert risk(c[permutation], mass[permutation], alpha) == pytest.approx(
        risk(c, mass, alpha), abs=tol
    )
    split_values = np.concatenate((c, c[:1]))
    split_mass = np.concatenate((mass, mass[:1] / 2))
    split_mass[0] /= 2
    assert risk(split_values, split_mass, alpha) == pytest.approx(risk(c, mass, alpha), abs=tol)


# ---------------------------------------------------------------------------------------------
# Fairness deviation measures: A3-A6


DEVIATIONS = [
    lambda c, m, a: range_deviation(c, m),
    lambda c, m, a: standard_deviation(c, m),
    lambda c, m, a: superquantile_deviation(c, max(a, 0.01), m),
]


@pytest.mark.parametrize("deviation", DEVIATIONS)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_deviation_measure_axioms(deviation, data):
    n, c, mass, c2, alpha, shift, scale, tol = _axiom_case(data)
    value = deviation(c, mass, alpha)
    # A6 normalisation: non-negative, zero for constants, positive otherwise
    assert value >= 0
    assert deviation(np.full(n, shift), mass, alpha) == pytest.approx(0, abs=tol)
    if np.ptp(c) > 1e-6:
        assert value > 0
    # Constants do not change inequality between groups
    assert deviation(c + shift, mass, alpha) == pytest.approx(value, abs=tol)
    # A3 positive homogeneity, A4 subadditivity
    assert deviation(scale * c, mass, alpha) == pytest.approx(scale * value, abs=tol * scale)
    assert deviation(c + c2, mass, alpha) <= value + deviation(c2, mass, alpha) + tol
    # A5 law invariance
    permutation = np.random.default_rng(n).permutation(n)
    assert deviation(c[permutation], mass[permutation], alpha) == pytest.approx(value, abs=tol)


def test_deviation_measures_hand_computed():
    # Errors -0.1, 0.1, 0.3 with mass 0.25, 0.5, 0.25: mean 0.1.
    c, mass = [-0.1, 0.1, 0.3], [0.25, 0.5, 0.25]
    assert range_deviation(c, mass) == pytest.approx(0.4)
    # variance = 0.25*0.04 + 0 + 0.25*0.04 = 0.02
    assert standard_deviation(c, mass) == pytest.approx(np.sqrt(0.02))
    # centred -0.2, 0, 0.2; CVaR_0.5 = (0.25*0 + 0.25*0.2)/0.5 = 0.1; CVaR_1 = 0.2
    assert superquantile_deviation(c, 0.5, mass) == pytest.approx(0.1)
    assert superquantile_deviation(c, 1.0, mass) == pytest.approx(0.2)
    # Proposition 11: E[C] + superquantile deviation = CVaR_alpha(C)
    assert 0.1 + superquantile_deviation(c, 0.5, mass) == pytest.approx(cvar(c, 0.5, mass))


# ---------------------------------------------------------------------------------------------
# Scores from groupings; ECE, ACE and MCE as special cases (Appendix A eqs. (14)-(16))


def _classical(score, label, n_bins):
    # eq. (7)/(14) with equal-width right-closed bins [0, 1/K], (1/K, 2/K], ...
    bins = np.clip(np.ceil(score * n_bins).astype(int) - 1, 0, n_bins - 1)
    errors, sizes = [], []
    for b in range(n_bins):
        member = bins == b
        if member.any():
            errors.append(abs(np.mean(score[member] - label[member])))
            sizes.append(member.sum())
    errors, sizes = np.array(errors), np.array(sizes)
    return np.sum(sizes / score.size * errors), errors.mean(), errors.max()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(0, 10_000))
def test_ece_ace_mce_recovered(n_bins, seed):
    rng = np.random.default_rng(seed)
    score = rng.random(200)
    label = (rng.random(200) < score**1.5).astype(int)
    pred = Predictions.from_arrays(score, label)
    ece, ace, mce = _classical(score, label, n_bins)
    assert expected_calibration_error(pred, n_bins=n_bins) == pytest.approx(ece)
    assert average_calibration_error(pred, n_bins=n_bins) == pytest.approx(ace)
    assert maximum_calibration_error(pred, n_bins=n_bins) == pytest.approx(mce)
    # ... and as the CVaR endpoints of the same grouping
    groups = score_bins(pred, n_bins=n_bins)
    assert calibration_score(groups, "cvar:0").value == pytest.approx(ece)
    assert calibration_score(groups, "cvar:1").value == pytest.approx(mce)
    assert calibration_score(groups, "cvar:0", uniform=True).value == pytest.approx(ace)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 15), st.integers(0, 10_000), st.booleans())
def test_ece_ace_mce_agree_with_the_binning_module(n_bins, seed, weighted):
    # Grouping x agglomeration (score bins, mean / uniform mean / max of |e|) against the
    # binning module's ECE, ACE and MCE, computed from its own bins.
    rng = np.random.default_rng(seed)
    score = np.round(rng.random(300), 2)  # ties and scores on bin edges
    weight = rng.uniform(0.5, 2, 300) if weighted else None
    pred = Predictions.from_arrays(score, (rng.random(300) < score**2).astype(int), weight)
    metrics = binning.calibration_metrics(pred, n_bins=n_bins)
    width = score_bins(pred, n_bins=n_bins)
    count = score_bins(pred, n_bins=n_bins, strategy="count")
    assert calibration_score(width, "mean").value == pytest.approx(metrics.ece_equal_width)
    assert calibration_score(count, "mean").value == pytest.approx(metrics.ece_equal_count)
    assert calibration_score(width, "mean", uniform=True).value == pytest.approx(metrics.ace)
    assert calibration_score(width, "max").value == pytest.approx(metrics.mce)
    assert expected_calibration_error(pred, n_bins=n_bins, strategy="count") == pytest.approx(
        metrics.ece_equal_count
    )


def test_superquantile_deviation_keeps_the_papers_sign():
    # Errors e = label - score = 0.5, -0.1, -0.1 (equal mass); the paper's c = -e = -0.5, 0.1,
    # 0.1 with mean -0.1, so c - E c = -0.4, 0.2, 0.2 and CVaR_0.9 (top 10% of the mass) = 0.2.
    # With the other sign (e - E e = 0.4, -0.2, -0.2) it would be 0.4.
    pred = Predictions.from_arrays(
        [0.5, 0.6, 0.6], [1, 0.5, 0.5], response="continuous", covariates={"g": ["a", "b", "c"]}
    )
    groups = covariate_bins(pred, "g")
    np.testing.assert_allclose(groups.error, [0.5, -0.1, -0.1])
    score = calibration_score(groups, "superquantile:0.9")
    assert score.value == pytest.approx(0.2)
    assert "paper 002's sign" in score.agglomeration.description


def test_calibration_score_fairness_and_worst_group():
    pred = Predictions.from_arrays(
        [0.5] * 6, [0, 0, 1, 1, 1, 0], covariates={"g": ["a", "a", "b", "b", "c", "c"]}
    )
    groups = covariate_bins(pred, "g")  # errors 0.5, -0.5, 0
    score = calibration_score(groups, Agglomeration("range"))
    assert score.value == pytest.approx(1.0)
    assert score.kind == "fairness"
    assert calibration_score(groups, "std").value == pytest.approx(np.sqrt(1 / 6))
    quality = calibration_score(groups, "mean")
    assert quality.value == pytest.approx(1 / 3)
    assert quality.kind == "quality"
    assert quality.worst_group in ("g = a", "g = b")
    assert "covariate bins" in quality.grouping


def test_agglomeration_validation():
    with pytest.raises(ValidationError, match="agglomeration must be one of"):
        Agglomeration("median")
    with pytest.raises(ValidationError, match="needs alpha"):
        Agglomeration("cvar")
    with pytest.raises(ValidationError, match=r"alpha must lie in \(0, 1\]"):
        Agglomeration("superquantile", 0.0)
    with pytest.raises(ValidationError, match=r"alpha must lie in \[0, 1\]"):
        parse_agglomeration("cvar:1.5")
    with pytest.raises(ValidationError, match="takes no alpha"):
        Agglomeration("max", 0.5)
    with pytest.raises(ValidationError, match="is not a number"):
        parse_agglomeration("cvar:high")
    with pytest.raises(ValidationError, match="NaN or infinite"):
        cvar([1.0, np.nan], 0.5)
    with pytest.raises(ValidationError, match="mass has 1 entries"):
        cvar([1.0, 2.0], 0.5, [1.0])
    assert parse_agglomeration(" superquantile:0.25 ") == Agglomeration("superquantile", 0.25)
