"""A per-process cache bounded in entries, bytes and time (the dashboard's heavy objects).

Streamlit's own caches bound entries (``max_entries``) and time (``ttl``) but not bytes, and a
few cached objects -- an upload's frame, its predictions, the subpopulations of one run -- can
each hold hundreds of megabytes. They live here instead, keyed on the upload's SHA-256 (and the
mapping and parameters), in one least-recently-used cache with

* a byte cap (:data:`DEFAULT_MAX_BYTES`: 1 GiB, or a quarter of ``MCVIZ_MEMORY_BUDGET`` when that
  is lower; an object larger than the cap is returned but never kept),
* an entry cap, and
* a time to live: an entry not used for ``ttl`` seconds is dropped, by the next call or by
  :meth:`ByteCache.expire` (the dashboard calls it from a timer, so memory comes back when no
  one is connected), and
* owners: an entry remembers the sessions that used it, and :meth:`ByteCache.release_owners`
  (called by the same timer with the sessions still known) drops the entries whose every
  session has ended, so an upload's frame and results leave with the last session using them.

Sizes are measured, not guessed: :func:`deep_size` adds up the numpy buffers (each once), the
pandas frames' memory and the Python objects reachable from a value. Plain Python, no Streamlit.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_MAX_BYTES", "ByteCache", "CacheStats", "deep_size", "default_max_bytes"]

DEFAULT_MAX_BYTES = 1 << 30
"""The byte cap when ``MCVIZ_MEMORY_BUDGET`` does not make it lower (1 GiB)."""
DEFAULT_MAX_ENTRIES = 64
DEFAULT_TTL = 30 * 60.0
"""Seconds an entry stays after its last use (30 minutes)."""


def default_max_bytes() -> int:
    """Return 1 GiB, or a quarter of the memory budget (``MCVIZ_MEMORY_BUDGET``) when lower."""
    from mcviz.budget import memory_budget

    return min(DEFAULT_MAX_BYTES, memory_budget() // 4)


def deep_size(value: Any, _seen: set[int] | None = None) -> int:
    """Return the bytes reachable from ``value``: numpy buffers once each, frames, containers.

    Arrays that are views count their base buffer once; frames count
    ``memory_usage(deep=True)`` (the text of object columns included); dataclasses, slots,
    mappings and sequences are walked. Strings and numbers count ``sys.getsizeof``.

    Objects are walked through what they store (``__dict__``, slots), never through properties
    or descriptors: measuring must not compute. A :class:`~mcviz.io.Predictions` keeps its
    covariates pending until a statistic asks for them; they count as the pending columns, the
    size of the score-ordered frame they become (an upload's first chart does not pay for
    putting every covariate in order just to be measured).
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base is not value:
            if id(base) in seen:
                return 0
            seen.add(id(base))
        size = base.nbytes
        if base.dtype == object:
            size += sum(deep_size(v, seen) for v in base.ravel()[:100_000])
        return size
    if isinstance(value, pd.DataFrame | pd.Series | pd.Index):
        usage = value.memory_usage(deep=True)
        return int(usage.sum() if isinstance(usage, pd.Series) else usage)
    if isinstance(value, str | bytes | bytearray | int | float | complex | bool | type(None)):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(deep_size(k, seen) + deep_size(v, seen)
                                          for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return sys.getsizeof(value) + sum(deep_size(v, seen) for v in value)
    size = sys.getsizeof(value)
    attributes = getattr(value, "__dict__", None)
    if is_dataclass(value) and not isinstance(value, type) and not isinstance(attributes, dict):
        return size + sum(deep_size(getattr(value, f.name, None), seen) for f in fields(value))
    for slot in getattr(type(value), "__slots__", ()):
        size += deep_size(getattr(value, slot, None), seen)
    if isinstance(attributes, dict):
        size += deep_size(attributes, seen)
    return size


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What the cache holds now: entries, bytes, and the bounds."""

    entries: int
    bytes: int
    max_entries: int
    max_bytes: int
    ttl: float


class ByteCache:
    """Least-recently-used cache bounded in entries, bytes and idle time; thread-safe.

    Parameters
    ----------
    max_bytes : int, optional
        Byte cap over all entries (default :func:`default_max_bytes`).
    max_entries : int
    ttl : float
        Seconds an entry is kept after its last use.
    clock : callable
        Returns the time in seconds (tests pass a fake clock).
    size : callable
        Measures a value in bytes (default :func:`deep_size`).
    """

    def __init__(self, max_bytes: int | None = None, *, max_entries: int = DEFAULT_MAX_ENTRIES,
                 ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic,
                 size: Callable[[Any], int] = deep_size) -> None:
        self.max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
        self.max_entries = int(max_entries)
        self.ttl = float(ttl)
        self._clock = clock
        self._size = size
        self._entries: OrderedDict[Hashable, tuple[Any, int, float]] = OrderedDict()
        self._owners: dict[Hashable, set[str]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any],
                       owner: str | None = None) -> Any:
        """Return the value under ``key``, computing (outside the lock) and keeping it if new.

        An exception from ``compute`` (a refusal, a cancel) propagates and nothing is kept.
        ``owner`` (a session id) is recorded as a user of the entry.
        """
        found, value = self.lookup(key, owner)
        if found:
            return value
        value = compute()
        self.put(key, value, owner)
        return value

    def lookup(self, key: Hashable, owner: str | None = None) -> tuple[bool, Any]:
        """Return ``(True, value)`` for a kept entry (marking it used), else ``(False, None)``."""
        with self._lock:
            self._expire(self._clock())
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            self._entries.move_to_end(key)
            self._entries[key] = (entry[0], entry[1], self._clock())
            if owner is not None:
                self._owners.setdefault(key, set()).add(owner)
            return True, entry[0]

    def put(self, key: Hashable, value: Any, owner: str | None = None) -> None:
        """Keep ``value`` under ``key`` unless it alone exceeds the byte cap."""
        size = self._size(value)
        with self._lock:
            self._drop(key)
            if size > self.max_bytes:
                return
            self._entries[key] = (value, size, self._clock())
            if owner is not None:
                self._owners[key] = {owner}
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def expire(self) -> int:
        """Drop the entries idle for more than ``ttl`` seconds; returns how many."""
        with self._lock:
            return self._expire(self._clock())

    def release_owners(self, live: set[str] | frozenset[str]) -> int:
        """Drop the entries used only by sessions not in ``live``; returns how many.

        Entries kept without an owner (outside a session) follow the time to live alone.
        """
        with self._lock:
            gone = [key for key, owners in self._owners.items() if not owners & live]
            for key in gone:
                self._drop(key)
            for owners in self._owners.values():
                owners &= live
            return len(gone)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._owners.clear()
            self._bytes = 0

    def stats(self) -> CacheStats:
        """Return the entries and bytes held now, with the bounds."""
        with self._lock:
            return CacheStats(len(self._entries), self._bytes, self.max_entries,
                              self.max_bytes, self.ttl)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def _expire(self, now: float) -> int:
        stale = [k for k, (_, _, used) in self._entries.items() if now - used > self.ttl]
        for key in stale:
            self._drop(key)
        return len(stale)

    def _drop(self, key: Hashable) -> None:
        self._owners.pop(key, None)
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[1]
