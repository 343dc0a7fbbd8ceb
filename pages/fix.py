"""Fix page: a recalibration fitted on one split, judged on held-out rows, and what it is worth."""

import streamlit as st

from dashboard import charts, comparing, fixing, ui
from dashboard import state as s
from dashboard.text import escape_markdown
from mcviz.errors import ValidationError
from mcviz.present.figures import decision_curve_figure
from mcviz.settings import DecisionSettings, FixSettings
from mcviz.stats.cumulative import cumulative_differences
from mcviz.text import display_text

ui.setup_page("fix", "Fix")
analysis = ui.require_current()
pred = analysis.pred
kinds = dict(pred.covariate_kinds)

options = {o.name: o for o in fixing.method_options(bool(kinds))}
names = list(options)
ui.selectbox_state("w_fix_method", names, names[0])
left, middle, right = st.columns([2, 1, 1])
left.selectbox("Fix", names, key="w_fix_method", format_func=lambda n: options[n].title + (
    "" if options[n].unavailable is None else f" (unavailable: {options[n].unavailable})"))
holdout_spec, seed_spec = FixSettings.setting("holdout"), FixSettings.setting("seed")
middle.number_input(**holdout_spec.widget(), value=holdout_spec.default, key="w_fix_holdout")
right.number_input(**seed_spec.widget(), value=seed_spec.default, key="w_fix_seed")
st.text_input(**DecisionSettings.setting("thresholds").widget(), key="w_fix_thresholds")
try:
    thresholds = fixing.parse_thresholds(st.session_state["w_fix_thresholds"])
except ValidationError as error:
    ui.show_error(error)
    st.stop()
chosen = options[st.session_state["w_fix_method"]]
if chosen.unavailable is not None:
    ui.show_warning(f"The {chosen.name} fix {chosen.unavailable}; choose another fix.")
    st.stop()

runs_ = ui.subpopulation_runs(analysis)  # the reviewed search, when one was run
reviewed = fixing.reviewed_findings(runs_[0].search if runs_ else None)
exact = False
if chosen.name == "findings" and reviewed:
    exact = st.toggle(f"Fix exactly the {len(reviewed)} reviewed confirmed finding"
                      f"{'' if len(reviewed) == 1 else 's'}", key="w_fix_reviewed",
                      help="One term per finding of the search you reviewed, instead of the "
                           "fix's own searches of its fit rows.")
    if exact:
        ui.caption(fixing.TWICE_CAVEAT)

run = fixing.FixRun(chosen.name, tuple(kinds),
                    FixSettings(holdout=float(st.session_state["w_fix_holdout"]),
                                seed=int(st.session_state["w_fix_seed"])),
                    tuple(f.description for f in reviewed) if exact else ())
if st.session_state.get("fix_requested") != run:
    if st.button("Fit and judge the fix", type="primary", key="fix_run"):
        st.session_state["fix_requested"] = run
    else:
        st.caption("Fits on one score-stratified split (the guided search too), judges on the "
                   "other: M, each finding's D/σ, ECE, smECE, log loss, Brier, net benefit.")
        st.stop()


def _verify(pred, progress=None, **options):
    return fixing.run_fix(pred, findings=reviewed, progress=progress, **options)


try:
    result = ui.compute_with_progress("fix", analysis.key, _verify, pred, label="Fitting the fix",
                                      **run.options())
except ValidationError as error:
    ui.show_error(error)
    st.stop()

(ui.show_success if result.recommended else ui.show_warning)(fixing.fix_headline(result))
ui.caption(f"In numbers: {result.verdict}.")
ui.caption(result.reason[0].upper() + result.reason[1:])
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
if result.terms:
    st.markdown("**The fix's terms** · each on its finding's held-out rows (not in M)")
    ui.show_table(fixing.terms_table(result), key="fix_terms")
    if reviewed:
        ui.caption("How the terms map to the findings you reviewed (share of held-out rows in "
                   "common):")
        ui.show_table(fixing.term_overlap(result, [f.description for f in reviewed]),
                      key="fix_overlap")
if result.bands_moved:
    ui.show_warning(f"{len(result.bands_moved)} band(s) of the covariates the fix did not "
                    "target are now miscalibrated beyond noise on the held-out rows:")
    ui.show_table(fixing.bands_table(result), key="fix_bands")

scopes = list(fixing.scope_options(result))
ui.selectbox_state("w_fix_scope", scopes, fixing.FULL)
st.selectbox("Scope", scopes, key="w_fix_scope", format_func=display_text)
run_key = f"{run}"  # the fix's settings identify the result (cached on them)
try:  # a refusal (the budget's) is a message, as for the fit
    view = ui.compute(f"fix_scope:{run_key}:{st.session_state['w_fix_scope']}", analysis.key,
                      fixing.scope_view, result, st.session_state["w_fix_scope"])
except ValidationError as error:
    ui.show_error(error)
    st.stop()
before_col, after_col = ui.chart_slots(2)
for slot, side, name in ((before_col, view.before, "before"), (after_col, view.after, "after")):
    with slot:
        st.markdown(f"**{name.capitalize()} the fix** · held-out rows")
        cumulative = cumulative_differences(side)
        ui.show_figure(ui.cumulative_fig(cumulative, title=f"Cumulative differences, {name}"),
                       key=f"fix_cum_{name}")
        item = ui.Current(side, f"{analysis.key}|fix|{run}|{view.description}|{name}",
                          analysis.source, analysis.mapping, analysis.frame)
        ui.show_figure(charts.reliability_fig(charts.reliability_result(item, "equal_width")),
                       key=f"fix_rel_{name}")

try:
    impact = ui.compute(f"fix_impact:{run_key}:{view.description}:{thresholds}", analysis.key,
                        fixing.scope_impact, result, view, thresholds)
except ValidationError as error:
    ui.show_error(error)
    st.stop()
ui.show_figure(decision_curve_figure(impact, thresholds=thresholds,
                                     presentation=ui.presentation()), key="fix_curve")
for sentence in impact.sentences(thresholds):
    ui.show_text(sentence[0].upper() + sentence[1:] + ".")
if view.description == fixing.FULL:  # the Review page, the report and the deck show it
    st.session_state[fixing.SECTION_HELD] = (analysis.key,
                                             fixing.fix_section(result, impact, thresholds))

if result.comparison is not None:  # the fix judged as a challenger is (Compare page, #43)
    judged = result.comparison
    with st.expander("Judged as a challenger: the model (A) against the fixed scores (B), "
                     f"{judged.n:,} held-out rows", key="fix_as_challenger"):
        for line in comparing.verdict_lines(judged):
            st.markdown(f"{comparing.MARKS[line.kind]} {escape_markdown(line.text)}",
                        help=line.help)
        ui.show_table(comparing.summary_table(judged), key="fix_cmp_summary")
        for title, found in (("Where the fix is worse", judged.regressions),
                             ("Where the fix is better", judged.improvements)):
            if found:
                st.markdown(f"**{title}**")
                ui.show_table(comparing.groups_table(found), percent=("share",),
                              key=f"fix_cmp_{title.split()[-1]}")
        ui.caption(comparing.GAP_NOTE)

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
