"""``mcviz compare --engine duckdb|spark``: the paired statistics computed by the engine.

Reference: the in-memory ``mcviz compare`` (numpy over the loaded rows, an independent
implementation of every sum and path). With the whole file as the groups' sample, every number
of the JSON must equal it to 1e-9 (each model's classical measures too),
the groups must be the same (descriptions and numbers), and bad input must be refused in one
line naming the column, counted on every row. Small data: a few seconds on DuckDB.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest
from spark_available import local_spark

pytest.importorskip("duckdb")
cli = pytest.importorskip("mcviz.cli")

N = 5000
ARGS = ("--score", "prod", "--score-b", "chall", "--label", "y", "--weight", "w",
        "--thresholds", "0.2,0.5", "--json")


def _frame(n=N, seed=0):
    """B worse in region r4, better in r1 (as tests/cli/test_cli_compare.py plants them)."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 6, n)
    p = rng.uniform(0.1, 0.85, n)
    age = rng.integers(18, 90, n).astype(float)
    age[rng.random(n) < 0.05] = np.nan  # missing ages: left off the path ordered by age
    return pd.DataFrame({
        "prod": np.round(p + 0.15 * (group == 1), 3),  # ties in both scores
        "chall": np.round(p + 0.15 * (group == 4), 3),
        "y": (rng.random(n) < p).astype(int), "region": [f"r{g}" for g in group],
        "age": age, "w": rng.uniform(0.5, 2.0, n)})


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("compare_engines") / "both.parquet"
    _frame().to_parquet(path)
    return path


def _run(path, *options) -> tuple[int, dict | None, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["compare", str(path), *options])
    return status, (json.loads(out.getvalue()) if status == 0 else None), err.getvalue()


