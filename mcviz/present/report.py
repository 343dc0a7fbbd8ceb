"""Exports: a self-contained HTML report, formula-safe CSV and PNG/SVG images of charts.

* :func:`html_report` writes one HTML file that works offline: plotly.js is inlined once, every
  chart is a ``Plotly.newPlot`` call on its JSON (with ``<``, ``>`` and ``&`` escaped so no data
  can close the script), and every user-supplied string (file and column names, category
  values, descriptions) goes through :func:`html.escape`.
* :func:`safe_csv` neutralises spreadsheet formulas: a text cell (or header) beginning with
  ``=``, ``+``, ``-``, ``−`` (U+2212), ``@``, a tab or a carriage return is prefixed with ``'``
  (OWASP "CSV injection"). Numbers are written as numbers.
* :func:`figure_image` renders PNG or SVG with kaleido, driving Debian's chromium
  (``/usr/bin/chromium``, or ``$MCVIZ_CHROMIUM``) through one kept-alive kaleido server, with
  MathJax disabled. It never downloads a browser: without chromium it raises
  :class:`ExportUnavailableError` saying how to install one.
"""

from __future__ import annotations

import html
import io
import os
import shutil
import threading
import time
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from mcviz.text import csv_text, display_text

__all__ = [
    "ExportUnavailableError",
    "ReportSection",
    "chromium_path",
    "figure_image",
    "html_report",
    "neutralize_formula",
    "safe_csv",
    "slide_image",
]

FORMULA_PREFIXES = ("=", "+", "-", "\u2212", "@", "\t", "\r")
"""Text cells starting with one of these are prefixed with an apostrophe in CSV exports."""

MAX_TABLE_ROWS = 200
"""Tables in the HTML report show at most this many rows (the CSV exports hold them all)."""

IMAGE_TIMEOUT = 120.0
"""Seconds to wait for one image (the first one also starts chromium)."""


class ExportUnavailableError(RuntimeError):
    """Image export is not possible here (no chromium, or kaleido failed)."""


@dataclass(frozen=True)
class ReportSection:
    """One section of the HTML report.

    Attributes
    ----------
    title : str
    text : tuple of str
        Paragraphs (plain text; escaped).
    metrics : tuple of (str, str)
        Name and formatted value pairs, shown as a small table.
    figures : tuple of plotly Figure
    tables : tuple of (str, DataFrame)
        Caption and table.
    columns : int, default 1
        Figures per row (2 lays four figures out as the review view's 2x2 grid).
    column_help : tuple of (str, str)
        Hover text of the tables' column headers (header, help), as the page's tooltips.
    """

    title: str
    text: tuple[str, ...] = ()
    metrics: tuple[tuple[str, str], ...] = ()
    figures: tuple[go.Figure, ...] = ()
    tables: tuple[tuple[str, pd.DataFrame], ...] = ()
    columns: int = 1
    column_help: tuple[tuple[str, str], ...] = ()


# --------------------------------------------------------------------------------------------
# HTML


_CSS = """
body{font-family:Arial,Helvetica,sans-serif;margin:2rem auto;max-width:1200px;color:#222;
line-height:1.45;padding:0 1rem}
h1{font-size:1.8rem}h2{font-size:1.35rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;
margin-top:2.2rem}table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.chart{margin:1rem 0}.meta td:first-child{font-weight:bold}
.caption{color:#555;font-size:.9rem}
.grid{display:grid;gap:.5rem}.grid .chart{margin:0;min-width:0}
"""


def _text(value: object) -> str:
    return html.escape(display_text(value), quote=True)


def _cell(value: object) -> str:
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return ""
        return f"{value:.4g}"
    return _text(value)


