"""dashboard.janitor: closed sessions' uploads and idle cache entries are freed by the sweep."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dashboard.cache import ByteCache
from dashboard.janitor import sweep


class Uploads:
    """Stand-in for Streamlit's MemoryUploadedFileManager (files per session id)."""

    def __init__(self, sessions):
        self.file_storage = {sid: {"f": b"x" * 10} for sid in sessions}

    def remove_session_files(self, session_id):
        self.file_storage.pop(session_id, None)


def runtime_with(live, uploads):
    sessions = [SimpleNamespace(session=SimpleNamespace(id=sid)) for sid in live]
    manager = SimpleNamespace(list_sessions=lambda: sessions)
    return SimpleNamespace(uploaded_file_mgr=uploads, _session_mgr=manager)


def test_uploads_of_sessions_no_longer_known_are_dropped():
    uploads = Uploads(["a", "b", "c"])
    assert sweep(runtime_with(["b"], uploads)) == 2
    assert list(uploads.file_storage) == ["b"]
    assert sweep(runtime_with(["b"], uploads)) == 0


def test_idle_cache_entries_expire_without_a_session():
    now = [0.0]
    cache = ByteCache(max_bytes=10**6, ttl=10, clock=lambda: now[0], size=lambda v: 1)
    cache.put("k", 1)
    now[0] = 11
    assert sweep(None, cache) == 1
    assert "k" not in cache


def test_another_streamlit_layout_is_left_alone():
    assert sweep(SimpleNamespace()) == 0


def test_frozen_startup_objects_stay_out_and_later_garbage_is_still_collected():
    import subprocess
    import sys
    import textwrap

    # in a child process: freezing is once per server process, never in the test runner's
    code = textwrap.dedent("""
        import gc, weakref
        import dashboard.cache, plotly.graph_objects
        from dashboard.janitor import freeze_startup_objects
        frozen = freeze_startup_objects()
        assert frozen > 10_000, frozen  # the imported libraries' objects
        assert gc.get_freeze_count() == frozen
        assert len(gc.get_objects()) < frozen // 10  # collections no longer walk them
        class Node:
            pass
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle created after the freeze
        alive = weakref.ref(a)
        del a, b
        gc.collect()
        assert alive() is None  # is still collected
        print("ok")
    """)
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_downloads_of_closed_sessions_are_deleted_by_the_next_sweep(monkeypatch):
    # issue #25 item 5: a /media report URL still answered 135 s after its session closed
    from streamlit.runtime import media_file_manager as mfm
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    storage = MemoryMediaFileStorage("/media")
    manager = mfm.MediaFileManager(storage)
    urls = {}
    for sid in ("gone", "live"):
        monkeypatch.setattr(mfm, "_get_session_id", lambda sid=sid: sid)
        urls[sid] = manager.add(f"report of {sid}".encode(), "text/html", f"coord-{sid}",
                                file_name=f"{sid}.html", is_for_static_download=True)
    runtime = runtime_with(["live"], Uploads([]))
    runtime.media_file_mgr = manager

    def served(url: str) -> bool:
        try:
            storage.get_file(url.rsplit("/", 1)[-1].split(".")[0])
        except Exception:  # MediaFileStorageError: the address answers 404
            return False
        return True

    assert served(urls["gone"])
    assert served(urls["live"])
    assert sweep(runtime) == 1
    assert not served(urls["gone"])  # deleted at once, not two script runs later
    assert served(urls["live"])  # a live session's download stays
    assert sweep(runtime) == 0


def test_a_failed_computation_hands_memory_back_and_reads_as_a_message(monkeypatch):
    import pytest

    from dashboard import janitor
    from mcviz.errors import ValidationError

    released = []
    monkeypatch.setattr(janitor, "release_memory", lambda: released.append(1))

    def out_of_memory():
        raise MemoryError("Unable to allocate 7.7 GiB")

    with pytest.raises(ValidationError, match="out of memory: this computation needed more"):
        janitor.guarded(out_of_memory)
    with pytest.raises(KeyError):  # a bug stays a bug
        janitor.guarded(lambda: {}["x"])
    assert janitor.guarded(lambda: 3) == 3
    assert released == [1, 1]


def test_frozen_objects_are_thawed_at_exit_so_duckdb_does_not_report_leaks():
    # gc.freeze() keeps DuckDB's objects alive past its module's teardown unless they are
    # handed back at exit; nanobind then prints "nanobind: leaked N instances" on stderr.
    pytest.importorskip("duckdb")
    done = in_a_child("import duckdb, pandas as pd\n"
                      "from dashboard.janitor import freeze_startup_objects\n"
                      "con = duckdb.connect(); frame = pd.DataFrame({'a': [1, 2]})\n"
                      "con.execute('SELECT * FROM frame').fetchdf()\n"
                      "freeze_startup_objects()\n")
    assert "leaked" not in done.stderr


