"""Cached results and figures the Calibration, Variables and Report pages share."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import fixing, review, runs, tables
from dashboard import monitor as monitoring
from dashboard import state as s
from dashboard.ui import Current, bin_counts, compute, figure
from mcviz.errors import ValidationError
from mcviz.present.figures import (
    categorical_levels_figure,
    gap_figure,
    lcs_figure,
    reliability_figure,
    variable_curves_figure,
)
from mcviz.present.figures.corp import corp_figure  # not exported by mcviz.present.figures yet
from mcviz.present.report import ReportSection
from mcviz.rules import lcs_applies
from mcviz.stats.binning import calibration_metrics, reliability_diagrams
from mcviz.stats.measures import classical_measures
from mcviz.stats.smoothing import local_calibration_score
from mcviz.stats.variables import level_calibration, rank_variables, variable_calibration
from mcviz.subpopulations import on_score_alone, subpopulation_words

BIN_KIND_TITLES = {"equal_width": "Equal-width bins", "equal_count": "Equal-count bins"}
CORP = "corp"
RELIABILITY_KINDS = {**BIN_KIND_TITLES, CORP: "CORP (isotonic, no bins)"}
"""The reliability diagrams the Calibration page offers: binned, and CORP (bin-free)."""


def reliability_result(item: Current, kind: str) -> Any:
    """Reliability diagrams of the full population at the sidebar's bin counts (cached)."""
    n_bootstrap = 20 if item.pred.n <= 200_000 else 0
    return item.compute("reliability", reliability_diagrams, item.pred, n_bins=list(bin_counts()),
                        kind=kind, n_bootstrap=n_bootstrap)


def reliability_fig(result: Any, cache: str | None = None) -> Any:
    """Return the reliability figure of a result."""
    return figure(reliability_figure, result, cache and f"{cache}:{bin_counts()}")


def corp_result(item: Current, sub: Any = None) -> Any:
    """CORP reliability curve and consistency band of the full population or ``sub`` (cached).

    ``sub`` is a :class:`~mcviz.subpopulations.Subpopulation` of ``item.pred``; its index is
    passed positionally (never hashed), its description keys the cache.
    """
    size = item.pred.n if sub is None else sub.size
    return item.compute("corp" if sub is None else f"corp:{sub.description}", review.corp_of,
                        item.pred, None if sub is None else sub.index,
                        n_resamples=review.corp_resamples(size))


def corp_fig(result: Any, cache: str | None = None) -> Any:
    """Return the CORP reliability figure."""
    return figure(corp_figure, result, cache, title="CORP reliability diagram (no bins)")


def _classical(pred: Any, index: Any, **options: Any) -> pd.DataFrame:
    return classical_measures(pred, index=index, **options).to_frame()


def classical_table(item: Current, sub: Any = None) -> pd.DataFrame:
    """Return the grouped classical measures (``group``, ``name``, ``value``, ``help``), cached.

    Of the full population, or of ``sub`` (a subpopulation of ``item.pred``).
    """
    name = "classical" if sub is None else f"classical:{sub.description}"
    return item.compute(name, _classical, item.pred, None if sub is None else sub.index,
                        n_bins=bin_counts()[0])


def lcs_result(item: Current) -> Any:
    """Return the Local Calibration Score (cached), or None for real-valued responses."""
    if not lcs_applies(item.pred.response_kind):  # the one rule (mcviz.rules)
        return None
    pred = item.pred
    return item.compute("lcs", local_calibration_score, pred.score, pred.label,
                        pred.weight if pred.weighted else None)


def lcs_fig(result: Any, cache: str | None = None) -> Any:
    """Return the LCS figure."""
    return figure(lcs_figure, result, cache)


def metrics_table(item: Current) -> pd.DataFrame:
    """Return the classical metrics table (cached)."""
    result = item.compute("metrics", calibration_metrics, item.pred, n_bins=bin_counts()[0])
    return result.to_frame()


