from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcviz.stats.groupings.local as local_module
from mcviz.errors import ValidationError
from mcviz.stats.groupings import (
    covariate_bins,
    group_errors,
    index_groups,
    input_space,
    kernel_calibration,
    local_calibration,
    local_calibration_map,
    local_error_distribution,
    neighbourhood_tradeoff,
    score_bins,
)
from mcviz.io import Predictions


def _random_pred(n=300, seed=0, weighted=False, d=2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    score = rng.uniform(0.05, 0.95, n)
    label = (rng.random(n) < score).astype(int)
    covariates = {f"x{i}": x[:, i] for i in range(d)}
    covariates["c"] = rng.choice(["a", "b", "c"], n)
    weight = rng.uniform(0.5, 2.0, n) if weighted else None
    return Predictions.from_arrays(score, label, weight, covariates=covariates)


# ---------------------------------------------------------------------------------------------
# Hand-computed group errors


def test_group_errors_hand_computed_weighted():
    # Errors are label - score. Group 0: scores 0.2, 0.4, labels 0, 1, weights 1, 3:
    #   e = (1*(0 - 0.2) + 3*(1 - 0.4)) / 4 = (-0.2 + 1.8)/4 = 0.4
    #   se (null) = sqrt(1*0.16 + 9*0.24)/4 = sqrt(2.32)/4
    # Group 1: scores 0.6, 0.8, labels 0, 0, weights 2, 2: e = -(1.2 + 1.6)/4 = -0.7
    #   se = sqrt(4*0.24 + 4*0.16)/4 = sqrt(1.6)/4
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 0], [1.0, 3.0, 2.0, 2.0])
    result = group_errors(pred, [0, 0, 1, 1], ["low", "high"])
    np.testing.assert_allclose(result.error, [0.4, -0.7])
    np.testing.assert_allclose(result.standard_error, [np.sqrt(2.32) / 4, np.sqrt(1.6) / 4])
    np.testing.assert_allclose(result.mass, [0.5, 0.5])
    np.testing.assert_allclose(result.weight_total, [4.0, 4.0])
    np.testing.assert_allclose(result.effective_size, [16 / 10, 2.0])
    np.testing.assert_allclose(result.mean_label, [0.75, 0.0])
    assert result.labels == ("low", "high")
    assert result.weighted
    assert not result.overlapping
    assert not result.error.flags.writeable
    table = result.table()
    assert list(table["group"]) == ["low", "high"]


def test_empirical_standard_error_for_real_valued_responses():
    # d = R - S = (-0.1, 0.1, -0.3); e = -0.1; sum (d - e)^2 = 0 + 0.04 + 0.04 = 0.08
    # se = sqrt(3/2) * sqrt(0.08) / 3
    pred = Predictions.from_arrays([0.2, 0.4, 0.6], [0.1, 0.5, 0.3], response="continuous")
    result = group_errors(pred, [0, 0, 0])
    assert result.standard_error_method == "empirical"
    np.testing.assert_allclose(result.error, [-0.1])
    np.testing.assert_allclose(result.standard_error, [np.sqrt(1.5) * np.sqrt(0.08) / 3])


def test_score_bins_equal_width_hand_computed():
    # Bins of width 1/4: [0.05, 0.15] -> bin 0, 0.55 -> bin 2, 0.95 -> bin 3; bin 1 empty.
    pred = Predictions.from_arrays([0.05, 0.15, 0.55, 0.95], [0, 1, 1, 1])
    result = score_bins(pred, n_bins=4)
    assert result.labels == ("[0, 0.25]", "(0.5, 0.75]", "(0.75, 1]")
    np.testing.assert_allclose(result.error, [(1 - 0.05 - 0.15) / 2, 0.45, 0.05])
    np.testing.assert_array_equal(result.size, [2, 1, 1])
    assert "1 empty group dropped" in result.notice


