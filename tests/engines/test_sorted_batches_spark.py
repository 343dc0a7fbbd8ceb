"""Spark's sorted stream (``holdout.sorted_batches``) in many range partitions, one at a time.

On a cluster master (here: the local session taken for one, ``holdout.local_master`` patched;
a local master's path, through files, is tests/engines/test_sorted_files_spark.py)
the JVM holds the partition it serves, so the rows are cut into partitions of at most
``SORTED_PARTITION_ROWS`` (a heap of 512 MiB stopped on four partitions of 2.5*10^6 rows, one
prefetched, in ``mcviz compare --engine spark`` of 10^7 rows). Here 2,000 rows in partitions of
128: every row comes back once, in the order of the sort key (against numpy's sort).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from spark_available import local_spark, skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark


def test_the_stream_is_sorted_across_many_partitions(tmp_path, monkeypatch):
    from mcviz.engines import holdout, sql
    from mcviz.engines.base import Columns
    from mcviz.engines.spark_engine import SparkEngine

    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"s": rng.random(2_000).round(3), "y": rng.integers(0, 2, 2_000),
                          "i": np.arange(2_000)})
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    monkeypatch.setattr(holdout, "SORTED_PARTITION_ROWS", 128)
    monkeypatch.setattr(holdout, "local_master", lambda spark: False)  # a cluster's path
    served = []
    with local_spark() as session:
        frames = type(session.range(1))  # pyspark's classic DataFrame
        iterate = frames.toLocalIterator

        def spy(self, prefetchPartitions=False):
            served.append((self.rdd.getNumPartitions(), prefetchPartitions))
            return iterate(self, prefetchPartitions=prefetchPartitions)

        monkeypatch.setattr(frames, "toLocalIterator", spy)
        engine = SparkEngine(path, Columns("s", "y", None), spark=session)
        engine.n = 2_000  # 16 partitions
        q = sql.Query(sql.SPARK)
        batches = list(holdout.sorted_batches(engine, q, f"SELECT s, i FROM {engine.view}",
                                              "s", rows=300))
    got_s = np.concatenate([b["s"] for b in batches])
    got_i = np.concatenate([b["i"] for b in batches])
    assert served == [(16, False)]  # 2,000 rows / 128, no partition prefetched
    assert [b["s"].size for b in batches] == [300] * 6 + [200]
    np.testing.assert_array_equal(got_s, np.sort(frame["s"].to_numpy()))
    np.testing.assert_array_equal(np.sort(got_i), np.arange(2_000))  # each row once
    np.testing.assert_array_equal(got_s, frame["s"].to_numpy()[got_i])  # rows kept whole


def test_the_held_out_stream_is_cut_by_the_rows_held_out(tmp_path, monkeypatch):
    """``mcviz compare --engine spark``'s held-out pass: its rows are counted after the searched
    rows are taken out (``exclude_rows`` leaves ``engine.n`` at 0), and the stream is cut by
    that count, not into the floor's four partitions (four of 2.4*10^6 rows at 10^7 ran the
    JVM out of heap serialising one as a task result). Every held-out row once: the sums
    against numpy's over the rows not searched."""
    from mcviz.compare import groups_at_scale
    from mcviz.engines import holdout
    from mcviz.engines.base import Columns
    from mcviz.engines.holdout import exclude_rows
    from mcviz.engines.spark_engine import SparkEngine

    rng = np.random.default_rng(12)
    frame = pd.DataFrame({"s": rng.random(2_000).round(3), "sb": rng.random(2_000).round(3),
                          "y": rng.integers(0, 2, 2_000)})
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    monkeypatch.setattr(holdout, "SORTED_PARTITION_ROWS", 128)
    monkeypatch.setattr(holdout, "local_master", lambda spark: False)  # a cluster's path
    served = []
    with local_spark() as session:
        frames = type(session.range(1))
        iterate = frames.toLocalIterator

        def spy(self, prefetchPartitions=False):
            served.append(self.rdd.getNumPartitions())
            return iterate(self, prefetchPartitions=prefetchPartitions)

        monkeypatch.setattr(frames, "toLocalIterator", spy)
        engine = SparkEngine(path, Columns("s", "y", None), spark=session)
        engine.overview()
        exclude_rows(engine, np.column_stack((np.zeros(500, dtype=np.int64), np.arange(500))),
                     columns=["sb"])
        held = groups_at_scale._stream(engine, "sb", [()], 1_500)
    assert served == [12]  # ceil(1,500 / 128)
    rest = frame.iloc[500:]
    v = (rest["y"] - rest["s"]).to_numpy()
    np.testing.assert_allclose(held.calibration[0, 0], [1_500, 1_500, v.sum(), v @ v, v.sum(),
                                                        1_500], rtol=1e-12)
    assert held.sums[0, 0] == 1_500


@pytest.mark.parametrize("how", ["exclude", "flag"])
def test_the_searched_rows_leave_across_files(tmp_path, how):
    """The rows the search looked at are taken out (``exclude_rows``) or flagged
    (``flag_searched``) by their (file, row) keys: the rows kept are the rows not searched,
    across two files."""
    from mcviz.engines.base import Columns
    from mcviz.engines.holdout import HELD, exclude_rows, flag_searched
    from mcviz.engines.spark_engine import SparkEngine

    rng = np.random.default_rng(5)
    paths = []
    for k in range(2):
        frame = pd.DataFrame({"s": rng.random(1_000), "y": rng.integers(0, 2, 1_000),
                              "id": np.arange(1_000) + 1_000 * k})
        paths.append(tmp_path / f"part{k}.parquet")
        frame.to_parquet(paths[-1], index=False)
    searched = np.array([[0, 3], [0, 999], [1, 0], [1, 500]], dtype=np.int64)
    with local_spark() as session:
        engine = SparkEngine([str(p) for p in paths], Columns("s", "y", None), spark=session)
        engine.overview()
        (exclude_rows if how == "exclude" else flag_searched)(engine, searched,
                                                                columns=["id"])
        rows = session.table(engine.source).toPandas()
    taken = {3, 999, 1_000, 1_500}
    if how == "flag":
        assert sorted(rows.loc[~rows[HELD], "id"]) == sorted(taken)
        rows = rows[rows[HELD]]
    assert sorted(rows["id"]) == sorted(set(range(2_000)) - taken)
