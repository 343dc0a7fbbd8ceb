"""Variables page: VECE ranking, LOESS error curves, the gap curve and the cumulative view."""

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import charts, runs, tables, ui
from dashboard import state as s
from dashboard.text import escape_markdown as md
from mcviz import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.subpopulations import group_subpopulations
from mcviz.text import display_text

ui.setup_page("variables", "Variables")
analysis = ui.require_current()
pred = analysis.pred
kinds = ui.require_covariates(analysis)

try:
    ranking = charts.variable_ranking(analysis)
except ValidationError as error:  # e.g. real-valued responses: no predicted class, no error
    ui.show_info(f"Variable-based calibration is not available for these data: {error} "
                 "The cumulative view along each variable is below.")
    ranking = None
else:
    st.markdown("**Variables ranked: evidence of a miscalibration along them first, then by "
                "variable-based calibration error (VECE)**")
    table, header_help = tables.variable_table(ranking)
    ui.show_table(table, help=header_help, height=min(40 + 35 * len(ranking), 360))
    ui.caption("Gaps are |error rate − predicted error rate| in percentage points: the average "
               "over the rows (VECE), and the largest where the data can say it (VCE(v*) at "
               "\"where\"; thin-support stretches and small levels are left out; \"rows "
               "there\": the rows it rests on). \"Evidence\": the cumulative differences along "
               "the variable (no span) and their p adjusted over the variables. Variables with "
               "an adjusted p below 0.05 or a largest gap beyond noise come first. Hover a "
               "header for more; warnings are listed under the variable's charts.")

names = list(kinds)
if ranking is not None:
    ranked = [v for v in ranking["name"] if v in kinds]
    names = ranked + [v for v in kinds if v not in set(ranked)]
ui.selectbox_state(s.W_VARIABLE, names, names[0])
variable = st.selectbox("Variable", names, key=s.W_VARIABLE,
                        format_func=lambda v: display_text(f"{v} ({kinds[v]})"))

if ranking is not None:
    try:
        drawn = charts.variable_figures(analysis, variable)
        curves = charts.variable_result(analysis, variable)
    except ValidationError as error:
        ui.show_info(error)
        drawn, curves = [], None
    for slot, (title, figure) in zip(ui.chart_slots(len(drawn)) if drawn else [], drawn,
                                     strict=True):
        with slot:
            ui.show_figure(figure, key=f"var_{title}_{variable}")
    if curves is not None:
        if hasattr(curves, "levels"):
            ui.caption("Bars of levels with too few rows to say something are drawn lighter "
                       "and left out of VCE(v*); rates and intervals are clipped to [0, 1].")
        else:
            ui.caption("Grey stretches: thin support (too few rows near the point), drawn "
                       "lighter and left out of VCE(v*); markers: values holding at least 5% "
                       "of the weight, estimated from their own rows; rates clipped to [0, 1].")
        for warning in curves.warnings:
            ui.show_warning(warning)
        if hasattr(curves, "levels"):
            st.markdown(f"**Each level of {md(variable)}: size and 95% intervals**")
            ui.show_table(charts.level_table(curves))

if kinds[variable] == "ordinal":
    try:
        result = ui.compute("cumulative_by", analysis.key, cumulative_differences, pred,
                            order_by=variable)
    except ValidationError as error:
        ui.show_error(error)
    else:
        ui.cumulative_metrics(result)
        ui.show_figure(ui.cumulative_fig(
            result, title=f"Cumulative differences along {variable}",
            cache=f"cumvar:{analysis.key}:{variable}"),
                       key=f"var_cum_{variable}")
        if result.n_missing:
            ui.caption(f"{result.n_missing:,} rows with {variable} missing are left off the "
                       "path.")
else:
    try:
        groups = group_subpopulations(pred, [variable])
    except ValidationError as error:
        ui.show_error(error)
    else:
        rows = []
        prefix = "weighted mean" if pred.weighted else "mean"  # as weighted as D/σ beside them
        for group in groups:
            own = ui.compute(f"own:{group.description}", analysis.key, runs.own_cumulative, pred,
                             group.index)
            rows.append({"level": group.description, "size": group.size,
                         f"{prefix} score": float(np.average(pred.score[group.index],
                                                             weights=pred.weight[group.index])),
                         f"{prefix} response": float(np.average(
                             pred.label[group.index], weights=pred.weight[group.index])),
                         "Kuiper D": own.kuiper, "D/σ": own.kuiper_z, "p-value": own.p_value})
        st.markdown(f"**Calibration within each level of {md(variable)}**")
        ui.show_table(pd.DataFrame(rows).sort_values("D/σ", ascending=False))
ui.sync()
