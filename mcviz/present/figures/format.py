"""The one number formatter of mcviz: axes, tables, cards, chart titles, reports and decks.

:func:`format_number` writes every number; :func:`format_percent` writes rates and gaps (a
fraction as a percentage), :func:`format_p` writes p-values in sentences ("< 0.001" below
0.001) and :func:`format_interval` a confidence interval. Hover templates (plotly's d3 formats)
are the only numbers written elsewhere.
"""

from __future__ import annotations

import math
from datetime import date, datetime

import numpy as np
import pandas as pd

__all__ = ["format_interval", "format_number", "format_p", "format_percent", "format_ticks",
           "subscript"]

P_FLOOR = 1e-300
_SUBSCRIPTS = str.maketrans("0123456789aehijklmnoprstuvx+-=()",
                            "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ₊₋₌₍₎")


def subscript(text: str) -> str:
    """Return ``text`` in Unicode subscript characters (``"k"`` -> ``"ₖ"``).

    >>> "D" + subscript("k") + "/σ" + subscript("k")
    'Dₖ/σₖ'
    """
    return str(text).translate(_SUBSCRIPTS)


def format_number(value: object, *, digits: int = 4, kind: str | None = None) -> str:
    """Format a number for people: the same rule on every axis, table, card and title.

    Dates are written as dates; integers with thousands separators; other numbers with
    ``digits`` significant digits, in plain notation from 1e-4 up to 1e15 (large whole numbers
    with separators) and in scientific notation outside; ``kind="p"`` writes p-values that
    underflow as ``"< 1e-300"``.

    >>> format_number(0.00404), format_number(4960.2), format_number(1234567)
    ('0.00404', '4,960', '1,234,567')
    >>> format_number(4.04e-06), format_number(0.0, kind="p"), format_number(0.031, kind="p")
    ('4.04e-06', '< 1e-300', '0.031')
    >>> format_number(0.000706), format_number(7.06e-05)
    ('0.000706', '7.06e-05')
    >>> format_number(pd.Timestamp("2021-03-04")), format_number(float("nan"))
    ('2021-03-04', '–')
    """
    if value is None or value is pd.NaT:
        return "–"
    if isinstance(value, datetime | date | np.datetime64 | pd.Timestamp):
        stamp = pd.Timestamp(value)
        if stamp is pd.NaT:
            return "–"
        return stamp.strftime("%Y-%m-%d") if stamp == stamp.normalize() else stamp.isoformat(" ")
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "–"
    if math.isinf(number):
        return "∞" if number > 0 else "−∞"
    if kind == "p" and number < P_FLOOR:
        return f"< {P_FLOOR:g}"
    if number == 0:
        return "0"
    size = abs(number)
    if size < 1e-4 or size >= 1e15:
        return _scientific(number, digits)
    if size >= 10 ** (digits - 1) and number == round(number):
        return f"{round(number):,}"
    decimals = max(digits - 1 - math.floor(math.log10(size)), 0)
    text = f"{number:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _scientific(number: float, digits: int) -> str:
    mantissa, exponent = f"{number:.{max(digits - 1, 0)}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent):+03d}"


def format_ticks(values: object) -> list[str]:
    """Format tick labels at the resolution of their range (plain notation, no stacking).

    Values are rounded to a thousandth of the range they span, so a score axis from 4e-06 to
    1 reads "0, 0.2, ..., 1" and a mileage axis "4,960"; dates are written as dates.

    >>> format_ticks([4.04e-06, 0.25, 1.0])
    ['0', '0.25', '1']
    >>> format_ticks([1000.0, 4960.2])
    ['1,000', '4,960']
    """
    array = np.asarray(values)
    if array.size == 0:
        return []
    if np.issubdtype(array.dtype, np.datetime64):
        return [format_number(v) for v in pd.to_datetime(array)]
    array = array.astype(float)
    finite = array[np.isfinite(array)]
    span = float(np.ptp(finite)) if finite.size > 1 else 0.0
    if span == 0:
        return [format_number(v) for v in array]
    decimals = max(0, 3 - round(math.log10(span)))
    out = []
    for value in array:
        rounded = round(float(value), decimals)
        out.append(format_number(0.0 if rounded == 0 else rounded, digits=max(decimals + 1, 4)))
    return out


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
        return "+" + text
    return ("−" + text) if number < 0 else text


def format_p(p: object) -> str:
    """Write a p-value for a sentence: "< 0.001" below 0.001, else two significant digits.

    >>> format_p(0.148), format_p(0.0004), format_p(0.05), format_p(1.0)
    ('0.15', '< 0.001', '0.05', '1')
    """
    try:
        number = float(p)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(p)
    if math.isnan(number):
        return "–"
    if number < 1e-3:
        return "< 0.001"
    return format_number(number, digits=2)


def format_interval(low: object, high: object, *, percent: bool = False,
                    digits: int = 3) -> str:
    """Write a confidence interval "low to high" (percentages with ``percent``).

    >>> format_interval(0.02, 0.062, percent=True), format_interval(-1.5, 2.25)
    ('2% to 6.2%', '−1.5 to 2.25')
    """
    def one(value: object) -> str:
        if percent:
            return format_percent(value, digits=digits)
        text = format_number(value, digits=digits)
        return "−" + text[1:] if text.startswith("-") else text

    return f"{one(low)} to {one(high)}"
