"""The data of a deck's native charts, taken from results already computed (nothing recomputed).

A slide's chart is a :class:`SlideChart`: a title in words, axis titles, and its series. Two
kinds exist, the two python-pptx draws as native, editable PowerPoint charts
(:func:`mcviz.present.deck.write_pptx`):

* ``"xy"``: an XY scatter with lines — the cumulative differences with the ±2σ triangle
  (:func:`cumulative_chart`), the reliability diagram's bins against the diagonal
  (:func:`reliability_chart`), the LOESS error and predicted-error curves with their 95% bands
  (:func:`curves_chart`) and the LCS curve with its band (:func:`lcs_chart`);
* ``"columns"``: clustered columns — rows per score bin (:func:`counts_chart`) and a nominal
  variable's error rates per level.

Every number is read from the result: paths are thinned to at most :data:`MAX_POINTS` points
per series keeping each bucket's lowest and highest point (so the drawn range of a cumulative
path is its range D), histogram bins are summed in adjacent groups to at most
:data:`MAX_COLUMNS` columns. A series holds no NaN: a gap splits it into pieces of one name.

:func:`review_charts` gives a scope's charts in the deck's order; :func:`figure_charts` reads a
plotly figure's own traces (a :class:`~mcviz.present.verdict.Section`'s drawing) into the same
form; :func:`chart_figure` draws a chart back as a plotly figure (the PDF when only kaleido is
there).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcviz.present.figures.format import format_number

__all__ = ["MAX_COLUMNS", "MAX_POINTS", "Series", "SlideChart", "band", "chart_figure",
           "counts_chart", "cumulative_chart", "curves_chart", "figure_charts", "lcs_chart",
           "nice_range",
           "pieces", "reliability_chart", "review_charts", "thinned"]

MAX_POINTS = 400
"""Points per drawn series at most (a slide is about 1,200 px wide on a projector)."""
MAX_COLUMNS = 12
"""Columns per category axis at most (labels at 12 pt stay apart on a half-slide chart)."""

BLUE, VERMILION, BLACK, GRAY, LIGHT = "0072B2", "D55E00", "222222", "888888", "BBBBBB"


@dataclass(frozen=True)
class Series:
    """One series: ``x`` and ``y`` (no NaN), or ``y`` against the chart's categories.

    ``style``: ``"line"``, ``"markers"`` (line and markers), ``"band"`` (a thin dashed edge of
    a band), ``"dotted"``. ``colors``: one per category of a column chart (two models' columns
    told apart), else every column in ``color``.
    """

    name: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    color: str = BLUE
    style: str = "line"
    colors: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlideChart:
    """One native chart of a slide: ``kind`` "xy" or "columns" (then ``categories``)."""

    title: str
    kind: str
    series: tuple[Series, ...]
    x_title: str = ""
    y_title: str = ""
    categories: tuple[str, ...] = ()
    note: str = ""
    y_percent: bool = False
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None
    x_dates: bool = False


def thinned(x: Any, y: Any, limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Return at most about ``limit`` points of a path: each bucket's lowest and highest point.

    The first and last points are kept, so is the path's lowest and highest point (the drawn
    range is the path's range); the points keep their order.

    >>> x = np.arange(10_001) / 10_000
    >>> y = np.sin(40 * x)
    >>> tx, ty = thinned(x, y, 100)
    >>> len(tx) <= 102, ty.max() == y.max(), ty.min() == y.min(), tx[0], tx[-1]
    (True, np.True_, np.True_, np.float64(0.0), np.float64(1.0))
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size <= limit:
        return x, y
    buckets = np.array_split(np.arange(x.size), max(limit // 2, 1))
    keep = {0, x.size - 1}
    for bucket in buckets:
        part = y[bucket]
        if np.isfinite(part).any():
            keep.update((int(bucket[np.nanargmin(part)]), int(bucket[np.nanargmax(part)])))
    index = np.array(sorted(keep))
    return x[index], y[index]


def pieces(name: str, x: Any, y: Any, color: str, style: str) -> list[Series]:
    """Split a series at its NaN (a native chart cannot hold them): one name, several pieces."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    finite = np.isfinite(x) & np.isfinite(y)
    out: list[Series] = []
    start = None
    for i, ok in enumerate([*finite.tolist(), False]):
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            xs, ys = x[start:i], y[start:i]
            if xs.size == 2:  # LibreOffice draws no line of two points: add their midpoint
                xs, ys = np.r_[xs[0], xs.mean(), xs[1]], np.r_[ys[0], ys.mean(), ys[1]]
            out.append(Series(name, tuple(xs.tolist()), tuple(ys.tolist()), color, style))
            start = None
    return out


