"""``mcviz apply --engine duckdb|spark``: the map compiled to SQL equals the in-memory apply.

The reference is the in-memory :meth:`Recalibrator.transform` (what ``mcviz apply`` writes),
for a map of every built-in method fitted on planted data; the rows scored have missing
covariates (NaN ages, missing regions) so that the SQL's missing-value rules are exercised.
Spark runs where pyspark and Java are present (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from spark_available import spark_table

from mcviz.engines.memory import resident_bytes
from mcviz.io import load_predictions
from mcviz.recalibration import Recalibrator, frame_for_scoring
from mcviz.recalibration.simulate import planted_fix_data

METHODS = {"platt": {}, "beta": {}, "isotonic": {}, "findings": {},
           "boost": {"max_rounds": 2, "trees": {"n_trees": 15}}}
COVARIATES = ["region", "age", "channel", "tenure"]


@pytest.fixture(scope="module")
def maps(tmp_path_factory):
    directory = tmp_path_factory.mktemp("apply_engines")
    frame = planted_fix_data(6000, seed=1).drop(columns="truth")
    pred = load_predictions(frame, score="score", label="label", covariates=COVARIATES)
    files = {}
    for method, options in METHODS.items():
        if method == "boost":
            pytest.importorskip("lightgbm")
        files[method] = directory / f"{method}.json"
        files[method].write_text(Recalibrator(method, **options).fit(pred).to_json())
    fresh = planted_fix_data(2500, seed=2).drop(columns=["truth", "label"])
    fresh.loc[::17, "age"] = np.nan
    fresh["region"] = fresh["region"].astype(object)
    fresh.loc[::23, "region"] = None
    fresh["row_id"] = np.arange(len(fresh))
    fresh.to_parquet(directory / "new.parquet", index=False)
    return directory, files, pd.read_parquet(directory / "new.parquet")


def in_memory(map_file, frame: pd.DataFrame) -> np.ndarray:
    """What in-memory ``mcviz apply`` writes: the map's scores in the file's row order."""
    fix = Recalibrator.from_json(map_file.read_text())
    pred = frame_for_scoring(frame, fix)
    scores = np.empty(len(frame))
    scores[pred.row] = fix.transform(pred)
    return scores


@pytest.mark.parametrize("method", list(METHODS))
def test_duckdb_apply_equals_the_in_memory_apply(cli, maps, method, tmp_path):
    directory, files, fresh = maps
    out = tmp_path / "scored.parquet"
    # --memory-limit bounds the whole process, this test worker's: 700 MB above what it holds
    limit = f"{resident_bytes() // 10**6 + 700}MB"  # (DuckDB writes Parquet in 256 MiB or more)
    run = cli("apply", files[method], directory / "new.parquet", "--out", out, "--engine",
              "duckdb", "--memory-limit", limit, "--json")
    assert run.status == 0, run.err
    written = pd.read_parquet(out)
    assert list(written.columns) == [*fresh.columns, "score_recalibrated"]
    pd.testing.assert_frame_equal(written.drop(columns="score_recalibrated"), fresh,
                                  check_dtype=False, check_categorical=False)
    reference = in_memory(files[method], fresh)
    np.testing.assert_allclose(written["score_recalibrated"], reference, rtol=0, atol=1e-9)
    data = run.json
    assert data["n"] == len(fresh)
    assert data["engine"] == "duckdb"
    assert data["mean_recalibrated"] == pytest.approx(reference.mean(), abs=1e-9)
    assert data["mean_score"] == pytest.approx(fresh["score"].mean(), abs=1e-12)


HOSTILE = "r'); DROP TABLE t; --\" x"


def test_finding_text_and_column_names_are_data(cli, tmp_path):
    """A quote in a column name and in a finding's value is bound, never spliced."""
    rng = np.random.default_rng(0)
    column = 'reg"ion`'
    frame = pd.DataFrame({"score": rng.uniform(0.05, 0.95, 400),
                          column: rng.choice([HOSTILE, "plain"], 400)})
    frame.to_parquet(tmp_path / "new.parquet", index=False)
    quoted = HOSTILE.replace('"', '\\"')
    description = f'`{column.replace("`", "``")}` == "{quoted}"'
    fix = {"method": "findings", "covariates": {column: "nominal"},
           "score_column": "score",
           "params": {"intercept": 0.1, "slope": 0.9, "terms": [
               {"description": description, "shape": "offset", "a": 1.0, "b": 0.7,
                "p_adjusted": 0.001}]}}
    saved = json.loads(Recalibrator("platt").fit(load_predictions(
        frame.assign(label=rng.integers(0, 2, 400)), score="score", label="label")).to_json())
    fix = {**saved, **fix}
    (tmp_path / "map.json").write_text(json.dumps(fix))
    out = tmp_path / "scored.parquet"
    run = cli("apply", tmp_path / "map.json", tmp_path / "new.parquet", "--out", out,
              "--engine", "duckdb", "--json")
    assert run.status == 0, run.err
    got = pd.read_parquet(out)["score_recalibrated"].to_numpy()
    z = np.log(frame["score"]) - np.log1p(-frame["score"])
    eta = 0.1 + 0.9 * z + np.where(frame[column] == HOSTILE, 0.7, 0.0)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-eta)), rtol=0, atol=1e-12)


