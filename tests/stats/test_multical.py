import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcviz.stats.cumulative import brownian_range_sf, cumulative_differences
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.multical import (
    TABLE_COLUMNS,
    multicalibration,
    multicalibration_repeats,
)
from mcviz.subpopulations import (
    Subpopulation,
    generate_subpopulations,
    group_subpopulations,
    select_rows,
)


def appendix_f(q: int) -> tuple[Predictions, list[str]]:
    """Paper 000 Appendix F: n0 = q(q+1) scores (7), unit weights (8), responses (9)-(10), and
    the nested middlemost blocks (18)-(19) as boolean group columns block1..block_l."""
    n = q * (q + 1)
    j = np.arange(1, n + 1)
    score = (2 * j + q) / (2 * (q + 1) ** 2)
    label = np.concatenate([[1] * b + [0] * (q + 1 - b) for b in range(1, q + 1)])
    ell = (q - 1) // 2
    blocks = {f"block{k}": (j > k * (q + 1)) & (j <= n - k * (q + 1)) for k in range(1, ell + 1)}
    return Predictions.from_arrays(score, label, covariates=blocks), list(blocks)


@pytest.mark.parametrize("q", [11, 101])
def test_appendix_f_closed_forms(q):
    pred, groups = appendix_f(q)
    result = multicalibration(pred, group_subpopulations(pred, groups))
    ell = (q - 1) // 2
    k = np.arange(ell + 1)
    assert result.size.tolist() == ((q - 2 * k) * (q + 1)).tolist()  # eq. (19)
    expected_d = (2 * q + 3) / (8 * (q - 2 * k) * (q + 1))  # eq. (23)
    expected_d[0] = (2 * q + 3) / (8 * q * (q + 1))  # eq. (17)
    np.testing.assert_allclose(result.kuiper, expected_d, rtol=1e-12, atol=0)
    sigma = np.sqrt(  # eq. (26)
        2 * q**6 + 12 * q**5 - 12 * k**2 * q**4 - 12 * k * q**4 + 27 * q**4 + 8 * k**3 * q**3
        - 36 * k**2 * q**3 - 42 * k * q**3 + 29 * q**3 + 24 * k**3 * q**2 - 36 * k**2 * q**2
        - 54 * k * q**2 + 16 * q**2 + 24 * k**3 * q - 12 * k**2 * q - 32 * k * q + 4 * q
        + 8 * k**3 - 8 * k
    ) / ((q - 2 * k) * (q + 1) ** 3 * np.sqrt(12))
    np.testing.assert_allclose(result.sigma, sigma, rtol=1e-12, atol=0)
    metric = (2 * q + 3) / (8 * (q + 1)) * np.sqrt(  # eq. (29)
        (2 * q**5 + 12 * q**4 + 27 * q**3 + 29 * q**2 + 16 * q + 4)
        / (3 * q**6 + 15 * q**5 + 29 * q**4 + 27 * q**3 + 13 * q**2 + 3 * q))
    assert result.metric == pytest.approx(metric, rel=1e-12)
    assert result.argmax.description == f"block{ell} == True"  # maximum at k = l (eq. (28))
    assert result.ablate == pytest.approx((2 * q + 3) / (8 * (q + 1)), rel=1e-12)  # eq. (30)
    # Appendix G: "expectation" = 2 sqrt(2/pi) sigma_k' for k' = argmax D_k (= l by eq. (30))
    assert result.expectation == pytest.approx(2 * np.sqrt(2 / np.pi) * sigma[ell], rel=1e-12)
    assert result.ablate_argmax is result.argmax
    assert result.metric_z == pytest.approx(metric / sigma[0], rel=1e-12)
    assert result.normalized[0] == result.kuiper[0]  # the weight of D_0 in (4) is 1
    np.testing.assert_allclose(result.p_value, brownian_range_sf(result.kuiper / sigma))


def test_full_population_matches_cumulative():
    rng = np.random.default_rng(5)
    n = 500
    score = np.round(rng.random(n), 2)  # many ties
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   rng.uniform(0.5, 2, n))
    result = multicalibration(pred)
    full = cumulative_differences(pred)
    assert result.kuiper[0] == pytest.approx(full.kuiper, rel=1e-12)
    assert result.sigma[0] == pytest.approx(full.sigma, rel=1e-12)
    assert result.metric == pytest.approx(full.kuiper, rel=1e-12)
    assert result.n_subpopulations == 0


def test_subpopulation_matches_cumulative_of_its_rows():
    # D_k and sigma_k equal the full-population statistics of a data set made of the members.
    rng = np.random.default_rng(6)
    n = 800
    score = np.round(rng.random(n), 2)
    label = (rng.random(n) < score**1.5).astype(int)
    weight = rng.uniform(0.5, 3, n)
    age = rng.integers(20, 70, n)
    pred = Predictions.from_arrays(score, label, weight, covariates={"age": age})
    subpops = generate_subpopulations(pred, n_subpopulations=20, min_size=15, seed=2)
    result = multicalibration(pred, subpops)
    for k, sub in enumerate(subpops):
        rows = pred.row[sub.index]
        alone = Predictions.from_arrays(score[rows], label[rows], weight[rows])
        expected = cumulative_differences(alone)
        assert result.kuiper[k] == pytest.approx(expected.kuiper, rel=1e-10, abs=1e-15)
        assert result.sigma[k] == pytest.approx(expected.sigma, rel=1e-12)
        assert result.weight_total[k] == pytest.approx(weight[rows].sum(), rel=1e-12)


