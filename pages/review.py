"""Review page: the four charts of one scope side by side (the page a meeting opens).

Scope: the full population, the argmax subpopulation, a generated subpopulation by id, a filter
expression, or one level / range of a variable. Grid: cumulative differences with the triangle
(a subpopulation: its deviation from the full population, its own calibration one click away),
reliability diagrams at the chosen bin counts, LOESS error curves along the chosen variable
restricted to the scope, and the LCS curve. Each chart's numbers are in its own title.

Above the grid, the verdict (container ``verdict``): the scope's calibration, M against its
null (or the button that computes it), the search's confirmed findings (a click makes one the
scope) or its minimum detectable effect; the same sentences head the report and the deck.
"""

import streamlit as st

from dashboard import charts, comparing, fixing, limits, review, runs, ui
from dashboard import monitor as monitoring
from dashboard import state as s
from dashboard.text import code
from dashboard.text import escape_markdown as md
from mcviz.errors import ValidationError
from mcviz.present.report import ExportUnavailableError, chromium_path, slide_image
from mcviz.present.verdict import SCORE_ALONE
from mcviz.text import display_text

ui.setup_page("review", "Review")
if not ui.presentation():  # the verdict and the whole grid on one 1440×900 screen
    st.html("<style>[data-testid='stMainBlockContainer'] {padding: 2.3rem 1.5rem 1rem 1.5rem"
            " !important;} [data-testid='stHeader'] {background: transparent !important;}"
            " [data-testid='stMainBlockContainer'] h2"
            " {padding: 0 !important; font-size: 1.5rem !important;}"
            " .st-key-verdict p {margin-bottom: 0.1rem !important; line-height: 1.45;"
            " font-size: 0.95rem;}"
            " .st-key-verdict {gap: 0.4rem !important; padding: 0.6rem 1rem !important;}"
            " .st-key-verdict [data-testid=stMarkdownContainer] {padding-bottom: 0.35rem;}"
            " .st-key-verdict summary {padding-top: 0.15rem !important;"
            " padding-bottom: 0.15rem !important;}</style>")
analysis = ui.require_current()
pred = analysis.pred
kinds = dict(pred.covariate_kinds)
SEARCH_REQUEST = "review_search_request"
try:
    runs_ = ui.subpopulation_runs(analysis, progress=True)
except ValidationError as error:
    ui.show_error(error)
    runs_ = ()

SCOPE_NAMES = {"full": "Full population", "argmax": "Worst subpopulation",
               "sub": "Finding or subpopulation", "filter": "Filter",
               "level": "Level of a variable"}
pick_scope, pick_detail, pick_variable, pick_own, pick_corp, pick_export = st.columns(
    [2.5, 2.05, 1.9, 1.85, 1.2, 1.15], vertical_alignment="center")  # one row, uncut (#40)
ui.selectbox_state(s.W_SCOPE, list(SCOPE_NAMES), "full")
scope_kind = pick_scope.selectbox("Scope", list(SCOPE_NAMES), key=s.W_SCOPE,
                                  format_func=lambda k: f"Scope: {SCOPE_NAMES[k]}",
                                  label_visibility="collapsed")
names = list(kinds)
variable = charts.chosen_variable(analysis)
ui.selectbox_state(s.W_VARIABLE, names, variable)
if names:
    variable = pick_variable.selectbox("Variable", names, key=s.W_VARIABLE,
                                       format_func=lambda v: display_text(f"Variable: {v}"),
                                       help="The variable of the error curves (bottom left)",
                                       label_visibility="collapsed")
with pick_detail:
    if scope_kind == "sub" and runs_:  # the verdict below names the group in words
        subpopulations = {sub.id: sub for sub in runs_[0].subsets.subpopulations}
        ui.selectbox_state(s.W_SCOPE_SUB, list(subpopulations), runs_[0].result.argmax.id)
        word = "finding" if runs_[0].search is not None else "subpopulation"
        st.selectbox("Subpopulation", list(subpopulations), key=s.W_SCOPE_SUB,
                     format_func=lambda i: f"{word} #{i} · {subpopulations[i].size:,} rows",
                     label_visibility="collapsed")
    elif scope_kind == "filter":
        st.text_input("Filter", key=s.W_FILTER, label_visibility="collapsed",
                      placeholder='e.g. age >= 40 and occupation in {"Sales", "Tech-support"}')
    elif scope_kind == "level":
        try:
            levels = (analysis.compute(f"levels:{variable}", runs.scope_levels, pred, variable)
                      if variable else [])
        except ValidationError as error:
            ui.show_error(error)
            levels = []
        ui.selectbox_state(s.W_SCOPE_LEVEL, levels, levels[0] if levels else None)
        if levels:
            st.selectbox(f"Level or range of {md(variable)}", levels, key=s.W_SCOPE_LEVEL,
                         format_func=display_text, label_visibility="collapsed")

