"""LOESS, k-NN means, reflected densities and the Local Calibration Score (mcviz/stats/smoothing/)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from statsmodels.nonparametric.smoothers_lowess import lowess

from mcviz.errors import ValidationError
from mcviz.stats.smoothing import (
    knn_mean,
    local_calibration_score,
    loess_curve,
    neighbour_radius,
    reflected_density,
    sorted_quantile,
)

# ------------------------------------------------------------------------------------------
# LOESS


@pytest.mark.parametrize(("n", "span", "ties"), [(200, 0.5, False), (1000, 0.9, False),
                                                 (333, 0.3, False), (400, 0.6, True)])
def test_degree_one_matches_statsmodels_lowess(n, span, ties):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    if ties:
        x = np.round(x, 1)
    y = np.sin(x) + 0.3 * rng.normal(size=n)
    grid = np.linspace(np.quantile(x, 0.05), np.quantile(x, 0.95), 60)
    expected = lowess(y, x, frac=span, it=0, xvals=grid)
    curve = loess_curve(x, y, span=span, degree=1, at=grid)
    np.testing.assert_allclose(curve.fit, expected, rtol=0, atol=1e-10)


def test_degree_two_hand_solved_interpolates_three_points():
    # x = 0..4, span 1 (q = 5): at v = 2 the radius is 2, so x = 0 and 4 get weight
    # K(1) = 0 and a quadratic through the three remaining points reproduces y(2).
    x = np.arange(5.0)
    y = np.array([3.0, -1.0, 7.0, 2.0, 11.0])
    curve = loess_curve(x, y, span=1.0, degree=2, at=np.array([2.0]))
    assert curve.fit[0] == pytest.approx(7.0, abs=1e-12)


def test_degree_two_hand_solved_symmetric_weights():
    # x = 0..4, span 1, v = 1.5: distances 1.5, 0.5, 0.5, 1.5, 2.5, radius 2.5, so the
    # weights are a = K(0.6) = 0.784^3, b = K(0.2) = 0.992^3, b, a, 0. With z = x - 1.5 the
    # odd moments vanish and the intercept is (S4 T0 - S2 T2) / (S0 S4 - S2^2) with
    # S0 = 2a + 2b, S2 = 2(2.25a + 0.25b), S4 = 2(5.0625a + 0.0625b), T0 = sum w y,
    # T2 = sum w z^2 y. For y = x^3 = (0, 1, 8, 27): T0 = 27a + 9b, T2 = 2.25·27a + 0.25·9b.
    a, b = 0.784**3, 0.992**3
    s0, s2, s4 = 2 * a + 2 * b, 2 * (2.25 * a + 0.25 * b), 2 * (5.0625 * a + 0.0625 * b)
    t0, t2 = 27 * a + 9 * b, 2.25 * 27 * a + 0.25 * 9 * b
    expected = (s4 * t0 - s2 * t2) / (s0 * s4 - s2**2)
    curve = loess_curve(np.arange(5.0), np.arange(5.0) ** 3, span=1.0, at=np.array([1.5]))
    assert curve.fit[0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("exact", [True, False])
def test_straight_line_is_returned_unchanged(exact):
    rng = np.random.default_rng(3)
    x = rng.exponential(size=5000)
    weight = rng.random(5000) + 0.5
    curve = loess_curve(x, 0.3 - 2.0 * x, weight, span=0.4, exact=exact)
    # Exact sums reproduce a line to rounding; the binned expansion to within its bound.
    np.testing.assert_allclose(curve.fit, 0.3 - 2.0 * curve.x, atol=1e-10 if exact else 1e-7)
    assert curve.binned is not exact
    assert curve.sigma == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("distribution", ["uniform", "normal", "exponential", "lognormal",
                                          "spike"])
@pytest.mark.parametrize("span", [0.3, 0.9])
def test_binned_evaluation_matches_exact(distribution, span):
    rng = np.random.default_rng(7)
    n = 6000
    x = {
        "uniform": rng.random(n),
        "normal": rng.normal(size=n),
        "exponential": rng.exponential(size=n),
        "lognormal": rng.lognormal(sigma=1.5, size=n),
        "spike": np.where(rng.random(n) < 0.5, 0.0, rng.normal(size=n)),
    }[distribution]
    y = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(float)
    exact = loess_curve(x, y, span=span, exact=True)
    binned = loess_curve(x, y, span=span, exact=False)
    assert binned.binned
    assert np.abs(exact.fit - binned.fit).max() < 1e-6  # the verified bound
    np.testing.assert_allclose(binned.se, exact.se, rtol=1e-3)
    assert binned.df == pytest.approx(exact.df, rel=1e-2)


def test_binned_fits_hold_where_a_spike_sits_on_the_window_edge():
    # Half the rows tied at 3.0, the rest normal: grid points just below 3 have their q-th
    # nearest row in the spike, so a handful of rows lies strictly inside their windows (seen:
    # 6 rows, a quadratic fit that amplified 1e-7 binning errors to 3e-4 before such windows
    # were fitted directly).
    rng = np.random.default_rng(0)
    n = 60_000
    x = np.where(rng.random(n) < 0.5, 3.0, rng.normal(size=n))
    y = (rng.random(n) < 0.3 + 0.1 * np.tanh(x)).astype(float)
    weight = rng.random(n) + 0.5
    exact = loess_curve(x, y, weight, span=0.3, exact=True)
    binned = loess_curve(x, y, weight, span=0.3, exact=False)
    assert binned.binned
    assert np.abs(exact.fit - binned.fit).max() < 1e-6


@pytest.mark.parametrize("distribution", ["lognormal", "pareto"])
def test_skewed_variables_bin_finely_where_dense(distribution):
    # Equal-width bins sized for the densest window left many grid points to direct fits on a
    # skewed variable (1.5 s at n = 10^6); bins sized window by window keep the bound.
    rng = np.random.default_rng(3)
    n = 40_000
    x = rng.lognormal(10, 1.2, n) if distribution == "lognormal" else rng.pareto(1.2, n)
    y = (rng.random(n) < 0.3).astype(float)
    exact = loess_curve(x, y, span=0.3, exact=True)
    binned = loess_curve(x, y, span=0.3, exact=False)
    assert np.abs(exact.fit - binned.fit).max() < 1e-6


def test_weights_multiply_kernel_weights_like_replication():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 40, 300).astype(float)
    y = rng.random(300)
    weight = rng.integers(1, 4, 300).astype(float)
    grid = np.linspace(5, 35, 31)
    weighted = loess_curve(x, y, weight, span=0.95, at=grid)
    # Integer weights W_i are kernel multipliers; with tied x the q-th nearest distance
    # of the replicated sample differs, so compare against a direct weighted fit instead.
    q = int(np.floor(300 * 0.95 + 1e-5))
    for v, fitted in zip(grid, weighted.fit, strict=True):
        h = np.sort(np.abs(x - v))[q - 1]
        k = np.clip(1 - (np.abs(x - v) / h) ** 3, 0, None) ** 3 * weight
        design = np.vander(x - v, 3, increasing=True)
        beta = np.linalg.solve(design.T @ (k[:, None] * design), design.T @ (k * y))
        assert fitted == pytest.approx(beta[0], abs=1e-10)


def test_band_matches_linear_smoother_weights():
    rng = np.random.default_rng(5)
    x = rng.random(200)
    y = x + rng.normal(scale=0.1, size=200)
    v = 0.5
    curve = loess_curve(x, y, span=0.5, at=np.array([v]))
    q = int(np.floor(200 * 0.5 + 1e-5))
    h = np.sort(np.abs(x - v))[q - 1]
    k = np.clip(1 - (np.abs(x - v) / h) ** 3, 0, None) ** 3
    design = np.vander((x - v) / h, 3, increasing=True)
    smoother = k * (design @ np.linalg.solve(design.T @ (k[:, None] * design), np.eye(3)[0]))
    assert curve.fit[0] == pytest.approx(smoother @ y, abs=1e-12)
    assert curve.se[0] == pytest.approx(curve.sigma * np.sqrt(smoother @ smoother), rel=1e-10)
    assert curve.upper[0] - curve.fit[0] == pytest.approx(1.959963984540054 * curve.se[0])


def test_two_distinct_values_fall_back_to_lower_degrees():
    x = np.array([0.0, 0, 0, 1, 1, 1, 1, 3])
    y = np.array([1.0, 2, 3, 10, 10, 12, 12, 20])
    # Three distinct values: degree 2 is allowed globally. At v = 0.25 (q = 8, radius 2.75)
    # all three values carry weight; at v = 2 (radius 2) x = 0 sits on the radius, so
    # only x = 1 and 3 remain: a line through their means 11 and 20 gives 15.5.
    curve = loess_curve(x, y, span=1.0, at=np.array([2.0]))
    np.testing.assert_allclose(curve.fit, [15.5], atol=1e-12)
    # Two distinct values: degree 1 at most; with span 1 at v = 0.25 the radius is 0.75
    # and every x = 1 row sits on it (weight 0): one value left, degree 0, mean 2.
    two = loess_curve(x[:7], y[:7], span=1.0, at=np.array([0.0, 0.25, 1.0]))
    np.testing.assert_allclose(two.fit, [2.0, 2.0, 11.0], atol=1e-12)


def test_window_with_every_neighbour_on_the_radius_gives_their_mean():
    x = np.array([0.0, 0, 0, 1, 1, 1, 1])
    y = np.array([1.0, 2, 3, 10, 10, 12, 12])
    # At v = 0.5 all seven rows are at distance 0.5 = radius: their plain mean, 50/7.
    curve = loess_curve(x, y, span=1.0, at=np.array([0.5]))
    assert curve.fit[0] == pytest.approx(50 / 7)


def test_tied_window_gives_the_mean_of_the_tied_rows():
    x = np.concatenate((np.zeros(80), np.linspace(1, 2, 20)))
    y = np.concatenate((np.tile([0.0, 1.0, 1.0, 1.0], 20), np.ones(20)))
    curve = loess_curve(x, y, span=0.5, at=np.array([0.0]))
    assert curve.fit[0] == pytest.approx(0.75)


def test_constant_variable_is_refused():
    with pytest.raises(ValidationError, match="'age' is constant"):
        loess_curve(np.ones(10), np.arange(10.0), name="age")


def test_invalid_inputs_are_refused():
    with pytest.raises(ValidationError, match=r"span must lie in \(0, 1\]"):
        loess_curve(np.arange(10.0), np.arange(10.0), span=1.5)
    with pytest.raises(ValidationError, match="1 of 3 values are NaN"):
        loess_curve(np.array([0.0, np.nan, 2.0]), np.zeros(3))


def test_neighbour_radius_and_quantiles_brute_force():
    rng = np.random.default_rng(8)
    x = np.sort(rng.integers(0, 30, 200).astype(float))
    at = np.linspace(-3, 33, 50)
    for q in (1, 7, 100, 200):
        expected = [np.sort(np.abs(x - v))[q - 1] for v in at]
        np.testing.assert_array_equal(neighbour_radius(x, at, q), expected)
    p = np.linspace(0, 1, 11)
    np.testing.assert_allclose(sorted_quantile(x, p), np.quantile(x, p), atol=1e-12)


# ------------------------------------------------------------------------------------------
# k-NN means and reflected densities


def brute_knn(score, label, at, k):
    means, counts = [], []
    for v in at:
        distance = np.abs(score - v)
        boundary = np.sort(distance)[k - 1]
        inside = distance <= boundary
        means.append(label[inside].mean())
        counts.append(inside.sum())
    return np.array(means), np.array(counts)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(0, 20), min_size=5, max_size=60),
    k_fraction=st.floats(0.01, 1.0),
    seed=st.integers(0, 1000),
)
def test_knn_mean_matches_brute_force_with_ties(values, k_fraction, seed):
    score = np.sort(np.array(values, dtype=float) / 20.0)
    label = np.random.default_rng(seed).integers(0, 2, score.size).astype(float)
    k = max(1, int(k_fraction * score.size))
    at = np.arange(100) / 99
    mean, count, events = knn_mean(score, label, at, k)
    expected_mean, expected_count = brute_knn(score, label, at, k)
    np.testing.assert_allclose(mean, expected_mean, atol=1e-12)
    np.testing.assert_array_equal(count, expected_count)
    np.testing.assert_allclose(events, expected_mean * expected_count, atol=1e-9)


@pytest.mark.parametrize(("n", "points"), [(3000, 11), (300, 100)])  # few / many windows
def test_weighted_knn_mean_with_weights_far_apart(n, points):
    # Weights 1e-9, 1 and 1e9 side by side: each window's weighted mean by exact sums (fsum)
    # over the rows within the k-th distance. Window sums as differences of prefix sums lost
    # the light windows (weight 1e9 + 1e-9 - 1e9 = 0).
    rng = np.random.default_rng(11)
    score = np.sort(np.round(rng.random(n), 2))
    label = rng.integers(0, 2, n).astype(float)
    weight = rng.choice(np.array([1e-9, 1.0, 1e9]), n)
    at = np.linspace(0, 1, points)
    for k in (1, 7, n // 3):
        mean, count, _ = knn_mean(score, label, at, k, weight)
        for j, v in enumerate(at):
            distance = np.abs(score - v)
            inside = distance <= np.sort(distance)[k - 1]
            expected = math.fsum(weight[inside] * label[inside]) / math.fsum(weight[inside])
            assert count[j] == inside.sum()
            assert mean[j] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_reflected_density_matches_direct_evaluation():
    rng = np.random.default_rng(9)
    s = np.sort(rng.beta(2, 5, 3000))
    at = np.arange(100) / 99
    values, bandwidth = reflected_density(s, at)
    reflected = np.concatenate((-s, s, 2 - s))
    # bw.nrd0 on the materialised 3n sample
    spread = min(np.std(reflected, ddof=1),
                 (np.quantile(reflected, 0.75) - np.quantile(reflected, 0.25)) / 1.34)
    assert bandwidth == pytest.approx(0.9 * spread * reflected.size ** -0.2, rel=1e-12)
    direct = norm.pdf((at[:, None] - reflected[None, :]) / bandwidth).mean(axis=1) / bandwidth
    np.testing.assert_allclose(values, direct, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(values / values.sum(), direct / direct.sum(), atol=2e-5)


def test_weighted_density_with_equal_weights_is_unweighted():
    s = np.sort(np.random.default_rng(2).random(500))
    at = np.linspace(0, 1, 11)
    np.testing.assert_allclose(reflected_density(s, at, np.full(500, 3.0))[0],
                               reflected_density(s, at)[0], rtol=1e-12)


# ------------------------------------------------------------------------------------------
# Local Calibration Score


def simulate(n, alpha=1.0, gamma=1.0, seed=0):
    """Paper 004's data-generating process with the alpha / gamma distortions."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 4))
    eta = x @ np.array([0.1, 0.05, 0.2, -0.05]) + rng.normal(0, 0.5, n)
    p = 1 / (1 + np.exp(-eta))
    label = (rng.random(n) < p).astype(float)
    score = (1 / (1 + np.exp(-gamma * eta))) ** alpha
    order = np.argsort(score)
    return score[order], label[order]


