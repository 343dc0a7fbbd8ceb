"""The Local Calibration Score curve: ĝ with its band, the diagonal, the density of scores.

Draws a :class:`~mcviz.stats.smoothing.LocalCalibrationScore` (paper 004, eq. (6)); nothing is computed.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from mcviz.present.figures._style import (
    BLACK,
    BLUE,
    LIGHT_GRAY,
    apply_style,
    strip_below,
    styled,
)
from mcviz.present.figures.format import format_number
from mcviz.stats.smoothing import LocalCalibrationScore

__all__ = ["lcs_figure"]

BOUNDARY_NOTE = "flattening at the range ends is not over-prediction"


def _shade_boundary(figure: go.Figure, result: LocalCalibrationScore) -> None:
    """Shade the score ranges where the k-NN window holds the smallest or largest score."""
    grid = result.grid
    stretches = []
    if result.boundary_below >= grid[0]:
        stretches.append((grid[0], min(result.boundary_below, grid[-1])))
    if result.boundary_above <= grid[-1]:
        stretches.append((max(result.boundary_above, grid[0]), grid[-1]))
    # one label, in the wider stretch: two ran into each other where the stretches were near
    labelled = max(stretches, key=lambda s: s[1] - s[0]) if stretches else None
    for low, high in stretches:
        label = {} if (low, high) != labelled else {
            "annotation_text": "window at the range end", "annotation_font_size": 11,
            # the label at the bottom of the stretch, inside the plot (the legend is below it)
            "annotation_position": "bottom right" if low > 0.5 else "bottom left"}
        figure.add_vrect(x0=low, x1=high, fillcolor=LIGHT_GRAY, opacity=0.35, line_width=0,
                         layer="below", name=BOUNDARY_NOTE, **label)


@styled
def lcs_figure(result: LocalCalibrationScore, *, title: str | None = None,
               presentation: bool = False, height: int | None = None) -> go.Figure:
    """Calibration curve by k-NN local regression with its 95% band and the score density.

    {parameters}
    {style}

    {returns}
        Top panel: band, ĝ, diagonal; bottom panel: density of the scores (reflected KDE).
    """
    grid = result.grid
    figure = go.Figure()
    figure.add_trace(go.Scatter(
        x=np.concatenate((grid, grid[::-1])),
        y=np.concatenate((result.upper, result.lower[::-1])),
        fill="toself", fillcolor="rgba(0,114,178,0.18)", line={"width": 0},
        hoverinfo="skip", showlegend=False, name="95% band",
    ))
    figure.add_trace(go.Scatter(
        x=[0, 1], y=[0, 1], mode="lines", line={"color": BLACK, "width": 1, "dash": "dash"},
        name="perfect calibration", hoverinfo="skip",
    ))
    figure.add_trace(go.Scatter(
        x=grid, y=result.fit, mode="lines+markers", marker={"size": 4},
        line={"color": BLUE, "width": 2.5}, name=f"observed rate, local (k = {result.k:,} rows)",
        customdata=np.column_stack((result.lower, result.upper, result.count)),
        hovertemplate=("score %{x:.2f}: observed rate %{y:.3f} [%{customdata[0]:.3f}, "
                       "%{customdata[1]:.3f}], %{customdata[2]:,} rows<extra></extra>"),
    ))
    figure.add_trace(go.Scatter(
        x=result.density_x, y=result.density_y, mode="lines", fill="tozeroy",
        line={"color": LIGHT_GRAY, "width": 1}, fillcolor="rgba(204,204,204,0.6)",
        yaxis="y2", name="density of scores", hoverinfo="skip", showlegend=False,
    ))
    _shade_boundary(figure, result)
    strip_below(figure, "density of scores", plot=(0.25, 1.0), strip=(0.0, 0.18))
    figure.update_layout(
        xaxis={"title": "score", "range": [0, 1], "anchor": "y2"},
        yaxis={"title": "observed rate", "range": [0, 1]}, yaxis2={"rangemode": "tozero"},
    )
    subtitle = (
        f"LCS {format_number(result.lcs, digits=3)} · span {result.span:g} (k = {result.k:,}) · "
        f"{result.grid.size} grid points · n = {result.n:,}"
    )
    if result.boundary.any():
        subtitle += f"<br>shaded: {BOUNDARY_NOTE}"
    if result.jitter:
        subtitle += " · scores jittered (N(0, 0.001²), as the authors)"
    apply_style(
        figure, title=title or "Local calibration curve", subtitle=subtitle,
        presentation=presentation, height=height, legend="bottom",
    )
    return figure
