"""Comparison of two models: the paired cumulative differences of their losses, and residuals.

Both builders read a :class:`~mcviz.compare.PairedPath` (from :func:`mcviz.compare_models`) and
compute nothing: the decimated path (``plot_index`` keeps every extreme, so the drawn range is
D), the ±2σ triangle at the origin (σ: the paired variance estimate of arXiv:2305.11323), the
ordering variable's values as bottom ticks, and D, D/σ and p in the subtitle.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from mcviz.compare import PairedPath
from mcviz.present.figures._style import BLUE, LIGHT_GRAY, VERMILION, apply_style
from mcviz.present.figures._text import plotly_text
from mcviz.present.figures.format import format_number, format_p, format_ticks

__all__ = ["paired_cumulative_figure", "paired_residuals_figure"]

TICKS = 6


def _ticks(path: PairedPath) -> tuple[list[float], list[str]]:
    at = np.unique(np.minimum(np.searchsorted(path.x, np.linspace(0.0, 1.0, TICKS)),
                              path.x.size - 1))
    return path.x[at].tolist(), format_ticks(path.position[at])


def _layout(figure: go.Figure, path: PairedPath, *, y_title: str, title: str, subtitle: str,
            presentation: bool, height: int | None) -> go.Figure:
    values, text = _ticks(path)
    figure.update_layout(
        xaxis={"title": {"text": plotly_text(path.order_by)}, "range": [-0.02, 1.02],
               "tickmode": "array", "tickvals": values, "ticktext": text},
        yaxis={"title": {"text": y_title}})
    apply_style(figure, title=title, subtitle=subtitle, presentation=presentation,
                height=height)
    figure.add_hline(y=0, line={"color": LIGHT_GRAY, "width": 1})
    return figure


def paired_cumulative_figure(path: PairedPath, *, title: str | None = None,
                             presentation: bool = False, triangle_width: float = 0.1,
                             height: int | None = None) -> go.Figure:
    """Plot the cumulative difference of B's and A's losses along the ordering variable.

    Rising stretches are where B's loss exceeds A's (B worse); falling ones where B is better;
    the slope of a secant is the average loss difference between its ends.

    Parameters
    ----------
    path : PairedPath
    title : str, optional
    presentation : bool
    triangle_width : float
        Horizontal extent of the ±2σ triangle at the origin.
    height : int, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Traces: the path and the triangle.
    """
    keep = path.plot_index
    loss = "Brier" if path.loss == "brier" else "log"
    figure = go.Figure()
    figure.add_trace(go.Scatter(
        x=path.x[keep], y=path.path[keep], mode="lines", line={"color": BLUE, "width": 2.5},
        name=f"B − A {loss} loss, cumulative (up: B worse)",
        customdata=np.column_stack((path.fraction[keep], path.position[keep])).astype(
            np.float32) if not np.issubdtype(path.position.dtype, np.datetime64) else None,
        hovertemplate=("share of rows = %{customdata[0]:.3f}<br>" + plotly_text(path.order_by)
                       + " = %{customdata[1]:.4g}<br>cumulative = %{y:.4g}<extra></extra>")))
    sigma2 = 2.0 * path.sigma
    figure.add_trace(go.Scatter(
        x=[0.0, triangle_width, triangle_width, 0.0], y=[0.0, sigma2, -sigma2, 0.0],
        mode="lines", fill="toself", fillcolor="rgba(213, 94, 0, 0.12)",
        line={"color": VERMILION, "width": 1.5},
        name=f"±2σ (σ = {format_number(path.sigma, digits=3)})",
        hovertemplate="±2σ = ±%{y:.4g}<extra></extra>"))
    p_text = format_p(path.p_value)
    p_text = f"p {p_text}" if p_text.startswith("<") else f"p = {p_text}"
    subtitle = (f"D/σ = {format_number(path.kuiper_z, digits=3)} ({p_text}) · "
                f"D = {format_number(path.kuiper)} · n = {path.n:,}")
    if path.n_missing:
        subtitle += f" · {path.n_missing:,} rows without {plotly_text(path.order_by)} left off"
    default = "Loss of B minus loss of A, cumulative"
    return _layout(figure, path, y_title=f"B − A {loss} loss (cumulative)",
                   title=title or default, subtitle=subtitle, presentation=presentation,
                   height=height)


def paired_residuals_figure(path: PairedPath, *, title: str | None = None,
                            presentation: bool = False, height: int | None = None) -> go.Figure:
    """Plot each model's cumulative residual (observed − predicted) in the same order.

    Parameters
    ----------
    path : PairedPath
    title : str, optional
    presentation : bool
    height : int, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Traces: A's path and B's path.
    """
    keep = path.plot_index
    figure = go.Figure()
    for name, values, color, kuiper in (("A", path.path_a, BLUE, path.kuiper_a),
                                        ("B", path.path_b, VERMILION, path.kuiper_b)):
        figure.add_trace(go.Scatter(
            x=path.x[keep], y=values[keep], mode="lines", line={"color": color, "width": 2.5},
            name=f"{name}: observed − predicted, cumulative (range {format_number(kuiper)} "
                 "in this order)",
            hovertemplate=f"{name}: cumulative = %{{y:.4g}}<extra></extra>"))
    default = "Each model's calibration in the same order"
    return _layout(figure, path, y_title="observed − predicted",
                   title=title or default,
                   subtitle="slope = miscalibration; flat: calibrated there",
                   presentation=presentation, height=height)
