"""``mcviz report --engine duckdb``: the verdict from every row, with the numbers of the
other engine commands.

* every row sampled: the report equals the in-memory ``mcviz report`` (verdict, details, next
  step, findings to 1e-9), except the headline's score band of the largest gap, which needs
  the path (not kept at scale);
* a smaller sample: the calibration is ``mcviz metrics --engine duckdb``'s calibration block
  (to 1e-9) and the findings are ``mcviz search --engine duckdb``'s (the same sample, search
  and held-out rows);
* the sample would hold every row (the default size here): the in-memory report itself, its
  ``--deck`` the same deck as without ``--engine``, and no engine pass;
* ``--deck`` with an engine on a sample smaller than the table: the full population's charts
  are the in-memory ones of every row (drawn from DuckDB's sums per distinct score), each
  confirmed finding's those of its own rows (read with its WHERE), or its slide says why not.

Small data (8,000 rows): a few seconds each.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("duckdb")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_find import planted

cli = pytest.importorskip("mcviz.cli")

N = 8000
ROLES = ("--score", "score", "--label", "label", "--weight", "w")


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    frame, _ = planted(N, "level", 0.3, seed=3)
    frame.insert(2, "w", np.random.default_rng(11).uniform(0.5, 2.0, len(frame)))
    path = tmp_path_factory.mktemp("report_engines") / "planted.parquet"
    frame.to_parquet(path)
    return path


def _run(command, path, *options, status=0) -> dict | str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([command, str(path), *ROLES, "--json", *options])
    assert code == status, err.getvalue()
    return json.loads(out.getvalue()) if status == 0 else err.getvalue()


def _close(a, b) -> bool:
    if a is None or b is None or isinstance(a, str):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


@pytest.fixture
def engine_passes(monkeypatch):
    """The engine's own numbers even though the sample holds every row (they are checked)."""
    import mcviz.cli.report as report

    monkeypatch.setattr(report, "IN_MEMORY_WHEN_SAMPLED_WHOLE", False)


def test_every_row_sampled_gives_the_in_memory_report(planted_file, engine_passes):
    options = ("--findings", "3", "--seed", "2")
    memory = _run("report", planted_file, *options)
    scale = _run("report", planted_file, *options, "--engine", "duckdb", "--sample-rows", str(N))
    assert scale["n"] == memory["n"] == N
    assert memory["verdict"][0].startswith(scale["verdict"][0][:-1])  # less the gap's band
    assert "the largest gap is where" in memory["verdict"][0]
    assert "the largest gap" not in scale["verdict"][0]
    for key in ("next_step", "details", "appendix"):
        assert scale[key] == memory[key], key
    assert scale["verdict"][1:] == memory["verdict"][1:]
    assert [f["description"] for f in scale["findings"]] == [
        f["description"] for f in memory["findings"]]
    assert scale["findings"][0]["description"] == "region == r7"  # the planted group
    for got, want in zip(scale["findings"], memory["findings"], strict=True):
        for key, value in want.items():
            assert _close(got[key], value), (key, got[key], value)
    assert scale["deck"] == []
    assert scale["slides"] == 0


def test_the_report_at_scale_has_the_numbers_of_metrics_and_search(planted_file):
    options = ("--findings", "3", "--seed", "2", "--engine", "duckdb", "--sample-rows", "3000")
    report = _run("report", planted_file, *options)
    search = _run("search", planted_file, *options)
    metrics = _run("metrics", planted_file, "--engine", "duckdb")
    for key in ("kuiper", "sigma", "kuiper_z", "p_value"):
        assert _close(report["calibration"][key], metrics["calibration"][key]), key
    assert report["n"] == metrics["n"] == N
    assert report["held_out"] == search["held_out"] == {"engine": "duckdb", "rows": N - 2100}
    confirmed = [f for f in search["findings"] if f["confirmed"]]  # the verdict's findings
    assert confirmed, "the planted group is confirmed"
    assert len(confirmed) < len(search["findings"])  # and the rule tells them apart
    assert [f["description"] for f in report["findings"]] == [
        f["description"] for f in confirmed]
    for got, want in zip(report["findings"], confirmed, strict=True):
        assert got["effect_value"] == want["mean_residual"]
        assert (got["ci_low"], got["ci_high"]) == (want["ci_low"], want["ci_high"])
        assert got["sentence"] == want["sentence"]
    assert f"{N - 2100:,} held-out rows" in " ".join(report["details"])


