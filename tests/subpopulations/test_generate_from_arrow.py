"""Algorithm 1 on number covariates read straight from Parquet equals Algorithm 1 on the loader's.

``generate_subpopulations`` builds its columns from the file's arrays without pandas when every
covariate it splits is an ordinal number column not yet put in score order
(:meth:`mcviz.io.Predictions.covariate_numbers`). Each file here is loaded by the Parquet path
(:func:`mcviz.io.arrow_path.parquet_predictions`) and by the loader
(:func:`mcviz.load_predictions`, covariates as a DataFrame), and the subpopulations, their
paths and descriptions, the notice and the metric of eq. (4) must be the same: every kind of
number column (integers of several widths, with ties, nulls and pandas' nullable integers;
short decimals with NaN; reals all distinct; reals with repeats that are no short decimals;
unsigned integers beyond 2^63), weights, and ties in the score.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mcviz import load_predictions
from mcviz.io.arrow_path import parquet_predictions
from mcviz.stats.multical import multicalibration
from mcviz.subpopulations import generate_subpopulations


def _columns(n: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    score = np.round(rng.random(n), 2)  # ties: the order inside a run must not matter
    some = rng.random(n) < 0.08
    ints = rng.integers(-3, 40, n)
    return {
        "score": score,
        "label": (rng.random(n) < score).astype(np.int8),
        "weight": rng.random(n) + 0.2,
        "small": ints.astype(np.int8),
        "count": ints * 1000,
        "uint64": ints.astype(np.uint64) + np.uint64(2**63),
        "nullable": pd.array(np.where(some, None, ints), dtype="Int64"),
        "decimal": np.where(some, np.nan, np.round(rng.normal(size=n), 2)),
        "float32": rng.normal(size=n).astype(np.float32),  # all distinct: keys, not codes
        "third": np.where(some, np.nan, rng.integers(0, 300, n) / 3.0),  # repeats, no decimal
        "repeats": rng.normal(size=500)[rng.integers(0, 500, n)],  # no short decimals at all
        "city": np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)],
    }


def _write(tmp_path: Path, columns: dict, *, pandas: bool) -> Path:
    table = pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)
    if not pandas:  # plain Arrow: integers with nulls become floats with NaN in pandas
        table = table.replace_schema_metadata(None)
    path = tmp_path / "p.parquet"
    pq.write_table(table, path, row_group_size=1_500)  # several chunks per column
    return path


def _same_subpopulations(fast, slow) -> None:
    assert (fast.notice, fast.n_paths, fast.covariates) == (slow.notice, slow.n_paths,
                                                            slow.covariates)
    assert len(fast.subpopulations) == len(slow.subpopulations)
    for a, b in zip(fast.subpopulations, slow.subpopulations, strict=True):
        assert (a.id, a.depth, a.parent, a.conditions, a.description) == (
            b.id, b.depth, b.parent, b.conditions, b.description)
        assert a.index.dtype == b.index.dtype
        assert np.array_equal(a.index, b.index)


NUMBERS = ["small", "count", "uint64", "nullable", "decimal", "float32", "third", "repeats"]


@pytest.mark.parametrize(("seed", "pandas", "weight"), [(0, True, "weight"), (1, False, ""),
                                                         (2, True, "")])
def test_number_covariates_from_the_file_give_the_loaders_subpopulations(tmp_path, seed,
                                                                        pandas, weight):
    path = _write(tmp_path, _columns(6_000, seed), pandas=pandas)
    fast = parquet_predictions(path, score="score", label="label", weight=weight,
                               covariates=[*NUMBERS, "city"])
    slow = load_predictions(path, score="score", label="label", weight=weight or False,
                            covariates=[*NUMBERS, "city"])
    assert fast is not None
    assert np.array_equal(fast.row, slow.row)
    keys = fast.covariate_numbers(NUMBERS)
    assert keys is not None  # the two paths
    assert slow.covariate_numbers(NUMBERS) is None
    assert fast.covariate_numbers([*NUMBERS, "city"]) is None  # a nominal one: the DataFrame
    for names in (NUMBERS, ["third", "decimal"], ["float32"], ["repeats", "nullable"]):
        generated = [generate_subpopulations(p, covariates=names, n_subpopulations=150,
                                             min_size=5, seed=seed) for p in (fast, slow)]
        _same_subpopulations(*generated)
        assert multicalibration(fast, generated[0]).metric == multicalibration(
            slow, generated[1]).metric
    # the keys are the DataFrame's values, in input-row order
    frame = slow.covariates
    for name in NUMBERS:
        expected = frame[name].to_numpy(dtype=float, na_value=np.nan)
        np.testing.assert_array_equal(keys[name][fast.row], expected)
    assert fast.covariates is not None  # once a DataFrame, Algorithm 1 reads it (the same)
    assert fast.covariate_numbers(NUMBERS) is None
    _same_subpopulations(
        generate_subpopulations(fast, covariates=NUMBERS, n_subpopulations=60, seed=3),
        generate_subpopulations(slow, covariates=NUMBERS, n_subpopulations=60, seed=3))


def test_without_pandas_loaded_the_codes_are_the_same(tmp_path, monkeypatch):
    # without pandas (the command line), reals with repeats are coded by a search, not hashing
    path = _write(tmp_path, _columns(3_000, 4), pandas=True)
    names = ["repeats", "third", "float32", "nullable"]
    slow = load_predictions(path, score="score", label="label", covariates=names)
    expected = generate_subpopulations(slow, covariates=names, n_subpopulations=80, seed=2)
    fast = parquet_predictions(path, score="score", label="label", covariates=names)
    monkeypatch.delitem(sys.modules, "pandas")  # restored after the test
    generated = generate_subpopulations(fast, covariates=names, n_subpopulations=80, seed=2)
    assert "pandas" not in sys.modules
    monkeypatch.undo()
    _same_subpopulations(generated, expected)


def test_many_distinct_reals_with_repeats_and_a_subset(tmp_path):
    # more than 65,536 distinct values, each twice: codes by search, not by counting
    rng = np.random.default_rng(5)
    n = 140_000
    columns = _columns(n, 5)
    columns["many"] = np.repeat(rng.normal(size=n // 2), 2)[rng.permutation(n)]
    path = _write(tmp_path, columns, pandas=True)
    fast = parquet_predictions(path, score="score", label="label", covariates=["many", "count"])
    slow = load_predictions(path, score="score", label="label", covariates=["many", "count"])
    for a, b in ((fast, slow), (fast.subset(np.arange(0, n, 3)), slow.subset(np.arange(0, n, 3)))):
        assert a.covariate_numbers(["many"]) is not None
        _same_subpopulations(
            generate_subpopulations(a, covariates=["many", "count"], n_subpopulations=40, seed=1),
            generate_subpopulations(b, covariates=["many", "count"], n_subpopulations=40, seed=1))