def test_bad_scores_and_options_are_one_line_each(cli, maps, tmp_path):
    directory, files, fresh = maps
    bad = fresh.assign(score=fresh["score"].where(fresh.index % 50 != 0, 1.5))
    bad.to_parquet(tmp_path / "bad.parquet", index=False)
    out = tmp_path / "o.parquet"
    run = cli("apply", files["platt"], tmp_path / "bad.parquet", "--out", out, "--engine",
              "duckdb")
    assert run.status == 2
    assert "Traceback" not in run.err
    assert "'score'" in run.err
    assert "50 of 2,500 rows lie outside [0, 1]" in run.err
    assert not out.exists()
    run = cli("apply", files["platt"], directory / "new.parquet", "--out", out, "--engine",
              "duckdb", "--memory-limit", "lots")
    assert run.status == 2
    assert "--memory-limit 'lots' is not a size such as '2GB'" in run.err  # names the flag
    run = cli("apply", files["platt"], directory / "new.parquet", "--out", tmp_path / "o.csv",
              "--engine", "duckdb")
    assert run.status == 2
    assert ".parquet" in run.err


def test_memory_limit_reaches_duckdb(tmp_path):
    from mcviz.engines.tables import DuckDBTable

    pd.DataFrame({"x": [1.0]}).to_parquet(tmp_path / "x.parquet")
    with DuckDBTable(tmp_path / "x.parquet", memory_limit="300MB") as table:
        limit = table.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit in ("286.1 MiB", "300.0 MB", "286.1MiB")


@pytest.mark.spark
def test_spark_apply_equals_the_in_memory_apply(maps, tmp_path):
    from mcviz.cli.engine_apply import score_table
    directory, files, fresh = maps
    with spark_table(directory / "new.parquet") as table:
        for method, map_file in files.items():
            out = tmp_path / f"{method}.parquet"
            n, _, mean = score_table(table, json.loads(map_file.read_text()), "score", out,
                                     map_name=str(map_file))
            written = pd.read_parquet(out)
            assert n == len(fresh)
            assert len(written) == len(fresh)
            reference = in_memory(map_file, fresh)
            # Spark's part files need not keep the rows' order: match rows on their id
            order = written["row_id"].to_numpy()
            np.testing.assert_allclose(written["score_recalibrated"].to_numpy(),
                                       reference[order], rtol=0, atol=1e-9, err_msg=method)
            assert mean == pytest.approx(reference.mean(), abs=1e-9)
