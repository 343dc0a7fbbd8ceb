import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions
from mcviz.recalibration import Recalibrator, frame_for_scoring, holdout_split
from mcviz.recalibration.simulate import planted_fix_data


def _pred(n=4000, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < expit(0.3 + 1.5 * logit(s))).astype(int)
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    return Predictions.from_arrays(s, y, w), s, y, w


@pytest.mark.parametrize("weighted", [False, True])
def test_platt_matches_scikit_learn(weighted):
    from sklearn.linear_model import LogisticRegression

    pred, s, y, w = _pred(weighted=weighted)
    fix = Recalibrator("platt").fit(pred)
    ref = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000).fit(
        logit(s)[:, None], y, sample_weight=w)
    assert fix.coefficients == pytest.approx([ref.intercept_[0], ref.coef_[0, 0]], abs=1e-5)


@pytest.mark.parametrize("weighted", [False, True])
def test_beta_matches_betacal(weighted):
    betacal = pytest.importorskip("betacal")
    pred, s, y, w = _pred(seed=1, weighted=weighted)
    fix = Recalibrator("beta").fit(pred)
    ref = betacal.BetaCalibration(parameters="abm").fit(s, y, sample_weight=w)
    np.testing.assert_allclose(fix.transform(pred), ref.predict(pred.score), atol=2e-4)


def test_beta_stays_monotone():
    # responses that fall with the score at the top: a would be negative; it is refitted at 0
    rng = np.random.default_rng(2)
    s = rng.uniform(0.01, 0.99, 3000)
    y = (rng.random(3000) < 0.5 - 0.4 * (s - 0.5) ** 2).astype(int)
    fix = Recalibrator("beta").fit(Predictions.from_arrays(s, y))
    _c, a, b = fix.coefficients
    assert a >= 0
    assert b >= 0
    out = fix.transform(Predictions.from_arrays(np.sort(s), y))
    assert np.all(np.diff(out) >= -1e-12)


def test_isotonic_matches_scikit_learn_on_large_blocks():
    from sklearn.isotonic import IsotonicRegression

    pred, s, y, _ = _pred(n=20_000, seed=3)
    fix = Recalibrator("isotonic").fit(pred)
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    grid = np.linspace(0.1, 0.9, 9)
    # one pseudo-observation per block moves a block of k rows by at most 1/(k + 1)
    np.testing.assert_allclose(
        fix.transform(Predictions.from_arrays(grid, np.zeros(9))), ref.predict(grid), atol=0.02)
    out = fix.transform(pred)
    assert out.min() > 0
    assert out.max() < 1
    assert np.all(np.diff(out) >= 0)


def test_isotonic_does_not_depend_on_the_order_of_tied_rows():
    rng = np.random.default_rng(4)
    s = np.round(rng.random(2000), 1)
    y = (rng.random(2000) < s).astype(int)
    order = rng.permutation(2000)
    a = Recalibrator("isotonic").fit(Predictions.from_arrays(s, y))
    b = Recalibrator("isotonic").fit(Predictions.from_arrays(s[order], y[order]))
    assert a.params == b.params


@pytest.mark.parametrize("method", ["platt", "isotonic", "beta", "findings", "boost"])
def test_the_saved_map_gives_the_same_scores(method):
    if method == "boost":
        pytest.importorskip("lightgbm")
    frame = planted_fix_data(20_000, seed=5)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            weight=False)
    fix = Recalibrator(method, max_rounds=3).fit(pred)
    again = Recalibrator.from_json(fix.to_json())
    np.testing.assert_array_equal(again.transform(pred), fix.transform(pred))
    # scoring a file without labels: the same scores, row for row
    scored = frame_for_scoring(frame.drop(columns=["label", "truth"]), again)
    by_row = np.empty(pred.n)
    by_row[pred.row] = fix.transform(pred)
    out = np.empty(scored.n)
    out[scored.row] = again.transform(scored)
    np.testing.assert_allclose(out, by_row, atol=1e-12)


def test_findings_refuses_unconfirmed_findings():
    frame = planted_fix_data(20_000, seed=6, calibrated=True)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            weight=False)
    from mcviz.search import search_subpopulations

    found = search_subpopulations(pred, n_findings=3).findings
    assert all(f.p_adjusted >= 0.05 for f in found)  # calibrated: nothing confirmed
    with pytest.raises(ValidationError, match="confirmed findings only"):
        Recalibrator("findings", findings=found).fit(pred)
    fix = Recalibrator("findings").fit(pred)  # its own search confirms nothing either
    assert fix.terms == ()
    # each candidate is named with why it got no term (its held-out test, or a band of the
    # score itself) and how it was refined, and the fit says it is the Platt fit alone
    assert any("no finding held up" in note for note in fix.notes), fix.notes
    assert all(note.startswith(("no term for", "no finding held up")) or
               "bounds the scores as fixed so far: it is tested" in note or
               note.endswith(("the group a term fits best on the search rows.",
                              "(the group a term fits best there)."))
               for note in fix.notes), fix.notes


