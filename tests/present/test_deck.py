"""The deck (mcviz.present.deck, `mcviz report --deck`): read back with python-pptx, PDF, text."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz.present.deck import (
    DeckInfo,
    Slide,
    clean_text,
    deck_slides,
    section_charts,
    write_pdf,
    write_pptx,
)
from mcviz.present.slide_charts import Series, SlideChart, thinned
from mcviz.present.verdict import FindingLine, Section, Verdict

pptx = pytest.importorskip("pptx")
sys.path.insert(0, str(Path(__file__).parent))
from test_verdict import _frame  # noqa: E402  (the planted frame: region r7 +15 points)

SOFFICE = any(Path(p, "soffice").exists() for p in ("/usr/bin", "/usr/local/bin"))
EMU_PER_INCH = 914_400
SLIDE = (13.333, 7.5)
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069\u200e\u200f"
                     "\u061c\u2028\u2029\x85]")


def _png(width: int = 160, height: int = 90) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "#0072B2").save(out, format="PNG")
    return out.getvalue()


def _texts(slide) -> str:
    return "\n".join(shape.text_frame.text for shape in slide.shapes if shape.has_text_frame)


def _charts(slide) -> list:
    return [shape for shape in slide.shapes if shape.has_chart]


def _chart(title: str = "A chart", points: int = 50) -> SlideChart:
    x = np.linspace(0, 1, points)
    return SlideChart(title, "xy", (Series("path", tuple(x), tuple(x ** 2)),
                                    Series("diagonal", (0.0, 0.5, 1.0), (0.0, 0.5, 1.0))),
                      "score", "observed", note="a note under the chart")


def _box(shape) -> tuple[float, float, float, float]:
    return tuple(v / EMU_PER_INCH for v in (shape.left, shape.top, shape.left + shape.width,
                                            shape.top + shape.height))


def _sizes(slide) -> list[float]:
    """Every font size (points) set on the slide: text runs, and each chart's text."""
    sizes = [run.font.size.pt for shape in slide.shapes if shape.has_text_frame
             for paragraph in shape.text_frame.paragraphs for run in paragraph.runs]
    for shape in _charts(slide):
        # chart text: every sz="..." in the chart part (hundredths of a point), and the default
        sizes += [int(v) / 100 for v in re.findall(rb'\ssz="(\d+)"', shape.chart.part.blob)]
        sizes.append(shape.chart.font.size.pt)
    return sizes


def _check_slide_rules(deck) -> None:
    """Every run >= 12 pt, every shape inside the slide, at most two charts, no control char."""
    width, height = deck.slide_width / EMU_PER_INCH, deck.slide_height / EMU_PER_INCH
    assert (round(width, 2), round(height, 2)) == (13.33, 7.5)
    for number, slide in enumerate(deck.slides, start=1):
        sizes = _sizes(slide)
        assert sizes, number
        assert min(sizes) >= 12, (number, min(sizes))
        for shape in slide.shapes:
            left, top, right, bottom = _box(shape)
            where = (number, shape.name, (left, top, right, bottom))
            assert min(left, top) >= 0, where
            assert right <= width + 1e-6, where
            assert bottom <= height + 1e-6, where
        assert len(_charts(slide)) <= 2, number
        assert not CONTROL.search(_texts(slide)), number
        for shape in _charts(slide):
            assert not CONTROL.search(shape.chart.part.blob.decode("utf-8")), number


def test_slides_read_back_editable_with_native_charts(tmp_path):
    line = FindingLine(1, 'region == "r7"', "Among rows with region r7 (9.9%), ...",
                       "+16.6 points", "13.8 to 19.5 points", "9.87%", 1974, "< 0.001")
    verdict = Verdict(("The full population ...", line.sentence), (line,), False,
                      ("Method ...",), (Section("Decision", ("At 0.5 ...",), (("loss", "3"),)),))
    charts = {1: (_chart("one"), _chart("two"), _chart("three"))}
    slides = deck_slides(verdict, DeckInfo("f.csv", "score p, label y", 20_000, "2026-11-26"),
                         charts=charts, scope=("The full population", (_chart("full"),)))
    assert [s.kind for s in slides] == ["title", "verdict", "scope", "finding", "finding",
                                        "section", "appendix"]
    path = tmp_path / "deck.pptx"
    write_pptx(slides, path)
    deck = pptx.Presentation(str(path))
    assert deck.slide_width * 9 == deck.slide_height * 16  # 16:9
    assert len(deck.slides) == 7
    finding = deck.slides[3]
    assert line.sentence in _texts(finding)
    assert "+16.6 points" in _texts(finding)
    assert "13.8 to 19.5 points" in _texts(finding)
    assert [c.chart.chart_title.text_frame.text for c in _charts(finding)] == ["one", "two"]
    (rest,) = _charts(deck.slides[4])  # the third chart on the finding's next slide
    assert rest.chart.chart_title.text_frame.text == "three"
    assert "Finding 1: region is" in _texts(finding)  # the title in words, not the filter
    assert "==" not in _texts(finding).splitlines()[0]
    assert "Decision" in _texts(deck.slides[5])
    _check_slide_rules(deck)
    with pytest.raises(ValueError, match="at most 2 charts"):
        Slide("t", charts=(_chart(), _chart(), _chart()))


