"""Variable-based calibration: errors, curves, VCE(v*), VECE, levels, ranking."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from mcviz import Predictions, load_demo
from mcviz.errors import ValidationError
from mcviz.io import demo_path
from mcviz.stats.variables import (
    level_calibration,
    prediction_errors,
    rank_variables,
    simultaneous_z,
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
    # eq. (8) over the eligible points: supported and out of reach of thin support (issue 31),
    # so at most the largest gap anywhere on the grid
    where = result.gap.x == result.vce_at
    assert result.vce == pytest.approx(np.abs(result.gap.fit[where][0]))
    assert result.vce <= np.abs(result.gap.fit).max() + 1e-12
    # the gap has its own band, narrower than the two bands added as if independent
    error_half = result.error.upper - result.error.fit
    predicted_half = result.predicted.upper - result.predicted.fit
    gap_half = result.gap.upper - result.gap.fit
    assert np.all(gap_half > 0)
    assert np.all(gap_half < error_half + predicted_half)


def test_grid_spans_the_whole_observed_range():
    pred = synthetic()
    result = variable_calibration(pred, "income")
    income = np.sort(pred.covariates["income"].to_numpy())
    x = result.error.x
    assert x[0] == income[0]
    assert x[-1] == income[-1]
    # half equally spaced, half at equally spaced quantiles (duplicates dropped)
    assert 400 < x.size <= 500
    quantiles = np.quantile(income, np.linspace(0, 1, 250))
    assert np.abs(x[np.searchsorted(x, quantiles).clip(0, x.size - 1)] - quantiles).max() < 1e-6
    equal = np.linspace(income[0], income[-1], 250)
    assert np.abs(x[np.searchsorted(x, equal).clip(0, x.size - 1)] - equal).max() < 1e-6
    assert np.all(np.diff(x) > 0)
    assert result.error.binned  # 4,000 distinct values > 2,048
    # the log-normal's right tail is thin and named in the warnings
    assert result.gap.thin[-1]
    assert not result.gap.thin[np.searchsorted(x, np.median(income))]
    assert any("thin support" in w for w in result.warnings)


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
    # one or two rows per level: none has enough rows for VCE(v*)
    np.testing.assert_array_equal(result.effective_size, [2, 2, 1])
    assert not result.eligible.any()
    assert np.isnan(result.vce)
    assert result.vce_at is None
    assert any("no level has enough rows" in w for w in result.warnings)
    assert result.vece == pytest.approx(0.4 * 0.35 + 0.4 * 0.25 + 0.2 * 0.6)
    # binomial interval for level a: 0.5 ± 1.96 sqrt(0.25 / 2)
    assert result.error_upper[0] == pytest.approx(min(1, 0.5 + 1.959963984540054 * 0.25**0.5 /
                                                      2**0.5))


def test_rank_variables_sorted_with_both_kinds():
    pred = synthetic()
    table = rank_variables(pred)
    assert list(table.columns) == ["name", "kind", "vece", "vce", "vce_at", "vce_support",
                                   "vce_significant", "kuiper_z", "p_value", "p_adjusted",
                                   "warnings"]
    assert set(table["name"]) == {"age", "income", "group", "flag"}
    evidence = table["vce_significant"] | (table["p_adjusted"] < 0.05)
    assert evidence.is_monotonic_decreasing  # evidence first, then VECE
    for flag in (True, False):
        assert table.loc[evidence == flag, "vece"].is_monotonic_decreasing
    # one naming of covariate kinds: the ranking uses the loader's words
    assert table.loc[table.name == "group", "kind"].item() == "nominal"
    assert dict(zip(table["name"], table["kind"], strict=True)) == dict(pred.covariate_kinds)
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
    evidence = table["vce_significant"] | (table["p_adjusted"] < 0.05)
    assert evidence.is_monotonic_decreasing


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


# ------------------------------------------------------------------------------------------
# Honest edges: whole range, spikes, thin support, degenerate fits, clipping, records


def calibrated(n, covariates, seed=0, weighted=False):
    """Labels drawn from the scores: perfectly calibrated, whatever the covariates."""
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    label = (rng.random(n) < score).astype(int)
    weight = rng.random(n) + 0.5 if weighted else None
    return Predictions.from_arrays(score, label, weight, covariates=covariates(rng))


def test_zero_inflated_calibrated_covariate_has_a_small_vce():
    # 96% zeros, the rest log-normal (a wage per hour): before, the zeros sat on the window
    # edges, the fits extrapolated and VCE(v*) came out at 62-64%. Labels follow the scores,
    # so the true gap is 0 everywhere; with 40,000 non-zero rows the curve's noise (band
    # half-width about 1.5 pp where it is best supported) stays below 2 pp.
    n = 1_000_000
    pred = calibrated(n, lambda rng: {
        "wage": np.where(rng.random(n) < 0.96, 0.0, rng.lognormal(3.0, 0.8, n))})
    result = variable_calibration(pred, "wage")
    assert result.vce < 0.02
    gap = result.gap
    np.testing.assert_array_equal(gap.x[gap.spike], [0.0])
    # the spike's estimate is the mean gap of its own rows (closed form)
    error, predicted = prediction_errors(pred)
    zero = pred.covariates["wage"].to_numpy() == 0
    assert gap.fit[gap.spike][0] == pytest.approx((error - predicted)[zero].mean(), abs=1e-12)
    # the grid reaches the largest wage; the sparse right tail is flagged and named
    assert gap.x[-1] == pred.covariates["wage"].max()
    assert gap.thin[-1]
    assert not gap.thin[gap.spike][0]
    assert any("thin support" in w for w in result.warnings)
    assert result.vce_at not in gap.x[gap.thin]


@pytest.mark.parametrize("distribution", ["uniform", "normal", "lognormal"])
def test_miscalibration_in_the_top_3_percent_is_found_there(distribution):
    # Above the 97% quantile of V the label ignores the score (true error 0.5 against a
    # predicted 0.25 on average); below, perfectly calibrated.
    n = 100_000
    rng = np.random.default_rng(5)
    v = {"uniform": rng.random(n), "normal": rng.normal(size=n),
         "lognormal": rng.lognormal(0.0, 1.0, n)}[distribution]
    score = rng.random(n)
    top = v > np.quantile(v, 0.97)
    label = (rng.random(n) < np.where(top, 0.5, score)).astype(int)
    result = variable_calibration(Predictions.from_arrays(score, label, covariates={"v": v}), "v")
    assert result.vce_at > np.quantile(v, 0.97)
    assert result.vce > 0.08


def test_spike_in_the_middle_is_its_own_point_and_left_out_of_the_windows():
    # Hours worked: 30% of rows at exactly 40. The spike's estimate is the mean of its rows;
    # every other point is the LOESS of the other rows alone (brute force, q from their count).
    n = 3000
    rng = np.random.default_rng(8)
    hours = np.where(rng.random(n) < 0.3, 40.0, np.round(rng.normal(38, 10, n), 1))
    score = rng.random(n)
    label = (rng.random(n) < np.where(hours == 40, 0.5, score)).astype(int)
    pred = Predictions.from_arrays(score, label, covariates={"hours": hours})
    result = variable_calibration(pred, "hours", span=0.5)
    error, predicted = prediction_errors(pred)
    x = pred.covariates["hours"].to_numpy()
    r = error - predicted
    spike = result.gap.spike
    np.testing.assert_array_equal(result.gap.x[spike], [40.0])
    assert result.gap.fit[spike][0] == pytest.approx(r[x == 40].mean(), abs=1e-12)
    rest = x != 40
    q = int(np.floor(rest.sum() * 0.5 + 1e-5))
    for at in result.gap.x[~spike][::40]:
        distance = np.abs(x[rest] - at)
        h = np.sort(distance)[q - 1]
        k = np.clip(1 - (distance / h) ** 3, 0, None) ** 3
        design = np.vander((x[rest] - at) / h, 3, increasing=True)
        beta = np.linalg.solve(design.T @ (k[:, None] * design), design.T @ (k * r[rest]))
        fitted = result.gap.fit[result.gap.x == at][0]
        assert fitted == pytest.approx(beta[0], abs=1e-9)
    # the 0.5 error at 40 (about 0.25 above the predicted error) is VCE(v*), from 30% of rows
    assert result.vce_at == 40.0
    assert result.vce_support == (x == 40).sum()


def test_degenerate_local_fits_are_reported_not_extrapolated():
    # 94% zeros (a spike) and 2% each at 5, 7 and 9: at v = 5 the window of the 0.9 n' nearest
    # non-spike rows reaches 9 exactly (tricube weight 0), so two values remain for a
    # quadratic: the degree is lowered, the point flagged and left out of VCE(v*).
    n = 5000
    rng = np.random.default_rng(9)
    u = rng.random(n)
    v = np.select([u < 0.94, u < 0.96, u < 0.98], [0.0, 5.0, 7.0], 9.0)
    score = rng.random(n)
    label = (rng.random(n) < score).astype(int)
    result = variable_calibration(Predictions.from_arrays(score, label, covariates={"v": v}),
                                  "v")
    gap = result.gap
    at5 = np.flatnonzero(gap.x == 5.0)[0]
    assert gap.degenerate[at5]
    assert gap.thin[at5]
    assert any("degenerates" in w for w in result.warnings)
    assert result.vce_at not in gap.x[gap.degenerate]


def test_displayed_rates_are_clipped_to_the_unit_interval():
    # Error rate 0 below v = 0.8, 0.5 above: a quadratic local fit dips below 0 before the
    # step (checked on the unclipped LOESS), the displayed curve and band do not.
    n = 4000
    rng = np.random.default_rng(10)
    v = rng.random(n)
    score = np.full(n, 0.99)
    label = np.where(v > 0.8, rng.random(n) < 0.5, 1).astype(int)
    pred = Predictions.from_arrays(score, label, covariates={"v": v})
    result = variable_calibration(pred, "v", span=0.3)
    error, _ = prediction_errors(pred)
    from mcviz.stats.smoothing import loess_curve

    raw = loess_curve(pred.covariates["v"].to_numpy(), error, span=0.3, at=result.error.x)
    assert raw.fit.min() < 0 or raw.lower.min() < 0  # the test can fail
    for curve in (result.error, result.predicted):
        assert curve.fit.min() >= 0
        assert curve.lower.min() >= 0
        assert curve.upper.max() <= 1
    assert result.gap.lower.min() >= -1


@pytest.mark.parametrize(("seed", "error_drop", "predicted_drop", "power"),
                         [(0, 80, 78, 1.0), (0, 80, 82, 1.5), (1, 84, 86, 1.5)])
def test_v_star_is_where_the_drawn_curves_are_the_fitted_ones(seed, error_drop,
                                                              predicted_drop, power):
    # The top end of age is thin (power > 1) and both rates step to 0 there: the quadratic
    # fits overshoot below 0 at age 90 and were drawn as 0 while VCE(v*) read 2.7-9.7% there
    # (issue 40: "VCE(v*) 1.32% at age = 90" where both drawn curves are 0)
    rng = np.random.default_rng(seed)
    age = np.round(17 + 73 * rng.random(4000) ** power)
    score = np.where(age >= predicted_drop, 0.999, 0.7)  # predicted error 0.1% or 30%
    label = rng.random(age.size) >= np.where(age >= error_drop, 0.0, 0.3)
    result = variable_calibration(Predictions.from_arrays(score, label, covariates={"age": age}),
                                  "age", span=0.3 if seed else None)
    assert np.isfinite(result.vce)
    at = int(np.flatnonzero(result.gap.x == result.vce_at)[0])
    drawn = result.error.fit[at] - result.predicted.fit[at]
    assert abs(drawn) == pytest.approx(result.vce, abs=1e-9)
    assert abs(result.gap.fit[at] - drawn) < 1e-9
    assert any("a fitted rate leaves [0, 1]" in w for w in result.warnings)


def test_levels_need_enough_rows_for_vce():
    # Level "tiny" (12 rows) has the largest gap but too few rows; "big" (3,000 rows, gap
    # about 0.25) is VCE(v*); "mid" (600 rows) is calibrated.
    rng = np.random.default_rng(11)
    sizes = {"big": 3000, "mid": 600, "tiny": 12}
    level = np.repeat(list(sizes), list(sizes.values()))
    n = level.size
    score = rng.random(n)
    truth = np.select([level == "big", level == "tiny"], [0.5, 1 - score], score)
    label = (rng.random(n) < truth).astype(int)
    weight = np.where(level == "mid", 2.0, 1.0)
    pred = Predictions.from_arrays(score, label, weight, covariates={"g": level})
    result = level_calibration(pred, "g")
    index = {name: i for i, name in enumerate(result.levels)}
    assert result.eligible.tolist() == [result.levels[i] != "tiny" for i in range(3)]
    assert result.vce_at == "big"
    assert abs(result.gap[index["tiny"]]) > result.vce
    assert result.vce_support == 3000
    # Kish's effective size: constant weights within a level give its row count
    np.testing.assert_allclose(result.effective_size[index["mid"]], 600)
    assert any("'tiny'" in w for w in result.warnings)


def test_records_are_json_ready_with_the_cli_fields():
    import json

    from mcviz.stats.variables import variable_records

    pred = synthetic()
    records = variable_records(pred)
    json.dumps(records)  # plain Python values only
    assert [r["name"] for r in records] == list(rank_variables(pred)["name"])
    for record in records:
        assert set(record) == {"name", "kind", "vece", "vce", "vce_at", "vce_support",
                               "vce_ci", "vce_significant", "kuiper_z", "p_value",
                               "p_adjusted", "span", "span_chosen", "n", "spikes",
                               "warnings"}
    age = next(r for r in records if r["name"] == "age")
    result = variable_calibration(pred, "age")
    assert age["vce_at"] == result.vce_at
    assert age["vce_support"] == result.vce_support
    flag = next(r for r in records if r["name"] == "flag")
    assert flag["spikes"] == [0.0, 1.0]  # a binary variable: two spikes, no LOESS part


def test_vce_support_counts_the_rows_inside_the_window_at_v_star():
    pred = synthetic(n=6000)
    result = variable_calibration(pred, "income", span=0.5)
    x = pred.covariates["income"].to_numpy()
    h = np.sort(np.abs(x - result.vce_at))[int(np.floor(x.size * 0.5 + 1e-5)) - 1]
    assert result.vce_support == np.sum(np.abs(x - result.vce_at) < h)


def test_curves_and_vce_do_not_depend_on_row_order():
    # Tied scores (rounded) and a spiked covariate: shuffling the rows changes no statistic.
    rng = np.random.default_rng(12)
    n = 3000
    score = np.round(rng.random(n), 1)
    label = (rng.random(n) < score).astype(int)
    v = np.where(rng.random(n) < 0.2, 5.0, rng.normal(5, 2, n))
    weight = rng.random(n) + 0.5
    order = rng.permutation(n)
    a = variable_calibration(Predictions.from_arrays(score, label, weight, covariates={"v": v}),
                             "v")
    b = variable_calibration(Predictions.from_arrays(
        score[order], label[order], weight[order], covariates={"v": v[order]}), "v")
    np.testing.assert_allclose(a.gap.fit, b.gap.fit, atol=1e-12)
    np.testing.assert_allclose(a.gap.se, b.gap.se, atol=1e-12)
    np.testing.assert_array_equal(a.gap.thin, b.gap.thin)
    assert (a.vce, a.vce_at) == pytest.approx((b.vce, b.vce_at), abs=1e-12)
    assert a.vce_support == pytest.approx(b.vce_support, rel=1e-12)


# Issue 31: VCE(v*) with its band, v* out of reach of thin support, VECE on zero-inflated columns.


def _zero_inflated_covariate(seed, n=50_000):
    """Calibrated labels; a covariate that is 0 on 95% of rows, lognormal elsewhere."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.05, 0.95, n)
    v = np.where(rng.random(n) < 0.95, 0.0, rng.lognormal(8, 1.5, n))
    w = np.where(rng.random(n) < 0.94, 0.0, rng.lognormal(3, 1.0, n))
    return Predictions.from_arrays(score, rng.random(n) < score, covariates={"v": v, "w": w})


