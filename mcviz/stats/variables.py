r"""Every covariate's variable-based calibration in one ranking (the rows of ``mcviz variables``).

The curves of a numeric covariate are :mod:`mcviz.stats.variable_curves` (LOESS, VCE(v*) and
VECE, Kelly & Smyth), the levels of a nominal one :mod:`mcviz.stats.variable_levels`; this
module ranks them and re-exports both.

Ranking. Beside VCE(v*) (a smoothed curve's largest gap, which a wide span can average away)
every numeric covariate's row carries the bandwidth-free cumulative statistic along it: the
residuals :math:`R - S` about their mean, ordered by V, their Kuiper range :math:`D/\sigma`
and its p-value (``kuiper_z``, ``p_value``;
:func:`~mcviz.stats.cumulative.cumulative_differences` with ``order_by`` and ``centred``). A
variable picked because its p is the smallest is not beyond chance on that p alone, so
``p_adjusted`` is Bonferroni's over the :math:`m` numeric covariates (:math:`\min(1, m p)`,
constant ones counted). Variables with evidence of a miscalibration that changes along them,
``p_adjusted`` below 0.05 or a VCE(v*) band that excludes 0, come first; within each group the
order is VECE's (eq. (7) of Kelly & Smyth), then the name.
Nominal covariates have no order to accumulate along: their ``kuiper_z`` and ``p_value`` are
None and their per-level intervals (and VCE's Bonferroni band) speak for them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcviz.core.conditions import ordinal_values
from mcviz.io import Predictions
from mcviz.stats.smoothing import check_span
from mcviz.stats.variable_curves import (
    VariableCalibration,
    is_nominal,
    prediction_errors,
    simultaneous_z,
    variable_calibration,
    vece,
)
from mcviz.stats.variable_levels import LevelCalibration, level_calibration

__all__ = [
    "LevelCalibration",
    "VariableCalibration",
    "level_calibration",
    "prediction_errors",
    "rank_variables",
    "simultaneous_z",
    "variable_calibration",
    "variable_records",
    "vece",
]

LEVEL = 0.05
"""``p_adjusted`` below this (or a VCE(v*) band excluding 0) puts a variable in the first group."""

_CACHE: dict[str, object] = {"pred": None, "results": {}}


def _summary(pred: Predictions, name: str, span: float | None) -> dict:
    """Return the JSON-ready record of one covariate, cached for the most recent Predictions."""
    if _CACHE["pred"] is not pred:
        _CACHE["pred"] = pred
        _CACHE["results"] = {}
    results: dict = _CACHE["results"]  # type: ignore[assignment]
    key = (name, span)
    if key not in results:
        if is_nominal(pred, name):
            row = level_calibration(pred, name).record()
        else:
            present = ordinal_values(pred.covariates[name])
            present = present[~np.isnan(present)]
            if present.size == 0 or present.min() == present.max():
                # Constant (or all-missing) variable: no curve, and VECE over a single bin would
                # only repeat the overall gap, so it is not ranked (NaN sorts last). Any other
                # problem (infinite values) is raised, not hidden in the table.
                row = {"name": name, "kind": "ordinal", "vece": None, "vce": None,
                       "vce_at": None, "vce_support": None, "vce_ci": None,
                       "vce_significant": False, "kuiper_z": None, "p_value": None,
                       "span": None, "span_chosen": False, "n": int(present.size),
                       "spikes": [], "warnings": [
                           f"{name}: constant where present; no curve, not ranked."]}
            else:
                row = variable_calibration(pred, name, span=span).record()
        results[key] = row
    return results[key]


RANK_COLUMNS = ("name", "kind", "vece", "vce", "vce_at", "vce_support", "vce_significant",
                "kuiper_z", "p_value", "p_adjusted", "warnings")


def variable_records(pred: Predictions, *, span: float | None = None) -> list[dict]:
    """One JSON-ready record per covariate, ranked (the rows of ``mcviz variables``).

    Each record holds ``name``, ``kind`` (``"ordinal"`` or ``"nominal"``, the words of
    :attr:`Predictions.covariate_kinds`), ``vece``,
    ``vce``, ``vce_at`` (v*: a number, an ISO timestamp for dates, the level for nominal
    variables), ``vce_support`` (weight within the window at v*, or of the level; rows when
    unweighted), ``vce_ci`` ([low, high] of the signed gap at v*, a band valid for the chosen
    v*) and ``vce_significant`` (the band excludes 0; False: within noise), ``kuiper_z`` and
    ``p_value`` (the cumulative residuals about their mean along V: Kuiper's D/σ and its
    p, None for nominal covariates), ``p_adjusted`` (Bonferroni's over the covariates with a
    p), ``span`` and ``span_chosen`` (the curves' LOESS span and whether cross-validation
    chose it), ``n`` (rows used), ``spikes`` (values estimated from their own rows) and
    ``warnings`` (a list of sentences). Missing values are ``None``; every value is a plain
    Python ``str``, ``float``, ``int``, ``list``, ``bool`` or ``None``. The order is the
    module notes': evidence first, then VECE.
    """
    if span is not None:
        check_span(span, 0.3)
    prediction_errors(pred)  # validates the response kind once
    rows = [dict(_summary(pred, name, span)) for name in pred.covariates.columns]
    tested = sum(row["kind"] != "nominal" for row in rows)  # every numeric covariate
    for row in rows:
        row["p_adjusted"] = (None if row["p_value"] is None
                             else min(1.0, tested * row["p_value"]))  # Bonferroni

    def key(i: int) -> tuple:
        row = rows[i]
        evidence = row["vce_significant"] or (row["p_adjusted"] is not None
                                              and row["p_adjusted"] < LEVEL)
        return (row["vece"] is None, not evidence, -(row["vece"] or 0.0), row["name"])

    return [rows[i] | {"spikes": list(rows[i]["spikes"]),
                       "warnings": list(rows[i]["warnings"])} for i in sorted(range(len(rows)),
                                                                              key=key)]


def rank_variables(
    pred: Predictions, *, index: np.ndarray | None = None, span: float | None = None
) -> pd.DataFrame:
    """Rank every covariate: evidence first (module notes), then VECE (eq. (7)).

    Parameters
    ----------
    pred : Predictions
    index : array of int or bool, optional
        A subpopulation (positions in score order or a mask, as
        :meth:`~mcviz.io.Predictions.subset` takes): the statistic of its rows alone.
    span : float or None, default None
        LOESS span for the VCE curves (0.3 to 1); None: chosen per variable by
        cross-validation (:func:`~mcviz.stats.variable_curves.cross_validated_span`).

    Returns
    -------
    DataFrame
        Columns ``name``, ``kind`` (``"ordinal"`` or ``"nominal"``, the words of
        :attr:`Predictions.covariate_kinds`), ``vece``, ``vce``,
        ``vce_at`` (v* for numeric variables — an ISO timestamp for dates — the level for
        nominal ones), ``vce_support`` (weight within the window at v*), ``vce_significant``
        (the band of VCE(v*) excludes 0), ``kuiper_z``, ``p_value`` and ``p_adjusted`` (the
        cumulative statistic along the variable; NaN for nominal ones) and ``warnings``
        (a tuple of sentences), in the order of :func:`variable_records`. Values are
        probabilities (0 to 1). VCE is NaN where no point or level has enough support; a
        variable that is constant where present has no curve: NaN, listed last. Results are
        cached per variable for the most recent ``pred``. :func:`variable_records` gives the
        same rows ready for JSON.
    """
    pred = pred.subset(index)
    records = variable_records(pred, span=span)
    frame = pd.DataFrame(
        [[record[c] for c in RANK_COLUMNS] for record in records], columns=list(RANK_COLUMNS)
    )
    for column in ("vece", "vce", "vce_support", "kuiper_z", "p_value", "p_adjusted"):
        frame[column] = frame[column].astype(float)
    frame["vce_at"] = frame["vce_at"].astype(object)
    frame["warnings"] = [tuple(record["warnings"]) for record in records]
    return frame
