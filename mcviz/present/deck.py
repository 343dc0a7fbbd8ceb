"""The deck to take away from a review meeting: 16:9 PPTX (editable text) and PDF.

:func:`deck_slides` lays out the slides of a :class:`~mcviz.present.verdict.Verdict`: a title slide
(file, model columns, rows, date), the verdict slide (its sentences), one slide per confirmed
finding (its sentence, effect with 95% interval, share, adjusted p, and the review grid of that
scope as a picture), one slide per extra :class:`~mcviz.present.verdict.Section` (the extension point
other analyses use: the fix and the monitor, each with its charts as a picture,
:func:`section_pictures`), and an appendix slide (method, multiplicity, minimum detectable
effect). A statistic without a value is never a bare "–": it reads "not valid (why)"
(:func:`mcviz.present.verdict.stated`), as the verdict's sentences do.

:func:`write_pptx` writes them with python-pptx (every text is a text box: editable);
:func:`write_pdf` draws the same slides as pictures (Pillow) into a PDF. :func:`review_grid`
renders a scope's 2×2 review grid to PNG (kaleido with the system's chromium, MathJax off).

User text (file and column names, category values in descriptions) is data: bidi controls are
made visible and characters XML cannot hold are replaced (:func:`clean_text`).
"""

from __future__ import annotations

import io
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcviz.text import display_text
from mcviz.present.verdict import Section, Verdict, stated

__all__ = ["DeckInfo", "Slide", "clean_text", "deck_slides", "finding_grids", "review_grid",
           "section_pictures", "short_title", "write_deck", "write_pdf", "write_pptx"]

WIDTH, HEIGHT = 1920, 1080
"""Slide size in pixels of the PDF pages (16:9); the PPTX is 13.333 × 7.5 inches."""
GRID_SIZE = (1920, 1080)
"""The review grid picture's size (px, before ``scale``): cells of 960 × 540, the Review page's
presentation layout on a 1920×1080 projector (at 720 px a cell cut its subtitle and legend)."""
SECTION_SIZE = (1440, 600)
"""A section's picture (px, before ``scale``): its one or two charts side by side."""
TITLE_CHARS = 90
"""Longest slide title (characters): a finding's full expression stays in its sentence."""
NO_VALUE = "no finite value on these rows"
"""Why a fact has no value when its source did not say (``stated``)."""


def clean_text(value: object) -> str:
    r"""Return user text safe for a slide: bidi controls shown, XML-invalid characters replaced.

    Bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C) would reorder the text
    around them, line separators (CR, U+2028, U+2029, U+0085) break it:
    :func:`mcviz.text.display_text` writes each as ``[U+202E]``, ``[U+2028]``. A line feed or a
    tab becomes a space; other control characters (which XML cannot hold) become U+FFFD.

    >>> clean_text("a\u202eb\x00c\u2028d\ne")
    'a[U+202E]b�c[U+2028]d e'
    """
    out = []
    for char in display_text(value):
        code = ord(char)
        if char in "\u2028\u2029\x85\r\n\t\x0b\x0c":
            out.append(" ")
        elif unicodedata.category(char) == "Cc" or 0xD800 <= code <= 0xDFFF or code in (
                0xFFFE, 0xFFFF):
            out.append("\ufffd")
        else:
            out.append(char)
    return "".join(out)


@dataclass(frozen=True)
class DeckInfo:
    """What the title slide says: the file, the model's columns, the rows and the date."""

    source: str
    model: str
    rows: int
    date: str
    title: str = "Calibration review"


@dataclass(frozen=True)
class Slide:
    """One slide: a title, paragraphs, label/value facts and an optional PNG picture."""

    title: str
    paragraphs: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    picture: bytes | None = field(default=None, repr=False)
    kind: str = "text"  # "title", "verdict", "finding", "section", "appendix"


