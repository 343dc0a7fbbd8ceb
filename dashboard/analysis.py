"""The current analysis: the loaded data, its mapping, and what every page computes from it.

:func:`require_current` gives a page its :class:`Current` (loading the demo when nothing is
loaded); a link's subpopulations are checked against the budget first (a link never starts work
above it, :mod:`dashboard.limits`). The mapping and the subpopulation runs are plain Python in
:mod:`dashboard.state` and :mod:`dashboard.runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import limits, runs
from dashboard import state as s
from dashboard.caching import (
    STOPPED_RUNS,
    compute,
    compute_with_progress,
    predictions_for,
    read_demo,
    run_with_progress,
)
from dashboard.navigation import LINK_SUBPOP, page_path
from dashboard.state import ColumnMapping, default_mapping
from dashboard.widgets import show_error
from mcviz.budget import check, default_budget
from mcviz.errors import ValidationError
from mcviz.io import VOID_P_VALUES, Predictions
from mcviz.stats.cumulative import cumulative_differences

LINK_NOTICE = "link_subpop_notice"  # why a link's computation waits for a click
RUNS_HELD = "subpop_runs_held"  # (run key, runs) of this session's subpopulations


@dataclass(frozen=True)
class Current:
    """The loaded analysis: predictions, its cache key, the source and the mapping."""

    pred: Predictions
    key: str
    source: Mapping[str, Any]
    mapping: ColumnMapping
    frame: pd.DataFrame = field(repr=False)

    @property
    def source_key(self) -> str:
        """``demo:<name>`` or ``sha256:<digest>``."""
        return s.source_key(self.source)

    def with_score(self, score: str) -> Current:
        """Return the same analysis for another score column (raises ValidationError)."""
        mapping = self.mapping.with_score(score)
        pred = predictions_for(self.source_key, mapping, self.frame)
        return Current(pred, s.analysis_key(self.source, mapping), self.source, mapping,
                       self.frame)

    def compute(self, name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """:func:`compute` keyed on this analysis (the ``compute`` of :mod:`dashboard.runs`)."""
        return compute(name, self.key, fn, *args, **kwargs)


def current() -> Current | None:
    """Return the current analysis, or None when no data is loaded or the mapping fails."""
    source = st.session_state.get(s.SOURCE)
    frame = st.session_state.get(s.FRAME)
    mapping = st.session_state.get(s.MAPPING)
    if source is None or frame is None or mapping is None:
        return None
    try:
        pred = predictions_for(s.source_key(source), mapping, frame)
    except ValidationError:
        return None
    return Current(pred, s.analysis_key(source, mapping), source, mapping, frame)


def require_current() -> Current:
    """Return the current analysis, or point to the Data page and ``st.stop()``.

    With nothing loaded (a page address opened first), the demo is loaded, as the Data page
    does: the demo is what is analysed until a file is dropped.
    """
    if st.session_state.get(s.SOURCE) is None and not st.session_state.get(s.PENDING):
        use_demo(st.session_state.get(s.W_DEMO) or s.DEFAULTS[s.W_DEMO])
    analysis = current()
    if analysis is None:
        st.info("Load a file or a demo on the **Data** page first.")
        st.page_link(page_path("data"), label="Go to Data", icon=":material/upload_file:")
        st.stop()
    _gate_link_subpopulations(analysis)
    void_p_values_notice(analysis.pred)
    reweighted_notice(analysis)
    return analysis


def reweighted_notice(analysis: Current) -> None:
    """Say that the magnitudes come from label-dependent weights, with the unweighted D/σ.

    The sentence of :func:`mcviz.stats.weighting.reweighted_magnitudes`, as ``mcviz metrics``
    says it (the same two D/σ: the cumulative statistics of the weighted and unweighted rows).
    """
    if not analysis.pred.weights_depend_on_label:
        return
    from dataclasses import replace

    from mcviz.stats.weighting import prevalence, reweighted_magnitudes

    unweighted = predictions_for(analysis.source_key,
                                 replace(analysis.mapping, weighting=None, rho=None),
                                 analysis.frame)
    weighted_z = compute("cumulative", analysis.key, cumulative_differences,
                         analysis.pred).kuiper_z
    unweighted_z = compute("cumulative_unweighted", analysis.key, cumulative_differences,
                           unweighted).kuiper_z
    st.warning(reweighted_magnitudes(weighted_z, unweighted_z, prevalence(unweighted)))


def void_p_values_notice(pred: Predictions) -> None:
    """Say on the page that every Brownian and classical p-value is void (Appendix B weights)."""
    if pred.weights_depend_on_label:
        st.warning(f"Every p-value from the Brownian motion or a classical test is "
                   f"{VOID_P_VALUES} (the low-prevalence weighting of Appendix B makes the "
                   "weights depend on the labels); the Subpopulations page's null draws "
                   "recompute the weights for every draw and give valid p-values.")


def _gate_link_subpopulations(analysis: Current) -> None:
    """Check a link's ``sp=1`` against the budget: cheap work starts at once, on any page.

    Generated subpopulations: ℓ clamped to the memory budget; searched: the search's estimate.
    Settings that may start unasked become the computed settings (every page then computes
    them: a link to a finding reopens it); others wait for Compute with the estimate shown.
    """
    state = st.session_state
    if state.pop(LINK_SUBPOP, False):
        params = s.subpopulation_params(state, analysis.pred.covariate_kinds)
        budget = default_budget()
        if params["mode"] == "searched":
            from mcviz.search import search_estimate

            estimate = search_estimate(analysis.pred.n, len(params["covariates"]),
                                       max_conditions=params["max_conditions"])
            auto = (estimate.bytes <= budget.bytes
                    and estimate.seconds <= limits.AUTO_START_SECONDS)
            message = None if auto else (f"This link asks for a {estimate}. Press Compute on "
                                         "the Subpopulations page to start it.")
        else:
            start = limits.link_start(analysis.pred.n, params["n_subpopulations"],
                                      params["repeats"], budget)
            state[s.W_L] = params["n_subpopulations"] = start.subpopulations
            auto, message = start.auto, start.message
        if auto:
            state[s.SUBPOP] = {"key": analysis.key, **params}
        else:
            state[LINK_NOTICE] = message
            state.pop(s.AUTO_NULL, None)
    if state.get(LINK_NOTICE):
        if state.get(s.SUBPOP) is not None:
            state.pop(LINK_NOTICE)
        else:
            st.info(state[LINK_NOTICE])


def require_covariates(analysis: Current) -> dict[str, str]:
    """Return the covariates' kinds, or say that the mapping has none and ``st.stop()``."""
    kinds = dict(analysis.pred.covariate_kinds)
    if not kinds:
        st.warning("The mapping has no covariates: choose some on the Data page.")
        st.stop()
    return kinds


