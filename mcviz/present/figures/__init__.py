"""Plotly figure builders: one per result type; they draw results and never compute statistics.

Each builder takes a result object from the statistics modules and returns a ``go.Figure``.
Builders live in submodules by topic and are re-exported here. Every builder also takes the
house style's three options, keyword only, passed to :func:`apply_style` (which alone places
titles, axes and legends): ``title`` (None: the builder's own), ``presentation`` (larger fonts
and lines, for a projector) and ``height`` (pixels; None: the house height).
"""

from mcviz.present.figures._style import MAX_POINTS, apply_style

__all__ = ["MAX_POINTS", "apply_style"]
# Submodule re-exports (one import line and one __all__ extension per submodule) go below.
from mcviz.present.figures.cumulative import cumulative_figure, deviation_figure

__all__ += ["cumulative_figure", "deviation_figure"]
from mcviz.present.figures.reliability import metrics_table_figure, reliability_figure  # noqa: E402

__all__ += ["metrics_table_figure", "reliability_figure"]
from mcviz.present.figures.variables import (  # noqa: E402
    categorical_levels_figure,
    gap_figure,
    variable_curves_figure,
)

__all__ += ["categorical_levels_figure", "gap_figure", "variable_curves_figure"]
from mcviz.present.figures.lcs import lcs_figure  # noqa: E402

__all__ += ["lcs_figure"]
from mcviz.present.figures.groupings import (  # noqa: E402
    cvar_curve_figure,
    group_errors_figure,
    local_calibration_figure,
    local_error_histogram_figure,
    neighbourhood_tradeoff_figure,
)

__all__ += [
    "cvar_curve_figure",
    "group_errors_figure",
    "local_calibration_figure",
    "local_error_histogram_figure",
    "neighbourhood_tradeoff_figure",
]
from mcviz.present.figures.multical import subpopulation_scatter_figure  # noqa: E402

__all__ += ["subpopulation_scatter_figure"]
from mcviz.present.figures.format import (  # noqa: E402
    format_interval,
    format_number,
    format_p,
    format_percent,
    subscript,
)

__all__ += ["format_interval", "format_number", "format_p", "format_percent", "subscript"]
from mcviz.present.figures.corp import corp_figure, smooth_reliability_figure  # noqa: E402

__all__ += ["corp_figure", "smooth_reliability_figure"]
from mcviz.present.figures._text import escape_figure, plotly_text, plotly_texts  # noqa: E402

__all__ += ["escape_figure", "plotly_text", "plotly_texts"]
from mcviz.present.figures.monitor import monitor_heatmap_figure, monitor_series_figure  # noqa: E402

__all__ += ["monitor_heatmap_figure", "monitor_series_figure"]
from mcviz.present.figures.decision import decision_curve_figure  # noqa: E402

__all__ += ["decision_curve_figure"]
from mcviz.present.figures.compare import (  # noqa: E402
    paired_cumulative_figure,
    paired_residuals_figure,
)

__all__ += ["paired_cumulative_figure", "paired_residuals_figure"]
