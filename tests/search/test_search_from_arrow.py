"""The search on a Parquet file read through Arrow (no pandas) finds exactly what it finds
through the pandas loader.

``mcviz search FILE --score S --label L`` loads a Parquet file with
:func:`mcviz.io.arrow_path.parquet_predictions` and prepares its covariates from the Arrow
columns (:meth:`mcviz.io.Predictions.covariate_columns`); the guided search, its conditions,
members, held-out p-values and sentences must be those of the loader's DataFrame, on a file that
mixes every kind the path reads: categoricals with unused and missing levels, text (one column
with more levels than the search takes), booleans with and without missing values, integers,
reals with NaN, tied scores.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz import load_predictions, search_subpopulations
from mcviz.cli import main
from mcviz.io import arrow_path
from mcviz.io.arrow_path import parquet_predictions
from mcviz.search._columns import prepare_columns
from mcviz.search.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
N = 12_000
LEVEL_CAP = 1_000
"""The search's level cap in these tests (RULES has 100,000; a 12,000-row file cannot pass it):
the rule that leaves a column out must read the same through either loader."""


@pytest.fixture(autouse=True)
def _level_cap(monkeypatch):
    capped = dataclasses.replace(RULES, max_levels=LEVEL_CAP)
    monkeypatch.setattr("mcviz.search._columns.RULES", capped)
    monkeypatch.setattr("mcviz.search._find.RULES", capped)


def _mixed(seed: int, *, ties: bool = True) -> pd.DataFrame:
    """A planted miscalibration described by a categorical, a boolean and a real with NaN."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.05, 0.95, N)
    if ties:
        score = np.round(score, 2)
    region = np.array(["north", "south", "east", "west"])[rng.integers(0, 4, N)]
    flag = rng.random(N) < 0.5
    bmi = np.where(rng.random(N) < 0.08, np.nan, rng.normal(27, 4, N))
    planted = (region == "east") & flag & ~(bmi < 24)  # NaN bmi is in (missing sorts last)
    label = (rng.random(N) < np.clip(score + 0.25 * planted, 0, 1)).astype(np.int64)
    words = np.array(["Zoë", "zoe", "Émile", "b b", ""], dtype=object)[rng.integers(0, 5, N)]
    return pd.DataFrame({
        "score": score,
        "label": label,
        "region": pd.Categorical(np.where(rng.random(N) < 0.03, None, region),
                                 categories=["west", "unused", "south", "north", "east"]),
        "flag": flag,
        "flag_gaps": np.where(rng.random(N) < 0.1, None, rng.random(N) < 0.3).astype(object),
        "visits": rng.integers(0, 6, N),
        "bmi": bmi,
        "name": np.where(rng.random(N) < 0.05, None, words),
        "code": np.array([f"u{i}" for i in rng.integers(0, LEVEL_CAP + 200, N)],
                         dtype=object),
    })


def _same_results(fast, slow) -> None:
    assert fast.covariates == slow.covariates
    assert fast.notice == slow.notice
    assert (fast.n, fast.n_search, fast.n_holdout) == (slow.n, slow.n_search, slow.n_holdout)
    assert fast.candidates_scored == slow.candidates_scored
    assert np.array_equal(fast.mde.shift, slow.mde.shift)
    assert len(fast.findings) == len(slow.findings)
    for a, b in zip(fast.findings, slow.findings, strict=True):
        assert a.description == b.description
        assert a.sentence == b.sentence
        assert a.subpopulation.conditions == b.subpopulation.conditions
        assert np.array_equal(a.subpopulation.index, b.subpopulation.index)
        for field in ("size", "share", "kuiper_z", "search_kuiper_z", "holdout_size",
                      "holdout_kuiper_z", "observed_expected",
                      "p_value", "p_adjusted", "mean_residual", "ci_low", "ci_high",
                      "confirmed"):
            assert getattr(a, field) == getattr(b, field) or (
                np.isnan(getattr(a, field)) and np.isnan(getattr(b, field))), field


@pytest.mark.parametrize("seed", [0, 1])
def test_the_search_finds_the_same_through_either_loader(tmp_path, seed):
    path = tmp_path / "mixed.parquet"
    _mixed(seed).to_parquet(path, row_group_size=5_000)  # several chunks per column
    fast = parquet_predictions(path, score="score", label="label", hold_covariates=True)
    assert fast is not None
    slow = load_predictions(path, score="score", label="label")
    assert fast.covariate_kinds == slow.covariate_kinds
    found = search_subpopulations(fast, max_conditions=3, n_findings=4)
    _same_results(found, search_subpopulations(slow, max_conditions=3, n_findings=4))
    # what the comparison covers: a finding on the planted conjunction, the level rule
    assert any("region" in f.description and "flag" in f.description for f in found.findings)
    assert "'code'" in found.notice
    assert f"more than {LEVEL_CAP:,} levels" in found.notice