def use_demo(name: str) -> None:
    """Make an embedded demo the current data (a no-op when it already is)."""
    source = {"kind": "demo", "name": name, "digest": None}
    if st.session_state.get(s.SOURCE) != source:
        frame = read_demo(name)
        set_source(source, frame, default_mapping(frame))


def set_source(source: dict[str, Any], frame: pd.DataFrame, mapping: ColumnMapping) -> None:
    """Make ``frame`` the current data; a new source resets the computed subpopulations."""
    previous = st.session_state.get(s.SOURCE)
    if previous is not None and previous != source:
        st.session_state.pop(s.SUBPOP, None)
        st.session_state.pop(RUNS_HELD, None)
        st.session_state[s.W_SELECTED] = 0
    st.session_state[s.SOURCE] = source
    st.session_state[s.FRAME] = frame
    st.session_state[s.MAPPING] = mapping


def adopt_upload(name: str, file_digest: str, frame: pd.DataFrame) -> None:
    """Make an uploaded file current, applying a shared link's mapping when the hash matches."""
    source = {"kind": "upload", "name": name, "digest": file_digest}
    pending = st.session_state.get(s.PENDING) or {}
    if st.session_state.get(s.SOURCE) == source:
        return
    mapping = None
    if pending.get("sha") == file_digest:
        mapping = pending.get("mapping")
        st.session_state.pop(s.PENDING, None)
    set_source(source, frame, mapping or default_mapping(frame))