def test_score_bins_equal_count_keeps_ties_together():
    # Six scores with a tie run at 0.3 (three rows, cumulative count 4 at its end). Two bins:
    # the run goes to bin ceil(2 * 4/6) - 1 = 1, so bin 0 = {0.1} and bin 1 = the other five.
    pred = Predictions.from_arrays([0.1, 0.3, 0.3, 0.3, 0.7, 0.9], [0, 0, 1, 0, 1, 1])
    result = score_bins(pred, n_bins=2, strategy="count")
    np.testing.assert_array_equal(result.size, [1, 5])
    # errors (label - score): 0 - 0.1 = -0.1; (3 - 2.5)/5 = 0.1
    np.testing.assert_allclose(result.error, [-0.1, 0.1], atol=1e-12)
    assert result.labels == ("[0.1, 0.1]", "[0.3, 0.9]")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.integers(0, 10_000))
def test_score_bins_partition_every_row(n_bins, seed):
    pred = _random_pred(n=80, seed=seed)
    for strategy in ("width", "count"):
        result = score_bins(pred, n_bins=n_bins, strategy=strategy)
        assert result.size.sum() == pred.n
        np.testing.assert_allclose(result.mass.sum(), 1.0)
        # The mass-weighted mean of group errors is the overall error.
        overall = np.mean(pred.label - pred.score)
        np.testing.assert_allclose(np.sum(result.mass * result.error), overall, atol=1e-12)


def test_covariate_bins_levels_missing_and_grid():
    pred = Predictions.from_arrays(
        [0.5] * 6,
        [0, 0, 1, 1, 1, 0],
        covariates={
            "sex": pd.Categorical(["f", "f", "m", "m", None, None]),
            "age": [20.0, 30.0, 40.0, 50.0, np.nan, 60.0],
        },
    )
    result = covariate_bins(pred, "sex")
    assert result.labels == ("sex = f", "sex = m", "sex missing")
    np.testing.assert_allclose(result.error, [-0.5, 0.5, 0.0])
    ages = covariate_bins(pred, "age", n_bins=2)
    # quantile edges of 20..60: 20, 40, 60 -> [20, 40) holds 20, 30; [40, 60] holds 40, 50, 60
    assert ages.labels == ("age ∈ [20, 40)", "age ∈ [40, 60]", "age missing")
    np.testing.assert_array_equal(ages.size, [2, 3, 1])
    np.testing.assert_allclose(ages.error, [-0.5, 2 / 3 - 0.5, 0.5])
    grid = covariate_bins(pred, ["sex", "age"], n_bins=2)
    assert grid.size.sum() == 6
    assert "sex = f and age ∈ [20, 40)" in grid.labels


def test_index_groups_accept_subpopulation_like_objects_and_detect_overlap():
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    everything = SimpleNamespace(index=np.arange(4), description="full population")
    top = SimpleNamespace(index=np.array([2, 3]), description="score ≥ 0.5")
    result = index_groups(pred, [everything, top])
    assert result.labels == ("full population", "score ≥ 0.5")
    np.testing.assert_allclose(result.error, [0.0, -0.2], atol=1e-12)
    assert result.overlapping
    np.testing.assert_allclose(result.mass, [4 / 6, 2 / 6])
    disjoint = index_groups(pred, [np.array([0, 1]), np.array([2, 3])], ["a", "b"])
    assert not disjoint.overlapping


def test_validation_messages():
    pred = _random_pred(n=20)
    with pytest.raises(ValidationError, match="n_bins must be a positive integer"):
        score_bins(pred, n_bins=0)
    with pytest.raises(ValidationError, match="strategy must be"):
        score_bins(pred, strategy="quantile")
    with pytest.raises(ValidationError, match="no covariate 'nope'"):
        covariate_bins(pred, "nope")
    with pytest.raises(ValidationError, match="one or two covariates"):
        covariate_bins(pred, ["x0", "x1", "c"])
    with pytest.raises(ValidationError, match="group 1 is empty"):
        index_groups(pred, [np.array([0]), np.array([], dtype=int)])
    with pytest.raises(ValidationError, match=r"outside 0\.\.19"):
        index_groups(pred, [np.array([25])])
    with pytest.raises(ValidationError, match="exceeds the number of observations"):
        local_calibration(pred, k=21)
    with pytest.raises(ValidationError, match="k must be a positive integer"):
        local_calibration(pred, k=0)
    with pytest.raises(ValidationError, match="bandwidth must be a positive"):
        kernel_calibration(pred, bandwidth=0)
    with pytest.raises(ValidationError, match="scaling must be"):
        input_space(pred, scaling="minmax")
    with pytest.raises(ValidationError, match="one integer group number per observation"):
        group_errors(pred, [0, 1])