def _chart_numbers(path) -> dict:
    """Each native chart's series by slide kind and chart title: [(name, x, y), ...]."""
    from pptx import Presentation

    drawn: dict = {}
    for slide in Presentation(str(path)).slides:
        head = next(s.text_frame.text for s in slide.shapes if s.has_text_frame)
        for shape in slide.shapes:
            if not getattr(shape, "has_chart", False):
                continue
            chart = shape.chart
            title = chart.chart_title.text_frame.text
            where = "full" if head.startswith("The full population") else head.split(":")[0]
            drawn[(where, title)] = [
                (s.name, [float(v.text) for v in s._element.xpath("./c:xVal//c:v")]
                 or [v.text for v in s._element.xpath("./c:cat//c:v")],
                 [float(v.text) for v in s._element.xpath("./c:yVal//c:v | ./c:val//c:v")])
                for s in chart.plots[0].series]
    return drawn


def _same_series(got: list, chart) -> None:
    """The drawn series hold the chart's numbers to 1e-9 (pieces of one name in order)."""
    assert sorted(name for name, _, _ in got) == sorted(s.name for s in chart.series)
    for name in {s.name for s in chart.series}:
        pieces = [(x, y) for n, x, y in got if n == name]
        wanted = [(s.x, s.y) for s in chart.series if s.name == name]
        for (x, y), (want_x, want_y) in zip(pieces, wanted, strict=True):
            np.testing.assert_allclose(x, want_x, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(y, want_y, rtol=1e-9, atol=1e-12)


def _slide_texts(path) -> list[str]:
    from pptx import Presentation

    return [shape.text_frame.text for slide in Presentation(str(path)).slides
            for shape in slide.shapes if shape.has_text_frame]


def test_a_deck_at_scale_draws_every_row(planted_file, tmp_path):
    """A sample of 3,000 of the 8,000 rows: the full population's charts are those of the
    8,000 rows in memory (its cumulative differences, reliability and LCS: every drawn number
    to 1e-9, from DuckDB's sums per distinct score), and the confirmed finding's are those the
    in-memory deck draws for it: its deviation from the full population (paper 003, from its
    runs beside every row's), its reliability and share of rows per score bin beside the full
    population's, its curves, own calibration and LCS (its rows, read with its WHERE) — the
    same titles, legends and numbers to 1e-9."""
    pytest.importorskip("pptx")
    import pandas as pd

    from mcviz.io import load_predictions
    from mcviz.present.deck import finding_variable, scope_charts
    from mcviz.present.review import review_results
    from mcviz.present.slide_charts import review_charts
    from mcviz.subpopulations.filters import filter_subpopulation

    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--findings", "3", "--seed", "2", "--engine",
                  "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out))
    assert report["deck"] == [str(out)]
    assert report["slides"] > 5
    assert "drawn by duckdb exactly, from the rows summed per distinct score" in report["notice"]
    assert ("the deviation from the full population of 1 of 1 findings from every row: 1 "
            "exactly, from the rows summed per distinct score; their other charts from their "
            "own rows, read by duckdb, for 1 of them.") in report["notice"]
    drawn = _chart_numbers(out)
    frame = pd.read_parquet(planted_file)
    pred = load_predictions(frame, score="score", label="label", weight="w")
    full = scope_charts(review_results(pred, None, variable=None, bins=(10,)))
    # (the curves along age, the first covariate: test_..._along_a_numeric_variable)
    assert [c.title for c in full] == [t for (w, t) in drawn if w == "full"
                                       and not t.endswith(" along age")]
    for chart in full:
        _same_series(drawn[("full", chart.title)], chart)
    assert report["findings"][0]["description"] == "region == r7"
    covariates = [c for c in frame.columns if c not in ("score", "label", "w")]
    everyone = load_predictions(frame, score="score", label="label", weight="w",
                                covariates=covariates)
    sub = filter_subpopulation(everyone, "region == r7")
    mine = review_charts(review_results(everyone, sub, bins=(10,), variable=finding_variable(
        sub, covariates, covariates[0])))
    assert [c.title for c in mine] == [t for (w, t) in drawn if w == "Finding 1"]
    assert mine[0].title == "Deviation from the full population"
    for chart in mine:
        if chart.kind == "xy":
            _same_series(drawn[("Finding 1", chart.title)], chart)
        else:  # the shares of rows per score bin: the finding's beside the full population's
            got = drawn[("Finding 1", chart.title)]
            assert [name for name, _, _ in got] == [s.name for s in chart.series]
            for (_, _, values), series in zip(got, chart.series, strict=True):
                np.testing.assert_allclose(values, series.y, rtol=1e-9, atol=1e-12)
    said = " ".join(_slide_texts(out))
    rows = int((frame["region"] == "r7").sum())
    assert ("Its deviation from the full population: from every row, exactly. Its other "
            f"charts: from its {rows:,} rows.") in said


def test_a_deck_at_scale_from_fine_score_bins_states_its_bounds(planted_file, tmp_path,
                                                                monkeypatch):
    """More distinct scores than the engine may return (the limit set to 2,000): the full
    population's path is drawn at the fine bins' ends, each of its points one of the 8,000
    rows' own path points, and the notice states the bounds."""
    pytest.importorskip("pptx")
    import pandas as pd

    import mcviz.settings as settings
    from mcviz.io import load_predictions
    from mcviz.stats.cumulative import cumulative_differences

    monkeypatch.setattr(settings, "ENGINE_SCORE_RUNS", 2_000)
    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--findings", "3", "--seed", "2", "--engine",
                  "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out))
    assert "from the rows summed in 2,000 fine score bins (the drawn path within" in (
        report["notice"])
    frame = pd.read_parquet(planted_file)
    rows = cumulative_differences(load_predictions(frame, score="score", label="label",
                                                   weight="w"))
    (name, x, y), *_ = _chart_numbers(out)[("full", "Cumulative differences")]
    assert name == "observed − predicted, summed"
    assert 10 < len(x) < rows.x.size  # fewer points than the rows' path: the bins' ends
    at = np.searchsorted(rows.x, np.asarray(x) - 1e-12)
    np.testing.assert_allclose(rows.x[at], x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rows.path[at], y, rtol=1e-9, atol=1e-12)
    # the finding (fewer distinct scores than the limit): its deviation exact, every row
    # summed between its scores
    from mcviz.present.slide_charts import cumulative_chart
    from mcviz.stats.deviation import subpopulation_deviation
    from mcviz.subpopulations.filters import filter_subpopulation

    assert ("1 exactly, from its rows summed per distinct score and every row summed between "
            "them") in report["notice"]
    everyone = load_predictions(frame, score="score", label="label", weight="w",
                                covariates=["region"])
    sub = filter_subpopulation(everyone, "region == r7")
    want = cumulative_chart(subpopulation_deviation(everyone, sub.index), deviation=True)
    _same_series(_chart_numbers(out)[("Finding 1", want.title)], want)


@pytest.mark.parametrize("held", [True, False], ids=["budget-holds", "budget-short"])
def test_a_finding_above_the_engine_s_runs_is_exact_when_the_budget_holds_it(
        planted_file, tmp_path, monkeypatch, held):
    """The engine's limit set to 100 runs: the full population's 8,000 scores are fine bins
    and the finding's 171 distinct scores are more than 100. The memory budget holds its runs:
    its deviation is drawn exactly (its runs per distinct score, every row summed between
    them), the in-memory chart to 1e-9. The budget set short (100 runs): fine bins, said."""
    pytest.importorskip("pptx")
    import mcviz.cli.report as report_module
    import mcviz.settings as settings

    monkeypatch.setattr(settings, "ENGINE_SCORE_RUNS", 100)
    if not held:
        monkeypatch.setattr(report_module, "exact_runs_limit",
                            lambda args, reserve=0, weighted=False: 100)
    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--findings", "3", "--seed", "2", "--engine",
                  "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out))
    _check_finding_deviation(planted_file, report, out, exact=held)


def _check_finding_deviation(planted_file, report: dict, out, *, exact: bool) -> None:
    """Finding 1 (region == r7, 171 distinct scores, the full population in 100 fine bins):
    its deviation the in-memory one to 1e-9 when ``exact``, else one point per fine bin; the
    notice and its slide say which."""
    import pandas as pd

    from mcviz.io import load_predictions
    from mcviz.present.slide_charts import cumulative_chart
    from mcviz.stats.deviation import subpopulation_deviation
    from mcviz.subpopulations.filters import filter_subpopulation

    frame = pd.read_parquet(planted_file)
    everyone = load_predictions(frame, score="score", label="label", weight="w",
                                covariates=["region"])
    sub = filter_subpopulation(everyone, "region == r7")
    assert report["findings"][0]["description"] == "region == r7"
    assert np.unique(everyone.score[sub.index]).size > 100
    want = cumulative_chart(subpopulation_deviation(everyone, sub.index), deviation=True)
    got = _chart_numbers(out)[("Finding 1", want.title)]
    said = " ".join(_slide_texts(out))
    if exact:
        assert ("1 exactly, from its rows summed per distinct score and every row summed "
                "between them") in report["notice"]
        assert "Its deviation from the full population: from every row, exactly." in said
        _same_series(got, want)
    else:
        assert "1 from the rows summed in 100 fine score bins" in report["notice"]
        assert "Its deviation from the full population: from every row in 100 fine" in said
        assert len(got[0][1]) < len(want.series[0].x)  # one point per fine bin


def test_a_deck_at_scale_draws_the_levels_of_a_nominal_variable(planted_file, tmp_path):
    """The report's variable is nominal (the first of --covariates): its error and predicted
    error per level are drawn from DuckDB's GROUP BY, the in-memory chart's numbers."""
    pytest.importorskip("pptx")
    import pandas as pd

    from mcviz.io import load_predictions
    from mcviz.present.review import review_results
    from mcviz.present.slide_charts import curves_chart

    out = tmp_path / "scale.pptx"
    _run("report", planted_file, "--covariates", "occupation,region,age", "--seed", "2",
         "--engine", "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out))
    frame = pd.read_parquet(planted_file)
    pred = load_predictions(frame, score="score", label="label", weight="w",
                            covariates=["occupation", "region", "age"])
    want = curves_chart(review_results(pred, None, variable="occupation", bins=(10,)).curves)
    assert want.kind == "columns"
    got = _chart_numbers(out)[("full", want.title)]
    assert [name for name, _, _ in got] == [s.name for s in want.series]
    for (_, levels, values), series in zip(got, want.series, strict=True):
        assert tuple(levels) == want.categories
        np.testing.assert_allclose(values, series.y, rtol=1e-9, atol=1e-12)


def test_a_finding_larger_than_the_sample_is_drawn_when_memory_holds_it(planted_file, tmp_path,
                                                                        monkeypatch):
    """--sample-rows sizes the search's sample only: a finding of more rows than that is still
    read and drawn when the memory budget holds it (the budget, not the sample, is the cap).
    The finding is counted 5,000 rows larger than it is: more than the 3,000 sampled."""
    pytest.importorskip("pptx")
    import mcviz.cli.report as report_module

    counted = report_module._finding_counts
    monkeypatch.setattr(report_module, "_finding_counts", lambda *a: {
        rank: (size + 5_000, distinct) for rank, (size, distinct) in counted(*a).items()})
    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--findings", "3", "--seed", "2", "--engine",
                  "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out))
    assert "their own rows, read by duckdb, for 1 of them" in report["notice"]
    assert "Error and predicted error along age" in [
        t for (w, t) in _chart_numbers(out) if w == "Finding 1"]


def test_a_finding_too_large_to_hold_is_drawn_from_its_runs(planted_file, tmp_path,
                                                           monkeypatch):
    """A finding of more rows than memory holds is not read: its deviation from the full
    population, reliability, rows per bin, own calibration and LCS come from its runs (a GROUP
    BY with its WHERE; the in-memory numbers), its curves are left out and its slide says
    why."""
    pytest.importorskip("pptx")
    import pandas as pd

    import mcviz.cli.report as report_module
    import mcviz.cli.search as search_module
    from mcviz.io import load_predictions
    from mcviz.present.review import review_results
    from mcviz.present.slide_charts import review_charts
    from mcviz.subpopulations.filters import filter_subpopulation

    counted = report_module._finding_counts
    monkeypatch.setattr(report_module, "_finding_counts", lambda *a: {
        rank: (size + 1_000_000, distinct) for rank, (size, distinct) in counted(*a).items()})
    # what memory lets this run hold, not --sample-rows (which only sizes the search's sample)
    monkeypatch.setattr(search_module, "_budget_rows", lambda args, covariates: 1_000_000)
    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--findings", "3", "--seed", "2", "--engine",
                  "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out))
    assert "the full population of 1 of 1 findings" in report["notice"]
    assert "their own rows, read by duckdb, for 0 of them" in report["notice"]
    said = " ".join(_slide_texts(out))
    frame = pd.read_parquet(planted_file)
    rows = int((frame["region"] == "r7").sum()) + 1_000_000
    assert (f"No curves: its {rows:,} rows are more than the 1,000,000 this run may hold in "
            "memory at once. Its own calibration and local calibration: from its rows summed "
            "per distinct score.") in said
    drawn = _chart_numbers(out)
    everyone = load_predictions(frame, score="score", label="label", weight="w",
                                covariates=["region"])
    sub = filter_subpopulation(everyone, "region == r7")
    mine = [c for c in review_charts(review_results(everyone, sub, bins=(10,), variable=None))
            if c.kind == "xy"]
    assert [c.title for c in mine] == [
        "Deviation from the full population", "Reliability (10 score bins)",
        "Own calibration of the subpopulation", "Local calibration curve"]
    assert [t for (w, t) in drawn if w == "Finding 1"] == [
        mine[0].title, mine[1].title, "Share of weight per score bin", *[c.title for c in
                                                                         mine[2:]]]
    for chart in mine:
        _same_series(drawn[("Finding 1", chart.title)], chart)
    assert {t for (w, t) in drawn if w == "full"} == {
        "Cumulative differences", "Reliability (10 score bins)", "Local calibration curve",
        "Error and predicted error along age"}


def _deck_content(path) -> list:
    """Every slide's texts, tables and native charts (their XML: the plotted numbers)."""
    from pptx import Presentation

    content = []
    for slide in Presentation(str(path)).slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                content.append(shape.text_frame.text)
            if getattr(shape, "has_table", False):
                content.append([[c.text for c in row.cells] for row in shape.table.rows])
            if getattr(shape, "has_chart", False):
                content.append(shape.chart.part.blob)
    return content


def test_a_table_the_sample_holds_gives_the_in_memory_report_and_deck(planted_file, tmp_path,
                                                                        monkeypatch):
    """The default sample holds all 8,000 rows: the report and its deck are the in-memory
    ones (the same slides, texts and charts), and the engine measured nothing."""
    pytest.importorskip("pptx")
    import mcviz.cli.search as search

    options = ("--findings", "1", "--seed", "2", "--bins", "10")  # the fewest slides
    memory = _run("report", planted_file, *options, "--deck", str(tmp_path / "memory.pptx"))

    def no_pass(*args, **kwargs):
        raise AssertionError("the engine measured a table the sample holds whole")

    monkeypatch.setattr(search, "search_at_scale", no_pass)
    scale = _run("report", planted_file, *options, "--engine", "duckdb", "--deck",
                 str(tmp_path / "scale.pptx"))
    assert scale.pop("engine") == "duckdb"
    assert scale.pop("notice").startswith(f"All {N:,} rows fit in the sample (up to ")
    assert scale.pop("deck") == [str(tmp_path / "scale.pptx")]
    assert memory.pop("deck") == [str(tmp_path / "memory.pptx")]
    assert scale == memory
    assert scale["slides"] > 3 and "the largest gap is where" in scale["verdict"][0]
    assert _deck_content(tmp_path / "scale.pptx") == _deck_content(tmp_path / "memory.pptx")


def test_several_files_the_sample_holds_are_read_whole_in_memory(planted_file, tmp_path):
    """Two files of 3,000 and 5,000 rows (DuckDB reads them in file order): the in-memory
    report of the one file they came from."""
    import pandas as pd

    frame = pd.read_parquet(planted_file)
    parts = tmp_path / "parts"
    parts.mkdir()
    frame.iloc[:3000].to_parquet(parts / "a.parquet")
    frame.iloc[3000:].to_parquet(parts / "b.parquet")
    options = ("--findings", "3", "--seed", "2")
    memory = _run("report", planted_file, *options)
    scale = _run("report", str(parts / "*.parquet"), *options, "--engine", "duckdb")
    assert scale.pop("engine") == "duckdb"
    assert scale.pop("notice").startswith(f"All {N:,} rows fit in the sample (up to ")
    assert scale.keys() == memory.keys()
    for key, want in memory.items():
        if key == "findings":
            assert len(scale[key]) == len(want)
            for got_finding, want_finding in zip(scale[key], want, strict=True):
                for name, value in want_finding.items():
                    assert _close(got_finding[name], value), (name, got_finding[name], value)
        else:
            assert scale[key] == want, key


def test_a_deck_at_scale_draws_the_curves_along_a_numeric_variable(planted_file, tmp_path):
    """The report's variable is numeric (age, the first of --covariates): its LOESS curves of
    error and predicted error are drawn from DuckDB's GROUP BY of its values, every number of
    the in-memory chart of the 8,000 rows, and the notice says how exactly."""
    pytest.importorskip("pptx")
    import pandas as pd

    from mcviz.io import load_predictions
    from mcviz.present.review import review_results
    from mcviz.present.slide_charts import curves_chart

    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--covariates", "age,region,occupation", "--seed",
                  "2", "--engine", "duckdb", "--sample-rows", "3000", "--bins", "10",
                  "--deck", str(out))
    assert "the curves along age exactly, from the rows summed per distinct value" in (
        report["notice"])
    frame = pd.read_parquet(planted_file)
    pred = load_predictions(frame, score="score", label="label", weight="w",
                            covariates=["age", "region", "occupation"])
    want = curves_chart(review_results(pred, None, variable="age", bins=(10,)).curves)
    assert want.kind == "xy"
    _same_series(_chart_numbers(out)[("full", want.title)], want)


def test_a_deck_at_scale_from_fine_bins_of_a_numeric_variable_states_their_bound(
        planted_file, tmp_path, monkeypatch):
    """More distinct values of x1 than the engine may return (the limit set to 2,000 for its
    8,000): the curves along x1 come from fine bins, and the notice, the JSON
    (``curves_within``) and the curves slide's note say how far each point can be from the
    curve from every row."""
    pytest.importorskip("pptx")
    import mcviz.settings as settings

    monkeypatch.setattr(settings, "ENGINE_SCORE_RUNS", 2_000)
    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--covariates", "x1,region,occupation", "--seed",
                  "2", "--engine", "duckdb", "--sample-rows", "3000", "--bins", "10",
                  "--deck", str(out))
    within = report["curves_within"]
    assert 0 < within["rates_within"] < 1
    assert within["bins"] <= 2_000
    said = (f"each point of the curves is within {100 * within['rates_within']:.2g} percentage "
            "points of the curve from every row at the same span")
    assert "the curves along x1 from the rows summed in" in report["notice"]
    assert said in report["notice"]
    note = (f"dotted: too few rows; each point within {100 * within['rates_within']:.2g} "
            "percentage points of the curve from every row")
    texts = _slide_texts(out)
    assert note in texts, [t for t in texts if "dotted" in t]