def test_lcs_is_small_for_a_calibrated_sample():
    rng = np.random.default_rng(10)
    s = np.sort(rng.random(100_000))
    result = local_calibration_score(s, (rng.random(s.size) < s).astype(float))
    # A rectangular window is unbiased on a straight line except within 0.075 of 0 and 1,
    # where it is one-sided: bias about 2 · 0.075^3 / 3 = 2.8e-4; noise adds ~ 1/(6k).
    assert result.lcs < 4e-4
    assert result.k == 15_000
    assert np.all((result.lower <= result.fit) & (result.fit <= result.upper))
    assert result.weights.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("parameter", ["alpha", "gamma"])
def test_lcs_grows_with_the_distortions_of_paper_004(parameter):
    def mean_lcs(value):
        return np.mean([
            local_calibration_score(*simulate(20_000, **{parameter: value}, seed=seed)).lcs
            for seed in range(4)
        ])

    # Seen: alpha 1/3, 1, 3 -> 0.076, 0.0013, 0.125; gamma -> 0.0059, 0.0013, 0.028.
    calibrated, low, high = mean_lcs(1.0), mean_lcs(1 / 3), mean_lcs(3.0)
    assert 3 * calibrated < low
    assert 3 * calibrated < high
    assert calibrated < 3e-3


