"""The one layout helper and the one number formatter of mcviz.present.figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from mcviz.present.figures import apply_style, format_number, subscript
from mcviz.present.figures._style import LINE_WIDTH, PRESENTATION_LINE_WIDTH
from mcviz.present.figures.format import format_ticks


def _band_and_line() -> go.Figure:
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=[0, 1, 1, 0], y=[0, 0, 1, 1], fill="toself", line={"width": 0},
                                name="band", showlegend=False))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="fit",
                                line={"width": LINE_WIDTH}))
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="diagonal",
                                line={"width": 1, "dash": "dash"}))
    return figure


def test_presentation_thickens_data_lines_but_never_band_outlines_or_reference_lines():
    figure = apply_style(_band_and_line(), title="t", presentation=True)
    band, fit, diagonal = figure.data
    assert band.line.width == 0  # an outline would show the band's colour outside the legend
    assert fit.line.width == PRESENTATION_LINE_WIDTH
    assert diagonal.line.width == 1


def test_bottom_legend_sits_below_the_axis_title_with_room_reserved():
    figure = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name=f"entry number {i}")
                        for i in range(12)])
    one = apply_style(go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="a")]), title="t")
    many = apply_style(figure, title="t")
    assert many.layout.legend.yref == "container"
    assert many.layout.legend.y == 0
    assert many.layout.legend.yanchor == "bottom"
    # 12 entries of about 15 characters at 15 px need several rows at 560 px: more margin
    assert many.layout.margin.b > one.layout.margin.b + 2 * 15


def test_top_axis_and_subtitle_get_room_at_the_top():
    plain = apply_style(go.Figure(), title="t")
    both = apply_style(go.Figure(), title="t", subtitle="s", top_axis=True)
    assert both.layout.margin.t > plain.layout.margin.t + 2 * 15


@pytest.mark.parametrize(("value", "kind", "expected"), [
    (0.02458, None, "0.02458"),
    (3.316e-14, None, "3.316e-14"),
    (3.316e-14, "p", "< 0.0001"),  # #40: p below 1e-4 as "< 0.0001" in tables too
    (0.0001, "p", "0.0001"),
    (0.0, "p", "< 0.0001"),
    (1e-320, "p", "< 0.0001"),
    (4960.0, None, "4,960"),
    (999_999.4, None, "999,999"),
    (0.001, None, "0.001"),
    (0.000999, None, "0.000999"),  # LCS-sized numbers read the same in a title and a table
    (0.0000999, None, "9.99e-05"),
    (12, None, "12"),
    (np.int64(48_842), None, "48,842"),
    (pd.Timestamp("2001-02-03"), None, "2001-02-03"),
    (np.datetime64("2001-02-03T04:05"), None, "2001-02-03 04:05:00"),
    (float("nan"), None, "–"),
    (None, None, "–"),
    (float("inf"), None, "∞"),
])
def test_format_number(value, kind, expected):
    assert format_number(value, kind=kind) == expected


def test_no_scientific_notation_between_1e_4_and_1e6():
    for value in np.geomspace(1e-4, 9.99e5, 200):
        assert "e" not in format_number(value), value


def test_ticks_follow_their_range_and_dates_stay_dates():
    assert format_ticks([4.04e-06, 0.2, 0.4, 1.0]) == ["0", "0.2", "0.4", "1"]
    assert format_ticks(np.array(["2020-01-01", "2021-06-01"], dtype="datetime64[ns]")) == [
        "2020-01-01", "2021-06-01"]


def test_subscripts():
    assert "D" + subscript("k") + " / σ" + subscript("k") == "Dₖ / σₖ"
    assert subscript("0") == "₀"


def test_house_template_keeps_simple_white_for_every_trace_type_a_figure_holds():
    import plotly.io as pio

    white = pio.templates["simple_white"]
    scatter = apply_style(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])), title="t")
    template = scatter.layout.template
    # simple_white's look: colours, axis lines and ticks, the bars' white outline
    assert template.layout.colorway == white.layout.colorway
    assert template.layout.plot_bgcolor == "white"
    assert template.layout.xaxis.linecolor == white.layout.xaxis.linecolor
    assert template.layout.yaxis.ticks == "outside"
    assert template.data.bar[0].marker.line.color == white.data.bar[0].marker.line.color
    assert template.data.scatter == white.data.scatter
    # ... with the house grid
    assert template.layout.xaxis.showgrid
    assert template.layout.yaxis.gridcolor == "#EEEEEE"
    # a trace type outside the usual ones brings its own defaults along
    pie = apply_style(go.Figure(go.Pie(values=[1, 2])), title="t", legend="none")
    assert pie.layout.template.data.pie == white.data.pie
    assert scatter.layout.template.data.pie == ()


@pytest.mark.parametrize(("fraction", "signed", "expected"), [
    (0.0028, False, "0.28%"),  # VECE 0.0028 reads 0.28% in tables and charts alike
    (0.1234, False, "12.3%"),
    (-0.05, True, "−5%"),
    (0.041, True, "+4.1%"),
    (0.0, True, "0%"),
    (float("nan"), False, "–"),
])
def test_format_percent(fraction, signed, expected):
    from mcviz.present.figures import format_percent

    assert format_percent(fraction, signed=signed) == expected


@pytest.mark.parametrize(("p", "expected"), [
    (0.0000999, "< 0.0001"), (0.0, "< 0.0001"), (0.0001, "0.0001"), (0.000999, "0.001"),
    (0.00035, "0.00035"), (0.001, "0.001"), (0.148, "0.15"), (0.0456, "0.046"), (1.0, "1"),
    (float("nan"), "–"),
])
def test_format_p_in_sentences(p, expected):
    from mcviz.present.figures import format_p

    assert format_p(p) == expected


def test_format_interval():
    from mcviz.present.figures import format_interval

    assert format_interval(-0.012, 0.034, percent=True) == "−1.2% to 3.4%"
    assert format_interval(1234.6, 2e6) == "1,235 to 2,000,000"