def test_every_surface_counts_the_covariates_named(planted_file, tmp_path):
    """--covariates age,region,occupation (three named): the appendix says three covariates
    (the score's own bands, searched beside them, are not counted as one) in memory and at
    scale, in the JSON and on the deck's appendix slide (the Report page shows the same
    appendix); the search's ``covariates`` are the three named."""
    pytest.importorskip("pptx")
    import pandas as pd

    from mcviz.io import load_predictions
    from mcviz.search import search_subpopulations

    options = ("--covariates", "age,region,occupation", "--findings", "3", "--seed", "2")
    memory = _run("report", planted_file, *options)
    out = tmp_path / "scale.pptx"
    scale = _run("report", planted_file, *options, "--engine", "duckdb", "--sample-rows",
                 "3000", "--bins", "10", "--deck", str(out))
    said = "up to 3 conditions on 3 covariates and the score's own bands, ranked by D/σ"
    for report in (memory, scale):
        assert [line for line in report["appendix"] if said in line], report["appendix"]
    assert [text for text in _slide_texts(out) if said in text]
    pred = load_predictions(pd.read_parquet(planted_file), score="score", label="label",
                            weight="w", covariates=["age", "region", "occupation"])
    search = search_subpopulations(pred, covariates=["age", "region", "occupation"],
                                   n_findings=1)
    assert search.covariates == ("age", "region", "occupation")


