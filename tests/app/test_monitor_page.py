"""AppTest of the Monitor page: the dated demo on a fresh session, a cell opened in Review."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 240


def _monitor() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/monitor.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_fresh_session_shows_the_dated_demo_with_alarms_and_opens_review():
    at = _monitor()
    # the default data (Adult) has no time: the page says so and monitors the flights demo
    assert any("NYC flights 2013" in i.value for i in at.info)
    shown = _metrics(at)
    assert shown["Periods"] == "53"  # weeks of 2013, Monday 2012-12-31 to Monday 2013-12-30
    alarms, total = (int(v) for v in re.findall(r"\d+", shown["Alarms"]))
    assert total == 20  # the full population, 16 carriers, 3 airports
    assert 1 <= alarms <= total
    assert len(at.get("plotly_chart")) == 2  # the heat map and the chosen series
    assert "first alarm in the week of" in at.markdown[0].value or any(
        "first alarm in the week of" in m.value for m in at.markdown)
    assert at.query_params["mseg"] == '["carrier","origin"]'
    at.button[[b.label for b in at.button].index("Open in Review")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["w_scope"] == "filter"
    assert "departure >= 2013-" in at.session_state["w_filter"]
    assert at.query_params["demo"] == "flights"
    assert at.query_params["page"] == "review"
    # the window was picked on the heat map: Review judges it by the monitor's adjusted p (#40)
    assert at.session_state["monitor_picked"][1] == at.session_state["w_filter"].strip()
    assert re.fullmatch(r"\d+-20", at.query_params["mpick"])  # the link says Monitor picked it
    fresh = AppTest.from_file(APP, default_timeout=TIMEOUT)  # a colleague opens the link
    fresh.query_params.update({k: at.query_params[k] for k in at.query_params})
    fresh.run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    said = " ".join(m.value for m in fresh.markdown).replace("\\", "")
    assert "picked on the Monitor heat map" in said and "not yet tested against chance" in said
    assert "beyond chance" not in said.split("Next step")[0]  # never by its own p


def test_a_bad_reference_is_explained_on_the_page():
    at = _monitor()
    at.text_input(key="w_mon_reference").set_value("2030-01-01").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("covers every period" in e.value for e in at.error)


def test_monthly_periods_and_a_filter_segment():
    at = _monitor()
    at.selectbox(key="w_mon_period").set_value("month").run()
    at.text_area(key="w_mon_filters").set_value("distance >= 1000").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _metrics(at)
    assert shown["Periods"] == "12"
    assert shown["Alarms"].endswith("of 21")
    table = at.dataframe[0].value
    assert "distance 1,000 or more" in set(table["series"])  # in words (#40)
    full = table[table["series"] == "full population"].iloc[0]  # points, as the sentence says
    assert full["shift (points)"].lstrip("+−").replace(".", "").isdigit()
    assert " to " in full["95% interval (points)"]


def test_the_report_carries_the_monitor_of_the_same_data():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.selectbox(key="w_demo").set_value("flights").run()
    at.switch_page("pages/monitor.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("NYC flights 2013" in i.value for i in at.info)  # its own data: no notice
    at.switch_page("pages/report.py").run()
    assert not at.exception, [e.value for e in at.exception]
    labels = [b.label.replace("\\", "") for b in at.get("download_button")]  # Markdown-escaped
    assert any("Calibration over time (monitor)" in label for label in labels), labels


def test_the_review_verdict_carries_the_monitor_of_the_same_data():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.selectbox(key="w_demo").set_value("flights").run()
    at.switch_page("pages/monitor.py").run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    text = " ".join(m.value for m in at.markdown)
    assert "monitored series changed calibration since the reference" in text.replace("\\", "")


def test_a_monitor_over_the_budget_is_refused_on_the_page_with_what_to_change(monkeypatch):
    # the page runs monitor_calibration under the session's budget: an estimate above it (here
    # made so by a per-row cost of 1 MB) is a message saying what to change, never a traceback
    from dashboard import ui
    from mcviz import budget

    monkeypatch.setattr(budget, "_MONITOR_BYTES_PER_ROW", 10**6)
    ui.CACHE.clear()  # a monitor computed by an earlier test of this process is not reused
    at = _monitor_page_only()
    ui.CACHE.clear()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(e.value for e in at.error).replace("\\", "")  # Markdown escapes
    assert "refused before starting: monitor: 100,000 rows" in shown
    assert "fewer filters or segment columns" in shown
    assert not at.metric  # nothing half-computed is shown


def _monitor_page_only() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/monitor.py").run()
    return at