try:
    scope = charts.review_scope(analysis, runs_)
except ValidationError as error:
    ui.show_warning(f"{error} Showing the full population.")
    scope = runs.resolve_scope(pred, "full")

own_calibration = False
if not scope.is_full:
    if scope.kind == "argmax":  # the verdict below names the group and how it was chosen
        pick_detail.caption(f"{scope.subpopulation.size:,} of {pred.n:,} rows",
                            help=display_text(scope.description))
    if charts.on_score_alone_scope(analysis, scope):  # its deviation: zero by construction
        pick_own.caption("Own calibration", help=display_text(
            f"Top left: the group's own calibration. {SCORE_ALONE[0].upper()}"
            f"{SCORE_ALONE[1:]}, so it is judged by its own."))
    else:
        own_calibration = pick_own.toggle(
            "Own calibration", key="w_review_own",
            help="Top left: the subpopulation's own calibration instead of its deviation from "
                 "the full population.")

corp = pick_corp.toggle(
    "CORP", key="w_review_corp",
    help="Top right: the CORP reliability diagram (isotonic regression, no bins, with its "
         "consistency band) in place of the binned diagrams.")


def _open_finding(rank: int) -> None:
    st.session_state[s.W_SCOPE] = "sub"
    st.session_state[s.W_SCOPE_SUB] = rank


def _search() -> None:
    st.session_state[s.W_SUB_MODE] = "searched"
    st.session_state[s.SUBPOP] = {"key": analysis.key,
                                  **s.subpopulation_params(st.session_state, kinds)}


def verdict_block(results):
    """Show the verdict; a finding opens as the scope; buttons compute what is missing."""
    run = runs_[0] if runs_ else None
    null, estimate, run_key = None, None, None
    if run is not None and run.search is None:
        run_key = runs.run_id(analysis.key, st.session_state.get(s.SUBPOP) or {})
        null = runs.held_null(st.session_state, run_key)
        draws = int(st.session_state.get(s.W_NULL_DRAWS) or 200)
        estimate = ui.null_estimate(analysis, run.result, draws)
        if null is None and (st.session_state.get("review_null_request") == run_key or (
                st.session_state.pop(s.AUTO_NULL, False)
                and estimate.seconds <= limits.AUTO_START_SECONDS)):
            try:
                null = ui.null_of(analysis, run.result, run_key, seed=run.seed, draws=draws)
            except ValidationError as error:
                ui.show_error(error)
        st.session_state[s.NULL_SHOWN] = null is not None
    verdict = review.scope_verdict(
        pred, results, runs_, null=null, scope=scope,
        picked=monitoring.picked_selection(st.session_state, analysis.key,
                                           st.session_state.get(s.W_FILTER)),
        null_estimate=None if estimate is None else f"about {estimate.seconds:,.1f} s")
    fix = fixing.held_section(st.session_state, analysis.key)  # judged on the Fix page (#27)
    verdict = verdict if fix is None else verdict.with_sections(fix)
    watch = monitoring.held_section(st.session_state, analysis.key)  # the Monitor page (#29)
    verdict = verdict if watch is None else verdict.with_sections(watch)
    finding_sentences = {line.sentence: line for line in verdict.findings}
    with st.container(key="verdict", border=True):  # the headline and the next step in view
        st.markdown(md(verdict.sentences[0]) + f"  \n**Next step:** {md(verdict.next_step)}")
        folded, action = (st.columns([5, 1.4], vertical_alignment="center")
                          if run is None or (run.search is None and null is None)
                          else (st.container(), None))
        more = review.folded_label(verdict)
        if more:  # the rest folds: the grid stays on the first 1440×900 screen (#40)
            with folded.expander(more, expanded=False):
                for sentence in verdict.sentences[1:]:
                    line = finding_sentences.get(sentence)
                    if line is None:
                        st.markdown(md(sentence))
                    else:
                        st.button(md(f"#{line.rank} · {sentence}"),
                                  key=f"open_finding_{line.rank}", type="tertiary",
                                  on_click=_open_finding, args=(line.rank,),
                                  help="Open this finding as the scope of the four charts")
                for section in verdict.sections:
                    st.markdown(f"**{md(section.title)}** " + md(" ".join(section.sentences)))
                for line in verdict.details:  # the statistics, in the analyst's symbols
                    st.caption(md(line))
    if action is not None:
        action = action.container()
        if run is None:
            from mcviz.search import search_estimate

            cost = search_estimate(pred.n, len(kinds))
            action.button(f"Search subpopulations (about {cost.seconds:,.0f} s)",
                          key="verdict_search", on_click=_search, icon=":material/search:",
                          disabled=not kinds, help=f"The guided search: {cost}.")
        else:
            action.button(f"Test M against chance (about {estimate.seconds:,.1f} s)",
                          key="verdict_null", icon=":material/casino:",
                          on_click=st.session_state.__setitem__,
                          args=("review_null_request", run_key), help=str(estimate))
    return verdict