def apply_pending() -> str | None:
    """Apply a shared link's data source; returns a message when the link needs an upload."""
    pending = st.session_state.get(s.PENDING)
    if not pending:
        return None
    if "demo" in pending:
        frame = read_demo(pending["demo"])
        mapping = pending.get("mapping") or default_mapping(frame)
        set_source({"kind": "demo", "name": pending["demo"], "digest": None}, frame, mapping)
        st.session_state.pop(s.PENDING, None)
        return None
    source = st.session_state.get(s.SOURCE)
    if source is not None and source.get("digest") == pending["sha"]:
        st.session_state.pop(s.PENDING, None)
        return None
    return (
        f"This link refers to an uploaded file (SHA-256 {pending['sha'][:12]}…). Drop the same "
        "file on the Data page to restore the view; files are never stored on the server."
    )


def subpopulation_runs(analysis: Current, *, progress: bool = False) -> tuple[runs.Run, ...]:
    """Return the runs of the settings chosen on the Subpopulations page (empty before Compute).

    Computed once per settings and analysis (every repeat) for every page that shows them.
    With ``progress`` the run shows a progress bar and a Stop button. Settings whose estimate
    exceeds the memory budget are refused with a message (nothing runs).
    """
    settings = st.session_state.get(s.SUBPOP)
    if settings is None or settings.get("key") != analysis.key:
        return ()
    chosen = runs.RunSettings.from_mapping(settings)
    try:
        check(limits.subpopulations_estimate(analysis.pred.n, chosen.n_subpopulations,
                                             chosen.repeats), default_budget())
    except ValidationError as error:
        show_error(error)
        return ()
    run_key = f"subpopulations|{runs.run_id(analysis.key, chosen)}"
    held = st.session_state.get(RUNS_HELD)
    if held is not None and held[0] == run_key:
        return held[1]
    if not progress:
        if run_key in st.session_state.get(STOPPED_RUNS, ()):
            return ()
        result = runs.run_subpopulations(analysis.pred, chosen, compute=analysis.compute)
    else:
        result = run_with_progress(run_key, "Subpopulations", lambda report: (
            runs.run_subpopulations(analysis.pred, chosen, compute=analysis.compute,
                                    progress=report)))
    # the session keeps its own runs (freed with the session): a run larger than the shared
    # cache's byte cap is not recomputed on every page
    st.session_state[RUNS_HELD] = (run_key, result)
    return result


def null_of(analysis: Current, result: Any, run: str, *, seed: int, draws: int) -> Any:
    """Compute (with progress and Stop) or return the null distribution of M for run ``run``.

    Shared by the Subpopulations and Review pages (one cache entry per run and draws); held in
    the session for the Review and Report pages. Low-prevalence weights (Appendix B) depend on
    the labels: each draw recomputes them from the unweighted predictions.
    """
    from dataclasses import replace

    from mcviz.stats.significance import null_distribution

    low_prevalence = analysis.mapping.weighting == "low-prevalence"
    base = analysis.pred
    if low_prevalence:
        base = predictions_for(analysis.source_key,
                               replace(analysis.mapping, weighting=None, rho=None),
                               analysis.frame)
    null = compute_with_progress("null_draws", run, null_distribution, base,
                                 result.subpopulations, label="Null draws", draws=draws,
                                 seed=seed, low_prevalence=low_prevalence)
    runs.hold_null(st.session_state, run, null)
    return null


def null_estimate(analysis: Current, result: Any, draws: int) -> Any:
    """Return the cost of :func:`null_of` (an :class:`mcviz.budget.Estimate`)."""
    from mcviz.stats.significance import null_draws_estimate

    members = sum(sub.size for sub in result.subpopulations)
    return null_draws_estimate(analysis.pred.n, members, draws)


def full_cumulative(analysis: Current) -> Any:
    """Return the full population's cumulative differences (cached)."""
    return analysis.compute("cumulative", cumulative_differences, analysis.pred)
