"""Memory comes back: a timer that frees what closed sessions and idle cache entries hold.

Streamlit keeps a disconnected session (its session state, its uploaded files) for
``server.disconnectedSessionTTL`` seconds so that a reconnect finds it, but reaps it only lazily
-- when another session connects -- and then without shutting it down, so the files it uploaded
stay in the upload manager for the life of the process (measured: 3.3 GB held with no one
connected after 3 rounds of 3 sessions). :func:`sweep` fixes both from outside: it lists the
sessions (which reaps the expired ones), drops the uploaded files of every session no longer
known, deletes the files they offered for download under ``/media`` (Streamlit would keep a
download until some later script run sweeps it twice: measured 135 s after its session
closed), expires idle entries of the dashboard's :class:`~dashboard.cache.ByteCache`, and asks
the C allocator and Arrow's memory pool to hand freed memory back to the system. A ``/media``
address thus answers while its session lives and for at most ``server.disconnectedSessionTTL``
plus one sweep ``interval`` after its tab closed. :func:`start` runs it every ``interval``
seconds in one daemon thread per process. Expired sessions are also removed from Streamlit's
session storage and shut down (Streamlit only stops listing them until someone connects), and
given an empty session state (Streamlit's runtime loop may still hold the last one).
:func:`arrow_on_malloc` makes the server's Arrow allocate with malloc, which the sweep can trim.

Plain Python: the Streamlit runtime is passed in (duck-typed), so the sweep is unit-tested with
stand-ins.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import threading
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["OUT_OF_MEMORY", "arrow_on_malloc", "freeze_startup_objects", "guarded",
           "release_memory", "start", "sweep"]

OUT_OF_MEMORY = (
    "out of memory: this computation needed more memory than the server could give it (other "
    "sessions share it). Analyse a sample of the rows, fewer covariates or subpopulations, or "
    "ask the server's operator to lower MCVIZ_MEMORY_BUDGET so that such work is refused "
    "before it starts."
)

_started = threading.Event()


def _end_expired_sessions(runtime: Any) -> int:
    """Shut down the disconnected sessions whose TTL ran out; returns how many.

    Streamlit's session storage stops *listing* an expired session but keeps it (and its
    session state: frames, predictions, results) until the storage's next write, that is until
    someone connects; nor does it shut it down. Its storage's ``expire()`` removes them now, and
    ``shutdown()`` drops their uploads and downloads as a closing session's would.
    """
    storage = getattr(runtime._session_mgr, "_session_storage", None)
    expire = getattr(getattr(storage, "_cache", None), "expire", None)
    if not callable(expire):
        return 0
    removed = expire()
    for _, info in removed:
        with contextlib.suppress(Exception):  # a half-closed session: its files go below
            info.session.shutdown()
        _drop_session_state(info.session)
    return len(removed)


def _drop_session_state(session: Any) -> None:
    """Give an ended session an empty session state, so that what it held can be freed.

    Streamlit's runtime loop keeps the last session it sent messages to in a loop variable
    (``Runtime._loop_coroutine``'s ``active_session_info``) until another session connects, and
    with it that session's state: its frame and predictions, and its widgets' callbacks, whose
    page globals hold the upload's frame again. Measured on a server after four 10^6-row
    sessions closed and were reaped (``gc.get_referrers`` with the startup objects unfrozen):
    the last one's 1,000,000 x 4 frame, its predictions and 35 MB in Arrow's pool reachable only
    that way; the RSS stayed at idle + 290 MB with them, idle + 219 MB without.
    """
    state = getattr(session, "_session_state", None)
    if state is None:
        return
    with contextlib.suppress(Exception):  # another Streamlit version: leave it alone
        session._session_state = type(state)()


def _orphaned(runtime: Any, manager: str, held: str) -> list[str]:
    """Session ids that ``runtime.<manager>.<held>`` (a dict by session) keeps for dead sessions."""
    by_session = getattr(getattr(runtime, manager), held, None)
    if not isinstance(by_session, dict):
        return []
    live = {info.session.id for info in runtime._session_mgr.list_sessions()}
    return [sid for sid in list(by_session) if sid not in live]


def _orphaned_upload_sessions(runtime: Any) -> list[str]:
    return _orphaned(runtime, "uploaded_file_mgr", "file_storage")


def _orphaned_media_sessions(runtime: Any) -> list[str]:
    return _orphaned(runtime, "media_file_mgr", "_files_by_session_and_coord")


def _drop_media(runtime: Any, *, ended: int = 0) -> int:
    """Delete the ``/media`` files of sessions no longer known; returns how many sessions.

    ``ended``: sessions just shut down by :func:`_end_expired_sessions`. Their shutdown cleared
    their references and only *marked* their downloads for deletion, so they are no orphans
    here, yet their files still need the second pass that deletes them.
    """
    try:
        orphans = _orphaned_media_sessions(runtime)
    except AttributeError:  # another Streamlit version: leave its internals alone
        return 0
    if not orphans and not ended:
        return 0
    manager = runtime.media_file_mgr
    for session_id in orphans:
        manager.clear_session_refs(session_id)
    # the first pass marks unreferenced downloads for deletion, the second deletes them
    manager.remove_orphaned_files()
    manager.remove_orphaned_files()
    return len(orphans)


def sweep(runtime: Any | None, cache: Any | None = None) -> int:
    """Free closed sessions' uploads and downloads and idle cache entries; returns how many.

    Parameters
    ----------
    runtime : streamlit Runtime or None
        The running server (None: only the cache is swept).
    cache : ByteCache, optional
    """
    freed = cache.expire() if cache is not None else 0
    ended = 0
    if runtime is not None:
        with contextlib.suppress(AttributeError):  # another Streamlit version
            ended = _end_expired_sessions(runtime)
        freed += ended
    if runtime is not None and cache is not None and hasattr(cache, "release_owners"):
        try:
            live = {info.session.id for info in runtime._session_mgr.list_sessions()}
        except AttributeError:  # another Streamlit version: the time to live alone
            live = None
        if live is not None:
            freed += cache.release_owners(live)
    if runtime is not None:
        try:
            orphans = _orphaned_upload_sessions(runtime)
        except AttributeError:  # another Streamlit version: leave its internals alone
            orphans = []
        for session_id in orphans:
            runtime.uploaded_file_mgr.remove_session_files(session_id)
        freed += len(orphans) + _drop_media(runtime, ended=ended)
    if freed or _grown():
        release_memory()
    return freed


_GROWTH = 100 * 2**20
"""The sweep also hands memory back when the process's RSS grew this much since it last did
(freed memory an error path or a finished run left with the allocators)."""
_released_at = [0]


def _rss() -> int:
    from mcviz.engines.memory import resident_bytes

    return resident_bytes()


def _grown() -> bool:
    return _rss() > _released_at[0] + _GROWTH


def release_memory() -> None:
    """Collect garbage; return freed pages to the system (glibc ``malloc_trim``, Arrow's pool).

    Called by the sweep, and after a computation was refused or failed (the dashboard's error
    path): what it allocated before failing goes back at once, not at the next sweep
    (:func:`mcviz.engines.memory.release_memory`).
    """
    from mcviz.engines.memory import release_memory as hand_back

    hand_back()
    _released_at[0] = _rss()


def guarded(compute: Callable[[], Any]) -> Any:
    """Return ``compute()``; hand memory back at once when it is refused or fails.

    A :class:`MemoryError` (numpy's ``_ArrayMemoryError`` included) becomes a
    :class:`~mcviz.errors.ValidationError` with :data:`OUT_OF_MEMORY`, shown like any refusal
    instead of a traceback; other exceptions propagate (a bug stays visible).
    """
    from mcviz.errors import ValidationError

    try:
        return compute()
    except MemoryError as error:
        _drop_locals(error)
        release_memory()
        raise ValidationError(OUT_OF_MEMORY) from None
    except BaseException as error:
        _drop_locals(error)  # else the traceback's frames keep what the work allocated
        release_memory()
        raise


def _drop_locals(error: BaseException) -> None:
    """Clear the local variables of the finished frames of ``error``'s traceback (and chain).

    A refused read held its parsed batches in the reader's frames, which the traceback keeps
    alive while the exception propagates and the page shows it: ``release_memory`` in the
    ``except`` block then freed nothing (measured: 1.65 GB of a 1.82 GB peak still held two
    minutes after a refused 0.9 GiB gzip upload, idle 273 MB). The message and the line
    numbers stay; only the frames' variables go.
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__


def arrow_on_malloc() -> str:
    """Make the C allocator (glibc malloc) Arrow's default memory pool; returns its name.

    Arrow's default pool is mimalloc, which keeps the pages a thread allocated until that
    thread calls into it again: the CSV reader's threads (Arrow's CPU pool) parse an upload and
    then sleep, and :func:`release_memory` (``release_unused``, from the janitor's thread)
    reaches none of it. Measured on a server after four 10^6-row sessions closed and were
    reaped: Arrow's allocations back to 1.7 MB, yet mimalloc's 1 GiB region still resident at
    182 MB (29 MB idle). With malloc, ``malloc_trim`` hands such pages back from every thread's
    arena: the RSS came back to idle + 112 MB instead of idle + 219 MB. Called once per server
    process, before any data are read.
    """
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    return pa.default_memory_pool().backend_name


def freeze_startup_objects() -> int:
    """Leave the objects alive now out of every later garbage collection; returns how many.

    Streamlit runs ``gc.collect(2)`` after every script run, holding the GIL while the browser
    waits for the run's end: it walked the ~165,000 objects that Streamlit, plotly, pandas and
    mcviz create on import (83-90 ms per run on this machine, about 0.15 s under load) though
    they live as long as the process. ``gc.freeze()`` moves them to a permanent generation that
    collections skip. Called once per server process, after the imports and a collection, before
    any data are read; everything created later (sessions, frames, results, figures) is
    collected as before.
    """
    gc.collect()
    gc.freeze()
    atexit.register(_thaw)
    return gc.get_freeze_count()


def _thaw() -> None:
    """At exit, hand the frozen objects back to the collector before native modules close.

    Frozen objects are never collected, so at interpreter exit DuckDB's (nanobind) types and
    functions imported before the freeze were still alive when its module was torn down, and
    it printed "nanobind: leaked N instances" (dozens of lines after the test summary or a
    server's shutdown).
    """
    gc.unfreeze()
    gc.collect()


def start(get_runtime: Callable[[], Any | None], cache: Any | None = None, *,
          interval: float = 15.0) -> bool:
    """Start the sweeping thread once per process; returns False when it already runs."""
    if _started.is_set():
        return False
    _started.set()

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(interval):
            with contextlib.suppress(Exception):  # a sweep must never end the server
                sweep(get_runtime(), cache)

    threading.Thread(target=loop, name="mcviz-janitor", daemon=True).start()
    return True