def deck_slides(verdict: Verdict, info: DeckInfo, *,
                grids: dict[int, bytes] | None = None,
                pictures: dict[int, bytes] | None = None) -> list[Slide]:
    """Return the slides: title, verdict, one per confirmed finding, sections, appendix.

    ``grids`` maps a finding's rank to its review-grid PNG (:func:`review_grid`), ``pictures``
    a section's position to its charts' PNG (:func:`section_pictures`; else its own picture).
    """
    grids, pictures = grids or {}, pictures or {}
    slides = [
        Slide(info.title, (f"File: {info.source}", f"Model: {info.model}",
                           f"Rows: {info.rows:,}", f"Date: {info.date}"), kind="title"),
        Slide("Verdict", tuple(verdict.sentences), kind="verdict"),
    ]
    for line in verdict.findings:
        slides.append(Slide(short_title(f"Finding #{line.rank}: {line.expression}"),
                            (line.sentence,), _facts(line.facts), grids.get(line.rank),
                            kind="finding"))
    slides.extend(_section_slide(section, pictures.get(i))
                  for i, section in enumerate(verdict.sections))
    slides.append(Slide("Appendix: method, multiplicity, minimum detectable effect",
                        tuple(verdict.appendix), kind="appendix"))
    return slides


def _section_slide(section: Section, picture: bytes | None = None) -> Slide:
    return Slide(short_title(section.title), tuple(section.sentences), _facts(section.facts),
                 picture or section.picture, kind="section")


