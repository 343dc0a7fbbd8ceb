"""`mcviz report --json`: the verdict in words, its next step and one sign per finding."""

from __future__ import annotations

import re
import sys
from pathlib import Path

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
