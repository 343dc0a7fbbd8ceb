r"""User text is data: shown as written, never steering the page, the CSV or the parser.

Column names, category levels, file names, filter expressions and link fields come from whoever
made the file or the link. Three helpers make such text inert wherever mcviz shows or writes it;
every surface (pages, figures, report, deck, CLI) calls them at the moment it shows the text,
never on the data itself (a level named with a control character still selects its rows):

* :func:`display_text` neutralises the Unicode bidirectional controls, which reorder the text
  around them (U+202E, RIGHT-TO-LEFT OVERRIDE, makes ``"level \u202e1 = p"`` read backwards
  in a finding's sentence, a picker and a report), and every line separator but the line feed
  (CR, U+2028, U+2029, U+0085, U+000B, U+000C: a name that breaks a picker's option, a table
  cell or a terminal line, or returns the cursor over what was written): each becomes a
  visible ``[U+202E]``, ``[U+000D]``. The line feed stays (messages are written on lines).
* :func:`csv_text` turns every line separator inside a cell (CR, CRLF, U+2028, U+2029, U+0085,
  U+000B, U+000C) into a line feed, which every CSV writer quotes: a bare CR is otherwise
  written unquoted by writers that end rows with LF, and a reader splits the row there.
* :func:`check_nesting` refuses text nested deeper than a limit (brackets of JSON, parentheses
  of a filter expression) *before* a recursive parser sees it, with a message instead of a
  ``RecursionError``.

Plain Python, no dependencies.
"""

from __future__ import annotations

import re

from mcviz.errors import ValidationError

__all__ = ["BIDI_CONTROLS", "LINE_SEPARATORS", "MAX_NESTING", "check_nesting", "csv_text",
           "display_text"]

BIDI_CONTROLS = frozenset(
    "\u202a\u202b\u202c\u202d\u202e"  # LRE, RLE, PDF, LRO, RLO
    "\u2066\u2067\u2068\u2069"  # LRI, RLI, FSI, PDI
    "\u200e\u200f\u061c"  # LRM, RLM, ALM
)
"""The characters that change the direction of the text around them (Unicode UAX #9)."""

MAX_NESTING = 50
"""Deepest nesting of brackets or parentheses accepted in a link, a filter or stored metadata."""

LINE_SEPARATORS = frozenset("\r\u2028\u2029\x85\x0b\x0c")
"""Characters that end a line, the line feed aside (shown by :func:`display_text`)."""

_SHOWN = re.compile("[" + "".join(sorted(BIDI_CONTROLS | LINE_SEPARATORS)) + "]")
_LINE_SEPARATORS = re.compile("\r\n|[\r\u2028\u2029\x85\x0b\x0c]")


def display_text(value: object) -> str:
    r"""Return ``str(value)`` with every bidi control and line separator shown as ``[U+XXXX]``.

    Idempotent: what it returns holds none of those characters, so text shown twice through it
    (a sentence built from names already shown) is never escaped twice.

    Examples
    --------
    >>> display_text("abc\u202edef")
    'abc[U+202E]def'
    >>> display_text("n\r=1+1\u2028x")
    'n[U+000D]=1+1[U+2028]x'
    >>> display_text(3.5)
    '3.5'
    """
    text = str(value)
    if not _SHOWN.search(text):
        return text
    return _SHOWN.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def csv_text(value: object) -> object:
    r"""Return a text cell with every line separator made a line feed; other values unchanged.

    A CSV writer quotes a cell holding a line feed, so the row is never split.

    Examples
    --------
    >>> csv_text("n\r=1+1"), csv_text("a\u2028b"), csv_text(1.5)
    ('n\n=1+1', 'a\nb', 1.5)
    """
    if not isinstance(value, str):
        return value
    return _LINE_SEPARATORS.sub("\n", value)


def check_nesting(text: str, *, what: str, limit: int = MAX_NESTING,
                  pairs: str = "()[]{}", quotes: str = "\"'") -> None:
    """Refuse ``text`` when its brackets nest deeper than ``limit`` (quoted text is skipped).

    One pass, no recursion; runs before a recursive parser is given the text.

    Parameters
    ----------
    text : str
    what : str
        What the text is, for the message ("the link's field 'map'", "the filter").
    limit : int
        The deepest nesting accepted.
    pairs : str
        Opening and closing characters, in pairs.
    quotes : str
        Characters that open and close quoted text (a backslash escapes the next character).

    Raises
    ------
    ValidationError
        "the filter nests 300 levels deep; at most 50 are accepted."

    Examples
    --------
    >>> check_nesting("((a)) and '((('", what="the filter")
    >>> check_nesting("[" * 60, what="the link")
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: the link nests 60 levels deep; at most 50 are accepted.
    """
    opening, closing = set(pairs[0::2]), set(pairs[1::2])
    if sum(text.count(ch) for ch in opening) <= limit:  # cannot nest deeper: no scan
        return
    depth = deepest = 0
    quote = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in quotes:
            quote = ch
        elif ch in opening:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in closing:
            depth = max(depth - 1, 0)
    if deepest > limit:
        raise ValidationError(
            f"{what} nests {deepest:,} levels deep; at most {limit:,} are accepted."
        )