def band(name: str, x: Any, lower: Any, upper: Any, color: str) -> list[Series]:
    """Return a band's two edges, thin and dashed, under one legend name ("<name>: 95% band")."""
    return [*pieces(f"{name}: 95% band", x, upper, color, "band"),
            *pieces(f"{name}: 95% band", x, lower, color, "band")]


def cumulative_chart(result: Any, *, deviation: bool = False, title: str | None = None,
                     triangle_width: float = 0.1, name: str | None = None,
                     y_title: str | None = None, slope: str | None = None) -> SlideChart:
    """Chart the cumulative differences (or a subpopulation's deviation) with the ±2σ triangle.

    The abscissa is the share of rows in score order (k/n, or the cumulative weight): its
    score quantiles are named in the note (the axis is quantile-spaced in the score).
    ``name``, ``y_title`` and ``slope`` (what a slope means, for the note) name another path
    drawn the same way (two models' paired loss differences, :mod:`mcviz.present.comparison`).
    """
    keep = np.asarray(result.plot_index)
    x, path = thinned(np.asarray(result.x)[keep], np.asarray(result.path)[keep])
    sigma = float(result.sigma)
    name = name or ("subpopulation − full population" if deviation
                    else "observed − predicted, summed")
    series = [*pieces(name, x, path, BLACK if deviation else BLUE, "line"),
              *pieces("±2σ: what noise alone reaches", [0.0, triangle_width, triangle_width, 0.0],
                       [0.0, 2 * sigma, -2 * sigma, 0.0], VERMILION, "line")]
    ordered = getattr(result, "order_by", None) or "score"
    weighted = bool(getattr(result, "weighted", False))
    x_title = (f"share of {'weight' if weighted else 'rows'}, ordered by {ordered} "
               f"({'in the subpopulation' if deviation else 'quantile scale'})")
    slope = slope or ("slope = how far the subpopulation departs" if deviation
                      else "slope = miscalibration")
    return SlideChart(
        title=title or ("Deviation from the full population" if deviation
                        else "Cumulative differences"),
        kind="xy", series=tuple(series), x_title=x_title,
        y_title=y_title or ("difference in the subpopulation" if deviation
                            else "observed − predicted, summed"),
        note="; ".join(part for part in (slope, _quantile_note(result, ordered)) if part),
        x_range=(0.0, 1.0))


def _quantile_note(result: Any, ordered: str) -> str:
    """Name the scores at 25%, 50% and 75% of the rows (the abscissa is their quantile)."""
    fraction = np.asarray(result.fraction, dtype=float)
    position = np.asarray(result.position)
    if fraction.size < 2 or not np.issubdtype(position.dtype, np.number):
        return ""
    at = np.searchsorted(fraction, (0.25, 0.5, 0.75)).clip(0, fraction.size - 1)
    values = ", ".join(format_number(float(position[i]), digits=2) for i in at)
    return f"{ordered} at 25%, 50%, 75% of the rows: {values}"


def reliability_chart(result: Any, *, title: str | None = None,
                      population: str = "full population") -> SlideChart:
    """Chart the reliability diagram at the result's first bin count: observed against predicted.

    ``population`` names the rows the diagram is of (a finding's rows drawn on their own at
    scale are not the full population).
    """
    which = 0
    k = result.n_bins[which]
    series = pieces("perfect calibration", [0.0, 1.0], [0.0, 1.0], GRAY, "dotted")
    full = result.full[which]
    keep = np.asarray(full.count) > 0
    sub = result.has_subpopulation
    series += pieces(population, np.asarray(full.mean_score)[keep],
                      np.asarray(full.mean_response)[keep], GRAY if sub else BLUE, "markers")
    if sub:
        bins = result.subpopulation[which]
        keep = np.asarray(bins.count) > 0
        series += pieces("subpopulation", np.asarray(bins.mean_score)[keep],
                          np.asarray(bins.mean_response)[keep], BLACK, "markers")
    binary = getattr(result, "response_kind", "binary") == "binary"
    return SlideChart(title=title or f"Reliability ({k} score bins)", kind="xy",
                      series=tuple(series), x_title="predicted (mean score in the bin)",
                      y_title="observed (mean response)",
                      note="points above the diagonal: more events than predicted",
                      x_range=(0.0, 1.0), y_range=(0.0, 1.0) if binary else None)