def test_the_search_prepares_the_same_columns_from_arrow(tmp_path):
    """Codes, levels and their order, keys, cut points, missing handling, kinds, left out."""
    path = tmp_path / "mixed.parquet"
    _mixed(4).to_parquet(path, row_group_size=5_000)
    fast = parquet_predictions(path, score="score", label="label", hold_covariates=True)
    slow = load_predictions(path, score="score", label="label")
    names = list(slow.covariates.columns)
    rows = np.arange(0, N, 3)
    columns, left_out = prepare_columns(fast, names, rows)
    expected, expected_out = prepare_columns(slow, names, rows)
    assert left_out == expected_out
    assert [name for name, _ in left_out] == ["code"]
    assert [c.name for c in columns] == [c.name for c in expected]
    for a, b in zip(columns, expected, strict=True):
        assert (a.kind, a.n_codes, a.levels, a.has_missing, a.is_datetime, a.is_score) == (
            b.kind, b.n_codes, b.levels, b.has_missing, b.is_datetime, b.is_score), a.name
        assert a.codes.dtype == b.codes.dtype
        assert np.array_equal(a.codes, b.codes), a.name
        for field in ("keys", "edges"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None) == (y is None)
            assert x is None or np.array_equal(x, y, equal_nan=True), (a.name, field)
    kinds = {c.name: (c.kind, c.levels) for c in columns}
    assert kinds["region"] == ("nominal", ("west", "unused", "south", "north", "east"))
    assert kinds["flag"] == ("nominal", (False, True))
    assert kinds["flag_gaps"] == ("nominal", ("False", "True"))  # objects: text categories
    assert kinds["name"] == ("nominal", ("", "Zoë", "b b", "zoe", "Émile"))


def _search_output(command: list[str], capsys) -> str:
    assert main(command) == 0
    out = capsys.readouterr().out
    if command[-1] == "--json":
        output = json.loads(out)
        del output["search"]["seconds"]
        return json.dumps(output)
    return "\n".join(line for line in out.splitlines() if not line.startswith("  seconds"))


@pytest.mark.parametrize("json_output", [False, True])
def test_mcviz_search_prints_the_same_with_either_loader(tmp_path, capsys, monkeypatch,
                                                         json_output):
    path = tmp_path / "mixed.parquet"
    _mixed(2).to_parquet(path, row_group_size=5_000)
    command = ["search", str(path), "--score", "score", "--label", "label", "--findings", "3",
               *(["--json"] if json_output else [])]
    assert parquet_predictions(path, score="score", label="label") is not None  # it answers
    fast = _search_output(command, capsys)
    monkeypatch.setattr(arrow_path, "parquet_predictions", lambda *a, **k: None)
    assert fast == _search_output(command, capsys)


def test_mcviz_search_on_parquet_imports_no_pandas(tmp_path):
    """Categoricals, text, booleans and numbers, untied scores: pandas is never imported."""
    path = tmp_path / "mixed.parquet"
    _mixed(3, ties=False).to_parquet(path)
    code = textwrap.dedent(f"""
        import sys, contextlib, io, json
        import mcviz.cli
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = mcviz.cli.main(["search", {str(path)!r}, "--score", "score", "--label",
                                   "label", "--findings", "2", "--json"])
        found = json.loads(out.getvalue())["findings"]
        print(code, len(found), sorted(m for m in sys.modules
                                       if m.split(".")[0] in ("pandas", "scipy")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() in ("0 2 []", "0 1 []"), out.stdout + out.stderr


@pytest.mark.parametrize("change", ["no_label", "text_score", "nan_label", "unknown_covariate"])
def test_bad_parquet_input_keeps_the_loaders_message(tmp_path, capsys, monkeypatch, change):
    """A missing column, a text score, a missing label, an unknown covariate: one line naming it."""
    frame = _mixed(5, ties=False)
    arguments = []
    if change == "no_label":
        frame = frame.drop(columns="label")
        named = "label"
    elif change == "text_score":
        frame["score"] = np.where(frame["score"] > 0.5, "high", "low")
        named = "score"
    elif change == "nan_label":
        frame["label"] = np.where(np.arange(N) == 7, np.nan, frame["label"])
        named = "label"
    else:
        arguments, named = ["--covariates", "region,nowhere"], "nowhere"
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    command = ["search", str(path), "--score", "score", "--label", "label", *arguments]
    messages = []
    for answer in (True, False):
        if not answer:
            monkeypatch.setattr(arrow_path, "parquet_predictions", lambda *a, **k: None)
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("mcviz: error: ")
        assert "Traceback" not in err
        assert repr(named) in err or f"'{named}'" in err, err
        messages.append(err)
    assert messages[0] == messages[1]