def _facts(facts: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Facts with every value that holds no number written as "not valid (why)"."""
    return tuple((label, stated(str(value), NO_VALUE)) for label, value in facts)


def short_title(text: str, limit: int = TITLE_CHARS) -> str:
    """Return ``text`` cut at a word boundary to at most ``limit`` characters (then "…").

    >>> short_title("Finding #1: dest in {ATL, BNA, BOS} and hour ≥ 11", 30)
    'Finding #1: dest in {ATL…'
    >>> short_title("Fix (platt)")
    'Fix (platt)'
    """
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


# --------------------------------------------------------------------------------------------
# PPTX


def write_pptx(slides: Sequence[Slide], out: str | Path | io.BytesIO) -> None:
    """Write the slides as a 16:9 PPTX (text boxes, so every text stays editable).

    Raises
    ------
    ImportError
        Without python-pptx (``pip install 'mcviz[export]'``).
    """
    from pptx import Presentation
    from pptx.util import Emu, Inches, Pt

    deck = Presentation()
    deck.slide_width, deck.slide_height = Emu(12_192_000), Emu(6_858_000)  # 13.333 x 7.5 in
    blank = deck.slide_layouts[6]
    for slide in slides:
        page = deck.slides.add_slide(blank)
        title_size = 40 if slide.kind == "title" else 28
        top = 2.4 if slide.kind == "title" else 0.35
        title_height = _text_inches([slide.title], title_size, 12.3, bold=True)
        _text_box(page, [slide.title], Inches(0.5), Inches(top), Inches(12.3),
                  Inches(title_height), Pt(title_size), bold=True)
        body_top = top + max(title_height, 0.8) + 0.2
        if slide.picture is not None:
            text_height = _text_inches(slide.paragraphs, 16, 12.3)
            _text_box(page, slide.paragraphs, Inches(0.5), Inches(body_top), Inches(12.3),
                      Inches(text_height), Pt(16))
            picture_top = body_top + text_height + 0.1
            # the picture as large as the room below the text and beside the facts allows
            aspect = _aspect(slide.picture)
            width = min(13.333 - 0.4 - 0.2 - FACTS_INCHES - 0.3, (7.3 - picture_top) * aspect)
            page.shapes.add_picture(io.BytesIO(slide.picture), Inches(0.4), Inches(picture_top),
                                    width=Inches(width), height=Inches(width / aspect))
            facts_left = 0.4 + width + 0.2
            _facts_box(page, slide.facts, Inches(facts_left), Inches(picture_top),
                       Inches(13.333 - facts_left - 0.3), Inches(7.3 - picture_top))
        else:
            size = Pt(24) if slide.kind in ("verdict", "title") else Pt(18)
            _text_box(page, slide.paragraphs, Inches(0.5), Inches(body_top), Inches(12.3),
                      Inches(7.5 - body_top - (1.8 if slide.facts else 0.3)), size)
            if slide.facts:
                _facts_box(page, slide.facts, Inches(0.5), Inches(5.6), Inches(12.3),
                           Inches(1.6))
    deck.save(out)


FACTS_INCHES = 3.0
"""Width of the facts column beside a picture."""
EM_WIDTH = 0.55
"""Average width of a character of the slide font, in ems (for the lines a text will take);
bold text is taken 15% wider. Measured on LibreOffice's rendering of the PPTX (DejaVu Sans)."""


def _text_inches(paragraphs: Sequence[str], size: float, width: float, *,
                 bold: bool = False) -> float:
    """Height (inches) the paragraphs take at ``size`` points in a box ``width`` inches wide."""
    per_line = max(int(width * 72 / (EM_WIDTH * (1.15 if bold else 1.0) * size)), 1)
    lines = sum(max(math.ceil(len(clean_text(text)) / per_line), 1) for text in paragraphs)
    return (lines * 1.25 * size + len(paragraphs) * size / 3) / 72 + 0.1


def _aspect(png: bytes) -> float:
    """Width over height of a PNG."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.width / image.height


def _text_box(page: Any, paragraphs: Sequence[str], left: int, top: int, width: int,
              height: int, size: int, *, bold: bool = False) -> None:
    frame = page.shapes.add_textbox(left, top, width, height).text_frame
    frame.word_wrap = True
    for i, text in enumerate(paragraphs):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        paragraph.space_after = size // 3
        run = paragraph.add_run()
        run.text = clean_text(text)
        run.font.size = size
        run.font.bold = bold


def _facts_box(page: Any, facts: Sequence[tuple[str, str]], left: int, top: int, width: int,
               height: int) -> None:
    from pptx.util import Pt

    frame = page.shapes.add_textbox(left, top, width, height).text_frame
    frame.word_wrap = True
    for i, (label, value) in enumerate(facts):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        name = paragraph.add_run()
        name.text = clean_text(label)
        name.font.size = Pt(14)
        paragraph.add_line_break()
        number = paragraph.add_run()
        number.text = clean_text(value)
        number.font.size = Pt(22)
        number.font.bold = True
        paragraph.space_after = Pt(10)


# --------------------------------------------------------------------------------------------
# PDF (the same slides drawn as pictures)


def _font(size: int, bold: bool = False) -> Any:
    from PIL import ImageFont

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for folder in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/TTF"):
        path = Path(folder) / name
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def _wrapped(draw: Any, text: str, font: Any, width: int) -> list[str]:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            trial = f"{line} {word}".strip()
            if line and draw.textlength(trial, font=font) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return lines


def slide_picture(slide: Slide) -> Any:
    """Draw one slide as a 1920×1080 Pillow image (the PDF's page)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    title_font = _font(76 if slide.kind == "title" else 52, bold=True)
    y = 460 if slide.kind == "title" else 50
    for line in _wrapped(draw, clean_text(slide.title), title_font, WIDTH - 140):
        draw.text((72, y), line, font=title_font, fill="black")
        y += int(title_font.size * 1.25)
    y += 24
    body = _font(30 if slide.picture is not None else 40)
    for paragraph in slide.paragraphs:
        for line in _wrapped(draw, clean_text(paragraph), body, WIDTH - 144):
            draw.text((72, y), line, font=body, fill="#222222")
            y += int(body.size * 1.3)
        y += int(body.size * 0.5)
    facts_x, facts_y = 72, max(y, HEIGHT - 300)
    if slide.picture is not None:
        grid = Image.open(io.BytesIO(slide.picture)).convert("RGB")
        width = min(round((HEIGHT - y - 30) * grid.width / grid.height),
                    WIDTH - 56 - 40 - round(FACTS_INCHES * WIDTH / 13.333) - 40)
        height = round(width * grid.height / grid.width)
        image.paste(grid.resize((width, height)), (56, y))
        facts_x, facts_y = 56 + width + 40, y + 20
    label, value = _font(26), _font(40, bold=True)
    for name, number in slide.facts:
        draw.text((facts_x, facts_y), clean_text(name), font=label, fill="#555555")
        draw.text((facts_x, facts_y + 34), clean_text(number), font=value, fill="black")
        facts_y += 110
    return image


def write_pdf(slides: Sequence[Slide], out: str | Path | io.BytesIO) -> None:
    """Write the slides as a PDF, one 16:9 page per slide (drawn as in :func:`slide_picture`)."""
    pages = [slide_picture(slide) for slide in slides]
    pages[0].save(out, format="PDF", save_all=True, append_images=pages[1:], resolution=144)


def review_grid(figures: Sequence[Any], *, scale: float = 2.0) -> bytes:
    """Render a scope's review grid (four figures, 2×2) as one PNG for a slide.

    Raises
    ------
    ExportUnavailableError
        Without chromium or kaleido (:func:`mcviz.present.report.figure_image`).
    """
    from mcviz.present.report import slide_image

    width, height = GRID_SIZE
    return slide_image(list(figures), "png", width=width, height=height, scale=scale)


def finding_variable(subpopulation: Any, covariates: Sequence[str],
                     default: str | None = None) -> str | None:
    """Return the variable of a finding's grid: its first condition's, else ``default``."""
    for condition in subpopulation.conditions:
        if condition.column in covariates:
            return str(condition.column)
    return default


def finding_grids(pred: Any, search: Any, verdict: Verdict, *, bins: Sequence[int] = (10, 20, 50),
                  variable: str | None = None, compute: Any = None,
                  scale: float = 2.0) -> dict[int, bytes]:
    """Render the review grid of every confirmed finding of ``verdict`` (rank -> PNG).

    Each grid is :func:`mcviz.present.review.review_results` of the finding's rows (its deviation from
    the full population, reliability, the curves along the finding's first variable and the
    LCS), drawn in presentation fonts and escaped (user text stays text).
    """
    from mcviz.present.figures import escape_figure
    from mcviz.present.review import direct, review_figures, review_results

    by_rank = {finding.rank: finding for finding in search.findings}
    covariates = list(pred.covariate_kinds)
    grids = {}
    for line in verdict.findings:
        sub = by_rank[line.rank].subpopulation
        results = review_results(
            pred, sub, key=f"finding:{sub.description}", bins=tuple(bins),
            variable=finding_variable(sub, covariates, variable or next(iter(covariates), None)),
            compute=compute or direct)
        figures = [escape_figure(cell) for cell in review_figures(
            results, presentation=True, height=GRID_SIZE[1] // 2) if not isinstance(cell, str)]
        grids[line.rank] = review_grid(figures, scale=scale)
    return grids


def section_pictures(sections: Sequence[Section], *, scale: float = 2.0) -> dict[int, bytes]:
    """Render each section's charts side by side as one PNG (the section's position -> PNG).

    A section's ``draw`` gives its figures (at most two are drawn; built in presentation
    fonts by their owner), escaped here as every figure mcviz shows. Sections with a picture of
    their own, or nothing to draw, are left out.

    Raises
    ------
    ExportUnavailableError
        Without chromium or kaleido (:func:`mcviz.present.report.figure_image`).
    """
    from mcviz.present.figures import escape_figure
    from mcviz.present.report import slide_image

    width, height = SECTION_SIZE
    pictures = {}
    for position, section in enumerate(sections):
        if section.picture is not None or section.draw is None:
            continue
        figures = [escape_figure(figure) for figure in section.draw()][:2]
        if figures:
            pictures[position] = slide_image(figures, "png", columns=len(figures), width=width,
                                             height=height, scale=scale)
    return pictures


def write_deck(slides: Sequence[Slide], path: str | Path, *, kind: str | None = None) -> None:
    """Write ``path`` as PPTX or PDF: ``kind`` ("pptx" or "pdf"), else by its suffix.

    Raises
    ------
    ValidationError
        A suffix other than .pptx or .pdf.
    """
    from mcviz.errors import ValidationError

    suffix = f".{kind}" if kind else Path(path).suffix.lower()
    if suffix == ".pptx":
        write_pptx(slides, path)
    elif suffix == ".pdf":
        write_pdf(slides, path)
    else:
        raise ValidationError(f"deck {str(path)!r}: the name must end in .pptx or .pdf, not "
                              f"{suffix or 'nothing'!r}.")
