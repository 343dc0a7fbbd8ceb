"""The one thin Streamlit plumbing module of the dashboard.

It holds the cache wrappers (keyed on the uploaded bytes' SHA-256 and the column mapping; frames
and predictions are passed as underscore-prefixed arguments so Streamlit never hashes them -- its
sampled hashing of large frames can return stale results), the page set-up that makes every page
address work on a fresh server, and the widgets the pages share. The link codec, the mapping and
the subpopulation runs are plain Python in :mod:`dashboard.links`, :mod:`dashboard.state` and
:mod:`dashboard.runs`.
"""

from __future__ import annotations

import io
import json
import runpy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import links, runs
from dashboard import state as s
from dashboard.state import DEMOS, NO_SCORE, ColumnMapping, default_mapping, score_candidates
from mcviz.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.figures import cumulative_figure, format_number
from mcviz.io import Predictions, demo_path, load_predictions, read_table

__all__ = ["DEMOS", "NO_SCORE", "ColumnMapping", "compute", "current", "default_mapping",
           "score_candidates", "setup_page"]

APP = Path(__file__).resolve().parents[1] / "app.py"


# --------------------------------------------------------------------------------------------
# Caches


@st.cache_resource(max_entries=4, show_spinner=False)
def _read_upload(file_digest: str, name: str, _raw: bytes) -> pd.DataFrame:
    buffer = io.BytesIO(_raw)
    buffer.name = name
    return read_table(buffer)


def read_upload(name: str, raw: bytes) -> tuple[str, pd.DataFrame]:
    """Read an uploaded file once per content hash; returns ``(digest, frame)``."""
    file_digest = s.digest(raw)
    return file_digest, _read_upload(file_digest, name, raw)


@st.cache_resource(max_entries=2, show_spinner=False)
def read_demo(name: str) -> pd.DataFrame:
    """Return the raw frame of an embedded demo."""
    return read_table(demo_path(name))


@st.cache_resource(max_entries=16, show_spinner=False)
def _predictions(source_key: str, mapping_json: str, _mapping: ColumnMapping,
                 _frame: pd.DataFrame) -> Predictions:
    pred = load_predictions(_frame, **_mapping.load_options())
    if _mapping.weighting:
        from mcviz.weighting import reweight

        pred = reweight(pred, _mapping.weighting, rho=_mapping.rho)
    return pred


def predictions_for(source_key: str, mapping: ColumnMapping, frame: pd.DataFrame) -> Predictions:
    """Build the predictions once per (source, mapping); raises ValidationError."""
    return _predictions(source_key, mapping.to_json(), mapping, frame)


@st.cache_resource(max_entries=256, show_spinner=False)
def _compute(name: str, key: str, params: str, _fn: Callable, _args: tuple, _kwargs: dict):
    return _fn(*_args, **_kwargs)


@st.cache_resource(max_entries=6, show_spinner=False)
def _compute_heavy(name: str, key: str, params: str, _fn: Callable, _args: tuple, _kwargs: dict):
    return _fn(*_args, **_kwargs)


_HEAVY = ("subpopulations", "multicalibration")
"""Results holding one index array per subpopulation: only a few parameter sets are kept."""


def compute(name: str, key: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn(*args, **kwargs)`` once per (name, predictions key, keyword arguments).

    Positional arguments (the predictions, index arrays) are not hashed: ``key`` (or ``name``)
    must identify them. Pass every other choice as a keyword argument: keywords are
    JSON-serialised into the cache key.
    """
    params = json.dumps(kwargs, sort_keys=True, default=str)
    cache = _compute_heavy if name in _HEAVY else _compute
    return cache(name, key, params, fn, args, kwargs)


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
    return analysis


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
    """
    settings = st.session_state.get(s.SUBPOP)
    if settings is None or settings.get("key") != analysis.key:
        return ()
    bar = st.progress(0.0, text="Computing…") if progress else None
    report = None if bar is None else (lambda f, text: bar.progress(f, text=text))
    result = runs.run_subpopulations(analysis.pred, runs.RunSettings.from_mapping(settings),
                                     compute=analysis.compute, progress=report)
    if bar is not None:
        bar.empty()
    return result


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
    """Draw a plotly figure at full container width (the one place pages draw charts)."""
    return st.plotly_chart(
        figure, width="stretch", key=key, on_select=on_select, theme=None,
        config={"displaylogo": False, "toImageButtonOptions": {"format": "svg"}},
    )


def show_table(frame: pd.DataFrame, **options: Any) -> Any:
    """Draw a table: an interactive grid, or a large static table in presentation mode.

    Numbers are written by :func:`mcviz.figures.format_number` (the one number formatter).
    """
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            kind = "p" if str(column) in ("p", "p-value") else None
            shown[column] = [format_number(v, kind=kind) for v in shown[column]]
    if presentation() and not options.get("on_select"):
        return st.table(shown.set_index(shown.columns[0]) if len(shown.columns) else shown)
    options.setdefault("hide_index", True)
    return st.dataframe(shown, **options)


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
    """Return the cumulative calibration plot of a result (via :mod:`mcviz.figures`)."""
    return figure(cumulative_figure, result, cache, title=title)


def full_cumulative(analysis: Current) -> Any:
    """Return the full population's cumulative differences (cached)."""
    return analysis.compute("cumulative", cumulative_differences, analysis.pred)
