"""Reliability diagrams at several bin counts side by side, and the classical-metrics table.

Each column is one bin count: the non-empty bins' (mean score, mean response) against the
diagonal, with the per-bin interval as error bars, bootstrap replicates in light gray, and a
histogram of the scores beneath. With a subpopulation, the subpopulation is drawn in black and the
full population in gray (paper 003, Remark 4). Everything drawn comes from the result objects.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mcviz.stats.binning import CalibrationMetrics, ReliabilityBins, ReliabilityResult
from mcviz.present.figures._style import BLACK, GRAY, LIGHT_GRAY, apply_style, styled

__all__ = ["metrics_table_figure", "reliability_figure"]

# Equal-width bins carry their nominal edges (right-closed); the other kinds carry the smallest
# and largest score in the bin, both included.
LEGEND_CHARS = 48
"""Longest subpopulation name in the legend (then "…"; the hover and the title say it all)."""
_RANGE = {
    True: "bin (%{customdata[0]:.3g}, %{customdata[1]:.3g}]<br>",
    False: "scores %{customdata[0]:.4g} to %{customdata[1]:.4g}<br>",
}
_HOVER = (
    "<b>%{meta}</b><br>"
    "{range}"
    "mean score = %{x:.4f}<br>mean response = %{y:.4f}<br>"
    "interval [%{customdata[2]:.4f}, %{customdata[3]:.4f}]<br>"
    "count = %{customdata[4]:,}<br>total weight = %{customdata[5]:,.4g}<br>"
    "effective size = %{customdata[6]:,.4g}<extra></extra>"
)


@styled
def reliability_figure(result: ReliabilityResult, *, title: str | None = None,
                       presentation: bool = False, show_bootstrap: bool = True,
                       height: int | None = None) -> go.Figure:
    """Reliability diagrams for every bin count of ``result``, side by side.

    {parameters}
        From :func:`mcviz.stats.binning.reliability_diagrams`.
    title : str, optional
        Replaces the default (the paper's title for the kind of bins).
    presentation : bool, default False
        Larger fonts and lines.
    show_bootstrap : bool, default True
        Draw the bootstrap replicates (when the result has any) in light gray.
    height : int, optional

    {returns}
        Per column, in order: the diagonal; the bootstrap replicates (one trace, when drawn); the
        full population; the subpopulation (when given); then the histogram bars of the full
        population and of the subpopulation (when given). Empty bins are never drawn.
    """
    columns = len(result.n_bins)
    figure = make_subplots(
        rows=2,
        cols=columns,
        shared_xaxes=True,
        row_heights=[0.78, 0.22],
        vertical_spacing=0.05,
        horizontal_spacing=0.05,
        subplot_titles=[f"{k} bins" for k in result.n_bins],
    )
    for c in range(columns):
        _add_panel(figure, result, c, show_bootstrap=show_bootstrap)
    figure.update_xaxes(range=[-0.02, 1.02])  # every panel, both rows (one call: each costs)
    if result.response_kind == "binary":  # real-valued responses may leave [0, 1]
        figure.update_yaxes(range=[-0.02, 1.02], row=1)
    # one x title under the middle panel, not one per panel (they would run together)
    figure.update_xaxes(title_text="mean score in bin", row=2, col=(columns + 1) // 2)
    figure.update_yaxes(title_text="response", row=1, col=1)  # the mean in each bin

    figure.update_layout(barmode="overlay", bargap=0)
    kind_title = result.full[0].title
    default_title = kind_title[0].upper() + kind_title[1:]
    base_height = 560 if presentation else 470
    apply_style(
        figure, title=title or default_title, subtitle=_subtitle(result),
        presentation=presentation,
        height=height or base_height,
    )
    # the count strips: no tick labels (two labels on a strip this short run into each other)
    figure.update_yaxes(showticklabels=False, row=2)
    # the panel titles ("10 bins") stand above the plot area: room for them under the subtitle
    panel_title = figure.layout.annotations[0].font.size if figure.layout.annotations else 0
    figure.layout.margin.t += round(1.3 * (panel_title or 0))
    return figure


def _add_panel(figure: go.Figure, result: ReliabilityResult, c: int, *,
               show_bootstrap: bool) -> None:
    """Column ``c``: diagonal, bootstrap lines, points and the histogram bars below."""
    sub = result.has_subpopulation
    sub_name = result.subpopulation_description or "subpopulation"
    # a long name took a legend row of its own (the data area fell to 23%, #40): the subtitle
    # says the subpopulation is in black, the hover names it
    legend_name = sub_name if len(sub_name) <= LEGEND_CHARS else "subpopulation"
    main_color = BLACK
    full_color = GRAY if sub else BLACK
    centers = 0.5 * (result.histogram_edges[:-1] + result.histogram_edges[1:])
    widths = np.diff(result.histogram_edges)
    col = c + 1
    first = c == 0
    figure.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
            line={"color": LIGHT_GRAY, "dash": "dash", "width": 1.5},
            showlegend=first, legendgroup="diagonal", hoverinfo="skip",
        ),
        row=1, col=col,
    )
    boot_source = result.subpopulation[c] if sub else result.full[c]
    if show_bootstrap and boot_source.bootstrap_response.shape[0]:
        xs, ys = _replicate_lines(boot_source)
        figure.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="lines", name="bootstrap",  # no count: one legend row (#40)
                line={"color": LIGHT_GRAY, "width": 1}, opacity=0.8,
                # with a subpopulation the subtitle names them: one legend row (#40)
                showlegend=first and not sub, legendgroup="bootstrap", hoverinfo="skip",
            ),
            row=1, col=col,
        )
    figure.add_trace(
        _points(result.full[c], "full population", full_color, first, "full"),
        row=1, col=col,
    )
    if sub:
        figure.add_trace(
            _points(result.subpopulation[c], legend_name, main_color, first, "sub",
                    meta=sub_name),
            row=1, col=col,
        )
    figure.add_trace(
        go.Bar(
            x=centers, y=result.histogram_full, width=widths, name="full population",
            marker={"color": full_color if sub else GRAY}, opacity=0.6,
            showlegend=False, legendgroup="full",
            hovertemplate="scores in (%{customdata[0]:.3g}, %{customdata[1]:.3g}]<br>"
            "weight = %{y:,.4g}<extra>full population</extra>",
            customdata=np.column_stack(
                (result.histogram_edges[:-1], result.histogram_edges[1:])
            ),
        ),
        row=2, col=col,
    )
    if sub:
        figure.add_trace(
            go.Bar(
                x=centers, y=result.histogram_subpopulation, width=widths, name=sub_name,
                marker={"color": main_color}, opacity=0.8,
                showlegend=False, legendgroup="sub",
                hovertemplate="weight = %{y:,.4g}<extra>" + sub_name + "</extra>",
            ),
            row=2, col=col,
        )
    if col > 1:  # the panels share their scales: labels on the first panel only
        figure.update_yaxes(showticklabels=False, col=col)


def _subtitle(result: ReliabilityResult) -> str:
    """Return what the error bars and bars mean (and which colour is the subpopulation)."""
    interval = "Wilson" if result.response_kind == "binary" else "normal"
    subtitle = (f"error bars: {result.confidence:.0%} {interval} intervals · bars: "
                f"{'weight' if result.weighted else 'rows'} per score bin")
    if result.weighted:
        subtitle += " (effective sample size)"
    if result.has_subpopulation and result.n_bootstrap:  # its legend entry is left out
        subtitle += " · light lines: bootstrap"
    return subtitle


def _points(bins: ReliabilityBins, name: str, color: str, legend: bool, group: str,
            meta: str | None = None) -> go.Scatter:
    keep = bins.nonempty
    y = bins.mean_response[keep]
    return go.Scatter(
        x=bins.mean_score[keep],
        y=y,
        mode="lines+markers",
        name=name,
        meta=meta or name,  # the hover: the whole name
        legendgroup=group,
        showlegend=legend,
        line={"color": color, "width": 1.5},
        marker={"color": color, "size": 8},
        error_y={
            "type": "data",
            "array": bins.interval_high[keep] - y,
            "arrayminus": y - bins.interval_low[keep],
            "color": color,
            "thickness": 1.2,
            "width": 3,
        },
        customdata=np.column_stack(
            (
                bins.lower_edge[keep],
                bins.upper_edge[keep],
                bins.interval_low[keep],
                bins.interval_high[keep],
                bins.count[keep],
                bins.weight[keep],
                bins.effective_size[keep],
            )
        ),
        hovertemplate=_HOVER.replace("{range}", _RANGE[bins.kind == "equal_width"]),
    )


def _replicate_lines(bins: ReliabilityBins) -> tuple[list, list]:
    """All bootstrap replicates as one line trace, separated by gaps (empty bins dropped)."""
    xs: list = []
    ys: list = []
    for score, response in zip(bins.bootstrap_score, bins.bootstrap_response, strict=True):
        keep = ~np.isnan(response)
        xs.extend(score[keep].tolist())
        ys.extend(response[keep].tolist())
        xs.append(None)
        ys.append(None)
    return xs, ys


@styled
def metrics_table_figure(
    metrics: CalibrationMetrics, *, title: str | None = None, presentation: bool = False
) -> go.Figure:
    """Draw the classical calibration metrics as a table (the rows of ``metrics.to_frame()``).

    {parameters}
    title : str, optional
    presentation : bool, default False

    {returns}
        One ``go.Table`` trace.
    """
    frame = metrics.to_frame()
    figure = go.Figure(
        go.Table(
            header={"values": ["metric", "value", "meaning"], "align": "left",
                    "fill_color": "#EEEEEE"},
            cells={
                "values": [
                    frame["metric"].tolist(),
                    [f"{value:.4g}" for value in frame["value"]],
                    frame["meaning"].tolist(),
                ],
                "align": "left",
            },
            columnwidth=[2, 1, 4],
        )
    )
    weight_note = "weighted" if metrics.weighted else "unweighted"
    apply_style(
        figure,
        title=title or "Classical calibration metrics",
        subtitle=f"n = {metrics.n:,} ({weight_note})",
        presentation=presentation,
        height=420,
    )
    return figure
