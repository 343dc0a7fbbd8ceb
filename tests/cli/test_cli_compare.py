"""``mcviz compare``: the JSON contract of issue 43, the join, the text, and bad input (exit 2)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

MODEL_KEYS = {"score", "calibration", "classical"}
PAIRED_KEYS = {"brier_difference", "log_loss_difference", "ci_low", "ci_high", "kuiper_z",
               "p_value"}
GROUP_KEYS = {"description", "sentence", "share", "effect", "ci_low", "ci_high", "p_adjusted",
              "confirmed", "calibration_a", "calibration_b"}
NET_KEYS = {"thresholds", "a", "b", "difference", "ci_low", "ci_high"}


def _frame(n=8000, seed=0):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 6, n)
    p = rng.uniform(0.1, 0.85, n)
    return pd.DataFrame({
        "id": np.arange(n), "prod": p + 0.15 * (group == 1), "chall": p + 0.15 * (group == 4),
        "y": (rng.random(n) < p).astype(int), "region": [f"r{g}" for g in group],
        "age": rng.integers(18, 90, n)})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("compare")
    frame = _frame()
    both = directory / "both.csv"
    frame.to_csv(both, index=False)
    first = directory / "a.csv"
    frame.drop(columns="chall").to_csv(first, index=False)
    challenger = directory / "b.parquet"
    # 10% of the challenger's rows missing, 50 extra ids, rows shuffled, its score named "prod"
    extra = pd.DataFrame({"id": np.arange(10**6, 10**6 + 50), "chall": 0.5})
    (pd.concat([frame[["id", "chall"]].sample(frac=0.9, random_state=1), extra])
       .rename(columns={"chall": "prod"}).to_parquet(challenger, index=False))
    return both, first, challenger


def test_json_has_the_issues_keys_and_the_planted_groups(cli, files):
    both, _, _ = files
    run = cli("compare", both, "--score", "prod", "--score-b", "chall", "--label", "y",
              "--thresholds", "0.2,0.3", "--json")
    assert run.status == 0, run.err
    out = run.json
    assert out["n"] == 8000
    assert set(out["models"]["a"]) >= MODEL_KEYS
    assert out["models"]["b"]["score"] == "chall"
    assert set(out["paired"]) >= PAIRED_KEYS
    # the planted groups come first, exactly (no noise exclusion of ages: a set of several levels
    # always faces the out-of-fold test, tests/compare/test_models.py), and confirmed
    for item, region in ((out["regressions"][0], "r4"), (out["improvements"][0], "r1")):
        assert item["description"] == f"region == {region}"
        assert item["confirmed"] and item["p_adjusted"] < 0.05
    for item in out["regressions"] + out["improvements"]:
        assert set(item) >= GROUP_KEYS
    assert set(out["net_benefit"]) >= NET_KEYS
    assert out["net_benefit"]["thresholds"] == [0.2, 0.3]
    assert isinstance(out["verdict"], list)
    assert out["verdict"]
    assert out["next_step"]
    # covariates by default: region and age, never the id nor either score
    orders = [p["order_by"] for p in out["paired"]["paths"]]
    assert orders == ["average score", "prod", "chall", "age"]


def test_a_challengers_file_is_joined_on_the_id_and_unmatched_rows_counted(cli, files):
    _, first, challenger = files
    run = cli("compare", first, "--score", "prod", "--label", "y", "--score-b", "prod",
              "--challenger", challenger, "--id", "id", "--json")
    assert run.status == 0, run.err
    out = run.json
    assert out["join"] == {"id": "id", "score_b": "prod_b", "n_a": 8000, "n_b": 7250,
                           "matched": 7200, "unmatched_a": 800, "unmatched_b": 50}
    assert out["n"] == 7200
    assert "800 of 8,000 rows of the first file" in run.err
    assert out["regressions"][0]["description"] == "region == r4"


def test_text_output_has_sentences_and_a_table(cli, files, tmp_path):
    both, _, _ = files
    deck = tmp_path / "compare.pptx"
    run = cli("compare", both, "--score", "prod", "--score-b", "chall", "--label", "y",
              "--findings", "1", "--deck", deck)
    assert run.status == 0, run.err
    for text in ("Next step:", "Brier score", "Regressions", "region == r4",
                 f"slides): {deck}"):
        assert text in run.out
    assert deck.stat().st_size > 0


@pytest.mark.parametrize(("extra", "message"), [
    (("--score-b", "prod"), "--score-b 'prod' is the same column as --score"),
    (("--score-b", "nope"), "--score-b 'nope': no such column"),
    (("--score-b", "chall", "--thresholds", "0.2,1.5"), r"--thresholds must lie in \(0, 1\)"),
    (("--score-b", "chall", "--id", "id"), "--id joins a --challenger file"),
    (("--score-b", "chall", "--covariates", "region,zzz"), "column 'zzz' is missing from the file"),
])
def test_bad_input_exits_2_naming_the_flag(cli, files, extra, message):
    both, _, _ = files
    run = cli("compare", both, "--score", "prod", "--label", "y", *extra, "--json")
    assert run.status == 2
    assert re.search(message, run.err), run.err
    assert "Traceback" not in run.err


def test_one_score_column_exits_2_naming_the_flag(files, capsys):
    from mcviz.cli import main

    both, _, _ = files
    with pytest.raises(SystemExit) as raised:  # argparse's own exit for a missing option
        main(["compare", str(both), "--score", "prod", "--label", "y", "--json"])
    assert raised.value.code == 2
    assert "required: --score-b" in capsys.readouterr().err


def test_a_join_matching_no_rows_exits_2(cli, files, tmp_path):
    _, first, _ = files
    other = tmp_path / "other.csv"
    pd.DataFrame({"id": [-1, -2], "prod": [0.2, 0.3]}).to_csv(other, index=False)
    run = cli("compare", first, "--score", "prod", "--label", "y", "--score-b", "prod",
              "--challenger", other, "--id", "id", "--json")
    assert run.status == 2
    assert "--id 'id': no id of the first file is in the challenger's file" in run.err
