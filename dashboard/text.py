"""User text stays text: data-derived strings made inert before Streamlit renders them.

Streamlit renders Markdown (and its own directives: ``:red[...]``, ``:material/icon:``, emoji
shortcodes, ``$`` LaTeX) in ``st.markdown``, ``st.caption``, the alert boxes, widget labels and
``st.table`` cells. A column name, category value, file name or filter expression that reaches
one of them could draw an image from another host (``![t](http://host/x.png)``), a link, or
rewrite the page's text. :func:`escape_markdown` makes such a string show literally; the pages
pass every data-derived string through it (via :mod:`dashboard.widgets`' wrappers), and only their
own fixed wording is Markdown. Plain Python, no Streamlit.
"""

from __future__ import annotations

import re
import string

from mcviz.text import display_text

__all__ = ["code", "escape_markdown", "file_name_of", "grouped_notices"]

_PUNCTUATION = frozenset(string.punctuation)  # CommonMark escapes every ASCII punctuation mark
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
_AUTOLINK = re.compile(r"(?i)(?:\b(?:https?|ftp|mailto|xmpp)(?=:)|\bwww(?=\.)|(?=@))")
"""Where GitHub-flavoured Markdown would start a link from bare text (``http:``, ``www.``, an
e-mail's ``@``), which backslash escapes do not stop: an invisible word joiner goes there."""
_WORD_JOINER = "\u2060"


def escape_markdown(text: object) -> str:
    r"""Return ``text`` as Markdown that shows exactly these characters.

    Every ASCII punctuation character gets a backslash (CommonMark's escape: no emphasis, link,
    image, HTML tag, heading, list, table, directive or LaTeX can start), line breaks and other
    control characters become one space (no block can start on a new line), and an invisible
    word joiner (U+2060) breaks the bare-URL and e-mail autolinks of GitHub-flavoured Markdown,
    which escapes alone do not stop (``http://host`` would otherwise become a link). Bidi
    controls are shown as ``[U+202E]`` (:func:`mcviz.text.display_text`), never obeyed.

    Examples
    --------
    >>> escape_markdown("![t](http://h/x.png)")
    '\\!\\[t\\]\\(http\u2060\\:\\/\\/h\\/x\\.png\\)'
    >>> escape_markdown("a\nb  **c**")
    'a b  \\*\\*c\\*\\*'
    """
    flat = _AUTOLINK.sub(lambda m: m.group() + _WORD_JOINER,
                         _CONTROL.sub(" ", display_text(text)))
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in flat)


def code(text: object) -> str:
    """Return ``text`` as a Markdown code span (shown literally, in a monospace font).

    The fence is one backtick longer than the longest run inside, as CommonMark requires.

    Examples
    --------
    >>> code("score")
    '`score`'
    >>> code("a`b")
    '`` a`b ``'
    """
    flat = _CONTROL.sub(" ", display_text(text))
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or flat.startswith(" ") or flat.endswith(" ") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


_UNSAFE_NAME = re.compile(r"[^\w.\-]+")


def file_name_of(text: object, *, limit: int = 80) -> str:
    """Return a download's file name made of ``text``: letters, digits, ``_ . -`` only.

    A name built from a section title or a caption (user text) could otherwise carry a bidi
    control (``"report\u202egpj.exe"`` reads ``report.exe.jpg`` reversed), a path separator or
    a line break into the browser's save dialog. Bidi controls and line separators are
    written out first (:func:`mcviz.text.display_text`), then every run of other characters
    becomes one ``_``.

    >>> file_name_of("Every series: a/b\u202e.csv")
    'Every_series_a_b_U_202E.csv'
    >>> file_name_of("groups.csv")
    'groups.csv'
    """
    name = _UNSAFE_NAME.sub("_", display_text(text)).strip("_ ")
    stem, dot, suffix = name.rpartition(".")
    if dot and len(suffix) <= 8:
        return stem[: limit - len(suffix) - 1].rstrip("_") + "." + suffix
    return name[:limit] or "download"


_DROPPED = re.compile(r"^covariate (?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") dropped: "
                      r"(?P<reason>.*)$", re.DOTALL)


def grouped_notices(notices: list[str] | tuple[str, ...], *, shown: int = 8) -> list[str]:
    """Return one notice per reason for dropped covariates (names listed, then a count).

    A wide file can drop thousands of columns; one caption each kept the Data page busy for
    minutes. Other notices are returned unchanged, in order.

    Examples
    --------
    >>> grouped_notices(["covariate 'a' dropped: it takes a single value.",
    ...                  "covariate 'b' dropped: it takes a single value.", "other"])
    ["2 covariates dropped: it takes a single value. ('a', 'b')", 'other']
    """
    groups: dict[str, list[str]] = {}
    out: list[str | tuple[str]] = []
    for notice in notices:
        match = _DROPPED.match(notice)
        if match is None:
            out.append(notice)
            continue
        reason = match.group("reason")
        if reason not in groups:
            groups[reason] = []
            out.append((reason,))
        groups[reason].append(match.group("name"))
    result = []
    for item in out:
        if isinstance(item, str):
            result.append(item)
            continue
        names = groups[item[0]]
        if len(names) == 1:
            result.append(f"covariate {names[0]} dropped: {item[0]}")
            continue
        listed = ", ".join(names[:shown]) + (f" and {len(names) - shown:,} more"
                                             if len(names) > shown else "")
        result.append(f"{len(names):,} covariates dropped: {item[0]} ({listed})")
    return result
