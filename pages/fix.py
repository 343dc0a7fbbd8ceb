"""Fix page: a recalibration fitted on one split, judged on held-out rows, and what it is worth."""

import streamlit as st

from dashboard import charts, fixing, ui
from dashboard import state as s
from mcviz.errors import ValidationError
from mcviz.present.figures import decision_curve_figure
from mcviz.settings import DecisionSettings
from mcviz.stats.cumulative import cumulative_differences
from mcviz.text import display_text

ui.setup_page("fix", "Fix")
analysis = ui.require_current()
pred = analysis.pred
kinds = dict(pred.covariate_kinds)

methods = list(fixing.METHOD_TITLES) if kinds else ["platt", "beta", "isotonic"]
ui.selectbox_state("w_fix_method", methods, methods[0])
left, middle, right = st.columns([2, 1, 1])
left.selectbox("Fix", methods, key="w_fix_method", format_func=fixing.METHOD_TITLES.get)
middle.number_input("Held-out share", 0.1, 0.9, 0.5, 0.05, key="w_fix_holdout",
                    help="Rows held out, stratified by score: neither the search nor the fit "
                         "sees them; every number below is measured on them.")
right.number_input("Seed", 0, 2**31 - 1, 0, key="w_fix_seed")
st.text_input(**DecisionSettings.setting("thresholds").widget(), key="w_fix_thresholds")
try:
    thresholds = fixing.parse_thresholds(st.session_state["w_fix_thresholds"])
except ValidationError as error:
    ui.show_error(error)
    st.stop()

settings = fixing.FixSettings(st.session_state["w_fix_method"],
                              float(st.session_state["w_fix_holdout"]),
                              int(st.session_state["w_fix_seed"]), tuple(kinds))
if st.session_state.get("fix_requested") != settings:
    if st.button("Fit and judge the fix", type="primary", key="fix_run"):
        st.session_state["fix_requested"] = settings
    else:
        st.caption("Fits on one score-stratified split (the guided search too), judges on the "
                   "other: M, each finding's D/σ, ECE, smECE, log loss, Brier, net benefit.")
        st.stop()


def _verify(pred, progress=None, **options):
    from mcviz.recalibration import verify_fix

    return verify_fix(pred, progress=progress, **options)


try:
    result = ui.compute_with_progress("fix", analysis.key, _verify, pred, label="Fitting the fix",
                                      **settings.options())
except ValidationError as error:
    ui.show_error(error)
    st.stop()

verdict = result.verdict[0].upper() + result.verdict[1:]
(ui.show_success if result.accepted and result.meaningful else ui.show_warning)(verdict)
ui.caption(result.reason)
ui.caption(f"Map: {result.recalibrator.describe()} · fitted on {result.n_fit:,} rows, judged on "
           f"{result.n_eval:,} held-out rows.")
if result.notes:
    with st.expander(f"Notes of the fit ({len(result.notes)})"):
        for note in result.notes:
            ui.caption(note)

cells = st.columns(2)
with cells[0]:
    ui.show_table(fixing.summary_table(result), key="fix_summary")
with cells[1]:
    if result.findings:
        ui.show_table(fixing.findings_table(result), key="fix_findings")
    else:
        st.info("No findings to judge (no covariates, or the search found none).")

scopes = list(fixing.scope_options(result))
ui.selectbox_state("w_fix_scope", scopes, fixing.FULL)
st.selectbox("Scope", scopes, key="w_fix_scope", format_func=display_text)
run_key = f"{settings}"  # the fix's settings identify the result (cached on them)
view = ui.compute(f"fix_scope:{run_key}:{st.session_state['w_fix_scope']}", analysis.key,
                  fixing.scope_view, result, st.session_state["w_fix_scope"])
before_col, after_col = ui.chart_slots(2)
for slot, side, name in ((before_col, view.before, "before"), (after_col, view.after, "after")):
    with slot:
        st.markdown(f"**{name.capitalize()} the fix** · held-out rows")
        cumulative = cumulative_differences(side)
        ui.show_figure(ui.cumulative_fig(cumulative, title=f"Cumulative differences, {name}"),
                       key=f"fix_cum_{name}")
        item = ui.Current(side, f"{analysis.key}|fix|{settings}|{view.description}|{name}",
                          analysis.source, analysis.mapping, analysis.frame)
        ui.show_figure(charts.reliability_fig(charts.reliability_result(item, "equal_width")),
                       key=f"fix_rel_{name}")

impact = ui.compute(f"fix_impact:{run_key}:{view.description}:{thresholds}", analysis.key,
                    fixing.scope_impact, result, view, thresholds)
ui.show_figure(decision_curve_figure(impact, thresholds=thresholds,
                                     presentation=ui.presentation()), key="fix_curve")
for sentence in impact.sentences(thresholds):
    ui.show_text(sentence[0].upper() + sentence[1:] + ".")
if view.description == fixing.FULL:  # the Review page, the report and the deck show it
    st.session_state[fixing.SECTION_HELD] = (analysis.key,
                                             fixing.fix_section(result, impact, thresholds))

st.divider()
column = fixing.fixed_column(pred.score_column)
if st.button(f"Analyse the fixed scores on every page (adds column {column})",
             key="fix_adopt"):
    try:
        source, frame, column = fixing.fixed_source(analysis.source, analysis.frame, pred,
                                                    result.recalibrator)
    except ValidationError as error:
        ui.show_error(error)
        st.stop()
    ui.set_source(source, frame, analysis.mapping)
    st.session_state[s.W_SCORE2] = column
    ui.show_success(f"Column {column} added: the Calibration page compares it with "
                    f"{pred.score_column}; choose it as the score on the Data page to analyse it "
                    "on every page. (It scores the fit rows in sample.)")
ui.sync()
