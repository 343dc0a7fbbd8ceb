"""AppTest of the Fix page: fit, judge on held-out rows, the decision curve, fixed scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 240


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.success] + [e.value for e in at.warning]
    return "\n".join(str(p) for p in parts).replace("\\", "").replace("\u2060", "")


def _number(shown: object) -> float:
    """A number as a table shows it (a minus sign, thousands separators)."""
    return float(str(shown).replace("\u2212", "-").replace(",", ""))


def test_fix_page_fits_judges_and_adds_the_fixed_scores():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/fix.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="w_fix_method").set_value("platt")
    at.text_input(key="w_fix_thresholds").set_value("0.2, 0.525")
    at.button(key="fix_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "platt fix" in text
    assert "held-out log loss" in text
    assert "At a threshold of 0.2" in text
    assert "At a threshold of 0.525" in text
    frames = [d.value for d in at.dataframe]
    summary = next(f for f in frames if "held-out statistic" in f.columns)
    assert list(summary["held-out statistic"])[:2] == ["M (multi-calibration metric)", "M/σ₀"]
    # the fix judged as a challenger is (#43): the Compare page's verdict and table, whose
    # Brier scores of A (before) and B (after) are the fix's own held-out ones
    assert "B predicts" in text or "A and B predict equally well" in text
    paired = next(f for f in frames if "95% CI (paired)" in f.columns and "statistic" in f.columns)
    brier = paired[paired["statistic"] == "Brier score"].iloc[0]
    own = summary[summary["held-out statistic"] == "Brier score"].iloc[0]
    assert _number(brier["A"]) == pytest.approx(_number(own["before"]), rel=1e-3)
    assert _number(brier["B"]) == pytest.approx(_number(own["after"]), rel=1e-3)
    # a finding as the scope: the before/after charts and the curve of its rows
    scopes = at.selectbox(key="w_fix_scope").options
    assert scopes[0] == "full population"
    if len(scopes) > 1:
        at.selectbox(key="w_fix_scope").set_value(scopes[1]).run()
        assert not at.exception, [e.value for e in at.exception]
    at.button(key="fix_adopt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/calibration.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="w_score2").value.endswith("_recalibrated")
    assert sum(m.label == "Kuiper D" for m in at.metric) == 2


def test_fix_page_refuses_bad_thresholds():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/fix.py").run()
    at.text_input(key="w_fix_thresholds").set_value("0.2, 1.5").run()
    assert not at.exception
    assert any("thresholds must lie in (0, 1)" in e.value.replace("\\", "") for e in at.error)


def test_the_judged_fix_appears_in_the_review_verdict():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/fix.py").run()
    at.selectbox(key="w_fix_method").set_value("beta")
    at.button(key="fix_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Fix (beta)" in _texts(at)


def test_a_failed_fix_leaves_no_progress_bar_or_stop_button(monkeypatch):
    """#40: after a Fix error the page shows the message, and no progress bar or Stop stays."""
    from dashboard import fixing
    from mcviz.errors import ValidationError

    def refused(*_args, **_options):
        raise ValidationError("planted refusal: the fix cannot run on these rows.")

    monkeypatch.setattr(fixing, "run_fix", refused)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/fix.py").run()
    at.button(key="fix_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("planted refusal" in e.value for e in at.error)
    assert not at.get("progress")
    assert not [b for b in at.button if b.label == "Stop"]
