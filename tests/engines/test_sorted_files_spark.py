"""Spark's sorted stream on a local master: each sorted range partition through an Arrow file.

``holdout.local_sorted_batches``: each Python worker writes its partition to a file named by the
partition id, the driver reads them in partition order (no sorted partition passes through the
JVM's heap; ``toLocalIterator`` ran a 544 MiB heap out at 10^7 rows). Against DuckDB's and
numpy's sort of the same rows, in many small partitions (``SORTED_PARTITION_ROWS`` 128) with a
tie run of 1,000 rows (longer than a partition: range partitions keep it in one file), and no
file left behind: after the stream, when its consumer stops early, and when a worker raises.
"""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from spark_available import local_spark, skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark

N = 3_000


def _files(tmp_path):
    """Two Parquet files: 2-decimal scores (ties) and 1,000 rows at 0.5 in both scores."""
    rng = np.random.default_rng(21)
    s, sb = rng.random(N).round(2), rng.random(N).round(2)
    tied = rng.choice(N, 1_000, replace=False)
    s[tied], sb[tied] = 0.5, 0.5
    frame = pd.DataFrame({"s": s, "sb": sb, "y": rng.integers(0, 2, N),
                          "region": rng.choice(["r1", "r2", "r3"], N), "i": np.arange(N)})
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    frame.iloc[:1_800].to_parquet(paths[0], index=False)
    frame.iloc[1_800:].to_parquet(paths[1], index=False)
    return frame, [str(p) for p in paths]


@pytest.fixture
def spilled(tmp_path, monkeypatch):
    """The files go under ``tmp_path/spill``; ``toLocalIterator`` must not be called."""
    from mcviz.engines import holdout

    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(holdout, "SORTED_PARTITION_ROWS", 128)
    monkeypatch.setattr(holdout, "spill_root", lambda spark: str(spill))
    with local_spark() as session:
        frames = type(session.range(1))

        def refused(self, prefetchPartitions=False):
            raise AssertionError("a local master's sorted rows went through the JVM's heap")

        monkeypatch.setattr(frames, "toLocalIterator", refused)
        yield session, spill


def _left(spill) -> list[str]:
    return [str(p.relative_to(spill)) for p in spill.rglob("*")]


def test_the_files_give_duckdb_s_and_numpy_s_sorted_rows(tmp_path, spilled):
    from mcviz.engines import holdout, sql
    from mcviz.engines.base import Columns
    from mcviz.engines.duckdb_engine import DuckDBEngine
    from mcviz.engines.spark_engine import SparkEngine

    session, spill = spilled
    frame, paths = _files(tmp_path)
    engine = SparkEngine(paths, Columns("s", "y", None), spark=session)
    engine.n = N  # 24 range partitions of at most 128 rows
    text = f"SELECT s, i, region = 'r1' AS r1 FROM {engine.view}"
    stream = holdout.sorted_batches(engine, sql.Query(sql.SPARK), text, "s", rows=300)
    batches = [next(stream)]
    files = [name for name in _left(spill) if name.endswith(".arrow")]
    batches += list(stream)
    assert len(files) >= 8, files  # many partitions, each a file (the first ones read)
    assert _left(spill) == []
    assert [b["s"].size for b in batches] == [300] * 10
    got = {c: np.concatenate([b[c] for b in batches]) for c in ("s", "i", "r1")}
    np.testing.assert_array_equal(got["s"], np.sort(frame["s"].to_numpy()))
    np.testing.assert_array_equal(np.sort(got["i"]), np.arange(N))  # each row once
    np.testing.assert_array_equal(got["s"], frame["s"].to_numpy()[got["i"]])  # rows kept whole
    np.testing.assert_array_equal(got["r1"], frame["region"].to_numpy()[got["i"]] == "r1")
    duck = DuckDBEngine(paths, Columns("s", "y", None))
    try:
        q = sql.Query(sql.DUCKDB)
        want = list(holdout.sorted_batches(duck, q, f"SELECT s, i FROM {duck.source}", "s",
                                           rows=300))
    finally:
        duck.close()
    np.testing.assert_array_equal(got["s"], np.concatenate([b["s"] for b in want]))


