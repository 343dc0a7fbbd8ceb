"""Plotly figure builders: one per result type; they draw results and never compute statistics.

Each builder takes a result object from the statistics modules and returns a ``go.Figure``.
Builders live in submodules by topic and are re-exported here.
"""

from mcviz.figures._style import MAX_POINTS, apply_style

__all__ = ["MAX_POINTS", "apply_style"]
# Submodule re-exports (one import line and one __all__ extension per submodule) go below.