def test_user_text_never_reaches_a_slide_as_control_characters(tmp_path):
    hostile = "<b>x</b> \u202egnp.exe\x00 =cmd|\u2028next\x07\r\n\u2066"
    chart = SlideChart(hostile, "xy", (Series(hostile, (0.0, 0.5, 1.0), (0.0, 1.0, 0.0)),),
                       hostile, hostile, note=hostile)
    columns = SlideChart(hostile, "columns", (Series(hostile, (hostile,), (3.0,)),),
                         categories=(hostile,))
    slides = [Slide(hostile, (hostile,), ((hostile, hostile),), charts=(chart, columns))]
    write_pptx(slides, tmp_path / "h.pptx")  # lxml refuses NUL: cleaned, never an error
    deck = pptx.Presentation(str(tmp_path / "h.pptx"))
    text = _texts(deck.slides[0])
    assert "[U+202E]" in text  # shown, not obeyed
    assert "<b>x</b>" in text  # shown as typed (text, not markup)
    _check_slide_rules(deck)
    assert clean_text("a\u2029b\r\nc") == "a[U+2029]b[U+000D] c"


def test_long_text_is_set_smaller_then_cut_and_stays_inside_the_slide(tmp_path):
    # a fact without a number reads "not valid (why)"; text, facts and charts do not overlap,
    # whatever the text's length
    long = "Among rows with " + " and ".join(f"x{i} ≥ {i}" for i in range(120)) + "."
    section = Section("Fix (platt) " + "with a very long title " * 5, (long, long),
                      (("held-out M", "– → –"), ("held-out log loss", "0.53 → 0.528")),
                      picture=_png(1440, 600))
    line = FindingLine(1, "x0 >= 0 and " * 20 + "x1 < 3", long, "+1 points", "– to –", "1%",
                       10, "< 0.001")
    verdict = Verdict((long,) * 4, (line,), False, (long,) * 3, (section,))
    slides = deck_slides(verdict, DeckInfo("f.csv", "m", 10, "d"),
                         charts={1: (_chart(), _chart())})
    facts = dict(slides[-2].facts)
    assert facts["held-out M"] == "not valid (no finite value on these rows)"
    assert facts["held-out log loss"] == "0.53 → 0.528"
    assert dict(slides[2].facts)["95% CI"].startswith("not valid (")
    assert len(slides[2].title) <= 90
    assert slides[2].title.endswith("…")
    path = tmp_path / "d.pptx"
    write_pptx(slides, path)
    deck = pptx.Presentation(str(path))
    _check_slide_rules(deck)
    finding = deck.slides[2]
    texts = [s for s in finding.shapes if s.has_text_frame]
    title, sentence, facts_box = texts[:3]
    charts = _charts(finding)
    assert _box(title)[3] <= _box(sentence)[1] + 1e-6
    assert all(_box(sentence)[3] <= _box(c)[1] + 1e-6 for c in charts)  # text above charts
    assert all(_box(c)[2] <= _box(facts_box)[0] + 1e-6 for c in charts)  # facts to the right
    assert sentence.text_frame.text.endswith("…")  # too long for the slide: cut, not spilled
    shown = "\n".join(_texts(s) for s in deck.slides)
    assert "–" not in re.sub(r"\d–\d", "", shown)  # no bare dash for a missing value


def test_thinned_paths_keep_their_range_and_order():
    rng = np.random.default_rng(0)
    y = np.cumsum(rng.normal(size=50_001))
    x = np.arange(y.size) / y.size
    tx, ty = thinned(x, y, 400)
    assert tx.size <= 402
    assert ty.max() == y.max()  # the drawn range is the path's range D
    assert ty.min() == y.min()
    assert np.all(np.diff(tx) > 0)
    assert set(tx) <= set(x)  # points of the path, never new ones


def test_void_p_values_are_said_not_compared():
    from types import SimpleNamespace as R

    from mcviz.present.verdict import findings_sentences

    finding = R(p_adjusted=float("nan"), rank=1, confirmed=False, p_kind="void")
    search = R(findings=(finding, finding), candidates_scored=10, n_search=5, n_holdout=5,
               mde=None)
    said, confirmed = findings_sentences(search)
    assert confirmed == ()
    assert "not valid with label-dependent weights" in said[0]
    assert "≥ 0.05" not in " ".join(said)


