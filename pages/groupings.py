"""Groupings page: group calibration errors of one grouping, agglomerated several ways."""

import pandas as pd
import streamlit as st

from dashboard import tables, ui
from dashboard.text import escape_markdown
from mcviz.stats.agglomeration import calibration_score, cvar_curve
from mcviz.errors import ValidationError
from mcviz.present.figures import cvar_curve_figure, group_errors_figure
from mcviz.stats.groupings import covariate_bins, local_calibration, score_bins
from mcviz.text import display_text

ui.setup_page("groupings", "Groupings")
analysis = ui.require_current()
pred = analysis.pred

st.caption("Every calibration score is a grouping (which observations are compared) and an "
           "agglomeration of the groups' errors, here mean(response − score) as on every other "
           "page (> 0: under-prediction); Höltgen & Williamson (2023) write c(I) with the "
           "opposite sign.")
kinds = dict(pred.covariate_kinds)
options = ["score", "covariate", "local"] if kinds else ["score"]
grouping = st.radio("Grouping", options, horizontal=True, key="grouping_kind", format_func={
    "score": "Score bins", "covariate": "Covariate bins (one or two)",
    "local": "k nearest neighbours in input space"}.get)
try:
    if grouping == "score":
        cells = st.columns(2)
        n_bins = cells[0].number_input("Bins", 2, 1000, 10, key="grouping_bins")
        strategy = cells[1].radio("Strategy", ["width", "count"], horizontal=True,
                                  key="grouping_strategy")
        groups = ui.compute("score_bins", analysis.key, score_bins, pred, n_bins=int(n_bins),
                            strategy=strategy)
    elif grouping == "covariate":
        cells = st.columns(3)
        columns = cells[0].multiselect("Covariates (one or two)", list(kinds),
                                       default=list(kinds)[:1], max_selections=2,
                                       key="grouping_columns", format_func=display_text)
        n_bins = cells[1].number_input("Bins per ordinal covariate", 2, 50, 5,
                                       key="grouping_cbins")
        strategy = cells[2].radio("Strategy", ["count", "width"], horizontal=True,
                                  key="grouping_cstrategy")
        if not columns:
            st.info("Choose one or two covariates.")
            st.stop()
        groups = ui.compute("covariate_bins", analysis.key, covariate_bins, pred,
                            columns=list(columns), n_bins=int(n_bins), strategy=strategy)
    else:
        cells = st.columns(2)
        k = cells[0].number_input("k (group size)", 2, max(pred.n, 2), min(100, pred.n),
                                  key="grouping_k")
        centres = cells[1].number_input("Centres (a seeded sample; 0 = every row)", 0, pred.n,
                                        min(2000, pred.n), key="grouping_centres")
        local = ui.compute_with_progress(
            "local", analysis.key, local_calibration, pred, None,
            label="k nearest neighbours", k=int(k), max_centres=int(centres) or None, seed=0)
        groups = local.groups
except ValidationError as error:
    ui.show_error(error)
    st.stop()

if groups.notice:
    ui.caption(groups.notice)
AGGLOMERATIONS = {  # the agglomeration's name (CLI, API) -> what it says (#40: words first)
    "mean": "mean error over the groups", "max": "the worst group's error",
    "cvar:0.9": "mean over the worst 10% of groups", "range": "largest minus smallest error",
    "std": "spread of the errors", "superquantile:0.5": "mean over the worst half of groups"}
rows = []
for name, words in AGGLOMERATIONS.items():
    score = calibration_score(groups, name)
    rows.append({"agglomeration": f"{words} ({name})", "kind": score.kind,
                 "value": score.value, "worst group": score.worst_group,
                 "its error": score.worst_error})
scores = pd.DataFrame(rows)
st.markdown(f"**{escape_markdown(groups.kind)}**: {escape_markdown(groups.description)} — "
            f"{groups.n_groups:,} groups")
ui.show_table(scores)

table = groups.table()
left, right = ui.chart_slots(2)
with left:
    if group_errors_figure is not None:
        ui.show_figure(group_errors_figure(groups, sort=True, presentation=ui.presentation()),
                       key="grouping_errors")
with right:
    if cvar_curve_figure is not None:
        curve = cvar_curve(groups)
        ui.show_figure(cvar_curve_figure(curve, alpha=0.9, presentation=ui.presentation()),
                       key="grouping_cvar")
shown = table.head(500).rename(columns={  # people read words; the CSV keeps the names
    "size": "rows", "effective_size": "effective rows", "weight_total": "weight",
    "mass": "share of weight", "error": "error (response − score)",
    "standard_error": "standard error", "mean_score": "mean score",
    "mean_label": "mean response"})
st.dataframe(tables.displayed(tables.formatted(shown)), hide_index=True)
ui.csv_download("Download the group table (CSV)", table, "groups.csv")
ui.sync()
