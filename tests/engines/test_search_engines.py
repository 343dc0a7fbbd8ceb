"""``mcviz search --engine duckdb|spark``: findings confirmed on EVERY row the search did not see.

Two checks, each against an independent reference:

* the sample holds every row: the engine's held-out rows are the in-memory search's, so every
  number of every finding (held-out D/sigma, p, Holm, effect, interval, sentence) and the MDE
  equal ``mcviz search`` in memory (to 1e-9), with the same descriptions and order;
* the sample is smaller: the held-out numbers are recomputed here by brute force on the full
  file in memory, over the rows that are not the sample's search rows (the sample's keys drawn
  again with the same seed), with numpy formulas written out in this file and the core's
  multicalibration statistics for D/sigma.

Small data (8,000 rows): each run takes a few seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz import load_predictions, multicalibration, parse_filter
from mcviz.subpopulations import Subpopulation, select_rows

pytest.importorskip("duckdb")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_find import planted

cli = pytest.importorskip("mcviz.cli")

N = 8000
HELD = ("holdout_size", "holdout_kuiper_z", "p_value", "p_adjusted", "confirmed",
        "mean_residual", "ci_low", "ci_high", "sentence")


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    frame, _ = planted(N, "level", 0.3, seed=3)
    frame.insert(2, "w", np.random.default_rng(11).uniform(0.5, 2.0, len(frame)))
    path = tmp_path_factory.mktemp("search_engines") / "planted.parquet"
    frame.to_parquet(path)
    return path


def _run(path, *options) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["search", str(path), "--score", "score", "--label", "label",
                           "--weight", "w", "--findings", "3", "--seed", "2", "--json",
                           *options])
    assert status == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def in_memory(planted_file):
    return _run(planted_file)


def _close(a: float, b: float) -> bool:
    if isinstance(a, str | bool) or a is None:
        return a == b
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def _assert_equal_to_in_memory(output, reference, engine):
    assert [f["description"] for f in output["findings"]] == [
        f["description"] for f in reference["findings"]]
    assert output["findings"][0]["description"] == "region == r7"  # the planted group
    for got, want in zip(output["findings"], reference["findings"], strict=True):
        for key in reference["findings"][0]:
            assert _close(got[key], want[key]), (key, got[key], want[key])
    for share, shift in reference["mde"].items():
        assert _close(output["mde"][share], shift)
    assert output["held_out"] == {"engine": engine, "rows": output["sample"]["held_out"]}
    assert f"measured by {engine} on all {output['held_out']['rows']:,} rows" in output["notice"]


def test_duckdb_with_every_row_sampled_gives_the_in_memory_search(planted_file, in_memory):
    output = _run(planted_file, "--engine", "duckdb", "--sample-rows", str(N))
    assert output["sample"] == {"rows": N, "n_dropped": 0, "searched": 5600, "held_out": 2400}
    _assert_equal_to_in_memory(output, in_memory, "duckdb")


def _brute_force(path, sample_rows: int, findings: list[dict]) -> list[dict]:
    """Held-out numbers of each finding over every row but the sample's search rows."""
    from mcviz.engines.duckdb_engine import read_sample
    from mcviz.engines.holdout import ROW_KEY
    from mcviz.search import search_subpopulations
    from mcviz.stats.cumulative import brownian_range_sf

    sample = read_sample([str(path)], sample_rows, 2, keys=True)  # the CLI's draw (seed 2)
    rows = sample[ROW_KEY].to_numpy()
    sample = sample.drop(columns=[c for c in sample.columns if c.startswith("__mcviz")])
    spred = load_predictions(sample, score="score", label="label", weight="w")
    searched = np.ones(spred.n, dtype=bool)
    searched[search_subpopulations(spred, n_findings=3, seed=2).holdout_index] = False
    frame = pd.read_parquet(path)
    held = frame.drop(index=rows[spred.row[searched]]).reset_index(drop=True)
    pred = load_predictions(held, score="score", label="label", weight="w")
    subs, out = [], []
    for k, item in enumerate(findings, start=1):
        conditions = parse_filter(item["description"], pred)
        members = np.asarray(select_rows(pred, conditions))
        subs.append(Subpopulation(k, len(conditions), conditions, item["description"],
                                  members))
        w, d = pred.weight[members], pred.label[members] - pred.score[members]
        mean = float(w @ d / w.sum())
        se = np.sqrt(np.sum(w**2 * (d - mean) ** 2) / w.sum() ** 2 * d.size / (d.size - 1))
        out.append({"holdout_size": members.size, "mean_residual": mean,
                    "ci_low": mean - 1.959963984540054 * se,
                    "ci_high": mean + 1.959963984540054 * se})
    stats = multicalibration(pred, subs)
    p = np.array([float(brownian_range_sf(z)) for z in stats.kuiper_z[1:]])
    order = np.argsort(p)  # Holm, written out
    steps = np.maximum.accumulate(np.minimum(1.0, (p.size - np.arange(p.size)) * p[order]))
    for j, k in enumerate(order):
        out[k].update(holdout_kuiper_z=float(stats.kuiper_z[k + 1]), p_value=float(p[k]),
                      p_adjusted=float(steps[j]))
    return out, held.shape[0]


