"""The deck's slides and their PPTX: text boxes and native, editable PowerPoint charts.

A :class:`Slide` holds a title in words, paragraphs, label/value facts and up to two
:class:`~mcviz.present.slide_charts.SlideChart` (or one PNG picture a section brought).
:func:`write_pptx` lays each slide out on 13.333 × 7.5 in (16:9): every text run is at least
:data:`MIN_POINTS` points, every shape lies inside the slide (a text that would not fit is set
smaller, down to :data:`MIN_POINTS`, then cut with "…"), and every chart is a native chart
(python-pptx's chart API: XY scatter with lines, clustered columns), crisp on a projector and
editable, drawn with no browser.

User text (file and column names, category values in descriptions) is data: bidi controls are
made visible and characters XML cannot hold are replaced (:func:`clean_text`).
"""

from __future__ import annotations

import functools
import io
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcviz.present.slide_charts import SlideChart
from mcviz.text import display_text

__all__ = ["MARGIN", "MAX_CHARTS", "MIN_POINTS", "SLIDE_INCHES", "DeckInfo", "Slide", "clean_text",
           "fitted", "short_title", "text_inches", "write_pptx"]

SLIDE_INCHES = (12_192_000 / 914_400, 7.5)
"""The slide's width and height (16:9)."""
MIN_POINTS = 12
"""The smallest text on a slide (points): legible from the back of a meeting room."""
MAX_CHARTS = 2
"""Charts on one slide at most."""
TITLE_CHARS = 90
"""Longest slide title (characters): a finding's full expression stays in its sentence."""
MARGIN = 0.4
"""Left, right and bottom margins (inches)."""
CHART_MIN_INCHES = 3.4
"""Height left to a slide's charts at least: the text above them is set smaller, then cut."""
EM_WIDTH = 0.55
"""Average width of a character of the slide font, in ems (for the lines a text will take);
bold text is taken 15% wider. Measured on LibreOffice's rendering of the PPTX (DejaVu Sans)."""


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
    """One slide: a title, paragraphs, label/value facts, up to two charts or one picture.

    ``kind``: "title", "verdict", "scope", "finding", "section" or "appendix".
    """

    title: str
    paragraphs: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    picture: bytes | None = field(default=None, repr=False)
    kind: str = "text"
    charts: tuple[SlideChart, ...] = ()

    def __post_init__(self) -> None:
        if len(self.charts) > MAX_CHARTS:
            raise ValueError(f"a slide holds at most {MAX_CHARTS} charts, not "
                             f"{len(self.charts)}.")


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


@functools.lru_cache(maxsize=16)
def _font(size: float, bold: bool) -> Any:
    """DejaVu Sans (what LibreOffice draws these slides with here) at ``size`` points, or None."""
    try:
        from PIL import ImageFont
    except ImportError:
        return None
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for folder in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/TTF"):
        path = Path(folder) / name
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return None


def _line_count(text: str, size: float, width: float, bold: bool) -> int:
    """Lines ``text`` wraps to at ``size`` points in ``width`` inches (word wrap)."""
    points = (width - 0.2) * 72  # less the box's insets (0.1 in each side)
    font = _font(size, bold)
    if font is None:  # no font file: an average character width
        per_line = max(int(points / (EM_WIDTH * (1.15 if bold else 1.0) * size)), 1)
        return max(math.ceil(len(text) / per_line), 1)
    lines, line = 1, ""
    for word in text.split(" "):
        trial = f"{line} {word}".strip()
        if line and font.getlength(trial) > points * 0.97:
            lines, line = lines + 1, word
        else:
            line = trial
    return lines


def text_inches(paragraphs: Sequence[str], size: float, width: float, *,
                bold: bool = False) -> float:
    """Height (inches) the paragraphs take at ``size`` points in a box ``width`` inches wide."""
    lines = sum(_line_count(clean_text(text), size, width, bold) for text in paragraphs)
    return (lines * 1.25 * size + len(paragraphs) * size / 3) / 72 + 0.15


def fitted(paragraphs: Sequence[str], sizes: Sequence[int], width: float, room: float, *,
           bold: bool = False) -> tuple[tuple[str, ...], int, float]:
    """Return the paragraphs at the largest of ``sizes`` that fits ``room`` inches; else cut to fit.

    Returns the paragraphs (the last ones shortened with "…" when even the smallest size
    does not fit), the size and the height they take.
    """
    texts = tuple(clean_text(text) for text in paragraphs)
    for size in sizes:
        height = text_inches(texts, size, width, bold=bold)
        if height <= room:
            return texts, size, height
    size = sizes[-1]
    kept: list[str] = []
    for text in texts:
        if text_inches([*kept, text], size, width, bold=bold) <= room:
            kept.append(text)
            continue
        words = text.split(" ")
        low, high = 0, len(words)  # the most words that fit, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            trial = " ".join(words[:middle]) + "…"
            if text_inches([*kept, trial], size, width, bold=bold) <= room:
                low = middle
            else:
                high = middle - 1
        if low:
            kept.append(" ".join(words[:low]).rstrip(" ,;:") + "…")
        break
    return tuple(kept), size, min(text_inches(kept, size, width, bold=bold), room)


