"""The Review page's verdict of a group bounded by the score alone: by its own calibration."""

from __future__ import annotations

import sys
from pathlib import Path

from mcviz.io import load_predictions

sys.path.insert(0, str(Path(__file__).parents[1] / "present"))
from test_score_alone import DEVIATION, _frame  # noqa: E402  (8 points off below 0.4)


def test_a_score_filter_on_the_review_is_judged_by_its_own_calibration():
    # the deviation said "calibrated like the full population" of a group 8 points off
    from dashboard.review import scope_verdict
    from dashboard.runs import resolve_scope
    from mcviz.present.review import review_results

    pred = load_predictions(_frame(20_000, 1), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    verdict_of = {}
    for expression in ("score < 0.4", "region == r3"):
        scope = resolve_scope(pred, "filter", expression=expression)
        results = review_results(pred, scope.subpopulation, variable="age", bins=(10,))
        verdict_of[expression] = scope_verdict(pred, results, (), scope=scope)
    alone = verdict_of["score < 0.4"]
    assert "is miscalibrated beyond chance" in alone.sentences[0], alone.sentences[0]
    assert "like the full population" not in alone.sentences[0]
    assert alone.details[0].startswith("Own calibration (Tygert; bounded by the model's score")
    covariate = verdict_of["region == r3"]  # a covariate's group keeps its deviation
    assert covariate.details[0].startswith(DEVIATION)
