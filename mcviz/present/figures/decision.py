"""The decision curve: net benefit against the threshold, model and recalibrated, with bands.

Draws a :class:`mcviz.decision.DecisionImpact` (no statistic is computed here): the net benefit
of the model and of the recalibrated scores with their 95% bootstrap bands, treat-all and
treat-none, and the user's thresholds as vertical lines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from mcviz.decision import DecisionImpact
from mcviz.present.figures._style import BLACK, BLUE, GRAY, VERMILION, apply_style, styled

__all__ = ["decision_curve_figure"]

_HOVER = ("threshold %{x:.2f}<br>net benefit = %{y:.4f}<br>loss per 1,000 = "
          "%{customdata[0]:.2f} (CI %{customdata[1]:.2f} to %{customdata[2]:.2f})"
          "<extra>%{fullData.name}</extra>")


def _band(x: np.ndarray, low: np.ndarray, high: np.ndarray, color: str, name: str) -> list:
    return [
        go.Scatter(x=x, y=high, mode="lines", line={"width": 0, "color": color},
                   hoverinfo="skip", showlegend=False, legendgroup=name),
        go.Scatter(x=x, y=low, mode="lines", line={"width": 0, "color": color},
                   fill="tonexty", fillcolor=color, opacity=0.25, hoverinfo="skip",
                   name=f"{name} 95% band", showlegend=False, legendgroup=name),
    ]


@styled
def decision_curve_figure(impact: DecisionImpact, *, thresholds: Sequence[float] = (),
                          title: str | None = None, presentation: bool = False,
                          height: int | None = None) -> go.Figure:
    """Draw net benefit against the threshold for the model, the fix, treat-all and treat-none.

    {parameters}
        From :func:`mcviz.decision.decision_impact` (on held-out rows).
    thresholds : sequence of float
        The user's thresholds, drawn as dotted vertical lines.
    {style}

    {returns}
        Traces in order: the model's band (two traces) and curve, the recalibrated scores'
        band and curve, treat all, treat none.
    """
    t = impact.thresholds
    custom = np.column_stack((impact.loss_per_1000, impact.ci_low, impact.ci_high))
    figure = go.Figure()
    rgba_blue, rgba_red = "rgba(0,114,178,0.2)", "rgba(213,94,0,0.2)"
    figure.add_traces(_band(t, impact.model_ci[0], impact.model_ci[1], rgba_blue, "model"))
    figure.add_trace(go.Scatter(x=t, y=impact.model, mode="lines", name="model",
                                line={"color": BLUE, "width": 2.5}, customdata=custom,
                                hovertemplate=_HOVER))
    figure.add_traces(_band(t, impact.recalibrated_ci[0], impact.recalibrated_ci[1], rgba_red,
                            "recalibrated"))
    figure.add_trace(go.Scatter(x=t, y=impact.recalibrated, mode="lines", name="recalibrated",
                                line={"color": VERMILION, "width": 2.5}, customdata=custom,
                                hovertemplate=_HOVER))
    figure.add_trace(go.Scatter(x=t, y=impact.treat_all, mode="lines", name="treat all",
                                line={"color": GRAY, "width": 1.5, "dash": "dash"},
                                hovertemplate="threshold %{x:.2f}<br>net benefit = %{y:.4f}"
                                "<extra>treat all</extra>"))
    figure.add_trace(go.Scatter(x=t, y=impact.treat_none, mode="lines", name="treat none",
                                line={"color": BLACK, "width": 1},
                                hovertemplate="threshold %{x:.2f}<extra>treat none</extra>"))
    top = float(np.nanmax([impact.model_ci[1].max(), impact.recalibrated_ci[1].max(),
                           impact.treat_all.max(), 0.01]))
    for value in thresholds:
        figure.add_vline(x=float(value), line={"color": GRAY, "width": 1, "dash": "dot"})
    subtitle = (f"{impact.scope} · n = {impact.n:,} held-out rows · bands: 95% bootstrap "
                f"({impact.n_bootstrap:,})")
    apply_style(figure, title=title or "Decision curve: net benefit against the threshold",
                subtitle=subtitle, presentation=presentation, height=height)
    figure.update_xaxes(title_text="threshold probability t (treat when score ≥ t)",
                        range=[0, 1])
    figure.update_yaxes(title_text="net benefit (per decision)",
                        range=[-0.15 * top, 1.08 * top])
    return figure