@pytest.mark.parametrize("seed", range(5))
def test_calibrated_zero_inflated_covariate_has_no_significant_vce(seed):
    # Before: VCE(v*) of 3-8 points (6.5 in issue 31), v* at the last point before thin
    # support or at the edge of the data, no interval. Perfect calibration: either VCE(v*) is
    # under 2 points or its band (valid for a v* picked as the largest gap) holds 0.
    result = variable_calibration(_zero_inflated_covariate(seed), "v")
    assert result.vce < 0.02 or not result.vce_significant, (result.vce, result.vce_ci)
    low, high = result.vce_ci
    assert low <= 0 <= high or result.vce < 0.02
    assert abs(result.gap.fit[result.gap.x == result.vce_at][0]) == pytest.approx(result.vce)


@pytest.mark.parametrize("seed", range(3))
def test_shift_in_the_top_three_percent_is_significant_there(seed):
    # Labels 30 points above the score in the top 3% of v: the band excludes 0 and v* lies in
    # that 3%, yet not at the last point before the thin tail (its grid neighbours have support).
    rng = np.random.default_rng(seed)
    n = 50_000
    score = rng.uniform(0.05, 0.65, n)
    v = rng.normal(size=n)
    top = v > np.quantile(v, 0.97)
    pred = Predictions.from_arrays(score, rng.random(n) < score + 0.3 * top,
                                   covariates={"v": v})
    result = variable_calibration(pred, "v")
    assert result.vce_significant
    assert result.vce_ci[0] > 0  # more errors than predicted
    assert result.vce_at > np.quantile(v, 0.97)
    where = int(np.flatnonzero(result.gap.x == result.vce_at)[0])
    assert not result.gap.thin[where - 1 : where + 2].any()
    record = result.record()
    assert record["vce_significant"] is True
    assert record["vce_ci"] == [pytest.approx(c) for c in result.vce_ci]


