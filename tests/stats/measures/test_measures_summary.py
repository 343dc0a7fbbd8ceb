"""classical_measures: every measure at once, its JSON object and its grouped table."""

import json
import re

import numpy as np
import pytest

import mcviz
from mcviz.stats.binning import calibration_metrics
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.measures import (
    JSON_KEYS,
    MEASURE_GROUPS,
    calibration_curve_summary,
    classical_measures,
    hosmer_lemeshow,
    logistic_recalibration,
    score_decomposition,
    smooth_ece,
)

ISSUE_KEYS = [  # issue 17, item 3: the "classical" object of `mcviz metrics --json`
    "ece", "smece", "ici", "e50", "e90", "calibration_intercept", "calibration_slope",
    "oe_ratio", "brier", "brier_miscalibration", "brier_discrimination", "brier_uncertainty",
    "log_loss", "spiegelhalter_z", "hosmer_lemeshow_p",
]


@pytest.fixture(scope="module")
def demo():
    return mcviz.load_demo("adult")


@pytest.fixture(scope="module")
def weighted_subpopulation(demo):
    weight = np.random.default_rng(1).uniform(0.5, 2.0, demo.n)
    pred = Predictions.from_arrays(demo.score, demo.label, weight, covariates=demo.covariates)
    index = np.flatnonzero(pred.covariates["age"].to_numpy() < 35)
    return pred, index


def test_json_has_the_issue_keys_first_and_is_strict_json(demo):
    result = classical_measures(demo).as_json()
    assert list(result)[: len(ISSUE_KEYS)] == ISSUE_KEYS
    assert list(JSON_KEYS) == ISSUE_KEYS
    text = json.dumps(result, allow_nan=False)  # NaN would be invalid JSON
    assert json.loads(text)["n"] == demo.n
    for key in ["calibration_intercept_ci", "calibration_slope_ci", "log_loss_miscalibration",
                "log_loss_discrimination", "log_loss_uncertainty"]:
        assert key in result


def test_values_are_those_of_the_separate_functions(weighted_subpopulation):
    pred, index = weighted_subpopulation
    result = classical_measures(pred, index=index)
    values = result.as_json()
    metrics = calibration_metrics(pred, index=index)
    assert values["ece"] == metrics.ece_equal_width
    assert values["brier"] == metrics.brier
    assert values["log_loss"] == metrics.log_loss
    assert values["spiegelhalter_z"] == metrics.spiegelhalter_z
    assert values["smece"] == smooth_ece(pred, index=index).smece
    recalibration = logistic_recalibration(pred, index=index)
    assert values["calibration_intercept"] == recalibration.intercept
    assert values["calibration_slope_ci"] == [recalibration.slope_low, recalibration.slope_high]
    assert values["oe_ratio"] == recalibration.oe_ratio
    curve = calibration_curve_summary(pred, index=index)
    assert (values["ici"], values["e50"], values["e90"]) == (curve.ici, curve.e50, curve.e90)
    brier = score_decomposition(pred, index=index, score="brier")
    assert values["brier_miscalibration"] == pytest.approx(brier.miscalibration, abs=1e-14)
    log_loss = score_decomposition(pred, index=index, score="log_loss")
    assert values["log_loss_uncertainty"] == pytest.approx(log_loss.uncertainty, abs=1e-14)
    assert values["hosmer_lemeshow_p"] == hosmer_lemeshow(pred, index=index).p_value
    assert values["n"] == index.size
    assert values["weighted"] is True


def test_subpopulation_equals_the_subpopulation_as_its_own_population(weighted_subpopulation):
    pred, index = weighted_subpopulation
    sub = Predictions.from_arrays(pred.score[index], pred.label[index], pred.weight[index])
    a = classical_measures(pred, index=index).as_json()
    b = classical_measures(sub).as_json()
    for key in ISSUE_KEYS:
        assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key


def test_grouped_table(demo):
    frame = classical_measures(demo).to_frame()
    assert list(frame.columns) == ["group", "name", "value", "help"]
    assert tuple(frame["group"].unique()) == MEASURE_GROUPS
    assert frame["name"].is_unique
    assert frame["help"].str.len().gt(10).all()
    assert "\n" not in "".join(frame["help"])
    intercept = frame.set_index("name").loc["calibration intercept"]
    assert intercept["group"] == "overall calibration"
    assert "95% CI" in intercept["help"]
    assert " to " in intercept["help"] and "[" not in intercept["help"]  # the one formatter
    assert not re.search(r"(?<![\w.])-(?=[\d ])", "".join(frame["help"]))  # a true minus


def test_nan_becomes_null():
    # all responses 1: no calibration intercept or slope; the JSON says null
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [1, 1, 1, 1])
    values = classical_measures(pred, hl_groups=4).as_json()
    assert values["calibration_intercept"] is None
    assert values["calibration_slope_ci"] == [None, None]
    json.dumps(values, allow_nan=False)


def test_constant_scores_give_null_curve_summaries():
    pred = Predictions.from_arrays([0.3] * 5, [0, 1, 0, 0, 1])
    values = classical_measures(pred, hl_groups=3).as_json()
    assert values["ici"] is None
    assert values["e90"] is None
    assert values["calibration_slope"] is None
    # intercept with slope 1: logit(2/5) - logit(0.3)
    assert values["calibration_intercept"] == pytest.approx(
        np.log(2 / 3) - np.log(0.3 / 0.7), abs=1e-9
    )
    assert values["smece"] == pytest.approx(0.1, abs=1e-3)  # |0.3 - 0.4| at the one score


def test_validation(demo):
    with pytest.raises(ValidationError, match="hl_groups"):
        classical_measures(demo, hl_groups=2)
    with pytest.raises(ValidationError, match="empty"):
        classical_measures(demo, index=np.zeros(demo.n, dtype=bool))
