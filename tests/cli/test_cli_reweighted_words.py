"""Low-prevalence runs say that the magnitudes come from the reweighting (issue #39 item 8)."""

import json

import numpy as np
import pandas as pd
import pytest

from mcviz import Predictions, cumulative_differences


@pytest.fixture(scope="module")
def rare_file(tmp_path_factory):
    rng = np.random.default_rng(4)
    score = rng.uniform(0.01, 0.2, 5000)
    label = (rng.random(5000) < score).astype(int)  # calibrated, prevalence about 0.1
    path = tmp_path_factory.mktemp("rare") / "rare.csv"
    pd.DataFrame({"prob": score, "y": label}).to_csv(path, index=False)
    return path, score, label


def test_metrics_puts_the_unweighted_d_sigma_beside_and_says_why(cli, rare_file):
    path, score, label = rare_file
    run = cli("metrics", path, "--score", "prob", "--label", "y", "--weighting",
              "low-prevalence", "--json")
    assert run.status == 0, run.err
    calibration = json.loads(run.out)["calibration"]
    # the unweighted D/sigma: eqs. (2), (5) on the rows as given, by the library directly
    plain = cumulative_differences(Predictions.from_arrays(score, label)).kuiper_z
    assert calibration["unweighted_kuiper_z"] == pytest.approx(plain, rel=1e-12)
    # reweighting 1/A ~ 10x makes a calibrated model look far off: the sentence says so
    assert calibration["kuiper_z"] > 10 * plain
    said = next(w for w in calibration["warnings"] if w.startswith("Magnitudes come from"))
    prevalence = label.mean()
    assert f"every positive counts {1 / prevalence:.3g} times" in said
    assert f"D/σ ({calibration['kuiper_z']:.3g})" in said
    assert f"unweighted, D/σ is {plain:.3g}" in said
    assert said in run.err  # and on stderr, where a person reading the table sees it


def test_unweighted_runs_say_nothing_about_reweighting(cli, rare_file):
    path, _, _ = rare_file
    run = cli("metrics", path, "--score", "prob", "--label", "y", "--json")
    calibration = json.loads(run.out)["calibration"]
    assert calibration["unweighted_kuiper_z"] is None
    assert not any("Magnitudes" in w for w in calibration["warnings"])
    assert "Magnitudes" not in run.err