def test_lcs_band_edges_and_grid():
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    label = np.array([0, 0, 0, 0, 1, 1, 1, 1.0])
    result = local_calibration_score(score, label, span=0.25, grid_points=11)
    np.testing.assert_allclose(result.grid, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    # At l = 0.1 the window is {0.1, 0.2} (k = 2) with no events: [0, 1 - 0.025^(1/2)].
    assert result.fit[0] == 0
    assert result.count[0] == 2
    assert result.lower[0] == 0
    assert result.upper[0] == pytest.approx(1 - 0.025**0.5)
    assert result.upper[-1] == 1
    assert result.lower[-1] == pytest.approx(0.025**0.5)


def test_lcs_probit_band_formula():
    score = np.sort(np.random.default_rng(11).random(1000))
    label = (np.arange(1000) % 3 == 0).astype(float)
    result = local_calibration_score(score, label)
    j = 40
    p, k = result.events[j] / result.count[j], result.count[j]
    eta = norm.ppf(p)
    sd = np.sqrt(p * (1 - p) / k) / norm.pdf(eta)
    assert result.lower[j] == pytest.approx(norm.cdf(eta - 1.959963984540054 * sd))
    assert result.upper[j] == pytest.approx(norm.cdf(eta + 1.959963984540054 * sd))


def test_lcs_jitter_is_seeded():
    s, y = simulate(2000)
    a = local_calibration_score(s, y, jitter=True, rng=5)
    b = local_calibration_score(s, y, jitter=True, rng=5)
    assert a.lcs == b.lcs
    assert a.lcs != local_calibration_score(s, y).lcs


def test_lcs_is_invariant_to_row_order():
    s, y = simulate(3000, alpha=3.0)
    order = np.random.default_rng(1).permutation(s.size)
    assert local_calibration_score(s[order], y[order]).lcs == pytest.approx(
        local_calibration_score(s, y).lcs, abs=1e-15)


def test_lcs_validation():
    with pytest.raises(ValidationError, match="span must lie in"):
        local_calibration_score(np.array([0.1, 0.2]), np.array([0, 1.0]), span=0)
    with pytest.raises(ValidationError, match=r"score: 1 of 2 values are not in \[0, 1\]"):
        local_calibration_score(np.array([0.1, 1.2]), np.array([0, 1.0]))


def test_loess_weight_validation():
    with pytest.raises(ValidationError, match="weights: 1 of 3 are not positive"):
        loess_curve(np.arange(3.0), np.arange(3.0), np.array([1.0, 0.0, 1.0]))


def test_tricube_derivatives_match_finite_differences():
    from mcviz.stats.smoothing import _tricube_both

    t = np.linspace(-1.2, 1.2, 241) + 0.0013  # away from the kinks at 0 and ±1
    step = 1e-6
    for family in (0, 1):
        _, first, second = _tricube_both(t)[family]
        plus, minus = _tricube_both(t + step)[family][0], _tricube_both(t - step)[family][0]
        np.testing.assert_allclose(first, (plus - minus) / (2 * step), atol=1e-6)
        plus1, minus1 = _tricube_both(t + step)[family][1], _tricube_both(t - step)[family][1]
        np.testing.assert_allclose(second, (plus1 - minus1) / (2 * step), atol=1e-5)
    np.testing.assert_allclose(_tricube_both(t)[0][0], np.clip(1 - np.abs(t) ** 3, 0, 1) ** 3)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), span=st.floats(0.3, 1.0))
