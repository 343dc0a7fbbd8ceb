"""The one number formatter of mcviz: axes, tables, cards, chart titles, reports and decks.

The formatter itself lives in the ground layer (:mod:`mcviz.text`, so the search's sentences
use it too) and is re-exported here with what only figures need: :func:`format_ticks` and
:func:`subscript`. :func:`format_number` writes every number; :func:`format_percent` writes
rates (a fraction as a percentage), :func:`format_points` differences of rates in percentage
points, :func:`format_p` p-values in sentences ("< 0.0001" below 0.0001),
:func:`format_interval` a confidence interval, :func:`format_count` counts and
:func:`format_time` timestamps at a period's resolution. Hover templates (plotly's d3 formats)
are the only numbers written elsewhere.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mcviz.text import (
    P_FLOOR,
    format_count,
    format_interval,
    format_number,
    format_p,
    format_percent,
    format_points,
    format_time,
    p_phrase,
    readable_number,
)

__all__ = ["P_FLOOR", "format_count", "format_interval", "format_number", "format_p",
           "format_percent", "format_points", "format_ticks", "p_phrase", "format_time", "readable_number",
           "subscript"]
_SUBSCRIPTS = str.maketrans("0123456789aehijklmnoprstuvx+-=()",
                            "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ₊₋₌₍₎")


def subscript(text: str) -> str:
    """Return ``text`` in Unicode subscript characters (``"k"`` -> ``"ₖ"``).

    >>> "D" + subscript("k") + "/σ" + subscript("k")
    'Dₖ/σₖ'
    """
    return str(text).translate(_SUBSCRIPTS)


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


