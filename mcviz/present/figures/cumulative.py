"""Cumulative plots: the full population's calibration path and a subpopulation's deviation.

Both draw the decimated path (``result.plot_index``, which keeps every extreme, so the drawn
range equals D), a triangle at the origin with vertices (0, 0) and (x_tri, ±2σ) — tip-to-tip 4σ,
the scale of pure noise (paper 003, section "Significance of stochastic fluctuations") — the
abscissa k/n (or the cumulative weight A_k) on a top axis and the score (or the ordering
variable) on the bottom axis, and D, D/σ and p in the subtitle. Nothing is computed here beyond
placing ticks.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from mcviz.present.figures._style import BLACK, BLUE, LIGHT_GRAY, VERMILION, apply_style, styled
from mcviz.present.figures.format import format_number, format_p, format_ticks
from mcviz.stats.cumulative import CumulativeResult
from mcviz.stats.deviation import DeviationResult

__all__ = ["cumulative_figure", "deviation_figure"]

TICKS = 6


@styled
def cumulative_figure(result: CumulativeResult, *, title: str | None = None,
                      presentation: bool = False, triangle_width: float = 0.1,
                      height: int | None = None, p_note: str | None = None) -> go.Figure:
    """Plot the cumulative differences between responses and scores.

    {parameters}
        From :func:`mcviz.cumulative_differences` (ordered by score or by a variable).
    title : str, optional
        Replaces the default title (which says that the slope is the miscalibration).
    presentation : bool, default False
        Larger fonts and lines for a projector.
    triangle_width : float, default 0.1
        Horizontal extent of the triangle at the origin, in units of the abscissa.
    height : int, optional
    p_note : str, optional
        Said in place of the p-value: a subpopulation chosen for being extreme has no valid
        p-value of its own ("largest of 1,000: not yet tested against chance").

    {returns}
        Traces: the path, the triangle, and an invisible helper that draws the top axis.
    """
    variable = result.order_by or "score"
    along = f" along {result.order_by}" if result.order_by else ""
    default_title = f"Cumulative differences{along} (slope = miscalibration)"
    subtitle = _statistics_text(result.kuiper, result.kuiper_z, result.p_value, result.ks,
                                result.ks_z, result.n, p_note) + _sigma_note(result.sigma_method)
    if result.n_missing:
        subtitle += f" · {result.n_missing:,} rows without {result.order_by} left off"
    return _path_figure(
        result,
        path_name="response − score, cumulative",
        y_title="response − score",
        bottom_title=variable,
        axis_title=f"{variable} (a tick every {100 // (TICKS - 1)}% of rows)",
        title=title or default_title, subtitle=subtitle, color=BLUE,
        presentation=presentation, triangle_width=triangle_width, height=height,
    )


@styled
def deviation_figure(result: DeviationResult, *, title: str | None = None,
                     presentation: bool = False, triangle_width: float = 0.1,
                     height: int | None = None, p_note: str | None = None) -> go.Figure:
    """Plot the cumulative deviation of a subpopulation from the full population (paper 003).

    {parameters}
        From :func:`mcviz.stats.deviation.subpopulation_deviation`.
    title : str, optional
    presentation : bool, default False
    triangle_width : float, default 0.1
    height : int, optional
    p_note : str, optional
        Said in place of the p-value (a subpopulation chosen for being extreme).

    {returns}
        Traces: the path, the triangle, and an invisible helper that draws the top axis.
    """
    name = result.description or "subpopulation"
    default_title = f"Deviation of {name} from the full population (slope = deviation)"
    subtitle = _statistics_text(result.kuiper, result.kuiper_z, result.p_value, result.ks,
                                result.ks_z, result.n, p_note)
    subtitle += f" of {result.n_full:,}" + _sigma_note(result.sigma_method)
    return _path_figure(
        result,
        path_name="subpopulation − full population, summed",  # no Fₖ − F̃ₖ for people (#40)
        y_title="cumulative gap",
        bottom_title="score in the subpopulation",
        axis_title=f"score (a tick every {100 // (TICKS - 1)}% of the group's rows)",  # half a
        # page wide: "score in the subpopulation (... of its rows)" was cut at the edge (#40)
        title=title or default_title, subtitle=subtitle, color=BLACK,
        presentation=presentation, triangle_width=triangle_width, height=height,
    )


def _statistics_text(
    kuiper: float, kuiper_z: float, p_value: float, ks: float, ks_z: float, n: int,
    p_note: str | None = None,
) -> str:
    p_text = format_p(p_value)
    p_text = f"p {p_text}" if p_text.startswith("<") else f"p = {p_text}"
    if np.isnan(p_value):  # the Brownian p-value is void: weights that depend on the labels
        p_text = "p not valid with label-dependent weights"
    if p_note:  # chosen for being extreme: its own p is no test
        p_text = p_note
    # the headline first: a narrow chart keeps it when the line is cut
    return (
        f"D/σ = {format_number(kuiper_z, digits=3)} ({p_text}) · G/σ = "
        f"{format_number(ks_z, digits=3)} · D = {format_number(kuiper)} · n = {n:,}"
    )


def _sigma_note(method: str) -> str:
    # A chart whose σ is not the Bernoulli one says so (paper 000 Appendix C).
    source = {
        "adjacent": "paper 000 eq. (6)",
        "variance": "paper 003 eqs. (22)-(23), weighted (32)-(33)",
    }.get(method)
    return f" · σ for non-binary responses ({source})" if source else ""


def _path_figure(result: CumulativeResult | DeviationResult, *, path_name: str, y_title: str,
                 bottom_title: str, axis_title: str, title: str, subtitle: str, color: str,
                 presentation: bool, triangle_width: float, height: int | None) -> go.Figure:
    keep = result.plot_index  # decimated: at most about MAX_POINTS points, extremes kept
    x = result.x[keep]
    position = result.position[keep]
    if np.issubdtype(position.dtype, np.datetime64):  # a datetime covariate: hover shows dates
        customdata = np.empty((keep.size, 2), dtype=object)
        customdata[:, 0] = result.fraction[keep].astype(np.float32)
        customdata[:, 1] = format_ticks(position)
        position_hover = "%{customdata[1]}"
    else:  # hover text only (4 significant digits): single precision halves its payload
        customdata = np.column_stack((result.fraction[keep], position)).astype(np.float32)
        position_hover = "%{customdata[1]:.4g}"
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=x,
            y=result.path[keep],
            mode="lines",
            name=path_name,
            line={"color": color, "width": 2.5},
            customdata=customdata,
            hovertemplate=(
                "k/n = %{customdata[0]:.4f}<br>"
                + bottom_title
                + f" = {position_hover}<br>cumulative = %{{y:.4g}}<extra></extra>"
            ),
        )
    )
    height_2sigma = 2.0 * result.sigma
    figure.add_trace(
        go.Scatter(
            x=[0.0, triangle_width, triangle_width, 0.0],
            y=[0.0, height_2sigma, -height_2sigma, 0.0],
            mode="lines",
            fill="toself",
            fillcolor="rgba(213, 94, 0, 0.12)",
            line={"color": VERMILION, "width": 1.5},
            name=f"±2σ (σ = {format_number(result.sigma, digits=3)})",
            hovertemplate="±2σ = ±%{y:.4g}<extra></extra>",
        )
    )
    # An invisible trace on the top axis, so that plotly draws it.
    figure.add_trace(
        go.Scatter(
            x=[0.0, 1.0], y=[0.0, 0.0], xaxis="x2", mode="markers", marker={"opacity": 0},
            showlegend=False, hoverinfo="skip", name="k/n axis",
        )
    )
    bottom_values, bottom_text, top_values, top_text = _ticks(result)
    axis_range = [-0.02, 1.02]
    top_title = "k/n (fraction of observations)"
    if result.weighted:
        top_title += "; abscissa: cumulative weight Aₖ"
    figure.update_layout(
        xaxis={
            "title": {"text": axis_title},  # the ticks are quantiles: said (#40)
            "range": axis_range,
            "tickmode": "array",
            "tickvals": bottom_values,
            "ticktext": bottom_text,
        },
        xaxis2={
            "title": {"text": top_title},
            "overlaying": "x",
            "side": "top",
            "range": axis_range,
            "tickmode": "array",
            "tickvals": top_values,
            "ticktext": top_text,
            "showgrid": False,
        },
        yaxis={"title": {"text": y_title}},
    )
    # a short chart (the review grid) keeps its data area: no k/n axis on top (hover has k/n)
    top_axis = height is None or height >= COMPACT_HEIGHT
    if not top_axis:
        figure.update_layout(xaxis2={"visible": False})
    apply_style(figure, title=title, subtitle=subtitle, presentation=presentation, height=height,
                top_axis=top_axis)
    figure.add_hline(y=0, line={"color": LIGHT_GRAY, "width": 1})
    return figure


COMPACT_HEIGHT = 450
"""Below this height (px) the k/n axis on top is left out, so the data keep their room."""

MIN_TICK_GAP = 0.07
"""Ticks closer than this (in abscissa units) are dropped: a run of tied scores covering most
rows puts several evenly spaced targets at one abscissa, and their labels would stack."""


def _spread(at: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Drop ticks closer than MIN_TICK_GAP to the previous kept one; the last tick stays."""
    kept: list[int] = []
    for index in at:
        if not kept or x[index] - x[kept[-1]] >= MIN_TICK_GAP:
            kept.append(int(index))
    last = int(at[-1])
    if kept[-1] != last:
        if len(kept) > 1 and x[last] - x[kept[-1]] < MIN_TICK_GAP:
            kept[-1] = last
        else:
            kept.append(last)
    return np.asarray(kept, dtype=int)


def _ticks(
    result: CumulativeResult | DeviationResult,
) -> tuple[list[float], list[str], list[float], list[str]]:
    """Bottom ticks: the score (or variable) at evenly spaced abscissae; top ticks: k/n.

    The path is evaluated at the last row of each run of tied scores, so a tick is placed at
    such a point and labelled with its own value; ticks that would fall on one point of a long
    tie run are merged (:func:`_spread`).
    """
    targets = np.linspace(0.0, 1.0, TICKS)
    at = _spread(np.minimum(np.searchsorted(result.x, targets), result.x.size - 1), result.x)
    bottom_values = result.x[at].tolist()
    bottom_text = format_ticks(result.position[at])
    at_fraction = _spread(
        np.minimum(np.searchsorted(result.fraction, targets), result.x.size - 1), result.x)
    top_values = result.x[at_fraction].tolist()
    top_text = format_ticks(result.fraction[at_fraction])
    return bottom_values, bottom_text, top_values, top_text
