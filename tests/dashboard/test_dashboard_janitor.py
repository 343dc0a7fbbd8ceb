"""dashboard.janitor: closed sessions' uploads and idle cache entries are freed by the sweep."""

from __future__ import annotations

from types import SimpleNamespace

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