def test_vece_bins_a_spike_on_its_own_and_zero_inflated_columns_do_not_tie():
    pred = _zero_inflated_covariate(7)
    v = variable_calibration(pred, "v")
    w = variable_calibration(pred, "w")
    # the zeros are one bin (95% of the weight), the other rows ten deciles
    assert v.bin_weight.size == 11
    assert v.bin_weight[-1] == pytest.approx(np.mean(pred.covariates["v"] == 0))
    assert v.vece != w.vece
    # eq. (7) by hand over those bins
    e, e_hat = prediction_errors(pred)
    x = pred.covariates["v"].to_numpy()
    zero = x == 0
    rest = np.sort(x[~zero])
    edges = np.unique(np.quantile(rest, np.linspace(0, 1, 11)))
    bins = np.where(zero, 10, np.clip(np.searchsorted(edges, x, side="left") - 1, 0, 9))
    expected = sum(np.mean(bins == b) * abs(np.mean(e[bins == b]) - np.mean(e_hat[bins == b]))
                   for b in np.unique(bins))
    assert v.vece == pytest.approx(expected, rel=1e-9)


def test_level_vce_band_is_bonferroni_over_the_eligible_levels():
    rng = np.random.default_rng(3)
    n = 20_000
    g = rng.integers(0, 8, n)
    score = rng.uniform(0.05, 0.45, n)
    pred = Predictions.from_arrays(score, rng.random(n) < score + 0.2 * (g == 5),
                                   covariates={"g": pd.Categorical([f"g{k}" for k in g])})
    result = level_calibration(pred, "g")
    assert result.vce_at == "g5"
    assert result.vce_significant
    at = result.levels.index("g5")
    half = (result.gap_upper[at] - result.gap_lower[at]) / 2  # 1.96 se
    z = stats.norm.ppf(1 - 0.025 / int(result.eligible.sum()))
    assert result.vce_ci[1] - result.vce_ci[0] == pytest.approx(2 * half / 1.959964 * z,
                                                                rel=1e-4)


