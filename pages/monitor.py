"""Monitor page: calibration over time per segment, alarms controlled over the whole horizon.

Heat map of segments x periods (standardised gaps relative to the reference, alarms marked);
a click on a cell (or the pickers below it) opens the Review grid for that segment and range
of periods. Data without a time column: the dated demo (NYC flights 2013) is shown instead.
"""

import streamlit as st

from dashboard import monitor as mon
from dashboard import state as s
from dashboard import ui
from dashboard.text import code
from mcviz.monitor.periods import REFERENCE_RULE
from mcviz.errors import ValidationError
from mcviz.present.figures import format_number, monitor_heatmap_figure, monitor_series_figure
from mcviz.monitor import monitor_calibration
from mcviz.settings import MonitorSettings
from mcviz.text import display_text

ui.setup_page("monitor", "Monitor")
analysis = ui.require_current()
pred, key, demo_instead = analysis.pred, analysis.key, False
times = mon.time_candidates(pred)
if not times:
    demo_instead = True
    frame = ui.read_demo("flights")
    mapping = s.default_mapping(frame)
    source = {"kind": "demo", "name": "flights", "digest": None}
    pred = ui.predictions_for(s.source_key(source), mapping, frame)
    key = s.analysis_key(source, mapping)
    times = mon.time_candidates(pred)
    st.info("The current data has no time column (dates, datetimes, or a column named like a "
            "time), so this page shows the dated demo: **NYC flights 2013** (arrival delays "
            "of 100,000 flights; a model fitted on January–March). Load a file with a date "
            "column on the Data page to monitor your own model.")

pick_time, pick_period, pick_reference, pick_search = st.columns([1.6, 1.6, 1.6, 1.2],
                                                                vertical_alignment="bottom")
ui.selectbox_state(s.W_MON_TIME, times, times[0])
time = pick_time.selectbox("Time column", times, key=s.W_MON_TIME, format_func=display_text)
ui.selectbox_state(s.W_MON_PERIOD, list(mon.PERIOD_CHOICES), "week")
pick_period.selectbox("Periods", list(mon.PERIOD_CHOICES), key=s.W_MON_PERIOD,
                      format_func=mon.PERIOD_CHOICES.get)
pick_reference.text_input("Reference ends by", key=s.W_MON_REFERENCE,
                          placeholder="default: first quarter of the time range",
                          help=f"A date (or number): {REFERENCE_RULE}.")
pick_search.toggle("Search the reference", key=s.W_MON_SEARCH,
                   help="Also monitor the subpopulations a guided search finds on the reference "
                        "periods (confirmed on held-out reference rows).")
candidates = mon.segment_candidates(pred, time)
chosen = st.session_state.get(s.W_MON_SEGMENTS)
if chosen is None or not set(chosen) <= set(candidates):
    st.session_state[s.W_MON_SEGMENTS] = [c for c in (chosen or []) if c in candidates] or (
        mon.default_segments(candidates) if chosen is None else [])
pick_segments, pick_filters = st.columns([1, 1])
pick_segments.multiselect("Segments: every level of", candidates, key=s.W_MON_SEGMENTS,
                          format_func=display_text,
                          help=f"Categorical covariates with at most {mon.MAX_LEVELS} levels.")
pick_filters.text_area("Segments: filters, one per line", key=s.W_MON_FILTERS, height=68,
                       placeholder='e.g. distance >= 1000 and origin == "JFK"')
pick_alpha, pick_draws, _ = st.columns([1, 1, 2])
for column, name, widget in ((pick_alpha, "alpha", s.W_MON_ALPHA),
                             (pick_draws, "draws", s.W_MON_DRAWS)):
    st.session_state.setdefault(widget, s.DEFAULTS[widget])  # bounds, label: mcviz.settings
    column.number_input(**MonitorSettings.setting(name).widget(), key=widget)

settings = mon.settings_from_state(st.session_state, time)
CELLS_TRACE = 3  # the heat map's click layer (mcviz.present.figures.monitor_heatmap_figure)
try:
    result = ui.compute_with_progress("monitor", key, monitor_calibration, pred,
                                      label="Monitoring calibration over time",
                                      **settings.call_options())
except ValidationError as error:
    ui.show_error(error)
    ui.sync()
    st.stop()

st.session_state[mon.HELD] = (key, result)  # the Report page adds it (same data only)
periods = result.periods
cells = st.columns(5)
cells[0].metric("Periods", f"{periods.n_periods}",
                help=display_text(f"{periods.period}s of {periods.column}"))