@pytest.mark.parametrize(("read_reserve", "intervals"), [
    (150_000, set()), (190_000, set()), (190_000, {2})],
    ids=["both-fit", "together-short", "together-short-interval"])
def test_findings_sharing_duckdb_keep_its_need_for_the_most_runs(monkeypatch, read_reserve,
                                                                 intervals):
    """Each finding alone fits the room (runs at FINDING_RUN_BYTES here and
    FINDING_ENGINE_RUN_BYTES in DuckDB; a read finding's rows beside them), but one engine
    serves them all: the largest held beside it and DuckDB's need for the most runs must fit
    together, else the finding of most runs goes to fine bins (worked by hand: 260,784 +
    47,104 > 288,000 bytes). Unless that finding bounds the score alone (an interval): its
    deviation joins no row, DuckDB needs no room for it, and it stays exact."""
    import argparse
    from types import SimpleNamespace

    import mcviz.cli.metrics as metrics_module
    import mcviz.cli.report as report_module
    import mcviz.engines.memory as memory
    import mcviz.settings as settings

    room = 1000 * 288  # a finding of 1,000 runs alone fills it
    monkeypatch.setattr(memory, "FINDING_RUN_BYTES", 224)
    monkeypatch.setattr(memory, "FINDING_ENGINE_RUN_BYTES", 64)
    monkeypatch.setattr(memory, "duckdb_room", lambda limit, reserve=0: room - reserve)
    monkeypatch.setattr(metrics_module, "_runs_reserve", lambda args: 0)
    monkeypatch.setattr(settings, "ENGINE_SCORE_RUNS", 100)  # the limits' floor below them
    args = argparse.Namespace(engine="duckdb", memory_limit="2GB")
    # a finding's run costs 224 bytes here and 64 in DuckDB: 1,000 fill the room
    assert report_module.exact_runs_limit(args) == 1000
    assert report_module.exact_runs_limit(args, reserve=190_000) == 340
    full = SimpleNamespace(bins=1000, score=np.zeros(1000), weighted=False)
    # finding 1: its rows read, 316 runs (300 distinct, +5%); finding 2: 736 runs
    counted = {1: (400, 300), 2: (5000, 700)}
    grouped = report_module._finding_grouping(args, full, counted, read_reserve, {1},
                                              intervals=intervals)
    assert grouped[1] == (False, 224 * 316)
    assert grouped[2][0] is (read_reserve == 190_000 and not intervals)
    if read_reserve == 150_000 or intervals:
        assert grouped[2] == (False, 224 * 736)
    # without --memory-limit nothing is shared out: both exact
    grouped = report_module._finding_grouping(argparse.Namespace(engine="duckdb",
                                                                 memory_limit=None),
                                              full, counted, read_reserve, {1})
    assert not grouped[1][0]
    assert not grouped[2][0]


