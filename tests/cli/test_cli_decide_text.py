"""``mcviz decide`` without ``--json``: sentences and compact tables, not a key=value dump."""

import json
import re

import pytest

from mcviz.recalibration.simulate import planted_fix_data


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("decide") / "pred.parquet"
    planted_fix_data(8_000, seed=1).drop(columns="truth").to_parquet(path, index=False)
    return path


def test_decide_text_without_the_fix(cli, planted_file):
    run = cli("decide", planted_file, "--thresholds", "0.2,0.5", "--no-fix")
    assert run.status == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].startswith("Net benefit on all 8,000 rows")
    said = [line for line in lines if line.startswith("- at t = ")]
    assert [line.split()[4] for line in said] == ["0.2", "0.5"]
    # the sentence and the table carry the JSON's numbers
    data = json.loads(cli("decide", planted_file, "--thresholds", "0.2,0.5", "--no-fix",
                          "--json").out)
    model = data["net_benefit"]["model"][0]
    assert f"net benefit is {model:.4f}" in said[0]
    everyone = data["net_benefit"]["treat_all"][0]
    assert ("not above" in said[0]) == (model <= max(everyone, 0.0))
    header = next(line for line in lines if line.startswith("threshold"))
    assert header.split() == ["threshold", "model", "treat", "all", "treat", "none"]
    assert not re.search(r"\w=\S", run.out)  # no key=value dump


def test_decide_text_with_the_fix_has_the_verdict_and_the_cost_in_words(cli, planted_file):
    run = cli("decide", planted_file, "--thresholds", "0.3", "--bootstrap", "50")
    assert run.status == 0, run.err
    out = run.out
    assert "fix, fitted on " in out
    assert "judged on the other " in out
    # the held-out sentences of mcviz.decision.impact, one per threshold
    assert "- At a threshold of 0.3, " in out
    # one for all held-out rows (before the first finding's block), one per finding
    first_block = out.find("(held-out rows):")
    assert "- At a threshold of 0.3, " in (out if first_block < 0 else out[:first_block])
    assert out.count("- At a threshold of 0.3, ") == 1 + out.count("(held-out rows):")
    assert "loss per 1,000" in out
    assert not re.search(r"\w=\S", out)
