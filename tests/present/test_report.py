from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go
import pytest

from mcviz.present import report
from mcviz.present.report import (
    ExportUnavailableError,
    ReportSection,
    figure_image,
    html_report,
    neutralize_formula,
    safe_csv,
)

EVIL = "<script>alert('x')</script>"


def small_figure(name: str = "path") -> go.Figure:
    return go.Figure(go.Scatter(x=[0, 0.5, 1], y=[0, 0.1, 0.05], name=name))


def build(**kwargs) -> str:
    section = ReportSection(
        title=f"Calibration of {EVIL}",
        text=(f"Worst subpopulation: occupation == {EVIL}",),
        metrics=(("Kuiper D", "0.01"),),
        figures=(small_figure(EVIL), small_figure()),
        tables=(("Top subpopulations", pd.DataFrame({EVIL: [EVIL, "a & b"], "D": [0.5, 1.0]})),),
    )
    return html_report(
        [section], summary={"file": f"{EVIL}.csv"}, mapping={"score": EVIL},
        settings={"ℓ": 1000}, version="9.9", generated=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        **kwargs,
    )


def test_report_inlines_plotly_once_and_draws_every_figure():
    text = build()
    assert text.count("<script type='text/javascript'>") == 1
    assert text.count("Plotly.newPlot(") == 2
    assert "cdn.plot.ly" not in text.split("</script>", 1)[1]  # nothing fetched at view time
    assert "mcviz 9.9" in text
    assert "2026-01-02 03:04:05 UTC" in text


def test_report_escapes_every_user_string():
    text = build()
    # The only <script> tags are plotly.js and the newPlot calls; no user text opens one.
    assert EVIL not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "a &amp; b" in text
    # inside figure JSON the angle brackets are \u-escaped so they cannot close the script
    scripts = re.findall(r"<script>(.*?)</script>", text, flags=re.DOTALL)
    assert any("\\u003cscript\\u003e" in s for s in scripts)


def test_report_tables_are_capped_with_a_note():
    frame = pd.DataFrame({"x": range(report.MAX_TABLE_ROWS + 5)})
    text = html_report([ReportSection("t", tables=(("big", frame),))], version="1")
    assert text.count("<tr>") == report.MAX_TABLE_ROWS + 1  # header row + capped rows
    assert f"First {report.MAX_TABLE_ROWS:,} of {report.MAX_TABLE_ROWS + 5:,} rows" in text


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "\u22121"])
def test_formula_cells_are_neutralised(cell):
    assert neutralize_formula(cell) == "'" + cell
    text = safe_csv(pd.DataFrame({"description": [cell], "value": [-1.5]})).decode()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 2  # one row: the cell did not split it
    assert rows[1][0].startswith("'")
    assert text.rstrip().endswith(",-1.5")  # numbers stay numbers


@pytest.mark.parametrize("separator", ["\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b"])
def test_every_line_separator_is_quoted_so_no_row_splits(separator):
    # issue #25: a bare CR in a column name was written unquoted; a reader split the row there
    # and the next cell began "=1+1"
    name = f"n{separator}=1+1"
    frame = pd.DataFrame({name: [f"a{separator}=2+2"], "v": [1]})
    text = safe_csv(frame).decode()
    for reader in (lambda t: list(csv.reader(io.StringIO(t, newline=""))),
                   lambda t: [list(pd.read_csv(io.StringIO(t)).columns)]):
        rows = reader(text)
        assert all(not cell.startswith(("=", "+")) for row in rows for cell in row), rows
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows == [["n\n=1+1", "v"], ["a\n=2+2", "1"]]
    assert not any(ch in text for ch in "\r\u2028\u2029\x85\x0b")


