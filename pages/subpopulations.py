"""Subpopulations page: multi-calibration over random subpopulations, with argmax drill-down."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from dashboard import charts, runs, ui
from dashboard import state as s
from dashboard.text import code
from dashboard.text import escape_markdown as md
from mcviz.binning import reliability_diagrams
from mcviz.deviation import subpopulation_deviation
from mcviz.errors import ValidationError
from mcviz.figures import deviation_figure, format_number, subpopulation_scatter_figure
from mcviz.report import safe_csv
from mcviz.subpopulations import (
    filter_subpopulation,
    group_subpopulations,
)
from mcviz.weighting import SCHEMES

ui.setup_page("subpopulations", "Subpopulations")
analysis = ui.require_current()
pred = analysis.pred
kinds = ui.require_covariates(analysis)

WEIGHTINGS = [ui.NO_SCORE, *SCHEMES]


def _reweight() -> None:
    chosen = st.session_state["sub_weighting"]
    scheme = None if chosen == ui.NO_SCORE else chosen
    rho = analysis.mapping.rho
    if scheme in ("proportional", "proportional-shifted") and rho is None:
        rho = 0.01  # the Data page's default: 1/S alone is unbounded near S = 0
    st.session_state[s.MAPPING] = replace(analysis.mapping, weighting=scheme,
                                           rho=rho if scheme else None)


st.selectbox(
    "Reweighting (multi-calibration paper, Appendices A and B)", WEIGHTINGS,
    index=WEIGHTINGS.index(analysis.mapping.weighting or ui.NO_SCORE), key="sub_weighting",
    on_change=_reweight,
    help="Multiplies the weights, then everything is recomputed: proportional 1/max(S, ρ), "
         "shifted 1/(S + ρ), low prevalence 1/A for positive labels. ρ is set on the Data page.",
)

with st.form("subpop_settings", border=False):
    chosen = [c for c in st.session_state.get(s.W_SUBCOVS) or [] if c in kinds] or list(kinds)
    st.session_state[s.W_SUBCOVS] = chosen
    st.multiselect("Covariates to split on", list(kinds), key=s.W_SUBCOVS)
    cells = st.columns(4)
    cells[0].number_input("ℓ (subpopulations)", min_value=1, max_value=20_000, step=100,
                          key=s.W_L)
    cells[1].number_input("m (minimum size)", min_value=2, max_value=max(pred.n, 2), step=10,
                          key=s.W_M)
    cells[2].number_input("Seed", min_value=0, max_value=2**31 - 1, key=s.W_SEED)
    cells[3].number_input("Repeats (seeds)", min_value=1, max_value=20, key=s.W_REPEATS)
    submitted = st.form_submit_button("Compute", type="primary")

params = {
    "covariates": list(st.session_state[s.W_SUBCOVS] or kinds),
    "n_subpopulations": int(st.session_state[s.W_L]),
    "min_size": int(st.session_state[s.W_M]),
    "seed": int(st.session_state[s.W_SEED]),
    "repeats": int(st.session_state[s.W_REPEATS]),
}
previous = st.session_state.get(s.SUBPOP)
if previous is None and st.session_state.pop(s.AUTO_SUBPOP, False):
    st.session_state[s.SUBPOP] = {"key": analysis.key, **params}
if submitted or (previous is not None and previous.get("key") != analysis.key):
    st.session_state[s.SUBPOP] = {"key": analysis.key, **params}
    if submitted:
        st.session_state.pop(s.W_SELECTED, None)


try:
    runs_ = ui.subpopulation_runs(analysis, progress=True)
except ValidationError as error:
    ui.show_error(error)
    runs_ = ()
if st.session_state.get(s.SUBPOP) is None:
    st.info("Choose the settings and press **Compute**.")


def drill_down(sub, row: dict | None) -> None:
    """Subpopulation versus full population, its own calibration and reliability.

    Each chart carries its own numbers in its title (the deviation's D/σ on the deviation
    chart, the subpopulation's own D/σ on its own calibration chart): no number floats
    between charts.
    """
    weight = float(pred.weight[sub.index].sum())
    st.markdown(f"**{md(sub.description)}** · {sub.size:,} rows ({sub.size / pred.n:.1%}) · weight "
                f"{format_number(weight)} ({weight / pred.weight_total:.1%} of the total)")
    if sub.conditions:
        st.markdown("Path of splits: " + " → ".join(code(c) for c in sub.conditions))
    left, right = ui.chart_slots(2)
    with left:
        deviation = ui.compute(f"deviation:{sub.description}", analysis.key,
                               subpopulation_deviation, pred, sub.index,
                               description=sub.description)
        ui.show_figure(ui.figure(deviation_figure, deviation,
                                 f"dev:{analysis.key}:{sub.description}",
                                 title="Deviation from the full population"),
                       key=f"dev_{sub.id}_{sub.description}")
    with right:
        own = ui.compute(f"own:{sub.description}", analysis.key, runs.own_cumulative, pred,
                         sub.index)
        ui.show_figure(ui.cumulative_fig(own, title="The subpopulation's own calibration",
                                         cache=f"own:{analysis.key}:{sub.description}"),
                       key=f"own_{sub.id}_{sub.description}")
    result = analysis.compute(f"reliability:{sub.description}", reliability_diagrams, pred,
                              index=sub.index, n_bins=list(ui.bin_counts()),
                              kind="equal_width", n_bootstrap=0, description=sub.description)
    ui.show_figure(charts.reliability_fig(result, f"relsub:{analysis.key}:{sub.description}"),
                   key=f"rel_{sub.id}_{sub.description}")


if runs_:
    subsets, result = runs_[0].subsets, runs_[0].result
    table = result.table
    cells = st.columns(4)
    cells[0].metric("M", format_number(result.metric), help="largest Dₖ/σₖ-weighted deviation")
    cells[1].metric("M/σ₀", format_number(result.metric_z))
    cells[2].metric("Multi-ablate", format_number(result.ablate))
    cells[3].metric("Expectation", format_number(result.expectation))
    if len(runs_) > 1:
        ui.show_table(runs.repeats_table(runs_))
    if subsets.notice:
        ui.caption(subsets.notice)
    argmax = result.argmax
    st.success(f"Worst subpopulation (argmax, #{argmax.id}): **{md(argmax.description)}** — "
               f"{argmax.size:,} rows")

    by_id = {s.id: s for s in subsets.subpopulations}
    ids = list(by_id)
    ui.selectbox_state(s.W_SELECTED, ids, argmax.id)
    top = table.sort_values("normalized", ascending=False).head(50).reset_index(drop=True)

    def _pick_row() -> None:
        rows = st.session_state["sub_table"]["selection"]["rows"]
        if rows:
            st.session_state[s.W_SELECTED] = int(top.loc[rows[0], "id"])

    def _pick_point() -> None:
        points = st.session_state["sub_scatter"]["selection"]["points"]
        if points:
            value = points[0].get("customdata")
            value = value[0] if isinstance(value, list | tuple) else value
            if value is not None:
                st.session_state[s.W_SELECTED] = int(value)

    left, right = ui.chart_slots(2)
    with left:
        st.caption("Top 50 subpopulations by normalised value (click a row to open it)")
        shown = top[["id", "description", "size", "kuiper_z", "p_value", "normalized"]].rename(
            columns={"kuiper_z": "D/σ", "p_value": "p", "normalized": "normalised"})
        st.dataframe(shown, hide_index=True, key="sub_table", on_select=_pick_row,
                     column_config={
                         "D/σ": st.column_config.NumberColumn(format="%.3f"),
                         "p": st.column_config.NumberColumn(format="%.2e"),
                         "normalised": st.column_config.NumberColumn(format="%.4f"),
                     },
                     selection_mode="single-row", height=420)
        st.download_button("Download all subpopulations (CSV)", safe_csv(table),
                           file_name="subpopulations.csv", mime="text/csv")
    with right:
        scatter = subpopulation_scatter_figure(result, selected=st.session_state[s.W_SELECTED],
                                               presentation=ui.presentation())
        ui.show_figure(scatter, key="sub_scatter", on_select=_pick_point)
        drawn = len(scatter.data[0].x)
        if drawn < len(table):
            st.caption(f"The {drawn:,} largest D/σ of {len(table):,} are drawn.")

    st.selectbox(
        "Drill down into", ids, key=s.W_SELECTED,
        format_func=lambda i: ("★ " if i == argmax.id else "") + f"#{i} · {by_id[i].description}",
    )
    selected = by_id[st.session_state[s.W_SELECTED]]

    def _open_in_review() -> None:
        st.session_state[s.W_SCOPE] = "argmax" if selected.id == argmax.id else "sub"
        st.session_state[s.W_SCOPE_SUB] = selected.id

    if st.button("Open in Review (four charts side by side)", icon=":material/dashboard:",
                 on_click=_open_in_review):
        st.switch_page(ui.page_path("review"))
    match = table[table["id"] == selected.id]
    with st.expander("Drill-down", expanded=True):
        drill_down(selected, match.iloc[0].to_dict() if len(match) else None)

st.divider()
st.subheader("Your own subpopulation")
mode = st.radio("Define it by", ["filter", "group"], horizontal=True, key="own_mode",
                format_func={"filter": "a filter", "group": "a group column"}.get)
if mode == "filter":
    expression = st.text_input(
        "Filter", key=s.W_FILTER,
        placeholder='e.g. age >= 40 and occupation in {"Sales", "Tech-support"}',
    )
    if expression.strip():
        try:
            own = filter_subpopulation(pred, expression)
        except ValidationError as error:
            ui.show_error(error)
        else:
            drill_down(own, None)
else:
    group_columns = [c for c, k in kinds.items() if k == "nominal"
                     or set(pd.unique(pred.covariates[c].dropna())[:3]) <= {0, 1}]
    ui.selectbox_state(s.W_GROUP, group_columns, group_columns[0] if group_columns else None)
    if group_columns:
        column = st.selectbox("Group column", group_columns, key=s.W_GROUP)
        try:
            groups = group_subpopulations(pred, [column])
        except ValidationError as error:
            ui.show_error(error)
        else:
            stats = pd.DataFrame([
                {"group": g.description, "size": g.size,
                 "D/σ": (r := runs.own_cumulative(pred, g.index)).kuiper_z, "p-value": r.p_value}
                for g in groups
            ])
            ui.show_table(stats)
            names = [g.description for g in groups]
            picked = st.selectbox("Open group", names, key="own_group")
            drill_down(groups[names.index(picked)], None)
    else:
        st.info("No nominal or 0/1 covariates to group by.")
ui.sync()