def counts_chart(result: Any, *, title: str | None = None,
                 population: str = "full population") -> SlideChart:
    """Rows (or weight) per score bin: clustered columns, the subpopulation beside the full.

    With a subpopulation both are drawn as shares of their own total: a group of 2,000 rows
    beside 26,000 rows per bin would be invisible as counts (seen on the Adult deck); the
    totals stay in the series' names.
    """
    edges = np.asarray(result.histogram_edges, dtype=float)
    full = np.asarray(result.histogram_full, dtype=float)
    group = max(math.ceil(full.size / MAX_COLUMNS), 1)
    starts = np.arange(0, full.size, group)
    labels = tuple(f"{format_number(edges[s], digits=2)}–"
                   f"{format_number(edges[min(s + group, full.size)], digits=2)}" for s in starts)
    word = "weight" if result.weighted else "rows"
    full = np.add.reduceat(full, starts)
    if not result.has_subpopulation:
        return SlideChart(title=title or f"{word.capitalize()} per score bin", kind="columns",
                          series=(Series(population, labels, tuple(full), BLUE),),
                          x_title="score bin", y_title=word, categories=labels)
    sub = np.add.reduceat(np.asarray(result.histogram_subpopulation, dtype=float), starts)
    series = tuple(Series(f"{name} ({format_number(values.sum())} {word})", labels,
                          tuple(values / values.sum() if values.sum() > 0 else values), color)
                   for name, values, color in (("full population", full, GRAY),
                                               ("subpopulation", sub, BLACK)))
    return SlideChart(title=title or f"Share of {word} per score bin", kind="columns",
                      series=series, x_title="score bin", y_title=f"share of its {word}",
                      categories=labels, y_percent=True)


def curves_chart(curves: Any, *, title: str | None = None) -> SlideChart:
    """Error and predicted error along a variable with their 95% bands (a nominal one: columns).

    Thin-support stretches (too few rows) are dotted; rates in percent.
    """
    if hasattr(curves, "levels"):
        order = np.argsort(-np.asarray(curves.count), kind="stable")[:MAX_COLUMNS]
        labels = tuple(str(curves.levels[i]) for i in order)
        series = (Series("error rate", labels, tuple(np.asarray(curves.error)[order]), VERMILION),
                  Series("predicted error", labels, tuple(np.asarray(curves.predicted)[order]),
                         BLUE))
        return SlideChart(title=title or f"Error and predicted error by {curves.name}",
                          kind="columns", series=series, x_title=str(curves.name),
                          y_title="error rate", categories=labels, y_percent=True)
    series: list[Series] = []
    low, high = math.inf, -math.inf
    for name, curve, color in (("error rate", curves.error, VERMILION),
                               ("predicted error", curves.predicted, BLUE)):
        x = np.asarray(curve.x, dtype=float)
        fit, thin = np.asarray(curve.fit, dtype=float), np.asarray(curve.thin, dtype=bool)
        lower, upper = np.asarray(curve.lower, dtype=float), np.asarray(curve.upper, dtype=float)
        series += band(name, x, lower, upper, color)
        series += pieces(name, x, np.where(thin, np.nan, fit), color, "line")
        reach = thin | np.r_[thin[1:], False] | np.r_[False, thin[:-1]]
        series += pieces(f"{name} (few rows)", x, np.where(reach, fit, np.nan), color, "dotted")
        supported = ~thin & np.isfinite(lower) & np.isfinite(upper)
        if supported.any():
            low = min(low, float(lower[supported].min()))
            high = max(high, float(upper[supported].max()))
    y_range, xs = None, np.asarray(curves.error.x, dtype=float)
    x_range = nice_range(float(xs.min()), float(xs.max())) if xs.size and not getattr(
        curves, "dates", False) else None
    if math.isfinite(low):  # the axis spans the supported bands and 0; thin ends may leave it
        pad = 0.05 * (high - min(low, 0.0) or 1.0)
        y_range = (min(low, 0.0), min(high + pad, 1.0))
    dates = bool(getattr(curves, "dates", False))
    if dates:  # nanoseconds since 1970 to spreadsheet day numbers (days since 1899-12-30)
        series = [Series(s.name, tuple(v / 86_400e9 + 25_569 for v in s.x), s.y, s.color,
                         s.style) for s in series]
    return SlideChart(title=title or f"Error and predicted error along {curves.name}", kind="xy",
                      series=tuple(_clip(series, y_range)), x_title=str(curves.name),
                      y_title="error rate", note=_curves_note(curves),
                      y_percent=True, x_range=x_range, y_range=y_range, x_dates=dates)


