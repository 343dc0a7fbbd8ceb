"""Former home of :func:`mcviz.core.arrays.readonly` (kept for old imports)."""

from mcviz.core.arrays import readonly

__all__ = ["readonly"]
