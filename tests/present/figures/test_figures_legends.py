"""No figure's legend can cover its data: every builder puts it outside the plot area (#40).

Each figure builder mcviz exports is run on small planted data (a few thousand rows, seconds
in all) and its legend is located in the figure's own coordinates: a shown legend must sit
in the margin below the plot (anchored to the container's bottom edge, with margin reserved)
or beside it (x beyond the plot's right edge, left-anchored). A legend inside the plot area
(the old ``legend="inside"``, top left on a translucent box) covered the rising part of
Review's age curves. A new builder that is not listed here fails the coverage test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from mcviz import Predictions
from mcviz.present import figures

BUILDERS = sorted(name for name in figures.__all__
                  if name.endswith("_figure") and name != "escape_figure")


@pytest.fixture(scope="module")
def pred() -> Predictions:
    rng = np.random.default_rng(4)
    n = 3000
    age = rng.uniform(18, 80, n)
    score = rng.uniform(0.05, 0.95, n)
    label = (rng.random(n) < np.clip(score + 0.15 * (age > 50), 0, 1)).astype(int)
    return Predictions.from_arrays(score, label, covariates={
        "age": age, "g": pd.Categorical(rng.choice(["a", "b", "c"], n)),
        "when": pd.Timestamp("2026-01-05") + pd.to_timedelta(rng.integers(0, 60, n), unit="D")})


def _cumulative(pred, kw):
    from mcviz.stats.cumulative import cumulative_differences
    return [figures.cumulative_figure(cumulative_differences(pred), **kw)]


def _deviation(pred, kw):
    from mcviz.stats.deviation import subpopulation_deviation
    index = np.flatnonzero(pred.covariates["age"].to_numpy() >= 50)
    result = subpopulation_deviation(pred, index, description="age 50+")
    return [figures.deviation_figure(result, **kw)]


def _reliability(pred, kw):
    from mcviz.stats.binning import reliability_diagrams
    index = np.flatnonzero(pred.covariates["age"].to_numpy() >= 50)
    full = reliability_diagrams(pred, n_bins=(10,), n_bootstrap=5)
    return [figures.reliability_figure(full, **kw),
            figures.reliability_figure(reliability_diagrams(
                pred, n_bins=(10,), n_bootstrap=0, index=index, description="age 50+"), **kw)]


def _metrics_table(pred, kw):
    from mcviz.stats.binning import calibration_metrics
    return [figures.metrics_table_figure(calibration_metrics(pred), **kw)]


def _variables(pred, kw):
    from mcviz.stats.variables import level_calibration, variable_calibration
    result = variable_calibration(pred, "age")
    return [figures.variable_curves_figure(result, **kw), figures.gap_figure(result, **kw),
            figures.categorical_levels_figure(level_calibration(pred, "g"), **kw)]


def _lcs(pred, kw):
    from mcviz.stats.smoothing import local_calibration_score
    return [figures.lcs_figure(local_calibration_score(pred.score, pred.label), **kw)]


def _groupings(pred, kw):
    from mcviz.stats.agglomeration import cvar_curve
    from mcviz.stats.groupings import (
        covariate_bins,
        local_calibration,
        local_calibration_map,
        local_error_distribution,
        neighbourhood_tradeoff,
    )
    local = local_calibration(pred, ["age"], k=50)
    return [figures.cvar_curve_figure(cvar_curve(local.groups), alpha=0.9, **kw),
            figures.group_errors_figure(covariate_bins(pred, ["g", "age"], n_bins=3), **kw),
            figures.local_calibration_figure(
                local_calibration_map(local, pred, "age", "g"), **kw),
            figures.local_error_histogram_figure(
                local_error_distribution(local, bins=20), **kw),
            figures.neighbourhood_tradeoff_figure(
                neighbourhood_tradeoff(pred, ["age"], ks=(10, 100), max_centres=300), **kw)]


def _scatter(pred, kw):
    from mcviz.stats.multical import multicalibration
    from mcviz.subpopulations import generate_subpopulations
    result = multicalibration(pred, generate_subpopulations(
        pred, covariates=["age", "g"], n_subpopulations=20, min_size=100, seed=0))
    return [figures.subpopulation_scatter_figure(result, selected=result.argmax.id, **kw)]


def _corp(pred, kw):
    from mcviz.stats.measures import corp_reliability, smooth_reliability
    return [figures.corp_figure(corp_reliability(pred, n_resamples=10), **kw),
            figures.smooth_reliability_figure(
                smooth_reliability(pred, n_bootstrap=10, rng=0), **kw)]


def _monitor(pred, kw):
    from mcviz.monitor import MonitorSettings, monitor_calibration
    result = monitor_calibration(pred, settings=MonitorSettings(
        period="week", segments=["g"], draws=19))
    return [figures.monitor_heatmap_figure(result, **kw),
            figures.monitor_series_figure(result, 1, **kw)]


def _decision(pred, kw):
    from mcviz.decision import decision_impact
    fixed = np.clip(pred.score + 0.05, 0, 1)
    return [figures.decision_curve_figure(
        decision_impact(pred, fixed, thresholds=[0.2, 0.5, 0.8], n_bootstrap=20),
        thresholds=[0.5], **kw)]


def _compare(pred, kw):
    from mcviz.compare import paired_cumulative_differences
    b = np.clip(pred.score + 0.1 * (pred.score > 0.6), 0, 1)
    path = paired_cumulative_differences(pred.score, b, pred.label.astype(float),
                                         order_values=pred.score, order_by="score")
    return [figures.paired_cumulative_figure(path, **kw),
            figures.paired_residuals_figure(path, **kw)]


MAKERS = {
    "cumulative_figure": _cumulative, "deviation_figure": _deviation,
    "reliability_figure": _reliability, "metrics_table_figure": _metrics_table,
    "variable_curves_figure": _variables, "gap_figure": _variables,
    "categorical_levels_figure": _variables, "lcs_figure": _lcs,
    "cvar_curve_figure": _groupings, "group_errors_figure": _groupings,
    "local_calibration_figure": _groupings, "local_error_histogram_figure": _groupings,
    "neighbourhood_tradeoff_figure": _groupings, "subpopulation_scatter_figure": _scatter,
    "corp_figure": _corp, "smooth_reliability_figure": _corp,
    "monitor_heatmap_figure": _monitor, "monitor_series_figure": _monitor,
    "decision_curve_figure": _decision,
    "paired_cumulative_figure": _compare, "paired_residuals_figure": _compare,
}


def legend_outside(figure: go.Figure) -> str | None:
    """None when the figure's legend cannot cover the plot area, else what is wrong.

    Shown entries (a trace with a name and ``showlegend`` not False) with the legend visible
    need: below the plot — ``yref="container"``, ``y`` at the bottom edge and
    ``yanchor="bottom"``, with a bottom margin taller than an axis's ticks and title alone —
    or beside it — ``x ≥ 1`` (paper) anchored left, with a right margin for it.
    """
    layout = figure.layout
    entries = [t for t in figure.data if t.name and t.showlegend is not False
               and t.type not in ("heatmap", "table")]
    if layout.showlegend is False or layout.legend.visible is False or not entries:
        return None
    legend = layout.legend
    below = (legend.yref == "container" and (legend.y or 0.0) <= 0.02
             and legend.yanchor == "bottom")
    beside = legend.x is not None and legend.x >= 1.0 and legend.xanchor in ("left", None)
    if below:
        return None if (layout.margin.b or 0) > 60 else f"no room below: margin {layout.margin.b}"
    if beside:
        return None if (layout.margin.r or 0) > 80 else f"no room beside: margin {layout.margin.r}"
    return (f"legend at x={legend.x}, y={legend.y} ({legend.xanchor}/{legend.yanchor}, "
            f"yref={legend.yref}) inside the plot area, over {[t.name for t in entries][:3]}")


def test_every_figure_builder_is_covered():
    assert sorted(MAKERS) == BUILDERS


@pytest.mark.parametrize("presentation", [False, True])
def test_no_legend_sits_inside_a_plot_area(pred, presentation):
    problems, seen = [], set()
    for make in dict.fromkeys(MAKERS.values()):
        for figure in make(pred, {"presentation": presentation}):
            seen.add(make.__name__)
            problem = legend_outside(figure)
            if problem:
                problems.append(f"{make.__name__}: {figure.layout.title.text[:50]!r}: {problem}")
    assert len(seen) == len(set(MAKERS.values()))
    assert not problems, "\n".join(problems)


def test_the_check_fails_on_a_legend_inside_the_plot():
    figure = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="a"),
                        go.Scatter(x=[0, 1], y=[1, 0], name="b")])
    inside = go.Figure(figure).update_layout(
        legend={"x": 0.01, "y": 0.99, "xanchor": "left", "yanchor": "top"})
    assert legend_outside(inside) is not None
    assert legend_outside(figures.apply_style(go.Figure(figure), title="t")) is None
