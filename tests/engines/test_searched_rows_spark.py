"""Spark's searched rows taken out without a join (``holdout.exclude_rows``, ``flag_searched``).

Each Python worker tests its rows' (file, row) codes against the sorted searched codes by binary
search (a sort-merge anti-join ran a 550 MiB heap out at 10^7 rows; a broadcast hash join hung).
Here three files of several row groups, read in many small splits and Arrow batches of 64 rows,
with 30% of the rows searched (and keys repeated, and keys past a file's end): the rows kept,
and their sums, against numpy's over the same rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_available import local_spark, skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark

SIZES = (700, 1_000, 300)


def _files(tmp_path):
    rng = np.random.default_rng(21)
    frames, paths = [], []
    for k, size in enumerate(SIZES):
        frame = pd.DataFrame({"s": rng.random(size), "y": rng.integers(0, 2, size).astype(float),
                              "file": np.full(size, k), "row": np.arange(size)})
        paths.append(str(tmp_path / f"part{k}.parquet"))
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), paths[-1],
                       row_group_size=97)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), paths


def _searched(frame):
    rng = np.random.default_rng(22)
    chosen = frame.sample(frac=0.3, random_state=23)[["file", "row"]].to_numpy(dtype=np.int64)
    repeated = chosen[rng.integers(0, len(chosen), 50)]
    past_end = np.array([[0, 700], [1, 5_000], [2, 300]], dtype=np.int64)  # no such rows
    first_last = np.array([[0, 0], [2, 299]], dtype=np.int64)
    keys = np.vstack((chosen, repeated, past_end, first_last))
    return keys[rng.permutation(len(keys))]


@pytest.mark.parametrize("how", ["exclude", "flag"])
def test_the_rows_kept_are_numpy_s_rows_not_searched(tmp_path, how):
    from mcviz.engines.base import Columns
    from mcviz.engines.holdout import HELD, exclude_rows, flag_searched
    from mcviz.engines.spark_engine import SparkEngine

    frame, paths = _files(tmp_path)
    keys = _searched(frame)
    searched = np.zeros(len(frame), dtype=bool)  # numpy: the rows whose (file, row) is a key
    offsets = np.cumsum((0, *SIZES))
    inside = keys[:, 1] < np.array(SIZES)[keys[:, 0]]
    searched[offsets[keys[inside, 0]] + keys[inside, 1]] = True
    with local_spark() as session:
        session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
        session.conf.set("spark.sql.files.maxPartitionBytes", "4096")  # a file in many splits
        engine = SparkEngine(paths, Columns("s", "y", None), spark=session)
        engine.overview()
        (exclude_rows if how == "exclude" else flag_searched)(engine, keys,
                                                                columns=["file", "row"])
        plan = session.table(engine.source)._jdf.queryExecution().executedPlan().toString()
        rows = session.table(engine.source).toPandas()
        sums = session.sql(f"SELECT COUNT(*) AS n, SUM(y - s) AS d FROM {engine.source}"
                           + (f" WHERE {HELD}" if how == "flag" else "")).toPandas()
    assert "Join" not in plan
    if how == "flag":
        got = rows.sort_values(["file", "row"])[HELD].to_numpy()
        np.testing.assert_array_equal(got, ~searched)
        rows = rows[rows[HELD]]
    kept = frame[~searched]
    assert sorted(zip(rows["file"], rows["row"], strict=True)) == sorted(
        zip(kept["file"], kept["row"], strict=True))
    pd.testing.assert_frame_equal(
        rows.sort_values(["file", "row"])[["s", "y"]].reset_index(drop=True),
        kept[["s", "y"]].reset_index(drop=True))
    assert int(sums["n"][0]) == len(kept) == len(frame) - int(searched.sum())
    np.testing.assert_allclose(float(sums["d"][0]), (kept["y"] - kept["s"]).sum(), rtol=1e-12)


def test_no_key_searched_keeps_every_row(tmp_path):
    from mcviz.engines.base import Columns
    from mcviz.engines.holdout import exclude_rows
    from mcviz.engines.spark_engine import SparkEngine

    frame, paths = _files(tmp_path)
    with local_spark() as session:
        engine = SparkEngine(paths, Columns("s", "y", None), spark=session)
        engine.overview()
        exclude_rows(engine, np.zeros((0, 2), dtype=np.int64), columns=())
        assert session.table(engine.source).count() == len(frame)


def test_what_one_test_sets_on_the_shared_session_is_gone_for_the_next():
    """The tests of a process share one session (spark_available.shared_spark): the tiny file
    splits and Arrow batches set above must not reach the next test's reads."""
    with local_spark() as session:
        default = session.conf.get("spark.sql.files.maxPartitionBytes")
        session.conf.set("spark.sql.files.maxPartitionBytes", "4096")
        session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
    with local_spark() as session:
        assert session.conf.get("spark.sql.files.maxPartitionBytes") == default
        assert session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") != "64"