def _table_html(frame: pd.DataFrame, *, max_rows: int = MAX_TABLE_ROWS,
                help: Mapping[str, str] | None = None) -> str:
    def header(column: object) -> str:
        tip = (help or {}).get(str(column))
        return f"<th title='{_text(tip)}'>" if tip else "<th>"

    head = "".join(f"{header(c)}{_text(c)}</th>" for c in frame.columns)
    rows = []
    for values in frame.head(max_rows).itertuples(index=False, name=None):
        rows.append("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in values) + "</tr>")
    note = ""
    if len(frame) > max_rows:
        note = (f"<p class='caption'>First {max_rows:,} of {len(frame):,} rows; the CSV export "
                "holds them all.</p>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def _pairs_html(pairs: Iterable[tuple[object, object]]) -> str:
    rows = "".join(f"<tr><td>{_text(k)}</td><td>{_text(v)}</td></tr>" for k, v in pairs)
    return f"<table class='meta'>{rows}</table>"


def _figure_json(figure: go.Figure) -> str:
    """Figure JSON safe inside a <script> element (no '<', '>' or '&' survive)."""
    text = figure.to_json()
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def html_report(
    sections: Sequence[ReportSection],
    *,
    title: str = "mcviz calibration report",
    summary: Mapping[str, object] | None = None,
    mapping: Mapping[str, object] | None = None,
    settings: Mapping[str, object] | None = None,
    version: str | None = None,
    generated: datetime | None = None,
) -> str:
    """Write a self-contained HTML report (plotly.js inlined once; works offline).

    Parameters
    ----------
    sections : sequence of ReportSection
        Charts, tables, metrics and text, in order.
    title : str
    summary, mapping, settings : mapping, optional
        Dataset summary, column mapping and analysis settings (shown as tables, escaped).
    version : str, optional
        The mcviz version (default: the installed one).
    generated : datetime, optional
        Timestamp (default: now, UTC).

    Returns
    -------
    str
        The HTML document.
    """
    from plotly.offline import get_plotlyjs

    if version is None:
        from mcviz import __version__ as version
    generated = generated or datetime.now(UTC)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_text(title)}</title><style>{_CSS}</style>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
        f"<h1>{_text(title)}</h1>",
        f"<p class='caption'>mcviz {_text(version)} · generated "
        f"{_text(generated.strftime('%Y-%m-%d %H:%M:%S %Z'))}</p>",
    ]
    for heading, pairs in (("Dataset", summary), ("Column mapping", mapping),
                           ("Settings", settings)):
        if pairs:
            parts.append(f"<h2>{_text(heading)}</h2>{_pairs_html(pairs.items())}")
    chart = 0
    for section in sections:
        parts.append(f"<h2>{_text(section.title)}</h2>")
        parts.extend(f"<p>{_text(paragraph)}</p>" for paragraph in section.text)
        if section.metrics:
            parts.append(_pairs_html(section.metrics))
        columns = max(int(section.columns), 1)
        if columns > 1:
            parts.append(f"<div class='grid' style='grid-template-columns:repeat({columns},1fr)'>")
        for figure in section.figures:
            chart += 1
            parts.append(
                f"<div class='chart' id='chart-{chart}'></div><script>"
                f"(function(){{var f={_figure_json(figure)};"
                f"Plotly.newPlot('chart-{chart}',f.data,f.layout,"
                "{responsive:true,displaylogo:false});})();</script>"
            )
        if columns > 1:
            parts.append("</div>")
        for caption, frame in section.tables:
            parts.append(f"<p class='caption'>{_text(caption)}</p>"
                         f"{_table_html(frame, help=dict(section.column_help))}")
    parts.append("</body></html>")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# CSV


