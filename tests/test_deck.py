"""The deck (mcviz.deck, `mcviz report --deck`): read back with python-pptx, PDF pages, text."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz.deck import DeckInfo, Slide, clean_text, deck_slides, write_pdf, write_pptx
from mcviz.verdict import FindingLine, Section, Verdict

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
