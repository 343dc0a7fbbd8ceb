"""Screening tables on disk (mcviz.engines.results): context round trip and drill-down."""

from __future__ import annotations

import contextlib
import io
import json

import duckdb  # noqa: F401 - a test requirement (the engines read Parquet with it)
import pandas as pd
import pytest
from test_engines import make_frame

from mcviz.cli import main
from mcviz.engines.results import load_subpopulation, read_screen
from mcviz.errors import ValidationError
from mcviz.stats.cumulative import cumulative_differences


@pytest.fixture(scope="module")
def screened(tmp_path_factory):
    directory = tmp_path_factory.mktemp("screen")
    data = directory / "data.parquet"
    make_frame(4000, seed=2).to_parquet(data, row_group_size=500)
    out = directory / "screen.parquet"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["screen", str(data), "--score", "score", "--label", "label", "--weight",
                 "weight", "--engine", "duckdb", "--subpopulations", "40", "--sample-rows",
                 "3000", "--seed", "1", "--out", str(out), "--json"])
    assert status == 0
    return data, out, json.loads(printed.getvalue())


def test_the_table_carries_its_context(screened):
    data, out, summary = screened
    screen = read_screen(out)
    assert screen.files == (str(data.resolve()),)
    assert (screen.columns.score, screen.columns.label, screen.columns.weight) == (
        "score", "label", "weight")
    assert screen.kinds["cat"] == "nominal"
    assert screen.kinds["x2"] == "ordinal"
    assert screen.metric == summary["metric"]
    assert screen.table["description"].iloc[screen.argmax] == summary["argmax"]["description"]
    assert read_screen(out.read_bytes()).metric == screen.metric  # an upload's bytes


def test_drill_down_loads_exactly_the_screened_rows(screened):
    data, out, _ = screened
    screen = read_screen(out)
    deep = int(screen.table["depth"].idxmax())
    for row in (0, screen.argmax, deep):
        pred = load_subpopulation(screen, row, roots=[data.parent])
        expected = screen.table.iloc[row]
        assert pred.n == expected["size"]
        assert pred.weight_total == pytest.approx(expected["weight_total"], rel=1e-12)
        result = cumulative_differences(pred)  # exact mode: the same D_k and σ_k
        assert result.kuiper == pytest.approx(expected["kuiper"], abs=1e-12)
        assert result.sigma == pytest.approx(expected["sigma"], abs=1e-12)


def test_plain_parquet_and_moved_data_are_messages(screened, tmp_path):
    _, out, _ = screened
    plain = tmp_path / "plain.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(plain)
    with pytest.raises(ValidationError, match="no mcviz screening context"):
        read_screen(plain)
    with pytest.raises(ValidationError, match="not a screening table"):
        read_screen(b"not parquet at all")
    moved = tmp_path / "moved.parquet"
    moved.write_bytes(out.read_bytes())
    screen = read_screen(moved)
    gone = tmp_path / "gone.parquet"
    screen = type(screen)(**{**{f: getattr(screen, f) for f in screen.__slots__},
                             "files": (str(gone),)})
    with pytest.raises(ValidationError, match="not on this machine"):
        load_subpopulation(screen, 1, roots=[tmp_path])


def test_every_kind_is_checked_when_read(screened, tmp_path):
    from dataclasses import asdict

    from mcviz.engines.results import KIND_COLUMNS, write_results

    screen = read_screen(screened[1])
    assert screen.kind == "screen"
    where = {"files": screen.files, "columns": screen.columns, "kinds": screen.kinds,
             "engine": "duckdb", "n": screen.n}
    for kind, required in KIND_COLUMNS.items():
        frame = pd.DataFrame({c: ["full population"] if c == "description" else [0.0]
                              for c in required})
        fields = {"exact": True, "metric": 1.0, "metric_bound": None, "argmax": 0}
        write_results(frame, tmp_path / "ok.parquet", kind=kind, **where,
                      screen=fields if kind == "screen" else None)
        assert read_screen(tmp_path / "ok.parquet").kind == kind
        write_results(frame.drop(columns=[required[-1]]), tmp_path / "bad.parquet", kind=kind,
                      **where, screen=fields if kind == "screen" else None)
        with pytest.raises(ValidationError, match=f"the {kind} table lacks the column"):
            read_screen(tmp_path / "bad.parquet")
    write_results(frame, tmp_path / "odd.parquet", kind="<script>", **where)
    with pytest.raises(ValidationError, match="is not one of screen, search, monitor"):
        read_screen(tmp_path / "odd.parquet")
    assert asdict(read_screen(tmp_path / "ok.parquet").columns) == asdict(screen.columns)
