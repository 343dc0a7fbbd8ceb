"""Data-derived strings made inert before they reach plotly.

Plotly renders a subset of HTML in every text it draws -- titles, axis titles, tick labels,
legend entries, annotations, hover labels and text: ``<a href>`` becomes a clickable link,
``<b>``, ``<i>``, ``<span style>`` and ``<br>`` format the text. A column name or category value
holding such tags would draw them (a link in a category value became clickable in pages and
the report). :func:`plotly_text` escapes the three characters plotly parses (``&``, ``<``,
``>``; plotly decodes the entities back, so the viewer reads the original text); the figure
builders pass every data-derived string through it and keep their own markup (``<br>``,
``<sup>``) outside it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["plotly_text", "plotly_texts"]


def plotly_text(text: object) -> str:
    """Return ``text`` escaped for plotly (``&``, ``<``, ``>`` as HTML entities).

    Examples
    --------
    >>> plotly_text('<a href="//evil">x</a> & co')
    '&lt;a href="//evil"&gt;x&lt;/a&gt; &amp; co'
    """
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plotly_texts(texts: Iterable[object]) -> list[str]:
    """Return every text of ``texts`` escaped by :func:`plotly_text` (tick labels, hover)."""
    return [plotly_text(t) for t in texts]
