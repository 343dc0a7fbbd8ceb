"""Classical calibration measures, each agreeing with the library that defines it.

- :mod:`mcviz.stats.measures.smooth`: the smooth ECE and its smoothed reliability diagram
  (Błasiok & Nakkiran; agrees with ``relplot``).
- :mod:`mcviz.stats.measures.corp`: CORP reliability curves by isotonic regression, consistency bands,
  and the MCB - DSC + UNC decomposition of the Brier score and the log loss (Dimitriadis,
  Gneiting & Jordan; agrees with ``model-diagnostics``).
- :mod:`mcviz.stats.measures.clinical`: calibration intercept and slope with Wald intervals, O/E,
  ICI/E50/E90 (Austin & Steyerberg) and the Hosmer-Lemeshow test.
- :mod:`mcviz.stats.measures.summary`: :func:`classical_measures`, all of them with the binned metrics
  of :func:`mcviz.stats.binning.calibration_metrics`, as a grouped table and as JSON.

Every function takes a :class:`~mcviz.io.Predictions` (``Predictions.from_arrays`` builds one from
score, label and weight arrays) and an optional ``index`` of a subpopulation, and returns a
small frozen result.
"""

from mcviz.stats.measures.clinical import (
    CalibrationCurveSummary,
    HosmerLemeshow,
    LogisticRecalibration,
    calibration_curve_summary,
    hosmer_lemeshow,
    logistic_recalibration,
)
from mcviz.stats.measures.corp import (
    CorpResult,
    ScoreDecomposition,
    corp_reliability,
    score_decomposition,
)
from mcviz.stats.measures.smooth import SmoothEce, SmoothReliability, smooth_ece, smooth_reliability
from mcviz.stats.measures.summary import (
    JSON_KEYS,
    MEASURE_GROUPS,
    ClassicalMeasures,
    classical_measures,
)

__all__ = [
    "JSON_KEYS",
    "MEASURE_GROUPS",
    "CalibrationCurveSummary",
    "ClassicalMeasures",
    "CorpResult",
    "HosmerLemeshow",
    "LogisticRecalibration",
    "ScoreDecomposition",
    "SmoothEce",
    "SmoothReliability",
    "calibration_curve_summary",
    "classical_measures",
    "corp_reliability",
    "hosmer_lemeshow",
    "logistic_recalibration",
    "score_decomposition",
    "smooth_ece",
    "smooth_reliability",
]