def test_held_out_numbers_are_measured_on_every_row_not_searched(planted_file):
    output = _run(planted_file, "--engine", "duckdb", "--sample-rows", "3000")
    assert output["sample"]["searched"] == 2100
    reference, n_held = _brute_force(planted_file, 3000, output["findings"])
    assert output["held_out"] == {"engine": "duckdb", "rows": n_held}
    assert n_held == N - 2100
    for got, want in zip(output["findings"], reference, strict=True):
        for key, value in want.items():
            assert _close(got[key], value), (got["description"], key, got[key], value)
        assert got["confirmed"] == (got["p_adjusted"] < 0.05)
    keys = [(not f["confirmed"], f["p_value"]) for f in output["findings"]]
    assert keys == sorted(keys)  # listed by the evidence of every held-out row
    _assert_notice_counts(output["notice"] or "", output["findings"])
    assert output["findings"][0]["description"] == "region == r7"
    first = output["findings"][0]  # more held-out rows than the sample's: 0.3 of its members
    assert first["holdout_size"] > 3 * 0.3 * first["sample_size"]


def test_sample_size_comes_from_the_memory_budget(planted_file, monkeypatch):
    from mcviz.search import search_estimate
    from mcviz.search.at_scale import sample_rows

    budget = search_estimate(4000, 7).bytes + 1  # room for about 4,000 rows, not 8,000
    rows = sample_rows(7, holdout=0.3, max_conditions=3, budget=budget)
    assert search_estimate(rows, 7).bytes <= budget < search_estimate(rows + 1000, 7).bytes
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", str(budget))
    output = _run(planted_file, "--engine", "duckdb", "--covariates",
                  "region,sex,occupation,age,income,x1,x2")
    assert output["sample"]["rows"] == rows < N


def test_a_sample_of_the_named_columns_holds_the_same_rows(planted_file):
    """The search's draw reads only the columns named on the command line: the same rows."""
    from mcviz.engines.duckdb_engine import read_sample
    from mcviz.engines.holdout import ROW_KEY

    every = read_sample([str(planted_file)], 3000, 2, keys=True)
    named = read_sample([str(planted_file)], 3000, 2, keys=True, columns=["score", "label", "w"])
    assert list(named.columns[:3]) == ["score", "label", "w"] and named.shape[1] == 5
    assert every.shape[1] > named.shape[1]
    key = every.set_index(ROW_KEY).sort_index()
    same = named.set_index(ROW_KEY).sort_index()
    assert np.array_equal(key.index, same.index)  # the same rows
    assert np.array_equal(key["score"].to_numpy(), same["score"].to_numpy())


def _assert_notice_counts(notice: str, findings: list[dict]) -> None:
    """The notice's sentence on confirmation counts the findings shown, not the sample's."""
    unconfirmed = sum(not f["confirmed"] for f in findings)
    if unconfirmed == 0:
        assert "not confirmed" not in notice and "No finding is confirmed" not in notice
    elif unconfirmed == len(findings):
        assert "No finding is confirmed on the held-out rows" in notice, notice
    else:
        assert (f"{unconfirmed} of the {len(findings)} findings are not confirmed"
                in notice), notice
    assert notice.count("confirmed on the held-out rows") <= 1, notice


