"""Spark's sorted stream (``holdout.sorted_batches``) in many range partitions, one at a time.

The JVM holds the partition it serves, so the rows are cut into partitions of at most
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
