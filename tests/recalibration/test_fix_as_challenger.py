"""A fix is judged as a challenger is (#43): verify_fix's comparison = compare_models' own."""

import numpy as np
import pytest

from mcviz import compare_models
from mcviz.io import load_predictions
from mcviz.recalibration import verify_fix
from mcviz.recalibration.simulate import planted_fix_data
from mcviz.settings import DEFAULT_THRESHOLDS

COVARIATES = ["region", "age", "channel", "tenure"]


@pytest.fixture(scope="module")
def fixed():
    frame = planted_fix_data(40_000, seed=3).drop(columns="truth")
    pred = load_predictions(frame, score="score", label="label", covariates=COVARIATES)
    return verify_fix(pred, method="platt", seed=0, n_subpopulations=100)


def test_the_fix_result_carries_compare_models_numbers_on_the_held_out_rows(fixed):
    judged = fixed.comparison
    assert judged is not None
    # the same rows read the way a user would compare two score columns of one file
    rows = fixed.eval_before
    frame = rows.covariates[COVARIATES].copy()
    frame["score"], frame["label"] = rows.score, rows.label
    frame["score_recalibrated"] = fixed.eval_after.score[fixed.eval_position]
    pred = load_predictions(frame, score="score", label="label",
                            covariates=[*COVARIATES, "score_recalibrated"])
    own = compare_models(pred, "score_recalibrated", covariates=COVARIATES, seed=0,
                         thresholds=DEFAULT_THRESHOLDS)
    assert judged.n == own.n == fixed.n_eval
    for name in ("brier", "log_loss"):
        mine, theirs = getattr(judged, name), getattr(own, name)
        for field in ("a", "b", "difference", "ci_low", "ci_high"):
            assert getattr(mine, field) == pytest.approx(getattr(theirs, field), rel=1e-12,
                                                         abs=1e-15), (name, field)
    for field in ("a", "b", "difference", "ci_low", "ci_high", "changed"):
        np.testing.assert_allclose(getattr(judged.net_benefit, field),
                                   getattr(own.net_benefit, field), rtol=1e-12, atol=1e-15)
    for mine, theirs in zip(judged.paths, own.paths, strict=True):
        assert mine.order_by == theirs.order_by
        assert (mine.kuiper, mine.sigma) == pytest.approx((theirs.kuiper, theirs.sigma),
                                                          rel=1e-12)
    for side in ("regressions", "improvements"):
        mine, theirs = getattr(judged, side), getattr(own, side)
        assert [f.description for f in mine] == [f.description for f in theirs]
        assert [f.effect for f in mine] == pytest.approx([f.effect for f in theirs], rel=1e-12)
        assert [f.p_adjusted for f in mine] == pytest.approx([f.p_adjusted for f in theirs],
                                                             rel=1e-9)
    # one truth with the fix's own before/after: the same Brier scores of the same rows
    assert judged.brier.a == pytest.approx(fixed.before.brier, rel=1e-9)
    assert judged.brier.b == pytest.approx(fixed.after.brier, rel=1e-9)
    payload = fixed.as_json()["comparison"]
    assert payload["paired"]["brier_difference"] == judged.brier.difference
    assert payload["models"]["b"]["score"] == "score_recalibrated"


def test_the_comparison_can_be_left_out():
    frame = planted_fix_data(6_000, seed=4).drop(columns="truth")
    pred = load_predictions(frame, score="score", label="label", covariates=COVARIATES)
    result = verify_fix(pred, method="platt", seed=0, n_subpopulations=50, compare=False,
                        search=False)
    assert result.comparison is None
    assert result.as_json()["comparison"] is None
