"""The one thin Streamlit plumbing module of the dashboard.

It holds the cache wrappers (keyed on the uploaded bytes' SHA-256, the column mapping and the
parameters; frames and predictions are never hashed -- Streamlit's sampled hashing of large frames
can return stale results), the page set-up that makes every page address work on a fresh server,
and the widgets the pages share.

Served to others: uploads, predictions and results live in one per-process
:class:`~dashboard.cache.ByteCache` bounded in entries (256), bytes (1 GiB, or a quarter of
``MCVIZ_MEMORY_BUDGET`` if lower) and idle time (30 min), swept with closed sessions' uploads by
:mod:`dashboard.janitor`; data-derived text goes through :func:`show_error` and the other
wrappers (escaped Markdown) and every chart through :func:`show_figure` (escaped plotly text);
long work runs through :func:`compute_with_progress` (a progress bar and a Stop button); a link
never starts work above the budget (:mod:`dashboard.limits`). The link codec, the mapping and
the subpopulation runs are plain Python in :mod:`dashboard.links`, :mod:`dashboard.state` and
:mod:`dashboard.runs`.
"""

from __future__ import annotations

import io
import json
import os
import runpy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import janitor, limits, links, runs, tables
from dashboard import state as s
from dashboard.cache import ByteCache
from dashboard.state import DEMOS, NO_SCORE, ColumnMapping, default_mapping, score_candidates
from dashboard.text import escape_markdown, file_name_of
from mcviz.budget import Cancelled, check, default_budget
from mcviz.stats.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.present.figures import cumulative_figure, escape_figure, format_number
from mcviz.io import VOID_P_VALUES, Predictions, demo_path, load_predictions, read_table

__all__ = ["DEMOS", "NO_SCORE", "ColumnMapping", "caption", "compute", "compute_with_progress",
           "csv_download",
           "current", "default_mapping", "run_with_progress", "score_candidates", "setup_page",
           "show_error", "show_info", "show_success", "show_text", "show_warning"]

APP = Path(__file__).resolve().parents[1] / "app.py"
STOPPED_RUNS = "stopped_runs"  # run keys the user stopped (session state)
LINK_SUBPOP = "link_subpop_pending"  # a link's sp=1, not yet checked against the budget
LINK_NOTICE = "link_subpop_notice"  # why a link's computation waits for a click
RUNS_HELD = "subpop_runs_held"  # (run key, runs) of this session's subpopulations


# --------------------------------------------------------------------------------------------
# Caches


CACHE = ByteCache(max_entries=256)
"""Uploads' frames, predictions, results and figures: bounded in entries, bytes and idle time."""


def _runtime() -> Any:
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


if janitor.start(_runtime, CACHE, interval=float(os.environ.get("MCVIZ_SWEEP_SECONDS", "15"))) \
        and _runtime() is not None:  # once per server process: not in a test's process
    janitor.freeze_startup_objects()


