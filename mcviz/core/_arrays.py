"""Read-only result arrays: the one helper that every result object uses."""

from __future__ import annotations

import numpy as np

__all__ = ["readonly"]


def readonly(array) -> np.ndarray:
    """Return ``array`` as a C-contiguous ndarray that cannot be written to.

    A C-contiguous ndarray is frozen in place (no copy); anything else (a list, a strided view)
    is first copied into a contiguous array, so the caller's data are never frozen through a view.

    Examples
    --------
    >>> a = readonly(np.arange(3.0))
    >>> a.flags.writeable, a.flags.c_contiguous
    (False, True)
    """
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array