def extra_calibration_figures(item: Current) -> list[tuple[str, Any]]:
    """Reliability diagrams and (for 0/1 responses) the LCS curve of one model."""
    figures = [(title, reliability_fig(reliability_result(item, kind), f"rel:{kind}:{item.key}"))
               for kind, title in BIN_KIND_TITLES.items()]
    result = lcs_result(item)
    if result is not None:
        figures.append(("Local Calibration Score", lcs_fig(result, f"lcs:{item.key}")))
    return figures


def argmax_verdict(item: Current, runs_: Any) -> runs.Verdict:
    """Say what the worst subpopulation of the computed runs is (Review, Report).

    Generated subpopulations: against the null distribution the Subpopulations page computed
    (held in the session), "untested" without one; searched: the first finding's Holm-adjusted
    held-out p-value.
    """
    run = runs_[0]
    if run.search is not None:
        return runs.search_verdict(run.search)
    held = runs.held_null(st.session_state,
                          runs.run_id(item.key, st.session_state.get(s.SUBPOP) or {}))
    return runs.argmax_verdict(run.result, held, total=item.pred.n,
                               words=subpopulation_words(item.pred, run.result.argmax))


def variable_ranking(item: Current) -> pd.DataFrame:
    """Return the VECE ranking of the covariates (cached)."""
    return item.compute("rank_variables", rank_variables, item.pred)


def chosen_variable(item: Current, ranking: pd.DataFrame | None = None) -> str | None:
    """Return the variable chosen on the Variables or Review page, else the top-ranked one."""
    kinds = item.pred.covariate_kinds
    variable = st.session_state.get(s.W_VARIABLE)
    if variable in kinds:
        return variable
    if ranking is not None and len(ranking):
        return str(ranking["name"].iloc[0])
    return next(iter(kinds), None)


def variable_result(item: Current, variable: str) -> Any:
    """Return the LevelCalibration (nominal) or VariableCalibration (ordinal) of a variable."""
    pred = item.pred
    if pred.covariate_kinds.get(variable) == "nominal":
        return item.compute("levels", level_calibration, pred, variable=variable)
    return item.compute("variable", variable_calibration, pred, variable=variable)


def variable_figures(item: Current, variable: str) -> list[tuple[str, Any]]:
    """Return the LOESS and gap figures of an ordinal variable, or the per-level figure."""
    result = variable_result(item, variable)
    if hasattr(result, "levels"):
        return [("levels", figure(categorical_levels_figure, result,
                                  f"levels:{item.key}:{variable}"))]
    return [(build.__name__, figure(build, result, f"{build.__name__}:{item.key}:{variable}"))
            for build in (variable_curves_figure, gap_figure)]


def level_table(result: Any) -> pd.DataFrame:
    """Each level's size, effective size, rates and 95% intervals (percent), and eligibility.

    From a :class:`mcviz.stats.variables.LevelCalibration`; nothing is recomputed.
    """
    def interval(low: Any, high: Any) -> list[str]:
        return [f"{100 * a:.1f} to {100 * b:.1f}" for a, b in zip(low, high, strict=True)]

    return pd.DataFrame({
        "level": list(result.levels), "rows": result.count,
        "effective rows": result.effective_size, "share of weight": result.weight_share,
        "error %": 100 * result.error,
        "error 95% CI": interval(result.error_lower, result.error_upper),
        "predicted error %": 100 * result.predicted,
        "gap %": 100 * result.gap, "gap 95% CI": interval(result.gap_lower, result.gap_upper),
        "in VCE(v*)": ["yes" if e else "no: too few rows" for e in result.eligible],
    })