def test_a_tie_run_longer_than_a_partition_is_measured_whole(tmp_path, spilled, monkeypatch):
    """``compare``'s held-out pass over the files, in batches of 100 rows: every sum and each
    group's D/sigma as one pass over all rows in numpy's order of the average score."""
    from mcviz.compare import groups_at_scale
    from mcviz.engines.base import Columns
    from mcviz.engines.spark_engine import SparkEngine
    from mcviz.subpopulations import Condition

    session, spill = spilled
    monkeypatch.setattr(groups_at_scale, "BATCH_ROWS", 100)
    frame, paths = _files(tmp_path)
    engine = SparkEngine(paths, Columns("s", "y", None), spark=session)
    engine.overview()
    conditions = [(), (Condition("region", "==", "r1"),)]
    held = groups_at_scale._stream(engine, "sb", conditions, N)
    assert _left(spill) == []
    order = np.argsort(((frame["s"] + frame["sb"]) / 2.0).to_numpy(), kind="stable")
    rows = frame.iloc[order]
    want = groups_at_scale._HeldOut(N, 2, weighted=False)
    want.add(rows["s"].to_numpy(), rows["sb"].to_numpy(), rows["y"].to_numpy(dtype=float),
             np.ones(N), [np.ones(N, dtype=bool), (rows["region"] == "r1").to_numpy()])
    np.testing.assert_allclose(held.sums, want.sums, rtol=1e-12)
    np.testing.assert_allclose(held.calibration, want.calibration, rtol=1e-12)
    np.testing.assert_allclose(held.z(), want.z(), rtol=1e-9)


def test_no_file_is_left_when_the_consumer_stops_early(tmp_path, spilled):
    from mcviz.engines import holdout, sql
    from mcviz.engines.base import Columns
    from mcviz.engines.spark_engine import SparkEngine

    session, spill = spilled
    _, paths = _files(tmp_path)
    engine = SparkEngine(paths, Columns("s", "y", None), spark=session)
    engine.n = N
    stream = holdout.sorted_batches(engine, sql.Query(sql.SPARK),
                                    f"SELECT s, i FROM {engine.view}", "s", rows=300)
    assert next(stream)["s"].size == 300
    assert any(name.endswith(".arrow") for name in _left(spill))
    stream.close()
    assert _left(spill) == []


def test_no_file_is_left_when_a_worker_raises(tmp_path, spilled, monkeypatch):
    from mcviz.engines import holdout, sql
    from mcviz.engines.base import Columns
    from mcviz.engines.spark_engine import SparkEngine

    session, spill = spilled
    real = holdout.write_partition

    def failing(directory, batches):  # pickled by value: a nested function
        from pyspark import TaskContext

        if TaskContext.get().partitionId() == 5:  # after partitions 0-4 wrote their files
            raise RuntimeError("planted failure")
        yield from real(directory, batches)

    monkeypatch.setattr(holdout, "write_partition", failing)
    _, paths = _files(tmp_path)
    engine = SparkEngine(paths, Columns("s", "y", None), spark=session)
    engine.n = N
    with pytest.raises(Exception, match="planted failure"):
        list(holdout.sorted_batches(engine, sql.Query(sql.SPARK),
                                    f"SELECT s, i FROM {engine.view}", "s", rows=300))
    assert _left(spill) == []


def test_the_files_go_where_the_jvm_spills(tmp_path):
    """``SPARK_LOCAL_DIRS`` of the JVM (its first existing directory), else
    ``spark.local.dir``, else ``TMPDIR``."""
    from mcviz.engines.holdout import spill_root

    def spark(env, conf):
        system = types.SimpleNamespace(getenv=lambda name: env if name == "SPARK_LOCAL_DIRS"
                                       else None)
        jvm = types.SimpleNamespace(java=types.SimpleNamespace(
            lang=types.SimpleNamespace(System=system)))
        context = types.SimpleNamespace(_jvm=jvm, getConf=lambda: types.SimpleNamespace(
            get=lambda key: conf if key == "spark.local.dir" else None))
        return types.SimpleNamespace(sparkContext=context)

    first, second = tmp_path / "a", tmp_path / "b"
    second.mkdir()
    assert spill_root(spark(f"{first},{second}", None)) == str(second)  # a is missing
    first.mkdir()
    assert spill_root(spark(f"{first},{second}", str(tmp_path))) == str(first)
    assert spill_root(spark(None, str(second))) == str(second)
    import tempfile

    assert spill_root(spark(None, None)) == tempfile.gettempdir()
