"""Kept for imports written before the formatter became public: see :mod:`mcviz.present.figures.format`."""

from mcviz.present.figures.format import format_number, format_ticks, subscript

__all__ = ["format_number", "format_ticks", "subscript"]
