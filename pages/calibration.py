"""Calibration page: cumulative plot, reliability diagrams, LCS and classical metrics per model."""

import streamlit as st

from dashboard import charts, ui
from dashboard import state as s
from dashboard.text import code
from mcviz import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.figures import format_number

ui.setup_page("calibration", "Calibration")
analysis = ui.require_current()

candidates = ui.compute("score_candidates", analysis.source_key, ui.score_candidates,
                        analysis.frame)
others = [c for c in candidates if c != analysis.mapping.score]
compare_options = [ui.NO_SCORE, *others] if not analysis.pred.multiclass else [ui.NO_SCORE]
ui.selectbox_state(s.W_SCORE2, compare_options, ui.NO_SCORE)
if len(compare_options) > 1:
    st.selectbox("Compare with a second score column", compare_options, key=s.W_SCORE2)

analyses = [analysis]
if st.session_state.get(s.W_SCORE2, ui.NO_SCORE) != ui.NO_SCORE:
    try:
        analyses.append(analysis.with_score(st.session_state[s.W_SCORE2]))
    except ValidationError as error:
        ui.show_error(f"Second score column: {error}")


def model_panel(item: ui.Current, slot_key: str) -> None:
    pred = item.pred
    st.subheader(code(pred.score_column))
    result = ui.compute("cumulative", item.key, cumulative_differences, pred)
    ui.cumulative_metrics(result, per_row=5 if len(analyses) == 1 or ui.presentation() else 3)
    ui.show_figure(ui.cumulative_fig(result, title="Cumulative differences",
                                   cache=f"cum:{item.key}"),
                   key=f"cum_{slot_key}")
    reliability_section(item, slot_key)
    lcs_section(item, slot_key)
    metrics_section(item)


def reliability_section(item: ui.Current, slot_key: str) -> None:
    st.markdown("**Reliability diagrams** at bins " + ", ".join(map(str, ui.bin_counts()))
                + (" (weighted bins)" if item.pred.weighted else ""))
    # one kind at a time (tabs would draw the hidden diagram too)
    kind = st.segmented_control("Bins", list(charts.BIN_KIND_TITLES), key=f"w_binkind_{slot_key}",
                                default="equal_width", format_func=charts.BIN_KIND_TITLES.get,
                                label_visibility="collapsed") or "equal_width"
    result = charts.reliability_result(item, kind)
    ui.show_figure(charts.reliability_fig(result, f"rel:{kind}:{item.key}"),
                   key=f"rel_{kind}_{slot_key}")


def lcs_section(item: ui.Current, slot_key: str) -> None:
    result = charts.lcs_result(item)
    if result is None:
        st.info("The Local Calibration Score needs 0/1 responses; these are real-valued.")
        return
    st.metric("Local Calibration Score (LCS)", format_number(result.lcs),
              help=f"k = {result.k:,} nearest scores (span {result.span:g})")
    ui.show_figure(charts.lcs_fig(result, f"lcs:{item.key}"), key=f"lcs_{slot_key}")


def metrics_section(item: ui.Current) -> None:
    st.markdown("**Classical metrics**")
    ui.show_table(charts.metrics_table(item))


for slot, item, slot_key in zip(ui.chart_slots(len(analyses)), analyses, ["a", "b"],
                                strict=False):
    with slot:
        model_panel(item, slot_key)
ui.sync()