def test_loess_is_invariant_to_row_order(seed, span):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 15, 120).astype(float)
    y = rng.random(120)
    order = rng.permutation(120)
    grid = np.linspace(1, 13, 7)
    a = loess_curve(x, y, span=span, at=grid)
    b = loess_curve(x[order], y[order], span=span, at=grid)
    np.testing.assert_allclose(a.fit, b.fit, atol=1e-12)
    np.testing.assert_allclose(a.se, b.se, atol=1e-12)


def r_density_transcription(x, bw, start, stop, n_user, weights=None):
    """R's density.default (gaussian kernel) and its C routine BinDist, line by line.

    Transcribed from R's src/library/stats/R/density.R and src/library/stats/src/massdist.c
    with plain loops (an independent oracle for the vectorised code).
    """
    weights = np.full(x.size, 1.0 / x.size) if weights is None else weights
    n = max(n_user, 512)
    if n > 512:
        n = int(2 ** np.ceil(np.log2(n)))
    lo, up = start - 4 * bw, stop + 4 * bw
    y = np.zeros(2 * n)
    xdelta = (up - lo) / (n - 1)
    for xi, wi in zip(x, weights, strict=True):
        xpos = (xi - lo) / xdelta
        ix = int(np.floor(xpos))
        fx = xpos - ix
        if 0 <= ix <= n - 2:
            y[ix] += wi * (1 - fx)
            y[ix + 1] += wi * fx
        elif ix == -1:
            y[0] += wi * fx
        elif ix == n - 1:
            y[ix] += wi * (1 - fx)
    kords = np.linspace(0, 2 * (up - lo), 2 * n)
    kords[n + 1 :] = -kords[n - 1 : 0 : -1]  # kords[(n + 2):(2 * n)] <- -kords[n:2]
    kords = norm.pdf(kords, scale=bw)
    # fft(fft(y) * Conj(fft(kords)), inverse = TRUE) / length(y)
    kords = np.maximum(0, np.fft.ifft(np.fft.fft(y) * np.conj(np.fft.fft(kords))).real[:n])
    xords = np.linspace(lo, up, n)
    out = np.linspace(start, stop, n_user)
    return out, np.interp(out, xords, kords)  # approx(xords, kords, x)


