"""The one number formatter of mcviz: axes, tables, cards and chart titles use it."""

from __future__ import annotations

import math
from datetime import date, datetime

import numpy as np
import pandas as pd

__all__ = ["format_number", "format_ticks", "subscript"]

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
    ``digits`` significant digits, in plain notation between 1e-3 and 1e6 and in scientific
    notation outside; ``kind="p"`` writes p-values that underflow as ``"< 1e-300"``.

    >>> format_number(0.00404), format_number(4960.2), format_number(1234567)
    ('0.00404', '4,960', '1,234,567')
    >>> format_number(4.04e-06), format_number(0.0, kind="p"), format_number(0.031, kind="p")
    ('4.04e-06', '< 1e-300', '0.031')
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
    if size < 1e-3 or size >= 1e15:
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
