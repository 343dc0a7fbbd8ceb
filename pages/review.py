"""Review page: the four charts of one scope side by side (the page a meeting opens).

Scope: the full population, the argmax subpopulation, a generated subpopulation by id, a filter
expression, or one level / range of a variable. Grid: cumulative differences with the triangle
(a subpopulation: its deviation from the full population, its own calibration one click away),
reliability diagrams at the chosen bin counts, LOESS error curves along the chosen variable
restricted to the scope, and the LCS curve. Each chart's numbers are in its own title.
"""

import streamlit as st

from dashboard import charts, runs, ui
from dashboard import state as s
from dashboard.text import escape_markdown as md
from mcviz.errors import ValidationError
from mcviz.report import ExportUnavailableError, chromium_path, slide_image
from mcviz.text import display_text

ui.setup_page("review", "Review")
analysis = ui.require_current()
pred = analysis.pred
kinds = dict(pred.covariate_kinds)
runs_ = ui.subpopulation_runs(analysis)

SCOPE_NAMES = {"full": "Full population", "argmax": "Worst subpopulation (argmax)",
               "sub": "Generated subpopulation", "filter": "Filter", "level": "Level of a variable"}
pick_scope, pick_detail, pick_variable, pick_own, pick_export = st.columns(
    [2.4, 2.6, 2, 1.8, 1.2], vertical_alignment="bottom")
ui.selectbox_state(s.W_SCOPE, list(SCOPE_NAMES), "full")
scope_kind = pick_scope.selectbox("Scope", list(SCOPE_NAMES), key=s.W_SCOPE,
                                  format_func=SCOPE_NAMES.get)
names = list(kinds)
variable = charts.chosen_variable(analysis)
ui.selectbox_state(s.W_VARIABLE, names, variable)
if names:
    variable = pick_variable.selectbox("Variable", names, key=s.W_VARIABLE,
                                       format_func=lambda v: display_text(f"{v} ({kinds[v]})"))
with pick_detail:
    if scope_kind in ("argmax", "sub") and not runs_:
        st.info("Compute subpopulations on the **Subpopulations** page first.")
    elif scope_kind == "sub":
        subpopulations = {sub.id: sub for sub in runs_[0].subsets.subpopulations}
        ui.selectbox_state(s.W_SCOPE_SUB, list(subpopulations), runs_[0].result.argmax.id)
        st.selectbox("Subpopulation", list(subpopulations), key=s.W_SCOPE_SUB,
                     format_func=lambda i: display_text(f"#{i} · {subpopulations[i].description}"))
    elif scope_kind == "filter":
        st.text_input("Filter", key=s.W_FILTER,
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
                         format_func=display_text)

try:
    scope = charts.review_scope(analysis, runs_)
except ValidationError as error:
    ui.show_warning(f"{error} Showing the full population.")
    scope = runs.resolve_scope(pred, "full")

own_calibration = False
if not scope.is_full:
    if scope.kind == "argmax":
        pick_detail.caption(f"**{md(scope.description)}** · {scope.subpopulation.size:,} of "
                            f"{pred.n:,} rows · {charts.argmax_verdict(analysis, runs_).short}")
    own_calibration = pick_own.toggle(
        "Own calibration", key="w_review_own",
        help="Top left: the subpopulation's own calibration instead of its deviation from the "
             "full population.")

corp = pick_own.toggle(
    "CORP diagram", key="w_review_corp",
    help="Top right: the CORP reliability diagram (isotonic regression, no bins, with its "
         "consistency band) in place of the binned diagrams.")
with st.spinner("Computing the review grid…"):
    cells = charts.review_cells(analysis, scope, variable, own_calibration=own_calibration,
                                presentation=ui.presentation(), corp=corp)
names_of_cells = ("cumulative", "reliability", "curves", "lcs")
for row in (0, 1):
    for slot, position in zip(st.columns(2, gap="small"), (2 * row, 2 * row + 1), strict=True):
        with slot:
            cell = cells[position]
            if isinstance(cell, str):
                ui.show_info(cell or "Nothing to show.")
            else:
                ui.show_figure(cell, key=f"review_{names_of_cells[position]}")

with pick_export.popover("Slide", icon=":material/download:",
                         help="The four charts as one 1920×1080 PNG or SVG slide"):
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
