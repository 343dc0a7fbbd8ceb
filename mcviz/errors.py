"""The one input-error type of mcviz, and the helpers that word its messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ValidationError", "describe_rows"]


class ValidationError(ValueError):
    """Bad input: the message names the column, the problem, how many rows and which.

    Parameters
    ----------
    message : str
        The full, human-readable message.
    column : str or None
        The column at fault, when there is one (the dashboard shows the message next to the
        widget that maps that column).
    """

    def __init__(self, message: str, *, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


def describe_rows(rows: Sequence[int] | np.ndarray, total: int, *, shown: int = 5) -> str:
    """Word a set of offending rows as "3 of 1,000 rows (rows 7, 19, 802)".

    Row numbers are 0-based positions in the input, as pandas shows them.

    Examples
    --------
    >>> describe_rows([7, 19, 802], 1000)
    '3 of 1,000 rows (rows 7, 19, 802)'
    >>> describe_rows(range(10), 10, shown=2)
    '10 of 10 rows (rows 0, 1, ...)'
    """
    import numpy as np  # on first use: the command line imports this module for --help

    rows = np.asarray(rows)
    count = rows.size
    listed = ", ".join(str(int(r)) for r in rows[:shown])
    more = ", ..." if count > shown else ""
    noun = "row" if total == 1 else "rows"
    return f"{count:,} of {total:,} {noun} (rows {listed}{more})"
