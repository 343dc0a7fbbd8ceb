"""One-call charts for notebooks: predictions in, a plotly figure out.

Each helper computes its statistic with the library and draws it with :mod:`mcviz.present.figures`
(the figures never recompute anything), like scikit-learn's
``CalibrationDisplay.from_predictions``. Every helper takes ``(pred, *, index=None, ...)``:
``pred`` from :meth:`mcviz.Predictions.from_arrays` or :func:`mcviz.load_predictions`, and
``index`` a subpopulation (positions in score order or a boolean mask).

Examples
--------
>>> import numpy as np
>>> import mcviz
>>> from mcviz.present import plot
>>> rng = np.random.default_rng(0)
>>> score = rng.random(2_000)
>>> pred = mcviz.Predictions.from_arrays(score, rng.random(2_000) < score,
...                                      covariates={"age": rng.integers(18, 90, 2_000)})
>>> plot.cumulative(pred).layout.title.text is not None
True
>>> [type(f).__name__ for f in plot.review(pred, scope="age >= 60", variable="age")]
['Figure', 'Figure', 'Figure', 'Figure']
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from mcviz.stats.binning import reliability_diagrams
from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.errors import ValidationError
from mcviz.present.figures import (
    categorical_levels_figure,
    cumulative_figure,
    deviation_figure,
    lcs_figure,
    reliability_figure,
    variable_curves_figure,
)
from mcviz.io import Predictions, validate_index
from mcviz.rules import lcs_applies
from mcviz.stats.smoothing import local_calibration_score
from mcviz.subpopulations import Subpopulation, filter_subpopulation
from mcviz.stats.variables import level_calibration, variable_calibration

__all__ = ["ReviewFigures", "cumulative", "lcs", "reliability", "review", "variable"]

Scope = str | Subpopulation | np.ndarray | Sequence[int] | None
"""A filter expression, a :class:`~mcviz.subpopulations.Subpopulation`, positions or a mask."""


def cumulative(pred: Predictions, *, index: Scope = None, title: str | None = None) -> go.Figure:
    """Draw the cumulative differences with D, σ and p in the title (paper 000, eqs. (1)-(5)).

    With ``index`` the subpopulation's cumulative deviation from the full population is drawn
    (paper 003); its own calibration is ``cumulative(pred.subset(index))``.
    """
    members, description = _scope(pred, index)
    if members is None:
        return cumulative_figure(cumulative_differences(pred), title=title)
    result = subpopulation_deviation(pred, members, description=description)
    return deviation_figure(result, title=title)


def reliability(pred: Predictions, *, bins: Sequence[int] = (10, 20, 50), index: Scope = None,
                title: str | None = None) -> go.Figure:
    """Draw reliability diagrams at several bin counts (a subpopulation against the full one)."""
    members, description = _scope(pred, index)
    result = reliability_diagrams(pred, n_bins=tuple(bins), index=members,
                                  description=description)
    return reliability_figure(result, title=title)


def variable(pred: Predictions, name: str, *, index: Scope = None, span: float = 0.9,
             title: str | None = None) -> go.Figure:
    """Draw calibration along a covariate (paper 001).

    A numeric covariate gets LOESS curves of error and predicted error with their bands; a
    nominal one its per-level rates with intervals.
    """
    members, _ = _scope(pred, index)
    if pred.covariate_kinds.get(name) == "nominal":
        return categorical_levels_figure(level_calibration(pred, name, index=members),
                                         title=title)
    return variable_curves_figure(variable_calibration(pred, name, index=members, span=span),
                                  title=title)


_variable = variable  # review() has a parameter of that name


def lcs(pred: Predictions, *, index: Scope = None, title: str | None = None) -> go.Figure:
    """Draw the Local Calibration Score's curve with its band (paper 004, eq. (6))."""
    members, _ = _scope(pred, index)
    return lcs_figure(local_calibration_score(pred, index=members), title=title)


@dataclass(frozen=True, slots=True, eq=False)
class ReviewFigures:
    """The four charts of a review, in the dashboard's order (iterable).

    ``variable`` is None without a variable; ``lcs`` is None for real-valued responses (the
    LCS needs 0/1 outcomes, :func:`mcviz.rules.lcs_applies`).
    """

    cumulative: go.Figure
    reliability: go.Figure
    variable: go.Figure | None
    lcs: go.Figure | None

    def __iter__(self) -> Iterator[go.Figure | None]:
        return iter((self.cumulative, self.reliability, self.variable, self.lcs))


def review(pred: Predictions, *, scope: Scope = None, variable: str | None = None,
           bins: Sequence[int] = (10, 20, 50)) -> ReviewFigures:
    """Draw the review's four charts for one scope (the full population by default).

    ``scope`` is a filter expression (``'age >= 40 and sex == "Female"'``), a
    :class:`~mcviz.subpopulations.Subpopulation`, positions in score order or a boolean mask.
    The variable and LCS charts are drawn on the scope's rows alone.
    """
    members, description = _scope(pred, scope)
    part = pred.subset(members)
    first = cumulative(pred, index=members)
    if members is not None:
        first.update_layout(title_text=f"{first.layout.title.text} — {description}")
    return ReviewFigures(
        cumulative=first,
        reliability=reliability(pred, bins=bins, index=members),
        variable=None if variable is None else _variable(part, variable),
        lcs=lcs(part) if lcs_applies(part.response_kind) else None,
    )


def _scope(pred: Predictions, scope: Scope) -> tuple[np.ndarray | None, str | None]:
    """Return the sorted positions of a scope (None for every row) and its description."""
    if scope is None:
        return None, None
    if isinstance(scope, str):
        scope = filter_subpopulation(pred, scope)
    if isinstance(scope, Subpopulation):
        if scope.index.size and scope.index[-1] >= pred.n:
            raise ValidationError(f"subpopulation {scope.description!r} belongs to other "
                                  "predictions (its positions exceed the rows).")
        return validate_index(pred, scope.index), scope.description
    members = validate_index(pred, scope)
    return members, f"{members.size:,} rows"
