"""The subpopulations of a multi-calibration run: D_k/σ_k against size, one point each.

Draws a :class:`~mcviz.stats.multical.MulticalResult` (paper 000, eq. (4)); nothing is computed.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from mcviz.present.figures._style import BLUE, MAX_POINTS, VERMILION, apply_style, styled
from mcviz.stats.multical import MulticalResult

__all__ = ["subpopulation_scatter_figure"]

HOVER_CHARACTERS = 90
"""Descriptions are cut to this length on hover (the table and the drill-down show them whole):
deep split paths run to hundreds of characters, and a thousand of them would make the chart
heavier than everything else on the page together."""


@styled
def subpopulation_scatter_figure(result: MulticalResult, *, selected: int | None = None,
                                 title: str | None = None, presentation: bool = False,
                                 max_points: int = MAX_POINTS,
                                 height: int | None = None) -> go.Figure:
    r"""Scatter of :math:`D_k/\sigma_k` against subpopulation size, the selected one ringed.

    {parameters}
    selected : int, optional
        Id of the subpopulation to ring (the drill-down's).
    title : str, optional
    presentation : bool, default False
    max_points : int, default MAX_POINTS
        Above this many subpopulations only the ``max_points`` largest :math:`D_k/\sigma_k`
        are drawn (the rest cannot be the worst).
    height : int, optional

    {returns}
        Trace 0: the subpopulations, each point's ``customdata`` its id (for click
        selection); trace 1 (when ``selected`` is drawn): the ring.
    """
    ids = np.array([s.id for s in result.subpopulations], dtype=np.int64)
    z = np.asarray(result.kuiper_z, dtype=float)
    # D/0 = inf (a subpopulation with no variance under perfect calibration) cannot be drawn.
    shown = np.flatnonzero(np.isfinite(z))
    if shown.size > max_points:
        shown = shown[np.argsort(z[shown], kind="stable")[-max_points:]]
    text = [_short(result.subpopulations[i].description) for i in shown]
    figure = go.Figure(go.Scattergl(
        x=result.size[shown], y=z[shown], mode="markers", customdata=ids[shown], text=text,
        hovertemplate="#%{customdata}: %{text}<br>size %{x:,}<br>D/σ %{y:.3g}<extra></extra>",
        marker={"size": 9 if presentation else 7, "opacity": 0.7, "color": BLUE},
        name="subpopulations",
    ))
    chosen = np.flatnonzero((ids == selected) & np.isfinite(z))
    if chosen.size:
        figure.add_scatter(
            x=result.size[chosen], y=z[chosen], mode="markers", name="selected",
            marker={"size": 18, "symbol": "circle-open", "line_width": 3, "color": VERMILION},
            hoverinfo="skip",
        )
    sizes = result.size[shown] if shown.size else np.ones(1)
    wide = sizes.max() > 20 * max(sizes.min(), 1)
    figure.update_xaxes(title="subpopulation size (rows)", type="log" if wide else "linear",
                        dtick=1 if wide else None)
    figure.update_yaxes(title="deviation from the full population (D/σ)")
    return apply_style(figure, title=title or "Subpopulations: click a point to open it",
                       presentation=presentation, height=height)


def _short(description: str) -> str:
    if len(description) <= HOVER_CHARACTERS:
        return description
    return description[: HOVER_CHARACTERS - 1] + "…"