def neutralize_formula(value: object) -> object:
    """Prefix text that a spreadsheet would run as a formula with an apostrophe.

    A cell is neutralised when it begins with ``= + - − @``, a tab, a carriage return or a
    line feed, also after leading whitespace, control or invisible format characters, and also
    in full-width or other compatibility forms (``＝ ＋ － ＠``: the text is normalised with
    Unicode NFKC before the test; the cell itself is kept as it was).

    Examples
    --------
    >>> neutralize_formula("=HYPERLINK(1)"), neutralize_formula("-x"), neutralize_formula(-1.5)
    ("'=HYPERLINK(1)", "'-x", -1.5)
    >>> neutralize_formula(" =1+1"), neutralize_formula("\uff1d1+1"), neutralize_formula(" ok")
    ("' =1+1", "'＝1+1", ' ok')
    """
    if not isinstance(value, str):
        return value
    if value.startswith((*FORMULA_PREFIXES, "\n")):
        return "'" + value
    normal = unicodedata.normalize("NFKC", value)
    start = 0  # skip whitespace (Z*), controls (Cc) and invisible format characters (Cf)
    while start < len(normal) and (normal[start].isspace()
                                   or unicodedata.category(normal[start]) in ("Cc", "Cf")):
        start += 1
    if normal[start:].startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def safe_csv(frame: pd.DataFrame) -> bytes:
    r"""Return CSV bytes (UTF-8) with formula-like text cells and headers neutralised.

    Examples
    --------
    >>> safe_csv(pd.DataFrame({"@name": ["+1", "ok"], "x": [-1, 2]})).decode()
    "'@name,x\n'+1,-1\nok,2\n"
    """
    out = frame.copy()
    out.columns = [neutralize_formula(csv_text(str(c))) for c in out.columns]
    for column in out.columns:
        series = out[column]
        if not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)):
            out[column] = series.map(lambda v: neutralize_formula(csv_text(v)),
                                     na_action="ignore")
    return out.to_csv(index=False, lineterminator="\n").encode("utf-8")


# --------------------------------------------------------------------------------------------
# Images


_lock = threading.Lock()
_server_path: str | None = None


