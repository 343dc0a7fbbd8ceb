"""``mcviz metrics``: the "classical" block, --null-draws and --table (issues 14 and 17)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mcviz.stats.measures import JSON_KEYS

ISSUE_17_KEYS = (
    "ece", "smece", "ici", "e50", "e90", "calibration_intercept", "calibration_slope",
    "oe_ratio", "brier", "brier_miscalibration", "brier_discrimination", "brier_uncertainty",
    "log_loss", "spiegelhalter_z", "hosmer_lemeshow_p",
)


@pytest.fixture
def prediction_file(tmp_path, random_frame):
    path = tmp_path / "pred.csv"
    random_frame(3000, seed=1).to_csv(path, index=False)
    return path


def test_metrics_json_has_the_classical_block(cli, prediction_file):
    run = cli("metrics", prediction_file, "--json")
    assert run.status == 0, run.err
    classical = json.loads(run.out)["classical"]
    assert tuple(classical)[: len(ISSUE_17_KEYS)] == ISSUE_17_KEYS == tuple(JSON_KEYS)
    # the Brier score decomposes as MCB - DSC + UNC
    assert classical["brier"] == pytest.approx(
        classical["brier_miscalibration"] - classical["brier_discrimination"]
        + classical["brier_uncertainty"], abs=1e-12)


def test_null_draws_add_the_null_and_the_adjusted_p_value(cli, prediction_file, tmp_path):
    table_path = tmp_path / "subpopulations.parquet"
    run = cli("metrics", prediction_file, "--covariates", "age,hours,sex", "--subpopulations",
              "30", "--null-draws", "39", "--seed", "3", "--table", table_path, "--json")
    assert run.status == 0, run.err
    block = json.loads(run.out)["multicalibration"]
    null = block["null"]
    assert null["draws"] == 39
    assert null["kind"] == "bernoulli"
    assert set(null) >= {"p_value", "p_value_se", "metric_z_median", "metric_z_q95"}
    # the argmax attains max_k D_k/sigma_k, so its adjusted p-value is the p-value of M
    assert block["argmax"]["p_adjusted"] == pytest.approx(null["p_value"])
    assert 1 / 40 <= null["p_value"] <= 1
    table = pd.read_parquet(table_path)
    assert {"id", "description", "size", "kuiper", "sigma", "kuiper_z", "p_value",
            "p_adjusted"} <= set(table.columns)
    assert len(table) == block["n_subpopulations"] + 1
    # single-step max-T: a larger D/sigma never has a larger adjusted p-value
    ordered = table.sort_values("kuiper_z")
    assert ordered["p_adjusted"].is_monotonic_decreasing
    # the same seed gives the same draws
    again = json.loads(cli("metrics", prediction_file, "--covariates", "age,hours,sex",
                           "--subpopulations", "30", "--null-draws", "39", "--seed", "3",
                           "--json").out)
    assert again["multicalibration"]["null"] == null


def test_table_without_null_draws_says_p_adjusted_is_empty(cli, prediction_file, tmp_path):
    table_path = tmp_path / "subpopulations.csv"
    run = cli("metrics", prediction_file, "--covariates", "age,sex", "--subpopulations", "10",
              "--table", table_path, "--json")
    assert run.status == 0, run.err
    assert "p_adjusted column is empty without --null-draws" in json.loads(run.out)[
        "multicalibration"]["notice"]
    assert pd.read_csv(table_path)["p_adjusted"].isna().all()


def test_table_needs_a_known_extension(cli, prediction_file, tmp_path):
    run = cli("metrics", prediction_file, "--covariates", "age", "--table", tmp_path / "t.xlsx")
    assert run.status == 2
    assert "must end in .csv or .parquet" in run.err


def test_low_prevalence_null_redraws_the_weights(cli, prediction_file):
    run = cli("metrics", prediction_file, "--covariates", "age,sex", "--subpopulations", "10",
              "--weighting", "low-prevalence", "--null-draws", "19", "--json")
    assert run.status == 0, run.err
    assert json.loads(run.out)["multicalibration"]["null"]["weights_redrawn"] is True


def test_real_valued_responses_outside_the_unit_interval_skip_classical(cli, tmp_path):
    frame = pd.DataFrame({"prob": [0.2, 0.4, 0.6, 0.8] * 50,
                          "y": [0.1, 0.5, 1.4, -0.2] * 50})
    path = tmp_path / "real.csv"
    frame.to_csv(path, index=False)
    run = cli("metrics", path, "--response", "continuous", "--json")
    assert run.status == 0, run.err
    assert json.loads(run.out)["classical"] is None
    assert "classical measures not computed" in run.err
