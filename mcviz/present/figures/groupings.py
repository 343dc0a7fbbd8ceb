"""Figures for groupings and agglomerations: CVaR curves, group errors, local calibration maps.

Every builder takes a result from :mod:`mcviz.stats.groupings` or :mod:`mcviz.stats.agglomeration` and
draws it; none computes a statistic. Errors are response minus score, the sign of every
cumulative plot (Höltgen & Williamson's eq. (6) with the sign reversed): positive where the scores
under-predict (blue), negative where they over-predict (vermilion).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from mcviz.stats.agglomeration import CVaRCurve
from mcviz.present.figures._style import (
    BLUE,
    GRAY,
    MAX_POINTS,
    ORANGE,
    VERMILION,
    apply_style,
    styled,
)
from mcviz.stats.groupings import (
    GroupErrors,
    LocalErrorDistribution,
    LocalMap,
    NeighbourhoodTradeoff,
)

__all__ = [
    "cvar_curve_figure",
    "group_errors_figure",
    "local_calibration_figure",
    "local_error_histogram_figure",
    "neighbourhood_tradeoff_figure",
]

MAX_BARS = 60
"""Above this many groups the group-error chart is a scatter instead of bars."""

# Diverging scale through white: vermilion (negative: over-prediction) to blue (positive:
# under-prediction), errors being response minus score.
_DIVERGING = [[0.0, VERMILION], [0.5, "#F7F7F7"], [1.0, BLUE]]


@styled
def cvar_curve_figure(curve: CVaRCurve, *, alpha: float | None = None, title: str | None = None,
                      presentation: bool = False) -> go.Figure:
    """CVaR_alpha of the absolute group errors against alpha, from the mean to the maximum.

    {parameters}
        From :func:`mcviz.stats.agglomeration.cvar_curve`.
    alpha : float, optional
        Mark this alpha (the one the score uses) with a vertical line.
    title : str, optional
    presentation : bool, default False
    """
    figure = go.Figure(
        go.Scatter(
            x=curve.alpha, y=curve.value, mode="lines", line={"color": BLUE, "width": 2.5},
            name="mean |error| of the worst groups",
            hovertemplate=("%{x:.0%} of the groups set aside (the least error first): mean "
                           "|error| of the rest %{y:.4g}<extra></extra>"),
        )
    )
    figure.add_hline(y=curve.mean, line={"color": GRAY, "dash": "dot"},
                     annotation_text=f"mean over all groups {curve.mean:.3g}",
                     annotation_position="bottom right")
    figure.add_hline(y=curve.maximum, line={"color": GRAY, "dash": "dash"},
                     annotation_text=f"worst group {curve.maximum:.3g}",
                     annotation_position="top left")
    if alpha is not None:
        figure.add_vline(x=alpha, line={"color": ORANGE, "width": 2})
    figure.update_xaxes(title="share of groups set aside, least error first", range=[0, 1],
                       tickformat=".0%")
    figure.update_yaxes(title="mean |error| of the rest", rangemode="tozero")
    return apply_style(
        figure,
        title=title or "Mean |error|, from all groups to the worst",  # fits a half-width cell
        subtitle=curve.description,
        presentation=presentation,
    )


@styled
def group_errors_figure(groups: GroupErrors, *, title: str | None = None, sort: bool = False,
                        presentation: bool = False, seed: int = 0) -> go.Figure:
    """Signed calibration error of each group with ±2 standard errors.

    Up to 60 groups are drawn as horizontal bars (with error bars); more groups as a scatter of
    error against the group's mean score (a seeded sample of at most 10,000 groups, said in the
    subtitle).

    {parameters}
    title : str, optional
    sort : bool, default False
        Order the bars by error instead of the grouping's order.
    presentation : bool, default False
    seed : int, default 0
        Seed of the sample when there are more than 10,000 groups.
    """
    error = groups.error
    two_se = 2 * np.nan_to_num(groups.standard_error, nan=0.0)
    subtitle = f"{groups.kind}: {groups.description}; error = weighted mean(response − score)"
    if groups.n_groups <= MAX_BARS:
        order = np.argsort(error, kind="stable") if sort else np.arange(groups.n_groups)
        labels = [groups.labels[i] for i in order]
        colours = [VERMILION if e < 0 else BLUE for e in error[order]]
        figure = go.Figure(
            go.Bar(
                x=error[order],
                y=labels,
                orientation="h",
                marker_color=colours,
                error_x={"type": "data", "array": two_se[order], "color": GRAY},
                customdata=np.stack([groups.size[order], groups.standard_error[order]], axis=1),
                hovertemplate="%{y}<br>error %{x:.4g}<br>%{customdata[0]:,} rows"
                "<br>standard error %{customdata[1]:.3g}<extra></extra>",
                name="error of the group",
            )
        )
        figure.update_yaxes(autorange="reversed", type="category")
        # short enough for a half-width cell; the subtitle says how the error is computed
        figure.update_xaxes(title="error ± 2 standard errors (below 0: over-prediction)")
        figure.add_vline(x=0, line={"color": GRAY})
        height = max(430, 22 * len(labels) + 160)
    else:
        index = np.arange(groups.n_groups)
        if index.size > MAX_POINTS:
            index = np.sort(np.random.default_rng(seed).choice(index, MAX_POINTS, replace=False))
            subtitle += f"; a seeded sample (seed {seed}) of {MAX_POINTS:,} of {groups.n_groups:,}"
        figure = go.Figure(
            go.Scattergl(
                x=groups.mean_score[index],
                y=error[index],
                mode="markers",
                marker={"color": error[index], "colorscale": _DIVERGING, "cmid": 0,
                        "size": 5, "opacity": 0.7},
                text=[groups.labels[i] for i in index],
                hovertemplate="%{text}<br>mean score %{x:.3f}<br>error %{y:.4g}<extra></extra>",
                name="error of the group",
            )
        )
        figure.add_hline(y=0, line={"color": GRAY})
        figure.update_xaxes(title="mean score of the group")
        figure.update_yaxes(title="error = mean(response − score)")
        height = None
    return apply_style(
        figure,
        title=title or "Calibration error of each group",
        subtitle=subtitle,
        presentation=presentation,
        height=height,
    )


@styled
def local_calibration_figure(local_map: LocalMap, *, title: str | None = None,
                             presentation: bool = False) -> go.Figure:
    """Scatter over two covariates coloured by each point's local calibration error.

    {parameters}
        From :func:`mcviz.stats.groupings.local_calibration_map` (at most 10,000 points, a seeded
        sample that the subtitle states).
    title : str, optional
    presentation : bool, default False
    """
    limit = float(np.max(np.abs(local_map.error))) if local_map.error.size else 1.0
    figure = go.Figure(
        go.Scattergl(
            x=local_map.x,
            y=local_map.y,
            mode="markers",
            marker={
                "color": local_map.error,
                "colorscale": _DIVERGING,
                "cmin": -limit,
                "cmax": limit,
                "size": 5,
                "opacity": 0.8,
                "colorbar": {"title": {"text": "local c"}},
            },
            hovertemplate=f"{local_map.x_name} = %{{x}}<br>{local_map.y_name} = %{{y}}"
            "<br>local c = %{marker.color:.4g}<extra></extra>",
            name="local error",
        )
    )
    figure.update_xaxes(title=local_map.x_name)
    figure.update_yaxes(title=local_map.y_name)
    default = "Local calibration error, label − score (vermilion: over-prediction)"
    return apply_style(figure, title=title or default, subtitle=local_map.note,
                       presentation=presentation)


def local_error_histogram_figure(distribution: LocalErrorDistribution, *, title: str | None = None,
                                 presentation: bool = False) -> go.Figure:
    """Distribution of the local calibration errors (mass per bin), with the median marked."""
    edges = distribution.edges
    centres = (edges[:-1] + edges[1:]) / 2
    colours = [VERMILION if c < 0 else BLUE for c in centres]
    figure = go.Figure(
        go.Bar(
            x=centres, y=distribution.mass, width=np.diff(edges), marker_color=colours,
            hovertemplate="error ≈ %{x:.4g}<br>share %{y:.3%}<extra></extra>", name="share",
        )
    )
    figure.add_vline(x=0, line={"color": GRAY})
    median = distribution.quantiles[0.5]
    figure.add_vline(x=median, line={"color": ORANGE, "dash": "dash"},
                     annotation_text=f"median {median:.3g}")
    figure.update_xaxes(title="local error = mean(response − score) near a point")
    figure.update_yaxes(title="share of points", tickformat=".0%")
    return apply_style(figure, title=title or "Distribution of local calibration errors",
                       subtitle=distribution.note, presentation=presentation)


def neighbourhood_tradeoff_figure(tradeoff: NeighbourhoodTradeoff, *, title: str | None = None,
                                  presentation: bool = False) -> go.Figure:
    """Group-size trade-off: local errors and their standard error against k (log axis).

    Larger k: smaller standard error (Proposition 3) but wider neighbourhoods that average away
    local miscalibration (Proposition 2); the median radius is on the right axis.
    """
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=tradeoff.k, y=tradeoff.mean_absolute_error,
                                mode="lines+markers", name="mean |local error|",
                                line={"color": VERMILION}))
    figure.add_trace(go.Scatter(x=tradeoff.k, y=tradeoff.mean_standard_error,
                                mode="lines+markers", name="mean standard error",
                                line={"color": BLUE}))
    figure.add_trace(go.Scatter(x=tradeoff.k, y=tradeoff.median_radius, mode="lines+markers",
                                name="median radius (right axis)", yaxis="y2",
                                line={"color": GRAY, "dash": "dot"}))
    figure.update_xaxes(title="k (neighbours per group)", type="log")
    apply_style(
        figure,
        title=title or "Group size: resolution against variance",
        subtitle=tradeoff.note,
        presentation=presentation,
    )
    figure.update_layout(
        yaxis={"title": "calibration error", "rangemode": "tozero"},
        yaxis2={"overlaying": "y", "side": "right", "title": "median radius", "showgrid": False,
                "rangemode": "tozero"},
    )
    return figure
