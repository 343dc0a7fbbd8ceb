"""Cumulative differences, Kuiper/KS, sigma, the Brownian-range p-value and path decimation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcviz import BROWNIAN_RANGE_MEAN, Predictions, brownian_range_sf, cumulative_differences
from mcviz.stats.cumulative import decimate_path, sigma_adjacent, sigma_bernoulli
from mcviz.errors import ValidationError


def appendix_f(q: int) -> Predictions:
    """Paper 000 Appendix F: n0 = q(q+1), S_j = (2j+q)/(2(q+1)^2) (eq. 7), q blocks of q+1
    responses with the first j of block j equal to 1 (eqs. 9-10), unit weights (eq. 8)."""
    n0 = q * (q + 1)
    j = np.arange(1, n0 + 1)
    score = (2 * j + q) / (2 * (q + 1) ** 2)
    block = (j - 1) // (q + 1) + 1
    within = (j - 1) % (q + 1) + 1
    label = (within <= block).astype(float)
    return Predictions.from_arrays(score, label)


@pytest.mark.parametrize("q", [11, 101])
def test_appendix_f_full_population_kuiper(q):
    result = cumulative_differences(appendix_f(q))
    expected = (2 * q + 3) / (8 * q * (q + 1))  # eq. (17)
    assert result.kuiper == pytest.approx(expected, rel=1e-12)
    # Every cumulative deviation is >= 0 (paper: responses dominate scores), so G = D.
    assert result.ks == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("q", [11, 101])
def test_appendix_f_sigma_matches_eq_26(q):
    k = 0
    inner = (
        2 * q**6 + 12 * q**5 - 12 * k**2 * q**4 - 12 * k * q**4 + 27 * q**4 + 8 * k**3 * q**3
        - 36 * k**2 * q**3 - 42 * k * q**3 + 29 * q**3 + 24 * k**3 * q**2 - 36 * k**2 * q**2
        - 54 * k * q**2 + 16 * q**2 + 24 * k**3 * q - 12 * k**2 * q - 32 * k * q + 4 * q
        + 8 * k**3 - 8 * k
    )
    expected = np.sqrt(inner) / ((q - 2 * k) * (q + 1) ** 3 * np.sqrt(12))  # eq. (26)
    assert cumulative_differences(appendix_f(q)).sigma == pytest.approx(expected, rel=1e-12)


def test_hand_worked_weighted_example_with_a_tie():
    # W(R - S) = -0.1, 1.4, -0.3, 0.4, 0.3; sum W = 8. Rows 2 and 3 tie at 0.3 and merge.
    # Path: 0, -0.1/8, 1.0/8, 1.4/8, 1.7/8 = 0, -0.0125, 0.125, 0.175, 0.2125.
    pred = Predictions.from_arrays(
        [0.1, 0.3, 0.3, 0.6, 0.9], [0, 1, 0, 1, 1], weight=[1, 2, 1, 1, 3]
    )
    result = cumulative_differences(pred)
    np.testing.assert_allclose(result.path, [0, -0.0125, 0.125, 0.175, 0.2125], atol=1e-15)
    np.testing.assert_allclose(result.x, [0, 1 / 8, 4 / 8, 5 / 8, 1], atol=1e-15)
    np.testing.assert_allclose(result.fraction, [0, 1 / 5, 3 / 5, 4 / 5, 1], atol=1e-15)
    assert result.kuiper == pytest.approx(0.225, abs=1e-15)
    assert result.ks == pytest.approx(0.2125, abs=1e-15)
    # sum S(1-S)W^2 = 0.09 + 0.84 + 0.21 + 0.24 + 0.81 = 2.19
    assert result.sigma == pytest.approx(np.sqrt(2.19) / 8, rel=1e-14)
    assert result.kuiper_z == pytest.approx(0.225 / (np.sqrt(2.19) / 8), rel=1e-14)
    assert result.weighted


def test_constant_offset_gives_d_equal_to_offset():
    score = np.linspace(0.1, 0.8, 50)
    pred = Predictions.from_arrays(score, score + 0.05, response="continuous")
    result = cumulative_differences(pred)
    assert result.kuiper == pytest.approx(0.05, rel=1e-12)
    assert result.sigma_method == "adjacent"


@pytest.mark.parametrize(
    ("r", "expected"),
    [
        (1.0, 0.936635412079549),
        (2.0, 0.181494339394187),
        (3.0, 0.0107991684676384),
        (5.0, 2.29321257503355e-6),
        (7.539374405516984, 1.88892543668819e-13),
    ],
)
def test_brownian_range_reference_values(r, expected):
    assert brownian_range_sf(r) == pytest.approx(expected, rel=1e-12)


def test_brownian_range_series_agree_where_they_meet_and_mean_is_2_sqrt_2_over_pi():
    from scipy.integrate import quad

    below, above = brownian_range_sf(1.5 - 1e-12), brownian_range_sf(1.5)
    assert below == pytest.approx(above, abs=1e-11)
    mean = quad(brownian_range_sf, 0, 30, limit=400)[0]  # E[X] = integral of P(X > r)
    assert mean == pytest.approx(BROWNIAN_RANGE_MEAN, rel=1e-9)
    assert brownian_range_sf(0.0) == 1.0
    assert brownian_range_sf(np.inf) == 0.0
    values = brownian_range_sf(np.array([0.2, 0.8, 2.5]))
    assert np.all(np.diff(values) < 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.booleans(), st.integers(1, 4)), min_size=2,
             max_size=40),
    st.randoms(use_true_random=False),
)
def test_row_order_invariance_with_ties(rows, rnd):
    score = np.array([r[0] / 6 for r in rows])
    label = np.array([float(r[1]) for r in rows])
    weight = np.array([float(r[2]) for r in rows])
    permutation = list(range(len(rows)))
    rnd.shuffle(permutation)
    first = cumulative_differences(Predictions.from_arrays(score, label, weight))
    second = cumulative_differences(
        Predictions.from_arrays(score[permutation], label[permutation], weight[permutation])
    )
    assert first.kuiper == pytest.approx(second.kuiper, abs=1e-12)
    assert first.ks == pytest.approx(second.ks, abs=1e-12)
    assert first.sigma == pytest.approx(second.sigma, abs=1e-12)
    np.testing.assert_allclose(first.path, second.path, atol=1e-12)
    # G <= D <= 2G for a path starting at 0.
    assert first.ks <= first.kuiper + 1e-12 <= 2 * first.ks + 2e-12


def test_invariance_to_scaling_all_weights():
    rng = np.random.default_rng(3)
    score = rng.random(500)
    label = (rng.random(500) < score**1.3).astype(float)
    weight = rng.random(500) + 0.2
    base = cumulative_differences(Predictions.from_arrays(score, label, weight))
    scaled = cumulative_differences(Predictions.from_arrays(score, label, weight * 37.5))
    for name in ("kuiper", "ks", "sigma", "p_value"):
        assert getattr(scaled, name) == pytest.approx(getattr(base, name), rel=1e-12)


def test_zero_sigma_and_zero_deviation_counts_as_zero():
    pred = Predictions.from_arrays([0.0, 0.0, 1.0, 1.0], [0, 0, 1, 1])
    result = cumulative_differences(pred)
    assert result.sigma == 0.0
    assert result.kuiper == 0.0
    assert result.kuiper_z == 0.0
    assert result.p_value == 1.0


def test_sigma_helpers_by_hand():
    assert sigma_bernoulli(np.array([0.5, 0.2]), np.array([1.0, 1.0])) == pytest.approx(
        np.sqrt(0.25 + 0.16) / 2
    )
    # d = 1, -1, 1, -1; unit weights: numerator 3*4*4 = 48, denominator 4*4*6 = 96.
    assert sigma_adjacent(np.array([1.0, -1, 1, -1]), np.ones(4)) == pytest.approx(np.sqrt(0.5))


def test_order_by_variable_and_missing_values():
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    label = np.array([1, 0, 1, 0, 1, 0])
    age = np.array([50.0, 20.0, np.nan, 30.0, 40.0, 20.0])
    pred = Predictions.from_arrays(score, label, covariates={"age": age})
    result = cumulative_differences(pred, order_by="age")
    assert result.n == 5
    assert result.n_missing == 1
    # Sorted by age: (20: rows 1, 5), (30: row 3), (40: row 4), (50: row 0); n_weight = 5.
    # Residuals: row1 -0.2, row5 -0.6 -> -0.8; row3 -0.4; row4 +0.5; row0 +0.9.
    np.testing.assert_allclose(result.path, np.array([0, -0.8, -1.2, -0.7, 0.2]) / 5, atol=1e-15)
    np.testing.assert_allclose(result.position, [20, 20, 30, 40, 50])
    assert result.kuiper == pytest.approx(1.4 / 5)
    with pytest.raises(ValidationError, match="no covariate 'height'"):
        cumulative_differences(pred, order_by="height")


def test_order_by_datetime_leaves_missing_times_off():
    # The same data as above with ages as days after 2020-01-01 and the missing age as NaT:
    # NaT must be left off and counted (not ordered first as the smallest int64).
    import pandas as pd

    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    label = np.array([1, 0, 1, 0, 1, 0])
    days = pd.to_timedelta([50, 20, 0, 30, 40, 20], unit="D")
    when = pd.Series(pd.Timestamp("2020-01-01") + days)
    when[2] = pd.NaT
    pred = Predictions.from_arrays(score, label, covariates={"when": when})
    result = cumulative_differences(pred, order_by="when")
    assert (result.n, result.n_missing) == (5, 1)
    np.testing.assert_allclose(result.path, np.array([0, -0.8, -1.2, -0.7, 0.2]) / 5, atol=1e-15)
    assert result.kuiper == pytest.approx(1.4 / 5)


def test_order_by_nominal_is_refused():
    pred = Predictions.from_arrays([0.1, 0.5, 0.7], [0, 1, 1], covariates={"city": ["a", "b", "a"]})
    with pytest.raises(ValidationError, match="'city' is nominal"):
        cumulative_differences(pred, order_by="city")


def test_decimation_keeps_extremes_and_size():
    rng = np.random.default_rng(0)
    path = np.concatenate(([0.0], np.cumsum(rng.standard_normal(1_000_000))))
    index = decimate_path(path)
    assert index.size <= 4002
    assert index[0] == 0
    assert index[-1] == path.size - 1
    assert np.all(np.diff(index) > 0)
    drawn = path[index]
    assert drawn.max() - drawn.min() == path.max() - path.min()
    assert np.abs(drawn).max() == np.abs(path).max()
    assert np.array_equal(decimate_path(path[:100]), np.arange(100))


def test_result_arrays_are_read_only():
    result = cumulative_differences(Predictions.from_arrays([0.2, 0.4], [0, 1]))
    with pytest.raises(ValueError, match="read-only"):
        result.path[0] = 1.0
