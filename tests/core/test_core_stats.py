"""Closed-form and hand-computed tests of mcviz.core: ratio, sigma family, path, eq. (4)."""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.core import (
    SIGMA_METHODS,
    brownian_range_sf,
    cumulative_path,
    multicalibration_metric,
    normalized_kuiper,
    path_kuiper_ks,
    resolve_sigma_method,
    safe_ratio,
    sigma_adjacent,
    sigma_bernoulli,
    value_order,
)
from mcviz.errors import ValidationError


def test_safe_ratio_rule():
    assert safe_ratio(0.0, 0.0) == 0.0
    assert safe_ratio(2.0, 0.0) == np.inf
    assert safe_ratio(1.0, 4.0) == 0.25
    assert safe_ratio(-2.0, 0.0) == -np.inf  # a signed statistic (Spiegelhalter's z)
    np.testing.assert_array_equal(safe_ratio(np.array([0.0, 1.0, 3.0]), np.array([0.0, 0.0, 2.0])),
                                  [0.0, np.inf, 1.5])


def test_brownian_range_vectorised_equals_scalars():
    r = np.array([[0.0, 0.3, 1.0], [1.4999, 1.5, 4.0]])
    values = brownian_range_sf(r)
    assert values.shape == (2, 3)
    for index in np.ndindex(r.shape):
        assert values[index] == brownian_range_sf(float(r[index]))
    assert np.isnan(brownian_range_sf(np.nan))


def test_sigma_methods_one_set_everywhere():
    assert SIGMA_METHODS == ("auto", "bernoulli", "adjacent", "variance")
    assert resolve_sigma_method("auto", "binary") == "bernoulli"
    assert resolve_sigma_method("auto", "continuous") == "adjacent"
    assert resolve_sigma_method("auto", "continuous", statistic="deviation") == "variance"
    with pytest.raises(ValidationError, match="one of auto, bernoulli, adjacent, variance"):
        resolve_sigma_method("loess", "binary")
    with pytest.raises(ValidationError, match="applies to the deviation"):
        resolve_sigma_method("variance", "binary")
    with pytest.raises(ValidationError, match="applies to calibration"):
        resolve_sigma_method("adjacent", "binary", statistic="deviation")


def test_sigma_by_hand():
    # eq. (5): sqrt(0.25 + 0.16) / 2
    assert sigma_bernoulli(np.array([0.5, 0.2]), np.ones(2)) == pytest.approx(np.sqrt(0.41) / 2)
    # eq. (6), residuals +1, -1, +1, -1: (n-1)*4*4 / (4 n (2n-2)) = 2/n = 0.5
    assert sigma_adjacent(np.array([1.0, -1, 1, -1]), np.ones(4)) == pytest.approx(np.sqrt(0.5))


def test_sigma_adjacent_tie_runs_by_hand():
    # runs {0.1}, {0.5, -0.2} (tied), {0.3}; unit weights: V = 1, 2, 1; e = 0.1, 0.15, 0.3.
    # numerator (0.05)^2 * 3^2 + (0.15)^2 * 3^2 = 0.0225 + 0.2025 = 0.225
    # denominator 4 * 4 * (1 + 1 + 2 * 2) = 96
    ends = np.array([True, False, True, True])
    got = sigma_adjacent(np.array([0.1, 0.5, -0.2, 0.3]), np.ones(4), ends)
    assert got == pytest.approx(np.sqrt(0.225 / 96), rel=1e-12)
    assert sigma_adjacent(np.array([0.1, -0.2, 0.5, 0.3]), np.ones(4), ends) == pytest.approx(
        got, abs=1e-15)


def test_path_and_kuiper_ks_by_hand():
    path, ends = cumulative_path(np.array([0.5, -1.0, 0.25]), 2.0, np.array([True, False, True]))
    np.testing.assert_allclose(path, [0.0, 0.25, -0.125])
    assert ends.tolist() == [0, 2]
    assert path_kuiper_ks(path) == (0.375, 0.25)


