"""The `mcviz groupings` command-line contract."""

import pytest

from mcviz.stats.agglomeration import (
    average_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from mcviz.stats.groupings import covariate_bins
from mcviz.io import load_predictions


@pytest.fixture
def prediction_file(random_frame, write_csv):
    return write_csv(random_frame(600, 2, power=1.3))


def _run(cli, path, *extra):
    return cli("groupings", path, "--score", "prob", "--label", "y", "--json", *extra)


def test_score_bins_recover_ece_ace_mce(prediction_file, cli):
    done = _run(cli, prediction_file, "--agglomeration", "mean,max")
    assert done.status == 0
    output = done.json
    assert set(output) == {"n", "weight_total", "weight", "grouping", "scores", "groups"}
    pred = load_predictions(prediction_file, score="prob", label="y")
    mean, maximum = output["scores"]
    assert mean["value"] == pytest.approx(expected_calibration_error(pred))
    assert maximum["value"] == pytest.approx(maximum_calibration_error(pred))
    assert output["grouping"]["n_groups"] == 10
    done = _run(cli, prediction_file, "--agglomeration", "mean", "--uniform")
    ace = done.json["scores"][0]["value"]
    assert ace == pytest.approx(average_calibration_error(pred))


def test_covariate_bins_knn_and_kernel(prediction_file, cli):
    done = _run(cli, prediction_file, "--grouping", "covariate-bins",
                            "--columns", "sex,age", "--bins", "3", "--agglomeration", "range")
    assert done.status == 0
    output = done.json
    assert output["grouping"]["n_groups"] == 6
    assert output["scores"][0]["kind"] == "fairness"
    done = _run(cli, prediction_file, "--grouping", "knn", "--covariates",
                            "age,hours", "--k", "50", "--weighting", "proportional",
                            "--rho", "0.05")
    output = done.json
    assert output["grouping"]["kind"] == "k-NN"
    assert output["grouping"]["overlapping"] is True
    assert output["weight"] == "proportional(ρ=0.05)"
    assert len(output["groups"]) == 20
    assert len(output["scores"]) == 6
    done = _run(cli, prediction_file, "--grouping", "kernel", "--covariates",
                            "age", "--bandwidth", "0.3", "--max-centres", "100")
    assert done.status == 0
    assert done.json["grouping"]["n_groups"] == 100


def test_bad_options_exit_with_status_2(prediction_file, cli):
    done = _run(cli, prediction_file, "--grouping", "covariate-bins")
    assert done.status == 2
    assert "needs --columns" in done.err
    done = _run(cli, prediction_file, "--agglomeration", "cvar:2")
    assert done.status == 2
    assert "alpha must lie in [0, 1]" in done.err
    done = _run(cli, prediction_file, "--grouping", "knn", "--k", "5000")
    assert done.status == 2
    assert "exceeds the number of observations" in done.err


def test_options_left_out_take_the_library_defaults(prediction_file, cli):
    done = _run(cli, prediction_file, "--grouping", "covariate-bins", "--columns", "hours")
    assert done.status == 0, done.err
    pred = load_predictions(prediction_file, score="prob", label="y")
    assert done.json["grouping"]["n_groups"] == covariate_bins(pred, "hours").n_groups
    assert done.json["grouping"]["description"] == covariate_bins(pred, "hours").description
