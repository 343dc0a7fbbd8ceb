"""Data-derived strings made inert before they reach plotly.

Plotly renders a subset of HTML in every text it draws -- titles, axis titles, tick labels,
legend entries, annotations, hover labels and text: ``<a href>`` becomes a clickable link,
``<b>``, ``<i>``, ``<span style>`` and ``<br>`` format the text. A column name or category value
holding such tags would draw them (a link in a category value became clickable in pages and
the report). Two tools:

* :func:`plotly_text` escapes one data-derived string (``&``, ``<``, ``>`` as entities; plotly
  decodes them back, so the viewer reads the original characters);
* :func:`escape_figure` makes a built figure safe in place: every string in its traces (names,
  text, hover text, custom data, categories) and layout (titles, tick labels, annotations) is
  escaped (and bidi controls shown as ``[U+202E]``, :func:`mcviz.text.display_text`) except the
  few tags the figure builders write themselves (``<br>``, ``<b>``, ``<i>``,
  ``<sup>``, ``<sub>``, ``<em>``, ``<extra>`` and the subtitle's font-size ``<span>``). It is
  idempotent (an existing entity is kept) and touches only the strings that change, so a
  figure without markup in its data costs one walk of its JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from mcviz.text import display_text

__all__ = ["escape_figure", "plotly_text", "plotly_texts"]

_OWN_TAGS = re.compile(r"(<br\s*/?>|</?(?:b|i|sup|sub|em|extra)>|<span style='font-size:\d+px'>"
                       r"|</span>)")
_BARE_AMPERSAND = re.compile(r"&(?!(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});)")


def plotly_text(text: object) -> str:
    """Return ``text`` escaped for plotly (``&``, ``<``, ``>`` as HTML entities).

    Examples
    --------
    >>> plotly_text('<a href="//evil">x</a> & co')
    '&lt;a href="//evil"&gt;x&lt;/a&gt; &amp; co'
    """
    return display_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plotly_texts(texts: Iterable[object]) -> list[str]:
    """Return every text of ``texts`` escaped by :func:`plotly_text` (tick labels, hover)."""
    return [plotly_text(t) for t in texts]


def _inert(text: str) -> str:
    """Escape ``text`` except the builders' own tags; keep existing entities (idempotent).

    Examples
    --------
    >>> _inert("M<br><span style='font-size:12px'>x <a href=//e>y</a> &lt; &</span>")
    "M<br><span style='font-size:12px'>x &lt;a href=//e&gt;y&lt;/a&gt; &lt; &amp;</span>"
    >>> _inert(_inert("<a>")) == _inert("<a>")
    True
    """
    text = display_text(text)  # bidi controls shown, never obeyed (mcviz.text)
    if not any(ch in text for ch in "<>&"):
        return text
    pieces = _OWN_TAGS.split(text)
    for i in range(0, len(pieces), 2):  # even pieces lie between the builders' tags
        piece = _BARE_AMPERSAND.sub("&amp;", pieces[i])
        pieces[i] = piece.replace("<", "&lt;").replace(">", "&gt;")
    return "".join(pieces)


def _changed(value: Any) -> Any:
    """Return the escaped form of ``value`` if any string in it changes, else None."""
    if isinstance(value, str):
        clean = _inert(value)
        return clean if clean != value else None
    if isinstance(value, dict):
        changes = {k: c for k, v in value.items() if (c := _changed(v)) is not None}
        return changes or None
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "OUS":
            return None
        items = value.ravel().tolist()
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return None
    changed = [_changed(v) for v in items]
    if all(c is None for c in changed):
        return None
    whole = [_complete(v, c) for v, c in zip(items, changed, strict=True)]
    return np.array(whole, dtype=object).reshape(value.shape) if isinstance(
        value, np.ndarray) else whole


def _complete(value: Any, change: Any) -> Any:
    """Return ``value`` with ``change`` applied (a list is replaced whole: complete items)."""
    if change is None:
        return value
    if isinstance(value, dict):
        return {k: _complete(v, change.get(k)) for k, v in value.items()}
    return change


def escape_figure(figure: Any) -> Any:
    """Escape every data-derived string of a plotly figure in place; returns the figure.

    Examples
    --------
    >>> import plotly.graph_objects as go
    >>> fig = go.Figure(go.Bar(x=["<a href='//e'>x</a>", "b"], y=[1, 2], name="<i>ok</i>"),
    ...                 layout={"title": {"text": "Errors<br>by <b>level</b> <img src=x>"}})
    >>> fig = escape_figure(fig)
    >>> list(fig.data[0].x), fig.data[0].name
    (["&lt;a href='//e'&gt;x&lt;/a&gt;", 'b'], '<i>ok</i>')
    >>> fig.layout.title.text
    'Errors<br>by <b>level</b> &lt;img src=x&gt;'
    """
    data, layout = _stored_json(figure)
    for trace, stored in zip(figure.data, data, strict=True):
        changes = _changed(stored)
        if changes:  # update() merges nested dicts and replaces lists (complete above)
            trace.update(changes)
    changes = _changed({k: v for k, v in layout.items() if k != "template"})
    if changes:
        figure.update_layout(changes)
    return figure


def _stored_json(figure: Any) -> tuple[list[dict], dict]:
    """Return the figure's traces and layout as plotly stores them, read without copying.

    ``to_plotly_json()`` deep-copies the whole figure (3 ms for a reliability figure, ten times
    the walk itself); the walk only reads, so it reads plotly's own JSON (``_data``,
    ``_layout``) where the figure keeps it, and a copy otherwise.
    """
    data, layout = getattr(figure, "_data", None), getattr(figure, "_layout", None)
    if isinstance(data, list) and isinstance(layout, dict) and len(data) == len(figure.data):
        return data, layout
    spec = figure.to_plotly_json()
    return spec.get("data", []), spec.get("layout", {})
