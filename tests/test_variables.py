"""Variable-based calibration: errors, curves, VCE(v*), VECE, levels, ranking."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcviz import Predictions, load_demo
from mcviz.errors import ValidationError
from mcviz.io import demo_path
from mcviz.variables import (
    level_calibration,
    prediction_errors,
    rank_variables,
    variable_calibration,
    vece,
)


def synthetic(n=4000, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n).astype(float)
    income = rng.lognormal(10, 1, n)
    score = rng.random(n)
    # miscalibrated for the old: the label ignores the score above 60
    truth = np.where(age > 60, 0.5, score)
    label = (rng.random(n) < truth).astype(int)
    covariates = {"age": age, "income": income,
                  "group": rng.choice(["a", "b", "c"], n), "flag": rng.integers(0, 2, n)}
    weight = rng.random(n) + 0.5 if weighted else None
    return Predictions.from_arrays(score, label, weight, covariates=covariates)


# ------------------------------------------------------------------------------------------
# Errors


def test_binary_errors_use_the_half_threshold_and_top_label():
    pred = Predictions.from_arrays([0.1, 0.5, 0.7, 0.4], [1, 1, 0, 0])
    error, predicted = prediction_errors(pred)
    # sorted scores 0.1, 0.4, 0.5, 0.7 with labels 1, 0, 1, 0; classes 0, 0, 1, 1
    np.testing.assert_array_equal(error, [1, 0, 0, 1])
    np.testing.assert_allclose(predicted, [0.1, 0.4, 0.5, 0.3])


def test_continuous_response_is_refused():
    pred = Predictions.from_arrays([0.1, 0.5], [0.3, 0.2], response="continuous")
    with pytest.raises(ValidationError, match="real-valued"):
        prediction_errors(pred)


# ------------------------------------------------------------------------------------------
# VECE


def test_vece_hand_computed_weighted():
    # V = 1..6, 3 bins: edges 1, 2.667, 4.333, 6 -> bins {1, 2}, {3, 4}, {5, 6}.
    # weights 1, 3 | 1, 1 | 2, 2; e = 1, 0 | 0, 0 | 1, 1; ê = 0.2 | 0.5 | 0.1
    # bin 1: mean e = 1/4, ê = 0.2 -> 0.05, share 4/10; bin 2: 0 vs 0.5 -> 0.5, share 2/10;
    # bin 3: 1 vs 0.1 -> 0.9, share 4/10. VECE = 0.02 + 0.1 + 0.36 = 0.48.
    value, _edges, share, error_mean, _predicted_mean = vece(
        np.arange(1.0, 7.0), np.array([1, 0, 0, 0, 1, 1.0]),
        np.array([0.2, 0.2, 0.5, 0.5, 0.1, 0.1]), np.array([1, 3, 1, 1, 2, 2.0]), bins=3,
    )
    assert value == pytest.approx(0.48)
    np.testing.assert_allclose(share, [0.4, 0.2, 0.4])
    np.testing.assert_allclose(error_mean, [0.25, 0, 1])


def test_vece_few_valued_variable_gets_fewer_bins():
    v = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1.0])
    e = np.array([1, 0, 0, 0, 0, 0, 1, 1, 0, 0.0])
    p = np.full(10, 0.25)
    value, edges, share, *_ = vece(v, e, p)
    # deciles with linear interpolation: 0 (x6), 0.4 (between the 6th and 7th value), 1
    np.testing.assert_allclose(edges, [0, 0.4, 1])
    # bin {0}: 1/6 vs 0.25; bin {1}: 0.5 vs 0.25
    assert share.size == 2
    assert value == pytest.approx(0.6 * (0.25 - 1 / 6) + 0.4 * 0.25)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(0, 12), min_size=3, max_size=80), seed=st.integers(0, 99))
def test_vece_matches_pandas_qcut(values, seed):
    v = np.array(values, dtype=float)
    assume(np.unique(v).size > 1)  # qcut leaves a constant variable unbinned
    rng = np.random.default_rng(seed)
    e = rng.integers(0, 2, v.size).astype(float)
    p = rng.random(v.size) / 2
    codes = pd.qcut(v, 10, labels=False, duplicates="drop")
    frame = pd.DataFrame({"b": codes, "e": e, "p": p})
    grouped = frame.groupby("b")
    expected = float((grouped.size() / v.size * (grouped.p.mean() - grouped.e.mean()).abs()).sum())
    assert vece(v, e, p)[0] == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------------------------
# Curves, VCE(v*)


@pytest.mark.parametrize("name", ["age", "income"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gap_curve_is_the_difference_of_the_curves(name, weighted):
    result = variable_calibration(synthetic(weighted=weighted), name)
    np.testing.assert_allclose(result.gap.fit, result.error.fit - result.predicted.fit,
                               atol=1e-12)
    assert result.vce == pytest.approx(np.abs(result.gap.fit).max())
    assert result.vce_at == result.gap.x[np.argmax(np.abs(result.gap.fit))]
    # the gap has its own band, narrower than the two bands added as if independent
    error_half = result.error.upper - result.error.fit
    predicted_half = result.predicted.upper - result.predicted.fit
    gap_half = result.gap.upper - result.gap.fit
    assert np.all(gap_half > 0)
    assert np.all(gap_half < error_half + predicted_half)


def test_grid_spans_the_5_to_95_percent_quantiles():
    pred = synthetic()
    result = variable_calibration(pred, "income")
    income = pred.covariates["income"].to_numpy()
    assert result.error.x.size == 500
    assert result.error.x[0] == pytest.approx(np.quantile(income, 0.05))
    assert result.error.x[-1] == pytest.approx(np.quantile(income, 0.95))
    assert result.error.binned  # 4,000 distinct values > 2,048


def test_miscalibration_is_found_where_it_is():
    result = variable_calibration(synthetic(n=20_000), "age")
    # above 60 the predicted error (mean 0.25) is below the true error (0.5)
    assert result.vce_at > 60
    assert result.vce > 0.15
    assert result.gap.lower[-1] > 0  # significant at the right end
    assert result.vece > 0.05


def test_binary_variable_falls_back_to_a_lower_degree():
    pred = synthetic()
    result = variable_calibration(pred, "flag")
    # Two values: at v = 0 the radius (q = 3,600 > rows at 0) reaches exactly to 1, where the
    # tricube weight is 0, so the fit is the error rate of the rows at 0 (degree 0).
    error, _ = prediction_errors(pred)
    flag = pred.covariates["flag"].to_numpy()
    assert result.error.degree <= 1
    assert result.error.fit[0] == pytest.approx(error[flag == 0].mean())
    assert result.error.fit[-1] == pytest.approx(error[flag == 1].mean())
    np.testing.assert_allclose(result.bin_edges, [0.0, 1.0])


def test_missing_values_are_left_out_and_counted():
    pred = synthetic()
    frame = pred.covariates.copy()
    values = frame["age"].to_numpy().copy()
    values[:10] = np.nan
    pred2 = Predictions.from_arrays(pred.score, pred.label, covariates={"age": values})
    result = variable_calibration(pred2, "age")
    assert result.n_missing == 10
    assert result.n == pred.n - 10


def test_validation_messages():
    pred = synthetic()
    with pytest.raises(ValidationError, match="'group' is nominal"):
        variable_calibration(pred, "group")
    with pytest.raises(ValidationError, match="no covariate 'nope'"):
        variable_calibration(pred, "nope")
    with pytest.raises(ValidationError, match=r"span must lie in \[0.3, 1\]"):
        variable_calibration(pred, "age", span=0.2)
    constant = Predictions.from_arrays([0.2, 0.6, 0.7], [0, 1, 1],
                                       covariates={"v": [1.0, 1.0, np.nan]})
    with pytest.raises(ValidationError, match="'v' takes a single value"):
        variable_calibration(constant, "v")


# ------------------------------------------------------------------------------------------
# Levels and ranking


def test_level_calibration_hand_computed_with_missing_level():
    pred = Predictions.from_arrays(
        [0.9, 0.8, 0.2, 0.3, 0.6], [1, 0, 0, 0, 0],
        covariates={"g": pd.Series(["a", "a", "b", "b", None], dtype="string")},
    )
    result = level_calibration(pred, "g")
    assert result.levels == ("a", "b", "(missing)")
    # a: e = (0, 1) mean 0.5, ê = (0.1, 0.2) mean 0.15 -> gap 0.35
    # b: e = 0, ê = (0.2, 0.3) -> gap -0.25; missing: e = 1 (0.6 -> class 1, label 0), ê 0.4
    np.testing.assert_allclose(result.gap, [0.35, -0.25, 0.6])
    assert result.vce == pytest.approx(0.6)
    assert result.vce_at == "(missing)"
    assert result.vece == pytest.approx(0.4 * 0.35 + 0.4 * 0.25 + 0.2 * 0.6)
    # binomial interval for level a: 0.5 ± 1.96 sqrt(0.25 / 2)
    assert result.error_upper[0] == pytest.approx(min(1, 0.5 + 1.959963984540054 * 0.25**0.5 /
                                                      2**0.5))


def test_rank_variables_sorted_with_both_kinds():
    pred = synthetic()
    table = rank_variables(pred)
    assert list(table.columns) == ["name", "kind", "vece", "vce", "vce_at"]
    assert set(table["name"]) == {"age", "income", "group", "flag"}
    assert table["vece"].is_monotonic_decreasing
    assert table.loc[table.name == "group", "kind"].item() == "categorical"
    assert table.iloc[0]["name"] == "age"
    # cached: a second call returns the same numbers without recomputation
    again = rank_variables(pred)
    pd.testing.assert_frame_equal(table, again)
    assert table.loc[table.name == "age", "vece"].item() == pytest.approx(
        variable_calibration(pred, "age").vece)


# ------------------------------------------------------------------------------------------
# Multi-class (top label): the Letter demo


@pytest.mark.skipif(not demo_path("letter").exists(), reason="letter demo not built")
def test_letter_demo_top_label_path():
    pred = load_demo("letter")
    assert pred.multiclass
    assert len(pred.classes) == 26
    error, predicted = prediction_errors(pred)
    np.testing.assert_array_equal(error, (pred.true_class != pred.predicted_class).astype(float))
    np.testing.assert_allclose(predicted, 1 - pred.score)
    assert predicted.max() <= 1 - 1 / 26 + 1e-12
    name = pred.covariates.columns[0]
    result = variable_calibration(pred, name)
    assert not result.error.binned  # 16 distinct values: exact sums
    assert 0 <= result.vece <= 1
    assert 0 <= result.vce <= 1
    table = rank_variables(pred)
    assert len(table) == 16
    assert table["vece"].is_monotonic_decreasing


def test_synthetic_multiclass_top_label_path():
    rng = np.random.default_rng(3)
    n = 600
    raw = rng.dirichlet(np.ones(4), n)
    true = np.array([rng.choice(4, p=row) for row in raw])
    frame = pd.DataFrame({f"prob_{c}": raw[:, i] for i, c in enumerate("abcd")})
    frame["label"] = np.array(list("abcd"))[true]
    frame["x"] = rng.random(n)
    from mcviz import load_predictions

    pred = load_predictions(frame, probabilities=[f"prob_{c}" for c in "abcd"], label="label")
    error, predicted = prediction_errors(pred)
    top = raw.max(axis=1)
    np.testing.assert_allclose(np.sort(predicted), np.sort(1 - top))
    assert error.mean() == pytest.approx(np.mean(raw.argmax(axis=1) != true))
    assert variable_calibration(pred, "x").vece >= 0


def test_rank_lists_constant_variables_last_and_dates_as_timestamps():
    rng = np.random.default_rng(6)
    n = 400
    score = rng.random(n)
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int), covariates={
        "when": pd.date_range("2020-01-01", periods=n, freq="D"),
        "mostly_missing": np.r_[1.0, np.full(n - 1, np.nan)],
        "x": rng.random(n),
    })
    table = rank_variables(pred)
    assert table.iloc[-1]["name"] == "mostly_missing"
    assert np.isnan(table.iloc[-1]["vece"])
    assert table.iloc[-1]["vce_at"] is None
    when = table.loc[table.name == "when", "vce_at"].item()
    assert pd.Timestamp(when).year in (2020, 2021)


def test_gap_band_from_its_own_residuals_brute_force():
    # Brute force: the full smoother matrix L (degree 2, tricube, q = floor(n·span + 1e-5)),
    # residuals of r = e - ê, σ̂² = Σ r_res² / n · n / (n - tr L), se = σ̂ sqrt(Σ l_i(v)²).
    rng = np.random.default_rng(21)
    n = 400
    v = rng.integers(0, 50, n).astype(float)  # 50 distinct values: exact residuals
    score = rng.random(n)
    label = (rng.random(n) < np.where(v > 30, 0.5, score)).astype(int)
    pred = Predictions.from_arrays(score, label, covariates={"v": v})
    result = variable_calibration(pred, "v", span=0.7)
    error, predicted = prediction_errors(pred)
    x = pred.covariates["v"].to_numpy(dtype=float)
    q = int(np.floor(n * 0.7 + 1e-5))

    def smoother(at):
        distance = np.abs(x - at)
        h = np.sort(distance)[q - 1]
        k = np.clip(1 - (distance / h) ** 3, 0, None) ** 3
        design = np.vander((x - at) / h, 3, increasing=True)
        return k * (design @ np.linalg.solve(design.T @ (k[:, None] * design), np.eye(3)[0]))

    full = np.array([smoother(at) for at in x])
    on_grid = np.array([smoother(at) for at in result.gap.x[::50]])
    for curve, y in ((result.gap, error - predicted), (result.error, error),
                     (result.predicted, predicted)):
        residual = y - full @ y
        sigma = np.sqrt(residual @ residual / (n - np.trace(full)))
        assert curve.sigma == pytest.approx(sigma, rel=1e-10)
        np.testing.assert_allclose(curve.fit[::50], on_grid @ y, atol=1e-12)
        np.testing.assert_allclose(curve.se[::50], sigma * np.sqrt((on_grid**2).sum(axis=1)),
                                   rtol=1e-10)


def test_infinite_variable_values_are_refused():
    rng = np.random.default_rng(7)
    n = 200
    x = rng.random(n)
    x[[4, 9]] = np.inf
    score = rng.random(n)
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   covariates={"x": x})
    with pytest.raises(ValidationError, match=r"column 'x': 2 of 200 rows are infinite"):
        variable_calibration(pred, "x")
    with pytest.raises(ValidationError, match="rows are infinite"):
        rank_variables(pred)


def test_a_constant_variable_is_named_as_such():
    pred = Predictions.from_arrays([0.2, 0.4, 0.8], [0, 1, 1], covariates={"c": [3, 3, 3]})
    with pytest.raises(ValidationError, match="covariate 'c' dropped: it takes a single value"):
        variable_calibration(pred, "c")