def test_zero_over_zero_is_zero():
    # A subpopulation whose scores are exactly 0 or 1 and match the labels: D = sigma = 0.
    score = np.array([0.0, 0.0, 1.0, 1.0, 0.2, 0.5, 0.7, 0.9])
    label = np.array([0, 0, 1, 1, 0, 1, 1, 0])
    flag = np.array([True, True, True, True, False, False, False, False])
    pred = Predictions.from_arrays(score, label, covariates={"certain": flag})
    result = multicalibration(pred, group_subpopulations(pred, ["certain"]))
    assert result.kuiper[1] == 0.0
    assert result.sigma[1] == 0.0
    assert result.normalized[1] == 0.0
    assert result.kuiper_z[1] == 0.0
    assert result.metric == result.kuiper[0]


def test_infinite_when_sigma_zero_but_miscalibrated():
    score = np.array([0.0, 0.0, 0.3, 0.6, 0.9])
    label = np.array([1, 1, 0, 1, 1])
    pred = Predictions.from_arrays(score, label, covariates={"zero": score == 0})
    result = multicalibration(pred, group_subpopulations(pred, ["zero"]))
    assert result.normalized[1] == np.inf
    assert result.metric == np.inf


def test_ties_do_not_depend_on_row_order():
    score = np.array([0.2, 0.2, 0.2, 0.5, 0.5, 0.8])
    label = np.array([1, 0, 0, 1, 0, 1])
    group = np.array([True, True, False, True, True, True])
    one = multicalibration(*_with_groups(score, label, group))
    order = np.array([2, 1, 0, 4, 3, 5])
    two = multicalibration(*_with_groups(score[order], label[order], group[order]))
    np.testing.assert_allclose(one.kuiper, two.kuiper, rtol=0, atol=1e-15)


def _with_groups(score, label, group):
    pred = Predictions.from_arrays(score, label, covariates={"g": group})
    return pred, group_subpopulations(pred, ["g"])


def test_hand_computed_tie_rule():
    # Scores 0.5, 0.5 with labels 1, 0 (one tied run) then 0.5 ... : the path is read only at
    # the end of the run, so C = (0, 0) and D = 0 rather than 0.25.
    pred = Predictions.from_arrays([0.5, 0.5], [1, 0])
    assert multicalibration(pred).kuiper[0] == 0.0


def test_table_and_expectation():
    rng = np.random.default_rng(1)
    n = 2000
    score = rng.random(n)
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   covariates={"x": rng.normal(size=n),
                                               "c": rng.choice(list("abcde"), n)})
    result = multicalibration(pred, generate_subpopulations(pred, n_subpopulations=40, seed=4))
    table = result.table
    assert tuple(table.columns) == TABLE_COLUMNS
    assert len(table) == 41
    assert table["id"].tolist() == list(range(41))
    best = table.sort_values("normalized", ascending=False).iloc[0]
    assert best["normalized"] == result.metric
    assert best["description"] == result.argmax.description
    assert result.ablate == table["kuiper"].max()
    k = int(np.argmax(result.kuiper))
    assert result.expectation == pytest.approx(2 * np.sqrt(2 / np.pi) * result.sigma[k])
    assert result.ablate_argmax is result.subpopulations[k]
    assert not result.kuiper.flags.writeable


def test_repeats_mean_and_bessel_standard_error():
    rng = np.random.default_rng(2)
    n = 1500
    score = rng.random(n)
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   covariates={"x": rng.normal(size=n), "y": rng.random(n)})
    repeated = multicalibration_repeats(pred, seeds=(0, 1, 2), n_subpopulations=30)
    singles = [multicalibration(pred, generate_subpopulations(pred, n_subpopulations=30, seed=s))
               for s in (0, 1, 2)]
    values = np.array([r.metric for r in singles])
    np.testing.assert_array_equal(repeated.metric, values)
    assert repeated.mean("metric") == pytest.approx(values.mean())
    # Bessel: variance divides by r - 1 = 2
    se = np.sqrt(((values - values.mean()) ** 2).sum() / 2 / 3)
    assert repeated.se("metric") == pytest.approx(se)
    summary = repeated.summary()
    assert summary.loc[summary["metric"] == "metric", "plus_minus"].item() == pytest.approx(2 * se)


