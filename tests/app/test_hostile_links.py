"""Hostile links and text boxes on every page (issue 41, item 2): a message, never a traceback.

The keys come from the link codec itself (:data:`dashboard.links.LINK_KEYS`), so a key added to
the codec is attacked here without editing this file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import links

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 180
PAGES = ("data", "review", "calibration", "variables", "subpopulations", "groupings",
         "screening", "monitor", "fix", "compare", "report")
DEEP = "[" * 1_999


def _open(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(params)
    return at.run()


def _no_traceback(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning).replace("\\", "")  # Markdown escapes


def _errors(at: AppTest) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]


@pytest.mark.parametrize("page", PAGES)
def test_every_key_deep_on_every_page_is_answered_with_messages(page):
    """The reported link (/monitor?...&mseg=[[[[..., 1,999 brackets) on every key at once."""
    at = _open({**{name: DEEP for name in links.LINK_KEYS if name != "page"}, "page": page})
    _no_traceback(at)
    shown = _warnings(at)
    for name in links.JSON_KEYS:
        assert f"link parameter {name} nests" in shown, shown
    assert at.header, "the page drew nothing"


def _chunks(room: int = 400_000) -> list[list[str]]:
    """The keys in groups whose over-limit values fit one query string (Streamlit ignores a
    query string of more than 524,288 characters as a whole)."""
    groups: list[list[str]] = [[]]
    used = 0
    for name, limit in links.LINK_KEYS.items():
        if name == "page":
            continue
        if used + limit > room:
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += limit + 1
    return groups


@pytest.mark.parametrize("page", PAGES)
def test_every_key_over_its_limit_on_every_page_is_refused_by_name(page):
    for group in _chunks():
        at = _open({**{name: "1" * (links.LINK_KEYS[name] + 1) for name in group},
                    "page": page})
        _no_traceback(at)
        shown = _warnings(at)
        for name in group:
            assert f"link parameter {name} has {links.LINK_KEYS[name] + 1:,} characters" in \
                shown, name


def test_a_110_kb_filter_link_shows_a_message_and_not_another_scope():
    expression = "age >= 40 and (" + " or ".join(f"age == {k}" for k in range(9_000)) + ")"
    at = _open({"page": "review", "demo": "adult", "scope": "filter", "filter": expression})
    _no_traceback(at)
    assert "link parameter filter has" in _warnings(at)
    assert at.session_state["w_filter"] != expression[:2_000]


def _fix_page() -> AppTest:
    return _open({"page": "fix", "demo": "adult"})


def test_100_000_thresholds_on_the_fix_page_are_refused_before_parsing():
    at = _fix_page()
    _no_traceback(at)
    typed = ",".join(f"{k / 100_001:.6f}" for k in range(1, 100_001))  # ~900 KB, as reported
    at.text_input(key="w_fix_thresholds").set_value(typed).run()
    _no_traceback(at)
    assert any("at most 2,000 are read" in e for e in _errors(at)), _errors(at)


def test_too_many_monitor_filters_are_refused_with_a_message():
    at = _open({"page": "monitor", "demo": "adult"})
    _no_traceback(at)
    at.text_area(key="w_mon_filters").set_value("\n".join(["age >= 40"] * 201)).run()
    _no_traceback(at)
    assert any("201 lines" in e for e in _errors(at)), _errors(at)


def test_a_budget_refusal_the_fix_page_did_not_catch_is_a_message(monkeypatch):
    """The backstop around every page: the Fix page's decision impact (outside its own try,
    where 10^5 thresholds were refused by a failed allocation) refused by the budget."""
    from dashboard import fixing
    from mcviz import budget

    def refused(*args, **kwargs):
        return budget.check(budget.Estimate("the decision impact", 10**15, 1.0,
                                            "give fewer thresholds"))

    monkeypatch.setattr(fixing, "scope_impact", refused)
    at = _fix_page()
    at.selectbox(key="w_fix_method").set_value("platt")
    at.button(key="fix_run").click().run()
    _no_traceback(at)
    assert any("refused before starting: the decision impact" in e for e in _errors(at)), \
        _errors(at)


def test_a_failed_computation_clears_its_progress_bar_and_stop_button():
    """Monitor: a filter that fails inside the run (raised under the progress bar)."""
    at = _open({"page": "monitor", "demo": "adult"})
    _no_traceback(at)
    at.text_area(key="w_mon_filters").set_value("distance >>= 1000").run()
    _no_traceback(at)
    assert any("filter" in e for e in _errors(at)), _errors(at)
    assert not [b for b in at.button if b.label == "Stop"], [b.label for b in at.button]
    assert not at.get("progress")