@pytest.mark.parametrize("cell", [
    " =1+1", "   +1", "\u00a0@SUM(A1)",  # leading spaces (also no-break)
    "\n=1+1", "\nx", "\t =1", "\r\n-1", "\x0b=1", "\x1f@x",  # control characters first
    "\u200b=1+1", "\ufeff=1+1",  # invisible format characters (zero-width space, BOM)
    "\uff1d1+1", "\uff0b1", "\uff0d1", "\uff20SUM(A1)",  # full-width ＝ ＋ － ＠
    " \uff1d1", "\ufe661",  # full-width after a space; small form ﹦
])
def test_disguised_formula_cells_are_neutralised(cell):
    assert neutralize_formula(cell) == "'" + cell  # the cell itself is kept as written
    text = safe_csv(pd.DataFrame({"description": [cell], "value": [1]})).decode()
    assert text.split("\n", 1)[1].startswith(("'", '"\''))  # quoted when it holds a newline


@pytest.mark.parametrize("cell", [" age ≥ 40", "x = 1", "\uff41ge", "a-b", "  ", ""])
def test_plain_text_is_kept(cell):
    assert neutralize_formula(cell) == cell


def test_safe_csv_keeps_plain_text_and_neutralises_headers():
    frame = pd.DataFrame({"=cmd": ["age ≥ 40", None], "n": [1, 2]})
    assert safe_csv(frame).decode() == "'=cmd,n\nage ≥ 40,1\n,2\n"


def test_image_export_without_chromium_says_so(monkeypatch):
    monkeypatch.setattr(report, "chromium_path", lambda: None)
    with pytest.raises(ExportUnavailableError, match="apt-get install chromium"):
        figure_image(small_figure())


def test_image_export_rejects_unknown_formats():
    with pytest.raises(ValueError, match="png' or 'svg"):
        figure_image(small_figure(), "gif")


def test_chromium_path_honours_the_environment(monkeypatch, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MCVIZ_CHROMIUM", str(fake))
    assert report.chromium_path() == str(fake)


@pytest.mark.skipif(report.chromium_path() is None, reason="chromium is not installed")
def test_png_and_svg_through_one_kaleido_server():
    import kaleido

    png = figure_image(small_figure(), "png", scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert kaleido._global_server.is_running()
    svg = figure_image(small_figure(), "svg")
    assert svg.lstrip()[:4] == b"<svg"


def test_grid_sections_lay_figures_out_in_columns():
    section = ReportSection("Review: full population",
                            figures=tuple(small_figure(str(i)) for i in range(4)), columns=2)
    text = html_report([section], version="9.9")
    grid = text.index("grid-template-columns:repeat(2,1fr)")
    assert text.count("Plotly.newPlot(") == 4
    assert all(text.index(f"id='chart-{i}'") > grid for i in range(1, 5))
    assert text.index("</div>", text.index("id='chart-4'") + 20) > text.index("id='chart-4'")


def test_slide_needs_figures():
    with pytest.raises(ValueError, match="at least one figure"):
        report.slide_image([], "png")


@pytest.mark.skipif(report.chromium_path() is None, reason="chromium is not installed")
def test_slide_is_one_image_of_the_four_figures():
    from io import BytesIO

    from PIL import Image

    figures = [small_figure(str(i)) for i in range(4)]
    png = report.slide_image(figures, "png", width=800, height=600)
    image = Image.open(BytesIO(png))
    assert image.size == (800, 600)
    # each quadrant holds a chart: not blank white
    for box in ((0, 0, 400, 300), (400, 0, 800, 300), (0, 300, 400, 600), (400, 300, 800, 600)):
        assert image.crop(box).convert("L").getextrema()[0] < 200
    svg = report.slide_image(figures, "svg", width=800, height=600).decode()
    assert svg.startswith("<svg")
    assert svg.count("<svg") == 5
    assert "x='400' y='300' width='400' height='300'" in svg


def test_a_table_header_carries_its_help_as_hover_text_escaped():
    import pandas as pd

    from mcviz.present.report import ReportSection, html_report

    section = ReportSection("Variables", tables=(("ranked", pd.DataFrame({"largest gap": [1]})),),
                            column_help=(("largest gap", "VCE(v*) <b>'x'</b>"),))
    text = html_report([section])
    assert "<th title='VCE(v*) &lt;b&gt;&#x27;x&#x27;&lt;/b&gt;'>largest gap</th>" in text