def in_a_child(code: str):
    """Run ``code`` in a fresh interpreter at the repository's root; its completed process."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])


def test_downloads_of_a_session_the_sweep_shuts_down_are_deleted(monkeypatch):
    # Streamlit's shutdown clears the session's references and only MARKS its downloads; the
    # sweep must make the second pass that deletes them (the /media address stops answering).
    import streamlit.runtime.media_file_manager as mfm
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    monkeypatch.setattr(mfm, "_get_session_id", lambda: "gone")
    media = mfm.MediaFileManager(MemoryMediaFileStorage("/media"))
    media.add(b"report", "text/html", "coord", file_name="r.html", is_for_static_download=True)

    def shutdown():
        media.clear_session_refs("gone")
        media.remove_orphaned_files()

    expired = [("gone", SimpleNamespace(session=SimpleNamespace(shutdown=shutdown)))]
    storage = SimpleNamespace(_cache=SimpleNamespace(expire=lambda: expired))
    manager = SimpleNamespace(list_sessions=lambda: [], _session_storage=storage)
    runtime = SimpleNamespace(uploaded_file_mgr=Uploads([]), _session_mgr=manager,
                              media_file_mgr=media)
    assert len(media._file_metadata) == 1
    sweep(runtime)
    assert not media._file_metadata


def test_a_refused_computation_leaves_nothing_alive_in_its_traceback():
    """What the refused work allocated is freed while its refusal is still being shown: the
    traceback's frames no longer hold it (a refused 0.9 GiB gzip upload kept 1.65 GB)."""
    import weakref

    from dashboard import janitor
    from mcviz.errors import ValidationError

    class Batches:  # stands for the parsed batches of a read that is refused
        pass

    held: list = []

    def read():
        batches = Batches()
        held.append(weakref.ref(batches))
        raise ValidationError("too large to read within the memory budget")

    with pytest.raises(ValidationError) as caught:
        janitor.guarded(read)
    assert held[0]() is None, "the traceback still holds the refused work's data"
    assert "memory budget" in str(caught.value)


def test_the_sweep_hands_memory_back_when_the_process_grew(monkeypatch):
    from dashboard import janitor

    calls: list = []
    monkeypatch.setattr(janitor, "release_memory", lambda: calls.append(1))
    monkeypatch.setattr(janitor, "_rss", lambda: 10 * 2**30)
    monkeypatch.setattr(janitor, "_released_at", [2**30])
    janitor.sweep(None)
    assert calls == [1]
    monkeypatch.setattr(janitor, "_released_at", [10 * 2**30])
    janitor.sweep(None)
    assert calls == [1]  # not grown: nothing to hand back


def test_a_session_the_sweep_ends_lets_go_of_its_state_while_something_still_holds_it():
    """Streamlit's runtime loop keeps the last session it flushed in a loop variable until
    another session connects: what that session's state held (its upload's frame, the widgets'
    callbacks and their page globals) must still be freed once the sweep has ended it."""
    import gc
    import weakref
    from dataclasses import dataclass, field

    class Frame:  # stands for an upload's frame
        pass

    @dataclass
    class State:  # stands for streamlit's SessionState (a dataclass of dicts)
        values: dict = field(default_factory=dict)

    frame = Frame()
    held = weakref.ref(frame)
    session = SimpleNamespace(shutdown=lambda: None, _session_state=State({"frame": frame}))
    session._session_state.values["callback"] = lambda: session  # a cycle through the session
    del frame
    expired = [("gone", SimpleNamespace(session=session))]
    storage = SimpleNamespace(_cache=SimpleNamespace(expire=lambda: expired))
    manager = SimpleNamespace(list_sessions=lambda: [], _session_storage=storage)
    sweep(SimpleNamespace(uploaded_file_mgr=Uploads([]), _session_mgr=manager))
    gc.collect()
    assert held() is None, "the ended session's state still holds its frame"
    assert session._session_state == State()  # the session itself (still held) stays usable


def test_arrow_allocates_with_malloc_once_the_server_asked_for_it():
    """Arrow's default pool becomes the C allocator's (mimalloc's pages stay with the threads
    that allocated them; malloc_trim reaches malloc's). In a child: the pool is per process."""
    done = in_a_child("import pyarrow as pa\n"
                      "from dashboard.janitor import arrow_on_malloc\n"
                      "arrow_on_malloc()\n"
                      "table = pa.table({'a': list(range(100_000))})\n"
                      "print(pa.default_memory_pool().backend_name,\n"
                      "      pa.system_memory_pool().bytes_allocated() >= table.nbytes)\n")
    assert done.stdout.split() == ["system", "True"], done.stdout