def test_eq_4_and_sigma0_zero_rule():
    # D = (0.1, 0.3, 0.2), sigma = (0.05, 0.1, 0.0): 0.1, 0.3 * 0.05 / 0.1 = 0.15, 0.2*0.05/0 = inf
    value = multicalibration_metric(np.array([0.1, 0.3, 0.2]), np.array([0.05, 0.1, 0.0]))
    assert value.metric == np.inf
    assert value.argmax == 2
    # sigma_0 = 0: the k = 0 argument is simply D_0, every other is 0 (0/0 = 0 included)
    np.testing.assert_array_equal(
        normalized_kuiper(np.array([0.1, 0.3, 0.2]), np.array([0.0, 0.1, 0.0])), [0.1, 0.0, 0.0])
    two = multicalibration_metric(np.array([[0.1, 0.2], [0.3, 0.1]]), np.array([0.05, 0.1]))
    np.testing.assert_allclose(two.metric, [0.15, 0.2])
    assert two.argmax.tolist() == [1, 0]


@pytest.mark.parametrize("make", [
    lambda rng, n: rng.integers(18, 90, n).astype(float),  # ages as floats: radix sort
    lambda rng, n: rng.integers(-100, 100, n).astype(np.int8),  # int8 around zero: no overflow
    lambda rng, n: rng.integers(0, 70_000, n).astype(float),  # a span too wide for 16 bits
    lambda rng, n: rng.integers(0, 50, n) + 0.5,  # integral head test fails: plain sort
    lambda rng, n: np.r_[np.arange(300.0), rng.normal(size=n)],  # integral head, real tail
    lambda rng, n: rng.integers(0, 3, n).astype(np.uint64) + np.uint64(2**63),  # huge uint64
    lambda rng, n: np.array([-0.0, 0.0, 2.0, 1.0] * (n // 4)),
])
@pytest.mark.parametrize("n", [100, 10_000])
def test_value_order_sorts_every_kind_of_variable(make, n):
    values = make(np.random.default_rng(n), n)
    order = value_order(values)
    assert np.array_equal(np.sort(order), np.arange(values.size))  # a permutation
    assert np.array_equal(values[order], np.sort(values))  # ascending


def test_bridge_range_sf_against_kuiper_series_and_simulation():
    from mcviz.core.brownian import bridge_range_sf

    # Kuiper's series 2 sum (4k^2 r^2 - 1) exp(-2 k^2 r^2), summed far, over (0.3, 3)
    k = np.arange(1, 400)[:, None]
    r = np.linspace(0.3, 3.0, 28)
    series = np.minimum(2 * np.sum((4 * k**2 * r**2 - 1) * np.exp(-2 * k**2 * r**2), axis=0), 1)
    np.testing.assert_allclose(bridge_range_sf(r), series, atol=1e-12)
    assert bridge_range_sf(0.0) == 1.0 and bridge_range_sf(np.inf) == 0.0
    assert np.isnan(bridge_range_sf(np.nan))
    # the range of simulated Brownian bridges (10,000 paths of 1,000 Gaussian steps): a
    # discrete walk overshoots each end by 0.5826 / sqrt(steps) less (Siegmund's correction),
    # so its range exceeds r as often as the bridge's exceeds r + 2 * 0.5826 / sqrt(steps)
    rng = np.random.default_rng(0)
    steps = 1_000
    walk = np.cumsum(rng.normal(size=(10_000, steps)), axis=1) / np.sqrt(steps)
    bridge = walk - np.arange(1, steps + 1) / steps * walk[:, -1:]
    ranges = np.maximum(bridge.max(axis=1), 0) - np.minimum(bridge.min(axis=1), 0)
    for value in (1.0, 1.5, 2.0):
        shifted = value + 2 * 0.5826 / np.sqrt(steps)
        assert np.mean(ranges > value) == pytest.approx(bridge_range_sf(shifted), abs=0.012)
