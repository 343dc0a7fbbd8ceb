"""`--weighting` and `--rho` on every subcommand that reads a prediction file."""

import json

import numpy as np
import pandas as pd
import pytest

from mcviz.cli import build_parser, main
from mcviz.cli._common import load_from_arguments


@pytest.fixture
def prediction_file(tmp_path):
    df = pd.DataFrame(
        {"prob": [0.1, 0.25, 0.5, 0.8], "y": [0, 0, 1, 1], "w": [1.0, 2.0, 1.0, 2.0]}
    )
    path = tmp_path / "pred.csv"
    df.to_csv(path, index=False)
    return path


def _load(path, *extra):
    args = build_parser().parse_args(["metrics", str(path), "--score", "prob", "--label", "y",
                                      *extra])
    return load_from_arguments(args)


def test_proportional_weighting_multiplies_the_weight_column(prediction_file):
    pred = _load(prediction_file, "--weight", "w", "--weighting", "proportional")
    # w / S = 1/0.1, 2/0.25, 1/0.5, 2/0.8
    np.testing.assert_allclose(pred.weight, [10.0, 8.0, 2.0, 2.5])
    assert pred.weight_column == "w × proportional"


def test_regularised_proportional_weighting(prediction_file):
    pred = _load(prediction_file, "--weight", "w", "--weighting", "proportional", "--rho", "0.3")
    # w / max(S, 0.3) = 1/0.3, 2/0.3, 1/0.5, 2/0.8
    np.testing.assert_allclose(pred.weight, [1 / 0.3, 2 / 0.3, 2.0, 2.5])
    shifted = _load(prediction_file, "--weight", "w", "--weighting", "proportional-shifted",
                    "--rho", "0.5")
    np.testing.assert_allclose(shifted.weight, [1 / 0.6, 2 / 0.75, 1.0, 2 / 1.3])


def test_low_prevalence_weighting(prediction_file):
    pred = _load(prediction_file, "--weight", "w", "--weighting", "low-prevalence")
    # weighted prevalence A = (1 + 2)/6 = 1/2: positives' weights doubled
    np.testing.assert_allclose(pred.weight, [1.0, 2.0, 2.0, 4.0])


def test_metrics_reports_the_reweighted_total(prediction_file, capsys):
    status = main(["metrics", str(prediction_file), "--score", "prob", "--label", "y",
                   "--weight", "w", "--weighting", "proportional", "--json"])
    assert status == 0
    output = json.loads(capsys.readouterr().out)
    assert output["weight_total"] == pytest.approx(22.5)


def test_rho_without_weighting_and_zero_scores_are_errors(prediction_file, tmp_path, capsys):
    status = main(["metrics", str(prediction_file), "--score", "prob", "--label", "y",
                   "--rho", "0.1"])
    assert status == 2
    assert "--rho applies only with --weighting" in capsys.readouterr().err
    zero = tmp_path / "zero.csv"
    pd.DataFrame({"prob": [0.0, 0.5], "y": [0, 1]}).to_csv(zero, index=False)
    status = main(["metrics", str(zero), "--score", "prob", "--label", "y",
                   "--weighting", "proportional"])
    assert status == 2
    assert "have score 0" in capsys.readouterr().err


def test_unknown_weighting_is_refused_by_the_parser(prediction_file):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["metrics", str(prediction_file), "--weighting", "inverse"])
