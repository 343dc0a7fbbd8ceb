"""Where is a probabilistic classifier miscalibrated? The public API of mcviz.

Statistics modules take a :class:`Predictions` (or arrays) and return small frozen
result objects; figure builders (``mcviz.figures``) take those results.
"""

from mcviz.cumulative import (
    BROWNIAN_RANGE_MEAN,
    CumulativeResult,
    brownian_range_sf,
    cumulative_differences,
    decimate_path,
)
from mcviz.errors import ValidationError
from mcviz.io import (
    LoadReport,
    Predictions,
    Roles,
    infer_roles,
    load_demo,
    load_predictions,
    read_table,
)

__version__ = "0.1.0"

__all__ = [
    "BROWNIAN_RANGE_MEAN",
    "ClassicalMeasures",
    "CorpResult",
    "CumulativeResult",
    "DeviationResult",
    "LoadReport",
    "MulticalResult",
    "Predictions",
    "Roles",
    "SmoothReliability",
    "ValidationError",
    "__version__",
    "brownian_range_sf",
    "calibration_curve_summary",
    "calibration_metrics",
    "calibration_score",
    "classical_measures",
    "corp_reliability",
    "cumulative_differences",
    "cvar_curve",
    "decimate_path",
    "filter_subpopulation",
    "generate_subpopulations",
    "group_errors",
    "group_subpopulations",
    "hosmer_lemeshow",
    "infer_roles",
    "load_demo",
    "load_predictions",
    "local_calibration",
    "local_calibration_score",
    "loess_curve",
    "logistic_recalibration",
    "multicalibration",
    "multicalibration_repeats",
    "parse_filter",
    "rank_variables",
    "read_table",
    "reliability_bins",
    "reliability_diagrams",
    "reweight",
    "score_bins",
    "score_decomposition",
    "smooth_ece",
    "smooth_reliability",
    "subpopulation_deviation",
    "variable_calibration",
]

# The rest of the public API is imported on first use (PEP 562), so that `import mcviz`
# and the command line stay quick: scipy.spatial and statsmodels load only when needed.
_LAZY = {
    "calibration_score": "mcviz.agglomeration",
    "cvar_curve": "mcviz.agglomeration",
    "calibration_metrics": "mcviz.binning",
    "reliability_bins": "mcviz.binning",
    "reliability_diagrams": "mcviz.binning",
    "DeviationResult": "mcviz.deviation",
    "subpopulation_deviation": "mcviz.deviation",
    "group_errors": "mcviz.groupings",
    "local_calibration": "mcviz.groupings",
    "score_bins": "mcviz.groupings",
    "MulticalResult": "mcviz.multical",
    "multicalibration": "mcviz.multical",
    "multicalibration_repeats": "mcviz.multical",
    "local_calibration_score": "mcviz.smoothing",
    "loess_curve": "mcviz.smoothing",
    "filter_subpopulation": "mcviz.subpopulations",
    "generate_subpopulations": "mcviz.subpopulations",
    "group_subpopulations": "mcviz.subpopulations",
    "parse_filter": "mcviz.subpopulations",
    "rank_variables": "mcviz.variables",
    "variable_calibration": "mcviz.variables",
    "reweight": "mcviz.weighting",
    "ClassicalMeasures": "mcviz.measures",
    "CorpResult": "mcviz.measures",
    "SmoothReliability": "mcviz.measures",
    "classical_measures": "mcviz.measures",
    "corp_reliability": "mcviz.measures",
    "smooth_ece": "mcviz.measures",
    "smooth_reliability": "mcviz.measures",
    "score_decomposition": "mcviz.measures",
    "logistic_recalibration": "mcviz.measures",
    "calibration_curve_summary": "mcviz.measures",
    "hosmer_lemeshow": "mcviz.measures",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mcviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
