"""Subpopulation versus full population (paper 003 eqs. (5)-(13), (21)-(23), (25)-(33))."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcviz.stats.deviation import subpopulation_deviation
from mcviz.errors import ValidationError
from mcviz.io import Predictions


def small():
    return Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 1, 0])


def test_unweighted_hand_computed():
    # Subpopulation {0.2, 0.4}: B_1 = 0.3 (eq. (7)); bins {0.1, 0.2, 0.3} (mean 2/3) and {0.4}
    # (mean 0). F = (0, 1/2, 1/2) (eq. (5)), F~ = (0, 1/3, 1/3) (eq. (8)).
    result = subpopulation_deviation(small(), np.array([1, 3]))
    np.testing.assert_allclose(result.subpopulation_cumulative, [0, 0.5, 0.5])
    np.testing.assert_allclose(result.full_cumulative, [0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(result.path, [0, 1 / 6, 1 / 6])
    np.testing.assert_allclose(result.bin_edges, [-np.inf, 0.3, np.inf])
    np.testing.assert_allclose(result.full_mean, [2 / 3, 0])
    assert result.full_count.tolist() == [3, 1]
    assert result.kuiper == pytest.approx(1 / 6)  # eq. (13)
    assert result.ks == pytest.approx(1 / 6)  # eq. (12)
    # eq. (21): sigma = (1/2) sqrt(2/3 * 1/3 + 0) = sqrt(2)/6
    assert result.sigma == pytest.approx(np.sqrt(2) / 6)
    assert result.kuiper_z == pytest.approx((1 / 6) / (np.sqrt(2) / 6))
    np.testing.assert_allclose(result.x, [0, 0.5, 1])
    np.testing.assert_allclose(result.fraction, [0, 0.5, 1])
    np.testing.assert_allclose(result.position, [0.2, 0.2, 0.4])
    assert result.n == 2
    assert result.n_full == 4
    assert result.sigma_method == "bernoulli"
    assert not result.weighted


def test_weighted_hand_computed():
    # Weights 1, 2, 3, 4. Bin 1: R~ = (0 + 2 + 3)/6 = 5/6 (eq. (26)); bin 2: R~ = 0.
    # Subpopulation weights 2 and 4 (total 6): F = (0, 1/3, 1/3) (eq. (25)),
    # F~ = (0, 2*(5/6)/6, same) = (0, 5/18, 5/18) (eq. (27)), A = (0, 1/3, 1) (eq. (28)).
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 1, 0], weight=[1, 2, 3, 4])
    result = subpopulation_deviation(pred, np.array([1, 3]))
    np.testing.assert_allclose(result.subpopulation_cumulative, [0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(result.full_cumulative, [0, 5 / 18, 5 / 18])
    np.testing.assert_allclose(result.path, [0, 1 / 18, 1 / 18])
    np.testing.assert_allclose(result.x, [0, 1 / 3, 1])
    np.testing.assert_allclose(result.fraction, [0, 0.5, 1])
    # eq. (31): sqrt(2^2 * 5/6 * 1/6 + 4^2 * 0) / 6 = sqrt(5)/18
    assert result.sigma == pytest.approx(np.sqrt(5) / 18)
    assert result.kuiper == pytest.approx(1 / 18)
    assert result.weighted
    assert result.weight_total == pytest.approx(6)


def test_continuous_response_uses_bin_variance():
    # Bin 1 responses {0, 0.5, 1}: mean 0.5, variance 1/6 (eq. (23)); bin 2 {0.2}: variance 0.
    # eq. (22): sigma = (1/2) sqrt(1/6 + 0) = 0.204. The pooled floor (one block of 4 rows):
    # residuals -0.1, 0.3, 0.7, -0.2, mean 0.175, squares about it sum to 0.5075, so
    # v = 0.5075 / (4 - 1) per row and sigma_pool = sqrt(2 v) / 2 = 0.2908 > 0.204.
    pred = Predictions.from_arrays(
        [0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 1.0, 0.2], response="continuous"
    )
    result = subpopulation_deviation(pred, np.array([1, 3]))
    assert result.sigma_method == "variance"
    np.testing.assert_allclose(result.full_variance, [1 / 6, 0])
    assert result.sigma == pytest.approx(max(0.5 * np.sqrt(1 / 6), np.sqrt(2 * 0.5075 / 3) / 2))
    # F = (0, .5/2, (.5+.2)/2), F~ = (0, .5/2, (.5+.2)/2): no deviation.
    np.testing.assert_allclose(result.path, [0, 0, 0], atol=1e-15)


def test_weighted_variance_eq_33():
    # Weights 1, 1, 2 in bin 1 with responses 0, 0.5, 1: mean (0 + .5 + 2)/4 = 0.625,
    # V = (1*.625^2 + 1*.125^2 + 2*.375^2)/4 = 0.171875 (eq. (33)); sigma eq. (32) with the
    # subpopulation weights 1 (bin 1) and 3 (bin 2, V = 0): sqrt(1 * 0.171875)/4.
    pred = Predictions.from_arrays(
        [0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 1.0, 0.2], weight=[1, 1, 2, 3], response="continuous"
    )
    result = subpopulation_deviation(pred, np.array([1, 3]))
    np.testing.assert_allclose(result.full_mean, [0.625, 0.2])
    np.testing.assert_allclose(result.full_variance, [0.171875, 0], atol=1e-15)
    # The pooled floor (one block): residuals -0.1, 0.3, 0.7, -0.2 with weights 1, 1, 2, 3 have
    # weighted mean 1/7 and sum W (d - 1/7)^2 = 1.057143 over 7 - 15/7 = 34/7, so v = 0.217647
    # per row and sigma_pool = sqrt((1 + 9) v) / 4 = 0.36882 > sqrt(0.171875)/4 = 0.1036.
    residual = np.array([-0.1, 0.3, 0.7, -0.2])
    weight = np.array([1.0, 1.0, 2.0, 3.0])
    mean = weight @ residual / 7
    v = weight @ (residual - mean) ** 2 / (7 - 15 / 7)
    assert result.sigma == pytest.approx(max(np.sqrt(0.171875) / 4, np.sqrt(10 * v) / 4))
    assert result.sigma == pytest.approx(0.36882, abs=1e-5)


def test_ties_merged_into_one_bin():
    # Subpopulation scores 0.2, 0.2, 0.4: the tied pair shares the bin (-inf, 0.3] whose full
    # population mean is (0 + 1 + 0 + 1)/4 = 1/2; the path is evaluated after the tied run only.
    pred = Predictions.from_arrays([0.1, 0.2, 0.2, 0.3, 0.4], [0, 1, 0, 1, 1])
    result = subpopulation_deviation(pred, np.array([1, 2, 4]))
    np.testing.assert_allclose(result.bin_edges, [-np.inf, 0.3, np.inf])
    np.testing.assert_allclose(result.full_mean, [0.5, 1.0])
    np.testing.assert_allclose(result.subpopulation_cumulative, [0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(result.full_cumulative, [0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(result.fraction, [0, 2 / 3, 1])
    assert result.kuiper == pytest.approx(0, abs=1e-15)
    assert result.kuiper_z == 0


def test_weighted_ties_hand_computed():
    # Scores 0.2, 0.2, 0.2, 0.6 with responses 0, 1, 1, 0 and weights 1, 2, 3, 4; the
    # subpopulation is the first 0.2 (weight 1, response 0) and the 0.6 (weight 4).
    # B_1 = 0.4; bin 1 = the three 0.2 rows: R~ = (0 + 2 + 3)/6 = 5/6 (eq. (26)); bin 2: R~ = 0.
    # F = (0, 0, 0) (eq. (25)); F~ = (0, (1 * 5/6)/5, same) = (0, 1/6, 1/6) (eq. (27)).
    # eq. (31): sigma = sqrt(1^2 * 5/6 * 1/6 + 4^2 * 0)/5 = sqrt(5)/30.
    pred = Predictions.from_arrays([0.2, 0.2, 0.2, 0.6], [0, 1, 1, 0], weight=[1, 2, 3, 4])
    result = subpopulation_deviation(pred, np.array([0, 3]))
    np.testing.assert_allclose(result.bin_edges, [-np.inf, 0.4, np.inf])
    np.testing.assert_allclose(result.full_mean, [5 / 6, 0])
    np.testing.assert_allclose(result.path, [0, -1 / 6, -1 / 6])
    np.testing.assert_allclose(result.x, [0, 1 / 5, 1])  # A_k, eq. (28)
    assert result.kuiper == pytest.approx(1 / 6)
    assert result.sigma == pytest.approx(np.sqrt(5) / 30)


def test_subpopulation_of_one_row():
    # One member: a single bin (-inf, inf) holding everyone, R~ = 2/4; F_1 = R = 1,
    # F~_1 = 1/2, so D = G = 1/2; eq. (21): sigma = sqrt(1/2 * 1/2)/1 = 1/2.
    result = subpopulation_deviation(small(), np.array([2]))
    np.testing.assert_allclose(result.bin_edges, [-np.inf, np.inf])
    assert result.full_count.tolist() == [4]
    np.testing.assert_allclose(result.path, [0, 0.5])
    assert result.kuiper == pytest.approx(0.5)
    assert result.ks == pytest.approx(0.5)
    assert result.sigma == pytest.approx(0.5)
    assert result.kuiper_z == pytest.approx(1.0)


def test_score_on_an_edge_falls_in_the_lower_bin():
    # Subpopulation {0.2, 0.4}: B_1 = 0.3 exactly, and the full population's 0.3 lies in the
    # right-closed bin (-inf, 0.3] (eq. (6): B_{k-1} < S <= B_k).
    pred = Predictions.from_arrays([0.2, 0.3, 0.4], [0, 1, 1])
    result = subpopulation_deviation(pred, np.array([0, 2]))
    assert result.full_count.tolist() == [2, 1]
    np.testing.assert_allclose(result.full_mean, [0.5, 1.0])


def test_adjacent_floating_point_scores_keep_their_own_bins():
    # The midpoint of two adjacent doubles rounds to one of them; each distinct subpopulation
    # score must still lie in its own bin.
    a = 0.3
    b = np.nextafter(a, 1.0)
    pred = Predictions.from_arrays([0.1, a, b, 0.9], [0, 1, 0, 1])
    result = subpopulation_deviation(pred, np.array([1, 2]))
    assert result.full_count.tolist() == [2, 2]
    np.testing.assert_allclose(result.full_mean, [0.5, 0.5])


def test_bernoulli_sigma_refuses_responses_outside_unit_interval():
    pred = Predictions.from_arrays([0.1, 0.2, 0.3], [2.0, 3.0, 2.5], response="continuous")
    with pytest.raises(ValidationError, match=r"3 of 3 rows .* lie outside \[0, 1\]"):
        subpopulation_deviation(pred, np.array([1]), sigma_method="bernoulli")
    # Real-valued responses inside [0, 1] may still use eq. (21) if asked.
    inside = Predictions.from_arrays([0.1, 0.2, 0.3], [0.2, 0.4, 0.9], response="continuous")
    result = subpopulation_deviation(inside, np.array([1]), sigma_method="bernoulli")
    mean = 1.5 / 3
    assert result.sigma == pytest.approx(np.sqrt(mean * (1 - mean)))


def test_full_population_as_its_own_subpopulation_has_no_deviation():
    rng = np.random.default_rng(3)
    score = rng.random(500)
    pred = Predictions.from_arrays(score, rng.random(500) < score)
    result = subpopulation_deviation(pred, np.arange(500))
    assert result.kuiper == pytest.approx(0, abs=1e-12)


def test_boolean_mask_equals_index():
    pred = small()
    a = subpopulation_deviation(pred, np.array([False, True, False, True]))
    b = subpopulation_deviation(pred, np.array([1, 3]))
    np.testing.assert_array_equal(a.path, b.path)


def test_result_arrays_are_read_only():
    result = subpopulation_deviation(small(), np.array([1, 3]))
    with pytest.raises(ValueError, match="read-only"):
        result.path[0] = 1.0


@pytest.mark.parametrize(
    ("index", "message"),
    [
        (np.array([], dtype=int), "empty"),
        (np.array([1, 9]), "outside"),
        (np.array([1, 1, 2]), "repeated"),
        (np.array([True, False]), "shape"),
        (np.array([0.5, 1.5]), "integer"),
    ],
)
def test_bad_index(index, message):
    with pytest.raises(ValidationError, match=message):
        subpopulation_deviation(small(), index)


def test_bad_sigma_method():
    with pytest.raises(ValidationError, match="sigma_method"):
        subpopulation_deviation(small(), np.array([1]), sigma_method="nope")


def test_unsorted_index_is_accepted():
    pred = small()
    a = subpopulation_deviation(pred, np.array([3, 1]))
    b = subpopulation_deviation(pred, np.array([1, 3]))
    np.testing.assert_array_equal(a.path, b.path)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), weighted=st.booleans())
def test_row_order_invariance(seed, weighted):
    # Scores on a coarse grid (many ties); the subpopulation is defined by a row attribute, so
    # shuffling the file permutes the order of tied rows without changing any result.
    rng = np.random.default_rng(seed)
    n = 60
    frame = pd.DataFrame(
        {
            "score": rng.integers(0, 6, n) / 5,
            "label": rng.integers(0, 2, n),
            "weight": rng.random(n) + 0.5,
            "group": rng.random(n) < 0.4,
        }
    )
    frame.loc[0, "group"] = True
    results = []
    for order in (np.arange(n), rng.permutation(n)):
        shuffled = frame.iloc[order].reset_index(drop=True)
        pred = Predictions.from_arrays(
            shuffled["score"], shuffled["label"],
            weight=shuffled["weight"] if weighted else None,
            covariates={"group": shuffled["group"].astype(float)},
        )
        mask = pred.covariates["group"].to_numpy() == 1.0
        results.append(subpopulation_deviation(pred, mask))
    a, b = results
    np.testing.assert_allclose(a.path, b.path, atol=1e-12)
    assert a.kuiper == pytest.approx(b.kuiper, abs=1e-12)
    assert a.sigma == pytest.approx(b.sigma)
    assert a.ks <= a.kuiper + 1e-15 <= 2 * a.ks + 1e-12


def test_null_range_over_seeds():
    # A random subpopulation with responses from the same model: D/sigma behaves like the range
    # of Brownian motion (mean 2 sqrt(2/pi) ~ 1.6; the approximation of eq. (20) adds a little).
    values = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        m = 10_000
        score = rng.random(m)
        pred = Predictions.from_arrays(score, (rng.random(m) < score).astype(int))
        index = np.sort(rng.choice(m, 500, replace=False))
        values.append(subpopulation_deviation(pred, index).kuiper_z)
    assert 1.2 < np.mean(values) < 2.2
    # And a subpopulation that really deviates is detected.
    rng = np.random.default_rng(99)
    score = rng.random(10_000)
    label = (rng.random(10_000) < score).astype(int)
    pred = Predictions.from_arrays(score, label)
    index = np.flatnonzero(pred.label == 1)[::10]  # responses all 1: far above the full mean
    shifted = subpopulation_deviation(pred, index)
    assert shifted.p_value < 1e-6


def test_plot_index_keeps_extremes():
    rng = np.random.default_rng(5)
    m = 60_000
    score = rng.random(m)
    pred = Predictions.from_arrays(score, (rng.random(m) < score).astype(int))
    result = subpopulation_deviation(pred, np.sort(rng.choice(m, 20_000, replace=False)))
    drawn = result.path[result.plot_index]
    assert result.plot_index.size <= 10_000
    assert drawn.max() - drawn.min() == result.kuiper