@pytest.mark.parametrize("weighted", [False, True])
def test_lcs_weights_match_the_authors_r_density_call(weighted):
    # The authors' code: density(c(-s, s, 2 - s), from = 0, to = 1, n = 100), read on
    # seq(0, 1, length.out = 100) restricted to [min s, max s], normalised.
    rng = np.random.default_rng(12)
    s = np.sort(rng.beta(0.6, 2.0, 1500))
    y = (rng.random(s.size) < s).astype(float)
    w = rng.random(s.size) + 0.5 if weighted else None
    result = local_calibration_score(s, y, w)
    reflected = np.concatenate((-s, s, 2 - s))
    spread = min(np.std(reflected, ddof=1),
                 (np.quantile(reflected, 0.75) - np.quantile(reflected, 0.25)) / 1.34)
    bw = 0.9 * spread * reflected.size ** -0.2
    r_weights = None if w is None else np.tile(w / (3 * w.sum()), 3)
    grid, density = r_density_transcription(reflected, bw, 0.0, 1.0, 100, r_weights)
    keep = (grid >= s[0]) & (grid <= s[-1])
    np.testing.assert_allclose(result.grid, grid[keep], atol=1e-15)
    np.testing.assert_allclose(result.weights, density[keep] / density[keep].sum(),
                               rtol=1e-10, atol=1e-15)
    expected = np.sum(density[keep] * (result.fit - grid[keep]) ** 2) / density[keep].sum()
    assert result.lcs == pytest.approx(expected, rel=1e-10)