def _session() -> str | None:
    """Return the id of the session running this script (None outside a Streamlit run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def _read(name: str, raw: bytes) -> pd.DataFrame:
    buffer = io.BytesIO(raw)
    buffer.name = name
    return read_table(buffer)  # refuses input over the loader's budget before materialising


def read_upload(name: str, raw: bytes) -> tuple[str, pd.DataFrame]:
    """Read an uploaded file once per content hash; returns ``(digest, frame)``."""
    file_digest = s.digest(raw)
    return file_digest, CACHE.get_or_compute(
        ("upload", file_digest), lambda: janitor.guarded(lambda: _read(name, raw)), _session())


@st.cache_resource(max_entries=2, ttl=3600, show_spinner=False)
def _demo_frame(name: str) -> pd.DataFrame:
    return read_table(demo_path(name))


def read_demo(name: str) -> pd.DataFrame:
    """Return the raw frame of an embedded demo, or say why it cannot be read and stop.

    A memory budget set below the demo's size (``MCVIZ_MEMORY_BUDGET=10MB``) refuses the read
    like any other: the message, not an exception element.
    """
    try:
        return _demo_frame(name)
    except ValidationError as error:
        show_error(f"The demo '{name}' cannot be loaded: {error}")
        st.stop()
        raise  # unreachable: st.stop() raises


def _predictions(mapping: ColumnMapping, frame: pd.DataFrame) -> Predictions:
    pred = load_predictions(frame, **mapping.load_options())
    if mapping.weighting:
        from mcviz.stats.weighting import reweight

        pred = reweight(pred, mapping.weighting, rho=mapping.rho)
    return pred


def predictions_for(source_key: str, mapping: ColumnMapping, frame: pd.DataFrame) -> Predictions:
    """Build the predictions once per (source, mapping); raises ValidationError."""
    return CACHE.get_or_compute(("predictions", source_key, mapping.to_json()),
                                lambda: janitor.guarded(lambda: _predictions(mapping, frame)),
                                _session())


def _params(kwargs: Mapping[str, Any]) -> str:
    return json.dumps(kwargs, sort_keys=True, default=str)


def compute(name: str, key: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn(*args, **kwargs)`` once per (name, predictions key, keyword arguments).

    Positional arguments (the predictions, index arrays) are not hashed: ``key`` (or ``name``)
    must identify them. Pass every other choice as a keyword argument: keywords are
    JSON-serialised into the cache key.
    """
    return CACHE.get_or_compute(("compute", name, key, _params(kwargs)),
                                lambda: janitor.guarded(lambda: fn(*args, **kwargs)), _session())


def compute_with_progress(name: str, key: str, fn: Callable, *args: Any, label: str,
                          **kwargs: Any) -> Any:
    """:func:`compute` of a long computation: a progress bar and a Stop button while it runs.

    ``fn`` must accept ``progress=`` (``progress(fraction, text)``, the library's convention);
    the callback is not part of the cache key. A cached result returns at once. See
    :func:`run_with_progress` for what Stop does.
    """
    cache_key = ("compute", name, key, _params(kwargs))
    found, value = CACHE.lookup(cache_key, _session())
    if found:
        return value
    return run_with_progress(
        f"{name}|{key}|{cache_key[3]}", label,
        lambda report: CACHE.get_or_compute(
            cache_key, lambda: janitor.guarded(lambda: fn(*args, progress=report, **kwargs)),
            _session()),
    )


def run_with_progress(run_key: str, label: str, work: Callable[[Callable], Any]) -> Any:
    """Run ``work(progress)`` under a progress bar with a Stop button; returns its result.

    Stop (or :class:`mcviz.budget.Cancelled` from the work) ends the run at its next progress
    report -- Streamlit reruns the page and nothing is cached -- and the page then shows
    "Stopped" with a "Run again" button and stops there (``st.stop()``): the widgets drawn
    above stay usable, and other settings (another ``run_key``) run at once.
    """
    stopped = st.session_state.setdefault(STOPPED_RUNS, set())
    if run_key in stopped:
        st.info(f"Stopped: {escape_markdown(label)}. Change the settings, or run it again.")
        st.button("Run again", key=f"again|{run_key}", on_click=stopped.discard,
                  args=(run_key,))
        st.stop()
    slot = st.empty()
    with slot.container():
        bar = st.progress(0.0, text=f"{escape_markdown(label)}…")
        st.button("Stop", key=f"stop|{run_key}", on_click=stopped.add, args=(run_key,),
                  icon=":material/stop_circle:")

    def report(fraction: float, text: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0),
                     text=escape_markdown(f"{label}: {text}"))

    try:
        result = work(report)
    except Cancelled:
        stopped.add(run_key)
        slot.empty()
        st.rerun()
    slot.empty()
    return result


# --------------------------------------------------------------------------------------------
# The current analysis


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

    from mcviz.stats.cumulative import cumulative_differences
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


# --------------------------------------------------------------------------------------------
# Session, page set-up and links


