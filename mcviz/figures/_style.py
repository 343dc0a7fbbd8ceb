"""One visual style for every mcviz chart: colour-blind-safe, readable on a projector."""

from __future__ import annotations

import plotly.graph_objects as go

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


def apply_style(
    figure: go.Figure,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    presentation: bool = False,
    height: int | None = None,
) -> go.Figure:
    """Apply the house layout: fonts, margins, white background, title with a subtitle line."""
    size = PRESENTATION_FONT_SIZE if presentation else FONT_SIZE
    text = title or ""
    if subtitle:
        text += f"<br><span style='font-size:{int(size * 0.8)}px'>{subtitle}</span>"
    figure.update_layout(
        template="simple_white",
        font={"size": size, "family": "Arial, Helvetica, sans-serif"},
        title={"text": text, "x": 0.0, "xanchor": "left"} if text else None,
        margin={"l": 70, "r": 30, "t": 90 if subtitle else 60, "b": 60},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0.0},
        height=height or (560 if presentation else 430),
        hoverlabel={"font_size": size - 2},
    )
    figure.update_xaxes(showgrid=True, gridcolor="#EEEEEE", zeroline=False)
    figure.update_yaxes(showgrid=True, gridcolor="#EEEEEE", zeroline=False)
    if presentation:
        figure.update_traces(
            selector=lambda t: getattr(t, "line", None) is not None and t.mode != "markers",
            line_width=PRESENTATION_LINE_WIDTH,
        )
    return figure