def test_lcs_rejects_missing_labels_and_bad_weights():
    s = np.linspace(0.05, 0.95, 40)
    y = (np.arange(40) % 2).astype(float)
    with pytest.raises(ValidationError, match="label: 1 of 40 values are NaN"):
        local_calibration_score(s, np.where(np.arange(40) == 3, np.nan, y))
    with pytest.raises(ValidationError, match="weights: 1 of 40 are not positive"):
        local_calibration_score(s, y, np.where(np.arange(40) == 3, -1.0, 1.0))


# ------------------------------------------------------------------------------------------
# LCS ends: where the window reaches the end of the score range; the authors' jitter


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(0, 40), min_size=5, max_size=80),
    k_fraction=st.floats(0.01, 1.0),
)
def test_lcs_boundary_marks_windows_holding_an_extreme_score(values, k_fraction):
    # Brute force: the window of l holds every score within the k-th smallest distance;
    # it reaches the end of the range when it holds the smallest or the largest score.
    score = np.sort(np.array(values, dtype=float) / 40.0)
    label = (np.arange(score.size) % 2).astype(float)
    span = max(k_fraction, 1.0 / score.size)
    result = local_calibration_score(score, label, span=span)
    k = result.k
    expected = []
    for v in result.grid:
        distance = np.abs(score - v)
        inside = distance <= np.sort(distance)[k - 1]
        expected.append(bool(inside[score == score[0]].any() or inside[score == score[-1]].any()))
    np.testing.assert_array_equal(result.boundary, expected)
    np.testing.assert_array_equal(
        result.boundary, (result.grid <= result.boundary_below)
        | (result.grid >= result.boundary_above))