# ---------------------------------------------------------------------------------------------
# Input space


def test_input_space_rules():
    pred = Predictions.from_arrays(
        [0.1, 0.2, 0.3, 0.4, 0.5],
        [0, 1, 0, 1, 0],
        covariates={
            "x": [1.0, 2.0, 3.0, 4.0, np.nan],
            "c": pd.Categorical(["a", "b", "a", None, "b"]),
        },
    )
    space = input_space(pred)
    assert space.columns == ("x", "x missing")
    assert space.nominal_columns == ("c",)
    assert space.levels == (("a", "b", "missing"),)
    np.testing.assert_array_equal(space.codes[:, 0], [0, 1, 0, 2, 1])
    # x observed 1..4 (score order = input order here): median 2.5, IQR 1.5 -> scale 1.5/1.349
    scale = 1.5 / 1.349
    np.testing.assert_allclose(space.numeric[:4, 0], (np.array([1, 2, 3, 4]) - 2.5) / scale)
    assert space.numeric[4, 0] == 0
    assert space.numeric[4, 1] == 1
    # Rows 0 (x=1, a) and 1 (x=2, b): (1/scale)^2 + 1 (different levels lie 1 apart);
    # rows 0 and 2 (x=3, a): (2/scale)^2; row 4 (x missing, b) and row 1 (x=2, b):
    # ((2 - 2.5)/scale)^2 + 1 (the missing flag).
    d2 = space.squared_distances([0, 0, 4], [1, 2, 1])
    np.testing.assert_allclose(
        np.diag(d2), [(1 / scale) ** 2 + 1, (2 / scale) ** 2, (0.5 / scale) ** 2 + 1]
    )
    standard = input_space(pred, ["x"], scaling="standard")
    values = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(standard.numeric[:4, 0], (values - 2.5) / values.std())
    assert "median" in space.rule
    assert "one-hot" in space.rule


# ---------------------------------------------------------------------------------------------
# Local calibration against brute force


def _brute_knn(pred, space, k):
    everyone = np.arange(pred.n)
    distance = np.sqrt(space.squared_distances(everyone, everyone))
    d = pred.label - pred.score
    errors = []
    radius = np.sort(distance, axis=1)[:, k - 1]
    for i in range(pred.n):
        inside = distance[i] <= radius[i] * (1 + 1e-9) + 1e-12  # ties at the k-th distance
        w = pred.weight[inside]
        errors.append(np.sum(w * d[inside]) / w.sum())
    return np.array(errors), radius


def test_local_knn_with_many_ties_matches_brute_force():
    rng = np.random.default_rng(5)
    n = 300
    pred = Predictions.from_arrays(
        rng.random(n), rng.integers(0, 2, n), rng.uniform(0.5, 2, n),
        covariates={"a": rng.integers(0, 6, n), "b": rng.integers(0, 4, n),
                    "g": rng.choice(["p", "q"], n)},
    )
    local = local_calibration(pred, k=25)
    expected, radius = _brute_knn(pred, local.space, 25)
    np.testing.assert_allclose(local.groups.error, expected, atol=1e-12)
    np.testing.assert_allclose(local.radius, radius, atol=1e-9)
    assert np.all(local.groups.size >= 25)
    table = neighbourhood_tradeoff(pred, ks=(25,), max_centres=None)
    mass = pred.weight / pred.weight.sum()
    np.testing.assert_allclose(table.mean_absolute_error[0], np.sum(mass * np.abs(expected)))


@pytest.mark.parametrize("weighted", [False, True])
def test_local_knn_matches_brute_force(weighted):
    # Continuous covariates: no distance ties, so the k-NN sets are unique.
    pred = _random_pred(n=150, seed=3, weighted=weighted)
    local = local_calibration(pred, ["x0", "x1"], k=12)
    expected, radius = _brute_knn(pred, local.space, 12)
    np.testing.assert_allclose(local.groups.error, expected, atol=1e-12)
    np.testing.assert_allclose(local.radius, radius, atol=1e-12)
    assert local.membership.sum() == 150 * 12
    np.testing.assert_array_equal(local.groups.centre, np.arange(150))
    np.testing.assert_allclose(local.groups.mass.sum(), 1.0)
    assert local.groups.overlapping