def test_validation():
    pred = Predictions.from_arrays([0.1, 0.5, 0.9], [0, 1, 1])
    empty = Subpopulation(1, 0, (), "nothing", np.array([], dtype=np.int64))
    with pytest.raises(ValidationError, match="has no members"):
        multicalibration(pred, [empty])
    outside = Subpopulation(1, 0, (), "outside", np.array([0, 7]))
    with pytest.raises(ValidationError, match="outside the 3 predictions"):
        multicalibration(pred, [outside])
    with pytest.raises(ValidationError, match="sigma_method"):
        multicalibration(pred, sigma_method="nope")
    with pytest.raises(ValidationError, match="at least one seed"):
        multicalibration_repeats(pred, seeds=())


def test_continuous_response_uses_adjacent_sigma():
    rng = np.random.default_rng(3)
    n = 300
    score = rng.random(n)
    pred = Predictions.from_arrays(score, score + rng.normal(0, 0.1, n), response="continuous",
                                   covariates={"x": rng.random(n)})
    result = multicalibration(pred)
    assert result.sigma[0] == pytest.approx(cumulative_differences(pred).sigma, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(20, 200))
def test_metric_at_least_full_kuiper_and_groups_consistent(seed, n):
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   covariates={"x": rng.normal(size=n)})
    result = multicalibration(pred, generate_subpopulations(pred, n_subpopulations=10,
                                                            min_size=5, seed=seed))
    assert result.metric >= result.kuiper[0]  # k = 0 enters (4) with weight 1
    assert result.ablate >= result.kuiper[0]
    assert np.all((result.kuiper >= 0) & (result.kuiper <= 1))
    for sub in result.subpopulations:
        assert np.array_equal(select_rows(pred, sub.conditions), sub.index)


def test_accepts_plain_frame_groups():
    frame = pd.DataFrame({"g": ["a", "b", "a", "b", "a", "b"]})
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 0, 1, 0, 1, 1],
                                   covariates=frame)
    result = multicalibration(pred, group_subpopulations(pred, ["g"]))
    assert [s.description for s in result.subpopulations] == ["full population", "g == a",
                                                              "g == b"]


def _brute_force(score, label, weight, rows):
    """Eqs. (1), (2) and (5) of paper 000 written out for one subpopulation (the given rows),
    reading C only at the last member of each run of tied scores."""
    order = rows[np.argsort(score[rows], kind="stable")]
    s, r, w = score[order], label[order], weight[order]
    total = w.sum()
    path, running = [0.0], 0.0  # C_0 = 0
    for j in range(order.size):
        running += (r[j] - s[j]) * w[j]
        if j == order.size - 1 or s[j + 1] != s[j]:
            path.append(running / total)  # eq. (1)
    return max(path) - min(path), np.sqrt(np.sum(s * (1 - s) * w**2)) / total  # (2), (5)


def test_weighted_ties_against_the_equations_written_out():
    rng = np.random.default_rng(8)
    n = 400
    score = np.round(rng.random(n), 1)  # long runs of ties
    label = (rng.random(n) < score**2).astype(int)
    weight = rng.uniform(0.1, 5, n)
    pred = Predictions.from_arrays(score, label, weight, covariates={
        "x": rng.normal(size=n), "c": rng.choice(list("abcd"), n)})
    result = multicalibration(pred, generate_subpopulations(pred, n_subpopulations=40,
                                                            min_size=5, seed=9))
    d, sigma = np.array([_brute_force(score, label, weight, pred.row[sub.index])
                         for sub in result.subpopulations]).T
    np.testing.assert_allclose(result.kuiper, d, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(result.sigma, sigma, rtol=1e-12)
    normalized = d * sigma[0] / sigma  # eq. (4)
    assert result.metric == pytest.approx(normalized.max(), rel=1e-10)
    assert result.metric_z == pytest.approx(normalized.max() / sigma[0], rel=1e-10)
    assert result.ablate == pytest.approx(d.max(), rel=1e-10)
    assert result.expectation == pytest.approx(2 * np.sqrt(2 / np.pi) * sigma[np.argmax(d)],
                                               rel=1e-10)
    np.testing.assert_allclose(result.kuiper_z, d / sigma, rtol=1e-10)


def test_full_population_enters_with_weight_one_even_when_sigma_0_is_zero():
    # Scores exactly 0 or 1 make every sigma_k zero; paper 000 after (4): "the argument to
    # the max for k = 0 is simply D_0". Labels 1, 1, 0, 1 against 0, 0, 1, 1: the cumulative
    # sums are 1, 2, 1, 1 over 4, so D_0 = 0.5; the group's term is 0/0 = 0.
    pred = Predictions.from_arrays([0.0, 0.0, 1.0, 1.0], [1, 1, 0, 1],
                                   covariates={"g": [True, True, False, False]})
    result = multicalibration(pred, group_subpopulations(pred, ["g"]))
    assert result.kuiper.tolist() == [0.5, 1.0]
    assert result.sigma.tolist() == [0.0, 0.0]
    assert result.normalized.tolist() == [0.5, 0.0]
    assert result.metric == 0.5
    assert result.argmax is result.subpopulations[0]
