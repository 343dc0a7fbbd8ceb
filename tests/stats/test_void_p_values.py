"""Void means void (issue 31): label-dependent weights null every Brownian and classical p."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import mcviz
from mcviz.cli import main
from mcviz.io import VOID_P_VALUES
from mcviz.stats.measures import classical_measures
from mcviz.stats.weighting import reweight


def calibrated_low_prevalence(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.01, 0.1, n)
    label = (rng.random(n) < score).astype(int)  # perfectly calibrated by construction
    return pd.DataFrame({"score": score, "label": label, "x": rng.normal(size=n)})


def test_library_results_carry_nan_p_values():
    frame = calibrated_low_prevalence()
    pred = mcviz.Predictions.from_arrays(frame["score"], frame["label"],
                                         covariates={"x": frame["x"]})
    assert not pred.weights_depend_on_label
    assert np.isfinite(mcviz.cumulative_differences(pred).p_value)
    weighted = reweight(pred, "low-prevalence")
    assert weighted.weights_depend_on_label
    assert not reweight(pred, "proportional").weights_depend_on_label
    # the statistic still says "miscalibrated" by a wide margin: its Brownian p would be ~0
    cumulative = mcviz.cumulative_differences(weighted)
    assert cumulative.kuiper_z > 10
    assert np.isnan(cumulative.p_value)
    subs = mcviz.generate_subpopulations(weighted, n_subpopulations=20, min_size=50, seed=0)
    assert np.all(np.isnan(mcviz.multicalibration(weighted, subs).p_value))
    deviation = mcviz.subpopulation_deviation(weighted, subs.subpopulations[1].index)
    assert np.isnan(deviation.p_value)
    measures = classical_measures(weighted)
    assert np.isnan(measures.metrics.spiegelhalter_p)
    assert np.isnan(measures.hosmer_lemeshow.p_value)
    table = measures.to_frame()
    assert VOID_P_VALUES in " ".join(table["help"])


def test_json_nulls_the_p_values_and_says_why(tmp_path, capsys):
    path = tmp_path / "low.csv"
    calibrated_low_prevalence().to_csv(path, index=False)
    assert main(["metrics", str(path), "--weighting", "low-prevalence", "--json"]) == 0
    captured = capsys.readouterr()
    output = json.loads(captured.out)
    calibration = output["calibration"]
    assert calibration["p_value"] is None
    assert calibration["p_value_kind"] is None
    # the void p-values, and (#39) that the magnitudes come from the reweighting
    assert len(calibration["warnings"]) == 2
    void = [w for w in calibration["warnings"] if VOID_P_VALUES in w]
    assert len(void) == 1
    assert "low-prevalence" in void[0]
    assert any("Magnitudes come from the low-prevalence reweighting" in w
               for w in calibration["warnings"])
    assert output["classical"]["hosmer_lemeshow_p"] is None
    assert output["classical"]["spiegelhalter_p"] is None
    assert VOID_P_VALUES in captured.err
    # with null draws, their Monte-Carlo p of the full population takes the void one's place
    # (the model is calibrated: the draws do not call it miscalibrated)
    table = tmp_path / "subs.csv"
    assert main(["metrics", str(path), "--weighting", "low-prevalence", "--json",
                 "--null-draws", "99", "--subpopulations", "20", "--table", str(table)]) == 0
    output = json.loads(capsys.readouterr().out)
    calibration = output["calibration"]
    assert calibration["p_value_kind"] == "monte-carlo"
    assert calibration["p_value"] == output["multicalibration"]["null"][
        "full_population_p_value"]
    assert calibration["p_value"] > 0.05
    assert calibration["warnings"]  # still said
    rows = pd.read_csv(table)
    assert rows["p_value"].isna().all()
    assert rows["p_adjusted"].notna().all()


def test_unweighted_json_keeps_its_brownian_p(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    calibrated_low_prevalence().to_csv(path, index=False)
    assert main(["metrics", str(path), "--json"]) == 0
    calibration = json.loads(capsys.readouterr().out)["calibration"]
    assert calibration["p_value"] == pytest.approx(
        mcviz.brownian_range_sf(calibration["kuiper_z"]))
    assert calibration["warnings"] == []


def test_search_sentence_says_a_void_p_value():
    # the search sets its held-out p-values to NaN with label-dependent weights (on such data
    # it reports no finding today: "no subpopulation met the size limit"); the sentence of a
    # finding then says why instead of "adjusted p = nan"
    from mcviz.search._confirm import sentence

    text = sentence("g is 2", size=100, share=0.1, effect=0.05, low=0.01, high=0.09,
                    predicted=0.25, observed=0.3, confirmed=False, p_kind="void", binary=True)
    assert VOID_P_VALUES in text
    assert "nan" not in text