def test_simultaneous_z_is_the_chi_square_root():
    assert simultaneous_z(1.0) == pytest.approx(1.959964, rel=1e-6)
    assert simultaneous_z(3.2) == pytest.approx(np.sqrt(stats.chi2.ppf(0.95, 4)))


# ------------------------------------------------------------------------------------------
# Local errors along a variable: the cumulative statistic (no bandwidth) and the chosen span


def _local_error(seed, n=20_000, top=0.03, shift=0.3):
    """A 30-point miscalibration in the top 3% of v; u is independent of everything."""
    rng = np.random.default_rng(seed)
    v, u = rng.normal(size=n), rng.normal(size=n)
    score = rng.uniform(0.05, 0.65, n)
    truth = np.where(v > np.quantile(v, 1 - top), score + shift, score)
    label = (rng.random(n) < truth).astype(int)
    return Predictions.from_arrays(score, label, covariates={"v": v, "u": u}), v, u, score, label


def test_planted_local_error_p_value_below_0001_calibrated_variable_above_001():
    # 20 seeds: the planted variable's p < 0.001 in every seed we accept at most one miss, and
    # the variable along which nothing changes has p > 0.01 (a constant offset of 0.9 points,
    # the planted error's share of the mean, is not a change along it). The p-value is the
    # cumulative statistic's, which has no bandwidth: a fixed span skips only the curves'
    # cross-validation (half the time), not anything the p-value depends on.
    from mcviz.stats.variables import variable_records

    planted = calibrated = 0
    for seed in range(20):
        pred, *_ = _local_error(seed)
        rows = {row["name"]: row for row in variable_records(pred, span=0.9)}
        planted += rows["v"]["p_value"] < 0.001
        calibrated += rows["u"]["p_value"] > 0.01
    assert planted >= 19, planted
    assert calibrated >= 19, calibrated