def test_the_sample_is_a_simple_random_sample(tmp_path):
    """The drawn rows: exactly m distinct rows, each row equally likely, seeds independent.

    Over 200 seeds of m = 100 of N = 1,000 rows in two files: each row's inclusion count is
    Binomial(200, 0.1) (a chi-square with the binomial variance), two consecutive seeds'
    samples overlap as a hypergeometric(N, m, m) count (mean 10, variance 8.1), and two
    neighbouring rows are drawn together as often as any pair. DuckDB's hash(row, file, seed)
    fails the last two (overlap variance about 130x; neighbours drawn together).
    """
    import duckdb
    from scipy import stats

    from mcviz.engines.duckdb_engine import read_sample

    pd.DataFrame({"x": np.arange(700)}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"x": np.arange(700, 1000)}).to_parquet(tmp_path / "b.parquet")
    files = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    con = duckdb.connect()
    drawn = np.zeros((200, 1000), dtype=bool)
    for seed in range(200):
        rows = read_sample(files, 100, seed, con=con)["x"].to_numpy()
        assert rows.size == 100 == np.unique(rows).size
        drawn[seed, rows] = True
    again = read_sample(files, 100, 7, con=con, keys=True)
    assert np.array_equal(np.flatnonzero(drawn[7]), np.sort(again["x"].to_numpy()))
    assert set(again["__mcviz_file"]) <= {0, 1}
    assert (again["__mcviz_row"] == again["x"] - 700 * again["__mcviz_file"]).all()
    counts = drawn.sum(axis=0)
    chi2 = ((counts - 20.0) ** 2).sum() / (20.0 * 0.9)
    assert stats.chi2.sf(chi2, 999) > 1e-4
    assert stats.chi2.cdf(chi2, 999) > 1e-4
    overlap = (drawn[1:] & drawn[:-1]).sum(axis=1)
    hyper = stats.hypergeom(1000, 100, 100)
    assert abs(overlap.mean() - hyper.mean()) < 4 * np.sqrt(hyper.var() / overlap.size)
    assert 0.6 < overlap.var() / hyper.var() < 1.6
    together = (drawn[:, 1:] & drawn[:, :-1]).sum()  # expected 200 * 999 * (100*99)/(1000*999)
    expected = 200 * 100 * 99 / 1000
    assert abs(together - expected) < 5 * np.sqrt(expected)
    assert len(read_sample(files, 5000, 1, con=con)) == 1000  # more than there are: all rows


def test_a_sample_of_every_row_is_the_files_rows_in_file_order(tmp_path):
    """``rows`` >= the row count: every row, read in file order (no hash, no sort), with the
    same keys and columns as a drawn sample; pandas' read of the files is the reference."""
    import duckdb

    from mcviz.engines.duckdb_engine import read_sample

    rng = np.random.default_rng(8)
    parts = [pd.DataFrame({"x": np.arange(a, b), "y": rng.random(b - a)})
             for a, b in ((0, 700), (700, 1000))]
    files = []
    for k, part in enumerate(parts):
        part.to_parquet(tmp_path / f"{k}.parquet")
        files.append(str(tmp_path / f"{k}.parquet"))
    every = pd.concat(parts, ignore_index=True)
    con = duckdb.connect()
    drawn = read_sample(files, 10, 3, con=con, keys=True)  # a sample's columns, in order
    for rows in (1000, 5000):
        plain = read_sample(files, rows, 3, con=con)
        pd.testing.assert_frame_equal(plain, every)
        keyed = read_sample(files, rows, 3, con=con, keys=True)
        assert list(keyed.columns) == list(drawn.columns)
        assert set(keyed.columns) == {"x", "y", "__mcviz_file", "__mcviz_row"}
        assert np.array_equal(keyed["x"], every["x"]) and np.array_equal(keyed["y"], every["y"])
        assert np.array_equal(keyed["__mcviz_file"], np.repeat([0, 1], [700, 300]))
        assert np.array_equal(keyed["__mcviz_row"], np.r_[np.arange(700), np.arange(300)])
        named = read_sample(files, rows, 3, con=con, keys=True, columns=["y"])
        assert list(named.columns) == list(read_sample(files, 10, 3, con=con, keys=True,
                                                       columns=["y"]).columns)
        assert np.array_equal(named["y"], every["y"])
        assert list(read_sample(files, rows, 3, con=con, columns=["y"]).columns) == ["y"]


def test_integer_codes_declared_nominal_are_level_sets_on_every_engine(tmp_path):
    """``--nominal code`` on integer codes: the sample's search finds a level set (its levels
    the codes' text); numpy and DuckDB count it on every row of the file (brute force here),
    where the engines used to refuse the text levels on a numeric column."""
    rng = np.random.default_rng(5)
    n = 6000
    code = rng.integers(0, 40, n)
    score = rng.uniform(0.1, 0.8, n)
    planted_codes = [3, 11, 19, 27]
    label = rng.random(n) < np.clip(score + 0.3 * np.isin(code, planted_codes), 0.0, 1.0)
    path = tmp_path / "codes.parquet"
    pd.DataFrame({"score": score, "label": label.astype(int), "code": code,
                  "x": rng.normal(size=n)}).to_parquet(path)
    for engine in ("numpy", "duckdb"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = cli.main(["search", str(path), "--score", "score", "--label", "label",
                               "--no-weight", "--covariates", "code,x", "--nominal", "code",
                               "--findings", "2", "--json", "--engine", engine,
                               "--sample-rows", "3000"])
        assert status == 0, engine
        first = json.loads(out.getvalue())["findings"][0]
        levels = first["description"].removeprefix("code in {").removesuffix("}")
        assert first["description"].startswith("code in {"), first["description"]
        values = [int(v.strip(' "')) for v in levels.split(",")]
        assert set(values) == set(planted_codes), values
        assert first["all_rows_size"] == int(np.isin(code, values).sum()), engine