# --------------------------------------------------------------------------------------------
# PPTX


def write_pptx(slides: Sequence[Slide], out: str | Path | io.BytesIO) -> None:
    """Write the slides as a 16:9 PPTX: text boxes and native charts, every one editable.

    Raises
    ------
    ImportError
        Without python-pptx (``pip install 'mcviz[export]'``).
    """
    from pptx import Presentation
    from pptx.util import Emu

    deck = Presentation()
    deck.slide_width, deck.slide_height = Emu(12_192_000), Emu(6_858_000)  # 13.333 x 7.5 in
    blank = deck.slide_layouts[6]
    for slide in slides:
        _lay_out(deck.slides.add_slide(blank), slide)
    deck.save(out)


def _lay_out(page: Any, slide: Slide) -> None:
    """Place the title, text, facts and charts of one slide top to bottom, inside the slide."""
    width, height = SLIDE_INCHES
    inner = width - 2 * MARGIN
    bottom = height - MARGIN
    if slide.kind == "title":
        title, size, used = fitted([short_title(slide.title)], (40, 32), inner, 1.6,
                                   bold=True)
        _text_box(page, title, MARGIN, 2.2, inner, used, size, bold=True)
        body, size, used2 = fitted(slide.paragraphs, (24, 20, 16, 12), inner,
                                   bottom - 2.4 - used)
        _text_box(page, body, MARGIN, 2.4 + used, inner, used2, size)
        return
    title, size, used = fitted([short_title(slide.title)], (28, 24, 20), inner, 1.3,
                               bold=True)
    _text_box(page, title, MARGIN, 0.3, inner, used, size, bold=True)
    top = 0.3 + used + 0.05
    graphic = bool(slide.charts) or slide.picture is not None
    beside = bool(slide.charts) and bool(slide.facts)  # the facts in a column right of charts
    facts_height = _facts_inches(slide.facts, inner) if slide.facts and not beside else 0.0
    room = bottom - top - facts_height - (CHART_MIN_INCHES if graphic else 0.0)
    sizes = (22, 20, 18, 16, 14, 12) if slide.kind == "verdict" else (18, 16, 14, 12)
    if slide.paragraphs:
        body, size, used = fitted(slide.paragraphs, sizes, inner, room)
        _text_box(page, body, MARGIN, top, inner, used, size)
        top += used
    if slide.facts and not beside:
        facts_height = min(facts_height, bottom - top)
        _facts_row(page, slide.facts, MARGIN, top, inner, facts_height)
        top += facts_height
    if slide.charts:
        gap, room_width = 0.2, inner
        if beside:
            room_width = inner - FACTS_INCHES - gap
            _facts_column(page, slide.facts, MARGIN + room_width + gap, top + 0.1,
                          FACTS_INCHES, bottom - top - 0.1)
        each = (room_width - gap * (len(slide.charts) - 1)) / len(slide.charts)
        for i, chart in enumerate(slide.charts):
            _native_chart(page, chart, MARGIN + i * (each + gap), top + 0.05, each,
                          bottom - top - 0.05)
    elif slide.picture is not None:
        aspect = _aspect(slide.picture)
        room_height = bottom - top - 0.05
        picture_width = min(inner, room_height * aspect)
        from pptx.util import Inches

        page.shapes.add_picture(io.BytesIO(slide.picture), Inches(MARGIN), Inches(top + 0.05),
                                width=Inches(picture_width),
                                height=Inches(picture_width / aspect))


def _aspect(png: bytes) -> float:
    """Width over height of a PNG."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.width / image.height


def _text_box(page: Any, paragraphs: Sequence[str], left: float, top: float, width: float,
              height: float, size: int, *, bold: bool = False) -> None:
    from pptx.util import Inches, Pt

    frame = page.shapes.add_textbox(Inches(left), Inches(top), Inches(width),
                                    Inches(height)).text_frame
    frame.word_wrap = True
    for i, text in enumerate(paragraphs):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        paragraph.space_after = Pt(size // 3)
        run = paragraph.add_run()
        run.text = clean_text(text)
        run.font.size = Pt(max(size, MIN_POINTS))
        run.font.bold = bold


NOTE_INCHES = 0.66
"""Room under a chart for its note (two lines at 12 pt)."""
FACT_LABEL, FACT_VALUE = 14, 20
"""The facts row: label and value sizes (points)."""
FACTS_INCHES = 2.6
"""Width of the facts column right of a slide's charts."""


