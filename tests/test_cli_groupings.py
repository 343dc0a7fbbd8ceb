"""The `mcviz groupings` command-line contract."""

import json

import numpy as np
import pandas as pd
import pytest

from mcviz.agglomeration import (
    average_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from mcviz.cli import main
from mcviz.io import load_predictions


@pytest.fixture
def prediction_file(tmp_path):
    rng = np.random.default_rng(2)
    n = 600
    score = rng.random(n)
    df = pd.DataFrame(
        {"prob": score, "y": (rng.random(n) < score**1.3).astype(int),
         "age": rng.integers(20, 70, n), "hours": rng.normal(40, 10, n),
         "sex": rng.choice(["f", "m"], n)}
    )
    path = tmp_path / "pred.csv"
    df.to_csv(path, index=False)
    return path


def _run(path, capsys, *extra):
    status = main(["groupings", str(path), "--score", "prob", "--label", "y", "--json", *extra])
    captured = capsys.readouterr()
    return status, captured


def test_score_bins_recover_ece_ace_mce(prediction_file, capsys):
    status, captured = _run(prediction_file, capsys, "--agglomeration", "mean,max")
    assert status == 0
    output = json.loads(captured.out)
    assert set(output) == {"n", "weight_total", "weight", "grouping", "scores", "groups"}
    pred = load_predictions(prediction_file, score="prob", label="y")
    mean, maximum = output["scores"]
    assert mean["value"] == pytest.approx(expected_calibration_error(pred))
    assert maximum["value"] == pytest.approx(maximum_calibration_error(pred))
    assert output["grouping"]["n_groups"] == 10
    status, captured = _run(prediction_file, capsys, "--agglomeration", "mean", "--uniform")
    ace = json.loads(captured.out)["scores"][0]["value"]
    assert ace == pytest.approx(average_calibration_error(pred))


def test_covariate_bins_knn_and_kernel(prediction_file, capsys):
    status, captured = _run(prediction_file, capsys, "--grouping", "covariate-bins",
                            "--columns", "sex,age", "--bins", "3", "--agglomeration", "range")
    assert status == 0
    output = json.loads(captured.out)
    assert output["grouping"]["n_groups"] == 6
    assert output["scores"][0]["kind"] == "fairness"
    status, captured = _run(prediction_file, capsys, "--grouping", "knn", "--covariates",
                            "age,hours", "--k", "50", "--weighting", "proportional",
                            "--rho", "0.05")
    output = json.loads(captured.out)
    assert output["grouping"]["kind"] == "k-NN"
    assert output["grouping"]["overlapping"] is True
    assert output["weight"] == "proportional(ρ=0.05)"
    assert len(output["groups"]) == 20
    assert len(output["scores"]) == 6
    status, captured = _run(prediction_file, capsys, "--grouping", "kernel", "--covariates",
                            "age", "--bandwidth", "0.3", "--max-centres", "100")
    assert status == 0
    assert json.loads(captured.out)["grouping"]["n_groups"] == 100


def test_bad_options_exit_with_status_2(prediction_file, capsys):
    status, captured = _run(prediction_file, capsys, "--grouping", "covariate-bins")
    assert status == 2
    assert "needs --columns" in captured.err
    status, captured = _run(prediction_file, capsys, "--agglomeration", "cvar:2")
    assert status == 2
    assert "alpha must lie in [0, 1]" in captured.err
    status, captured = _run(prediction_file, capsys, "--grouping", "knn", "--k", "5000")
    assert status == 2
    assert "exceeds the number of observations" in captured.err
