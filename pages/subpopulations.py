"""Subpopulations page: generated (Algorithm 1) or searched subpopulations, tested honestly.

Generated: M over ℓ random median splits, its null distribution (parametric bootstrap) and a
family-wise adjusted p-value per subpopulation; the worst one is a finding only when its
adjusted p is below 0.05. Searched: the guided search's findings, confirmed on held-out rows
(Holm-adjusted). Both feed the same table, scatter, drill-down and review view.
"""

from dataclasses import replace

import pandas as pd
import streamlit as st

from dashboard import charts, limits, review, runs, tables, ui
from dashboard import state as s
from dashboard.text import escape_markdown as md
from mcviz.stats.binning import reliability_diagrams
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.errors import ValidationError
from mcviz.present.figures import (
    deviation_figure,
    format_interval,
    format_number,
    format_percent,
    subpopulation_scatter_figure,
)
from mcviz.present.verdict import Selection, selected_sentence, selection_details
from mcviz.settings import NullSettings, SearchSettings, SubpopulationSettings
from mcviz.stats.cumulative import mean_rates
from mcviz.subpopulations import (
    SCORE_ALONE,
    filter_subpopulation,
    group_subpopulations,
    on_score_alone,
    split_words,
    subpopulation_words,
)
from mcviz.text import display_text
from mcviz.stats.weighting import SCHEMES

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

LOW_PREVALENCE = analysis.mapping.weighting == "low-prevalence"
W_MODE, W_CONDITIONS, W_FINDINGS = s.W_SUB_MODE, s.W_CONDITIONS, s.W_FINDINGS
NULL_REQUEST = "null_request"  # the run id whose null distribution the user asked for
mode = st.radio("Subpopulations", list(runs.MODES), key=W_MODE, horizontal=True,
                format_func=runs.MODES.get,
                help="Generated: ℓ random median splits of the covariates (Algorithm 1 of paper "
                     "000). Searched: a guided search for the largest D/σ on "
                     f"{1 - SearchSettings.holdout:.0%} of the rows, confirmed on the other "
                     f"{SearchSettings.holdout:.0%} (the held-out share).")

with st.form("subpop_settings", border=False):
    chosen = [c for c in st.session_state.get(s.W_SUBCOVS) or [] if c in kinds] or list(kinds)
    st.session_state[s.W_SUBCOVS] = chosen
    st.multiselect("Covariates to split on" if mode == "generated" else "Covariates to search",
                   list(kinds), key=s.W_SUBCOVS, format_func=display_text)
    cells = st.columns(4)
    if mode == "generated":  # labels, bounds and help: mcviz.settings
        cells[0].number_input(**SubpopulationSettings.setting("n_subpopulations").widget(),
                              key=s.W_L)
        cells[1].number_input(**{**SubpopulationSettings.setting("min_size").widget(),
                                 "max_value": max(pred.n, 2), "step": 10}, key=s.W_M)
        cells[3].number_input(**SubpopulationSettings.setting("repeats").widget(),
                              key=s.W_REPEATS)
    else:
        cells[0].number_input(**SearchSettings.setting("max_conditions").widget(),
                              key=W_CONDITIONS)
        cells[1].number_input(**SearchSettings.setting("n_findings").widget(), key=W_FINDINGS)
    cells[2].number_input(**SubpopulationSettings.setting("seed").widget(), key=s.W_SEED)
    submitted = st.form_submit_button("Compute", type="primary")

params = s.subpopulation_params(st.session_state, kinds)
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
elif runs_ and (st.session_state[s.SUBPOP].get("mode", "generated") != mode):
    st.caption("Showing the subpopulations last computed; press **Compute** for the other kind.")


