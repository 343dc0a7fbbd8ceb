"""The `mcviz deviation` command-line contract."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mcviz.cli import main
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.io import Predictions

KEYS = {"n", "n_subpopulation", "kuiper", "ks", "sigma", "kuiper_z", "ks_z", "p_value"}


@pytest.fixture
def prediction_file(tmp_path):
    rng = np.random.default_rng(7)
    n = 600
    score = rng.random(n)
    df = pd.DataFrame(
        {
            "prob": score,
            "y": (rng.random(n) < score).astype(int),
            "age": rng.integers(20, 70, n),
            "sex": rng.choice(["Female", "Male"], n),
        }
    )
    path = tmp_path / "pred.csv"
    df.to_csv(path, index=False)
    return path, df


def test_deviation_json_keys_and_values(prediction_file, capsys):
    path, df = prediction_file
    code = main(["deviation", str(path), "--score", "prob", "--label", "y",
                 "--subpopulation", 'age >= 40 and sex == "Female"', "--json"])
    assert code == 0
    output = json.loads(capsys.readouterr().out)
    assert set(output) == KEYS
    assert output["n"] == 600
    mask = (df["age"] >= 40) & (df["sex"] == "Female")
    assert output["n_subpopulation"] == int(mask.sum())
    # The same numbers as the library on the same rows.
    pred = Predictions.from_arrays(df["prob"], df["y"], covariates={"m": mask.astype(float)})
    expected = subpopulation_deviation(pred, pred.covariates["m"].to_numpy() == 1.0)
    assert output["kuiper"] == pytest.approx(expected.kuiper)
    assert output["ks"] == pytest.approx(expected.ks)
    assert output["sigma"] == pytest.approx(expected.sigma)
    assert output["kuiper_z"] == pytest.approx(output["kuiper"] / output["sigma"])
    assert output["ks_z"] == pytest.approx(output["ks"] / output["sigma"])
    assert 0 <= output["p_value"] <= 1


def test_deviation_table(prediction_file, capsys):
    path, _ = prediction_file
    assert main(["deviation", str(path), "--subpopulation", "age < 30"]) == 0
    text = capsys.readouterr().out
    assert "n_subpopulation" in text
    assert "kuiper_z" in text


def test_empty_subpopulation_exits_2(prediction_file, capsys):
    path, _ = prediction_file
    assert main(["deviation", str(path), "--subpopulation", "age > 1000", "--json"]) == 2
    assert "selects no rows" in capsys.readouterr().err


def test_bad_expression_exits_2_without_traceback(prediction_file):
    path, _ = prediction_file
    completed = subprocess.run(
        [sys.executable, "-m", "mcviz", "deviation", str(path), "--subpopulation",
         "height >= 2", "--json"],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 2
    assert "height" in completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stdout == ""