def _assert_same(got, want, path=""):
    """Every key of ``want`` in ``got``, numbers to 1e-9, everything else equal."""
    if isinstance(want, dict):
        for key, value in want.items():
            _assert_same(got[key], value, f"{path}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_same(a, b, f"{path}[{k}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, float), path
        assert (np.isnan(got) and np.isnan(want)) or abs(got - want) <= 1e-9 * max(
            1.0, abs(want)), (path, got, want)
    else:
        assert got == want, (path, got, want)


def _assert_engine_equals_memory(output, reference, engine):
    assert output["engine"] == engine
    _assert_same(output["models"], reference["models"], "models")  # classical measures too
    for block in ("n", "paired", "regressions", "improvements", "net_benefit", "verdict",
                  "next_step"):
        _assert_same(output[block], reference[block], block)
    assert [p["order_by"] for p in output["paired"]["paths"]] == [
        "average score", "prod", "chall", "age"]
    assert 0 < output["paired"]["paths"][3]["n_missing"] < 0.1 * N
    assert output["regressions"][0]["description"].startswith("region == r4")
    assert output["improvements"][0]["description"].startswith("region == r1")
    assert f"confirmed by {engine} on the" in output["notice"]


@pytest.fixture
def engine_passes(monkeypatch):
    """The engine's own passes even though the sample holds every row (they are checked)."""
    import mcviz.cli.engine_compare as engine_compare

    monkeypatch.setattr(engine_compare, "IN_MEMORY_WHEN_SAMPLED_WHOLE", False)


def test_duckdb_gives_the_in_memory_comparison(data_file, engine_passes):
    status, reference, err = _run(data_file, *ARGS)
    assert status == 0, err
    status, output, err = _run(data_file, *ARGS, "--engine", "duckdb", "--sample-rows", str(N))
    assert status == 0, err
    _assert_engine_equals_memory(output, reference, "duckdb")


def test_duckdb_unweighted_gives_the_in_memory_paired_statistics(tmp_path, engine_passes):
    path = tmp_path / "unweighted.parquet"
    _frame(2000, seed=1).drop(columns="w").to_parquet(path)
    args = [a for a in ARGS if a not in ("--weight", "w")]
    status, reference, err = _run(path, *args)
    assert status == 0, err
    status, output, err = _run(path, *args, "--engine", "duckdb", "--sample-rows", "2000")
    assert status == 0, err
    for block in ("n", "models", "paired", "net_benefit", "regressions", "improvements"):
        _assert_same(output[block], reference[block], block)


def test_duckdb_on_a_table_the_sample_holds_computes_in_memory(data_file, monkeypatch):
    """Every row in the (default-sized) sample: the in-memory comparison; no engine is built,
    no row is hashed or drawn (the file is read as without --engine).

    Each stub replaces the name where the command looks it up: ``engine_compare`` binds
    ``sample_roles`` when first imported, so it is imported before the stubs (imported first
    under them, it kept the stub for every later test of the process: ``-n 2`` failed three
    tests of this file), and its own name is stubbed (the stub of ``engine_options`` alone
    never reached the comparison once the module was imported)."""
    import mcviz.cli.engine_compare as engine_compare
    import mcviz.cli.engine_options as engine_options
    import mcviz.cli.screen as screen

    def no_pass(*args, **kwargs):
        raise AssertionError("the engine worked on a table the sample holds whole")

    status, reference, err = _run(data_file, *ARGS, "--nominal", "age")
    assert status == 0, err
    for module, name in ((screen, "make_engine"), (screen, "read_sample_interruptible"),
                         (engine_options, "sample_roles"), (engine_compare, "sample_roles")):
        monkeypatch.setattr(module, name, no_pass)
    status, output, err = _run(data_file, *ARGS, "--nominal", "age", "--engine", "duckdb")
    assert status == 0, err
    assert output.pop("engine") == "duckdb"
    notice, before = output.pop("notice"), reference.pop("notice")
    assert notice.startswith(f"{before} All {N:,} rows fit in the sample (up to ")
    assert notice.endswith(" rows), so they were read into memory and every number was "
                           "computed there, as without --engine.")
    _assert_same(output, reference)
    assert output.keys() == reference.keys()
    # --nominal reaches the engine's sample: age (integers) is a level set, not an order
    assert [p["order_by"] for p in output["paired"]["paths"]] == [
        "average score", "prod", "chall"]


@pytest.mark.parametrize("whole", [True, False], ids=["in_memory", "engine"])
def test_duckdb_refuses_bad_input_in_one_line(data_file, tmp_path, monkeypatch, whole):
    import mcviz.cli.engine_compare as engine_compare

    monkeypatch.setattr(engine_compare, "IN_MEMORY_WHEN_SAMPLED_WHOLE", whole)
    frame = _frame()
    frame.loc[[3, 77, 1200], "chall"] = [1.5, np.nan, -0.1]
    bad = tmp_path / "bad.parquet"
    frame.to_parquet(bad)
    status, _, err = _run(bad, *ARGS, "--engine", "duckdb")
    assert status == 2
    assert "column 'chall': 3 of 5,000 rows are missing or outside [0, 1]" in err  # all rows
    assert ("(rows 3, 77, 1200)" in err) == whole  # memory names them; the engine counts
    assert "Traceback" not in err
    for extra, flag in ((("--deck", str(tmp_path / "d.pptx")), "--deck"),
                        (("--score-b", "region"), "must be numbers"),
                        (("--score-b", "nope"), "no such column")):
        args = list(ARGS)
        if extra[0] == "--score-b":
            args[args.index("--score-b") + 1] = extra[1]
            extra = ()
        status, _, err = _run(data_file, *args, *extra, "--engine", "duckdb")
        assert status == 2
        assert flag in err, err
        assert err.count("\n") == 1, err


def _held_out_reference(path, sample_rows: int, names: list[str]):
    """The groups' held-out numbers over every row but the sample's search rows, in memory.

    The sample is drawn again as the CLI draws it (seed 0); its comparison's search names the
    groups and the rows it looked at; the rest of the file is loaded as the search's rows
    (score = the average score, response = it + the Brier difference, both on the 2^-30 grid)
    and measured by the library in memory (multicalibration: eq. (6) with the pooled floor of
    these rows), with Holm and the intervals written out here.
    """
    from mcviz import multicalibration, parse_filter
    from mcviz.compare import compare_models
    from mcviz.engines.duckdb_engine import read_sample
    from mcviz.engines.holdout import ROW_KEY
    from mcviz.io import load_predictions
    from mcviz.stats.cumulative import brownian_range_sf
    from mcviz.subpopulations import Subpopulation, select_rows

    sample = read_sample([str(path)], sample_rows, 0, keys=True)
    rows = sample[ROW_KEY].to_numpy()
    sample = sample.drop(columns=[c for c in sample.columns if c.startswith("__mcviz")])
    spred = load_predictions(sample, score="prod", label="y", weight="w",
                             covariates=["chall", *names], drop_invalid=True)
    found = compare_models(spred, "chall", covariates=names, thresholds=[0.2, 0.5])
    grid = 2.0**-30

    def search_rows(a, b, y, w, covariates):
        """The search's rows: score = the average score, response = it + the difference."""
        average = np.round((a + b) / 2.0 / grid) * grid
        difference = np.round(((b - y) ** 2 - (a - y) ** 2) / grid) * grid
        table = covariates.copy()
        table["avg"], table["resp"], table["w"] = average, average + difference, w
        return load_predictions(table, score="avg", label="resp", weight="w",
                                covariates=names, response="continuous")

    searched = search_rows(spred.score, np.asarray(spred.covariates["chall"], dtype=float),
                           spred.label, spred.weight, spred.covariates[names])
    looked = np.ones(searched.n, dtype=bool)
    looked[found.search.holdout_index] = False  # the search's split, in its rows' order
    frame = pd.read_parquet(path)
    held = frame.drop(index=rows[spred.row[searched.row[looked]]]).reset_index(drop=True)
    pred = search_rows(held["prod"].to_numpy(), held["chall"].to_numpy(),
                       held["y"].to_numpy(float), held["w"].to_numpy(), held[names])
    groups = [f.description for f in found.search.findings]
    subs = [Subpopulation(k, len(parse_filter(g, pred)), parse_filter(g, pred), g,
                          np.asarray(select_rows(pred, parse_filter(g, pred))))
            for k, g in enumerate(groups, start=1)]
    z = multicalibration(pred, subs).kuiper_z[1:]
    p = np.array([float(brownian_range_sf(v)) for v in z])
    rank = np.argsort(p)  # Holm, written out
    steps = np.maximum.accumulate(np.minimum(1.0, (p.size - np.arange(p.size)) * p[rank]))
    adjusted = np.empty(p.size)
    adjusted[rank] = steps
    out = {}
    for k, sub in enumerate(subs):
        m = sub.index
        w, d = pred.weight[m], pred.label[m] - pred.score[m]
        mean = float(w @ d / w.sum())
        se = np.sqrt(np.sum(w**2 * (d - mean) ** 2) / w.sum() ** 2 * d.size / (d.size - 1))
        out[groups[k]] = {"holdout_size": int(m.size), "kuiper_z": float(z[k]),
                          "p_value": float(p[k]), "p_adjusted": float(adjusted[k]),
                          "effect": mean, "ci_low": mean - 1.959963984540054 * se,
                          "ci_high": mean + 1.959963984540054 * se}
    return out, held.shape[0]


def test_duckdb_confirms_the_groups_on_every_row_not_searched(data_file, monkeypatch):
    import mcviz.compare.groups_at_scale as at_scale

    monkeypatch.setattr(at_scale, "BATCH_ROWS", 333)  # tie runs (3-digit scores) cross batches
    names = ["region", "age"]
    status, output, err = _run(data_file, *ARGS, "--engine", "duckdb", "--sample-rows", "3000",
                               "--covariates", ",".join(names))
    assert status == 0, err
    reference, n_held = _held_out_reference(data_file, 3000, names)
    assert n_held == N - 2100
    assert f"confirmed by duckdb on the {n_held:,} rows not searched" in output["notice"]
    groups = output["regressions"] + output["improvements"]
    assert groups and output["regressions"][0]["description"].startswith("region == r4")
    for group in groups:
        want = reference[group["description"]]
        for key, value in want.items():
            assert abs(group[key] - value) <= 1e-9 * max(1.0, abs(value)), (
                group["description"], key, group[key], value)
        assert group["holdout_size"] > 0.3 * group["size"]  # more than the sample's held-out


@pytest.mark.spark
def test_spark_gives_the_in_memory_paired_statistics(data_file, monkeypatch):
    """The library on Spark (one local session): sums and every ordered path. The groups'
    held-out rows reach the driver through files (``holdout.local_sorted_batches``), never
    through ``toLocalIterator`` (the JVM's heap)."""
    from mcviz.compare import compare_models
    from mcviz.compare.at_scale import compare_on_engine
    from mcviz.compare.groups_at_scale import confirm_groups, searched_rows
    from mcviz.engines.base import Columns
    from mcviz.engines.spark_engine import SparkEngine
    from mcviz.io import load_predictions

    status, reference, err = _run(data_file, *ARGS)
    assert status == 0, err
    with local_spark() as session:
        frames = type(session.range(1))

        def refused(self, prefetchPartitions=False):
            raise AssertionError("a local master's sorted rows went through the JVM's heap")

        monkeypatch.setattr(frames, "toLocalIterator", refused)
        engine = SparkEngine(data_file, Columns("prod", "y", "w"), spark=session,
                             partition_rows=1000)  # several range partitions to chain
        output = compare_on_engine(engine, score_b="chall", orders=["age"],
                                   thresholds=[0.2, 0.5])
        # the groups confirmed by Spark on the rows the in-memory search held out
        frame = pd.read_parquet(data_file)
        pred = load_predictions(frame, score="prod", label="y", weight="w",
                                covariates=["chall", "region", "age"])
        found = compare_models(pred, "chall", covariates=["region", "age"],
                               thresholds=[0.2, 0.5])
        searched, looked = searched_rows(found, pred, "chall", ["region", "age"])
        keys = np.column_stack((np.zeros(int(looked.sum()), dtype=np.int64), pred.row[looked]))
        regressions, improvements, n_held = confirm_groups(
            engine, found, score_b="chall", searched=searched, keys=keys, n=N)[:3]
    assert n_held == N - int(looked.sum()) and regressions and improvements
    for got, want in ((regressions, found.regressions), (improvements, found.improvements)):
        _assert_same([f.as_json() for f in got], [f.as_json() for f in want])
    for block in ("n", "paired", "net_benefit"):
        _assert_same(output[block], reference[block], block)
    for model in ("a", "b"):
        _assert_same(output["models"][model]["calibration"],
                     reference["models"][model]["calibration"])


def test_duckdb_says_how_many_rows_were_not_searched_when_nothing_was_found(tmp_path):
    """No group found on the sample: the notice keeps the search's reason and counts the
    rows not searched (it said "confirmed ... on the 0 rows not searched")."""
    rng = np.random.default_rng(4)
    n = 3000
    a = rng.uniform(0.1, 0.9, n)
    frame = pd.DataFrame({"prod": a, "chall": np.clip(a + rng.normal(0, 0.01, n), 0, 1),
                          "y": (rng.random(n) < a).astype(int),
                          "region": rng.choice(["r1", "r2", "r3"], n)})
    path = tmp_path / "noise.parquet"
    frame.to_parquet(path)
    status, output, err = _run(path, "--score", "prod", "--score-b", "chall", "--label", "y",
                               "--no-weight", "--json", "--engine", "duckdb",
                               "--sample-rows", "2000")
    assert status == 0, err
    assert output["regressions"] == output["improvements"] == []
    assert "Search: 0 of the 6 findings asked for" in output["notice"], output["notice"]
    assert "confirmed by duckdb on the 1,600 rows not searched" in output["notice"]


@pytest.mark.spark
def test_spark_measures_the_classical_before_the_groups_held_out_pass(data_file, monkeypatch):
    """``mcviz compare --engine spark`` measures A's and B's classical measures before the
    groups' held-out pass (522eb49): that pass's Python workers stay resident for about a
    minute after it, and the classical runs' Arrow results peak in the driver; the two together
    took a 10^7-row comparison at 2GB to 2,330 MB. The calls' order, recorded by wrappers, on a
    sample that finds a group (so that the held-out pass runs)."""
    import mcviz.cli.engine_compare as engine_compare
    import mcviz.cli.screen as screen
    import mcviz.compare.groups_at_scale as groups
    from mcviz.engines.spark_engine import SparkEngine

    calls = []
    classical, exclude = engine_compare._classical, groups.exclude_rows

    def classical_spy(*args, **kwargs):
        calls.append("classical")
        return classical(*args, **kwargs)

    def exclude_spy(*args, **kwargs):
        calls.append("held-out pass")
        return exclude(*args, **kwargs)

    monkeypatch.setattr(engine_compare, "_classical", classical_spy)
    monkeypatch.setattr(groups, "exclude_rows", exclude_spy)
    with local_spark() as session:
        monkeypatch.setattr(screen, "make_engine", lambda name, files, columns, **_: SparkEngine(
            files, columns, spark=session))  # the shared session, not a JVM of its own
        status, output, err = _run(data_file, *ARGS, "--engine", "spark", "--sample-rows",
                                   "3000", "--covariates", "region,age")
    assert status == 0, err
    assert output["regressions"][0]["description"].startswith("region == r4")
    assert calls == ["classical", "held-out pass"]