def _direct_kuiper_z(x, score, label):
    """Kuiper's D/sigma of the residuals about their mean, ordered by x (no ties), by hand."""
    order = np.argsort(x)
    residual = label[order] - score[order]
    residual = residual - residual.mean()
    path = np.concatenate(([0.0], np.cumsum(residual) / x.size))
    sigma = np.sqrt(np.sum(score * (1 - score))) / x.size  # eq. (5), unweighted
    return (path.max() - path.min()) / sigma


@pytest.mark.parametrize("seed", [0, 1])
def test_kuiper_along_a_variable_against_a_direct_computation(seed):
    pred, v, u, score, label = _local_error(seed, n=3_000)
    for name, x in (("v", v), ("u", u)):
        result = variable_calibration(pred, name, span=0.9)
        assert result.kuiper_z == pytest.approx(_direct_kuiper_z(x, score, label), rel=1e-9)
        # Kuiper's distribution of the bridge's range: 2 sum (4k^2 z^2 - 1) exp(-2 k^2 z^2)
        z = result.kuiper_z
        k = np.arange(1, 200)
        tail = 2 * np.sum((4 * k**2 * z**2 - 1) * np.exp(-2 * k**2 * z**2)) if z > 0.5 else 1
        assert result.p_value == pytest.approx(min(tail, 1.0), abs=1e-9)


