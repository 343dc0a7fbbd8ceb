"""Monitor figures: the segments x periods heat map and one series over time.

They draw a :class:`~mcviz.monitor.MonitorResult`; nothing is computed here.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mcviz.monitor import MonitorResult
from mcviz.present.figures._style import BLACK, BLUE, GRAY, VERMILION, apply_style, tick_size
from mcviz.present.figures._text import plotly_texts
from mcviz.present.figures.format import format_number, p_phrase

__all__ = ["monitor_heatmap_figure", "monitor_series_figure"]

Z_LIMIT = 4.0
"""The colour scale saturates at |z| = 4."""
_LABEL_CHARACTERS = 38


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_CHARACTERS else text[:_LABEL_CHARACTERS - 1] + "…"


def monitor_heatmap_figure(result: MonitorResult, *, presentation: bool = False,
                           height: int | None = None) -> go.Figure:
    """Standardised gaps of every series (rows) in every period (columns), alarms marked.

    Colour: the one-period z of :class:`~mcviz.monitor.SeriesMonitor` (outcomes above the
    scores relative to the reference in vermilion, below in blue), saturating at +-4. A black
    ring marks each series' first alarm; dots mark the later periods whose alarm statistic is
    above the threshold. The reference periods are left of the dashed line. An invisible marker
    per cell (the last trace; point ``i`` is series ``i // P``, period ``i % P``) carries the
    hover text and receives clicks.
    """
    periods = result.periods
    labels = list(periods.labels)
    names = [("★ " if s.alarm else "") + _short(s.words) for s in result.series]  # in words
    rows = [f"{i}. {name}" for i, name in enumerate(names)]  # unique even for equal prefixes
    z = np.vstack([s.z for s in result.series])
    count = np.vstack([s.count for s in result.series])
    gap = np.vstack([s.mean_response - s.mean_score for s in result.series])
    figure = go.Figure()
    custom = np.dstack((count, np.nan_to_num(gap))).astype(float)
    figure.add_trace(go.Heatmap(
        x=labels, y=plotly_texts(rows), z=np.clip(z, -Z_LIMIT, Z_LIMIT), zmin=-Z_LIMIT,
        zmax=Z_LIMIT, colorscale=[[0.0, BLUE], [0.5, "#F7F7F7"], [1.0, VERMILION]],
        xgap=1, ygap=1, colorbar={"title": {"text": "z"}, "thickness": 12, "len": 0.8},
        hoverinfo="skip",
    ))
    first_x, first_y, later_x, later_y = [], [], [], []
    for row, s in zip(rows, result.series, strict=True):
        if not s.alarm:
            continue
        first_x.append(labels[s.first_alarm])
        first_y.append(row)
        above = np.flatnonzero(s.statistic > result.threshold)
        later = [p for p in above if p > s.first_alarm]
        later_x += [labels[p] for p in later]
        later_y += [row] * len(later)
    figure.add_trace(go.Scatter(
        x=later_x, y=plotly_texts(later_y), mode="markers", name="alarm statistic above "
        "threshold", marker={"symbol": "circle", "size": 5, "color": BLACK}, hoverinfo="skip"))
    figure.add_trace(go.Scatter(
        x=first_x, y=plotly_texts(first_y), mode="markers", name="first alarm",
        marker={"symbol": "circle-open", "size": 14, "color": BLACK, "line": {"width": 2.5}},
        hoverinfo="skip"))
    grid_x, grid_y = np.meshgrid(np.arange(len(labels)), np.arange(len(rows)))
    figure.add_trace(go.Scatter(  # the hover and click layer: point i is cell (i // P, i % P)
        x=[labels[i] for i in grid_x.ravel()], y=plotly_texts([rows[i] for i in grid_y.ravel()]),
        mode="markers", marker={"size": 14, "opacity": 0.0, "color": BLACK},
        customdata=np.column_stack((grid_y.ravel(), grid_x.ravel(), z.ravel(),
                                    custom[..., 0].ravel(), custom[..., 1].ravel())),
        showlegend=False, name="cells",
        hovertemplate=("%{y}<br>period %{x}: z = %{customdata[2]:.2f}<br>"
                       "%{customdata[3]:,} rows, response − score %{customdata[4]:+.3f}"
                       "<extra></extra>")))
    reference = periods.n_reference - 0.5
    figure.add_vline(x=reference, line={"color": GRAY, "width": 2, "dash": "dash"})
    figure.update_layout(
        xaxis={"title": {"text": f"period ({periods.period}, start) · reference left of the "
                                 f"dashed line"}, "type": "category", "tickangle": -45,
               "nticks": 26},
        yaxis={"type": "category", "autorange": "reversed", "automargin": True},
    )
    alarms = len(result.alarms)
    title = (f"{alarms} of {len(result.series)} series alarm · family-wise false-alarm rate "
             f"≤ {format_number(result.alpha)}")
    subtitle = ("one-period standardised gap relative to the reference; ★ alarmed, ○ first "
                "alarm; click a cell for its Review")
    # a row per label at the tick font (plotly drops every other label of a crowded axis)
    row_px = max(22, round(1.6 * tick_size(presentation)))
    rows_height = max(320, 60 + row_px * len(rows)) + (220 if presentation else 120)
    apply_style(figure, title=title, subtitle=subtitle, presentation=presentation,
                height=height or min(rows_height, 1600), legend="bottom")
    return figure


def monitor_series_figure(result: MonitorResult, series: int = 0, *,
                          presentation: bool = False, height: int | None = None) -> go.Figure:
    """One series over time: mean score vs mean response with the band, and the path.

    Top: per period, the mean score, the band of the mean response under calibration
    (mean score +- 1.96 sigma) and the mean response. Bottom: the cumulative difference along
    time (eq. (1) of paper 000 with the periods as the ordered variable) with the +-2 sigma
    triangle at the origin (eq. (5)). The first alarm is marked by a vertical line.
    """
    s = result.series[series]
    labels = list(result.periods.labels)
    figure = make_subplots(rows=2, cols=1, shared_xaxes=False, vertical_spacing=0.14,
                           row_heights=[0.55, 0.45])
    x = np.arange(len(labels))
    band_low, band_high = s.mean_score - s.band, s.mean_score + s.band
    figure.add_trace(go.Scatter(
        x=np.concatenate((x, x[::-1])), y=np.concatenate((band_high, band_low[::-1])),
        fill="toself", fillcolor="rgba(0,114,178,0.15)", line={"width": 0}, hoverinfo="skip",
        name="95% band under calibration"), row=1, col=1)
    figure.add_trace(go.Scatter(
        x=x, y=s.mean_score, mode="lines", line={"color": BLUE, "width": 2.5},
        name="mean score", customdata=np.array(labels, dtype=object),
        hovertemplate="%{customdata}: mean score %{y:.3f}<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Scatter(
        x=x, y=s.mean_response, mode="lines+markers", marker={"size": 5},
        line={"color": VERMILION, "width": 2}, name="mean response",
        customdata=np.column_stack((labels, s.count)).astype(object),
        hovertemplate="%{customdata[0]}: mean response %{y:.3f} (%{customdata[1]} rows)"
                      "<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Scatter(
        x=s.path_x, y=s.path, mode="lines", line={"color": BLACK, "width": 2.5},
        name="cumulative difference", hovertemplate="share %{x:.3f}: %{y:.4g}<extra></extra>"),
        row=2, col=1)
    width = 0.1
    figure.add_trace(go.Scatter(
        x=[0.0, width, width, 0.0], y=[0.0, 2 * s.sigma, -2 * s.sigma, 0.0], mode="lines",
        fill="toself", fillcolor="rgba(213, 94, 0, 0.12)", line={"color": VERMILION,
                                                                "width": 1.5},
        name=f"±2σ (σ = {format_number(s.sigma, digits=3)})", hoverinfo="skip"), row=2, col=1)
    reference_share = float(s.path_x[result.periods.n_reference])
    figure.add_vline(x=result.periods.n_reference - 0.5, row=1, col=1,
                     line={"color": GRAY, "width": 1.5, "dash": "dash"})
    figure.add_vline(x=reference_share, row=2, col=1,
                     line={"color": GRAY, "width": 1.5, "dash": "dash"})
    if s.alarm:
        figure.add_vline(x=s.first_alarm, row=1, col=1, line={"color": BLACK, "width": 2})
        figure.add_vline(x=float(s.path_x[s.first_alarm + 1]), row=2, col=1,
                         line={"color": BLACK, "width": 2})
    step = max(1, int(np.ceil(len(labels) / 6)))
    figure.update_xaxes(tickmode="array", tickvals=x[::step], ticktext=labels[::step],
                        tickangle=0, row=1, col=1)
    figure.update_xaxes(title_text="cumulative share of the series' weight (time order)",
                        range=[-0.02, 1.02], row=2, col=1)
    figure.update_yaxes(title_text="mean", row=1, col=1)
    figure.update_yaxes(title_text="cumulative R − S", row=2, col=1)
    verdict = (f"alarm from {labels[s.first_alarm]}" if s.alarm else "no alarm")
    title = f"{_short(s.words)}: {verdict}"
    subtitle = (f"post-reference Kuiper D/σ = {format_number(s.kuiper_z, digits=3)} "
                f"({p_phrase(s.kuiper_p)}); adjusted {p_phrase(s.p_adjusted)}; dashed: end of the reference, "
                f"solid: first alarm")
    apply_style(figure, title=plotly_texts([title])[0], subtitle=subtitle,
                presentation=presentation, height=height or 620)
    return figure
