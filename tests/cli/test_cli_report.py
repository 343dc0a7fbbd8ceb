"""`mcviz report --json`: the verdict in words, its next step and one sign per finding."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz.present.verdict import signed_number, stated_direction
from mcviz.subpopulations.words import FILTER_OPERATORS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "present"))
from test_verdict import SYMBOLS, _frame  # noqa: E402  (region r7 moved by the planted shift)


@pytest.mark.parametrize("shift", [0.15, -0.15])
def test_report_json_states_the_next_step_and_one_sign(tmp_path, cli, shift):
    source = tmp_path / "planted.csv"
    _frame(20_000, 1, planted=shift).to_csv(source, index=False)
    run = cli("report", source, "--score", "score", "--label", "y", "--covariates",
              "region,age", "--max-conditions", "2", "--findings", "3", "--json")
    assert run.status == 0, run.err
    out = run.json
    assert isinstance(out["next_step"], str) and out["next_step"].startswith("Open Fix")
    assert not re.search(r"[.!?] [A-Z]", out["next_step"])  # one sentence
    for sentence in out["verdict"]:
        assert not SYMBOLS.search(sentence), sentence
    first = out["findings"][0]
    assert "r7" in first["description"]
    sign = 1 if shift > 0 else -1  # the planted direction: observed - predicted
    assert (first["effect_value"] > 0) == (sign > 0)
    assert first["ci_low"] < first["effect_value"] < first["ci_high"]
    # three significant digits of the same number: within half a unit of the last digit
    assert 100 * first["effect_value"] == pytest.approx(signed_number(first["effect"]), rel=5e-3)
    assert stated_direction(first["sentence"]) == sign
    assert first["sentence"] in out["verdict"]
    for finding in out["findings"]:
        assert not any(op in finding["sentence"] for op in FILTER_OPERATORS)


def test_report_json_says_nothing_to_fix_on_calibrated_rows(tmp_path, cli):
    source = tmp_path / "calibrated.csv"
    _frame(6_000, 2, planted=0.0).to_csv(source, index=False)
    run = cli("report", source, "--score", "score", "--label", "y", "--covariates",
              "region,age", "--max-conditions", "1", "--json")
    assert run.status == 0, run.err
    out = run.json
    assert out["findings"] == []
    # 6,000 rows: the MDE at 5% of the rows exceeds 2 points (mcviz.settings.MATERIAL_GAP)
    assert out["next_step"].startswith("Collect more rows")


def test_report_json_lists_the_confirmed_union_with_the_searchs_numbers(tmp_path, cli):
    """One problem over two groups (issue #42 item 4): the report states the union the search
    offers, with the same members, held-out effect and adjusted p as ``mcviz search --json``."""
    rng = np.random.default_rng(0)  # as tests/search/test_search_union_offer.py plants it
    n = 20_000
    kind, u = rng.integers(0, 5, n), rng.uniform(size=n)
    score = rng.uniform(0.2, 0.8, n)
    truth = score + 0.12 * (kind == 1) + 0.12 * ((u >= 0.6) & (u < 0.8))
    source = tmp_path / "union.csv"
    pd.DataFrame({"score": score, "y": (rng.random(n) < np.clip(truth, 0, 1)).astype(int),
                  "kind": [f"k{k}" for k in kind], "u": u}).to_csv(source, index=False)
    common = ("--score", "score", "--label", "y", "--covariates", "kind,u", "--findings", "3",
              "--json")
    searched = cli("search", source, *common)
    reported = cli("report", source, *common)
    assert searched.status == 0 and reported.status == 0, (searched.err, reported.err)
    offered = [u for u in searched.json["unions"] if u["confirmed"]]
    assert offered, searched.json["findings"]
    union, stated = offered[0], reported.json["unions"][0]
    assert len(reported.json["unions"]) == len(offered)
    assert stated["parts"] == union["parts"] and stated["description"] == union["description"]
    assert stated["effect_value"] == union["mean_residual"] > 0  # more positives than predicted
    assert (stated["ci_low"], stated["ci_high"]) == (union["ci_low"], union["ci_high"])
    assert stated["sentence"] == union["sentence"] and stated["sentence"] in reported.json["verdict"]
    assert 100 * stated["effect_value"] == pytest.approx(signed_number(stated["effect"]), rel=5e-3)
    assert stated_direction(stated["sentence"]) == 1
