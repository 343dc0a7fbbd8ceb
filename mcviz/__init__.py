"""Where is a probabilistic classifier miscalibrated? The public API of mcviz.

Start from :meth:`Predictions.from_arrays` (arrays in memory) or :func:`load_predictions` (a
file). Every statistic takes the predictions, ``(pred, *, index=None, ...)`` (``index`` a
subpopulation's positions or mask), and returns a small frozen result; figure builders
(:mod:`mcviz.present.figures`) take those results, and :mod:`mcviz.present.plot` draws a chart in one call.
"""

from mcviz.errors import ValidationError

__version__ = "0.1.0"

__all__ = [
    "BROWNIAN_RANGE_MEAN",
    "ClassicalMeasures",
    "ModelComparison",
    "CorpResult",
    "CumulativeResult",
    "DeviationResult",
    "LoadReport",
    "MulticalResult",
    "NullDistribution",
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
    "compare_models",
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
    "null_distribution",
    "parse_filter",
    "rank_variables",
    "read_table",
    "reliability_bins",
    "reliability_diagrams",
    "reweight",
    "score_bins",
    "score_decomposition",
    "search_subpopulations",
    "smooth_ece",
    "smooth_reliability",
    "subpopulation_deviation",
    "variable_calibration",
]

# The public API is imported on first use (PEP 562), so that `import mcviz` and the command
# line start at once: numpy, pandas and scipy load with the first statistic asked for.
_LAZY = {
    "BROWNIAN_RANGE_MEAN": "mcviz.stats.cumulative",
    "CumulativeResult": "mcviz.stats.cumulative",
    "brownian_range_sf": "mcviz.stats.cumulative",
    "cumulative_differences": "mcviz.stats.cumulative",
    "decimate_path": "mcviz.stats.cumulative",
    "LoadReport": "mcviz.io",
    "Predictions": "mcviz.io",
    "Roles": "mcviz.io",
    "infer_roles": "mcviz.io",
    "load_demo": "mcviz.io",
    "load_predictions": "mcviz.io",
    "read_table": "mcviz.io",
    "calibration_score": "mcviz.stats.agglomeration",
    "cvar_curve": "mcviz.stats.agglomeration",
    "calibration_metrics": "mcviz.stats.binning",
    "reliability_bins": "mcviz.stats.binning",
    "reliability_diagrams": "mcviz.stats.binning",
    "DeviationResult": "mcviz.stats.deviation",
    "subpopulation_deviation": "mcviz.stats.deviation",
    "group_errors": "mcviz.stats.groupings",
    "local_calibration": "mcviz.stats.groupings",
    "score_bins": "mcviz.stats.groupings",
    "MulticalResult": "mcviz.stats.multical",
    "multicalibration": "mcviz.stats.multical",
    "multicalibration_repeats": "mcviz.stats.multical",
    "local_calibration_score": "mcviz.stats.smoothing",
    "loess_curve": "mcviz.stats.smoothing",
    "filter_subpopulation": "mcviz.subpopulations",
    "generate_subpopulations": "mcviz.subpopulations",
    "group_subpopulations": "mcviz.subpopulations",
    "parse_filter": "mcviz.subpopulations",
    "search_subpopulations": "mcviz.search",
    "ModelComparison": "mcviz.compare",
    "compare_models": "mcviz.compare",
    "NullDistribution": "mcviz.stats.significance",
    "null_distribution": "mcviz.stats.significance",
    "rank_variables": "mcviz.stats.variables",
    "variable_calibration": "mcviz.stats.variables",
    "reweight": "mcviz.stats.weighting",
    "ClassicalMeasures": "mcviz.stats.measures",
    "CorpResult": "mcviz.stats.measures",
    "SmoothReliability": "mcviz.stats.measures",
    "classical_measures": "mcviz.stats.measures",
    "corp_reliability": "mcviz.stats.measures",
    "smooth_ece": "mcviz.stats.measures",
    "smooth_reliability": "mcviz.stats.measures",
    "score_decomposition": "mcviz.stats.measures",
    "logistic_recalibration": "mcviz.stats.measures",
    "calibration_curve_summary": "mcviz.stats.measures",
    "hosmer_lemeshow": "mcviz.stats.measures",
}


#: Public modules kept at their documented address (``from mcviz import plot``) since the
#: folders show the layers (``mcviz/present/``).
_MODULES = {"plot": "mcviz.present.plot", "figures": "mcviz.present.figures"}


def __getattr__(name: str) -> object:
    if name in _MODULES:
        import importlib

        module = importlib.import_module(_MODULES[name])
        globals()[name] = module
        return module
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mcviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
