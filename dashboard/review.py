"""The review view for a dashboard scope: the grid of mcviz.present.review, the verdict, the deck."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.runs import Compute, Scope, direct
from mcviz.io import Predictions
from mcviz.present.review import ReviewResults, corp_of, corp_resamples, review_figures
from mcviz.present.review import review_results as _review_results
from mcviz.present.verdict import Selection, Verdict, review_verdict
from mcviz.stats.cumulative import mean_rates
from mcviz.subpopulations import on_score_alone, subpopulation_words
from mcviz.text import format_p

__all__ = ["ReviewResults", "chosen_note", "corp_of", "corp_resamples", "deck_of",
           "folded_label", "review_figures", "review_results", "scope_verdict"]


def review_results(pred: Predictions, scope: Scope, *, variable: str | None,
                   bins: tuple[int, ...], compute: Compute = direct,
                   corp: bool = False) -> ReviewResults:
    """:func:`mcviz.present.review.review_results` of a scope (cache keys: the scope's kind and rows)."""
    return _review_results(pred, None if scope.is_full else scope.subpopulation,
                           key=scope.cache_key, variable=variable, bins=bins, compute=compute,
                           corp=corp)


def scope_verdict(pred: Predictions, results: ReviewResults, runs_: Sequence[Any], *,
                  null: Any = None, null_estimate: str | None = None,
                  scope: Scope | None = None, picked: Selection | None = None) -> Verdict:
    """Return the verdict of the review's scope (:func:`mcviz.present.verdict.review_verdict`).

    ``runs_`` are the Subpopulations page's runs (the first one's search or generated
    subpopulations speak), ``null`` the held null distribution of a generated run, ``scope``
    how the scope was chosen: the argmax or a row of the generated table is judged by its
    adjusted p-value from ``null`` (untested without one), never by its own; a finding of the
    search (argmax or id of a searched run) by ``Finding.confirmed``; a filter or a level,
    which the user wrote, by its own deviation — unless Monitor picked it from its heat map:
    ``picked`` (:func:`dashboard.monitor.picked_selection`) judges it by the monitor's
    adjusted p-value, never its own. A group bounded by the score alone is said and judged by
    its own calibration (:func:`mcviz.subpopulations.on_score_alone`: its deviation from the
    full population is zero by construction).
    """
    sub = results.subpopulation
    run = runs_[0] if runs_ else None
    search = run.search if run is not None else None
    generated = run.result if run is not None and search is None else None
    finding, selection = None, None
    if sub is not None and scope is not None and scope.kind in ("argmax", "sub"):
        if search is not None:
            finding = next((f for f in search.findings if f.rank == sub.id), None)
        elif generated is not None:
            selection = _selection(generated, sub.id, null, largest=scope.kind == "argmax")
    if sub is not None and scope is not None and scope.kind == "filter" and picked is not None:
        selection = picked
    argmax_words = (None if generated is None else
                    subpopulation_words(pred, generated.argmax))
    own = (results.own is not None
           and on_score_alone(pred, sub))  # its deviation is zero by construction
    return review_verdict(
        results.own if own else results.cumulative,
        description="full population" if sub is None else subpopulation_words(pred, sub),
        total=pred.n, deviation=sub is not None and not own, own=own,
        rates=mean_rates(pred, index=None if sub is None else sub.index),
        selection=selection, finding=finding, multicalibration=generated, null=null,
        null_estimate=null_estimate, argmax_words=argmax_words, search=search,
        binary=pred.response_kind == "binary", curves=results.curves,
        n_variables=sum(kind != "nominal" for kind in pred.covariate_kinds.values()))


def folded_label(verdict: Verdict) -> str:
    """Return the label of the verdict's folded part ("" when nothing folds).

    The Review page shows the headline (the scope's sentence) and the next step; the other
    sentences, the confirmed findings, the fix and monitoring sections and the statistics
    fold under this label, which names what is there.
    """
    findings = len(verdict.findings)
    others = len(verdict.sentences) - 1 - findings
    parts = []
    if others > 0:
        parts.append(f"{others} more sentence{'s' if others > 1 else ''}")
    if findings:
        parts.append(f"{findings} confirmed finding{'s' if findings > 1 else ''} to open")
    parts.extend(section.title.split(":")[0] for section in verdict.sections)
    if verdict.details:
        parts.append("the statistics")
    return ("More: " + ", ".join(parts)) if parts else ""


def chosen_note(scope: Scope, runs_: Sequence[Any], null: Any = None,
                picked: Selection | None = None) -> str | None:
    """Return what a chart says in place of the p-value of a scope chosen for being extreme.

    None for the full population, a filter or a level (their own p-value is a test), except a
    filter Monitor ``picked`` from its heat map: the monitor's adjusted p-value.
    """
    if scope.kind == "filter" and picked is not None:
        if picked.p_adjusted is None:  # a link's pick, no monitor run here yet
            return f"{picked.phrase} {picked.what}: not yet tested against chance"
        return (f"adjusted p {_phrase(format_p(picked.p_adjusted))}, {picked.phrase} "
                f"{picked.what}")
    if scope.kind not in ("argmax", "sub"):
        return None
    return chosen_note_by_id(scope.subpopulation.id, runs_, null,
                             largest=scope.kind == "argmax")


def chosen_note_by_id(sub_id: int, runs_: Sequence[Any], null: Any = None, *,
                      largest: bool = False) -> str | None:
    """:func:`chosen_note` of the run's subpopulation (or finding) ``sub_id``.

    The Subpopulations page's drill-down charts say the same as Review's (#40: they printed
    the argmax's own "p < 0.0001"). ``largest``: it is the argmax (else compared as one of
    the run's subpopulations, as the table lists them).
    """
    if not runs_ or sub_id == 0:
        return None
    run = runs_[0]
    if run.search is not None:
        finding = next((f for f in run.search.findings if f.rank == sub_id), None)
        if finding is None:
            return None
        if finding.p_kind == "void":
            return "held-out p not valid with label-dependent weights"
        return f"held-out adjusted p {_phrase(format_p(finding.p_adjusted))}"
    selection = _selection(run.result, sub_id, null, largest=largest)
    if selection.p_adjusted is None:
        return f"{selection.phrase}: not yet tested against chance"
    return f"adjusted p {_phrase(format_p(selection.p_adjusted))}, {selection.phrase}"


def _phrase(p: str) -> str:
    return p if p.startswith("<") else f"= {p}"


def _selection(result: Any, sub_id: int, null: Any, *, largest: bool) -> Selection:
    """How a generated subpopulation was chosen, with its adjusted p-value when tested."""
    if null is None:
        return Selection(int(result.n_subpopulations), largest=largest)
    ids = [s.id for s in result.subpopulations]
    p = float(null.p_adjusted[ids.index(sub_id)]) if sub_id in ids else None
    return Selection(int(result.n_subpopulations), largest=largest, p_adjusted=p,
                     draws=int(null.draws))


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
        score_alone_notes,
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
    sub = None if scope is None else scope[1].subpopulation
    alone = on_score_alone(pred, sub)
    drawn = (None if scope is None else
             (scope[0], scope_charts(scope[1], deviation=not alone)))
    notes = {} if search is None else score_alone_notes(
        pred, {f.rank: f.subpopulation for f in search.findings})
    return deck_slides(verdict, info, charts=charts, scope=drawn, notes=notes,
                       sections=section_charts(verdict.sections))
