"""Spark's narrowed rows carry only the columns read after them (``holdout.kept_columns``).

``exclude_rows`` and ``flag_searched`` hand every row to a Python worker (``mapInArrow``:
Spark cannot prune the columns a Python function is given). With every column of the file
those workers held 190 MiB each in ``mcviz compare --engine spark`` and 384 MiB in ``search``
at 10^7 rows, where the memory model counted 144 and 336 (1 Dec 2026). Here a file with two
columns nothing reads: the batches the workers receive, as recorded by the workers themselves,
hold the roles, the columns named and the two keys, nothing else.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spark_available import local_spark, skip_module_without_spark

skip_module_without_spark()

pytestmark = pytest.mark.spark


def _file(tmp_path) -> tuple[pd.DataFrame, str]:
    rng = np.random.default_rng(8)
    n = 600
    frame = pd.DataFrame({"s": rng.random(n), "y": rng.integers(0, 2, n),
                          "w": rng.random(n) + 0.5, "g": rng.choice(["a", "b"], n),
                          "row": np.arange(n), "unread_text": [f"t{k}" for k in range(n)],
                          "unread_number": rng.random(n)})
    path = str(tmp_path / "rows.parquet")
    frame.to_parquet(path, index=False)
    return frame, path


@pytest.mark.parametrize("how", ["exclude", "flag"])
def test_the_workers_get_the_roles_and_the_columns_named_only(tmp_path, monkeypatch, how):
    from mcviz.engines import holdout
    from mcviz.engines.base import Columns
    from mcviz.engines.spark_engine import SparkEngine

    frame, path = _file(tmp_path)
    seen = tmp_path / "seen.txt"
    real = holdout.searched_partition

    def recording(codes, targets, flag, batches):  # pickled by value: a nested function
        for batch in batches:
            with Path(str(seen)).open("a") as stream:
                stream.write(",".join(batch.schema.names) + "\n")
            yield from real(codes, targets, flag, iter([batch]))

    monkeypatch.setattr(holdout, "searched_partition", recording)
    keys = np.column_stack((np.zeros(100, dtype=np.int64), np.arange(0, 600, 6)))
    with local_spark() as session:
        session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "128")
        engine = SparkEngine(path, Columns("s", "y", "w"), spark=session)
        engine.overview()
        narrow = holdout.exclude_rows if how == "exclude" else holdout.flag_searched
        narrow(engine, keys, columns=["g", "row"])
        rows = session.table(engine.source).toPandas()
    received = set(seen.read_text().splitlines())
    assert received == {f"s,y,w,g,row,{holdout.FILE_KEY},{holdout.ROW_KEY}"}
    assert list(rows.columns) == ["s", "y", "w", "g", "row"] + (
        [holdout.HELD] if how == "flag" else [])
    if how == "flag":
        np.testing.assert_array_equal(rows.sort_values("row")[holdout.HELD].to_numpy(),
                                      frame["row"].to_numpy() % 6 != 0)
        rows = rows[rows[holdout.HELD]]
    kept = frame[frame["row"] % 6 != 0]
    pd.testing.assert_frame_equal(
        rows.sort_values("row")[["s", "y", "w", "g", "row"]].reset_index(drop=True),
        kept[["s", "y", "w", "g", "row"]].reset_index(drop=True), check_dtype=False)


def test_a_column_the_data_lacks_is_refused(tmp_path):
    from mcviz.engines.base import Columns
    from mcviz.engines.holdout import exclude_rows
    from mcviz.engines.spark_engine import SparkEngine
    from mcviz.errors import ValidationError

    _, path = _file(tmp_path)
    with local_spark() as session:
        engine = SparkEngine(path, Columns("s", "y", None), spark=session)
        with pytest.raises(ValidationError, match="no column 'region' in the data"):
            exclude_rows(engine, np.zeros((0, 2), dtype=np.int64), columns=["region"])


def test_a_file_given_by_a_symbolic_link_is_read(tmp_path):
    """Spark names a file by the path it was given (a link's, not its target's): the searched
    rows of a file given through a symbolic link are matched, not refused as "not given"."""
    from mcviz.engines.base import Columns
    from mcviz.engines.holdout import exclude_rows
    from mcviz.engines.spark_engine import SparkEngine

    frame, path = _file(tmp_path)
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "rows.parquet"
    link.symlink_to(path)
    keys = np.column_stack((np.zeros(100, dtype=np.int64), np.arange(0, 600, 6)))
    with local_spark() as session:
        engine = SparkEngine(str(link), Columns("s", "y", None), spark=session)
        exclude_rows(engine, keys, columns=["row"])
        rows = session.table(engine.source).toPandas()
    assert sorted(rows["row"]) == sorted(frame.loc[frame["row"] % 6 != 0, "row"])
