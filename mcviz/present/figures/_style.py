"""One visual style for every mcviz chart: colour-blind-safe, readable on a projector."""

from __future__ import annotations

import inspect
import re
from functools import lru_cache
from typing import Literal

import plotly.graph_objects as go
import plotly.io as pio

# Okabe–Ito palette (colour-blind safe).
BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILION = "#D55E00"
PURPLE = "#CC79A7"
GRAY = "#7F7F7F"
LIGHT_GRAY = "#CCCCCC"
SEQUENCE = (BLUE, VERMILION, GREEN, ORANGE, PURPLE, SKY_BLUE, BLACK)

FONT_SIZE = 15
PRESENTATION_FONT_SIZE = 22
LINE_WIDTH = 2.5
PRESENTATION_LINE_WIDTH = 4.0
MAX_POINTS = 10_000
"""No figure carries more points than this (paths are decimated before they reach a figure)."""


LegendPlace = Literal["bottom", "none"]
ASSUMED_WIDTH = 560
"""Width (px) legends are laid out for when a figure has none: a half-screen grid cell."""


STYLE_OPTIONS = """title : str, optional
        The figure's title (None: the builder's own).
    presentation : bool, default False
        Larger fonts and lines, for a projector.
    height : int, optional
        Pixels (None: the house height)."""
"""How every builder documents the house style's options (:func:`styled` fills it in)."""


def styled(builder):
    """Write the documentation every figure builder shares: its input, options and output.

    The builder's docstring holds ``{parameters}`` where its Parameters section starts (the
    heading and the first parameter, named and typed from the signature), ``{style}`` where the
    ``title``, ``presentation`` and ``height`` options belong (written once here,
    :data:`STYLE_OPTIONS`, and passed on to :func:`apply_style`) and ``{returns}`` where its
    Returns section starts (a plotly figure).

    >>> @styled
    ... def f(result: int, *, title=None, presentation=False, height=None):
    ...     '''Draw.
    ...
    ...     {parameters}
    ...     {style}
    ...
    ...     {returns}
    ...     '''
    >>> print(f.__doc__.split("----------")[1].split("title")[0].strip())
    result : int
    >>> "presentation : bool, default False" in f.__doc__, "graph_objects.Figure" in f.__doc__
    (True, True)
    """
    if builder.__doc__:
        first = next(iter(inspect.signature(builder).parameters.values()))
        kind = first.annotation if first.annotation is not inspect.Parameter.empty else "object"
        builder.__doc__ = (
            builder.__doc__.replace("{style}", STYLE_OPTIONS)
            .replace("{parameters}", f"Parameters\n    ----------\n    {first.name} : {kind}")
            .replace("{returns}", "Returns\n    -------\n    plotly.graph_objects.Figure")
        )
    return builder


def apply_style(figure: go.Figure, *, title: str | None = None, subtitle: str | None = None,
                presentation: bool = False, height: int | None = None,
                legend: LegendPlace = "bottom", top_axis: bool = False,
                x_title: bool = True) -> go.Figure:
    """Apply the house layout; the one place that places titles, axes and legends.

    The title (and its subtitle line) sits at the top of the figure; below it a top axis when
    ``top_axis``; the plot; the bottom axis's ticks and title; then, with ``legend="bottom"``,
    the legend at the bottom edge of the figure. The margins reserve the height of each band,
    the legend's rows estimated from its entries' text at the figure's width, so no legend
    lies over an axis title (on screen and in exported images alike). There is no place inside
    the plot: a legend there covered data (the rising part of Review's age curves, #40).
    """
    size = PRESENTATION_FONT_SIZE if presentation else FONT_SIZE
    line = 1.35 * size
    text = title or ""
    lines = subtitle_lines(subtitle or "", figure.layout.width, presentation)
    if lines:  # the headline numbers: never smaller than the tick labels
        text += (f"<br><span style='font-size:{tick_size(presentation)}px'>"
                 f"{'<br>'.join(lines)}</span>")
    # plotly anchors a two-line title by its first line: the pad makes room for the second;
    # each further subtitle line (wrapped to the chart's width, #40) takes a tick line more
    top = 12 + (line if title else 0) + (1.7 * line if lines else 0)
    top += max(len(lines) - 1, 0) * 1.85 * size  # plotly's <br> advance, measured
    top += 2 * line + 6 if top_axis else 8
    bottom = 1.5 * line + (line if x_title else 0)
    legend_layout: dict = {"visible": False}
    legend_size = tick_size(presentation)  # legends explain; the data keep the room
    if legend == "bottom":
        rows = _legend_rows(figure, legend_size)
        bottom += rows * 1.35 * legend_size + 6 if rows else 0
        legend_layout = {"orientation": "h", "yref": "container", "y": 0.0,
                         "yanchor": "bottom", "x": 0.0, "xanchor": "left",
                         "bgcolor": "rgba(0,0,0,0)", "font": {"size": legend_size}}
    figure.update_layout(
        template=_template(frozenset(trace.type for trace in figure.data) - _BASE_TRACES,
                           tick_size(presentation)),
        font={"size": size, "family": "Arial, Helvetica, sans-serif"},
        title={"text": text, "x": 0.0, "xanchor": "left", "yref": "container", "y": 1.0,
               "yanchor": "top", "pad": {"t": round(10 + (0.85 * line if subtitle else 0)), "l": 4}}
        if text else None,
        margin={"l": 70, "r": 30, "t": round(top), "b": round(bottom)},
        legend=legend_layout,
        showlegend=legend != "none",
        height=height or (560 if presentation else 430),
        hoverlabel={"font_size": size - 2},
    )
    annotations = [a.to_plotly_json() for a in figure.layout.annotations]
    if annotations:  # subplot titles, point labels (one assignment, not one update each)
        figure.layout.annotations = [
            {**a, "font": {**a.get("font", {}), "size": round(0.9 * size)}} for a in annotations]
    if presentation:  # thicker data lines; never band outlines (fills) or reference lines
        figure.update_traces(selector=_thickened, line_width=PRESENTATION_LINE_WIDTH)
    return figure