def test_map_from_another_version_or_format_is_refused():
    pred, *_ = _pred(500)
    text = Recalibrator("platt").fit(pred).to_json()
    with pytest.raises(ValidationError, match=r"written by mcviz 0\.0\.1"):
        Recalibrator.from_json(text.replace('"mcviz_version": "', '"mcviz_version": "0.0.1'
                                            '" , "x": "'))
    with pytest.raises(ValidationError, match="not a map"):
        Recalibrator.from_json('{"method": "platt"}')
    with pytest.raises(ValidationError, match="not JSON"):
        Recalibrator.from_json("{")


def test_scoring_needs_the_map_columns():
    frame = planted_fix_data(5000, seed=7)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            weight=False)
    fix = Recalibrator("boost", max_rounds=1).fit(pred)
    with pytest.raises(ValidationError, match="needs column"):
        frame_for_scoring(frame.drop(columns=["age"]), fix)
    with pytest.raises(ValidationError, match="'score'"):
        frame_for_scoring(frame.rename(columns={"score": "p"}), fix)
    with pytest.raises(ValidationError, match="treats it as a number"):
        frame_for_scoring(frame.assign(age="old"), fix)


def test_split_is_stratified_and_independent_of_tied_row_order():
    rng = np.random.default_rng(8)
    s = np.round(rng.random(5000), 2)
    y = (rng.random(5000) < s).astype(int)
    pred = Predictions.from_arrays(s, y, covariates={"c": rng.integers(0, 3, 5000)})
    _fit, held = holdout_split(pred, 0.3, seed=2)
    assert abs(held.size / pred.n - 0.3) < 0.02
    # without ties: of every 20 consecutive rows in score order, 6 are held out, give or take 1
    distinct = Predictions.from_arrays(rng.random(5000), y)
    _, held_distinct = holdout_split(distinct, 0.3, seed=2)
    counts = np.bincount(held_distinct // 20, minlength=distinct.n // 20)
    assert counts.min() >= 5
    assert counts.max() <= 7
    order = rng.permutation(5000)
    shuffled = Predictions.from_arrays(s[order], y[order],
                                       covariates={"c": pred.covariates["c"].to_numpy()[
                                           np.argsort(pred.row)][order]})
    _, held2 = holdout_split(shuffled, 0.3, seed=2)
    key = lambda p, idx: sorted(zip(p.score[idx], p.label[idx],  # noqa: E731
                                    p.covariates["c"].to_numpy()[idx], strict=True))
    assert key(pred, held) == key(shuffled, held2)
    with pytest.raises(ValidationError, match="holdout must be a share"):
        holdout_split(pred, 1.0)


def test_responses_outside_the_unit_interval_are_refused():
    pred = Predictions.from_arrays([0.2, 0.4, 0.6], [0.5, 2.0, 0.1], response="continuous")
    with pytest.raises(ValidationError, match=r"responses in \[0, 1\]"):
        Recalibrator("platt").fit(pred)


def test_unknown_method():
    with pytest.raises(ValidationError, match="method must be one of"):
        Recalibrator("magic")
    assert isinstance(pd.__version__, str)


def test_boost_tree_settings_are_checked_and_saved():
    pytest.importorskip("lightgbm")
    from mcviz.recalibration import MCGRAD_TREES

    with pytest.raises(ValidationError, match="unknown setting"):
        Recalibrator("boost", trees={"leaves": 3})
    frame = planted_fix_data(6000, seed=9)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            weight=False)
    fix = Recalibrator("boost", trees=MCGRAD_TREES, max_rounds=2).fit(pred)
    again = Recalibrator.from_json(fix.to_json())
    assert again.params["trees"]["n_trees"] == 94
    np.testing.assert_array_equal(again.transform(pred), fix.transform(pred))


def test_findings_fix_skips_findings_that_bound_the_pass_score():
    # A bump in the middle of the scores that Platt cannot fix: the search of a pass bounds the
    # scores as fixed so far ("score_recalibrated ≥ ..."), which no term on the input rows can
    # name. Such a finding is noted; it keeps its covariate conditions when it has some, and is
    # left out when it bounds the score alone (it raised "unknown column" on the Adult demo).
    import mcviz

    rng = np.random.default_rng(0)
    n = 20_000
    score = rng.uniform(0.05, 0.95, n)
    level = rng.choice(list("abcd"), n)
    truth = np.clip(score + 0.25 * ((score > 0.4) & (score < 0.6)), 0, 1)
    pred = mcviz.Predictions.from_arrays(
        score, (rng.random(n) < truth).astype(int),
        covariates={"x": rng.normal(size=n), "g": pd.Categorical(level)})
    fix = Recalibrator("findings").fit(pred)
    assert any("score_recalibrated" in note and "bounds the scores as fixed so far" in note
               for note in fix.notes)
    assert all("score_recalibrated" not in term["description"]
               for term in fix.params["terms"])
    assert np.all(np.isfinite(fix.transform(pred)))