def test_fix_and_monitor_sections_carry_their_charts():
    from dashboard import fixing
    from dashboard import monitor as mon
    from mcviz.io import load_predictions
    from mcviz.monitor import MonitorSettings, monitor_calibration
    from mcviz.recalibration import verify_fix

    frame = _frame(6_000, 2, planted=0.15)
    frame["day"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(
        np.arange(len(frame)) % 60, unit="D")
    pred = load_predictions(frame, score="score", label="y", covariates=["region", "day"],
                            nominal=["region"])
    fix = verify_fix(pred, method="platt", holdout=0.5, seed=0, covariates=["region"])
    impact = fixing.scope_impact(fix, fixing.scope_view(fix, fixing.FULL), (0.5,),
                                 n_bootstrap=50)
    section = fixing.fix_section(fix, impact, (0.5,))
    before, after = section.draw()
    assert "Before the fix" in before.layout.title.text
    assert "After the fix" in after.layout.title.text
    noise = dict(section.facts)["held-out log loss"].endswith("(no meaningful change)")
    assert noise == (not fix.meaningful)
    watched = monitor_calibration(pred, settings=MonitorSettings(time="day", draws=99))
    watch = mon.verdict_section(watched)
    (heatmap,) = watch.draw()
    assert any(trace.type == "heatmap" for trace in heatmap.data)
    # the fix's two figures become two native charts read from their traces; a heat map none
    drawn = section_charts([section, watch])
    assert set(drawn) == {0}
    first, second = drawn[0]
    assert "Before the fix" in first.title
    assert "After the fix" in second.title
    scatter = [t for t in before.data if t.type == "scatter" and (t.xaxis in (None, "x"))
               and not str(t.name).startswith("bootstrap")]
    points = {s.name: s for s in first.series}
    for trace in scatter:  # the figure's own numbers, not recomputed
        if trace.fill != "toself" and trace.name in points and len(trace.x) <= 400:
            finite = np.isfinite(np.asarray(trace.y, dtype=float))
            assert np.allclose(np.asarray(trace.y, dtype=float)[finite][:3],
                               points[trace.name].y[:3])


# --------------------------------------------------------------------------------------------
# The command line


@pytest.fixture(scope="module")
def planted_csv(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("deck") / "planted.csv"
    _frame(20_000, 1, planted=0.15).to_csv(source, index=False)
    return source


def _report(cli, source: Path, *decks: Path):
    args = ["report", source, "--score", "score", "--label", "y", "--covariates", "region,age",
            "--max-conditions", "2", "--findings", "3", "--json"]
    for deck in decks:
        args += ["--deck", deck]
    return cli(*args)


def _no_pdf_tools(monkeypatch) -> None:
    """kaleido's import fails and LibreOffice is not on PATH."""
    monkeypatch.setitem(sys.modules, "kaleido", None)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("MCVIZ_SOFFICE", raising=False)


@pytest.mark.skipif(not SOFFICE, reason="LibreOffice makes the PDF")
def test_report_cli_writes_native_charts_and_the_same_slides_as_pdf(tmp_path, cli, planted_csv,
                                                                    monkeypatch):
    monkeypatch.setitem(sys.modules, "kaleido", None)  # no kaleido: LibreOffice alone
    pptx_path, pdf_path = tmp_path / "review.pptx", tmp_path / "review.pdf"
    run = _report(cli, planted_csv, pptx_path, pdf_path)
    assert run.status == 0, run.err
    out = run.json
    confirmed = out["findings"]
    assert confirmed, out["verdict"]  # the planted region is confirmed
    assert "r7" in confirmed[0]["description"]
    assert out["deck"] == [str(pptx_path), str(pdf_path)]
    deck = pptx.Presentation(str(pptx_path))
    assert len(deck.slides) == out["slides"]
    assert out["verdict"][0] in _texts(deck.slides[1])
    _check_slide_rules(deck)
    findings = [s for s in deck.slides if _texts(s).startswith("Finding ")]
    assert len(findings) >= len(confirmed)
    assert all(_charts(s) for s in findings)  # every finding slide holds a native chart
    kinds = {str(c.chart.chart_type) for s in deck.slides for c in _charts(s)}
    assert any("XY_SCATTER" in k for k in kinds)
    assert any("COLUMN_CLUSTERED" in k for k in kinds)
    for finding in confirmed:
        slide = next(s for s in findings if finding["sentence"] in _texts(s))
        assert finding["p_adjusted"] in _texts(slide)
        assert finding["interval"] in _texts(slide)
        # one sign: the JSON's effect and the slide's effect read back agree (+ raised rate)
        shown = re.search(r"^effect\n([+−-])", _texts(slide), re.M)
        assert shown is not None, _texts(slide)
        assert (shown.group(1) == "+") == (finding["effect"].lstrip()[0] == "+")
    assert confirmed[0]["effect"].startswith("+")  # planted: more events than predicted
    pdf = pdf_path.read_bytes()
    assert pdf.startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page(?!s)", pdf)) == len(deck.slides)  # same slides


def test_report_cli_without_kaleido_or_libreoffice_writes_the_pptx(tmp_path, cli, planted_csv,
                                                                   monkeypatch):
    _no_pdf_tools(monkeypatch)
    pptx_path, pdf_path = tmp_path / "x.pptx", tmp_path / "x.pdf"
    run = _report(cli, planted_csv, pptx_path, pdf_path)
    assert run.status in (0, 2)
    assert run.status == 0  # the PPTX was written: success, with one line about the PDF
    lines = run.err.strip().splitlines()
    assert len([line for line in lines if "x.pdf" in line]) == 1, run.err
    assert "Traceback" not in run.err
    assert "LibreOffice" in run.err
    assert "kaleido" in run.err
    assert not pdf_path.exists()
    assert run.json["deck"] == [str(pptx_path)]
    deck = pptx.Presentation(str(pptx_path))  # a valid PPTX
    assert len(deck.slides) == run.json["slides"]
    # nothing writable at all: exit 2, one line, no traceback
    only_pdf = _report(cli, planted_csv, tmp_path / "y.pdf")
    assert only_pdf.status == 2
    assert len(only_pdf.err.strip().splitlines()) == 1, only_pdf.err
    assert "--deck" in only_pdf.err
    assert "Traceback" not in only_pdf.err


def test_a_failing_browser_is_one_line_not_a_wait(tmp_path, monkeypatch):
    # kaleido is there but its chromium dies at once: the PDF is refused in one message
    from mcviz.present import report
    from mcviz.present.report import ExportUnavailableError

    pytest.importorskip("kaleido")
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MCVIZ_CHROMIUM", str(fake))
    monkeypatch.setenv("PATH", "/nonexistent")  # no LibreOffice
    monkeypatch.setattr(report, "IMAGE_TIMEOUT", 20.0)
    import mcviz.present.deck as deck_module

    monkeypatch.setattr(deck_module, "IMAGE_TIMEOUT", 20.0)
    with pytest.raises(ExportUnavailableError) as caught:
        write_pdf([Slide("t", charts=(_chart(),))], io.BytesIO())
    assert len(str(caught.value).splitlines()) == 1


def test_report_cli_refuses_a_bad_deck_name(tmp_path, cli):
    frame = pd.DataFrame({"p": np.linspace(0.1, 0.9, 50), "y": [0, 1] * 25})
    source = tmp_path / "p.csv"
    frame.to_csv(source, index=False)
    run = cli("report", source, "--score", "p", "--label", "y", "--deck", tmp_path / "x.key")
    assert run.status == 2
    assert "must end in .pptx or .pdf" in run.err


def test_a_subpopulations_columns_are_shares_and_visible_beside_the_full_population(tmp_path):
    # 5% of the rows beside the full population: as counts its columns were ~5% as tall
    from mcviz.io import load_predictions
    from mcviz.present.slide_charts import counts_chart
    from mcviz.stats.binning import reliability_diagrams

    frame = _frame(4_000, 3, planted=0.0)
    pred = load_predictions(frame, score="score", label="y", covariates=["region"],
                            nominal=["region"])
    index = np.flatnonzero(pred.covariates["region"].to_numpy() == "r7")[::2]
    chart = counts_chart(reliability_diagrams(pred, index=index, n_bins=(10,)))
    full, sub = chart.series
    assert chart.y_percent and sum(full.y) == pytest.approx(1) and sum(sub.y) == pytest.approx(1)
    assert full.name == "full population (4,000 rows)"
    assert sub.name == f"subpopulation ({len(index):,} rows)"
    path = tmp_path / "shares.pptx"
    write_pptx([Slide("Rows per score bin", charts=(chart,))], path)
    (drawn,) = _charts(pptx.Presentation(str(path)).slides[0])
    values = [list(series.values) for series in drawn.chart.plots[0].series]
    assert max(values[1]) >= 0.5 * max(values[0])  # the group's tallest column is seen
    assert drawn.chart.value_axis.tick_labels.number_format == "0%"
    from pptx.enum.chart import XL_TICK_LABEL_POSITION  # labels at the foot, never on a
    assert drawn.chart.category_axis.tick_label_position == XL_TICK_LABEL_POSITION.LOW  # bar