def test_local_knn_sampled_centres_match_full():
    pred = _random_pred(n=200, seed=5)
    full = local_calibration(pred, ["x0", "x1"], k=15)
    sampled = local_calibration(pred, ["x0", "x1"], k=15, max_centres=50, seed=7)
    assert sampled.sampled
    assert sampled.groups.n_groups == 50
    np.testing.assert_allclose(sampled.groups.error, full.groups.error[sampled.groups.centre])
    again = local_calibration(pred, ["x0", "x1"], k=15, max_centres=50, seed=7)
    np.testing.assert_array_equal(again.groups.centre, sampled.groups.centre)


def test_local_knn_with_k_equal_n_is_the_overall_error():
    pred = _random_pred(n=40, seed=1)
    local = local_calibration(pred, k=40)
    np.testing.assert_allclose(local.groups.error, np.mean(pred.label - pred.score))


def test_local_knn_finds_planted_miscalibration():
    # Scores 0.5 everywhere; label 1 where x > 0: local error (label - score) 0.5 for x >> 0,
    # -0.5 for x << 0.
    rng = np.random.default_rng(0)
    x = rng.normal(size=2000)
    pred = Predictions.from_arrays(np.full(2000, 0.5), (x > 0).astype(int), covariates={"x": x})
    local = local_calibration(pred, k=50)
    xs = pred.covariates["x"].to_numpy()
    assert np.all(local.groups.error[xs > 1] == 0.5)
    assert np.all(local.groups.error[xs < -1] == -0.5)
    # se under the null: sqrt(50 * 0.25)/50
    np.testing.assert_allclose(local.groups.standard_error, np.sqrt(12.5) / 50)


@pytest.mark.parametrize("kernel", ["epanechnikov", "gaussian"])
def test_kernel_matches_brute_force(kernel):
    pred = _random_pred(n=120, seed=4, weighted=True)
    bandwidth = 0.7
    local = kernel_calibration(pred, ["x0", "x1"], bandwidth=bandwidth, kernel=kernel,
                               max_centres=None)
    everyone = np.arange(pred.n)
    u = np.sqrt(local.space.squared_distances(everyone, everyone)) / bandwidth
    if kernel == "epanechnikov":
        k = np.where(u < 1, 1 - u**2, 0.0)
    else:
        k = np.where(u <= 4, np.exp(-0.5 * u**2), 0.0)
    v = k * pred.weight[None, :]
    d = pred.label - pred.score
    np.testing.assert_allclose(local.groups.error, (v @ d) / v.sum(axis=1), atol=1e-12)
    np.testing.assert_array_equal(local.groups.size, (v > 0).sum(axis=1))
    np.testing.assert_allclose(
        local.groups.standard_error,
        np.sqrt((v**2) @ (pred.score * (1 - pred.score))) / v.sum(axis=1),
        atol=1e-12,
    )


def test_kernel_counts_duplicate_inputs():
    # Two identical inputs at distance 0 must both be in each other's kernel group.
    pred = Predictions.from_arrays([0.2, 0.4, 0.6], [0, 1, 1], covariates={"x": [0.0, 0.0, 5.0]})
    local = kernel_calibration(pred, bandwidth=0.5, max_centres=None)
    np.testing.assert_array_equal(local.groups.size, [2, 2, 1])
    np.testing.assert_allclose(local.groups.error, [(0.6 - 0.2) / 2, (0.6 - 0.2) / 2, 0.4])


def test_neighbourhood_tradeoff_agrees_with_local_calibration():
    pred = _random_pred(n=300, seed=2)
    table = neighbourhood_tradeoff(pred, ["x0", "x1"], ks=(5, 20, 80), max_centres=None)
    for position, k in enumerate((5, 20, 80)):
        local = local_calibration(pred, ["x0", "x1"], k=k)
        np.testing.assert_allclose(
            table.mean_absolute_error[position], np.mean(np.abs(local.groups.error))
        )
        np.testing.assert_allclose(
            table.mean_standard_error[position], np.mean(local.groups.standard_error)
        )
        np.testing.assert_allclose(table.median_radius[position], np.median(local.radius))
    # Proposition 3: the standard error shrinks and the reach grows with k.
    assert np.all(np.diff(table.mean_standard_error) < 0)
    assert np.all(np.diff(table.median_radius) > 0)
    assert next(iter(table.table().columns)) == "k"


