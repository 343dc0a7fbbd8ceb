"""The `mcviz variables` and `mcviz lcs` command-line contracts."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mcviz.cli import main


@pytest.fixture
def prediction_file(tmp_path):
    rng = np.random.default_rng(2)
    n = 1500
    score = rng.random(n)
    age = rng.integers(20, 80, n)
    truth = np.where(age > 60, 0.5, score)
    frame = pd.DataFrame({
        "prob": score, "y": (rng.random(n) < truth).astype(int), "age": age,
        "hours": rng.normal(40, 8, n), "sector": rng.choice(["a", "b", "c"], n),
    })
    path = tmp_path / "pred.csv"
    frame.to_csv(path, index=False)
    return path


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_variables_json(prediction_file, capsys):
    output = run_json(capsys, "variables", str(prediction_file), "--score", "prob",
                      "--label", "y")
    assert set(output) == {"variables"}
    rows = output["variables"]
    assert next(row["name"] for row in rows) == "age"
    assert {row["name"] for row in rows} == {"age", "hours", "sector"}
    for row in rows:
        assert set(row) == {"name", "kind", "vece", "vce", "vce_at", "vce_support", "vce_ci",
                            "vce_significant", "kuiper_z", "p_value", "p_adjusted", "span",
                            "span_chosen", "n", "spikes", "warnings"}
        if row["kind"] == "ordinal":  # the cumulative statistic along it; a chosen span
            assert row["kuiper_z"] > 0
            assert 0 <= row["p_value"] <= row["p_adjusted"] <= 1
            assert row["span_chosen"] is True
            assert row["span"] in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
        else:
            assert row["kuiper_z"] is None and row["p_value"] is None
        assert isinstance(row["vce_significant"], bool)
        low, high = row["vce_ci"]
        assert low <= high
        assert row["vce_significant"] == (low > 0 or high < 0)
        assert 0 <= row["vece"] <= 1
        assert 0 <= row["vce"] <= 1
        assert isinstance(row["warnings"], list)
        assert 0 < row["vce_support"] <= row["n"]  # unweighted: rows within the window at v*
    # evidence first (a VCE band excluding 0 or p_adjusted < 0.05), then VECE within each group
    evidence = [row["vce_significant"] or (row["p_adjusted"] or 1) < 0.05 for row in rows]
    assert evidence == sorted(evidence, reverse=True)
    for flag in (True, False):
        group = [row["vece"] for row, e in zip(rows, evidence, strict=True) if e == flag]
        assert group == sorted(group, reverse=True)
    kinds = {row["name"]: row["kind"] for row in rows}
    assert kinds == {"age": "ordinal", "hours": "ordinal", "sector": "nominal"}
    assert next(r for r in rows if r["name"] == "sector")["vce_at"] in {"a", "b", "c"}


def test_variables_span_option(prediction_file, capsys):
    wide = run_json(capsys, "variables", str(prediction_file), "--score", "prob", "--label", "y",
                    "--span", "0.9")
    auto = run_json(capsys, "variables", str(prediction_file), "--score", "prob", "--label", "y",
                    "--span", "auto")
    assert auto == run_json(capsys, "variables", str(prediction_file), "--score", "prob",
                            "--label", "y")  # auto is the default
    assert {r["span_chosen"] for r in wide["variables"]} == {False}
    narrow = run_json(capsys, "variables", str(prediction_file), "--score", "prob",
                      "--label", "y", "--span", "0.3")
    age = [next(r for r in o["variables"] if r["name"] == "age") for o in (wide, narrow)]
    assert age[0]["vece"] == age[1]["vece"]  # VECE does not depend on the span
    assert age[0]["vce"] != age[1]["vce"]


def test_lcs_json(prediction_file, capsys):
    output = run_json(capsys, "lcs", str(prediction_file), "--score", "prob", "--label", "y")
    assert set(output) == {"lcs", "k", "grid_points"}
    assert output["k"] == 225  # floor(0.15 * 1500)
    assert 0 < output["grid_points"] <= 100
    assert 0 <= output["lcs"] < 1


def test_variables_table(prediction_file, capsys):
    assert main(["variables", str(prediction_file), "--score", "prob", "--label", "y"]) == 0
    assert "vece=" in capsys.readouterr().out


def test_bad_span_exits_2_with_message(prediction_file):
    completed = subprocess.run(
        [sys.executable, "-m", "mcviz", "variables", str(prediction_file), "--score", "prob",
         "--label", "y", "--span", "0.1", "--json"],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 2
    assert "span must lie in [0.3, 1]" in completed.stderr
    assert "Traceback" not in completed.stderr
    completed = subprocess.run(
        [sys.executable, "-m", "mcviz", "variables", str(prediction_file), "--span", "wide"],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 2
    assert "--span 'wide': give a number from 0.3 to 1, or 'auto'" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_nominal_flag_reads_integer_codes_as_levels(prediction_file, capsys):
    rows = run_json(capsys, "variables", str(prediction_file), "--score", "prob", "--label", "y",
                    "--nominal", "age")["variables"]
    age = next(r for r in rows if r["name"] == "age")
    assert age["kind"] == "nominal"
    assert age["kuiper_z"] is None
    completed = subprocess.run(
        [sys.executable, "-m", "mcviz", "metrics", str(prediction_file), "--score", "prob",
         "--label", "y", "--nominal", "nope"], capture_output=True, text=True, check=False)
    assert completed.returncode == 2
    assert "nope" in completed.stderr and "Traceback" not in completed.stderr