def _facts_column(page: Any, facts: Sequence[tuple[str, str]], left: float, top: float,
                  width: float, height: float) -> None:
    """Write the facts one under another (label, then the value in bold), as large as fits."""
    from pptx.util import Inches, Pt

    for value_size in (FACT_VALUE, 18, 16, 14, MIN_POINTS):
        label_size = min(FACT_LABEL, value_size)
        needed = sum(text_inches([label], label_size, width) + text_inches(
            [value], value_size, width, bold=True) - 0.15 for label, value in facts)
        if needed <= height:
            break
    frame = page.shapes.add_textbox(Inches(left), Inches(top), Inches(width),
                                    Inches(min(needed, height))).text_frame
    frame.word_wrap = True
    for i, (label, value) in enumerate(facts):
        name = (frame.paragraphs[0] if i == 0 else frame.add_paragraph())
        name.space_after = Pt(label_size // 3)
        run = name.add_run()
        run.text, run.font.size = clean_text(label), Pt(label_size)
        number = frame.add_paragraph()
        number.space_after = Pt(value_size // 3)
        run = number.add_run()
        run.text, run.font.size, run.font.bold = clean_text(value), Pt(value_size), True


def _facts_inches(facts: Sequence[tuple[str, str]], width: float) -> float:
    each = width / len(facts)
    return max(text_inches([label], FACT_LABEL, each) + text_inches([value], FACT_VALUE, each,
                                                                    bold=True) - 0.15
               for label, value in facts)


def _facts_row(page: Any, facts: Sequence[tuple[str, str]], left: float, top: float,
               width: float, height: float) -> None:
    """Write the facts side by side: a small label above its value in bold."""
    from pptx.util import Inches, Pt

    each = width / len(facts)
    for i, (label, value) in enumerate(facts):
        frame = page.shapes.add_textbox(Inches(left + i * each), Inches(top), Inches(each),
                                        Inches(height)).text_frame
        frame.word_wrap = True
        name = frame.paragraphs[0].add_run()
        name.text = clean_text(label)
        name.font.size = Pt(FACT_LABEL)
        number = frame.add_paragraph().add_run()
        number.text = clean_text(value)
        number.font.size = Pt(FACT_VALUE)
        number.font.bold = True


def _native_chart(page: Any, chart: SlideChart, left: float, top: float, width: float,
                  height: float) -> None:
    """Draw ``chart`` as a native PowerPoint chart in the given box (inches)."""
    from pptx.chart.data import CategoryChartData, XyChartData
    from pptx.enum.chart import XL_CHART_TYPE, XL_LEGEND_POSITION
    from pptx.util import Inches, Pt

    if chart.kind == "xy":  # LibreOffice draws no XY series shorter than a later one when it
        # comes first: the longest series first (measured: a 3-point diagonal before 8 points)
        longest = max(range(len(chart.series)), key=lambda i: len(chart.series[i].x))
        chart = replace(chart, series=(chart.series[longest], *chart.series[:longest],
                                       *chart.series[longest + 1:]))
    if chart.kind == "columns":
        data = CategoryChartData()
        data.categories = [clean_text(c) for c in chart.categories]
        for series in chart.series:
            data.add_series(clean_text(series.name), [float(v) for v in series.y])
        kind = XL_CHART_TYPE.COLUMN_CLUSTERED
    else:
        data = XyChartData()
        for series in chart.series:
            points = data.add_series(clean_text(series.name))
            for x, y in zip(series.x, series.y, strict=True):
                points.add_data_point(float(x), float(y))
        kind = XL_CHART_TYPE.XY_SCATTER_LINES_NO_MARKERS
    note = NOTE_INCHES if chart.note else 0.0
    frame = page.shapes.add_chart(kind, Inches(left), Inches(top), Inches(width),
                                  Inches(height - note), data)
    if chart.note:  # under the chart: a chart title's runs all take the title's format
        texts, size, _used = fitted([chart.note], (MIN_POINTS,), width, note)
        _text_box(page, texts, left, top + height - note, width, note, size)
    drawn = frame.chart
    drawn.font.size = Pt(MIN_POINTS + 2)
    drawn.has_title = True
    title = drawn.chart_title.text_frame
    title.text = clean_text(chart.title)
    for font in (title.paragraphs[0].font, title.paragraphs[0].runs[0].font):
        font.size, font.bold = Pt(16), True
    _style_series(drawn, chart)
    _style_axes(drawn, chart)
    drawn.has_legend = not any(spec.colors for spec in chart.series)  # columns named A, B
    if not drawn.has_legend:
        return
    drawn.legend.position = XL_LEGEND_POSITION.BOTTOM
    drawn.legend.include_in_layout = False
    drawn.legend.font.size = Pt(MIN_POINTS)
    _one_legend_entry_per_name(drawn, chart)


def _style_series(drawn: Any, chart: SlideChart) -> None:
    from pptx.dml.color import RGBColor
    from pptx.enum.chart import XL_MARKER_STYLE
    from pptx.enum.dml import MSO_LINE_DASH_STYLE
    from pptx.util import Pt

    for series, spec in zip(drawn.plots[0].series, chart.series, strict=True):
        color = RGBColor.from_string(spec.color)
        if chart.kind == "columns":
            series.format.fill.solid()
            series.format.fill.fore_color.rgb = color
            for point, own in zip(series.points, spec.colors, strict=False):  # per category
                point.format.fill.solid()
                point.format.fill.fore_color.rgb = RGBColor.from_string(own)
            continue
        series.smooth = False
        line = series.format.line
        line.color.rgb = color
        line.width = Pt({"band": 1.0, "dotted": 2.0}.get(spec.style, 2.75))
        if spec.style in ("band", "dotted"):
            line.dash_style = (MSO_LINE_DASH_STYLE.DASH if spec.style == "band"
                               else MSO_LINE_DASH_STYLE.ROUND_DOT)
        if spec.style == "markers":
            series.marker.style = XL_MARKER_STYLE.CIRCLE
            series.marker.size = 7
            series.marker.format.fill.solid()
            series.marker.format.fill.fore_color.rgb = color
            series.marker.format.line.color.rgb = color
        else:
            series.marker.style = XL_MARKER_STYLE.NONE
    if chart.kind == "columns":
        drawn.plots[0].gap_width = 60
        drawn.plots[0].overlap = 0
        drawn.value_axis.minimum_scale = 0.0  # a column's height is its value


def _style_axes(drawn: Any, chart: SlideChart) -> None:
    from pptx.util import Pt

    x_axis, y_axis = drawn.category_axis, drawn.value_axis
    for axis, text, bounds in ((x_axis, chart.x_title, chart.x_range),
                               (y_axis, chart.y_title, chart.y_range)):
        axis.tick_labels.font.size = Pt(MIN_POINTS)
        if text:
            axis.has_title = True
            axis.axis_title.text_frame.text = clean_text(text)
            axis.axis_title.text_frame.paragraphs[0].runs[0].font.size = Pt(MIN_POINTS + 1)
            axis.axis_title.text_frame.paragraphs[0].runs[0].font.bold = False
        if bounds is not None and (chart.kind == "xy" or axis is y_axis):
            axis.minimum_scale, axis.maximum_scale = float(bounds[0]), float(bounds[1])
    y_axis.has_major_gridlines = True
    if chart.y_percent:
        y_axis.tick_labels.number_format = "0%"
        y_axis.tick_labels.number_format_is_linked = False
    if chart.x_dates:
        x_axis.tick_labels.number_format = "yyyy-mm-dd"
        x_axis.tick_labels.number_format_is_linked = False
    from pptx.enum.chart import XL_TICK_LABEL_POSITION

    # labels at the bottom edge, not at y = 0 mid-chart (a category's name sat on its own
    # negative column on the comparison deck, #40); an XY chart's y axis at the left edge
    x_axis.tick_label_position = XL_TICK_LABEL_POSITION.LOW
    if chart.kind == "xy":
        y_axis.tick_label_position = XL_TICK_LABEL_POSITION.LOW


def _one_legend_entry_per_name(drawn: Any, chart: SlideChart) -> None:
    """Hide the legend entries of a series' further pieces and of bands' edges (XML: c:delete)."""
    from lxml import etree
    from pptx.oxml.ns import qn

    legend = drawn.legend._element
    anchor = legend.find(qn("c:legendPos"))
    seen: set[str] = set()
    for index, spec in enumerate(chart.series):
        hide = spec.name in seen
        seen.add(spec.name)
        if not hide:
            continue
        entry = etree.SubElement(legend, qn("c:legendEntry"))
        etree.SubElement(entry, qn("c:idx")).set("val", str(index))
        etree.SubElement(entry, qn("c:delete")).set("val", "1")
        if anchor is not None:
            anchor.addnext(entry)
            anchor = entry