def test_local_map_samples_at_most_max_points_and_says_so():
    pred = _random_pred(n=500, seed=8)
    local = local_calibration(pred, ["x0", "x1"], k=10)
    small = local_calibration_map(local, pred, "x0", "c", max_points=100, seed=3)
    assert small.n_shown == 100
    assert small.n_total == 500
    assert "seeded sample (seed 3) of 100 of 500" in small.note
    assert set(small.y) <= {"a", "b", "c"}
    full = local_calibration_map(local, pred, "x0", "x1")
    assert full.n_shown == 500
    assert "all 500 points" in full.note
    np.testing.assert_allclose(full.error, local.groups.error)


def test_local_error_distribution():
    pred = _random_pred(n=400, seed=9)
    local = local_calibration(pred, ["x0", "x1"], k=30)
    dist = local_error_distribution(local, bins=20)
    np.testing.assert_allclose(dist.mass.sum(), 1.0)
    np.testing.assert_allclose(dist.mean, np.mean(local.groups.error))
    assert dist.quantiles[0.05] <= dist.quantiles[0.5] <= dist.quantiles[0.95]


def test_index_groups_of_generated_subpopulations():
    import mcviz.subpopulations as subpopulations
    pred = _random_pred(n=400, seed=11)
    generated = subpopulations.generate_subpopulations(pred, n_subpopulations=20, min_size=10,
                                                       seed=0)
    result = index_groups(pred, generated.subpopulations, description="Algorithm 1")
    assert result.n_groups == len(generated.subpopulations)
    assert result.overlapping
    d = pred.label - pred.score
    for j, sub in enumerate(generated.subpopulations):
        assert result.labels[j] == sub.description
        np.testing.assert_allclose(result.error[j], d[sub.index].mean())
    # Category levels as groups give the same errors as covariate_bins.
    levels = subpopulations.group_subpopulations(pred, ["c"])
    by_level = index_groups(pred, levels)
    np.testing.assert_allclose(np.sort(by_level.error), np.sort(covariate_bins(pred, "c").error))


def test_chunked_search_gives_the_same_errors(monkeypatch):
    pred = _random_pred(n=150, seed=12, weighted=True)
    whole = local_calibration(pred, ["x0", "x1"], k=10)
    monkeypatch.setattr(local_module, "CHUNK_NEIGHBOURS", 25)  # chunks of 2 centres
    chunked = local_calibration(pred, ["x0", "x1"], k=10)
    np.testing.assert_allclose(chunked.groups.error, whole.groups.error)
    np.testing.assert_allclose(chunked.radius, whole.radius)
    np.testing.assert_array_equal(chunked.membership, whole.membership)


def test_duplicate_inputs_share_one_neighbour_set():
    # Only three distinct inputs: centres with the same input get the same group error.
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 90).astype(float)
    pred = Predictions.from_arrays(rng.random(90), rng.integers(0, 2, 90), covariates={"x": x})
    local = local_calibration(pred, k=20)
    xs = pred.covariates["x"].to_numpy()
    for value in (0.0, 1.0, 2.0):
        assert np.ptp(local.groups.error[xs == value]) == 0
        # Every group is the whole set of observations sharing the input (about 30 >= k).
        same = xs == value
        np.testing.assert_array_equal(local.groups.size[same], same.sum())
        np.testing.assert_allclose(
            local.groups.error[same], np.mean((pred.label - pred.score)[same])
        )
    assert local.membership.sum() == local.groups.size.sum()
    assert np.all(local.radius == 0)


