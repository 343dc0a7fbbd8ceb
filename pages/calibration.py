"""Calibration page: cumulative plot, reliability diagrams, LCS and classical metrics per model."""

import streamlit as st

from dashboard import charts, ui
from dashboard import state as s
from dashboard.text import code
from mcviz import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.present.figures import format_number
from mcviz.stats.measures.clinical import HL_NOTE
from mcviz.subpopulations import filter_subpopulation
from mcviz.text import display_text

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
    metrics_section(item, slot_key)


def reliability_section(item: ui.Current, slot_key: str) -> None:
    st.markdown("**Reliability diagrams** at bins " + ", ".join(map(str, ui.bin_counts()))
                + (" (weighted bins)" if item.pred.weighted else ""))
    # one kind at a time (tabs would draw the hidden diagram too)
    kind = st.segmented_control("Bins", list(charts.RELIABILITY_KINDS),
                                key=f"w_binkind_{slot_key}", default="equal_width",
                                format_func=charts.RELIABILITY_KINDS.get,
                                label_visibility="collapsed") or "equal_width"
    if kind == charts.CORP:
        try:
            result = charts.corp_result(item)
        except ValidationError as error:
            ui.show_error(error)
            return
        ui.show_figure(charts.corp_fig(result, f"corp:{item.key}"), key=f"corp_{slot_key}")
        st.caption("CORP: isotonic regression (pool-adjacent-violators) of the responses on "
                   "the scores, no bins to choose; the band is where 90% of perfectly "
                   f"calibrated curves fall ({result.n_resamples:,} resamples).")
        return
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
    if result.boundary.any():
        ui.caption(f"Shaded ends (scores up to {result.boundary_below:.3g} and from "
                   f"{result.boundary_above:.3g}): each window of k = {result.k:,} nearest "
                   "scores reaches the end of the score range, so the curve flattens there by "
                   "construction; read it as the boundary, not as over- or under-prediction.")


SCOPES = {"full": "Full population", "sub": "A subpopulation (Subpopulations page)",
          "filter": "A filter"}


def classical_scope(item: ui.Current, slot_key: str):
    """The rows the classical measures describe: None (every row) or a subpopulation."""
    scope = st.radio("Measured on", list(SCOPES), key=f"w_classical_scope_{slot_key}",
                     format_func=SCOPES.get, horizontal=True)
    if scope == "full":
        return None
    if scope == "filter":
        expression = st.text_input("Filter", key=f"w_classical_filter_{slot_key}",
                                   placeholder='e.g. age >= 40 and sex == "Female"')
        description = expression.strip()
    else:
        runs_ = ui.subpopulation_runs(analysis)
        if not runs_:
            st.info("Compute subpopulations on the **Subpopulations** page first.")
            return None
        by_id = {sub.id: sub for sub in runs_[0].subsets.subpopulations if sub.id != 0}
        if not by_id:
            st.info("No subpopulations besides the full population.")
            return None
        key = f"w_classical_sub_{slot_key}"
        ui.selectbox_state(key, list(by_id), runs_[0].result.argmax.id)
        picked = st.selectbox("Subpopulation", list(by_id), key=key,
                              format_func=lambda i: display_text(f"#{i} · {by_id[i].description}"))
        description = by_id[picked].description
    if not description:
        return None
    try:  # by its description, so that the rows are right for either score column
        return filter_subpopulation(item.pred, description)
    except ValidationError as error:
        ui.show_error(error)
        return None


def metrics_section(item: ui.Current, slot_key: str) -> None:
    st.markdown("**Classical measures**")
    sub = classical_scope(item, slot_key)
    if sub is not None:
        ui.caption(f"{sub.description} · {sub.size:,} rows")
    try:
        table = charts.classical_table(item, sub)
    except ValidationError as error:
        ui.show_error(error)
        return
    for group, rows in table.groupby("group", sort=False):
        st.markdown(f"*{group.capitalize()}*")
        ui.show_table(rows[["name", "value", "help"]].rename(
            columns={"name": "measure", "help": "what it says"}),
            key=f"classical_{group}_{slot_key}")
        if "Hosmer-Lemeshow p" in set(rows["name"]):
            ui.caption(f"Hosmer-Lemeshow: the p-value {HL_NOTE}.")


for slot, item, slot_key in zip(ui.chart_slots(len(analyses)), analyses, ["a", "b"],
                                strict=False):
    with slot:
        model_panel(item, slot_key)
ui.sync()
