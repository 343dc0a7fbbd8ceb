"""The Compare page's services (dashboard.comparing): words, tables, Review, link values."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dashboard import comparing
from dashboard import state as s
from dashboard.state import ColumnMapping
from mcviz import Predictions, ValidationError
from mcviz.settings import CompareSettings


@pytest.fixture(scope="module")
def result():
    """B over-predicts by 0.15 in group g4 (a regression) and fixes A's error in g1."""
    rng = np.random.default_rng(5)
    n = 10_000
    group = rng.integers(0, 6, n)
    p = rng.uniform(0.1, 0.85, n)
    label = (rng.random(n) < p).astype(int)
    pred = Predictions.from_arrays(p + 0.15 * (group == 1), label,
                                   covariates={"group": [f"g{g}" for g in group]})
    request = comparing.CompareRequest("challenger", (0.3,), CompareSettings())
    return comparing.run_comparison(pred, p + 0.15 * (group == 4), **request.options())


def test_groups_table_reads_each_group(result):
    table = comparing.groups_table(result.regressions)
    first = result.regressions[0]
    assert first.description == "group == g4"
    assert table.loc[0, "group"] == "group is g4" == first.group  # people read words (#40)
    assert first.effect > 0
    assert table.loc[0, "loss B − A (95% CI)"] == (
        f"{first.effect:+.4f} ({first.ci_low:+.4f} to {first.ci_high:+.4f})".replace("-", "−"))
    assert table.loc[0, "B: gap"] == pytest.approx(100 * first.calibration_b)
    assert table.loc[0, "adjusted p"].endswith(", confirmed")
    assert set(table.columns) == set(comparing.GROUP_HELP)  # every header has its help
    # the table fits the page's 978-px column (#40: it ran 1,108 px wide)
    from dashboard.tables import content_widths, formatted
    assert sum(content_widths(formatted(table, percent=("share",))).values()) <= 978


def test_verdict_lines_follow_the_intervals(result):
    lines = comparing.verdict_lines(result)
    worse = [line for line in lines
             if line.text.startswith("B predicts worse than A for group is g4")]
    better = [line for line in lines
              if line.text.startswith("B predicts better than A for group is g1")]
    assert [line.kind for line in worse] == ["bad"]
    assert [line.kind for line in better] == ["good"]
    assert "percentage points" in worse[0].text
    assert "adjusted p" in worse[0].help  # statistics on hover
    net = result.net_benefit
    decision = next(line for line in lines if line.text.startswith("At a threshold of 0.3"))
    significant = net.ci_low[0] > 0 or net.ci_high[0] < 0
    assert ("within chance" in decision.text) == (not significant and net.changed[0] > 0)


def test_the_verdict_is_one_set_of_words_with_the_statistics_on_hover(result):
    # #40: the page's lines are the verdict the report, the JSON and the deck print, and no
    # sentence carries a statistic (a Brier value, D/σ, a p-value); each line's help does
    lines = comparing.verdict_lines(result)
    assert [line.text for line in lines] == list(result.verdict)
    for line in lines:
        assert not re.search(r"D/σ|\bp [=<]|p-value|\d\.\d{4}|95% CI", line.text), line.text
        assert line.help
    assert "Brier score B" in lines[0].help
    assert "D/σ" in lines[1].help
    assert "D/σ" in lines[2].help


def test_net_benefit_table_is_per_1000_decisions(result):
    table = comparing.net_benefit_table(result)
    net = result.net_benefit
    assert table.loc[0, "B − A per 1,000"] == pytest.approx(1000 * net.difference[0])
    assert table.loc[0, "A per 1,000"] == pytest.approx(1000 * net.a[0])


def test_review_state_opens_the_group_as_a_filter(result):
    state = comparing.review_state(result.regressions[0])
    assert state == {s.W_SCOPE: "filter", s.W_FILTER: "group == g4", s.W_REVIEW_B: ""}
    both = comparing.review_state(result.regressions[0], "score_b")  # B is a data column
    assert both[s.W_REVIEW_B] == "score_b"


def test_review_shows_b_only_when_it_is_a_column_of_the_data():
    columns = ["p", "q", "y"]
    assert comparing.review_b_column({}, columns, "p") == (None, None)
    assert comparing.review_b_column({s.W_REVIEW_B: "q"}, columns, "p") == ("q", None)
    assert comparing.review_b_column({s.W_REVIEW_B: "p"}, columns, "p") == (None, None)
    name, problem = comparing.review_b_column({s.W_REVIEW_B: "x\u202e" * 50}, columns, "p")
    assert name is None
    assert "is not a column of this data" in problem
    assert len(problem) < 400  # a long name from a link is cut
    assert "\u202e" not in problem  # its bidi control is shown, not acted on


def test_widget_values_read_link_text_and_fall_back():
    values, messages = comparing.widget_values({s.W_CMP_FINDINGS: "4", s.W_CMP_SEED: "x",
                                                s.W_CMP_HOLDOUT: 0.5})
    assert values == {s.W_CMP_FINDINGS: 4, s.W_CMP_HOLDOUT: 0.5, s.W_CMP_SEED: 0}
    assert len(messages) == 1
    assert "cseed='x'" in messages[0]


def test_request_refuses_bad_thresholds():
    with pytest.raises(ValidationError, match=r"Decision thresholds must lie in \(0, 1\)"):
        comparing.request_from_state({s.W_CMP_THRESHOLDS: "0.2, 2"}, "b")


def test_command_line_gives_the_same_request():
    request = comparing.CompareRequest("b col", (0.1, 0.3), CompareSettings(n_findings=2))
    line = comparing.command_line(ColumnMapping(score="a", label="y"), request)
    assert line == ("mcviz compare FILE --score a --label y --score-b 'b col' --thresholds "
                    "0.1,0.3 --findings 2 --json")


def test_score_b_options_are_probability_columns():
    frame = pd.DataFrame({"a": [0.2, 0.5], "b": [0.1, 0.7], "y": [0, 1], "n": [3, 9],
                          "t": ["x", "y"]})
    assert comparing.score_b_options(frame, ("a", "y")) == ["b"]
