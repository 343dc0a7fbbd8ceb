"""The dashboard's caches and long work: uploads, predictions and results once per key.

Cache keys are the uploaded bytes' SHA-256, the column mapping and the parameters; frames and
predictions are never hashed (Streamlit's sampled hashing of large frames can return stale
results). Uploads, predictions, results and figures live in one per-process
:class:`~dashboard.cache.ByteCache` bounded in entries (256), bytes (1 GiB, or a quarter of
``MCVIZ_MEMORY_BUDGET`` if lower) and idle time (30 min), swept with closed sessions' uploads by
:mod:`dashboard.janitor`. Long work runs through :func:`compute_with_progress` (a progress bar
and a Stop button).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import janitor
from dashboard import state as s
from dashboard.cache import ByteCache
from dashboard.state import ColumnMapping
from dashboard.text import escape_markdown
from dashboard.widgets import presentation, show_error
from mcviz.budget import Cancelled
from mcviz.errors import ValidationError
from mcviz.io import Predictions, demo_path, load_predictions, read_table
from mcviz.present.figures import cumulative_figure

STOPPED_RUNS = "stopped_runs"  # run keys the user stopped (session state)

CACHE = ByteCache(max_entries=256)
"""Uploads' frames, predictions, results and figures: bounded in entries, bytes and idle time."""


def _runtime() -> Any:
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


if janitor.start(_runtime, CACHE, interval=float(os.environ.get("MCVIZ_SWEEP_SECONDS", "15"))) \
        and _runtime() is not None:  # once per server process: not in a test's process
    janitor.arrow_on_malloc()
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
    above stay usable, and other settings (another ``run_key``) run at once. A run that is
    refused or fails clears its progress bar and Stop button before the error propagates.
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
    finally:  # a refused or failed run clears its bar and Stop too (the page shows why)
        slot.empty()
    return result


def figure(build: Callable, result: Any, cache: str | None, **options: Any) -> Any:
    """Build ``build(result, presentation=..., **options)``, once per ``cache`` key when given.

    Building a plotly figure can take a second (validation of every trace), so figures of
    cached results are cached too; ``cache`` must identify the result (its compute key).
    """
    if cache is None:
        return build(result, presentation=presentation(), **options)
    return compute(f"figure:{cache}", "", build, result, presentation=presentation(), **options)


def cumulative_fig(result: Any, *, title: str | None = None, cache: str | None = None,
                   p_note: str | None = None) -> Any:
    """Return the cumulative calibration plot of a result (via :mod:`mcviz.present.figures`).

    ``p_note`` is said in place of the p-value (rows chosen for being extreme).
    """
    if p_note:
        return figure(cumulative_figure, result, None if cache is None else f"{cache}:{p_note}",
                      title=title, p_note=p_note)
    return figure(cumulative_figure, result, cache, title=title)
