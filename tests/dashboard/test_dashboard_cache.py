"""The dashboard's byte-bounded cache (dashboard.cache): entries, bytes and idle time bounded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.cache import ByteCache, deep_size


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_deep_size_counts_buffers_once_and_frames_deeply():
    a = np.zeros(1_000_000)  # 8,000,000 bytes
    assert 8_000_000 <= deep_size(a) < 8_000_200
    # a view and its base: the buffer once
    assert 8_000_000 <= deep_size((a, a[10:], a.reshape(1000, 1000))) < 8_001_000
    frame = pd.DataFrame({"x": np.arange(10_000, dtype=np.int64), "t": ["ab"] * 10_000})
    # 80,000 bytes of int64, and the text column's values and offsets on top
    assert deep_size(frame) == frame.memory_usage(deep=True).sum() > 80_000 + 10_000 * 2


def test_deep_size_walks_dataclasses_and_slots():
    from mcviz.io import Predictions

    rng = np.random.default_rng(0)
    pred = Predictions.from_arrays(rng.random(100_000), rng.integers(0, 2, 100_000))
    # score, label, weight (float64), row (int64) at least: 4 x 800,000 bytes
    assert deep_size(pred) >= 3_200_000


def test_deep_size_measures_without_computing_pending_covariates():
    from mcviz.io import load_predictions
    from mcviz.io.covariates import PendingCovariates

    rng = np.random.default_rng(1)
    n = 50_000
    frame = pd.DataFrame({"score": rng.random(n), "label": rng.integers(0, 2, n),
                          "x": rng.normal(size=n), "g": rng.choice(["a", "b"], n)})
    pred = load_predictions(frame, score="score", label="label", covariates=["x", "g"])
    assert isinstance(pred.__dict__["_covariates"], PendingCovariates)
    size = deep_size(pred)
    # measuring did not put the covariates in score order ...
    assert isinstance(pred.__dict__["_covariates"], PendingCovariates)
    # ... yet counts them: 4 arrays of n 8-byte values, x's n floats, g's n codes at least
    assert size >= 5 * 8 * n + n
    ordered = deep_size(pred.covariates)
    assert size >= 4 * 8 * n + ordered * 0.9


def test_byte_cap_evicts_the_least_recently_used():
    cache = ByteCache(max_bytes=250, max_entries=100, size=lambda v: v)
    for key in "abc":
        cache.put(key, 100)  # a, b, then c pushes a out (300 > 250)
    assert [k in cache for k in "abc"] == [False, True, True]
    assert cache.get_or_compute("b", lambda: pytest.fail("b is cached")) == 100  # b used last
    cache.put("d", 100)
    assert [k in cache for k in "bcd"] == [True, False, True]
    assert cache.stats().bytes == 200


def test_an_object_over_the_cap_is_returned_but_not_kept():
    cache = ByteCache(max_bytes=100, size=lambda v: v)
    assert cache.get_or_compute("big", lambda: 500) == 500
    assert "big" not in cache
    assert cache.stats().bytes == 0


def test_entry_cap():
    cache = ByteCache(max_bytes=10**9, max_entries=3, size=lambda v: 1)
    for i in range(5):
        cache.put(i, i)
    assert [i in cache for i in range(5)] == [False, False, True, True, True]


def test_idle_entries_expire_by_time():
    clock = Clock()
    cache = ByteCache(max_bytes=10**9, ttl=60, clock=clock, size=lambda v: 10)
    cache.put("old", 1)
    clock.now = 50
    cache.put("new", 2)
    clock.now = 61  # old idle 61 s, new 11 s
    assert cache.expire() == 1
    assert ["old" in cache, "new" in cache] == [False, True]
    clock.now = 200
    assert cache.get_or_compute("new", lambda: 3) == 3  # expired on access, recomputed
    assert cache.stats().bytes == 10


def test_a_failed_computation_keeps_nothing():
    cache = ByteCache(max_bytes=10**9, size=lambda v: 1)

    def refuse():
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        cache.get_or_compute("k", refuse)
    assert "k" not in cache


def test_entries_leave_with_the_last_session_that_used_them():
    cache = ByteCache(max_bytes=10**6, ttl=3600, size=lambda v: 1)
    cache.put("upload-a", 1, owner="s1")
    cache.get_or_compute("upload-a", lambda: 2, owner="s2")  # a second session uses it
    cache.put("demo", 3)  # kept outside a session: time to live alone
    assert cache.release_owners({"s2", "s3"}) == 0  # s2 still uses it
    assert cache.release_owners({"s3"}) == 1
    assert "upload-a" not in cache
    assert "demo" in cache
    assert cache.stats().bytes == 1
