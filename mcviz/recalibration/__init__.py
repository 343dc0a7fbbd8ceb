r"""Fixes of miscalibrated scores, fitted on one score-stratified split and judged on the other.

:class:`Recalibrator` fits a map of a registered method (:func:`method_names`: ``findings``,
``platt``, ``isotonic``, ``beta``, ``boost``; a new one is a :class:`RecalibrationMethod`
registered with :func:`register_method`) and applies it to any rows with the same columns
(:meth:`~Recalibrator.transform`; saved and read as JSON, with its verdict). :func:`verify_fix`
splits the rows, searches and fits on one part only, and judges the fix on the other against
one family (the search's findings plus Algorithm-1 subpopulations, the same for every method):
the multi-calibration metric M, each finding's D/sigma, ECE, smECE, log loss and Brier before
and after, and the bands of each covariate the fix did not target; a fix is recommended only
when its held-out log loss is not worse beyond noise and no confirmed finding got worse beyond
noise.
"""

from mcviz.recalibration._boost import BOOST_TREES, MCGRAD_TREES
from mcviz.recalibration._split import holdout_split, rescored, subset
from mcviz.recalibration.method import RecalibrationMethod
from mcviz.recalibration.recalibrator import (
    FORMAT,
    MAP_KEYS,
    METHODS,
    FixTerm,
    Recalibrator,
    frame_for_scoring,
)
from mcviz.recalibration.registry import (
    get_method,
    method_names,
    methods,
    register_method,
    unregister_method,
)
from mcviz.recalibration.verify import (
    BandShift,
    Change,
    FixResult,
    FixSide,
    fix_estimate,
    fix_summary,
    held_out_decisions,
    verify_fix,
)

__all__ = ["BOOST_TREES", "FORMAT", "MAP_KEYS", "MCGRAD_TREES", "METHODS", "BandShift", "Change",
           "FixResult", "FixSide", "FixTerm", "RecalibrationMethod", "Recalibrator",
           "fix_estimate", "fix_summary", "frame_for_scoring", "get_method",
           "held_out_decisions", "holdout_split", "method_names", "methods", "register_method",
           "rescored", "subset", "unregister_method", "verify_fix"]
