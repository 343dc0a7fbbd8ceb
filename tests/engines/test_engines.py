"""Tests of mcviz.engines: numpy (reference), DuckDB exact and histogram, the CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcviz.cli import main
from mcviz.engines import Columns, NumpyEngine
from mcviz.engines.base import BinSummaries, HistogramAccumulator, as_specs
from mcviz.engines.duckdb_engine import DuckDBEngine
from mcviz.engines.memory import resident_bytes
from mcviz.engines.sql import DUCKDB, SPARK, Query, condition_sql
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.multical import multicalibration
from mcviz.subpopulations import Condition, generate_subpopulations, select_rows

COLUMNS = Columns("score", "label", "weight")
ODD = 'we"ird `col'


def make_frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Synthetic predictions with ties, weights and missing covariates of every kind."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x1[rng.random(n) < 0.07] = np.nan
    cat = rng.choice(["a", "b", "c", "O'Brien", "e"], n).astype(object)
    cat[rng.random(n) < 0.05] = None
    score = np.round(rng.random(n), 2)  # many ties
    frame = pd.DataFrame({
        "x1": x1,
        "x2": rng.integers(0, 50, n),
        "cat": cat,
        "flag": rng.random(n) < 0.3,
        ODD: rng.integers(0, 4, n).astype(float),
        "when": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 90, n), unit="D"),
        "score": score,
    })
    p = np.clip(score + 0.15 * (frame["x2"] > 30) - 0.1 * (frame["cat"] == "b"), 0, 1)
    frame["label"] = (rng.random(n) < p).astype(int)
    frame["weight"] = rng.random(n) + 0.25
    return frame


HANDMADE = [
    [],
    [Condition("x2", ">", 1000)],  # empty
    [Condition("x1", "<", 0.0)],
    [Condition("x1", ">=", 0.0)],  # keeps the missing x1
    [Condition("x1", "<=", 0.5), Condition("x1", ">", -0.5)],
    [Condition("x1", "is missing")],
    [Condition("x1", "is not missing"), Condition("flag", "==", True)],
    [Condition("cat", "in", ("a", "O'Brien"))],
    [Condition("cat", "not in", ("a", "O'Brien"))],  # keeps the missing cat
    [Condition("cat", "!=", "b")],
    [Condition("cat", "==", "O'Brien"), Condition("x2", "<", 25)],
    [Condition("cat", "is missing")],
    [Condition(ODD, "in", (1.0, 3.0))],
    [Condition(ODD, "!=", 2.0), Condition("flag", "!=", False)],
    [Condition("when", ">=", pd.Timestamp("2024-02-15"))],
    [Condition("when", "<", pd.Timestamp("2024-01-10")), Condition("x2", ">=", 10)],
]


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("engines") / "data.parquet"
    make_frame().to_parquet(path)
    return path


@pytest.fixture(scope="module")
def numpy_engine(parquet):
    return NumpyEngine(parquet, COLUMNS)


@pytest.fixture(scope="module")
def subpopulations(numpy_engine):
    generated = generate_subpopulations(numpy_engine.pred, n_subpopulations=60, seed=3)
    return list(HANDMADE) + [list(s.conditions) for s in generated][1:]


@pytest.fixture(scope="module")
def duck(parquet):
    with DuckDBEngine(parquet, COLUMNS, memory_limit="1GB") as engine:
        yield engine


def assert_same(a, b, *, tol=1e-12):
    assert a.table["size"].tolist() == b.table["size"].tolist()
    np.testing.assert_allclose(a.table["weight_total"], b.table["weight_total"], rtol=1e-12)
    for column in ("kuiper", "kuiper_bound", "sigma", "normalized"):
        np.testing.assert_allclose(a.table[column], b.table[column], rtol=0, atol=tol,
                                   err_msg=column)
    assert a.metric == b.metric or abs(a.metric - b.metric) <= tol  # inf == inf
    # the argmax agrees up to exact ties (equal subpopulations may round differently)
    at = a.table["normalized"].iloc[b.argmax]
    assert at == a.metric or at >= a.metric - tol


# ---------------------------------------------------------------------------- numpy reference


def test_numpy_engine_matches_cumulative_differences(numpy_engine, subpopulations):
    pred = numpy_engine.pred
    result = numpy_engine.screen(subpopulations)
    for position, conditions in enumerate(subpopulations[:12]):
        index = select_rows(pred, conditions)
        row = result.table.iloc[position]
        assert row["size"] == index.size
        if index.size == 0:
            assert row["kuiper"] == 0
            assert row["sigma"] == 0
            assert row["normalized"] == 0
            continue
        sub = Predictions.from_arrays(pred.score[index], pred.label[index], pred.weight[index])
        expected = cumulative_differences(sub)
        assert row["kuiper"] == pytest.approx(expected.kuiper, abs=1e-13)
        assert row["sigma"] == pytest.approx(expected.sigma, abs=1e-15)
    # eq. (4): M = max_k D_k sigma_0 / sigma_k, and the full population counts as D_0
    table = result.table
    assert result.metric == pytest.approx(table["normalized"].max())
    assert table["normalized"].iloc[0] == pytest.approx(table["kuiper"].iloc[0])
    assert result.metric >= table["kuiper"].iloc[0]


def test_numpy_engine_matches_multicalibration(numpy_engine):
    from mcviz.stats.multical import multicalibration

    generated = generate_subpopulations(numpy_engine.pred, n_subpopulations=40, seed=9)
    expected = multicalibration(numpy_engine.pred, generated)
    got = numpy_engine.screen(generated)
    np.testing.assert_allclose(got.table["kuiper"], expected.kuiper, rtol=0, atol=1e-13)
    np.testing.assert_allclose(got.table["sigma"], expected.sigma, rtol=0, atol=1e-15)
    np.testing.assert_allclose(got.table["normalized"], expected.normalized, rtol=0, atol=1e-13)
    assert got.metric == pytest.approx(expected.metric, abs=1e-13)
    assert got.table["id"].iloc[got.argmax] == expected.argmax.id


def test_parents_from_a_sample_only_speed_up_the_full_data(numpy_engine):
    # Subpopulations drawn on a sample, screened on all rows: testing a child's conditions on
    # its parent's rows must select exactly what testing them on every row selects.
    import dataclasses

    from mcviz.engines.base import as_specs

    sample = numpy_engine.pred.covariates.iloc[::3]
    pred = Predictions.from_arrays(
        numpy_engine.pred.score[::3], numpy_engine.pred.label[::3], covariates=sample
    )
    specs = as_specs(generate_subpopulations(pred, n_subpopulations=80, seed=4))
    assert sum(s.parent not in (None, 0) for s in specs) > 20  # deep paths are exercised
    with_parents = numpy_engine.screen(specs)
    without = numpy_engine.screen([dataclasses.replace(s, parent=None) for s in specs])
    assert with_parents.table["size"].tolist() == without.table["size"].tolist()
    np.testing.assert_array_equal(with_parents.table["kuiper"], without.table["kuiper"])
    for spec, size in zip(specs, with_parents.table["size"], strict=True):
        assert size == select_rows(numpy_engine.pred, spec.conditions).size


def test_constant_offset_closed_form():
    # R - S = d for every row (continuous responses are not screened, so use ties of a binary
    # response whose mean is the score plus d): half the rows at score 0.25 with R = 0.5 mean.
    score = np.repeat([0.25, 0.5], 4)
    label = np.array([1, 1, 0, 0, 1, 1, 1, 0])  # means 0.5 and 0.75: offset +0.25 in both runs
    pred = Predictions.from_arrays(score, label)
    result = NumpyEngine.from_predictions(pred).screen([[]])
    # path 0, 0.125, 0.25 -> D = 0.25 = |d|
    assert result.table["kuiper"].iloc[0] == pytest.approx(0.25, abs=1e-15)


# ---------------------------------------------------------------------------- DuckDB exact


def test_duckdb_exact_agrees_with_numpy(numpy_engine, duck, subpopulations):
    expected = numpy_engine.screen(subpopulations)
    got = duck.screen(subpopulations)
    assert got.exact
    assert got.metric_bound is None
    assert got.table["size"].iloc[1] == 0  # the empty subpopulation
    assert_same(expected, got)


@pytest.mark.parametrize("batch_rows", [7, 100, 5000])
def test_exact_does_not_depend_on_batch_cuts(parquet, numpy_engine, subpopulations, batch_rows):
    # Batches of 7 rows cut the many tie runs (scores have two decimals) everywhere: the
    # trailing tie run is held back, so every cut gives the same exact values.
    with DuckDBEngine(parquet, COLUMNS, batch_rows=batch_rows) as engine:
        assert_same(numpy_engine.screen(subpopulations), engine.screen(subpopulations))


def test_duckdb_exact_sorts_once_and_never_tests_predicates_in_sql(duck, subpopulations):
    # The statement streamed in exact mode: one ORDER BY, no CASE list per row, only the
    # columns the screening needs.
    from mcviz.core.membership import MembershipPlan
    from mcviz.engines import sql

    plan = MembershipPlan(as_specs(subpopulations))
    q = Query(DUCKDB)
    text = sql.rows_sql(duck.columns, duck.kinds, q, duck.source, plan.columns,
                        drop_invalid=False, order=True)
    assert text.count("ORDER BY") == 1
    assert "CASE" not in text  # labels are 0/1 numbers here: no CASE at all
    assert "SELECT *" not in text
    assert set(plan.columns) < set(duck.kinds)


def test_histogram_sums_match_direct_bincounts(numpy_engine, subpopulations):
    # Independent: per subpopulation, np.bincount of each sum over its selected rows.
    pred = numpy_engine.pred
    specs = as_specs(subpopulations)
    bins, lo = 13, pred.score[0]
    scale = bins / (pred.score[-1] - lo)
    got = numpy_engine.histogram(specs, lo, scale, bins)
    binned = np.minimum(np.floor((pred.score - lo) * scale).astype(int), bins - 1)
    diff = pred.weight * (pred.label - pred.score)
    for position, spec in enumerate(specs[:20]):
        index = select_rows(pred, spec.conditions)
        cells = got.position == position
        present = np.flatnonzero(np.bincount(binned[index], minlength=bins))
        assert got.bin[cells].tolist() == present.tolist()
        for values, name in ((pred.weight, "weight"), (diff, "diff"),
                             (np.maximum(diff, 0), "positive"), (np.maximum(-diff, 0), "negative")):
            expected = np.bincount(binned[index], weights=values[index], minlength=bins)[present]
            np.testing.assert_allclose(getattr(got, name)[cells], expected, rtol=1e-12,
                                       atol=1e-12)


def test_histogram_cells_are_bounded(numpy_engine, subpopulations):
    from mcviz.core.membership import MembershipPlan

    with pytest.raises(ValidationError, match=r"exceeds the budget .* use at most"):
        numpy_engine.screen(subpopulations, exact=False, bins=10**6)
    with pytest.raises(ValidationError, match="cells exceeds the budget"):
        HistogramAccumulator(MembershipPlan(as_specs([[]])), 0.0, 1.0, 5 * 10**6)


# ---------------------------------------------------------------------------- histogram mode


@pytest.mark.parametrize("bins", [1, 10, 200])
def test_histogram_mode_bound(numpy_engine, duck, subpopulations, bins):
    exact = numpy_engine.screen(subpopulations).table
    hist_numpy = numpy_engine.screen(subpopulations, exact=False, bins=bins)
    hist_duck = duck.screen(subpopulations, exact=False, bins=bins)
    assert not hist_duck.exact
    assert hist_duck.metric_bound is not None
    assert_same(hist_numpy, hist_duck)
    table = hist_duck.table
    assert (table["kuiper"] <= exact["kuiper"] + 1e-12).all()
    assert (exact["kuiper"] <= table["kuiper"] + table["kuiper_bound"] + 1e-12).all()
    exact_metric = numpy_engine.screen(subpopulations).metric
    assert hist_duck.metric - 1e-12 <= exact_metric <= (
        hist_duck.metric + hist_duck.metric_bound + 1e-12)


def test_histogram_bound_is_within_the_issue_bound(numpy_engine, subpopulations):
    # kuiper_bound <= 2 max_b sum_bin |W(R-S)| / sum W, computed here directly.
    pred = numpy_engine.pred
    bins = 10
    result = numpy_engine.screen(subpopulations, exact=False, bins=bins)
    lo, hi = pred.score[0], pred.score[-1]
    binned = np.minimum(np.floor((pred.score - lo) * (bins / (hi - lo))).astype(int), bins - 1)
    absolute = np.abs(pred.weight * (pred.label - pred.score))
    for position, conditions in enumerate(subpopulations[:15]):
        index = select_rows(pred, conditions)
        if index.size == 0:
            continue
        per_bin = np.bincount(binned[index], weights=absolute[index], minlength=bins)
        issue_bound = 2 * per_bin.max() / pred.weight[index].sum()
        assert result.table["kuiper_bound"].iloc[position] <= issue_bound + 1e-12


def test_one_bin_histogram_closed_form():
    # One bin: K_hist = |C_n| and the upper bound is (sum of positive parts + negative parts)/W.
    pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [1, 0, 1, 0])
    result = NumpyEngine.from_predictions(pred).screen([[]], exact=False, bins=1)
    # W(R-S) = 0.8, -0.4, 0.4, -0.8: C_n = 0, positive parts 1.2, negative 1.2, W = 4
    assert result.table["kuiper"].iloc[0] == pytest.approx(0.0, abs=1e-15)
    assert result.table["kuiper_bound"].iloc[0] == pytest.approx(0.6)


# ---------------------------------------------------------------------------- SQL translation


def test_sql_quotes_names_and_binds_values():
    q = Query(DUCKDB)
    text = condition_sql(Condition(ODD, "==", "x'); DROP TABLE t; --"), {ODD: "string"}, q)
    assert '"we""ird `col"' in text
    assert "DROP" not in text
    assert list(q.params.values()) == ["x'); DROP TABLE t; --"]
    q = Query(SPARK)
    text = condition_sql(Condition(ODD, "<", 3), {ODD: "float"}, q)
    assert "`we\"ird ``col`" in text
    assert ":p0" in text
    assert "isnan" in text


def test_sql_rejects_unknown_columns_and_bad_values():
    with pytest.raises(ValidationError, match="no column 'nope'"):
        condition_sql(Condition("nope", "<", 1), {"x": "float"}, Query(DUCKDB))
    with pytest.raises(ValidationError, match="is not a number"):
        condition_sql(Condition("x", "<", "abc"), {"x": "float"}, Query(DUCKDB))
    with pytest.raises(ValidationError, match="the value nan is not a number"):
        condition_sql(Condition("x", "<", float("nan")), {"x": "float"}, Query(DUCKDB))
    # infinite thresholds are values like any other (as in the filter language)
    q = Query(DUCKDB)
    condition_sql(Condition("x", "<", float("inf")), {"x": "float"}, q)
    assert q.params == {"p0": float("inf")}


def test_odd_column_names_evaluate_like_numpy(numpy_engine, duck):
    subpopulations = [[], [Condition(ODD, ">=", 2.0)], [Condition("cat", "==", "O'Brien")]]
    assert_same(numpy_engine.screen(subpopulations), duck.screen(subpopulations))


def test_drill_down_loads_only_the_subpopulation(numpy_engine, duck, subpopulations):
    for conditions in subpopulations[:16]:
        rows = duck.subpopulation_rows(conditions)
        assert len(rows) == select_rows(numpy_engine.pred, conditions).size
    assert len(duck.subpopulation_rows([], limit=5)) == 5


# ---------------------------------------------------------------------------- validation


def test_invalid_rows_are_counted(tmp_path):
    frame = make_frame(200)
    frame.loc[[3, 9, 11], "score"] = 1.5
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    with DuckDBEngine(path, COLUMNS) as engine, pytest.raises(
        ValidationError, match=r"column 'score': 3 of 200 rows lie outside \[0, 1\]"
    ):
        engine.screen([[]])
    with DuckDBEngine(path, COLUMNS, drop_invalid=True) as engine:
        got = engine.screen([[], [Condition("x2", "<", 20)]])
    expected = NumpyEngine(path, COLUMNS, drop_invalid=True).screen(
        [[], [Condition("x2", "<", 20)]])
    assert got.n == 197
    assert got.n_dropped == 3
    assert expected.n_dropped == 3
    assert_same(expected, got)


def test_text_labels_with_positive(tmp_path):
    frame = make_frame(400)
    frame["label"] = np.where(frame["label"] == 1, " yes", "no")
    path = tmp_path / "text.parquet"
    frame.to_parquet(path)
    columns = Columns("score", "label", None, positive="yes", negative="no")
    subpopulations = [[], [Condition("x1", "<", 0.0)], [Condition("cat", "in", ("a", "b"))]]
    expected = NumpyEngine(path, columns).screen(subpopulations)
    with DuckDBEngine(path, columns) as engine:
        assert_same(expected, engine.screen(subpopulations))


def test_bins_are_validated(duck):
    with pytest.raises(ValidationError, match="bins must be an integer"):
        duck.screen([[]], bins=0)


def test_glob_without_match():
    with pytest.raises(ValidationError, match="no file matches"):
        DuckDBEngine("/nonexistent/dir/*.parquet", COLUMNS)


def test_several_files_and_glob(tmp_path, subpopulations):
    frame = make_frame(1500, seed=5)
    frame.iloc[:700].to_parquet(tmp_path / "part-0.parquet")
    frame.iloc[700:].to_parquet(tmp_path / "part-1.parquet")
    expected = NumpyEngine(tmp_path / "part-*.parquet", COLUMNS).screen(subpopulations)
    with DuckDBEngine(str(tmp_path / "part-*.parquet"), COLUMNS) as engine:
        assert_same(expected, engine.screen(subpopulations))


# ---------------------------------------------------------------------------- property test


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 60),
    levels=st.integers(1, 6),
    threshold=st.floats(-1.5, 1.5),
    weighted=st.booleans(),
)
def test_duckdb_equals_numpy_on_random_data(tmp_path, seed, n, levels, threshold, weighted):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.2] = np.nan
    frame = pd.DataFrame({
        "x": x,
        "g": rng.integers(0, 3, n),
        "score": rng.integers(0, levels + 1, n) / levels,  # heavy ties, 0 and 1 included
        "label": rng.integers(0, 2, n),
        "weight": rng.random(n) + 0.1 if weighted else np.ones(n),
    })
    path = tmp_path / f"p{seed}_{n}.parquet"
    frame.to_parquet(path)
    subpopulations = [[], [Condition("x", "<", threshold)], [Condition("x", ">=", threshold)],
                      [Condition("g", "in", (0, 2)), Condition("x", "is not missing")],
                      [Condition("g", "==", 5)]]
    expected = NumpyEngine(path, COLUMNS).screen(subpopulations)
    with DuckDBEngine(path, COLUMNS, threads=1) as engine:
        assert_same(expected, engine.screen(subpopulations, bins=3))
        hist = engine.screen(subpopulations, exact=False, bins=3)
    assert (hist.table["kuiper"] <= expected.table["kuiper"] + 1e-12).all()
    assert (expected.table["kuiper"]
            <= hist.table["kuiper"] + hist.table["kuiper_bound"] + 1e-12).all()


# ---------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("engine", ["numpy", "duckdb"])
def test_cli_screen_json(parquet, tmp_path, capsys, engine):
    out = tmp_path / f"{engine}.parquet"
    # --memory-limit bounds the whole process, and this one is a test worker holding what the
    # tests before it left: 600 MB above what it holds now (a fresh mcviz process holds ~180 MB)
    limit = f"{resident_bytes() // 10**6 + 600}MB"
    status = main(["screen", str(parquet), "--engine", engine, "--subpopulations", "30",
                   "--sample-rows", "2000", "--seed", "4", "--memory-limit", limit,
                   "--out", str(out), "--json"])
    assert status == 0, capsys.readouterr().err
    output = json.loads(capsys.readouterr().out)
    assert set(output) == {"engine", "exact", "metric", "metric_bound", "n", "n_subpopulations",
                           "argmax"}
    assert set(output["argmax"]) == {"description", "size", "kuiper", "sigma"}
    assert output["engine"] == engine
    assert output["exact"] is True
    assert output["metric_bound"] is None
    assert output["n"] == 3000
    table = pd.read_parquet(out)
    assert len(table) == output["n_subpopulations"] == 31
    assert output["metric"] == pytest.approx(table["normalized"].max())


def test_cli_screen_refuses_a_memory_limit_it_cannot_hold_and_names_one_it_can(
        parquet, tmp_path, capsys):
    # --memory-limit bounds the whole process (Python holds more than 50MB before DuckDB
    # starts): refused in one line naming the flag and a limit that works, and that one works
    out = tmp_path / "o.parquet"
    args = ["screen", str(parquet), "--engine", "duckdb", "--subpopulations", "30",
            "--sample-rows", "2000", "--seed", "4", "--out", str(out), "--json"]
    assert main([*args, "--memory-limit", "50MB"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--memory-limit 50MB cannot hold this screen" in err
    smallest = int(re.search(r"Give --memory-limit (\d+)MB or more\.$", err).group(1))
    assert not out.exists()
    assert main([*args, "--memory-limit", f"{smallest - 100}MB"]) == 2  # the smallest, to 100 MB
    assert "cannot hold this screen" in capsys.readouterr().err
    assert main([*args, "--memory-limit", f"{smallest}MB"]) == 0
    bounded = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    assert bounded == json.loads(capsys.readouterr().out)


def test_cli_engines_agree_and_histogram(parquet, tmp_path, capsys):
    results = {}
    # a "sample" of every row: DuckDB generates the subpopulations on the sample, numpy on every
    # row (Algorithm 1 does not depend on the order of the rows), so both screen the same ones
    for engine in ("numpy", "duckdb"):
        for mode in (["--exact"], ["--histogram", "50"]):
            main(["screen", str(parquet), "--engine", engine, "--subpopulations", "20",
                  "--sample-rows", "5000", "--out", str(tmp_path / "o.parquet"), "--json",
                  *mode])
            results[engine, mode[0]] = json.loads(capsys.readouterr().out)
    assert results["numpy", "--exact"]["metric"] == pytest.approx(
        results["duckdb", "--exact"]["metric"], abs=1e-12)
    hist = results["duckdb", "--histogram"]
    assert hist["exact"] is False
    assert hist["metric_bound"] >= 0
    exact = results["duckdb", "--exact"]["metric"]
    assert hist["metric"] - 1e-12 <= exact <= hist["metric"] + hist["metric_bound"] + 1e-12


def test_cli_reports_bad_input(tmp_path, capsys):
    status = main(["screen", str(tmp_path / "missing.parquet"), "--out",
                   str(tmp_path / "o.parquet")])
    assert status == 2
    assert "does not exist" in capsys.readouterr().err


def test_bin_summaries_sorted_from_frame():
    frame = pd.DataFrame({"k": [1, 0, 0], "b": [0, 3, 1], "n": [1, 1, 1], "w": [1.0, 2.0, 3.0],
                          "d": [0.1, 0.2, 0.3], "p": [0.1, 0.2, 0.3], "q": [0.0, 0.0, 0.0],
                          "v": [0.0, 0.0, 0.0]})
    s = BinSummaries.from_frame(frame)
    assert s.position.tolist() == [0, 0, 1]
    assert s.bin.tolist() == [1, 3, 0]


# ---------------------------------------------------------------------------- review additions


def test_memory_limit_is_set_and_bad_limits_are_messages(parquet):
    with DuckDBEngine(parquet, COLUMNS, memory_limit="300MB") as engine:
        limit = engine.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.endswith("MiB")
    assert 250 <= float(limit.split()[0]) <= 300  # DuckDB reports 300MB as 286.1 MiB
    with pytest.raises(ValidationError, match="memory limit 'lots' is not understood"):
        DuckDBEngine(parquet, COLUMNS, memory_limit="lots")


def test_duckdb_limit_is_lowered_while_the_sorted_rows_stream(parquet):
    # the sort may use the evaluator's share; once rows stream DuckDB makes room, then gets
    # its limit back (DuckDB's own setting, read from a second cursor)
    from mcviz.core.membership import MembershipPlan

    def setting(engine):
        cursor = engine.con.cursor()
        try:
            return cursor.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        finally:
            cursor.close()

    with DuckDBEngine(parquet, COLUMNS, memory_limit="1GB", stream_memory_limit="300MB",
                      batch_rows=2048) as engine:
        seen = [setting(engine) for _ in engine._batches(MembershipPlan(()), ordered=True)]
        after = setting(engine)
        unsorted = [setting(engine) for _ in engine._batches(MembershipPlan(()), ordered=False)]
    assert len(seen) == 2  # 3,000 rows in batches of 2,048
    assert all(s.startswith("286.1 MiB") for s in seen), seen  # 300MB
    assert after.startswith("953.6 MiB"), after  # 1GB
    assert all(s.startswith("953.6 MiB") for s in unsorted), unsorted  # no sort: no change


def test_drill_down_skips_row_groups_by_statistics(tmp_path):
    # Sorted by x2 in row groups of 200: a bare comparison lets DuckDB prune row groups.
    frame = make_frame(4000).sort_values("x2", kind="stable")
    path = tmp_path / "sorted.parquet"
    frame.to_parquet(path, row_group_size=200)
    conditions = [Condition("x2", "<", 5), Condition("cat", "!=", "b")]
    with DuckDBEngine(path, COLUMNS) as engine:
        rows = engine.subpopulation_rows(conditions)
        q = Query(DUCKDB)
        from mcviz.engines.sql import predicate_sql

        where = predicate_sql(conditions, engine.kinds, q)
        plan = engine.con.execute(
            f"EXPLAIN ANALYZE SELECT * FROM {engine.source} WHERE {where}", q.params
        ).fetchall()[0][1]
    expected = frame[(frame["x2"] < 5) & (frame["cat"] != "b")]  # a missing cat satisfies !=
    assert len(rows) == len(expected)
    scanned = [line for line in plan.splitlines() if "Row Groups Scanned" in line]
    assert scanned, plan
    read, total = (int(v) for v in scanned[0].split(":")[1].strip(" │").split("/"))
    assert total == 20
    assert read <= 3


def test_float_labels_with_a_declared_positive_value(tmp_path):
    # 0.0/1.0 labels cast to the text '0.0' in SQL; positive '0' must still match numerically.
    frame = make_frame(500)
    frame["label"] = frame["label"].astype(float)
    path = tmp_path / "float.parquet"
    frame.to_parquet(path)
    columns = Columns("score", "label", "weight", positive="0", negative="1.0")
    subpopulations = [[], [Condition("x2", "<", 20)]]
    expected = NumpyEngine(path, columns).screen(subpopulations)
    assert expected.table["size"].iloc[0] == 500
    with DuckDBEngine(path, columns) as engine:
        assert_same(expected, engine.screen(subpopulations))


def test_cli_screen_invalid_rows_counted_on_the_whole_file(tmp_path, capsys):
    frame = make_frame(600)
    frame.loc[[5, 50, 500], "weight"] = -1.0
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    args = ["screen", str(path), "--engine", "duckdb", "--subpopulations", "5",
            "--sample-rows", "100", "--out", str(tmp_path / "o.parquet"), "--json"]
    assert main(args) == 2
    assert "column 'weight': 3 of 600 rows" in capsys.readouterr().err
    assert main([*args, "--drop-invalid"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 597


# ------------------------------------------------- library and engines: one eq. (4) (issue 12)


def _sigma0_zero_frame() -> pd.DataFrame:
    # Scores 0 or 1 only: sigma_k = 0 for every subpopulation (eq. (5)), while labels disagree
    # with the scores on some rows, so D_0 > 0. Paper 000 after eq. (4): the k = 0 argument is
    # simply D_0 and the others are D_k * 0 / 0 = 0, so M = D_0.
    rng = np.random.default_rng(5)
    n = 400
    score = (rng.random(n) < 0.5).astype(float)
    label = np.where(rng.random(n) < 0.8, score, 1 - score).astype(int)
    return pd.DataFrame({"score": score, "label": label, "x": rng.integers(0, 8, n),
                         "weight": rng.random(n) + 0.5})


@pytest.mark.parametrize("engine_name", ["numpy", "duckdb"])
@pytest.mark.parametrize("case", ["sigma0_zero", "ordinary"])
def test_library_and_engines_agree_on_m(tmp_path, engine_name, case):
    frame = _sigma0_zero_frame() if case == "sigma0_zero" else make_frame(1500, seed=4)
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    engine = (NumpyEngine(path, COLUMNS) if engine_name == "numpy"
              else DuckDBEngine(path, COLUMNS, memory_limit="1GB"))
    with engine:
        pred = NumpyEngine(path, COLUMNS).pred
        generated = generate_subpopulations(pred, covariates=["x"] if case == "sigma0_zero"
                                            else ["x1", "x2", "cat"], n_subpopulations=25,
                                            seed=1)
        subpopulations = list(generated)[1:]  # without the full population: both add it first
        expected = multicalibration(pred, subpopulations)
        got = engine.screen(subpopulations)
    assert got.table["description"].iloc[0] == "full population"
    assert len(got.table) == len(expected.subpopulations)
    assert_same_m(got, expected, sigma0_zero=case == "sigma0_zero")


def assert_same_m(got, expected, *, sigma0_zero: bool) -> None:
    """An engine's screen agrees with the library's multicalibration: D_k, sigma_k and M.

    With every sigma_k = 0 (scores 0 and 1 only) the metric is D_0 (paper 000 after eq. (4)).
    """
    np.testing.assert_allclose(got.table["kuiper"], expected.kuiper, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.table["sigma"], expected.sigma, rtol=0, atol=1e-12)
    assert abs(got.metric - expected.metric) <= 1e-12
    if sigma0_zero:
        assert expected.sigma[0] == 0
        assert expected.kuiper[0] > 0
        assert expected.metric == expected.kuiper[0]  # M = D_0, in each implementation
        assert got.metric == got.table["kuiper"].iloc[0]


def test_interrupt_and_close_remove_the_spill_directory(parquet):
    from pathlib import Path

    engine = DuckDBEngine(parquet, COLUMNS)
    spill = Path(engine.temp_directory)
    assert spill.is_dir()
    engine.interrupt()  # nothing running: a no-op, never an error
    result = engine.screen([[], [Condition("x2", "<", 20)]])  # the connection still works
    assert result.n == 3000
    engine.close()
    assert not spill.exists()