def init_session() -> None:
    """Restore a shared link once per session and keep widget values across pages."""
    state = st.session_state
    if not state.get(s.RESTORED):
        state[s.RESTORED] = True
        params = {k: st.query_params.get(k) for k in st.query_params}
        decoded = links.decode_params(params)
        for key, value in decoded.restored.items():
            state[key] = value
        if state.pop(s.AUTO_SUBPOP, False):  # checked against the budget once data is loaded
            state[LINK_SUBPOP] = True
        state[s.LINK_MESSAGES] = decoded.messages
        if decoded.page:
            state["requested_page"] = decoded.page
    for key in s.WIDGET_KEYS:
        if key in state:
            state[key] = state[key]  # interrupt the widget clean-up between pages
        elif key in s.DEFAULTS:
            state[key] = s.DEFAULTS[key]


def setup_page(url_path: str, title: str) -> None:
    """Start a page script: the shared set-up, then the page's header.

    Streamlit runs ``pages/<x>.py`` on its own -- skipping ``app.py`` -- when a session opens
    ``/<x>`` before any session on the server ran ``app.py`` (and AppTest's ``switch_page`` does
    the same). Then this runs ``app.py`` itself, which draws the navigation and the sidebar and
    runs this page through them, and stops: every page address shows the whole app.
    """
    if not st.session_state.get(s.APP_RAN):
        st.session_state[s.RUN_IN_PLACE] = url_path
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
    st.session_state[s.PAGE] = url_path
    sync_query_params(url_path)
    st.header(title)


def page_path(name: str) -> str:
    """Absolute path of ``pages/<name>.py`` (for st.page_link / st.switch_page from any script)."""
    return str(APP.parent / "pages" / f"{name}.py")


def sync_query_params(page: str) -> None:
    """Write the current view into the URL (the shareable link)."""
    wanted = links.encode_state(st.session_state, page)
    existing = {k: st.query_params.get(k) for k in st.query_params}
    if existing != wanted:
        st.query_params.from_dict(wanted)


def sync() -> None:
    """Write the current view into the URL (call after a page changed the state)."""
    sync_query_params(st.session_state.get(s.PAGE, "data"))


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


