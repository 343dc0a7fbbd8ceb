"""The review grid's four results for one scope, and their figures (the page, report, deck).

For the full population: its cumulative differences; for a subpopulation: its deviation from the
full population (paper 003) and its own calibration; reliability diagrams at the chosen bin
counts (a subpopulation drawn against the full population); LOESS error and predicted-error
curves along the chosen variable, restricted to the scope; the LCS curve of the scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
from mcviz.present.figures.corp import corp_figure  # not exported by mcviz.present.figures yet
from mcviz.io import Predictions
from mcviz.stats.measures import corp_reliability
from mcviz.rules import lcs_applies, lcs_refusal
from mcviz.stats.smoothing import local_calibration_score
from mcviz.subpopulations import Subpopulation
from mcviz.stats.variables import level_calibration, variable_calibration

__all__ = ["Compute", "ReviewResults", "corp_of", "corp_resamples", "finding_review_from_runs",
           "own_cumulative", "review_figures", "review_from_runs", "review_results",
           "subset_predictions"]

Compute = Callable[..., Any]
"""``compute(name, fn, *args, **kwargs)``: calls ``fn``; a page's version caches the call."""


def direct(_name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


@dataclass(frozen=True)
class ReviewResults:
    """The results the review grid draws for one scope (None where not available, with why).

    ``subpopulation`` is None for the full population.
    """

    subpopulation: Subpopulation | None
    cumulative: Any  # CumulativeResult (full population) or DeviationResult (a subpopulation)
    own: Any  # the subpopulation's own CumulativeResult (None for the full population)
    reliability: Any
    variable: str | None
    curves: Any  # VariableCalibration, LevelCalibration or None
    curves_note: str | None
    lcs: Any
    lcs_note: str | None
    corp: Any = None  # CorpResult drawn in place of the binned diagrams, when asked for


def review_results(
    pred: Predictions,
    subpopulation: Subpopulation | None = None,
    *,
    key: str | None = None,
    variable: str | None,
    bins: tuple[int, ...],
    compute: Compute = direct,
    corp: bool = False,
) -> ReviewResults:
    """Compute (through ``compute``, which may cache) the four results of the review grid.

    ``subpopulation`` None is the full population; ``key`` names the scope in cache keys
    (default: the subpopulation's description).

    With ``corp`` the CORP reliability curve (isotonic, no bins; :func:`corp_resamples` for
    its band) is computed to be drawn in place of the binned diagrams.
    """
    key = key or ("full" if subpopulation is None else subpopulation.description)
    index = None if subpopulation is None else subpopulation.index
    description = None if subpopulation is None else subpopulation.description
    if index is None:
        cumulative = compute("cumulative", cumulative_differences, pred)
        own = None
        part = pred
    else:
        cumulative = compute(f"deviation:{key}", subpopulation_deviation, pred, index,
                             description=description)
        own = compute(f"own:{key}", own_cumulative, pred, index)
        part = compute(f"subset:{key}", subset_predictions, pred, index)
    n_bootstrap = 20 if pred.n <= 200_000 else 0
    reliability = compute(f"reliability:{key}", reliability_diagrams, pred, index=index,
                          n_bins=list(bins), kind="equal_width", n_bootstrap=n_bootstrap,
                          description=description)
    curves, curves_note = None, None
    if variable is None:
        curves_note = "No covariates in the mapping: choose some on the Data page."
    else:
        builder = (level_calibration if pred.covariate_kinds.get(variable) == "nominal"
                   else variable_calibration)
        try:
            curves = compute(f"curves:{key}", builder, part, variable=variable)
        except ValidationError as error:
            curves_note = str(error)
    lcs, lcs_note = None, None
    if not lcs_applies(pred.response_kind):  # the one rule and its words (mcviz.rules)
        lcs_note = lcs_refusal(pred.response_kind)
    else:
        try:
            lcs = compute(f"lcs:{key}", local_calibration_score, part.score, part.label,
                          part.weight if part.weighted else None)
        except ValidationError as error:
            lcs_note = str(error)
    corp_result = None
    if corp:
        size = pred.n if subpopulation is None else subpopulation.size
        corp_result = compute(f"corp:{key}", corp_of, pred, index,
                              n_resamples=corp_resamples(size))
    return ReviewResults(subpopulation=subpopulation, cumulative=cumulative, own=own,
                         reliability=reliability, variable=variable, curves=curves,
                         curves_note=curves_note, lcs=lcs, lcs_note=lcs_note, corp=corp_result)


def review_from_runs(runs: Any, *, bins: tuple[int, ...], curves: Any = None,
                     curves_note: str | None = None, axes: tuple | None = None,
                     ) -> tuple[ReviewResults, dict]:
    r"""Return the full population's review results from an engine's score runs (no rows).

    ``runs`` is a :class:`~mcviz.stats.measures.runs.ScoreRuns` (binary responses, from
    :func:`mcviz.engines.calibration.score_runs_table`). The cumulative differences
    (:func:`~mcviz.stats.cumulative.cumulative_from_runs`: eqs. (1), (2), (5)), the reliability
    diagrams at ``bins`` (:func:`~mcviz.stats.binning.reliability_from_runs`, no bootstrap) and
    the LCS (:func:`~mcviz.stats.smoothing.lcs_runs.lcs_from_runs`, paper 004 eq. (6)) are the
    in-memory ones (to rounding) when each run is one distinct score. With fine score bins
    (width :math:`h`) the returned dict says how far they may be: ``path_within`` (the
    in-memory path lies within it of the drawn one; :math:`D` within twice it),
    ``sigma_square_within`` (:math:`h \sum W^2 / W^2`), ``lcs_fit_within`` (the largest
    per-point bound of the LCS curve), and ``reliability_exact`` the bin counts whose bins the
    fine bins nest in (exact diagrams; others may count a fine bin's rows in the neighbouring
    bin at their edges). ``curves`` (with ``curves_note``) are given by the caller; ``axes``
    the path's axes already drawn for these runs (``cumulative_from_runs``).
    """
    from mcviz.stats.binning import reliability_from_runs
    from mcviz.stats.cumulative import cumulative_from_runs
    from mcviz.stats.smoothing.lcs_runs import lcs_from_runs

    width = None if runs.bins is None else 1.0 / runs.bins
    arrays = (runs.score, runs.count, runs.weight, runs.positive)
    # the small results first: their working arrays then never stand beside the path's
    lcs, lcs_note, lcs_bound = None, None, None
    try:
        lcs, lcs_bound = lcs_from_runs(*arrays, weighted=runs.weighted, bin_width=width)
    except ValidationError as error:
        lcs_note = str(error)
    reliability = reliability_from_runs(*arrays, runs.square_weight, n_bins=list(bins),
                                        kind="equal_width", weighted=runs.weighted)
    cumulative, beta = cumulative_from_runs(*arrays, runs.square_weight,
                                            weighted=runs.weighted, bin_width=width, axes=axes)
    total = float(runs.weight.sum())
    about = {"runs": int(runs.score.size), "exact": width is None, "bins": runs.bins,
             "path_within": beta,
             "sigma_square_within": 0.0 if width is None else float(
                 width * runs.square_weight.sum() / total**2),
             "lcs_fit_within": (0.0 if lcs_bound is None or lcs_bound.size == 0
                                else float(lcs_bound.max())),
             "reliability_exact": [k for k in bins if runs.bins is None or runs.bins % k == 0]}
    return ReviewResults(subpopulation=None, cumulative=cumulative, own=None,
                         reliability=reliability, variable=None if curves is None
                         else getattr(curves, "name", None), curves=curves,
                         curves_note=curves_note, lcs=lcs, lcs_note=lcs_note), about


def finding_review_from_runs(full_runs: Any, runs: Any, subpopulation: Subpopulation, *,
                             full_reliability: Any, bins: tuple[int, ...],
                             rows: ReviewResults | None = None,
                             comparison: tuple | None = None) -> tuple[ReviewResults, dict]:
    """Return a finding's review results at scale, as :func:`review_results` draws it.

    ``full_runs`` and ``runs`` are the :class:`~mcviz.stats.measures.runs.ScoreRuns` of every
    row and of the finding's rows (its ``WHERE``), grouped alike; ``full_reliability`` the
    full population's diagrams (:func:`review_from_runs`). The deviation from the full
    population is :func:`~mcviz.stats.deviation.deviation_from_runs` (paper 003 eqs. (5)-(13),
    (21)), the reliability diagrams the finding's bins beside the full population's; its own
    calibration, the curves along its variable and the LCS are those of ``rows`` (the review
    of its rows read into memory, exact) when given, else from ``runs``
    (:func:`review_from_runs`, no curves). ``comparison``: every row's sums between the
    finding's distinct scores (:func:`~mcviz.stats.deviation.deviation_from_runs`). The dict
    says how exact (:func:`review_from_runs`'s for its own charts from runs, and
    ``deviation_exact``: the finding's runs are its distinct scores).
    """
    from dataclasses import replace

    from mcviz.stats.binning import reliability_from_runs
    from mcviz.stats.deviation import deviation_from_runs

    description = subpopulation.description
    about: dict = {"deviation_exact": runs.bins is None, "bins": runs.bins}
    # the deviation first, then the comparison let go (when the caller holds none) before
    # the finding's own charts are made from its runs
    cumulative = deviation_from_runs(full_runs, runs, description=description,
                                     comparison=comparison)
    del comparison
    if rows is None:  # its own path on the deviation's axes (its distinct scores: the same)
        rows, own_about = review_from_runs(runs, bins=bins, curves_note=(
            "The curves along its variable need its rows, which were not read."),
            axes=None if runs.bins is not None else (
                cumulative.x, cumulative.fraction, cumulative.position))
        about |= {"own": own_about}
        mine = rows.reliability
    else:
        mine = reliability_from_runs(runs.score, runs.count, runs.weight, runs.positive,
                                     runs.square_weight, n_bins=list(bins),
                                     kind="equal_width", weighted=runs.weighted)
    reliability = replace(full_reliability, subpopulation=mine.full,
                          histogram_subpopulation=mine.histogram_full,
                          subpopulation_description=description)
    return ReviewResults(
        subpopulation=subpopulation,
        cumulative=cumulative, own=rows.cumulative, reliability=reliability, variable=rows.variable,
        curves=rows.curves, curves_note=rows.curves_note, lcs=rows.lcs,
        lcs_note=rows.lcs_note), about


def subset_predictions(pred: Predictions, index: Any) -> Predictions:
    """Restrict the predictions to ``index`` (:meth:`mcviz.io.Predictions.subset`)."""
    return pred.subset(index)


def own_cumulative(pred: Predictions, index: Any) -> Any:
    """Return a subpopulation's own cumulative calibration result."""
    return cumulative_differences(pred, index=index)


def corp_resamples(rows: int) -> int:
    """Resamples of the CORP consistency band: 100, or 20 above 200,000 rows.

    Each costs one Bernoulli draw per row and one PAV (about 35 ms at 10^6 rows, from
    :func:`mcviz.stats.measures.corp_reliability`'s docstring).
    """
    return 100 if rows <= 200_000 else 20


def corp_of(pred: Predictions, index: Any, **options: Any) -> Any:
    """:func:`mcviz.stats.measures.corp_reliability` with the index positional (never hashed)."""
    return corp_reliability(pred, index=index, **options)


def review_figures(
    results: ReviewResults, *, presentation: bool = False, height: int = 420,
    own_calibration: bool = False, p_note: str | None = None, score_alone: bool = False,
    **_key: object,
) -> list[go.Figure | str]:
    """Return the four cells of the grid: a figure, or the reason (text) when there is none.

    With ``own_calibration`` a subpopulation's first cell shows its own calibration instead
    of its deviation from the full population; so it does for a group bounded by the score
    alone (``score_alone``: :func:`mcviz.subpopulations.on_score_alone`), whose deviation
    is zero by construction and would show nothing. ``p_note`` replaces a subpopulation's own
    p-value in the first cell's subtitle when it was chosen for being extreme ("largest of
    1,000: not yet tested against chance"). ``_key`` only keys a caller's cache.
    """
    options = {"presentation": presentation, "height": height}
    if results.own is None:
        first = cumulative_figure(results.cumulative, title="Cumulative differences", **options)
    elif own_calibration or score_alone:
        first = cumulative_figure(results.own, title="Own calibration of the subpopulation",
                                  p_note=p_note, **options)
    else:
        first = deviation_figure(results.cumulative, p_note=p_note,
                                 title="Deviation from the full population", **options)
    bins = ", ".join(str(k) for k in results.reliability.n_bins)
    if results.corp is not None:
        second = corp_figure(results.corp, title="CORP reliability (no bins)", **options)
    else:
        second = reliability_figure(results.reliability, title=f"Reliability ({bins} bins)",
                                    **options)
    if results.curves is None:
        third: go.Figure | str = results.curves_note or "No variable chosen."
    elif hasattr(results.curves, "levels"):
        third = categorical_levels_figure(results.curves, **options)
    else:
        third = variable_curves_figure(results.curves, **options)
    fourth = (lcs_figure(results.lcs, **options) if results.lcs is not None
              else results.lcs_note or "")
    return [first, second, third, fourth]