def chromium_path() -> str | None:
    """Return the chromium executable kaleido should drive, or None (never downloaded)."""
    for candidate in (os.environ.get("MCVIZ_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def figure_image(figure: go.Figure, fmt: str = "png", *, scale: float = 2.0,
                 timeout: float = IMAGE_TIMEOUT) -> bytes:
    """Render ``figure`` as PNG or SVG bytes with kaleido and the system's chromium.

    One kaleido server (one browser) is started on first use and kept alive for every later
    image. MathJax is disabled and plotly.js comes from the installed plotly, so nothing is
    fetched from the network.

    Raises
    ------
    ExportUnavailableError
        When chromium is not installed (with the command to install it), or rendering fails.
    """
    if fmt not in ("png", "svg"):
        raise ValueError(f"format must be 'png' or 'svg', not {fmt!r}.")
    path = chromium_path()
    if path is None:
        raise ExportUnavailableError(
            "PNG/SVG export needs the chromium browser, which is not installed here "
            "(install it with `apt-get install chromium`, or set MCVIZ_CHROMIUM to its path). "
            "The HTML report and the chart toolbar's camera button work without it."
        )
    try:
        import kaleido
    except ImportError:
        raise ExportUnavailableError(
            "PNG/SVG export needs kaleido (`pip install 'mcviz[export]'`)."
        ) from None
    global _server_path
    with _lock:
        _silence_server_thread(kaleido)
        if kaleido._global_server.is_running() and not _server_alive(kaleido):
            kaleido.stop_sync_server(silence_warnings=True)  # its browser died: start again
        try:
            if _server_path != path or not kaleido._global_server.is_running():
                if kaleido._global_server.is_running():
                    kaleido.stop_sync_server(silence_warnings=True)
                kaleido.start_sync_server(path=path, mathjax=False, silence_warnings=True)
                _server_path = path
            opts = {"format": fmt, "scale": scale if fmt == "png" else 1}
            return _call_with_timeout(lambda: kaleido.calc_fig_sync(figure, opts=opts), timeout,
                                      alive=lambda: _server_alive(kaleido))
        except (RuntimeError, OSError) as error:  # the browser failed (kaleido, choreographer)
            if isinstance(error, ExportUnavailableError):
                raise
            _server_path = None
            raise ExportUnavailableError(
                f"chromium failed to render the image ({type(error).__name__}: "
                f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no message'})."
            ) from None


def slide_image(
    figures: Sequence[go.Figure],
    fmt: str = "png",
    *,
    columns: int = 2,
    width: int = 1920,
    height: int = 1080,
    scale: float = 1.0,
    timeout: float = IMAGE_TIMEOUT,
) -> bytes:
    """Render figures as one slide: a grid of ``columns`` per row filling ``width`` x ``height``.

    Each figure is rendered at its cell's size (by :func:`figure_image`); SVG cells are nested
    ``<svg>`` elements of one document, PNG cells are pasted into one image.

    Raises
    ------
    ExportUnavailableError
        As :func:`figure_image`.
    """
    if not figures:
        raise ValueError("a slide needs at least one figure.")
    rows = -(-len(figures) // columns)
    cell_w, cell_h = width // columns, height // rows
    images = []
    for figure in figures:
        sized = go.Figure(figure).update_layout(width=cell_w, height=cell_h)
        images.append(figure_image(sized, fmt, scale=scale, timeout=timeout))
    places = [((i % columns) * cell_w, (i // columns) * cell_h) for i in range(len(images))]
    if fmt == "svg":
        cells = "".join(
            f"<svg x='{x}' y='{y}' width='{cell_w}' height='{cell_h}'"
            + image.decode("utf-8").split("<svg", 1)[1].split(">", 1)[0].replace(
                " width=", " data-w=").replace(" height=", " data-h=")
            + ">" + image.decode("utf-8").split(">", 1)[1].rsplit("</svg>", 1)[0] + "</svg>"
            for image, (x, y) in zip(images, places, strict=True)
        )
        return (f"<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/"
                f"xlink' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"
                f"<rect width='100%' height='100%' fill='white'/>{cells}</svg>").encode()
    from PIL import Image

    canvas = Image.new("RGB", (int(width * scale), int(height * scale)), "white")
    for image, (x, y) in zip(images, places, strict=True):
        canvas.paste(Image.open(io.BytesIO(image)).convert("RGB"),
                     (int(x * scale), int(y * scale)))
    out = io.BytesIO()
    canvas.save(out, format="PNG")
    return out.getvalue()


_failures: list[str] = []
"""The kaleido server thread's failures (its traceback is not printed: the caller says why)."""


def _server_alive(kaleido: Any) -> bool:
    """Return False once kaleido's server thread (the browser's session) has ended."""
    thread = getattr(kaleido._global_server, "_thread", None)
    return thread is None or thread.is_alive()


def _silence_server_thread(kaleido: Any) -> None:
    """Keep a failing browser's traceback (raised in kaleido's thread) off stderr; note it."""
    previous = threading.excepthook
    if getattr(previous, "mcviz_kaleido", False):
        return

    def hook(args: Any) -> None:
        if args.thread is not None and args.thread is getattr(kaleido._global_server, "_thread",
                                                              None):
            first = args.exc_value.args[0] if args.exc_value and args.exc_value.args else ""
            text = str(first if isinstance(first, str) else args.exc_value).strip()
            _failures.append(f"{args.exc_type.__name__}: "
                             f"{text.splitlines()[0][:200] if text else 'no message'}")
            return
        previous(args)

    hook.mcviz_kaleido = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _call_with_timeout(function: Any, timeout: float = IMAGE_TIMEOUT, *,
                       alive: Any = None) -> bytes:
    """Run ``function`` in a thread; a browser that never answers, or died, becomes an error."""
    answers: Queue = Queue(maxsize=1)

    def target() -> None:
        try:
            answers.put((True, function()))
        except Exception as error:  # re-raised in the caller's thread below
            answers.put((False, error))

    threading.Thread(target=target, daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        try:
            ok, value = answers.get(timeout=max(min(0.25, deadline - time.monotonic()), 0.01))
            break
        except Empty:
            if alive is not None and not alive():
                why = _failures[-1] if _failures else "no message"
                raise ExportUnavailableError(
                    f"chromium stopped before rendering the image ({why}).") from None
            if time.monotonic() >= deadline:
                raise ExportUnavailableError(
                    f"chromium did not render the image within {timeout:.0f} s.") from None
    if not ok:
        raise value
    return value