cells[1].metric("Reference", f"{periods.n_reference} periods",
                help=f"the reference ends at {periods.reference_end}")
cells[2].metric("Alarms", f"{len(result.alarms)} of {len(result.series)}",
                help="series (the full population and the segments) that alarmed")
cells[3].metric("Threshold c", format_number(result.threshold, digits=3),
                help=f"the alarm statistic's (1 − α) quantile under the null "
                     f"({result.null_maxima.size} {result.null_method} draws)")
cells[4].metric("α (family-wise)", format_number(result.alpha),
                help="chance of any false alarm in any series over the whole horizon")
for notice in result.notices:
    ui.caption(notice)

event = ui.show_figure(ui.figure(monitor_heatmap_figure, result, None), key="monitor_heatmap",
                       on_select="rerun")
points = (event or {}).get("selection", {}).get("points", []) if event else []
clicked = next((p for p in points if p.get("curve_number") == CELLS_TRACE), None)
click = None if clicked is None else clicked.get("point_index")
if click is not None and st.session_state.get("mon_click") != (key, click):  # a new click
    st.session_state["mon_click"] = (key, click)
    series_clicked, period_clicked = divmod(int(click), periods.n_periods)  # point i: cell
    st.session_state[s.W_MON_SERIES] = series_clicked
    st.session_state[s.W_MON_FROM] = st.session_state[s.W_MON_TO] = periods.labels[
        period_clicked]
    # a cell opens the Review page on that series in that period (README: the heat map's click)
    opened = mon.review_filter(result, series_clicked, period_clicked, period_clicked,
                               pred.covariates[periods.column].dtype)
    if opened is not None:
        if demo_instead:
            ui.use_demo("flights")
        st.session_state[s.W_SCOPE] = "filter"
        st.session_state[s.W_FILTER] = opened
        mon.remember_pick(st.session_state, key, opened, series_clicked, len(result.series))
        st.switch_page(ui.page_path("review"))

names = [display_text(f"{i}. {'★ ' if s_.alarm else ''}{s_.words}")
         for i, s_ in enumerate(result.series)]
first_alarm = result.alarms[0] if result.alarms else result.full
default_series = result.series.index(first_alarm)
if st.session_state.get(s.W_MON_SERIES) not in range(len(names)):
    st.session_state[s.W_MON_SERIES] = default_series
pick_series, pick_from, pick_to, pick_open = st.columns([2, 1.2, 1.2, 1],
                                                      vertical_alignment="bottom")
series = pick_series.selectbox("Series", range(len(names)), key=s.W_MON_SERIES,
                               format_func=names.__getitem__)
chosen_series = result.series[series]
labels = list(periods.labels)
if st.session_state.get(s.W_MON_FROM) not in labels or st.session_state.get(
        s.W_MON_TO) not in labels:  # the series' strongest window (or the monitored periods)
    start = chosen_series.change_start  # the window of its shift
    end = chosen_series.change_end
    st.session_state[s.W_MON_FROM], st.session_state[s.W_MON_TO] = labels[start], labels[end]
first, last = sorted((labels.index(pick_from.selectbox("From period", labels, key=s.W_MON_FROM)),
                      labels.index(pick_to.selectbox("To period", labels, key=s.W_MON_TO))))
expression = mon.review_filter(result, series, first, last,
                               pred.covariates[periods.column].dtype)
if pick_open.button("Open in Review", disabled=expression is None,
                    help="The four charts of this series in these periods."
                    if expression else "The time column is text: a filter cannot compare it."):
    if demo_instead:
        ui.use_demo("flights")
    st.session_state[s.W_SCOPE] = "filter"
    st.session_state[s.W_FILTER] = expression
    mon.remember_pick(st.session_state, key, expression, series, len(result.series))
    st.switch_page(ui.page_path("review"))

ui.show_text(chosen_series.sentence)
ui.caption(chosen_series.details)  # the statistics beside the words (#40)
ui.show_figure(ui.figure(monitor_series_figure, result, None, series=series),
               key=f"monitor_series_{series}")

table = mon.series_table(result)  # percentage points, as the sentences say (#40)
st.markdown("**Every series**")
ui.show_table(table)
ui.caption("shift: percentage points of outcome − score over the window where the change "
           "shows most (without an alarm: over every monitored period) minus the reference's, "
           "with its 95% interval "
           "(not adjusted for the choice of the window). p adjusted: for every series and every "
           "period (single-step max-T over the horizon).")
st.markdown(f"Command line: {code(settings.command_line())}")
ui.sync()