_BASE_TRACES = frozenset({"scatter", "scattergl", "bar", "table"})
"""Trace types whose defaults every template carries (the ones mcviz draws)."""
_UNUSED_LAYOUT = ("colorscale", "geo", "polar", "scene", "ternary")
"""``simple_white`` layout parts for subplots and default colour scales mcviz never uses."""


def subtitle_lines(subtitle: str, width: float | None = None,
                   presentation: bool = False) -> list[str]:
    """Split a subtitle into the lines that fit the chart's width (at its `` · `` separators).

    Lines the caller broke (``<br>``) stay broken; a line longer than the width holds (tick
    size, Arial's mean glyph width ≈ 0.45 em, measured on the Review grid; ``width`` None: a half-screen grid cell,
    :data:`ASSUMED_WIDTH` or 1.5 times it in presentation mode) is broken before the first
    separator that would overrun it. A part with no separator is never cut.

    >>> subtitle_lines("a · b", 560)
    ['a · b']
    >>> [len(line) for line in subtitle_lines(" · ".join(["x" * 40] * 3), 560)]  # 96 fit
    [83, 40]
    """
    if not subtitle:
        return []
    room = (width or ASSUMED_WIDTH * (1.5 if presentation else 1.0)) - 40
    fits = max(int(room / (0.45 * tick_size(presentation))), 20)
    lines = []
    for given in subtitle.split("<br>"):
        current = ""
        for part in given.split(" · "):
            joined = f"{current} · {part}" if current else part
            if current and len(_TAG.sub("", joined)) > fits:
                lines.append(current)
                joined = part
            current = joined
        lines.append(current)
    return lines


_TAG = re.compile(r"<[^>]*>")


def tick_size(presentation: bool = False) -> int:
    """Font size (px) of tick labels and of the subtitle line (the headline numbers)."""
    return round(0.8 * (PRESENTATION_FONT_SIZE if presentation else FONT_SIZE))


def strip_below(figure: go.Figure, name: str, *, plot: tuple[float, float],
                strip: tuple[float, float], left: bool = False) -> None:
    """Lay out a plot over a thin strip (second y axis) and name the strip inside it.

    ``plot`` and ``strip`` are the two y axes' domains (fractions of the plot area); the strip
    has no ticks and no grid. Its name is written inside its top corner (``left``: the left
    one): a rotated axis title beside the plot's own would run into it.
    """
    figure.update_layout(
        yaxis={"domain": list(plot)},
        yaxis2={"domain": list(strip), "showticklabels": False, "showgrid": False},
    )
    figure.add_annotation(text=name, xref="paper", yref="y2 domain", x=0.005 if left else 0.99,
                          y=0.98 if left else 0.95, xanchor="left" if left else "right",
                          yanchor="top", showarrow=False, font={"color": "#555555"})


@lru_cache(maxsize=16)
def _template(extra_traces: frozenset[str] = frozenset(),
              ticks: int = 12) -> go.layout.Template:
    """``simple_white`` with the house axes (grid, no zero line, standoffs, automargin).

    Set once in the template rather than by an update of every axis of every figure (each
    update validates every axis: milliseconds per figure with subplots). Only what mcviz's
    figures can use is kept: the trace defaults of :data:`_BASE_TRACES` and ``extra_traces``
    (the other types a figure holds), and the layout without polar, ternary, 3-D and map
    subplots or a default colour scale (every coloured trace names its own). Assigning a
    template validates all of it: the whole of ``simple_white`` costs 9 ms per figure, this 3.
    """
    white = pio.templates["simple_white"]
    layout = {k: v for k, v in white.layout.to_plotly_json().items() if k not in _UNUSED_LAYOUT}
    data = white.data.to_plotly_json()
    template = go.layout.Template(
        layout=layout, data={k: data[k] for k in sorted(_BASE_TRACES | extra_traces) if k in data})
    template.layout.xaxis.update(showgrid=True, gridcolor="#EEEEEE", zeroline=False,
                                 title_standoff=4, automargin=True, tickfont_size=ticks)
    template.layout.yaxis.update(showgrid=True, gridcolor="#EEEEEE", zeroline=False,
                                 automargin=True, title_standoff=6, tickfont_size=ticks)
    return template


def _thickened(trace: object) -> bool:
    line = getattr(trace, "line", None)
    if line is None or getattr(trace, "mode", None) == "markers":
        return False
    if getattr(trace, "fill", None) not in (None, "none"):
        return False
    return line.width is None or line.width >= LINE_WIDTH - 0.01


def _legend_rows(figure: go.Figure, size: int) -> int:
    """Rows a horizontal legend needs at the figure's width (entries wrap like plotly's)."""
    seen, entries = set(), []
    for trace in figure.data:
        if getattr(trace, "showlegend", False) is False or not getattr(trace, "name", None):
            continue
        key = getattr(trace, "legendgroup", None) or trace.name
        if key not in seen:
            seen.add(key)
            entries.append(str(trace.name))
    if not entries:
        return 0
    width = (figure.layout.width or ASSUMED_WIDTH) - 20
    rows, used = 1, 0.0
    for name in entries:
        entry = 45 + 0.58 * size * len(name)
        if used and used + entry > width:
            rows, used = rows + 1, 0.0
        used += entry
    return rows
