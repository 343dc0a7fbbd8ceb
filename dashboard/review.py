"""The review view for a dashboard scope: the grid of mcviz.present.review, the verdict, the deck."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.runs import Compute, Scope, direct
from mcviz.io import Predictions
from mcviz.present.review import ReviewResults, corp_of, corp_resamples, review_figures
from mcviz.present.review import review_results as _review_results
from mcviz.present.verdict import Verdict, review_verdict

__all__ = ["ReviewResults", "corp_of", "corp_resamples", "deck_of", "review_figures",
           "review_results", "scope_verdict"]


def review_results(pred: Predictions, scope: Scope, *, variable: str | None,
                   bins: tuple[int, ...], compute: Compute = direct,
                   corp: bool = False) -> ReviewResults:
    """:func:`mcviz.present.review.review_results` of a scope (cache keys: the scope's kind and rows)."""
    return _review_results(pred, None if scope.is_full else scope.subpopulation,
                           key=scope.cache_key, variable=variable, bins=bins, compute=compute,
                           corp=corp)


def scope_verdict(pred: Predictions, results: ReviewResults, runs_: Sequence[Any], *,
                  null: Any = None, null_estimate: str | None = None) -> Verdict:
    """Return the verdict of the review's scope (:func:`mcviz.present.verdict.review_verdict`).

    ``runs_`` are the Subpopulations page's runs (the first one's search or generated
    subpopulations speak), ``null`` the held null distribution of a generated run.
    """
    sub = results.subpopulation
    run = runs_[0] if runs_ else None
    search = run.search if run is not None else None
    generated = run.result if run is not None and search is None else None
    return review_verdict(
        results.cumulative, description="full population" if sub is None else sub.description,
        total=pred.n, deviation=sub is not None, multicalibration=generated, null=null,
        null_estimate=null_estimate, search=search, binary=pred.response_kind == "binary",
        curves=results.curves,
        n_variables=sum(kind != "nominal" for kind in pred.covariate_kinds.values()))


def deck_of(pred: Predictions, verdict: Verdict, runs_: Sequence[Any], *, source: str,
            bins: Sequence[int], variable: str | None, compute: Compute = direct,
            scope: tuple[str, ReviewResults] | None = None) -> list:
    """Return the deck's slides for the verdict shown (native charts: no browser needed).

    ``scope``: the scope's name in words and its results (the charts the page shows); the
    findings' results come through ``compute`` (the page's cache).
    """
    from datetime import UTC, datetime

    from mcviz.present.deck import (
        DeckInfo,
        deck_slides,
        finding_charts,
        scope_charts,
        section_charts,
    )

    model = f"score {pred.score_column}, label {pred.label_column}"
    if pred.weighted:
        model += f", weight {pred.weight_column}"
    info = DeckInfo(source, model, pred.n, datetime.now(UTC).strftime("%Y-%m-%d"))
    search = runs_[0].search if runs_ else None
    charts = ({} if search is None or not verdict.findings else
              finding_charts(pred, search, verdict, bins=bins, variable=variable,
                             compute=compute))
    drawn = None if scope is None else (scope[0], scope_charts(scope[1]))
    return deck_slides(verdict, info, charts=charts, scope=drawn,
                       sections=section_charts(verdict.sections))
