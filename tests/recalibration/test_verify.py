"""The issue's "done when" on planted data (2 x 10^5 rows) and on calibrated data."""

import numpy as np
import pytest

from mcviz.errors import ValidationError
from mcviz.io import load_predictions
from mcviz.recalibration import Recalibrator, frame_for_scoring, rescored, verify_fix
from mcviz.recalibration.simulate import PLANTED, planted_fix_data
from mcviz.stats.binning import calibration_metrics
from mcviz.stats.multical import multicalibration
from mcviz.subpopulations import Subpopulation, filter_subpopulation, generate_subpopulations

COVARIATES = ["region", "age", "channel", "tenure"]


def _load(frame):
    return load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            covariates=COVARIATES)


@pytest.fixture(scope="module")
def planted():
    return _load(planted_fix_data(200_000, seed=0))


@pytest.mark.parametrize("method", ["findings", "boost"])
def test_fix_removes_the_planted_miscalibration_on_held_out_rows(planted, method):
    if method == "boost":
        pytest.importorskip("lightgbm")
    result = verify_fix(planted, method=method, scopes=PLANTED, seed=0, n_subpopulations=300)
    assert result.n_fit + result.n_eval == planted.n
    assert np.intersect1d(result.fit_index, result.eval_index).size == 0
    assert result.metric_reduction >= 0.5
    for description in PLANTED:
        k = result.findings.index(description)
        assert result.before.findings_kuiper_z[k] > 10  # planted, and found before
        assert result.after.findings_kuiper_z[k] < 3
    assert result.after.log_loss < result.before.log_loss
    assert result.recommended
    assert result.meaningful
    assert f"the {method} fix removes" in result.verdict
    assert "held-out log loss: better" in result.verdict
    payload = result.as_json()
    assert set(payload["before"]) == {"metric", "metric_z", "metric_p", "ece", "smece",
                                      "log_loss", "brier", "findings", "terms"}
    assert payload["recommended"] is True
    if method == "findings":
        assert len(result.recalibrator.terms) >= 2


def _m_and_planted(pred, scores):
    """M over Algorithm-1 subpopulations + the planted ones, and log loss, before and after."""
    family = list(generate_subpopulations(pred, n_subpopulations=300, seed=1).subpopulations[1:])
    family += [filter_subpopulation(pred, d) for d in PLANTED]
    after, position = rescored(pred, scores)
    moved = [Subpopulation(s.id, s.depth, s.conditions, s.description,
                           np.sort(position[s.index])) for s in family]
    return (multicalibration(pred, family).metric, multicalibration(after, moved).metric,
            calibration_metrics(pred).log_loss, calibration_metrics(after).log_loss)


def test_the_saved_map_on_a_fresh_draw_gives_the_same_improvement(planted):
    result = verify_fix(planted, method="findings", seed=0, search=False, n_subpopulations=300)
    fix = Recalibrator.from_json(result.recalibrator.to_json())
    fresh = planted_fix_data(200_000, seed=11)
    scored = frame_for_scoring(fresh.drop(columns=["label", "truth"]), fix)
    scores = np.empty(scored.n)
    scores[scored.row] = fix.transform(scored)
    pred = _load(fresh)  # the same rows with labels; pred.row maps back to the file
    m_before, m_after, ll_before, ll_after = _m_and_planted(pred, scores[pred.row])
    reduction = 1 - m_after / m_before
    assert reduction == pytest.approx(result.metric_reduction, abs=0.1)
    gain = (ll_before - ll_after) / ll_before
    held_gain = (result.before.log_loss - result.after.log_loss) / result.before.log_loss
    assert gain == pytest.approx(held_gain, abs=0.005)


@pytest.mark.parametrize("method", ["platt", "isotonic", "beta", "findings", "boost"])
def test_calibrated_data_show_no_meaningful_change(method):
    if method == "boost":
        pytest.importorskip("lightgbm")
    pred = _load(planted_fix_data(50_000, seed=3, calibrated=True))
    result = verify_fix(pred, method=method, seed=0, search=False, n_subpopulations=200)
    # the data are calibrated: no fix can be better beyond noise; one that fits noise (isotonic's
    # steps) can be worse, and is then not recommended
    assert result.log_loss_change.direction != "better"
    assert f"held-out log loss: {result.log_loss_change.direction}" in result.verdict
    assert result.recommended == (result.log_loss_change.direction != "worse")
    assert abs(result.after.log_loss - result.before.log_loss) < 0.005 * result.before.log_loss
    if method == "findings":  # a term per confirmed finding only (Holm-adjusted p < 0.05); on
        # calibrated data any term is a false confirmation, which the search allows in about 4%
        # of draws (bench_find's calibrated null: 17 of 400), so no draw can promise none; what
        # holds on every draw is the rule, and the held-out check above (no meaningful change)
        assert all(term.p_adjusted < 0.05 for term in result.recalibrator.terms)


def test_scopes_that_select_nothing_are_refused():
    pred = _load(planted_fix_data(5000, seed=4))
    with pytest.raises(ValidationError, match="selects none"):
        verify_fix(pred, method="platt", scopes=["age > 1000"], search=False,
                   n_subpopulations=20)


def test_null_p_of_m_and_progress():
    pred = _load(planted_fix_data(8000, seed=5))
    seen = []
    result = verify_fix(pred, method="platt", null_draws=19, n_subpopulations=50,
                        progress=lambda fraction, text: seen.append(fraction))
    assert result.before.metric_p == pytest.approx(1 / 20)  # planted: no draw reaches it
    assert 0 < result.after.metric_p <= 1
    assert seen[-1] == 1.0
    assert seen == sorted(seen)


@pytest.mark.parametrize("method", ["platt", "isotonic", "findings"])
def test_results_do_not_depend_on_the_order_of_tied_rows(method):
    frame = planted_fix_data(12_000, seed=6).drop(columns="truth")
    frame["score"] = frame["score"].round(2)  # many ties
    shuffled = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    a = verify_fix(_load(frame.assign(truth=0)), method=method, n_subpopulations=50)
    b = verify_fix(_load(shuffled.assign(truth=0)), method=method, n_subpopulations=50)
    assert a.findings == b.findings
    for side in ("before", "after"):
        for name in ("metric", "log_loss", "ece", "brier"):
            assert getattr(getattr(a, side), name) == pytest.approx(
                getattr(getattr(b, side), name), rel=1e-9, abs=1e-12)


def test_a_fix_above_the_budget_is_refused_before_it_starts():
    pred = _load(planted_fix_data(5000, seed=7))
    with pytest.raises(ValidationError, match="refused before starting: the boost fix"):
        verify_fix(pred, method="boost", budget="1MB")