results = review.review_results(pred, scope, variable=variable, bins=ui.bin_counts(),
                                compute=analysis.compute, corp=corp)
verdict = verdict_block(results)
with st.spinner("Computing the review grid…"):
    cells = charts.review_cells(analysis, scope, variable, own_calibration=own_calibration,
                                presentation=ui.presentation(), corp=corp, runs_=runs_)
names_of_cells = ("cumulative", "reliability", "curves", "lcs")
for row in (0, 1):
    for slot, position in zip(st.columns(2, gap="small"), (2 * row, 2 * row + 1), strict=True):
        with slot:
            cell = cells[position]
            if isinstance(cell, str):
                ui.show_info(cell or "Nothing to show.")
            else:
                ui.show_figure(cell, key=f"review_{names_of_cells[position]}")

name_b, problem = comparing.review_b_column(st.session_state, analysis.frame.columns,
                                            pred.score_column)
if problem:
    ui.show_warning(problem)
if name_b is not None:  # a group opened from the Compare page: model B beside A (#43)
    try:
        analysis_b = analysis.with_score(name_b)
        scope_b = charts.review_scope(analysis_b, ())
        cells_b = charts.review_cells(analysis_b, scope_b, None, own_calibration=own_calibration,
                                      presentation=ui.presentation(), corp=corp)
    except ValidationError as error:
        ui.show_warning(f"Model B ({display_text(name_b)}) cannot be shown on this scope: "
                        f"{error}")
    else:
        with st.container(key="review_b"):
            head, hide = st.columns([5, 1], vertical_alignment="center")
            head.markdown(f"**Model B: {code(name_b)}** on the same rows "
                          f"({scope_b.subpopulation.size:,}) · above: A, {code(pred.score_column)}")
            hide.button("Show A only", key="review_b_hide", on_click=st.session_state.update,
                        args=({s.W_REVIEW_B: ""},))
            for slot, cell, part in zip(st.columns(2, gap="small"), cells_b[:2],
                                        names_of_cells[:2], strict=True):
                with slot:
                    if isinstance(cell, str):
                        ui.show_info(cell or "Nothing to show.")
                    else:
                        ui.show_figure(cell, key=f"review_b_{part}")

export = pick_export.popover("Export", icon=":material/download:",
                             help="The deck (PPTX or PDF), or the four charts as one slide")
with export:
    st.markdown("**Deck**: the verdict, one slide per confirmed finding with its four charts, "
                "and the method")
    charts.deck_buttons(analysis, verdict, runs_, key="review_deck")
    st.divider()
    st.markdown("**Slide**: the four charts as one 1920×1080 PNG or SVG")
    if chromium_path() is None:
        st.caption("Slide export needs chromium on the server (`apt-get install chromium`).")
    else:
        fmt = st.segmented_control("Format", ["png", "svg"], default="png", key="w_slide_fmt")
        if st.button("Render the slide"):
            try:
                with st.spinner("Rendering the slide…"):
                    figures = [c for c in cells if not isinstance(c, str)]
                    st.session_state["slide"] = (fmt, slide_image(figures, fmt or "png"))
            except ExportUnavailableError as error:
                st.warning(str(error))
        slide = st.session_state.get("slide")
        if slide is not None:
            st.download_button(f"Download {slide[0].upper()}", slide[1],
                               file_name=f"mcviz-review.{slide[0]}",
                               mime="image/png" if slide[0] == "png" else "image/svg+xml")
ui.sync()
