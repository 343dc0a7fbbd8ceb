"""The screen's blocks on several threads: the same numbers as on one (numpy, DuckDB)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mcviz.engines.numpy_engine as numpy_engine
from mcviz.engines import Columns, NumpyEngine
from mcviz.engines.base import as_specs
from mcviz.engines.duckdb_engine import DuckDBEngine
from mcviz.subpopulations import Condition

COLUMNS = Columns("score", "label", "weight")


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 6000
    score = np.round(rng.random(n), 3)  # tie runs of about 6 rows, cut into many blocks below
    frame = pd.DataFrame({"score": score, "label": (rng.random(n) < score).astype(int),
                          "weight": rng.random(n) + 0.5, "x": rng.normal(size=n),
                          "c": rng.choice(["a", "b", "c"], n)})
    path = tmp_path_factory.mktemp("threads") / "p.parquet"
    frame.to_parquet(path)
    return path


SPECS = as_specs([[], [Condition("x", ">=", 0.0)], [Condition("c", "in", ("a", "b"))],
                  [Condition("x", "<", 0.5), Condition("c", "!=", "a")]])


def test_numpy_engine_blocks_on_threads_equal_one_thread(parquet, monkeypatch):
    monkeypatch.setattr(numpy_engine, "BLOCK_ROWS", 500)  # 12 blocks
    tables = [NumpyEngine(parquet, COLUMNS, threads=t).screen(SPECS).table for t in (1, 3)]
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)
    assert (tables[0]["size"] > 0).all()


def test_duckdb_batches_on_threads_equal_numpy(parquet):
    expected = NumpyEngine(parquet, COLUMNS, threads=1).screen(SPECS).table
    with DuckDBEngine(parquet, COLUMNS, threads=2, batch_rows=700) as engine:
        got = engine.screen(SPECS).table
    for column in ("size", "weight_total", "kuiper", "sigma"):
        np.testing.assert_allclose(got[column], expected[column], rtol=1e-12, atol=1e-15)