def variables_section(item: Current) -> list[ReportSection]:
    """Return the Variables section of the report (ranking and the chosen variable's charts)."""
    try:
        ranking = variable_ranking(item)
    except ValidationError:
        return []
    variable = chosen_variable(item, ranking)
    figures = [] if variable is None else [f for _, f in variable_figures(item, variable)]
    table, header_help = tables.variable_table(ranking)  # the page's table, in words
    return [ReportSection(
        "Variables",
        text=(f"Variables ranked: evidence of a miscalibration along them first, then by the "
              f"average gap (VECE); curves for {variable}." if variable else "",),
        figures=tuple(figures),
        tables=(("Variables ranked (hover a header for what it means)", table),),
        column_help=tuple(header_help.items()),
    )]


# --------------------------------------------------------------------------------------------
# The review view (shared by the Review and Report pages)

REVIEW_HEIGHT = {False: 285, True: 440}
"""Chart height of the 2x2 grid: with the verdict, the whole grid fits the first 1440x900 screen
(normal mode); in presentation mode (fonts for a projector) the verdict and the top row fit
1920x1080 and the bottom row is one scroll away (measured by tests/app/test_review_browser.py:
at 375 px the reliability panels' data area fell to 32%)."""


def review_scope(item: Current, runs_: tuple) -> runs.Scope:
    """Return the scope chosen in the session (raises ValidationError with the reason)."""
    kind = st.session_state.get(s.W_SCOPE) or "full"
    expression = (st.session_state.get(s.W_FILTER) if kind == "filter"
                  else st.session_state.get(s.W_SCOPE_LEVEL)) or ""
    return runs.resolve_scope(item.pred, kind, runs=runs_,
                              sub_id=st.session_state.get(s.W_SCOPE_SUB),
                              expression=str(expression))


def review_cells(item: Current, scope: runs.Scope, variable: str | None, *,
                 own_calibration: bool = False, presentation: bool = False,
                 corp: bool = False, runs_: tuple = ()) -> list:
    """Return the four cells of the review grid for a scope (figures, or text saying why not).

    ``corp``: the CORP diagram (no bins) in place of the binned reliability diagrams.
    ``runs_``: a scope chosen from them for being extreme shows no p-value of its own
    (:func:`dashboard.review.chosen_note` says what stands in its place).
    """
    results = review.review_results(item.pred, scope, variable=variable, bins=bin_counts(),
                                     compute=item.compute, corp=corp)
    null = None
    if runs_ and runs_[0].search is None:
        null = runs.held_null(st.session_state,
                              runs.run_id(item.key, st.session_state.get(s.SUBPOP) or {}))
    picked = monitoring.picked_selection(st.session_state, item.key,
                                         st.session_state.get(s.W_FILTER))
    note = review.chosen_note(scope, runs_, null, picked)
    return compute(f"review:{scope.cache_key}:{variable}:{own_calibration}:{corp}:{note}",
                   item.key, review.review_figures, results, presentation=presentation,
                   height=REVIEW_HEIGHT[presentation], own_calibration=own_calibration,
                   bins=list(bin_counts()), p_note=note,
                   score_alone=on_score_alone_scope(item, scope))


def on_score_alone_scope(item: Current, scope: runs.Scope) -> bool:
    """Whether the scope is a group bounded by the score alone.

    Such a scope is drawn and judged by its own calibration: its deviation from the full
    population is zero by construction (:func:`mcviz.subpopulations.on_score_alone`).
    """
    sub = None if scope.is_full else scope.subpopulation
    return on_score_alone(item.pred, sub)


def review_section(item: Current, runs_: tuple) -> ReportSection | None:
    """Return the report's review section: the 2x2 grid of the chosen scope and variable."""
    scope = _current_scope(item, runs_)
    variable = chosen_variable(item)
    cells = review_cells(item, scope, variable, runs_=runs_)
    notes = tuple(cell for cell in cells if isinstance(cell, str) and cell)
    return ReportSection(
        f"Review: {scope.description}",
        text=(f"Scope: {scope.description} ({scope.subpopulation.size:,} rows); variable: "
              f"{variable or 'none'}.", *notes),
        figures=tuple(cell for cell in cells if not isinstance(cell, str)), columns=2,
    )


