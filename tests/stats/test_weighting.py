import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcviz.stats.cumulative import cumulative_differences, sigma_bernoulli
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.weighting import SCHEMES, reweight, scheme_factors


def test_proportional_weights_hand_computed():
    # Scores 0.1, 0.25, 0.5: W = 1/S = 10, 4, 2.
    pred = Predictions.from_arrays([0.5, 0.1, 0.25], [1, 0, 0])
    new = reweight(pred, "proportional")
    np.testing.assert_allclose(new.weight, [10.0, 4.0, 2.0])
    assert new.weight_column == "proportional"
    assert new.weighted
    assert not new.weight.flags.writeable
    # The original is unchanged and still unweighted.
    assert not pred.weighted
    np.testing.assert_array_equal(pred.weight, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(new.score, pred.score)
    np.testing.assert_array_equal(new.row, pred.row)


def test_regularised_proportional_weights_hand_computed():
    pred = Predictions.from_arrays([0.0, 0.1, 0.5], [0, 0, 1])
    # 1/max(S, 0.2) = 5, 5, 2
    np.testing.assert_allclose(reweight(pred, "proportional", rho=0.2).weight, [5.0, 5.0, 2.0])
    # 1/(S + 0.5) = 2, 1/0.6, 1
    np.testing.assert_allclose(
        reweight(pred, "proportional-shifted", rho=0.5).weight, [2.0, 1 / 0.6, 1.0]
    )
    assert reweight(pred, "proportional", rho=0.2).weight_column == "proportional(ρ=0.2)"


def test_low_prevalence_weights_hand_computed():
    # Unweighted: prevalence A = 1/4, so positives get 4 and negatives 1.
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 1])
    np.testing.assert_allclose(reweight(pred, "low-prevalence").weight, [1.0, 1.0, 1.0, 4.0])
    # With user weights 1, 1, 2, 2: A = 2/6 = 1/3, new weights 1, 1, 2, 2*3 = 6.
    weighted = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 1], [1.0, 1.0, 2.0, 2.0])
    new = reweight(weighted, "low-prevalence")
    np.testing.assert_allclose(new.weight, [1.0, 1.0, 2.0, 6.0])
    assert new.weight_column == "weight × low-prevalence"


def test_user_weights_are_multiplied():
    pred = Predictions.from_arrays([0.25, 0.5], [0, 1], [3.0, 5.0])
    new = reweight(pred, "proportional-shifted", rho=0.25)
    np.testing.assert_allclose(new.weight, [3.0 / 0.5, 5.0 / 0.75])
    assert new.weight_column == "weight × proportional-shifted(ρ=0.25)"


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SCHEMES), st.integers(0, 10_000))
def test_factors_are_positive_and_finite(scheme, seed):
    rng = np.random.default_rng(seed)
    score = rng.random(50)
    label = np.r_[1, (rng.random(49) < score[1:]).astype(int)]
    pred = Predictions.from_arrays(score, label, rng.uniform(0.5, 2, 50))
    rho = None if scheme == "low-prevalence" else 0.05
    factors = scheme_factors(pred, scheme, rho=rho)
    assert np.all(np.isfinite(factors))
    assert np.all(factors > 0)
    np.testing.assert_allclose(reweight(pred, scheme, rho=rho).weight, pred.weight * factors)


def test_reweighted_predictions_flow_into_the_cumulative_statistics():
    pred = Predictions.from_arrays([0.2, 0.4, 0.5, 0.8], [0, 1, 0, 1])
    new = reweight(pred, "proportional")
    result = cumulative_differences(new)
    assert result.weighted
    # sigma of eq. (5) with W = 1/S: sqrt(sum S(1-S)/S^2)/sum(1/S)
    s = np.array([0.2, 0.4, 0.5, 0.8])
    expected = np.sqrt(np.sum((1 - s) / s)) / np.sum(1 / s)
    assert result.sigma == pytest.approx(expected)
    assert sigma_bernoulli(new.score, new.weight) == pytest.approx(expected)


def test_validation_messages():
    pred = Predictions.from_arrays([0.0, 0.0, 0.5], [0, 0, 1])
    with pytest.raises(ValidationError, match=r"2 of 3 rows \(rows 0, 1\) have score 0"):
        reweight(pred, "proportional")
    with pytest.raises(ValidationError, match="needs rho"):
        reweight(pred, "proportional-shifted")
    with pytest.raises(ValidationError, match="rho must be a positive number"):
        reweight(pred, "proportional", rho=-1.0)
    with pytest.raises(ValidationError, match="takes no rho"):
        reweight(pred, "low-prevalence", rho=0.1)
    with pytest.raises(ValidationError, match="weighting must be one of"):
        reweight(pred, "inverse")
    with pytest.raises(ValidationError, match="no positive responses"):
        reweight(Predictions.from_arrays([0.1, 0.2], [0, 0]), "low-prevalence")
    continuous = Predictions.from_arrays([0.1, 0.2], [0.3, 0.5], response="continuous")
    with pytest.raises(ValidationError, match="need 0/1 responses"):
        reweight(continuous, "low-prevalence")


# ---------------------------------------------------------------------------------------------
# Appendix C: the variance estimate eq. (6) for real-valued responses


def test_appendix_c_sigma_is_chosen_for_continuous_responses():
    # S = 0.2, 0.4, 0.6; R = 0.5, 0.1, 0.9; W = 1, 2, 1 -> d = R - S = 0.3, -0.3, 0.3
    # numerator = (-0.6)^2 (1+2)^2 + (0.6)^2 (2+1)^2 = 6.48
    # denominator = 4 * (1+2+1) * (W_1 + W_n + 2 W_2) = 4 * 4 * 6 = 96
    pred = Predictions.from_arrays(
        [0.2, 0.4, 0.6], [0.5, 0.1, 0.9], [1.0, 2.0, 1.0], response="continuous"
    )
    result = cumulative_differences(pred)
    assert result.sigma_method == "adjacent"
    assert result.sigma == pytest.approx(np.sqrt(6.48 / 96))
    # Binary responses keep eq. (5).
    binary = Predictions.from_arrays([0.2, 0.4, 0.6], [0, 1, 1])
    assert cumulative_differences(binary).sigma_method == "bernoulli"


def test_appendix_c_with_proportional_weights():
    # The same data reweighted by 1/S: W = 5, 2.5, 5/3.
    pred = Predictions.from_arrays([0.2, 0.4, 0.6], [0.5, 0.1, 0.9], response="continuous")
    new = reweight(pred, "proportional")
    w = np.array([5.0, 2.5, 5 / 3])
    numerator = 0.36 * (w[0] + w[1]) ** 2 + 0.36 * (w[1] + w[2]) ** 2
    denominator = 4 * w.sum() * (w[0] + w[2] + 2 * w[1])
    assert cumulative_differences(new).sigma == pytest.approx(np.sqrt(numerator / denominator))
