"""The deck's slides drawn as pictures (Pillow): the PDF's pages when only kaleido is there.

The layout is the PPTX's (:mod:`mcviz.present.slides`) at 144 px per inch (1920 × 1080 for
13.333 × 7.5 in; a point is 2 px): the same title, text sizes, facts row and, below them, the
slide's charts as one picture rendered by kaleido.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from mcviz.present.slides import MARGIN, SLIDE_INCHES, Slide, fitted

__all__ = ["slide_picture"]

DPI = 144
"""Pixels per inch of a page."""


def _font(points: int, bold: bool = False) -> Any:
    from PIL import ImageFont

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for folder in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/TTF"):
        path = Path(folder) / name
        if path.is_file():
            return ImageFont.truetype(str(path), points * DPI // 72)
    return ImageFont.load_default(points * DPI // 72)


def _wrapped(draw: Any, text: str, font: Any, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        trial = f"{line} {word}".strip()
        if line and draw.textlength(trial, font=font) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line]


def _draw_text(draw: Any, texts: tuple[str, ...], points: int, top: float, *,
               bold: bool = False) -> None:
    font = _font(points, bold)
    y = int(top * DPI) + 10
    width = int((SLIDE_INCHES[0] - 2 * MARGIN - 0.2) * DPI)
    for text in texts:
        for line in _wrapped(draw, text, font, width):
            draw.text((int((MARGIN + 0.1) * DPI), y), line, font=font, fill="black")
            y += int(points * 1.25 * DPI / 72)
        y += int(points / 3 * DPI / 72)


def slide_picture(slide: Slide, picture: bytes | None = None) -> Any:
    """Draw one slide as a 1920×1080 Pillow image; ``picture`` (PNG) fills the room below."""
    from PIL import Image, ImageDraw

    width, height = SLIDE_INCHES
    image = Image.new("RGB", (int(width * DPI), int(height * DPI)), "white")
    draw = ImageDraw.Draw(image)
    inner, bottom = width - 2 * MARGIN, height - MARGIN
    if slide.kind == "title":
        title, size, used = fitted([slide.title], (40, 32), inner, 1.6, bold=True)
        _draw_text(draw, title, size, 2.2, bold=True)
        body, size, _ = fitted(slide.paragraphs, (24, 20, 16, 12), inner, bottom - 2.4 - used)
        _draw_text(draw, body, size, 2.4 + used)
        return image
    title, size, used = fitted([slide.title], (28, 24, 20), inner, 1.3, bold=True)
    _draw_text(draw, title, size, 0.3, bold=True)
    top = 0.3 + used + 0.05
    facts = (" · ".join(f"{label}: {value}" for label, value in slide.facts),) \
        if slide.facts else ()
    room = bottom - top - (3.4 if picture is not None else 0.0)
    sizes = (22, 20, 18, 16, 14, 12) if slide.kind == "verdict" else (18, 16, 14, 12)
    body, size, used = fitted((*slide.paragraphs, *facts), sizes, inner, room)
    _draw_text(draw, body, size, top)
    top += used
    if picture is not None:
        drawn = Image.open(io.BytesIO(picture)).convert("RGB")
        room_w, room_h = int(inner * DPI), int((bottom - top) * DPI)
        scale = min(room_w / drawn.width, room_h / drawn.height)
        drawn = drawn.resize((max(int(drawn.width * scale), 1), max(int(drawn.height * scale), 1)))
        image.paste(drawn, (int(MARGIN * DPI), int(top * DPI)))
    return image