def test_lcs_is_flat_where_the_window_reaches_the_end():
    # Distinct scores: below boundary_below every window is the k lowest rows, so the curve
    # is their mean label there, and (s_1 + s_{k+1}) / 2 is the threshold.
    rng = np.random.default_rng(13)
    s = np.sort(rng.random(5000))
    y = (rng.random(s.size) < s).astype(float)
    result = local_calibration_score(s, y)
    k = result.k
    assert result.boundary_below == pytest.approx(0.5 * (s[0] + s[k]))
    assert result.boundary_above == pytest.approx(0.5 * (s[-1] + s[-1 - k]))
    low = result.grid <= result.boundary_below
    assert low.sum() >= 5  # span 0.15: about the lowest 0.075 of the score range
    np.testing.assert_allclose(result.fit[low], y[:k].mean(), atol=1e-12)
    np.testing.assert_allclose(result.fit[result.grid >= result.boundary_above],
                               y[-k:].mean(), atol=1e-12)
    assert not result.boundary[(result.grid > 0.2) & (result.grid < 0.8)].any()


def test_lcs_jitter_is_the_authors_normal_noise():
    # The authors' R code: scores + rnorm(n, 0, 0.001) before the fit, the grid and the density.
    s, y = simulate(3000)
    s = 0.1 + 0.8 * s  # away from 0 and 1, so the jittered scores stay valid inputs
    jittered = s + np.random.default_rng(5).normal(0.0, 0.001, s.size)
    a = local_calibration_score(s, y, jitter=True, rng=5)
    b = local_calibration_score(jittered, y)
    assert a.jitter
    assert not b.jitter
    assert a.lcs == pytest.approx(b.lcs, rel=1e-12)
    np.testing.assert_allclose(a.fit, b.fit, atol=1e-12)


# ------------------------------------------------------------------------------------------
# Spikes (values holding >= 5% of the weight) as their own points


def spiked(n, seed):
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    return np.select([u < 0.3, u < 0.4], [0.0, 2.5], rng.lognormal(0.0, 1.0, n)), rng


@pytest.mark.parametrize("exact", [True, False])
def test_straight_line_is_unchanged_with_spikes(exact):
    # A spike's estimate is the mean of y at one value (a + b s exactly); the other rows are
    # a line, which LOESS reproduces.
    x, rng = spiked(6000, 14)
    weight = rng.random(x.size) + 0.5
    curve = loess_curve(x, 0.3 - 2.0 * x, weight, span=0.4, exact=exact, spike_share=0.05)
    np.testing.assert_allclose(curve.fit, 0.3 - 2.0 * curve.x, atol=1e-10 if exact else 1e-7)
    np.testing.assert_array_equal(curve.x[curve.spike], [0.0, 2.5])