def scope_results(item: Current, runs_: tuple) -> tuple[str, Any]:
    """Return the Review page's scope in words and its results (cached through ``item.compute``)."""
    scope = _current_scope(item, runs_)
    results = review.review_results(item.pred, scope, variable=chosen_variable(item),
                                     bins=bin_counts(), compute=item.compute)
    name = "The full population" if scope.is_full else f"The scope: {scope.description}"
    return name, results


def _current_scope(item: Current, runs_: tuple) -> runs.Scope:
    """Return the Review page's scope, the full population when it cannot be resolved."""
    try:
        return review_scope(item, runs_)
    except ValidationError:
        return runs.resolve_scope(item.pred, "full")


def current_verdict(item: Current, runs_: tuple) -> Any:
    """Return the verdict of the Review page's scope (as the page states it): report, deck."""
    _, results = scope_results(item, runs_)
    scope = _current_scope(item, runs_)
    null = None
    if runs_ and runs_[0].search is None:
        null = runs.held_null(st.session_state,
                              runs.run_id(item.key, st.session_state.get(s.SUBPOP) or {}))
    verdict = review.scope_verdict(item.pred, results, runs_, null=null, scope=scope)
    fix = fixing.held_section(st.session_state, item.key)  # the Fix page's judgement (#27)
    verdict = verdict if fix is None else verdict.with_sections(fix)
    watch = monitoring.held_section(st.session_state, item.key)  # the Monitor page's (#29)
    return verdict if watch is None else verdict.with_sections(watch)


def deck_buttons(item: Current, verdict: Any, runs_: tuple, *, key: str) -> None:
    """Build the deck (PPTX or PDF) of ``verdict`` on a click and offer its download."""
    findings = len(verdict.findings)
    st.caption(f"16:9 slides with native, editable charts: title, verdict, the scope, "
               f"{findings} confirmed finding{'' if findings == 1 else 's'}, appendix.")

    def slides() -> list:
        return review.deck_of(item.pred, verdict, runs_, source=str(item.source["name"]),
                              bins=bin_counts(), variable=chosen_variable(item),
                              compute=item.compute, scope=scope_results(item, runs_))

    deck_download(slides, key=key, file_name="mcviz-review")


def deck_download(slides: Callable[[], Any], *, key: str, file_name: str) -> None:
    """Offer PPTX (and PDF where it can be made): build ``slides()`` on a click, then download."""
    from mcviz.present.deck import pdf_unavailable, write_deck
    from mcviz.present.report import ExportUnavailableError

    why = pdf_unavailable()
    formats = ["pptx"] if why else ["pptx", "pdf"]
    if why:
        st.caption(f"PDF: {why}")
    fmt = st.segmented_control("Deck format", formats, default="pptx",
                               key=f"{key}_fmt") or "pptx"
    held = f"{key}_file"
    if st.button("Build the deck", key=f"{key}_build", icon=":material/slideshow:"):
        out = io.BytesIO()
        try:
            with st.spinner("Drawing the slides…"):
                write_deck(slides(), out, kind=fmt)
        except ImportError:  # python-pptx is the optional extra mcviz[export]
            st.warning("The deck needs python-pptx (`pip install 'mcviz[export]'`).")
            return
        except ExportUnavailableError as error:
            st.warning(f"The PDF was not written: {error} Download the PPTX instead.")
            return
        st.session_state[held] = (fmt, out.getvalue())
    built = st.session_state.get(held)
    if built is not None:
        mime = ("application/vnd.openxmlformats-officedocument.presentationml.presentation"
                if built[0] == "pptx" else "application/pdf")
        st.download_button(f"Download the deck ({built[0].upper()})", built[1],
                           file_name=f"{file_name}.{built[0]}", mime=mime, key=f"{key}_dl")
