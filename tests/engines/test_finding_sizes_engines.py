"""At scale a finding has ONE row count: every row's, on every surface (issue #44).

A search at scale runs on a sample and measures its findings on every row. Each surface that
states a finding's size or share -- ``mcviz search --engine --json`` (``size``, ``share``, the
sentence), its ``--out`` table and the Screening page's view of it, ``mcviz report --engine
--json`` (findings, verdict, next step) and the deck's slides -- must state the same count:
the finding's rows in the file, counted here by brute force (pandas on the planted group's
column, and the in-memory filter over every row of the file for each finding), never the
sample's (kept as ``sample_size``). Small data (20,000 rows, a sample of 8,000): seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz import load_predictions, parse_filter
from mcviz.subpopulations import select_rows
from mcviz.text import format_percent

pytest.importorskip("duckdb")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_find import planted

cli = pytest.importorskip("mcviz.cli")

N = 20_000
SAMPLE = 8_000
ROLES = ("--score", "score", "--label", "label", "--weight", "w", "--seed", "2", "--json")


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    frame, _ = planted(N, "level", 0.3, seed=3)
    frame.insert(2, "w", np.random.default_rng(11).uniform(0.5, 2.0, len(frame)))
    path = tmp_path_factory.mktemp("finding_sizes") / "planted.parquet"
    frame.to_parquet(path)
    return path


def _run(command, path, *options) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main([command, str(path), *ROLES, *options])
    assert status == 0, err.getvalue()
    return json.loads(out.getvalue())


def _counted(path, descriptions) -> dict[str, int]:
    """Each description's rows among every row of the file (in memory, all rows loaded)."""
    pred = load_predictions(pd.read_parquet(path), score="score", label="label", weight="w")
    return {d: int(select_rows(pred, parse_filter(d, pred)).size) for d in descriptions}


def _stated(text: str) -> set[int]:
    """Every "N rows" count a text states."""
    return {int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) rows", text)}


def _assert_search_sizes(output, path):
    findings = output["findings"]
    assert findings
    assert findings[0]["description"] == "region == r7"  # the planted group
    frame = pd.read_parquet(path)
    assert findings[0]["size"] == int((frame["region"] == "r7").sum())  # brute force
    counted = _counted(path, [f["description"] for f in findings])
    assert output["n"] == N
    assert output["size_counts"] == "all_rows"
    assert output["sample"]["rows"] == SAMPLE
    for f in findings:
        size = counted[f["description"]]
        assert f["size"] == f["all_rows_size"] == size, f["description"]
        assert f["share"] == f["all_rows_share"] == pytest.approx(size / N, abs=1e-15)
        assert f"({size:,} rows, {format_percent(size / N)} of all)" in f["sentence"]
        assert f["sample_share"] == pytest.approx(f["sample_size"] / SAMPLE, abs=1e-15)
        assert f["sample_size"] < size  # a sample of 40%: fewer members
    return counted


@pytest.mark.parametrize("engine", ["duckdb", "numpy"])
def test_search_at_scale_states_every_rows_size(planted_file, tmp_path, monkeypatch, engine):
    """The JSON's size and share, the sentence, the --out table and the Screening page's view:
    every row's count (the brute-force one), the sample's only as sample_size."""
    from dashboard.screening import table_view
    from mcviz.engines.results import read_screen

    monkeypatch.setenv("MCVIZ_DATA_ROOTS", str(tmp_path.parent))
    out = tmp_path / "found.parquet"
    output = _run("search", planted_file, "--engine", engine, "--sample-rows", str(SAMPLE),
                  "--findings", "3", "--out", str(out))
    counted = _assert_search_sizes(output, planted_file)
    screen = read_screen(out)
    assert screen.n == N
    table = screen.table
    assert int(table.loc[0, "size"]) == N  # the full population: every row
    found = table.iloc[1:]
    assert [counted[d] for d in found["description"]] == found["size"].tolist()
    assert found["share"].tolist() == pytest.approx([counted[d] / N
                                                     for d in found["description"]])
    view = table_view(screen)
    assert view.shown["rows"].tolist() == [counted[d] for d in found["description"]]
    first = counted[output["findings"][0]["description"]]
    assert f"{first:,} rows" in view.headline
    assert {label: value for label, value, _ in view.metrics}["Rows"] == f"{N:,}"


def test_report_and_deck_at_scale_state_every_rows_size(planted_file, tmp_path):
    """The report's findings (size, share, sentence), verdict and next step, and every slide of
    the deck: each finding's rows counted on every row; no surface states the sample's count."""
    pptx = pytest.importorskip("pptx")
    deck = tmp_path / "review.pptx"
    search = _run("search", planted_file, "--engine", "duckdb", "--sample-rows", str(SAMPLE))
    sample = {f["description"]: f["sample_size"] for f in search["findings"]}
    report = _run("report", planted_file, "--engine", "duckdb", "--sample-rows", str(SAMPLE),
                  "--deck", str(deck))
    assert report["n"] == N
    assert report["findings"]
    counted = _counted(planted_file, [f["description"] for f in report["findings"]])
    for f in report["findings"]:
        size = counted[f["description"]]
        assert f["size"] == size
        assert f["share"] == format_percent(size / N)
        assert f"({size:,} rows, {format_percent(size / N)} of all)" in f["sentence"]
        assert sample[f["description"]] != size
    first = counted[report["findings"][0]["description"]]
    assert f"its {first:,} rows, {format_percent(first / N)}" in report["next_step"]
    sampled = set(sample.values())
    words = " ".join([*report["verdict"], report["next_step"],
                      *(f["sentence"] for f in report["findings"])])
    assert first in _stated(words)
    assert not _stated(words) & sampled
    texts = []
    for slide in pptx.Presentation(str(deck)).slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                texts.append(shape.text_frame.text)
            if getattr(shape, "has_table", False) and shape.has_table:
                texts += [cell.text for row in shape.table.rows for cell in row.cells]
    stated = _stated(" ".join(texts))
    assert first in stated
    assert not stated & sampled, stated & sampled  # the sample's counts on no slide