def test_a_finding_on_the_score_alone_is_an_interval_of_it():
    """Only a finding whose every condition bounds the score (<, <=, >, >=) is an interval
    of it (its deviation joins no row); a '!=' on the score or a covariate is not."""
    from types import SimpleNamespace

    import pandas as pd

    import mcviz.cli.report as report_module
    from mcviz.io import load_predictions
    from mcviz.subpopulations.model import Condition

    pred = load_predictions(pd.DataFrame({"score": [0.1, 0.5], "label": [0, 1], "g": [1, 2]}),
                            score="score", label="label", covariates=["g"])
    found = [SimpleNamespace(conditions=c) for c in (
        (Condition("score", ">=", 0.2), Condition("score", "<", 0.6)),
        (Condition("score", "!=", 0.5),), (Condition("g", "==", 1),),
        (Condition("score", "<", 0.6), Condition("g", "==", 1)))]
    assert [report_module._score_interval(pred, f) for f in found] == [True, False, False,
                                                                        False]


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_a_finding_s_runs_are_budgeted_at_the_bytes_of_their_kind(monkeypatch, weighted):
    """Weighted rows' runs cost more (two more sums a run, the deviation's own abscissa):
    with 224 bytes a run unweighted, 352 weighted and 64 in DuckDB, a room of 288,000 bytes
    holds 1,000 unweighted runs and 692 weighted (288,000 // 416), so a finding of 700
    distinct scores (736 runs with the 5% margin) is exact unweighted and in fine bins
    weighted (worked by hand)."""
    import argparse
    from types import SimpleNamespace

    import mcviz.cli.metrics as metrics_module
    import mcviz.cli.report as report_module
    import mcviz.engines.memory as memory
    import mcviz.settings as settings

    monkeypatch.setattr(memory, "FINDING_RUN_BYTES", 224)
    monkeypatch.setattr(memory, "FINDING_WEIGHTED_RUN_BYTES", 352)
    monkeypatch.setattr(memory, "FINDING_ENGINE_RUN_BYTES", 64)
    monkeypatch.setattr(memory, "duckdb_room", lambda limit, reserve=0: 288_000 - reserve)
    monkeypatch.setattr(metrics_module, "_runs_reserve", lambda args: 0)
    monkeypatch.setattr(settings, "ENGINE_SCORE_RUNS", 100)
    args = argparse.Namespace(engine="duckdb", memory_limit="2GB")
    assert report_module.exact_runs_limit(args, weighted=weighted) == (692 if weighted
                                                                        else 1000)
    full = SimpleNamespace(bins=1000, score=np.zeros(1000), weighted=weighted)
    grouped = report_module._finding_grouping(args, full, {1: (5000, 700)}, 0, set())
    assert grouped[1] == ((True, memory.RUN_BYTES * 1000) if weighted else (False, 224 * 736))


