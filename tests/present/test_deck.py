"""The deck (mcviz.present.deck, `mcviz report --deck`): read back with python-pptx, PDF pages, text."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz.present.deck import DeckInfo, Slide, clean_text, deck_slides, write_pdf, write_pptx
from mcviz.present.verdict import FindingLine, Section, Verdict

pptx = pytest.importorskip("pptx")
sys.path.insert(0, str(Path(__file__).parent))
from test_verdict import _frame  # noqa: E402  (the planted frame: region r7 +15 points)

CHROMIUM = Path("/usr/bin/chromium")


def _png(width: int = 160, height: int = 90) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "#0072B2").save(out, format="PNG")
    return out.getvalue()


def _texts(slide) -> str:
    return "\n".join(shape.text_frame.text for shape in slide.shapes if shape.has_text_frame)


def _pictures(slide) -> list:
    return [shape for shape in slide.shapes if shape.shape_type == 13]  # MSO_SHAPE_TYPE.PICTURE


def test_slides_read_back_editable_with_pictures(tmp_path):
    line = FindingLine(1, 'region == "r7"', "Among rows with region == r7 (9.9%), ...",
                       "+16.6 points", "13.8 to 19.5 points", "9.87%", 1974, "< 0.001")
    verdict = Verdict(("The full population ...", line.sentence), (line,), False,
                      ("Method ...",), (Section("Decision", ("At 0.5 ...",), (("loss", "3"),)),))
    slides = deck_slides(verdict, DeckInfo("f.csv", "score p, label y", 20_000, "2026-11-26"),
                         grids={1: _png()})
    assert [s.kind for s in slides] == ["title", "verdict", "finding", "section", "appendix"]
    path = tmp_path / "deck.pptx"
    write_pptx(slides, path)
    deck = pptx.Presentation(str(path))
    assert deck.slide_width * 9 == deck.slide_height * 16  # 16:9
    assert len(deck.slides) == 5
    finding = deck.slides[2]
    assert line.sentence in _texts(finding)
    assert "+16.6 points" in _texts(finding)
    assert "13.8 to 19.5 points" in _texts(finding)
    assert len(_pictures(finding)) == 1
    assert "Decision" in _texts(deck.slides[3])


def test_user_text_is_neutralised_in_pptx_and_pdf(tmp_path):
    hostile = "<b>x</b> \u202egnp.exe\x00 =cmd|\u2028next"
    slides = [Slide(hostile, (hostile,), ((hostile, hostile),))]
    write_pptx(slides, tmp_path / "h.pptx")  # lxml refuses NUL: cleaned, never an error
    text = _texts(pptx.Presentation(str(tmp_path / "h.pptx")).slides[0])
    assert "\u202e" not in text
    assert "[U+202E]" in text
    assert "<b>x</b>" in text  # shown as typed (text, not markup)
    assert "\x00" not in text
    assert clean_text("a\u2029b\r\nc") == "a[U+2029]b[U+000D] c"  # shown, not obeyed
    out = io.BytesIO()
    write_pdf(slides, out)
    assert out.getvalue().startswith(b"%PDF")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium renders the grids (kaleido)")
def test_report_cli_writes_the_deck(tmp_path, cli):
    frame = _frame(20_000, 1, planted=0.15)
    source = tmp_path / "planted.csv"
    frame.to_csv(source, index=False)
    pptx_path, pdf_path = tmp_path / "review.pptx", tmp_path / "review.pdf"
    run = cli("report", source, "--score", "score", "--label", "y", "--covariates",
              "region,age", "--max-conditions", "2", "--findings", "3", "--deck", pptx_path,
              "--deck", pdf_path, "--json")
    assert run.status == 0, run.err
    out = run.json
    confirmed = out["findings"]
    assert confirmed, out["verdict"]  # the planted region is confirmed
    assert "r7" in confirmed[0]["description"]
    deck = pptx.Presentation(str(pptx_path))
    assert len(deck.slides) == 3 + len(confirmed) == out["slides"]
    assert out["verdict"][0] in _texts(deck.slides[1])
    for number, finding in enumerate(confirmed, start=2):
        slide = deck.slides[number]
        assert finding["sentence"] in _texts(slide)
        assert finding["p_adjusted"] in _texts(slide)
        (picture,) = _pictures(slide)
        assert picture.image.size[0] >= 1440  # the 2x2 grid, rendered
    pdf = pdf_path.read_bytes()
    assert pdf.startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page(?!s)", pdf)) == len(deck.slides)  # same slides


def test_report_cli_refuses_a_bad_deck_name(tmp_path, cli):
    frame = pd.DataFrame({"p": np.linspace(0.1, 0.9, 50), "y": [0, 1] * 25})
    source = tmp_path / "p.csv"
    frame.to_csv(source, index=False)
    run = cli("report", source, "--score", "p", "--label", "y", "--deck", tmp_path / "x.key")
    assert run.status == 2
    assert "must end in .pptx or .pdf" in run.err


def _box(shape) -> tuple[int, int, int, int]:
    return shape.left, shape.top, shape.left + shape.width, shape.top + shape.height


def _needed_points(shape) -> float:
    """Height (pt) the box's text takes, wrapped with the font's own metrics (DejaVu Sans, what
    LibreOffice draws these slides with here): each paragraph's lines at 1.17 × its size."""
    from PIL import ImageFont

    folder = Path("/usr/share/fonts/truetype/dejavu")
    width = shape.width / 12700 - 14.4  # EMU to pt, less the box's insets (0.1 in each side)
    total = 0.0
    for paragraph in shape.text_frame.paragraphs:
        for run in paragraph.runs:
            size = run.font.size.pt
            font = ImageFont.truetype(str(folder / ("DejaVuSans-Bold.ttf" if run.font.bold
                                                    else "DejaVuSans.ttf")), size)
            lines, line = 1, ""
            for word in run.text.split(" "):
                trial = f"{line} {word}".strip()
                if line and font.getlength(trial) > width:
                    lines, line = lines + 1, word
                else:
                    line = trial
            total += lines * 1.17 * size
    return total


