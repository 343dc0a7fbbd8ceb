"""The Monitor page's services: settings, Review filters, link parameters (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import links
from dashboard import monitor as mon
from dashboard import state as s
from mcviz import Predictions, ValidationError
from mcviz.monitor import MonitorSettings, monitor_calibration
from mcviz.subpopulations import parse_filter, select_rows


def _pred(time_values, n=400):
    rng = np.random.default_rng(0)
    return Predictions.from_arrays(rng.uniform(0.2, 0.8, n), rng.integers(0, 2, n), covariates={
        "when": time_values, "my group": rng.choice(["a", "b"], n)})


def test_review_filter_selects_exactly_the_rows_of_the_cell():
    days = pd.Timestamp("2026-01-05") + pd.to_timedelta(np.arange(400) % 70, unit="D")
    pred = _pred(days)
    result = monitor_calibration(pred,
                                 settings=MonitorSettings(time="when", period="week",
                                                          segments=["my group"], draws=19))
    expression = mon.review_filter(result, 1, 3, 4, pred.covariates["when"].dtype)
    assert expression == ("`my group` == a and when >= 2026-01-26 and when < 2026-02-09")
    rows = select_rows(pred, parse_filter(expression, pred))
    segment = result.series[1].subpopulation.index
    in_periods = np.isin(result.periods.code, [3, 4])
    expected = np.intersect1d(segment, np.flatnonzero(in_periods))
    assert np.array_equal(rows, expected)


def test_review_filter_of_numbers_closes_the_last_period_and_refuses_text_times():
    pred = _pred(np.arange(400) % 40)
    result = monitor_calibration(pred, settings=MonitorSettings(time="when", period=4, draws=19))
    expression = mon.review_filter(result, 0, 2, 3, pred.covariates["when"].dtype)
    assert expression == "when >= 19.5 and when <= 39.0"
    rows = select_rows(pred, parse_filter(expression, pred))
    assert rows.size == int(np.sum(result.periods.code >= 2))
    text = _pred([f"2026-01-{d:02d}" for d in np.arange(400) % 28 + 1])
    monthly = monitor_calibration(text,
                                  settings=MonitorSettings(time="when", period="week", draws=19))
    assert mon.review_filter(monthly, 0, 1, 1, text.covariates["when"].dtype) is None


def test_settings_from_the_widgets_and_the_command_line():
    state = {s.W_MON_PERIOD: "20", s.W_MON_REFERENCE: " 2026-03-01 ",
             s.W_MON_SEGMENTS: ["region"], s.W_MON_FILTERS: "x >= 1\n\n age < 30 ",
             s.W_MON_SEARCH: True}
    settings = mon.settings_from_state(state, "date")
    assert settings.call_options() == {"settings": MonitorSettings(
        time="date", period=20, reference="2026-03-01", segments=("region",),
        filters=("x >= 1", "age < 30"), search_reference=True)}
    assert settings.command_line() == (
        "mcviz monitor FILE --time date --period 20 --reference 2026-03-01 --segments region "
        "--filter 'x >= 1' --filter 'age < 30' --search-reference --json")
    assert mon.settings_from_state({s.W_MON_PERIOD: "fortnight"}, "t").period == "week"
    # alpha and the null draws: widgets -> settings -> the command line's flags (mcviz.settings)
    chosen = mon.settings_from_state({s.W_MON_ALPHA: 0.01, s.W_MON_DRAWS: 499}, "t")
    assert (chosen.library().alpha, chosen.library().draws) == (0.01, 499)
    assert chosen.command_line() == ("mcviz monitor FILE --time t --period week --alpha 0.01 "
                                     "--draws 499 --json")
    with pytest.raises(ValidationError, match="alpha must be a number from"):
        mon.settings_from_state({s.W_MON_ALPHA: 0.7}, "t").call_options()


def test_monitor_alpha_and_draws_travel_in_links_with_their_bounds():
    state = {s.W_MON_ALPHA: 0.01, s.W_MON_DRAWS: 499}
    params = links.encode_state(state, "monitor")
    assert params["malpha"] == "0.01"
    assert params["mdraws"] == "499"
    decoded = links.decode_params(params)
    assert not decoded.messages
    assert decoded.restored[s.W_MON_ALPHA] == 0.01
    assert decoded.restored[s.W_MON_DRAWS] == 499
    bad = links.decode_params({"mdraws": "5", "malpha": "x"})
    assert s.W_MON_DRAWS not in bad.restored
    assert s.W_MON_ALPHA not in bad.restored
    assert any("mdraws='5'" in m and "[19, 100,000]" in m for m in bad.messages)


def test_monitor_settings_travel_in_links():
    state = {s.W_MON_TIME: "departure", s.W_MON_PERIOD: "month", s.W_MON_REFERENCE: "2013-05-01",
             s.W_MON_SEGMENTS: ["carrier", "origin"], s.W_MON_FILTERS: "distance >= 1000",
             s.W_MON_SEARCH: True}
    params = links.encode_state(state, "monitor")
    decoded = links.decode_params(params)
    assert not decoded.messages
    for key, value in state.items():
        assert decoded.restored[key] == value
    bad = links.decode_params({"mseg": "[1, 2]"})
    assert bad.messages == ("link parameter mseg is not a list of column names; ignored.",)


def test_candidates_of_time_and_segments():
    pred = _pred(pd.date_range("2026-01-01", periods=400, freq="D"))
    assert mon.time_candidates(pred) == ["when"]
    assert mon.segment_candidates(pred, "when") == ["my group"]
    assert mon.default_segments(["carrier", "x", "origin"]) == ["carrier", "origin"]


def test_report_section_carries_the_alarms_and_the_heat_map(drifting):
    from mcviz.present.report import html_report

    pred = drifting(5000, 3, days=100, start=60)
    result = monitor_calibration(pred,
                                 settings=MonitorSettings(period="week", segments=["g"], draws=99))
    section = mon.report_section(result)
    assert any("Segment g is b" in paragraph for paragraph in section.text)  # in words (#40)
    assert len(section.figures) == 2
    table = section.tables[0][1]
    assert table["alarm"].tolist() == ["yes" if s.alarm else "no" for s in result.series]
    for row, series in zip(table.itertuples(), result.series, strict=True):  # points (#40)
        assert float(row[4].replace("−", "-")) == pytest.approx(100 * series.shift, abs=0.05)
    html = html_report([section])
    assert "Calibration over time (monitor)" in html


def test_verdict_section_is_held_for_its_own_analysis_only():
    rng = np.random.default_rng(4)
    n = 3000
    day = rng.integers(0, 90, n)
    pred = Predictions.from_arrays(rng.uniform(0.2, 0.8, n), rng.integers(0, 2, n), covariates={
        "when": pd.Timestamp("2026-01-05") + pd.to_timedelta(day, unit="D")})
    result = monitor_calibration(pred, settings=MonitorSettings(period="week", draws=99))
    section = mon.verdict_section(result)
    assert section.title == "Monitoring: calibration over time"
    assert section.sentences[1] == result.full.sentence
    assert dict(section.facts)["alarms (family-wise false-alarm rate ≤ 0.05)"] == (
        f"{len(result.alarms)} of 1 series")
    state = {mon.HELD: ("key-a", result)}
    assert mon.held_section(state, "key-a").sentences == section.sentences
    assert mon.held_section(state, "key-b") is None


def _reddest_cell():
    """Calibrated labels, six segments x 13 weeks: the monitor, and the cell with the smallest
    own p (its filter, its series), which chance alone makes "significant" (asserted)."""
    from mcviz.stats.cumulative import cumulative_differences

    rng = np.random.default_rng(11)
    n = 6000
    score = rng.uniform(0.2, 0.8, n)
    pred = Predictions.from_arrays(score, rng.random(n) < score, covariates={
        "when": pd.Timestamp("2026-01-05") + pd.to_timedelta(rng.integers(0, 91, n), unit="D"),
        "g": rng.choice(list("abcdef"), n)})
    result = monitor_calibration(pred, settings=MonitorSettings(period="week", segments=["g"],
                                                                draws=99))
    cells = [(i, w) for i in range(len(result.series)) for w in range(result.periods.n_periods)]
    filters = [mon.review_filter(result, i, w, w, pred.covariates["when"].dtype)
               for i, w in cells]
    own = [float(cumulative_differences(pred, index=select_rows(pred, parse_filter(f, pred)))
                 .p_value) for f in filters]
    reddest = int(np.argmin(own))
    assert own[reddest] < 0.05  # the trap: chance alone makes the reddest cell "significant"
    return pred, result, filters[reddest], cells[reddest][0]


def test_a_window_picked_on_the_heat_map_is_judged_by_the_monitors_adjusted_p():
    """#40: Review opened from Monitor judges the picked cell by the monitor, never its own p.

    Calibrated labels, six segments × 13 weeks: the cell a user clicks because it is the
    reddest has a small own p by selection alone (checked below as the trap's precondition);
    picked from Monitor its verdict is "one of 7 monitored series", tested by its series'
    adjusted p. The same filter typed by the user (or edited) is judged by its own p.
    """
    from dashboard import review
    from dashboard.runs import Scope, filter_subpopulation

    pred, result, expression, series = _reddest_cell()
    state = {mon.HELD: ("key", result)}
    mon.remember_pick(state, "key", expression, series, len(result.series))
    picked = mon.picked_selection(state, "key", expression)
    adjusted = result.series[series].p_adjusted
    assert picked.p_adjusted == adjusted and picked.among == len(result.series) == 7
    assert mon.picked_selection(state, "key", expression + " and g != z") is None  # edited
    assert mon.picked_selection(state, "other", expression) is None
    scope = Scope("filter", filter_subpopulation(pred, expression))
    results = review.review_results(pred, scope, variable=None, bins=(10,))
    typed = review.scope_verdict(pred, results, (), scope=scope)
    chosen = review.scope_verdict(pred, results, (), scope=scope, picked=picked)
    assert "beyond chance" in typed.sentences[0]  # its own p, as for a filter the user wrote
    assert "one of 7 monitored series" in chosen.sentences[0]
    assert ("beyond chance" in chosen.sentences[0]) == (adjusted < 0.05)
    assert adjusted >= 0.05  # calibrated: the monitor's test does not alarm here
    note = review.chosen_note(scope, (), None, picked)
    assert note.startswith("adjusted p") and "one of 7 monitored series" in note
    assert review.chosen_note(scope, (), None) is None


def test_a_link_to_a_picked_window_is_never_judged_by_its_own_p_on_a_fresh_server():
    """#40: the link of a window Monitor picked says so (``mpick``); reopened where no monitor ran.

    A fresh server has no monitor run: the reddest cell of calibrated data (own p < 0.05 by
    selection alone) must read "not yet tested against chance" with what to run, never
    "beyond chance"; once Monitor runs with the link's settings the series' adjusted p judges
    it. An edited filter drops the marker (the user's own filter), and a malformed marker is
    named and ignored.
    """
    from dashboard import review
    from dashboard.runs import Scope, filter_subpopulation

    pred, result, expression, series = _reddest_cell()
    live = {mon.HELD: ("key", result), s.W_SCOPE: "filter", s.W_FILTER: expression}
    mon.remember_pick(live, "key", expression, series, len(result.series))
    params = links.encode_state(live, "review")
    assert params["mpick"] == f"{series}-{len(result.series)}"
    fresh = links.decode_params(params)
    assert not fresh.messages
    state = dict(fresh.restored)  # a fresh server: no monitor run, no live pick
    picked = mon.picked_selection(state, "another-session-key", expression)
    assert picked.p_adjusted is None and picked.among == len(result.series)
    scope = Scope("filter", filter_subpopulation(pred, expression))
    results = review.review_results(pred, scope, variable=None, bins=(10,))
    verdict = review.scope_verdict(pred, results, (), scope=scope, picked=picked)
    assert "beyond chance" not in verdict.sentences[0]
    assert "not yet tested against chance" in verdict.sentences[0]
    assert "picked on the Monitor heat map" in verdict.sentences[0]
    assert "run Monitor" in verdict.next_step
    note = review.chosen_note(scope, (), None, picked)
    assert note == f"one of {len(result.series)} monitored series: not yet tested against chance"
    assert links.encode_state(state, "review")["mpick"] == params["mpick"]  # the link keeps it
    state[mon.HELD] = ("key2", result)  # Monitor ran here with the link's settings
    judged = mon.picked_selection(state, "key2", expression)
    assert judged.p_adjusted == result.series[series].p_adjusted
    other = (series + 1) % len(result.series)  # a marker naming another series is not trusted
    state[s.MON_PICKED_LINK] = (expression, other, len(result.series))
    assert mon.picked_selection(state, "key2", expression).p_adjusted is None
    edited = dict(state, **{s.W_FILTER: expression + " and g != z"})
    assert "mpick" not in links.encode_state(edited, "review")
    assert mon.picked_selection(edited, "key2", expression + " and g != z") is None
    for bad in ("7-7", "x", "1-2-3", "9" * 13):
        assert "mpick" in " ".join(links.decode_params(
            {"filter": expression, "mpick": bad}).messages)
    assert links.decode_params({"mpick": "1-7"}).messages  # no filter: ignored, said