def test_local_error_in_the_ranking_comes_before_noise():
    from mcviz.stats.variables import variable_records

    pred, *_ = _local_error(3, n=30_000)
    rows = variable_records(pred)
    assert rows[0]["name"] == "v"
    assert rows[0]["p_adjusted"] == pytest.approx(min(1.0, 2 * rows[0]["p_value"]))


def test_cross_validated_span_narrows_for_a_local_error_and_stays_wide_without_one():
    from mcviz.stats.variable_curves import cross_validated_span

    pred, v, u, score, label = _local_error(0, n=100_000)
    error, predicted = prediction_errors(pred)
    positions = {name: pred.covariates[name].to_numpy() for name in ("v", "u")}
    assert cross_validated_span(positions["v"], error, predicted, None) <= 0.5
    assert cross_validated_span(positions["u"], error, predicted, None) == 0.9
    chosen = variable_calibration(pred, "v")
    assert chosen.span_chosen and chosen.span <= 0.5
    # the narrower span sees more of the 30-point gap than the paper's 0.9
    assert chosen.vce > variable_calibration(pred, "v", span=0.9).vce


def test_centred_cumulative_of_a_constant_offset_is_flat():
    # responses = scores + 0.1 everywhere: the plain path has D = 0.1 along any variable,
    # the centred one (residuals about their mean) D = 0.
    from mcviz import cumulative_differences

    x = np.arange(8.0)
    score = np.linspace(0.1, 0.8, 8)
    pred = Predictions.from_arrays(score, score + 0.1, covariates={"x": x[::-1]},
                                   response="continuous")
    assert cumulative_differences(pred, order_by="x").kuiper == pytest.approx(0.1)
    centred = cumulative_differences(pred, order_by="x", centred=True)
    assert centred.kuiper == pytest.approx(0.0, abs=1e-12)