def test_ties_at_the_kth_distance_are_all_included_and_row_order_does_not_matter():
    # x = 0, 1, 1, 2, 2, 2, 3: from x = 0 the 2nd nearest is at distance 1, shared by two rows,
    # so the group of x = 0 holds 3 rows. The result cannot depend on the order of the rows.
    x = np.array([0.0, 1, 1, 2, 2, 2, 3])
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    label = np.array([0, 1, 0, 1, 1, 0, 1])
    pred = Predictions.from_arrays(score, label, covariates={"x": x})
    local = local_calibration(pred, ["x"], scaling="standard", k=2)
    xs = pred.covariates["x"].to_numpy()
    first = np.flatnonzero(xs == 0)[0]
    assert local.groups.size[first] == 3
    np.testing.assert_allclose(local.groups.error[first], (1 - 0.1 - 0.2 - 0.3) / 3)
    permutation = np.random.default_rng(1).permutation(7)
    shuffled = Predictions.from_arrays(
        score[permutation], label[permutation], covariates={"x": x[permutation]}
    )
    other = local_calibration(shuffled, ["x"], scaling="standard", k=2)
    by_row = dict(zip(pred.row, local.groups.error, strict=True))
    for row, error in zip(shuffled.row, other.groups.error, strict=True):
        np.testing.assert_allclose(error, by_row[permutation[row]])


def test_pair_limits(monkeypatch):
    pred = _random_pred(n=200, seed=13)
    monkeypatch.setattr(local_module, "MAX_PAIRS", 1_000)
    with pytest.raises(ValidationError, match="choose a smaller bandwidth"):
        kernel_calibration(pred, ["x0"], bandwidth=5.0, max_centres=None)
    with pytest.raises(ValidationError, match="exceed 1,000 pairs"):
        neighbourhood_tradeoff(pred, ["x0"], ks=(10, 100), max_centres=None)


def test_cell_search_with_nominal_covariates_matches_brute_force():
    # Two nominal covariates (3 x 2 = 6 cells, one tiny so groups must cross cells) and a
    # numeric covariate with missing values.
    rng = np.random.default_rng(21)
    n = 240
    g = rng.choice(["a", "b", "c"], n, p=[0.6, 0.38, 0.02])
    h = rng.choice(["u", "v"], n)
    x = rng.normal(size=n) * 0.3
    x[rng.random(n) < 0.05] = np.nan
    pred = Predictions.from_arrays(
        rng.random(n), rng.integers(0, 2, n), rng.uniform(0.5, 2, n),
        covariates={"x": x, "z": rng.normal(size=n) * 2, "g": g, "h": h},
    )
    local = local_calibration(pred, k=15)
    expected, radius = _brute_knn(pred, local.space, 15)
    np.testing.assert_allclose(local.groups.error, expected, atol=1e-12)
    np.testing.assert_allclose(local.radius, radius, atol=1e-9)
    assert local.membership.sum() == n * 15
    table = neighbourhood_tradeoff(pred, ks=(5, 15), max_centres=None)
    mass = pred.weight / pred.weight.sum()
    np.testing.assert_allclose(table.mean_absolute_error[1], np.sum(mass * np.abs(expected)))


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10_000),
    st.sampled_from([(1, 0), (2, 1), (0, 2), (0, 1), (1, 2), (3, 1)]),
    st.sampled_from([2, 7, 40]),
    st.integers(1, 60),
)
def test_search_matches_brute_force_for_any_mix_of_covariates(seed, mix, levels, k):
    # Any number of numeric (with ties: values rounded) and nominal covariates, levels of very
    # different frequencies (some cells smaller than k, so groups must cross cells), and the
    # pure-nominal space: every group equals the brute-force group.
    numeric, nominal = mix
    rng = np.random.default_rng(seed)
    n = 150
    covariates = {f"x{i}": np.round(rng.normal(size=n), 1) for i in range(numeric)}
    p = 1.0 / np.arange(1, levels + 1) ** 1.5
    for j in range(nominal):
        covariates[f"g{j}"] = pd.Categorical.from_codes(
            rng.choice(levels, size=n, p=p / p.sum()), [f"l{i}" for i in range(levels)]
        )
    pred = Predictions.from_arrays(
        rng.random(n), rng.integers(0, 2, n), rng.uniform(0.5, 2, n), covariates=covariates
    )
    local = local_calibration(pred, k=k)
    expected, radius = _brute_knn(pred, local.space, k)
    np.testing.assert_allclose(local.groups.error, expected, atol=1e-12)
    np.testing.assert_allclose(local.radius, radius, atol=1e-9)
    assert np.all(local.groups.size >= k)
    assert local.membership.sum() == local.groups.size.sum()