def selectbox_state(key: str, options: Sequence[Any], default: Any) -> None:
    """Make ``st.session_state[key]`` one of ``options`` before its selectbox is drawn."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else (
            options[0] if options else None
        )


def presentation() -> bool:
    """Return True in presentation mode (larger fonts and lines, one chart per row)."""
    return bool(st.session_state.get(s.W_PRESENTATION, False))


def bin_counts() -> tuple[int, ...]:
    """Return the (up to three) reliability-diagram bin counts chosen in the sidebar."""
    return s.parse_bin_counts(st.session_state.get(s.W_BINS, s.DEFAULTS[s.W_BINS]))


# --------------------------------------------------------------------------------------------
# Shared widgets


def chart_slots(count: int) -> list:
    """``count`` side-by-side columns, or stacked containers in presentation mode."""
    if presentation() or count == 1:
        return [st.container() for _ in range(count)]
    return list(st.columns(count))


def show_figure(figure: Any, *, key: str | None = None, on_select: str = "ignore") -> Any:
    """Draw a plotly figure at full container width (the one place pages draw charts).

    Every data-derived string in it is escaped first (:func:`mcviz.present.figures.escape_figure`).
    """
    return st.plotly_chart(
        escape_figure(figure), width="stretch", key=key, on_select=on_select, theme=None,
        config={"displaylogo": False, "toImageButtonOptions": {"format": "svg"}},
    )


def csv_download(label: str, frame: pd.DataFrame, file_name: str, *,
                 key: str | None = None) -> Any:
    """Draw a button downloading ``frame`` as CSV, cells neutralised (``safe_csv``).

    The CSV is written when the button is clicked, not on every rerun of the page (writing the
    1,000 rows of a subpopulation table took longer than drawing the page's charts).
    """
    from functools import partial

    from mcviz.present.report import safe_csv

    return st.download_button(label, partial(safe_csv, frame), file_name=file_name_of(file_name),
                              mime="text/csv", key=key)


def show_table(frame: pd.DataFrame, *, percent: tuple[str, ...] = (), **options: Any) -> Any:
    """Draw a table: an interactive grid, or a large static table in presentation mode.

    Numbers are written by :func:`mcviz.present.figures.format_number` (the one number formatter;
    :func:`dashboard.tables.formatted`) and every column is as wide as its longest text
    (:func:`dashboard.tables.content_widths`): no cell is cut.
    """
    # ``percent``: fractions shown as %; text through display_text (bidi, line separators)
    shown = tables.displayed(tables.formatted(frame, percent=percent))
    if presentation() and not options.get("on_select"):  # st.table renders Markdown: escape
        shown = shown.rename(columns=escape_markdown)
        for column in shown.columns:
            if not pd.api.types.is_numeric_dtype(shown[column]):
                shown[column] = [escape_markdown(v) for v in shown[column]]
        return st.table(shown.set_index(shown.columns[0]) if len(shown.columns) else shown)
    options.setdefault("hide_index", True)
    config = {name: st.column_config.Column(width=width)
              for name, width in tables.content_widths(shown).items()}
    config.update(options.pop("column_config", None) or {})
    return st.dataframe(shown, column_config=config, **options)


def cumulative_metrics(result: Any, *, per_row: int = 5) -> None:
    """Show the five headline numbers of a cumulative result: D, G, σ, D/σ and p.

    ``per_row`` below 5 wraps them onto rows (half-width columns would cut the numbers).
    """
    items = [
        ("Kuiper D", result.kuiper, None, "range of the cumulative differences (eq. 2)"),
        ("KS G", result.ks, None, "largest absolute cumulative difference"),
        ("σ", result.sigma, None, "standard deviation under perfect calibration (eq. 5)"),
        ("D/σ", result.kuiper_z, None, "Kuiper statistic in units of σ"),
        ("p-value", result.p_value, "p", "asymptotic p-value of D/σ (range of Brownian motion)"),
    ]
    for start in range(0, len(items), per_row):
        row = items[start : start + per_row]
        for cell, (name, value, kind, help_text) in zip(st.columns(per_row), row, strict=False):
            if kind == "p" and value != value:  # NaN: weights that depend on the labels
                cell.metric(name, "not valid", help=VOID_P_VALUES)
            else:
                cell.metric(name, format_number(value, kind=kind), help=help_text)


def figure(build: Callable, result: Any, cache: str | None, **options: Any) -> Any:
    """Build ``build(result, presentation=..., **options)``, once per ``cache`` key when given.

    Building a plotly figure can take a second (validation of every trace), so figures of
    cached results are cached too; ``cache`` must identify the result (its compute key).
    """
    if cache is None:
        return build(result, presentation=presentation(), **options)
    return compute(f"figure:{cache}", "", build, result, presentation=presentation(), **options)


def cumulative_fig(result: Any, *, title: str | None = None, cache: str | None = None) -> Any:
    """Return the cumulative calibration plot of a result (via :mod:`mcviz.present.figures`)."""
    return figure(cumulative_figure, result, cache, title=title)


def full_cumulative(analysis: Current) -> Any:
    """Return the full population's cumulative differences (cached)."""
    return analysis.compute("cumulative", cumulative_differences, analysis.pred)


# --------------------------------------------------------------------------------------------
# Data-derived text: shown literally (escaped Markdown), never rendered as Markdown


def show_error(message: object) -> Any:
    """``st.error`` of a message or exception, escaped (column names, values, file names)."""
    return st.error(escape_markdown(message))


def show_warning(message: object) -> Any:
    """``st.warning`` of data-derived text, escaped."""
    return st.warning(escape_markdown(message))


def show_info(message: object) -> Any:
    """``st.info`` of data-derived text, escaped."""
    return st.info(escape_markdown(message))


def show_success(message: object) -> Any:
    """``st.success`` of data-derived text, escaped."""
    return st.success(escape_markdown(message))


def caption(message: object) -> Any:
    """``st.caption`` of data-derived text, escaped."""
    return st.caption(escape_markdown(message))


def show_text(message: object) -> Any:
    """``st.markdown`` of data-derived text, escaped (shown exactly as written)."""
    return st.markdown(escape_markdown(message))