def drill_down(sub, row: dict | None) -> None:
    """Subpopulation versus full population, its own calibration and reliability.

    Each chart carries its own numbers in its title (the deviation's D/σ on the deviation
    chart, the subpopulation's own D/σ on its own calibration chart): no number floats
    between charts.
    """
    weight = float(pred.weight[sub.index].sum())
    # words for people (#40); the exact filter, which a link re-parses, in the caption
    st.markdown(f"**{md(subpopulation_words(pred, sub))}** · {sub.size:,} rows "
                f"({sub.size / pred.n:.1%}) · weight {format_number(weight)} "
                f"({weight / pred.weight_total:.1%} of the total)")
    if len(sub.conditions) > 1:
        st.markdown("Splits, in the order taken: "
                    + " → ".join(md(step) for step in split_words(pred, sub)))
    ui.caption(f"Filter: {sub.description}")
    note = None
    if row is not None and runs_:  # picked from the table: its own p is no test (#40)
        if runs_[0].search is None:
            chosen_among(sub, row)
        largest = runs_[0].search is None and sub.id == runs_[0].result.argmax.id
        note = review.chosen_note_by_id(sub.id, runs_, null, largest=largest)
    left, right = ui.chart_slots(2)
    with left:
        if on_score_alone(pred, sub):  # a flat line and a D/σ of noise
            ui.show_info("Deviation from the full population: not drawn. "
                         f"{SCORE_ALONE[0].upper()}{SCORE_ALONE[1:]}; its own calibration "
                         "(beside) shows its gap.")
        else:
            deviation = ui.compute(f"deviation:{sub.description}", analysis.key,
                                   subpopulation_deviation, pred, sub.index,
                                   description=sub.description)
            ui.show_figure(ui.figure(deviation_figure, deviation,
                                     f"dev:{analysis.key}:{sub.description}:{note}",
                                     title="Deviation from the full population", p_note=note),
                           key=f"dev_{sub.id}_{sub.description}")
    with right:
        own = ui.compute(f"own:{sub.description}", analysis.key, runs.own_cumulative, pred,
                         sub.index)
        ui.show_figure(ui.cumulative_fig(own, title="The subpopulation's own calibration",
                                         cache=f"own:{analysis.key}:{sub.description}",
                                         p_note=note),
                       key=f"own_{sub.id}_{sub.description}")
    result = analysis.compute(f"reliability:{sub.description}", reliability_diagrams, pred,
                              index=sub.index, n_bins=list(ui.bin_counts()),
                              kind="equal_width", n_bootstrap=0, description=sub.description)
    ui.show_figure(charts.reliability_fig(result, f"relsub:{analysis.key}:{sub.description}"),
                   key=f"rel_{sub.id}_{sub.description}")


def chosen_among(sub, row: dict) -> None:
    """Say what a subpopulation picked from the generated table is: never its own p.

    "Largest of 1,000 (one of 1,000): not yet tested against chance" until the null
    distribution exists, then judged by its adjusted p-value (:mod:`mcviz.present.verdict`).
    """
    result = runs_[0].result
    adjusted = row.get("p_adjusted")
    tested = null is not None and adjusted is not None and adjusted == adjusted
    selection = Selection(int(result.n_subpopulations), largest=sub.id == result.argmax.id,
                          p_adjusted=float(adjusted) if tested else None,
                          draws=int(null.draws) if tested else 0)
    said, _ = selected_sentence(selection, description=subpopulation_words(pred, sub),
                                size=sub.size, total=pred.n,
                                rates=mean_rates(pred, index=sub.index),
                                binary=pred.response_kind == "binary")
    st.markdown(md(said), help=selection_details(selection))


def null_section(result, run: str, seed: int):
    """Offer the null distribution of M (cost stated first), compute it with progress."""
    draws = int(st.number_input(**NullSettings.setting("draws").widget(), key=s.W_NULL_DRAWS))
    estimate = ui.null_estimate(analysis, result, draws)
    st.caption(f"Cost estimate: about {estimate.seconds:,.1f} s and "
               f"{estimate.bytes / 2**20:,.0f} MB ({md(estimate.what)}).")
    if st.button("Compute the null distribution", icon=":material/casino:"):
        st.session_state[NULL_REQUEST] = (run, draws)
    held = runs.held_null(st.session_state, run)
    if (st.session_state.pop(s.AUTO_NULL, False) and held is None  # a shared link's nu=1
            and estimate.seconds <= limits.AUTO_START_SECONDS):
        st.session_state[NULL_REQUEST] = (run, draws)
    request = st.session_state.get(NULL_REQUEST)
    if request is None or request[0] != run or (held is not None and held.draws == request[1]):
        return held
    try:
        return ui.null_of(analysis, result, run, seed=seed, draws=request[1])
    except ValidationError as error:
        ui.show_error(error)
        return held