def test_kernel_with_nominal_covariates_matches_brute_force():
    # Bandwidth 1.2 > 1: observations with other levels are in reach (distance^2 = numeric^2 + 1).
    rng = np.random.default_rng(3)
    n = 200
    pred = Predictions.from_arrays(
        rng.random(n), rng.integers(0, 2, n), rng.uniform(0.5, 2, n),
        covariates={"x": rng.normal(size=n), "g": rng.choice(list("abcd"), n)},
    )
    for bandwidth in (0.6, 1.2):
        local = kernel_calibration(pred, bandwidth=bandwidth, max_centres=None)
        everyone = np.arange(n)
        u = np.sqrt(local.space.squared_distances(everyone, everyone)) / bandwidth
        v = np.where(u < 1, 1 - u**2, 0.0) * pred.weight[None, :]
        np.testing.assert_allclose(
            local.groups.error, (v @ (pred.label - pred.score)) / v.sum(axis=1), atol=1e-12
        )
        np.testing.assert_array_equal(local.groups.size, (v > 0).sum(axis=1))
        np.testing.assert_array_equal(local.membership, (v > 0).sum(axis=0))


def test_memory_does_not_grow_with_the_number_of_levels():
    # 40,000 rows and a 4,000-level nominal covariate: a one-hot matrix alone would take
    # 40,000 x 4,000 x 8 B = 1.28 GB. The search holds integer codes: its peak traced memory
    # (numpy reports its allocations to tracemalloc) stays far below that.
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 40_000
    pred = Predictions.from_arrays(
        rng.random(n), rng.integers(0, 2, n),
        covariates={"x": rng.normal(size=n), "y": rng.normal(size=n),
                    "g": pd.Categorical.from_codes(rng.integers(0, 4_000, n),
                                                   [f"l{i}" for i in range(4_000)])},
    )
    tracemalloc.start()
    try:
        local = local_calibration(pred, k=50, max_centres=300)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert local.groups.n_groups == 300
    assert peak < 60e6, f"peak traced memory {peak / 1e6:.0f} MB"


def test_refused_before_starting_when_over_budget():
    pred = _random_pred(n=2_000)
    with pytest.raises(ValidationError, match=r"refused before starting: k-NN local calibration"
                       r".*2,000 rows.*max_centres"):
        local_calibration(pred, k=10, budget="100kB")
    with pytest.raises(ValidationError, match="refused before starting"):
        kernel_calibration(pred, budget="100kB")
    with pytest.raises(ValidationError, match="refused before starting"):
        neighbourhood_tradeoff(pred, ks=(5, 10), budget="100kB")


def test_progress_is_reported_and_a_raising_callback_cancels():
    from mcviz.budget import Cancelled

    pred = _random_pred(n=3_000)
    seen = []
    local_calibration(pred, k=10, progress=lambda f, text: seen.append((f, text)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions)
    assert fractions[0] >= 0
    assert fractions[-1] <= 1
    assert any("nearest neighbours" in text for _, text in seen)

    def stop(fraction, text):
        if fraction > 0.2:
            raise Cancelled

    with pytest.raises(Cancelled):
        local_calibration(pred, k=10, progress=stop)
    # Nothing was left behind: the same call gives the same result as before.
    again = local_calibration(pred, k=10)
    np.testing.assert_allclose(again.groups.error, local_calibration(pred, k=10).groups.error)


def test_partitions_refuse_before_starting_when_over_budget():
    pred = _random_pred(n=5_000)
    with pytest.raises(ValidationError, match=r"refused before starting: group errors of 10 "
                       r"groups over 5,000 rows"):
        score_bins(pred, budget="10kB")
    with pytest.raises(ValidationError, match="refused before starting"):
        covariate_bins(pred, "c", budget="10kB")
    with pytest.raises(ValidationError, match="refused before starting"):
        index_groups(pred, [np.arange(5_000)], budget="10kB")
    assert score_bins(pred, budget="1GB").n_groups == 10
