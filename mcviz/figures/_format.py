"""Kept for imports written before the formatter became public: see :mod:`mcviz.figures.format`."""

from mcviz.figures.format import format_number, format_ticks, subscript

__all__ = ["format_number", "format_ticks", "subscript"]
