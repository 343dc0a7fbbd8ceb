"""The deck to take away from a review meeting: 16:9 PPTX with native charts, and its PDF.

:func:`deck_slides` lays out the slides of a :class:`~mcviz.present.verdict.Verdict`: a title
slide (file, model columns, rows, date), the verdict slide (its sentences), the scope's charts
(the full population, or the scope the Review page shows), the slides of each confirmed finding
(its sentence, effect with 95% interval, share and adjusted p above two charts: the deviation
from the full population and the reliability diagram; then the rows per score bin and the
curves along the finding's variable; then its own calibration and the LCS), one slide per extra
:class:`~mcviz.present.verdict.Section` (the fix, the monitor: their charts read from their
figures, :func:`section_charts`), and an appendix slide (method, multiplicity, minimum
detectable effect). A statistic without a value is never a bare "–": it reads "not valid (why)"
(:func:`mcviz.present.verdict.stated`).

Charts are native PowerPoint charts (:mod:`mcviz.present.slides`): no browser is needed for the
PPTX. :func:`write_pdf` converts that PPTX with LibreOffice (``soffice --headless``) when it is
installed, else draws the same slides with kaleido's pictures of the same charts
(:func:`mcviz.present.slide_charts.chart_figure`); with neither it raises
:class:`~mcviz.present.report.ExportUnavailableError` saying why in one line.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcviz.present.report import ExportUnavailableError
from mcviz.present.slide_charts import SlideChart, figure_charts, review_charts
from mcviz.present.slides import (
    MAX_CHARTS,
    DeckInfo,
    Slide,
    clean_text,
    short_title,
    write_pptx,
)
from mcviz.present.verdict import SCORE_ALONE, Section, Verdict, stated

__all__ = ["DeckInfo", "Slide", "clean_text", "deck_slides", "filter_words", "finding_charts",
           "pdf_unavailable", "scope_charts", "score_alone_notes", "section_charts",
           "short_title", "write_deck", "write_pdf", "write_pptx"]

SCORE_ALONE_NOTE = (f"{SCORE_ALONE[0].upper()}{SCORE_ALONE[1:]}: it is not drawn; its own "
                    "calibration shows the gap.")
"""A finding bounded by the score alone: said under its sentence on its slide."""
NO_VALUE = "no finite value on these rows"
"""Why a fact has no value when its source did not say (``stated``)."""
PDF_TIMEOUT = 120.0
"""Seconds LibreOffice may take to convert a deck (a first start on a busy machine: ~10 s)."""
IMAGE_TIMEOUT = 30.0
"""Seconds kaleido may take for one chart of the PDF before the PDF is given up."""
WORDS = ((" not in {", " is none of {"), (" in {", " is one of {"), (" == ", " is "),
         (" != ", " is not "), (" >= ", " at least "), (" ≥ ", " at least "),
         (" <= ", " at most "), (" ≤ ", " at most "), (" > ", " above "), (" < ", " below "))
"""Filter operators said in words in a slide's title."""


def deck_slides(verdict: Verdict, info: DeckInfo, *,
                charts: Mapping[int, Sequence[SlideChart]] | None = None,
                scope: tuple[str, Sequence[SlideChart]] | None = None,
                sections: Mapping[int, Sequence[SlideChart]] | None = None,
                notes: Mapping[int, str] | None = None) -> list[Slide]:
    """Return the slides: title, verdict, scope, each confirmed finding, sections, appendix.

    ``charts`` maps a finding's rank to its charts (:func:`finding_charts`), ``scope`` gives the
    scope's name in words and its charts (:func:`scope_charts`), ``sections`` a section's
    position to its charts (:func:`section_charts`; else its own picture, if any). Charts go
    two to a slide. ``notes`` maps a finding's rank to a sentence said under its own (why its
    charts are not drawn, or what they are drawn from).
    """
    charts, sections, notes = charts or {}, sections or {}, notes or {}
    said = list(verdict.sentences)
    next_step = getattr(verdict, "next_step", "")
    if next_step:
        said.append(f"Next step: {next_step}")
    slides = [
        Slide(info.title, (f"File: {info.source}", f"Model: {info.model}",
                           f"Rows: {info.rows:,}", f"Date: {info.date}"), kind="title"),
        Slide("Verdict", tuple(said), kind="verdict"),
    ]
    if scope is not None and scope[1]:
        name, drawn = scope
        for i, pair in enumerate(_pairs(drawn)):
            slides.append(Slide(short_title(name if i == 0 else f"{name}: {_titles(pair)}"),
                                kind="scope", charts=pair))
    for line in verdict.findings:
        head = f"Finding {line.rank}: {group_words(line)}"
        pairs = _pairs(charts.get(line.rank, ()))
        said_here = (line.sentence, notes[line.rank]) if line.rank in notes else (line.sentence,)
        slides.append(Slide(short_title(head), said_here, _facts(line.facts),
                            kind="finding", charts=pairs[0] if pairs else ()))
        slides.extend(Slide(short_title(f"Finding {line.rank}: {_titles(pair)}"),
                            kind="finding", charts=pair) for pair in pairs[1:])
    slides.extend(_section_slide(section, sections.get(i, ()))
                  for i, section in enumerate(verdict.sections))
    slides.append(Slide("Appendix: method, multiplicity, minimum detectable effect",
                        tuple(verdict.appendix), kind="appendix"))
    return slides


