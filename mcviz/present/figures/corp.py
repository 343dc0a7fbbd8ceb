"""Bin-free reliability diagrams: the CORP curve with its consistency band, and the smECE diagram.

Both draw results only (``mcviz.stats.measures.CorpResult`` and ``SmoothReliability``) and compute no
statistic. The CORP curve joins each PAV block's lowest and highest score at the block's
recalibrated probability, the blocks joined by straight lines (Dimitriadis et al. 2021); the
consistency band, when computed, is the band the curve stays in with the stated probability if
the scores are calibrated. The smECE diagram is the kernel-smoothed mean response with its
bootstrap band and, beneath it, the density of the scores (Błasiok & Nakkiran 2023).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mcviz.present.figures._style import BLACK, GRAY, LIGHT_GRAY, MAX_POINTS, SKY_BLUE, apply_style, styled
from mcviz.present.figures.format import format_number
from mcviz.stats.measures import CorpResult, SmoothReliability

__all__ = ["corp_figure", "smooth_reliability_figure"]

_CORP_HOVER = (
    "scores %{customdata[0]:.4g} to %{customdata[1]:.4g}<br>"
    "recalibrated probability = %{y:.4f}<br>"
    "rows = %{customdata[2]:,}<br>total weight = %{customdata[3]:,.4g}<extra>CORP</extra>"
)


@styled
def corp_figure(result: CorpResult, *, title: str | None = None, presentation: bool = False,
                height: int | None = None) -> go.Figure:
    """Draw the CORP reliability diagram: isotonic curve, consistency band and diagonal.

    {parameters}
        From :func:`mcviz.stats.measures.corp_reliability`.
    {style}

    {returns}
        Traces in order: the diagonal; the band's lower and upper edges (filled between, when
        the result has a band); the CORP curve. The subtitle gives the Brier score's
        decomposition.
    """
    figure = go.Figure(_diagonal())
    if result.band_x.size:
        band_name = f"{result.confidence:.0%} consistency band ({result.n_resamples} resamples)"
        figure.add_traces(_band(result.band_x, result.band_lower, result.band_upper, band_name))
    keep = _thin(result.block_value.size, MAX_POINTS // 2)
    x = np.column_stack((result.block_low[keep], result.block_high[keep])).ravel()
    y = np.repeat(result.block_value[keep], 2)
    custom = np.repeat(
        np.column_stack(
            (result.block_low[keep], result.block_high[keep], result.block_count[keep],
             result.block_weight[keep])
        ),
        2,
        axis=0,
    )
    figure.add_trace(
        go.Scatter(
            x=x, y=y, mode="lines", name="CORP (isotonic) curve",
            line={"color": BLACK, "width": 2.5}, customdata=custom, hovertemplate=_CORP_HOVER,
        )
    )
    brier = result.brier
    subtitle = (
        f"Brier {format_number(brier.score)} = MCB {format_number(brier.miscalibration, digits=3)}"
        f" − DSC {format_number(brier.discrimination, digits=3)} + UNC "
        f"{format_number(brier.uncertainty, digits=3)} · n = {result.n:,}"
        + (" (weighted)" if result.weighted else "")
    )
    apply_style(
        figure, title=title or "CORP reliability diagram (no bins)", subtitle=subtitle,
        presentation=presentation, height=height,
    )
    figure.update_xaxes(title_text="score", range=[-0.02, 1.02])
    figure.update_yaxes(title_text="recalibrated probability", range=[-0.02, 1.02])
    _finish(figure, presentation)
    return figure


@styled
def smooth_reliability_figure(result: SmoothReliability, *, title: str | None = None,
                              presentation: bool = False, height: int | None = None) -> go.Figure:
    """Draw the smoothed (smECE) reliability diagram with its band, and the score density.

    {parameters}
        From :func:`mcviz.stats.measures.smooth_reliability`.
    {style}

    {returns}
        Top panel, in order: the diagonal; the band's edges (filled between, when the result has
        a band); the smoothed curve. Bottom panel: the density of the scores.
    """
    figure = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.78, 0.22], vertical_spacing=0.05
    )
    figure.add_trace(_diagonal(), row=1, col=1)
    if np.isfinite(result.lower).any():
        band_name = f"{result.confidence:.0%} bootstrap band ({result.n_bootstrap})"
        for trace in _band(result.x, result.lower, result.upper, band_name):
            figure.add_trace(trace, row=1, col=1)
    figure.add_trace(
        go.Scatter(
            x=result.x, y=result.fit, mode="lines", name="smoothed mean response",
            line={"color": BLACK, "width": 2.5},
            hovertemplate="score %{x:.3f}<br>smoothed response = %{y:.4f}<extra></extra>",
        ),
        row=1, col=1,
    )
    figure.add_trace(
        go.Scatter(
            x=result.x, y=result.density, mode="lines", name="density of scores",
            line={"color": GRAY, "width": 1.5}, fill="tozeroy", showlegend=False,
            hovertemplate="score %{x:.3f}<br>density = %{y:.3g}<extra></extra>",
        ),
        row=2, col=1,
    )
    subtitle = (
        f"smECE = {format_number(result.smece)} at kernel width σ* = "
        f"{format_number(result.sigma, digits=3)} · n = {result.n:,}"
        + (" (weighted)" if result.weighted else "")
    )
    apply_style(
        figure, title=title or "Smoothed reliability diagram (smECE)", subtitle=subtitle,
        presentation=presentation, height=height or (560 if presentation else 470),
    )
    figure.update_xaxes(range=[-0.02, 1.02])
    figure.update_xaxes(title_text="score", row=2, col=1)
    figure.update_yaxes(title_text="mean response", range=[-0.02, 1.02], row=1, col=1)
    figure.update_yaxes(title_text="density", nticks=4, row=2, col=1)
    _finish(figure, presentation)
    return figure


def _finish(figure: go.Figure, presentation: bool) -> None:
    """Thin band edges and diagonal (apply_style widens every line), room for the subtitle."""
    figure.update_traces(selector={"legendgroup": "band"}, line_width=0.5)
    figure.update_traces(selector={"name": "perfect calibration"}, line_width=1.2)
    figure.update_layout(
        title={"yref": "container", "y": 1.0, "yanchor": "top", "pad": {"t": 34}},
        margin={"t": 110 if presentation else 95, "b": 150 if presentation else 110},
        legend={"yref": "container", "y": 0.0, "yanchor": "bottom"},
    )


def _diagonal() -> go.Scatter:
    return go.Scatter(
        x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
        line={"color": LIGHT_GRAY, "dash": "dash", "width": 1.5}, hoverinfo="skip",
    )


def _band(x: np.ndarray, lower: np.ndarray, upper: np.ndarray, name: str) -> list[go.Scatter]:
    """Draw the lower edge, then the upper edge filled down to it (one legend entry)."""
    return [
        go.Scatter(
            x=x, y=edge, mode="lines", name=name, fill=fill, legendgroup="band",
            line={"color": SKY_BLUE, "width": 0.5}, fillcolor="rgba(86, 180, 233, 0.3)",
            showlegend=fill is not None, hoverinfo="skip",
        )
        for edge, fill in ((lower, None), (upper, "tonexty"))
    ]


def _thin(size: int, limit: int) -> np.ndarray:
    """At most ``limit`` evenly spaced indices of ``size``, the first and last always kept."""
    if size <= limit:
        return np.arange(size)
    return np.unique(np.linspace(0, size - 1, limit).round().astype(np.int64))
