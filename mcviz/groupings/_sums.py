"""Group errors and standard errors from per-group sums (shared by every grouping)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.groupings.results import GroupErrors, _readonly
from mcviz.io import Predictions


def _se_method(pred: Predictions) -> str:
    return "null (eq. 5)" if pred.response_kind == "binary" else "empirical"


def _from_sums(
    *,
    pred: Predictions,
    kind: str,
    description: str,
    labels: Sequence[str],
    size: np.ndarray,
    v_sum: np.ndarray,
    v2_sum: np.ndarray,
    vd_sum: np.ndarray,
    vd2_sum: np.ndarray,
    var_sum: np.ndarray,
    vs_sum: np.ndarray,
    mass: np.ndarray,
    centre: np.ndarray | None,
    overlapping: bool,
    notice: str | None,
) -> GroupErrors:
    """Assemble :class:`GroupErrors` from per-group sums of v, v², v·d, v²·d², v²·S(1-S), v·S."""
    error, standard_error = _error_and_se(
        pred.response_kind, size, v_sum, v2_sum, vd_sum, vd2_sum, var_sum
    )
    mean_score = vs_sum / v_sum
    return GroupErrors(
        kind=kind,
        description=description,
        labels=tuple(labels),
        error=_readonly(error),
        size=_readonly(np.asarray(size, dtype=np.int64)),
        effective_size=_readonly(v_sum**2 / v2_sum),
        weight_total=_readonly(v_sum),
        mass=_readonly(mass / mass.sum()),
        standard_error=_readonly(standard_error),
        mean_score=_readonly(mean_score),
        mean_label=_readonly(mean_score + error),
        centre=None if centre is None else _readonly(centre),
        overlapping=overlapping,
        n=pred.n,
        weighted=pred.weighted,
        standard_error_method=_se_method(pred),
        notice=notice,
    )


def _error_and_se(
    response_kind: str,
    size: np.ndarray,
    v_sum: np.ndarray,
    v2_sum: np.ndarray,
    vd_sum: np.ndarray,
    vd2_sum: np.ndarray,
    var_sum: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Group errors (eq. (6) of [1], sign reversed) and their standard errors from sums."""
    error = vd_sum / v_sum  # -c(I), eq. (6) of [1]: weighted mean of R - S
    if response_kind == "binary":
        return error, np.sqrt(var_sum) / v_sum  # eq. (5) of [2] for the group
    # sum v² (d - c)² = sum v² d² - 2 c sum v² d + c² sum v²; var_sum holds sum v² d here.
    centred = np.maximum(vd2_sum - 2.0 * error * var_sum + error**2 * v2_sum, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        correction = np.where(size > 1, np.sqrt(size / np.maximum(size - 1, 1)), np.nan)
    return error, correction * np.sqrt(centred) / v_sum


def _per_point(pred: Predictions) -> dict[str, np.ndarray]:
    """Per-observation terms whose (weighted) sums give every group statistic."""
    w = pred.weight
    d = pred.label - pred.score  # response minus score, the sign of mcviz.cumulative
    # Binary: S(1 - S) for the null standard error; otherwise d, to centre the empirical one.
    spread = pred.score * (1.0 - pred.score) if pred.response_kind == "binary" else d
    return {"w": w, "d": d, "spread": spread, "s": pred.score}


def _check_columns(pred: Predictions, columns: Sequence[str]) -> list[str]:
    columns = [columns] if isinstance(columns, str) else list(columns)
    for column in columns:
        pred.require_covariate(column)
    return columns


def _numeric_values(series: pd.Series) -> np.ndarray:
    if np.issubdtype(series.dtype, np.datetime64):
        values = series.to_numpy().astype("datetime64[ns]")
        out = values.astype(np.int64).astype(float)
        out[np.isnat(values)] = np.nan
        return out
    return series.to_numpy(dtype=float, na_value=np.nan)