def _curves_note(curves: Any) -> str:
    """The curves chart's note: dotted points, and the bound when drawn from fine bins."""
    within = getattr(curves, "within", None)
    if within is None:
        return "dotted: too few rows to read the curve"
    rates, _without = within.rates_within()
    if not math.isfinite(rates):
        return "dotted: too few rows; drawn from fine bins of the variable, with no bound"
    return (f"dotted: too few rows; each point within {100 * rates:.2g} percentage points of "
            "the curve from every row")


def nice_range(low: float, high: float) -> tuple[float, float]:
    """Widen [low, high] to multiples of a round step (1, 2 or 5 times a power of ten).

    A chart's axis starts at its minimum: 30,751 gave ticks 30751, 40751, ... on a slide.

    >>> nice_range(-0.9, 13.6), nice_range(30751.0, 88840.0)
    ((-2.0, 14.0), (30000.0, 90000.0))
    """
    span = (high - low) or 1.0
    power = 10.0 ** math.floor(math.log10(span / 5))
    step = next(m * power for m in (1, 2, 5, 10) if span / (m * power) <= 8)
    return math.floor(low / step) * step, math.ceil(high / step) * step


def _clip(series: list[Series], y_range: tuple[float, float] | None) -> list[Series]:
    """Clip the series to the axis range, so nothing is drawn outside the chart."""
    if y_range is None:
        return series
    low, high = y_range
    return [Series(s.name, s.x, tuple(float(np.clip(v, low, high)) for v in s.y), s.color,
                   s.style) for s in series]


def lcs_chart(lcs: Any, *, title: str | None = None) -> SlideChart:
    """Chart the local calibration curve ĝ with its 95% band against the diagonal."""
    grid = np.asarray(lcs.grid, dtype=float)
    series = [*pieces("perfect calibration", [0.0, 1.0], [0.0, 1.0], GRAY, "dotted"),
              *band("local calibration", grid, lcs.lower, lcs.upper, BLUE),
              *pieces("local calibration", grid, lcs.fit, BLUE, "line")]
    return SlideChart(title=title or "Local calibration curve", kind="xy",
                      series=tuple(_clip(series, (0.0, 1.0))), x_title="score",
                      y_title="observed rate near the score",
                      note=f"local calibration score {format_number(float(lcs.lcs), digits=3)}",
                      x_range=(0.0, 1.0), y_range=(0.0, 1.0))


def review_charts(results: Any, *, counts: bool = True, population: str = "full population",
                  deviation: bool = True) -> tuple[SlideChart, ...]:
    """Return a scope's charts in the deck's order, from its ``ReviewResults``.

    A subpopulation: its deviation from the full population, the reliability diagram, the rows
    per score bin, the curves along the variable, its own calibration, the LCS. Without
    ``deviation`` (a group bounded by the score alone, whose deviation is zero by construction:
    :func:`mcviz.subpopulations.on_score_alone`) its own calibration comes first and the
    deviation is not drawn. The full
    population: its cumulative differences, reliability, rows per bin, curves, LCS. Results
    that are missing (with the reason in ``results``) are left out; so are the rows per bin
    without ``counts``. ``population`` names the rows of a scope drawn as a population of its
    own (the legend's "full population" otherwise).
    """
    sub = results.own is not None
    own = (cumulative_chart(results.own, title="Own calibration of the subpopulation")
           if sub else None)
    charts = [own if sub and not deviation else
              cumulative_chart(results.cumulative, deviation=sub),
              reliability_chart(results.reliability, population=population)]
    if counts:
        charts.append(counts_chart(results.reliability, population=population))
    if results.curves is not None:
        charts.append(curves_chart(results.curves))
    if sub and deviation:
        charts.append(own)
    if results.lcs is not None:
        charts.append(lcs_chart(results.lcs))
    return tuple(charts)


# --------------------------------------------------------------------------------------------
# plotly figures (a section's drawing) to charts, and charts back to figures


_TAGS = re.compile(r"<[^>]+>")