@pytest.mark.parametrize("span", [0.3, 0.9])
def test_binned_evaluation_matches_exact_with_spikes(span):
    x, rng = spiked(20_000, 15)
    y = (rng.random(x.size) < 1 / (1 + np.exp(-x))).astype(float)
    weight = rng.random(x.size) + 0.5
    exact = loess_curve(x, y, weight, span=span, exact=True, spike_share=0.05)
    binned = loess_curve(x, y, weight, span=span, exact=False, spike_share=0.05)
    assert binned.binned
    assert np.abs(exact.fit - binned.fit).max() < 1e-6  # the verified bound
    # the spikes: weighted means of their rows, sum of squared smoother weights W² / (ΣW)²
    for value in (0.0, 2.5):
        rows = x == value
        at = binned.x == value
        expected = np.sum(weight[rows] * y[rows]) / weight[rows].sum()
        assert binned.fit[at][0] == pytest.approx(expected, abs=1e-12)
        kish = weight[rows].sum() ** 2 / np.sum(weight[rows] ** 2)
        assert binned.support[at][0] == pytest.approx(kish, rel=1e-12)


def test_spikes_are_found_by_weight_share():
    from mcviz.stats.smoothing.curves import _find_spikes

    x = np.array([0.0] * 4 + [1.0] * 2 + list(np.linspace(2, 3, 94)))
    xs = np.sort(x)
    np.testing.assert_array_equal(_find_spikes(x, None, xs, 0.05), [])  # 4% and 2%
    weight = np.ones(x.size)
    weight[4:6] = 3.0  # value 1.0 now holds 6 / 104 of the weight; 0.0 holds 4 / 104
    np.testing.assert_array_equal(_find_spikes(x, weight, xs, 0.05), [1.0])


# ------------------------------------------------------------------------------------------
# Row lookups of the binned evaluation


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(1, 3000), offset=st.sampled_from([0.0, 1e9]),
       kind=st.sampled_from(["normal", "lognormal", "integers", "clustered"]))
def test_locate_equals_the_binary_search(seed, size, offset, kind):
    from mcviz.stats.smoothing._common import locate

    rng = np.random.default_rng(seed)
    n = 20_000
    x = {"normal": rng.normal(size=n), "lognormal": rng.lognormal(0, 2, n),
         "integers": rng.integers(-50, 50, n).astype(float),
         "clustered": np.concatenate((rng.normal(0, 1e-6, n // 2), rng.normal(5, 3, n - n // 2)))
         }[kind] + offset
    edges = np.unique(rng.choice(x, size))
    # rows on, just below and just above every edge, and beyond both ends
    rows = np.concatenate((x, edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf),
                           [x.min() - 1, x.max() + 1]))
    top = max(edges.size - 2, 0)
    expected = np.clip(np.searchsorted(edges, rows, side="right") - 1, 0, top)
    np.testing.assert_array_equal(locate(edges, rows, top), expected)
    # ascending rows (score-sorted arrays) take the range path: the same positions
    order = np.argsort(rows, kind="stable")
    np.testing.assert_array_equal(locate(edges, rows[order], top), expected[order])


@pytest.mark.parametrize("values", [
    np.round(np.random.default_rng(1).normal(40, 12, 10_000)),  # integers: counted
    np.random.default_rng(2).integers(-3, 3, 5000).astype(float) * 1e6,  # spread out: sorted
    np.round(np.random.default_rng(3).normal(0, 1, 8000), 1),  # not integers: sorted
    np.append(np.arange(5000.0), 0.5),  # one non-integer past the sampled head
    np.sort(np.random.default_rng(4).random(6000)),  # already ascending (scores): copied
    np.append(np.sort(np.random.default_rng(5).random(6000)), [0.5, np.nan, 0.1]),  # NaN
    np.concatenate((np.linspace(0, 1, 3000), [np.nan], np.linspace(2, 3, 3000))),
])
def test_sorted_copy_is_the_sort(values):
    from mcviz.stats.smoothing._common import sorted_copy

    copied = sorted_copy(values)
    np.testing.assert_array_equal(copied, np.sort(values))
    assert not np.shares_memory(copied, values)