@pytest.mark.parametrize("row_bytes", [3, 10**6, 10**7],
                         ids=["rows-fit", "rows-in-passes", "rows-short"])
def test_a_finding_s_exact_deviation_leaves_duckdb_room_for_every_row_s_join(
        planted_file, tmp_path, monkeypatch, row_bytes):
    """The full population in 100 fine bins, the finding's 171 distinct scores held exactly:
    its deviation sums every row between them (an ASOF join of every row, whose need in
    DuckDB grows with the rows: FINDING_ENGINE_ROW_BYTES; 10^8 rows ran a 304 MiB share out
    of memory after 84 s), in passes of score ranges that each fit DuckDB's share
    (comparison_passes). Under --memory-limit 4GB with the real 3 bytes a row, the 8,000
    rows join in one pass: the deviation is the in-memory one to 1e-9. With 10^6 bytes a row
    (8 GB for 8,000 rows, more than DuckDB's share of about 3 GB) the join takes several
    passes and the deviation is still the in-memory one: only an eighth of the rows
    (COMPARISON_PASSES) need fit the room. With 10^7 bytes a row even that eighth (10 GB)
    does not: the report still completes, the finding's deviation from the fine bins, and
    the notice and its slide say so."""
    pytest.importorskip("pptx")
    import mcviz.engines.calibration as calibration
    import mcviz.engines.memory as memory
    import mcviz.settings as settings

    monkeypatch.setattr(settings, "ENGINE_SCORE_RUNS", 100)
    monkeypatch.setattr(memory, "FINDING_ENGINE_ROW_BYTES", row_bytes)
    planned = []
    plan = calibration.comparison_passes
    monkeypatch.setattr(calibration, "comparison_passes",
                        lambda *a: planned.append(plan(*a)) or planned[-1])
    out = tmp_path / "scale.pptx"
    report = _run("report", planted_file, "--findings", "3", "--seed", "2", "--engine",
                  "duckdb", "--sample-rows", "3000", "--bins", "10", "--deck", str(out),
                  "--memory-limit", "4GB")
    _check_finding_deviation(planted_file, report, out, exact=row_bytes < 10**7)
    if row_bytes == 3:
        assert planned
        assert all(len(p) == 1 for p in planned)
    elif row_bytes == 10**6:
        assert max(len(p) for p in planned) >= 3  # 8,000 rows, at most about 3,000 a pass