def show_null(null) -> None:
    """M's Monte-Carlo p-value with its standard error, and the null's M/σ₀ quantiles."""
    cells = st.columns(3)
    cells[0].metric("p-value of M (null draws)",
                    f"{format_number(null.p_value, kind='p')} ± {null.p_value_se:.2g}",
                    help="(1 + #draws with M*/σ₀* ≥ M/σ₀) / (B + 1), ± its Monte-Carlo "
                         "standard error")
    cells[1].metric("Null median of M/σ₀", format_number(null.metric_z_median))
    cells[2].metric("Null 95% quantile of M/σ₀", format_number(null.metric_z_q95))
    redrawn = " (low-prevalence weights recomputed per draw)" if null.weights_redrawn else ""
    st.caption(f"{null.draws:,} draws of {null.kind} responses{redrawn}, seed {null.seed}. "
               "p_adjusted: single-step max-statistic adjustment over every subpopulation.")


def show_verdict(verdict: runs.Verdict) -> None:
    """A green box only for a finding (adjusted p < 0.05); otherwise words, not a success."""
    if verdict.is_finding:
        ui.show_success(verdict.text)
    else:
        ui.show_info(verdict.text)


def search_section(search) -> None:
    """The findings in sentences, their held-out table and the minimum detectable effect."""
    st.markdown(f"**Findings** of the guided search, tested on {search.n_holdout:,} rows it "
                f"did not search", help=f"{search.candidates_scored:,} candidate groups scored "
                f"on {search.n_search:,} rows; each finding's p-value is from its held-out rows, "
                "Holm-adjusted over the findings reported.")
    if not search.findings:
        st.info("The search found no subpopulation to report.")
    for finding in search.findings:
        st.markdown(f"{finding.rank}\\. {md(finding.sentence)}")
    for union in search.unions:  # confirmed findings offered as one problem
        st.markdown(md(union.sentence), help="The union's held-out D/σ exceeds each part's; its "
                    "p-value is Holm-adjusted over the findings and unions, and never below a "
                    "part's. Each part stays a finding (and is fixed as one).")
    st.caption("p shown: each finding's p-value on the held-out rows (the search never saw "
               "them; Brownian-range, or simulated for small groups of 0/1 responses), "
               "Holm-adjusted over the findings reported.")
    binary = pred.response_kind == "binary"
    scale, unit = (100.0, " points") if binary else (1.0, "")
    table = search.table
    if len(table):
        ui.show_table(pd.DataFrame({
            "rank": table["rank"], "description": table["description"],
            "share": table["share"], "size": table["size"],
            "held-out D/σ": table["holdout_kuiper_z"], "p (held-out)": table["p_value"],
            "p adjusted (Holm)": table["p_adjusted"],
            "confirmed": ["yes" if c else "no (not confirmed)" for c in table["confirmed"]],
            f"effect{unit}": table["mean_residual"] * scale,
            "95% CI": [format_interval(lo * scale, hi * scale)
                       for lo, hi in zip(table["ci_low"], table["ci_high"], strict=True)],
            "O/E": table["observed_expected"],
        }), column_order=["rank", "share", "size", "held-out D/σ", "p (held-out)",
                          "p adjusted (Holm)", f"effect{unit}", "95% CI", "O/E",
                          "description"])  # numbers in view; the long text last, scrolled
    mde = search.mde
    parts = [f"{format_percent(share)} of the rows: {format_number(shift * scale, digits=3)}{unit}"
             for share, shift in zip(mde.shares, mde.shift, strict=True)]
    st.markdown(f"Minimum detectable effect ({mde.power:.0%} power, α = {mde.alpha:g} after "
                f"adjustment for {mde.n_tests:,} tests): nothing larger than "
                + "; ".join(parts) + " would have been missed.")
    if search.notice:
        ui.caption(search.notice)


if LOW_PREVALENCE:
    st.warning("Low-prevalence weighting (Appendix B) makes the weights depend on the labels: "
               "σ and the Brownian p-values (column p, the drill-down's p-value) are void. Read "
               "the null distribution's adjusted p-values: it redraws the responses and "
               "recomputes the weights for every draw.")

