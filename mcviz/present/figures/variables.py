"""Variable-based calibration figures: error curves, the gap curve and per-level bars.

They draw :class:`~mcviz.stats.variables.VariableCalibration` and
:class:`~mcviz.stats.variables.LevelCalibration` results in percent (the results are in probability
units); nothing is computed here beyond scaling by 100 (Kelly & Smyth, Figures 1–5).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from mcviz.present.figures._style import (
    BLACK,
    BLUE,
    GRAY,
    LIGHT_GRAY,
    VERMILION,
    apply_style,
    strip_below,
    styled,
)
from mcviz.present.figures.format import format_number, format_p, format_ticks, format_time
from mcviz.stats.smoothing import LoessCurve
from mcviz.stats.variables import LevelCalibration, VariableCalibration

__all__ = ["categorical_levels_figure", "gap_figure", "variable_curves_figure"]


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _band_traces(curve: LoessCurve, colour: str, name: str, scale: float = 100.0) -> list:
    """Band and line over the LOESS points (thin support dotted and lighter), spike markers."""
    smooth = ~curve.spike
    x, fit, thin = curve.x[smooth], curve.fit[smooth] * scale, curve.thin[smooth]
    # a thin run is drawn from the supported point before it to the one after it
    reach = thin | np.r_[thin[1:], False] | np.r_[False, thin[:-1]]
    traces = [
        go.Scatter(
            x=np.concatenate((x, x[::-1])),
            y=np.concatenate((curve.upper[smooth], curve.lower[smooth][::-1])) * scale,
            fill="toself", fillcolor=_rgba(colour, 0.18), line={"width": 0},
            hoverinfo="skip", name=f"{name}: 95% band", showlegend=False,
        ),
        go.Scatter(
            x=x, y=np.where(thin, np.nan, fit), mode="lines",
            line={"color": colour, "width": 2.5}, name=name,
            hovertemplate=f"{name}: %{{y:.2f}}%<extra>%{{x:.4g}}</extra>",
        ),
    ]
    if thin.any():
        traces.append(go.Scatter(
            x=x, y=np.where(reach, fit, np.nan), mode="lines",
            line={"color": _rgba(colour, 0.45), "width": 2, "dash": "dot"},
            name=f"{name} (thin support)", showlegend=False,
            hovertemplate=f"{name}: %{{y:.2f}}% (thin support)<extra>%{{x:.4g}}</extra>",
        ))
    if curve.spike.any():
        spike = curve.spike
        traces.append(go.Scatter(
            x=curve.x[spike], y=curve.fit[spike] * scale, mode="markers",
            marker={"color": colour, "size": 9, "symbol": "square",
                    "opacity": [0.45 if t else 1.0 for t in curve.thin[spike]]},
            error_y={"type": "data", "symmetric": False, "color": colour,
                     "array": (curve.upper - curve.fit)[spike] * scale,
                     "arrayminus": (curve.fit - curve.lower)[spike] * scale},
            name=f"{name} (own rows at a value with >= 5% of the weight)", showlegend=False,
            hovertemplate=f"{name}: %{{y:.2f}}% (rows at this value)<extra>%{{x:.4g}}</extra>",
        ))
    return traces


def _shade_thin(figure: go.Figure, curve: LoessCurve,
                curves: tuple[LoessCurve, ...] = ()) -> None:
    """Shade the stretches of thin support (left out of VCE(v*)) behind the curves.

    The y axis then spans the supported points' bands (and 0) of ``curves`` (default: ``curve``),
    so a thin stretch whose fit wanders off does not set the scale; what is drawn stays inside
    it (:func:`_inside`).
    """
    smooth = ~curve.spike
    x, thin = curve.x[smooth], curve.thin[smooth]
    edges = np.flatnonzero(np.diff(np.concatenate(([0], thin.astype(np.int8), [0]))))
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        figure.add_vrect(
            x0=x[max(a - 1, 0)], x1=x[min(b, x.size - 1)], fillcolor=LIGHT_GRAY, opacity=0.35,
            line_width=0, layer="below",
        )
    if thin.any():  # named in the legend (a label on the shading ran over the legend, #40)
        figure.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name="grey: thin support",
            marker={"symbol": "square", "size": 12, "color": LIGHT_GRAY}, hoverinfo="skip"))
        keep = [(c, ~c.thin | c.spike) for c in curves or (curve,)]
        low = min(min(float(c.lower[k].min()) for c, k in keep if k.any()), 0.0) * 100
        high = max(max(float(c.upper[k].max()) for c, k in keep if k.any()), 0.0) * 100
        pad = 0.08 * (high - low) or 1.0
        figure.update_layout(yaxis_range=[low - pad, high + pad])
        _inside(figure, low - pad, high + pad)


def _inside(figure: go.Figure, low: float, high: float) -> None:
    """Keep what is drawn within the y axis [low, high] (a thin stretch's fit may leave it).

    A thin stretch's line is cut where it leaves the axis (drawing it along the edge would
    show a value the fit does not have); a band is clipped to the axis (it reaches beyond).
    """
    for trace in figure.data:
        if trace.type != "scatter" or trace.y is None or trace.yaxis not in (None, "y"):
            continue
        y = np.asarray(trace.y, dtype=float)
        if trace.fill == "toself":
            trace.y = np.clip(y, low, high)
        elif str(trace.name).endswith("(thin support)"):
            trace.y = np.where((y < low) | (y > high), np.nan, y)


def _vce_text(result: VariableCalibration) -> str:
    if not np.isfinite(result.vce):
        return "VCE(v*) not reported (no point with enough support)"
    noise = "" if result.vce_significant else " (within noise)"
    if result.dates:  # at the resolution the axis spans: a day, never nanoseconds (#40)
        wide = float(result.gap.x[-1] - result.gap.x[0]) >= 2 * 86_400e9
        at = format_time(pd.Timestamp(round(result.vce_at)), "day" if wide else "minute")
    else:
        at = format_number(result.vce_at)
    return f"VCE(v*) {100 * result.vce:.2f}%{noise} at {result.name} = {at}"


def _cumulative_text(result: VariableCalibration) -> str:
    """Write the bandwidth-free statistic along V in words (no span: it sees local errors)."""
    if not np.isfinite(result.kuiper_z):
        return ""
    written = format_p(result.p_value)
    p = ("" if not np.isfinite(result.p_value)
         else f", p {written}" if written.startswith("<") else f", p = {written}")
    return f" · change along it (no span): D/σ {result.kuiper_z:.2f}{p}"


def _mark_v_star(figure: go.Figure, result: VariableCalibration) -> None:
    """Draw a dotted line at v*, where VCE(v*) is read off the curves."""
    if np.isfinite(result.vce):
        figure.add_vline(x=result.vce_at, line={"color": BLACK, "width": 1, "dash": "dot"},
                         annotation_text="v*", annotation_position="bottom right",
                         annotation_yanchor="bottom")  # inside, at the foot: above the plot it
                         # hit the title, at its top the legend


def _rug(result: VariableCalibration) -> go.Bar:
    edges = result.histogram_edges
    return go.Bar(
        x=0.5 * (edges[:-1] + edges[1:]), y=result.histogram_counts, width=np.diff(edges),
        marker={"color": LIGHT_GRAY}, yaxis="y2", name=f"rows by {result.name}",
        hovertemplate="%{y:,} rows<extra>%{x:.4g}</extra>", showlegend=False,
    )



def _with_rug_axes(figure: go.Figure, result: VariableCalibration) -> None:
    strip_below(figure, "rows", plot=(0.22, 1.0), strip=(0.0, 0.15), left=True)
    figure.update_layout(xaxis={"title": result.name, "anchor": "y2"}, bargap=0)
    if result.dates:  # the abscissae are nanoseconds: ticks written as dates
        low, high = (pd.Timestamp(round(e)) for e in result.histogram_edges[[0, -1]])
        ticks = pd.date_range(low, high, periods=6)
        if high - low >= pd.Timedelta(days=10):
            ticks = ticks.round("D")
        figure.update_xaxes(tickvals=ticks.as_unit("ns").asi8.astype(float),
                            ticktext=format_ticks(ticks.to_numpy()))


def _thin_and_rug(figure: go.Figure, result: VariableCalibration, curve: LoessCurve,
                  curves: tuple[LoessCurve, ...] = ()) -> None:
    """Shade where ``curve`` is thin, then add the rug of rows along V and its axes."""
    _shade_thin(figure, curve, curves)
    figure.add_trace(_rug(result))
    _with_rug_axes(figure, result)


RANK_AXIS_SPREAD = 0.5
"""V is drawn at its ranks when the middle 90% of its rows (off the spikes) spans less than
this share of its observed range: a long tail (fnlwgt, capital_gain) would otherwise give most
of the chart to stretches of thin support whose curves leave the axis (#40)."""
THIN_AXIS_SHARE = 0.25
"""... or when stretches of thin support would take more than this share of a linear axis."""
_OUTSIDE = 0.08
"""A spike below (above) the other rows' range is drawn this far left (right) of rank 0 (1)."""


def rank_scale(result: VariableCalibration):
    """Return V -> its rank (0 to 1 over the rows off the spikes), or None for a linear axis.

    Piecewise linear through :attr:`~VariableCalibration.rank_knots` (tied knots at their
    mean rank); a spike outside the knots' range sits :data:`_OUTSIDE` beyond 0 or 1; other
    points there (no row of V lies between) map to NaN. Dates keep their time axis.
    """
    knots = np.asarray(result.rank_knots, dtype=float)
    if result.dates or knots.size < 101 or knots[0] == knots[-1]:
        return None
    span = float(result.histogram_edges[-1] - result.histogram_edges[0])
    smooth = ~np.asarray(result.gap.spike)
    x, thin = np.asarray(result.gap.x)[smooth], np.asarray(result.gap.thin)[smooth]
    thin_width = float(np.diff(x)[thin[1:] | thin[:-1]].sum())  # steps touching thin support
    if (knots[95] - knots[5] >= RANK_AXIS_SPREAD * span
            and thin_width < THIN_AXIS_SHARE * span):
        return None
    values, inverse = np.unique(knots, return_inverse=True)
    ranks = np.bincount(inverse, np.linspace(0, 1, knots.size)) / np.bincount(inverse)
    spikes = set(np.asarray(result.gap.x)[np.asarray(result.gap.spike)].tolist())

    def scale(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        mapped = np.interp(x, values, ranks)
        below, above = x < values[0], x > values[-1]
        spike = np.isin(x, list(spikes))
        mapped[below] = np.where(spike[below], -_OUTSIDE, np.nan)
        mapped[above] = np.where(spike[above], 1 + _OUTSIDE, np.nan)
        return mapped

    scale.values, scale.ranks = values, ranks
    return scale


def _rank_axis(figure: go.Figure, result: VariableCalibration) -> None:
    """Draw V at its ranks (:func:`rank_scale`), ticks at every 20% of rows, said in the title.

    Every trace's x, the shaded stretches, v* and the rug are moved; hover keeps V's values.
    """
    scale = rank_scale(result)
    if scale is None:
        return
    for trace in figure.data:
        if trace.x is None or trace.type not in ("scatter", "bar") or all(
                v is None for v in trace.x):
            continue
        x = np.asarray([np.nan if v is None else v for v in trace.x], dtype=float)
        if trace.type == "bar":  # the rug: each bin between its mapped edges
            width = np.broadcast_to(np.asarray(trace.width, dtype=float), x.shape)
            left, right = (np.interp(e, scale.values, scale.ranks, left=-_OUTSIDE,
                                     right=1 + _OUTSIDE) for e in (x - width / 2, x + width / 2))
            trace.update(x=(left + right) / 2, width=right - left)
            continue
        if trace.customdata is None and trace.hovertemplate:
            trace.update(customdata=x, hovertemplate=trace.hovertemplate.replace(
                "%{x", "%{customdata"))
        trace.x = scale(x)
        if trace.mode and "text" in trace.mode:  # the label on the side with room for it
            trace.textposition = "top left" if np.nanmax(trace.x) > 0.5 else "top right"
    items = [(shape, ("x0", "x1")) for shape in figure.layout.shapes]
    for item, keys in items + [(note, ("x",)) for note in figure.layout.annotations]:
        for key in keys:
            if item.xref in (None, "x") and item[key] is not None:
                item[key] = float(np.nan_to_num(scale(np.array([float(item[key])]))[0]))
    # a tick at the value whose rank is nearest each 20% of the rows: labels are data values
    nearest = np.unique([int(np.argmin(np.abs(scale.ranks - t))) for t in np.linspace(0, 1, 6)])
    ticks = [float(scale.ranks[i]) for i in nearest]
    text = [format_number(float(scale.values[i]), digits=3) for i in nearest]
    for spike in np.asarray(result.gap.x)[np.asarray(result.gap.spike)]:
        place = float(scale(np.array([spike]))[0])
        if place < 0 or place > 1:
            ticks.append(place)
            text.append(format_number(float(spike), digits=3))
    note = " off the spikes" if np.asarray(result.gap.spike).any() else ""
    edges = [-0.03 - _OUTSIDE * (min(ticks) < 0), 1.03 + _OUTSIDE * (max(ticks) > 1)]
    figure.update_xaxes(
        tickmode="array", tickvals=ticks, ticktext=text, range=edges,
        title_text=f"{result.name} (spaced by rank: a tick every 20% of the rows{note})")


@styled
def variable_curves_figure(result: VariableCalibration, *, title: str | None = None,
                           presentation: bool = False, height: int | None = None) -> go.Figure:
    """Error and predicted-error curves (percent) with 95% bands, and the rows along V.

    {parameters}
    {style}

    {returns}
    """
    figure = go.Figure()
    for trace in _band_traces(result.error, VERMILION, "error rate"):
        figure.add_trace(trace)
    for trace in _band_traces(result.predicted, BLUE, "predicted error"):
        figure.add_trace(trace)
    _thin_and_rug(figure, result, result.error, (result.error, result.predicted))
    _mark_v_star(figure, result)
    figure.update_layout(yaxis_title="error (%)")
    _rank_axis(figure, result)
    chosen = " (cross-validated)" if result.span_chosen else ""
    # two lines: one line of it all was cut at a half-width chart's edge (#40)
    subtitle = (
        f"VECE {100 * result.vece:.2f}% · {_vce_text(result)} · n = {result.n:,}<br>"
        f"span {result.span:g}{chosen}{_cumulative_text(result)}"
    )
    if result.n_missing:
        subtitle += f" · {result.n_missing:,} rows without {result.name} left off"
    apply_style(
        figure,
        title=title or f"Error and predicted error along {result.name}",
        subtitle=subtitle, presentation=presentation, height=height, legend="bottom",
    )
    return figure


@styled
def gap_figure(result: VariableCalibration, *, title: str | None = None, presentation: bool = False,
               height: int | None = None) -> go.Figure:
    """Plot the gap curve (error − predicted error, percent) with its own band and VCE(v*).

    {returns}
    """
    figure = go.Figure()
    for trace in _band_traces(result.gap, VERMILION, "error − predicted error"):
        figure.add_trace(trace)
    x = result.gap.x
    figure.add_trace(go.Scatter(
        x=[x[0], x[-1]], y=[0.0, 0.0], mode="lines",
        line={"color": BLACK, "width": 1, "dash": "dash"}, hoverinfo="skip", showlegend=False,
    ))
    if np.isfinite(result.vce):
        where = int(np.argmin(np.abs(x - result.vce_at)))
        figure.add_trace(go.Scatter(
            x=[result.vce_at], y=[100 * result.gap.fit[where]], mode="markers+text",
            marker={"color": BLACK, "size": 10, "symbol": "diamond"},
            text=[f"VCE(v*) {100 * result.vce:.2f}%"],
            # v* is often at an end of the grid: put the label on the side with room for it
            textposition="top left" if where > x.size / 2 else "top right",
            name="VCE(v*)", hovertemplate="v* = %{x:.4g}<br>gap %{y:.2f}%<extra></extra>",
        ))
    _thin_and_rug(figure, result, result.gap)
    figure.update_layout(yaxis_title="error − predicted (%)")
    _rank_axis(figure, result)
    subtitle = (
        f"above 0: more errors than predicted (overconfident) · VECE {100 * result.vece:.2f}%"
        f"<br>{_cumulative_text(result).removeprefix(' · ')}"
    )
    if not np.isfinite(result.vce):
        subtitle += f" · {_vce_text(result)}"
    apply_style(  # legend below: inside, it covered the VCE(v*) label
        figure, title=title or f"Calibration gap along {result.name}", subtitle=subtitle,
        presentation=presentation, height=height, legend="bottom",
    )
    return figure


@styled
def categorical_levels_figure(result: LevelCalibration, *, title: str | None = None,
                              presentation: bool = False, height: int | None = None,
                              max_levels: int = 40) -> go.Figure:
    """Per-level error rate and mean predicted error (percent) with 95% intervals.

    {parameters}
    max_levels : int, default 40
        Only the first ``max_levels`` levels by row count are drawn (the subtitle says so).

    {returns}
    """
    order = np.argsort(-result.count, kind="stable")[:max_levels]
    levels = [result.levels[i] for i in order]
    figure = go.Figure()
    for name, mean, lower, upper, colour in (
        ("error rate", result.error, result.error_lower, result.error_upper, VERMILION),
        ("predicted error", result.predicted, result.predicted_lower, result.predicted_upper,
         BLUE),
    ):
        figure.add_trace(go.Bar(
            x=levels, y=100 * mean[order], name=name,
            marker={"color": colour, "opacity": np.where(result.eligible[order], 1.0, 0.4)},
            error_y={"type": "data", "symmetric": False, "color": GRAY,
                     "array": 100 * (upper - mean)[order],
                     "arrayminus": 100 * (mean - lower)[order]},
            customdata=result.count[order],
            hovertemplate=f"{name}: %{{y:.2f}}%<br>%{{customdata:,}} rows<extra>%{{x}}</extra>",
        ))
    figure.update_layout(barmode="group", yaxis_title="error (%)", xaxis_title=result.name)
    noise = "" if result.vce_significant else " (within noise)"
    largest = (f"largest gap {100 * result.vce:.2f}%{noise} at {result.vce_at}"
               if np.isfinite(result.vce) else "no level has enough rows for VCE(v*)")
    subtitle = f"{largest} · VECE {100 * result.vece:.2f}% · n = {result.n:,}"
    if not result.eligible.all():
        subtitle += " · lighter: too few rows to count in VCE(v*)"
    if len(result.levels) > max_levels:
        subtitle += f" · {max_levels} of {len(result.levels)} levels shown"
    apply_style(
        figure, title=title or f"Error and predicted error by {result.name}",
        subtitle=subtitle, presentation=presentation, height=height, legend="bottom",
    )
    return figure