def group_words(line: Any) -> str:
    """Return a finding's group as a title says it: its words, else its filter in words.

    >>> from types import SimpleNamespace as R
    >>> group_words(R(expression='region == r7 and age >= 40'))
    'region is r7 and age at least 40'
    """
    words = getattr(line, "group", None)
    if words:
        return str(words)
    return filter_words(str(line.expression))


def filter_words(expression: str) -> str:
    """Return a filter expression with its operators said in words (for a slide's title).

    >>> filter_words('age >= 65 and plan in {basic, gold}')
    'age at least 65 and plan is one of {basic, gold}'
    """
    for operator, said in WORDS:
        expression = expression.replace(operator, said)
    return expression


def _pairs(charts: Sequence[SlideChart]) -> list[tuple[SlideChart, ...]]:
    charts = tuple(charts)
    return [charts[i:i + MAX_CHARTS] for i in range(0, len(charts), MAX_CHARTS)]


def _titles(pair: Sequence[SlideChart]) -> str:
    words = [chart.title.split(" (")[0] for chart in pair]
    return " and ".join([words[0], *(w[:1].lower() + w[1:] for w in words[1:])])


def _section_slide(section: Section, charts: Sequence[SlideChart]) -> Slide:
    charts = tuple(charts)[:MAX_CHARTS]
    return Slide(short_title(section.title), tuple(section.sentences), _facts(section.facts),
                 None if charts else section.picture, kind="section", charts=charts)


