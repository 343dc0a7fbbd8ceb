"""Links and uploads inside the resource model: what a shared link may start on its own.

A shared link restores the Subpopulations page's settings (``l``, ``reps``, ``m``) and, with
``sp=1``, starts the computation when the page opens. Opened by anyone, a link must not start
work above the memory budget: its settings are clamped to the budget (fewer subpopulations), and
work that would still take more than :data:`AUTO_START_SECONDS` waits for the user's click, with
its estimate shown. The estimate follows :mod:`mcviz.budget` (one :class:`~mcviz.budget.Estimate`
per kind; constants measured on the 2-core reference machine); the estimate of Algorithm 1
itself, :func:`~mcviz.budget.subpopulations_estimate`, is the one ``mcviz metrics`` checks too.
Plain Python, no Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcviz.budget import (
    SUBPOP_BYTES_PER_MEMBER,
    SUBPOP_BYTES_PER_ROW,
    Budget,
    Estimate,
    format_bytes,
    format_seconds,
    subpopulations_estimate,
)

__all__ = ["AUTO_START_SECONDS", "LinkStart", "link_start", "subpopulations_estimate"]

AUTO_START_SECONDS = 10.0
"""A link starts a computation on its own only when it is estimated to take at most this long."""

@dataclass(frozen=True, slots=True)
class LinkStart:
    """What a link's subpopulation settings may do: run now, or wait for a click.

    Attributes
    ----------
    subpopulations : int
        ℓ after clamping to the budget (the link's own ℓ when it fits).
    estimate : Estimate
        The cost of the clamped settings.
    auto : bool
        True when the link may start the work without a click.
    message : str or None
        What the page shows when the settings were clamped or wait for a click.
    """

    subpopulations: int
    estimate: Estimate
    auto: bool
    message: str | None


def link_start(rows: int, subpopulations: int, repeats: int, budget: Budget) -> LinkStart:
    """Clamp a link's ℓ to the memory budget and decide whether it may start on its own.

    Examples
    --------
    >>> start = link_start(48_842, 20_000, 20, Budget(bytes=2 * 10**9))
    >>> start.subpopulations, start.auto
    (6194, False)
    >>> link_start(48_842, 100, 1, Budget(bytes=2 * 10**9)).auto
    True
    """
    asked = subpopulations_estimate(rows, subpopulations, repeats)
    clamped = subpopulations
    if asked.bytes > budget.bytes:
        room = budget.bytes - rows * SUBPOP_BYTES_PER_ROW
        clamped = max(1, math.floor(room / (rows * repeats * SUBPOP_BYTES_PER_MEMBER)))
        clamped = min(clamped, subpopulations)
    estimate = subpopulations_estimate(rows, clamped, repeats)
    slow = estimate.seconds > AUTO_START_SECONDS or (
        budget.seconds is not None and estimate.seconds > budget.seconds)
    auto = clamped == subpopulations and not slow
    if auto:
        return LinkStart(clamped, estimate, True, None)
    parts = [f"This link asks for {asked.what}: about {format_bytes(asked.bytes)} and "
             f"{format_seconds(asked.seconds)}."]
    if clamped != subpopulations:
        parts.append(f"That is above the memory budget ({format_bytes(budget.bytes)}, set by "
                     f"MCVIZ_MEMORY_BUDGET), so ℓ was reduced to {clamped:,} (about "
                     f"{format_bytes(estimate.bytes)} and {format_seconds(estimate.seconds)}).")
    parts.append("Press Compute to start it.")
    return LinkStart(clamped, estimate, False, " ".join(parts))
