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

Numbers in words are text a person reads too: the one number formatter of mcviz lives here
(re-exported by :mod:`mcviz.present.figures.format`), so the search's sentences, the verdict,
pages, reports and decks write each number the same way: :func:`format_number`,
:func:`format_percent` (rates), :func:`format_points` (differences of rates, in percentage
points), :func:`format_p` ("< 0.0001" below 0.0001), :func:`format_interval`,
:func:`format_count` (counts as counts), :func:`format_time` (a timestamp at a period's
resolution, never nanoseconds) and :func:`readable_number` (a bound rounded for a sentence).
No formatter writes "−0" or "-0.0": a value that rounds to zero is written without a sign.

Plain Python and numpy (pandas only for timestamps).
"""

from __future__ import annotations

import math
import re
import sys
from datetime import date, datetime


from mcviz.errors import ValidationError

__all__ = ["BIDI_CONTROLS", "LINE_SEPARATORS", "MAX_NESTING", "P_FLOOR", "P_SMALLEST",
           "TIME_RESOLUTIONS", "check_nesting", "csv_text", "display_text", "format_count",
           "format_effect", "format_fixed", "format_interval", "format_number", "format_p",
           "format_percent", "format_points", "format_signed", "format_time", "p_phrase",
           "readable_number", "sentence_text"]

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


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def sentence_text(value: object) -> str:
    r"""Return user text for a sentence: :func:`display_text`, and every control shown too.

    A sentence (a verdict, a finding, a slide's text) is one line: the line feed, the tab and
    every other C0/C1 control character become a visible ``[U+000A]``, so no name or level
    can break a sentence, a slide's text run or a terminal line.

    >>> sentence_text("a\nb\tc\u202ed\x00")
    'a[U+000A]b[U+0009]c[U+202E]d[U+0000]'
    """
    text = display_text(value)
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


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


# --------------------------------------------------------------------------------------------
# Numbers for people: the one number formatter

P_FLOOR = 1e-300
P_SMALLEST = 1e-4
"""p-values below this are written "< 0.0001" (:func:`format_p`)."""
MINUS = "\u2212"


def _unsigned_zero(text: str) -> str:
    """Drop the sign of a number written as zero ("-0", "−0.0" -> "0", "0.0")."""
    if text[:1] in ("-", MINUS, "+") and not any(ch in "123456789" for ch in text):
        return text[1:]
    return text


def format_number(value: object, *, digits: int = 4, kind: str | None = None) -> str:
    """Format a number for people: the same rule on every axis, table, card and title.

    Dates are written as dates; integers with thousands separators; other numbers with
    ``digits`` significant digits, in plain notation from 1e-4 up to 1e15 (large whole numbers
    with separators) and in scientific notation outside; ``kind="p"`` writes p-values below 0.0001 as ``"< 0.0001"``
    (as :func:`format_p` does in sentences).

    >>> format_number(0.00404), format_number(4960.2), format_number(1234567)
    ('0.00404', '4,960', '1,234,567')
    >>> format_number(4.04e-06), format_number(0.0, kind="p"), format_number(0.031, kind="p")
    ('4.04e-06', '< 0.0001', '0.031')
    >>> format_number(0.000706), format_number(7.06e-05)
    ('0.000706', '7.06e-05')
    >>> format_number(date(2021, 3, 4)), format_number(float("nan")), format_number(-0.0)
    ('2021-03-04', '–', '0')
    >>> format_number(-0.02492), format_number(-3), format_number(-2.5e-06)  # a true minus
    ('−0.02492', '−3', '−2.5e-06')
    """
    if value is None:
        return "–"
    # a numpy value means numpy is loaded: never import it here (the command line sets its
    # native defaults before numpy loads)
    np = sys.modules.get("numpy")
    if isinstance(value, datetime | date) or type(value).__name__ in (
            "Timestamp", "NaTType", "datetime64"):
        return format_time(value)
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return str(bool(value))
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return f"{int(value):,}".replace("-", MINUS)
    number = _parsed(value)
    if isinstance(number, str):
        return number
    if math.isinf(number):
        return "∞" if number > 0 else "−∞"
    if kind == "p" and number < P_SMALLEST:
        return "< 0.0001"
    if number == 0:
        return "0"
    size = abs(number)
    if size < 1e-4 or size >= 1e15:
        text = _scientific(number, digits)
    elif size >= 10 ** (digits - 1) and number == round(number):
        text = f"{round(number):,}"
    else:
        decimals = max(digits - 1 - math.floor(math.log10(size)), 0)
        text = f"{number:,.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
    # a true minus sign (U+2212) in every table cell, card and axis (#40); rounding to zero
    # drops the sign: never "−0"
    return _unsigned_zero(MINUS + text[1:]) if text.startswith("-") else text


def _scientific(number: float, digits: int) -> str:
    mantissa, exponent = f"{number:.{max(digits - 1, 0)}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent):+03d}"


def format_signed(value: object, *, digits: int = 2) -> str:
    """Write a change with its sign (a true minus) and ``digits`` significant digits.

    >>> format_signed(-2.5e-06), format_signed(5.5e-05), format_signed(-0.0012), format_signed(0.0)
    ('−2.5e-06', '+5.5e-05', '−0.0012', '0')
    """
    text = format_number(value, digits=digits)
    if text in ("0", "–") or not text[:1].isdigit():
        return text
    return "+" + text


def format_fixed(value: object, *, decimals: int = 1, signed: bool = False) -> str:
    """Write a number with a fixed count of decimals (a rate per 1,000): no "−0.0", a true minus.

    >>> format_fixed(-0.04, signed=True), format_fixed(0.04, signed=True), format_fixed(-2.06)
    ('0.0', '0.0', '−2.1')
    >>> format_fixed(4.1, signed=True), format_fixed(float("nan")), format_fixed(12345.6)
    ('+4.1', '–', '12,345.6')
    """
    try:
        text = f"{float(value):{'+' if signed else ''},.{decimals}f}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return "–" if "nan" in text else _unsigned_zero(text.replace("-", MINUS))


def format_percent(fraction: object, *, digits: int = 3, signed: bool = False) -> str:
    """Write a rate or a gap given as a fraction as a percentage (``digits`` significant).

    >>> format_percent(0.0028), format_percent(0.1234), format_percent(-0.05, signed=True)
    ('0.28%', '12.3%', '−5%')
    >>> format_percent(0.041, signed=True), format_percent(float("nan"))
    ('+4.1%', '–')
    """
    try:
        number = 100.0 * float(fraction)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(fraction)
    if math.isnan(number):
        return "–"
    text = format_number(abs(number), digits=digits) + "%"
    if signed and number > 0:
        return _unsigned_zero("+" + text)
    return _unsigned_zero(MINUS + text) if number < 0 else text


def format_p(p: object) -> str:
    """Write a p-value for a sentence: "< 0.0001" below 0.0001, else two significant digits.

    >>> format_p(0.148), format_p(0.0004), format_p(0.00004), format_p(0.05), format_p(1.0)
    ('0.15', '0.0004', '< 0.0001', '0.05', '1')
    """
    number = _parsed(p)
    if isinstance(number, str):
        return number
    if number < P_SMALLEST:
        return "< 0.0001"
    return format_number(number, digits=2)


def p_phrase(p: object) -> str:
    """Write "p < 0.0001", "p = 0.031" or "p not available" (:func:`format_p` after "p").

    >>> p_phrase(0.00001), p_phrase(0.0312), p_phrase(float("nan")), p_phrase(None)
    ('p < 0.0001', 'p = 0.031', 'p not available', 'p not available')
    """
    text = format_p(p)
    if text in ("–", "None"):
        return "p not available"
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _parsed(value: object) -> float | str:
    """``value`` as a float, or the text shown for it: itself when it is not a number, "–"
    for NaN (the rule :func:`format_number` and :func:`format_p` share)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return "–" if math.isnan(number) else number


def format_interval(low: object, high: object, *, percent: bool = False,
                    digits: int = 3) -> str:
    """Write a confidence interval "low to high" (percentages with ``percent``).

    >>> format_interval(0.02, 0.062, percent=True), format_interval(-1.5, 2.25)
    ('2% to 6.2%', '−1.5 to 2.25')
    """
    def one(value: object) -> str:
        if percent:
            return format_percent(value, digits=digits)
        return format_number(value, digits=digits)

    return f"{one(low)} to {one(high)}"


def format_points(fraction: object, *, digits: int = 3, signed: bool = False,
                  unit: str = "percentage points") -> str:
    """Write a difference of two rates (a fraction) in percentage points.

    >>> format_points(-0.03243), format_points(0.0093, signed=True), format_points(-0.00001)
    ('−3.24 percentage points', '+0.93 percentage points', '−0.001 percentage points')
    >>> format_points(0.0, signed=True), format_points(0.012, unit="points")
    ('0 percentage points', '1.2 points')
    """
    text = format_percent(fraction, digits=digits, signed=signed)
    return text[:-1] + " " + unit if text.endswith("%") else text


def format_effect(mean: object, low: object, high: object, *,
                  binary: bool = True) -> tuple[str, str]:
    """Write a held-out effect (observed − predicted) and its interval, as findings state them.

    Binary responses: signed percentage points and the interval in points; real-valued
    responses: the numbers themselves.

    >>> format_effect(-0.0324, -0.05, -0.0148)
    ('−3.24 percentage points', '−5 to −1.48 percentage points')
    >>> format_effect(0.25, 0.1, 0.4, binary=False)
    ('0.25', '0.1 to 0.4')
    """
    if binary:
        interval = format_interval(low, high, percent=True).replace("%", "")
        return format_points(mean, signed=True), interval + " percentage points"
    return format_number(mean, digits=3), format_interval(low, high)


def format_count(value: object, noun: str = "", plural: str | None = None) -> str:
    """Write a count as a count: a whole number with separators, and its noun if given.

    A count that arrives as a float (a sum of unit weights) is rounded, never written
    "3.0"; "−0" never appears.

    >>> format_count(1234.0, "row"), format_count(1, "row"), format_count(-0.2, "row")
    ('1,234 rows', '1 row', '0 rows')
    >>> format_count(float("nan"), "row")
    '– rows'
    """
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        text, one = "–", False
    else:
        whole = round(number)
        text, one = _unsigned_zero(f"{whole:,}".replace("-", MINUS)), abs(whole) == 1
    if not noun:
        return text
    return f"{text} {noun if one else (plural or noun + 's')}"


TIME_RESOLUTIONS = {"year": "%Y", "quarter": "Q", "month": "%Y-%m", "week": "%Y-%m-%d",
                    "day": "%Y-%m-%d", "hour": "%Y-%m-%d %H:00", "minute": "%Y-%m-%d %H:%M",
                    "second": "%Y-%m-%d %H:%M:%S"}
"""The resolutions :func:`format_time` writes (a monitor's periods name one)."""


def format_time(value: object, resolution: str | None = None) -> str:
    """Write a timestamp at a resolution: a period's, or the coarsest that keeps it exact.

    ``resolution`` one of :data:`TIME_RESOLUTIONS` (a plural or a pandas alias such as "D",
    "W", "M", "h" is read too); None: the date alone at midnight, else to the second,
    and to the millisecond only when it has less: never nanoseconds.

    >>> import pandas as pd
    >>> stamp = pd.Timestamp("2013-07-23 04:53:26.024096512")
    >>> format_time(stamp, "day"), format_time(stamp, "month"), format_time(stamp, "quarter")
    ('2013-07-23', '2013-07', '2013-Q3')
    >>> format_time(stamp), format_time(pd.Timestamp("2021-03-04")), format_time(pd.NaT)
    ('2013-07-23 04:53:26.024', '2021-03-04', '–')
    """
    import pandas as pd

    if value is None:
        return "–"
    try:
        stamp = pd.Timestamp(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if stamp is pd.NaT:
        return "–"
    key = _resolution(resolution)
    if key == "quarter":
        return f"{stamp.year}-Q{stamp.quarter}"
    if key is not None:
        return stamp.strftime(TIME_RESOLUTIONS[key])
    if stamp == stamp.normalize():
        return stamp.strftime("%Y-%m-%d")
    if stamp.microsecond == 0 and stamp.nanosecond == 0:
        return stamp.strftime("%Y-%m-%d %H:%M:%S")
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"


_ALIASES = {"y": "year", "a": "year", "ys": "year", "q": "quarter", "qs": "quarter",
            "m": "month", "ms": "month", "me": "month", "w": "week", "d": "day", "h": "hour",
            "min": "minute", "t": "minute", "s": "second"}


def _resolution(resolution: str | None) -> str | None:
    if resolution is None:
        return None
    text = str(resolution).strip()
    word = text.lower().rstrip("s") if len(text) > 3 else text.lower()
    if word in TIME_RESOLUTIONS:
        return word
    alias = _ALIASES.get(text.split("-")[0].lower())
    return alias


def readable_number(value: float, *, digits: int = 3) -> str:
    """Round a bound for a sentence: ``digits`` significant digits, separators, no exponent.

    Whole numbers of fewer digits stay exact; a fraction keeps ``digits`` significant digits.

    >>> readable_number(30730), readable_number(88840), readable_number(49)
    ('30,700', '88,800', '49')
    >>> readable_number(0.00017567), readable_number(1234567.0), readable_number(-0.0)
    ('0.000176', '1,230,000', '0')
    """
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return format_number(number)
    if number == 0:
        return "0"
    scale = math.floor(math.log10(abs(number)))
    rounded = round(number, digits - 1 - scale)
    if rounded == round(rounded) and abs(rounded) < 1e15:
        return _unsigned_zero(f"{round(rounded):,}".replace("-", MINUS))
    decimals = max(digits - 1 - scale, 0)
    text = f"{rounded:,.{decimals}f}".rstrip("0").rstrip(".")
    return _unsigned_zero(text.replace("-", MINUS))