def test_no_value_is_a_bare_dash_and_slides_keep_their_text_apart(tmp_path):
    # a fact without a number reads "not valid (why)"; the slide's title, text, picture and
    # facts do not overlap, whatever the text's length and the picture's shape
    long = "Among rows with " + " and ".join(f"x{i} ≥ {i}" for i in range(40)) + "."
    section = Section("Fix (platt) " + "with a very long title " * 5, (long, long),
                      (("held-out M", "– → –"), ("held-out log loss", "0.53 → 0.528")),
                      picture=_png(1440, 600))
    line = FindingLine(1, "x0 ≥ 0 and " * 20, long, "+1 points", "– to –", "1%", 10, "< 0.001")
    verdict = Verdict(("v",), (line,), False, ("m",), (section,))
    slides = deck_slides(verdict, DeckInfo("f.csv", "m", 10, "d"), grids={1: _png(1440, 810)})
    facts = dict(slides[3].facts)
    assert facts["held-out M"] == "not valid (no finite value on these rows)"
    assert facts["held-out log loss"] == "0.53 → 0.528"
    assert dict(slides[2].facts)["95% CI"].startswith("not valid (")
    assert len(slides[2].title) <= 90
    assert slides[2].title.endswith("…")
    path = tmp_path / "d.pptx"
    write_pptx(slides, path)
    width, height = pptx.Presentation(str(path)).slide_width, 6_858_000
    for page in list(pptx.Presentation(str(path)).slides)[2:4]:
        title, text, facts_box = (s for s in page.shapes if s.has_text_frame)
        (picture,) = _pictures(page)
        if Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists():
            for box in (title, text):  # each box holds its text: nothing runs below it
                assert box.height / 12700 >= _needed_points(box), box.text_frame.text[:60]
        assert _box(title)[3] <= _box(text)[1] <= _box(text)[3] <= _box(picture)[1]
        assert _box(picture)[2] <= _box(facts_box)[0]
        assert all(0 <= v <= limit for s in page.shapes
                   for v, limit in zip(_box(s), (width, height, width, height), strict=True))
        shown = _texts(page)
        assert "–" not in re.sub(r"\d–\d", "", shown)  # no bare dash for a missing value


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
    from mcviz.monitor import monitor_calibration
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
    noise = dict(section.facts)["held-out log loss"].endswith("(within noise)")
    assert noise == (not fix.meaningful)
    watched = monitor_calibration(pred, time="day", n_draws=99)
    (heatmap,) = mon.verdict_section(watched).draw()
    assert any(trace.type == "heatmap" for trace in heatmap.data)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium renders the charts (kaleido)")
def test_section_charts_become_the_slides_picture(tmp_path):
    import plotly.graph_objects as go

    from mcviz.present.deck import section_pictures

    drawn = Section("Monitor", ("s",), (("a", "1"),),
                    draw=lambda: (go.Figure(go.Scatter(x=[0, 1], y=[0, 1], name="<b>x</b>")),))
    kept = Section("Own", ("s",), picture=_png())
    pictures = section_pictures([kept, drawn, Section("None")], scale=1.0)
    assert set(pictures) == {1}  # its own picture kept, nothing to draw: left alone
    from PIL import Image

    assert Image.open(io.BytesIO(pictures[1])).size == (1440, 600)
    slides = deck_slides(Verdict(("v",), sections=(kept, drawn)),
                         DeckInfo("f", "m", 1, "d"), pictures=pictures)
    assert slides[2].picture == kept.picture
    assert slides[3].picture == pictures[1]