null = None
if runs_:
    subsets, result = runs_[0].subsets, runs_[0].result
    search = runs_[0].search
    run = runs.run_id(analysis.key, st.session_state.get(s.SUBPOP) or {})
    if search is not None:
        search_section(search)
        show_verdict(runs.search_verdict(search))
    else:
        cells = st.columns(4)
        cells[0].metric("M", format_number(result.metric),
                        help="largest Dₖ/σₖ-weighted deviation")
        cells[1].metric("M/σ₀", format_number(result.metric_z))
        cells[2].metric("Multi-ablate", format_number(result.ablate))
        cells[3].metric("Expectation", format_number(result.expectation))
        if len(runs_) > 1:
            ui.show_table(runs.repeats_table(runs_))
        with st.expander("Test M against chance (null distribution)",
                         expanded=runs.held_null(st.session_state, run) is None):
            null = null_section(result, run, runs_[0].seed)
        st.session_state[s.NULL_SHOWN] = null is not None  # the link says nu=1
        if null is not None:
            show_null(null)
        show_verdict(runs.argmax_verdict(result, null, total=pred.n,
                                         words=subpopulation_words(pred, result.argmax)))
    if subsets.notice:
        ui.caption(subsets.notice)
    table = (runs.with_adjusted(result.table, null) if search is None
             else runs.with_holm(result.table, search))
    argmax = result.argmax

    by_id = {s.id: s for s in subsets.subpopulations if s.id != 0}  # 0: the reference
    ids = list(by_id)
    ui.selectbox_state(s.W_SELECTED, ids, argmax.id)
    # the full population (id 0) is the reference row at the top, not a subpopulation
    reference = table[table["id"] == 0].assign(description="full population (reference)")
    others = table[table["id"] != 0].sort_values("normalized", ascending=False).head(50)
    top = pd.concat([reference, others]).reset_index(drop=True)

    def _pick_row() -> None:
        rows = st.session_state["sub_table"]["selection"]["rows"]
        if rows and int(top.loc[rows[0], "id"]) != 0:
            st.session_state[s.W_SELECTED] = int(top.loc[rows[0], "id"])

    def _pick_point() -> None:
        points = st.session_state["sub_scatter"]["selection"]["points"]
        if points:
            value = points[0].get("customdata")
            value = value[0] if isinstance(value, list | tuple) else value
            if value is not None:
                st.session_state[s.W_SELECTED] = int(value)

    left, right = ui.chart_slots(2)
    with left, st.container(key="scrolls_sideways_subpopulations"):  # the filters are long
        st.caption("Top 50 subpopulations by normalised value (click a row to open it; the "
                   "filter is the last column: scroll sideways, or read it in words below)")
        p_name = ("p (void)" if LOW_PREVALENCE
                  else "p (all rows, unadjusted)" if search is not None else "p")
        shown = tables.displayed(tables.formatted(
            top[["id", "description", "size", "kuiper_z", "p_value", "p_adjusted",
                 "normalized"]].rename(columns={"kuiper_z": "D/σ", "p_value": p_name,
                                                "normalized": "normalised"})))
        config = {name: st.column_config.Column(width=width)
                  for name, width in tables.content_widths(shown).items()}
        config["p_adjusted"] = st.column_config.Column(
            width=config["p_adjusted"]["width"],
            help="generated: family-wise adjusted (null distribution; empty until it is "
                 "computed); searched: Holm, on the held-out rows")
        st.dataframe(shown, hide_index=True, key="sub_table", on_select=_pick_row,
                     column_config=config, selection_mode="single-row", height=420,
                     column_order=[*(c for c in shown.columns if c != "description"),
                                   "description"])  # numbers in view, the long text last
        ui.csv_download("Download all subpopulations (CSV)", table, "subpopulations.csv")
    with right:
        scatter = subpopulation_scatter_figure(result, selected=st.session_state[s.W_SELECTED],
                                               presentation=ui.presentation())
        ui.show_figure(scatter, key="sub_scatter", on_select=_pick_point)
        drawn = len(scatter.data[0].x)
        if drawn < len(table):
            st.caption(f"The {drawn:,} largest D/σ of {len(table):,} are drawn.")

    if not ids:
        st.info("No subpopulation beyond the full population to drill into.")
    else:
        st.selectbox(
            "Drill down into", ids, key=s.W_SELECTED,
            format_func=lambda i: ("★ " if i == argmax.id else "")  # in words below (#40)
            + f"#{i} · {by_id[i].size:,} rows" + (" · the largest deviation"
                                                   if i == argmax.id else ""),
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
        column = st.selectbox("Group column", group_columns, key=s.W_GROUP,
                              format_func=display_text)
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
            picked = st.selectbox("Open group", names, key="own_group", format_func=display_text)
            drill_down(groups[names.index(picked)], None)
    else:
        st.info("No nominal or 0/1 covariates to group by.")
ui.sync()