def _title(figure: Any) -> str:
    text = figure.layout.title.text or ""
    return _TAGS.sub("", text.split("<br>")[0]).strip()


def _axis_title(axis: Any) -> str:
    return _TAGS.sub("", (axis.title.text or "") if axis is not None else "").strip()


def figure_charts(figure: Any) -> tuple[SlideChart, ...]:
    """Read a plotly figure's traces on its first axes into a chart (nothing recomputed).

    Scatter traces become XY series (a filled band's outline its two edges), bars clustered
    columns; a figure with neither (a heat map) gives no chart — its slide keeps the words.
    Helper traces (hidden, invisible markers, bootstrap replicates) are left out.
    """
    def first_axes(trace: Any) -> bool:
        return (getattr(trace, "xaxis", None) in (None, "x")
                and getattr(trace, "yaxis", None) in (None, "y"))

    traces = [t for t in figure.data if first_axes(t) and t.visible not in (False, "legendonly")]
    scatter = [t for t in traces if t.type in ("scatter", "scattergl")
               and not str(t.name or "").startswith("bootstrap")
               and not (t.marker is not None and t.marker.opacity == 0)]
    bars = [t for t in traces if t.type == "bar"]
    title = _title(figure)
    x_title, y_title = _axis_title(figure.layout.xaxis), _axis_title(figure.layout.yaxis)
    if scatter:
        series: list[Series] = []
        palette = (BLUE, VERMILION, BLACK, GRAY, "009E73", "CC79A7")
        for i, trace in enumerate(scatter):
            color = palette[i % len(palette)]
            try:
                x = np.asarray(trace.x, dtype=float)
                y = np.asarray(trace.y, dtype=float)
            except (TypeError, ValueError):
                continue
            name = str(trace.name or f"series {i + 1}")
            if trace.fill == "toself" and x.size >= 4 and x.size % 2 == 0:
                half = x.size // 2
                series += band(name.replace(": 95% band", ""), x[:half], y[half:][::-1],
                                y[:half], color)
            else:
                x, y = thinned(x, y)
                mode = str(trace.mode or "lines")
                series += pieces(name, x, y, color, "markers" if "markers" in mode else "line")
        return (SlideChart(title=title, kind="xy", series=tuple(series), x_title=x_title,
                           y_title=y_title),) if series else ()
    if bars:
        labels = tuple(str(v) for v in bars[0].x)[:MAX_COLUMNS]
        series = [Series(str(t.name or f"series {i + 1}"), labels,
                         tuple(float(v) for v in list(t.y)[:len(labels)]),
                         (BLUE, VERMILION, BLACK)[i % 3]) for i, t in enumerate(bars)
                  if len(t.x) == len(bars[0].x)]
        return (SlideChart(title=title, kind="columns", series=tuple(series), x_title=x_title,
                           y_title=y_title, categories=labels),)
    return ()


def chart_figure(chart: SlideChart, *, height: int = 540) -> Any:
    """Draw a chart as a plotly figure in presentation fonts (the PDF's pictures via kaleido)."""
    import plotly.graph_objects as go

    figure = go.Figure()
    shown: set[str] = set()
    for s in chart.series:
        legend = s.name not in shown and s.style != "band"
        shown.add(s.name)
        if chart.kind == "columns":
            figure.add_trace(go.Bar(x=list(s.x), y=list(s.y), name=s.name,
                                    marker={"color": f"#{s.color}"}))
            continue
        dash = {"band": "dash", "dotted": "dot"}.get(s.style, "solid")
        figure.add_trace(go.Scatter(
            x=list(s.x), y=list(s.y), name=s.name, showlegend=legend,
            mode="lines+markers" if s.style == "markers" else "lines",
            line={"color": f"#{s.color}", "dash": dash, "width": 1 if s.style == "band" else 2.5}))
    subtitle = f"<br><span style='font-size:16px'>{chart.note}</span>" if chart.note else ""
    figure.update_layout(
        title={"text": chart.title + subtitle}, height=height, font={"size": 18},
        xaxis={"title": chart.x_title, "range": chart.x_range},
        yaxis={"title": chart.y_title, "range": chart.y_range,
               "tickformat": ".0%" if chart.y_percent else None},
        legend={"orientation": "h", "y": -0.25}, barmode="group", template="simple_white",
        margin={"l": 80, "r": 30, "t": 90, "b": 140})
    return figure