def _facts(facts: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Facts with every value that holds no number written as "not valid (why)"."""
    return tuple((label, stated(str(value), NO_VALUE)) for label, value in facts)


# --------------------------------------------------------------------------------------------
# Charts: read from results already computed


def scope_charts(results: Any, *, deviation: bool = True) -> tuple[SlideChart, ...]:
    """Return a scope's charts: calibration, reliability, curves and LCS (two slides).

    Read from its :class:`~mcviz.present.review.ReviewResults`; nothing is recomputed.
    ``deviation`` False: a group bounded by the score alone, drawn by its own calibration
    (:func:`~mcviz.present.slide_charts.review_charts`).
    """
    return review_charts(results, counts=False, deviation=deviation)


def score_alone_notes(pred: Any, subpopulations: Mapping[int, Any]) -> dict[int, str]:
    """Return the note of each finding (rank -> sentence) bounded by the score alone.

    Its slide says why its deviation from the full population is not drawn
    (:data:`~mcviz.present.verdict.SCORE_ALONE`).
    """
    from mcviz.subpopulations import on_score_alone

    return {rank: SCORE_ALONE_NOTE for rank, sub in subpopulations.items()
            if on_score_alone(pred, sub)}


def finding_variable(subpopulation: Any, covariates: Sequence[str],
                     default: str | None = None) -> str | None:
    """Return the variable of a finding's curves.

    Its first numeric condition's column, else the first covariate it has no condition on
    (within one level of a nominal variable its curve would be one bar), else ``default``.

    >>> from types import SimpleNamespace as R
    >>> sub = R(conditions=[R(column="region", op="=="), R(column="age", op=">=")])
    >>> only_region = R(conditions=sub.conditions[:1])
    >>> finding_variable(sub, ["region", "age"]), finding_variable(only_region, ["region", "age"])
    ('age', 'age')
    """
    named = [str(c.column) for c in subpopulation.conditions if c.column in covariates]
    numeric = [str(c.column) for c in subpopulation.conditions
               if c.column in covariates and c.op not in ("==", "!=", "in", "not in")]
    others = [str(name) for name in covariates if name not in named]
    return next(iter(numeric + others + named), default)


def finding_charts(pred: Any, search: Any, verdict: Verdict, *,
                   bins: Sequence[int] = (10, 20, 50), variable: str | None = None,
                   compute: Any = None) -> dict[int, tuple[SlideChart, ...]]:
    """Return the charts of every confirmed finding of ``verdict`` (rank -> charts).

    Each finding's results are :func:`mcviz.present.review.review_results` of its rows (through
    ``compute``, which may hold them already): its deviation from the full population,
    reliability, the curves along the finding's first variable, its own calibration and LCS.
    A finding bounded by the score alone has no deviation drawn (:func:`score_alone_notes`
    says why on its slide).
    """
    from mcviz.present.review import direct, review_results
    from mcviz.subpopulations import on_score_alone

    by_rank = {finding.rank: finding for finding in search.findings}
    covariates = list(pred.covariate_kinds)
    drawn = {}
    for line in verdict.findings:
        sub = by_rank[line.rank].subpopulation
        results = review_results(
            pred, sub, key=f"finding:{sub.description}", bins=tuple(bins),
            variable=finding_variable(sub, covariates, variable or next(iter(covariates), None)),
            compute=compute or direct)
        drawn[line.rank] = review_charts(
            results, deviation=not on_score_alone(pred, sub))
    return drawn


def section_charts(sections: Sequence[Section]) -> dict[int, tuple[SlideChart, ...]]:
    """Each section's charts (position -> charts), read from the figures its ``draw`` gives.

    At most two; a figure with no scatter or bar traces (a heat map) gives none, and a
    section without any keeps its own picture or its words alone.
    """
    drawn = {}
    for position, section in enumerate(sections):
        if section.draw is None:
            continue
        charts = tuple(chart for figure in section.draw() for chart in figure_charts(figure))
        if charts:
            drawn[position] = charts[:MAX_CHARTS]
    return drawn


# --------------------------------------------------------------------------------------------
# PDF


def soffice_path() -> str | None:
    """LibreOffice's ``soffice`` (``$MCVIZ_SOFFICE``, else on PATH), or None."""
    for candidate in (os.environ.get("MCVIZ_SOFFICE"), shutil.which("soffice"),
                      shutil.which("libreoffice")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def pdf_unavailable() -> str | None:
    """Why no PDF can be made here (one sentence), or None when LibreOffice or kaleido can."""
    if soffice_path() is not None or _kaleido_ready():
        return None
    return ("the PDF needs LibreOffice (`apt-get install libreoffice-impress`) or kaleido "
            "with chromium (`pip install 'mcviz[export]'`, `apt-get install chromium`); "
            "neither is installed here.")


def _kaleido_ready() -> bool:
    from mcviz.present.report import chromium_path

    try:
        import kaleido  # noqa: F401
    except Exception:  # an import that fails in any way leaves kaleido out
        return False
    return chromium_path() is not None


def write_pdf(slides: Sequence[Slide], out: str | Path | io.BytesIO) -> None:
    """Write the slides as a PDF: LibreOffice converts their PPTX, else kaleido draws them.

    Raises
    ------
    ExportUnavailableError
        Neither is installed, or the one there failed (the message says why, in one line).
    """
    why = pdf_unavailable()
    if why is not None:
        raise ExportUnavailableError(why)
    pdf = _libreoffice_pdf(slides) if soffice_path() is not None else _kaleido_pdf(slides)
    if isinstance(out, io.BytesIO):
        out.write(pdf)
    else:
        Path(out).write_bytes(pdf)


def _libreoffice_pdf(slides: Sequence[Slide]) -> bytes:
    """Convert the slides' PPTX with ``soffice --headless --convert-to pdf`` (own profile)."""
    with tempfile.TemporaryDirectory(prefix="mcviz-deck-") as folder:
        source = Path(folder) / "deck.pptx"
        write_pptx(slides, source)
        command = [str(soffice_path()), f"-env:UserInstallation={(Path(folder) / 'p').as_uri()}",
                   "--headless", "--norestore", "--convert-to", "pdf", "--outdir", folder,
                   str(source)]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, error = process.communicate(timeout=PDF_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # soffice and the soffice.bin it started
            process.communicate()
            raise ExportUnavailableError(
                f"LibreOffice did not convert the deck within {PDF_TIMEOUT:.0f} s.") from None
        target = Path(folder) / "deck.pdf"
        if not target.is_file():
            last = (error.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
            raise ExportUnavailableError(f"LibreOffice did not convert the deck ({last}).")
        return target.read_bytes()


def _kaleido_pdf(slides: Sequence[Slide]) -> bytes:
    """Draw every slide as a picture (its charts rendered by kaleido) into one PDF."""
    from mcviz.present.pdf_pages import slide_picture
    from mcviz.present.report import slide_image
    from mcviz.present.slide_charts import chart_figure

    pages = []
    for slide in slides:
        picture = slide.picture
        if slide.charts:
            figures = [chart_figure(chart) for chart in slide.charts]
            picture = slide_image(figures, "png", columns=len(figures),
                                  width=960 * len(figures), height=620, scale=1.0,
                                  timeout=IMAGE_TIMEOUT)
        pages.append(slide_picture(slide, picture))
    out = io.BytesIO()
    pages[0].save(out, format="PDF", save_all=True, append_images=pages[1:], resolution=144)
    return out.getvalue()


def write_deck(slides: Sequence[Slide], path: str | Path | io.BytesIO, *,
               kind: str | None = None) -> None:
    """Write ``path`` as PPTX or PDF: ``kind`` ("pptx" or "pdf"), else by its suffix.

    Raises
    ------
    ValidationError
        A suffix other than .pptx or .pdf.
    ExportUnavailableError
        A PDF that cannot be made here (:func:`write_pdf`).
    """
    from mcviz.errors import ValidationError

    suffix = f".{kind}" if kind else Path(str(path)).suffix.lower()
    if suffix == ".pptx":
        write_pptx(slides, path)
    elif suffix == ".pdf":
        write_pdf(slides, path)
    else:
        raise ValidationError(f"deck {str(path)!r}: the name must end in .pptx or .pdf, not "
                              f"{suffix or 'nothing'!r}.")
