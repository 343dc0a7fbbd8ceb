r"""Fixes of miscalibrated scores, fitted on one score-stratified split and judged on the other.

:class:`Recalibrator` fits a map (``platt``, ``isotonic``, ``beta``, ``findings``, ``boost``)
and applies it to any rows with the same columns (:meth:`~Recalibrator.transform`; saved and
read as JSON). :func:`verify_fix` splits the rows, searches and fits on one part only, and
judges the fix on the other: the multi-calibration metric M, each finding's D/sigma, ECE,
smECE, log loss and Brier before and after; a fix that worsens the held-out log loss is
rejected.
"""

from mcviz.recalibration._boost import BOOST_TREES, MCGRAD_TREES
from mcviz.recalibration._split import holdout_split, rescored, subset
from mcviz.recalibration.recalibrator import (
    FORMAT,
    METHODS,
    FixTerm,
    Recalibrator,
    frame_for_scoring,
)
from mcviz.recalibration.verify import FixResult, FixSide, fix_estimate, verify_fix

__all__ = ["BOOST_TREES", "FORMAT", "MCGRAD_TREES", "METHODS", "FixResult", "FixSide", "FixTerm",
           "Recalibrator", "fix_estimate", "frame_for_scoring", "holdout_split", "rescored",
           "subset", "verify_fix"]
