"""Assembly: read, infer roles, validate and sort into one :class:`Predictions`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io.covariates import plan_covariates
from mcviz.io.model import LoadReport, Predictions, Roles
from mcviz.io.readers import Source, read_table
from mcviz.io.roles import _SCORE_NAME, _WEIGHT_NAME, infer_roles
from mcviz.io.validation import (
    PROBABILITY_SUM_TOLERANCE,
    _check_declared_kinds,
    _label_response,
    _require_column,
    _Response,
    _RowFilter,
    _top_label_response,
    _validated_scores,
    _validated_weights,
)

__all__ = ["PROBABILITY_SUM_TOLERANCE", "demo_path", "load_demo", "load_predictions"]


def load_predictions(
    source: Source,
    *,
    score: str | None = None,
    probabilities: Sequence[str] | None = None,
    label: str | None = None,
    positive: object = None,
    weight: str | Literal[False] | None = None,
    covariates: Sequence[str] | None = None,
    nominal: Sequence[str] = (),
    ordinal: Sequence[str] = (),
    id_columns: Sequence[str] | None = None,
    response: Literal["binary", "continuous"] = "binary",
    drop_invalid: bool = False,
    max_bytes: int | None = None,
) -> Predictions:
    """Read, validate and sort predictions.

    Parameters
    ----------
    source : path, file-like or DataFrame
        CSV/TSV (optionally .gz/.zip) or Parquet.
    score : str, optional
        Column of positive-class probabilities. Inferred from the names when omitted.
    probabilities : sequence of str, optional
        Per-class probability columns (multi-class; replaces ``score``). The class names are what
        follows the columns' common prefix (``prob_A`` -> ``A``) and labels must be among them.
    label : str, optional
        The label column: 0/1, booleans, or two values with ``positive`` naming the positive one.
    positive : optional
        The positive label value (required when the two label values are not 0/1 or booleans).
    weight : str or False, optional
        Positive weights. Inferred from the names (``weight``, ``w``) when omitted; ``False``
        means unweighted.
    covariates : sequence of str, optional
        Default: every column not used for another role, not score-like and not an id column.
    nominal, ordinal : sequence of str
        Override the covariate kinds (default: numeric, boolean and datetime columns are ordinal;
        strings and categoricals are nominal).
    id_columns : sequence of str, optional
        Columns excluded from the covariates (default: inferred ``id``-like names).
    response : {"binary", "continuous"}
        ``"continuous"`` accepts real-valued responses (paper 000 Appendix C).
    drop_invalid : bool
        Drop invalid rows (and report them) instead of raising.
    max_bytes : int, optional
        Refuse larger input, before or after decompression (default
        :func:`~mcviz.io.readers.default_max_bytes`: 1 GiB, or a quarter of the
        ``MCVIZ_MEMORY_BUDGET`` environment variable).

    Returns
    -------
    Predictions

    Raises
    ------
    ValidationError
        With the column, the problem, the number of rows and the first row numbers.
    """
    if response not in ("binary", "continuous"):
        raise ValidationError(f"response must be 'binary' or 'continuous', not {response!r}.")
    frame = read_table(source, max_bytes=max_bytes)
    frame.columns = [str(c) for c in frame.columns]
    roles = infer_roles(frame)
    score, probability_columns, label, weight = _resolve_columns(
        frame, roles, score=score, probabilities=probabilities, label=label, weight=weight
    )
    rows = _RowFilter(len(frame), drop_invalid)
    warnings: list[str] = []
    scores = _validated_scores(frame, probability_columns or (score,), rows)
    weight_values = _validated_weights(frame, weight, rows)
    rows.reject(frame[label].isna().to_numpy(), column=label, problem="are missing (NaN)")
    if probability_columns:
        answer = _top_label_response(
            frame[label], label, probability_columns, scores, rows, warnings
        )
    else:
        answer = _label_response(
            frame[label], label, score, scores, positive, rows, response, warnings
        )
    if not rows.keep.any():
        raise ValidationError(f"no valid rows left: all {rows.n:,} rows were dropped as invalid.")
    excluded = {answer.score_column, label, weight, *probability_columns}
    names = _covariate_names(frame, roles, covariates, id_columns, excluded)
    _check_declared_kinds(frame, names, nominal, ordinal)
    return _assemble(
        frame, rows, answer, weight_values, names, nominal, ordinal, warnings,
        label=label, weight=weight, probability_columns=probability_columns, response=response,
    )


def _resolve_columns(
    frame: pd.DataFrame,
    roles: Roles,
    *,
    score: str | None,
    probabilities: Sequence[str] | None,
    label: str | None,
    weight: str | Literal[False] | None,
) -> tuple[str | None, tuple[str, ...], str, str | None]:
    """Return the score (or per-class probability), label and weight columns, given or inferred."""
    probability_columns = tuple(probabilities or ())
    if not probability_columns and score is None:
        score = roles.score
        if score is None and roles.probabilities:
            probability_columns = roles.probabilities
        if score is None and not probability_columns:
            # A score-named column that is not numeric: check it, so the message names it.
            score = next((c for c in frame.columns if _SCORE_NAME.match(c)), None)
        if score is None and not probability_columns:
            raise ValidationError(
                "no score column: name one (for example score='prob'), or give per-class "
                f"probability columns. Columns: {', '.join(frame.columns[:20])}."
            )
    if weight is None:
        weight = roles.weight or next(
            (c for c in frame.columns if _WEIGHT_NAME.match(c)
             and not pd.api.types.is_bool_dtype(frame[c]) and frame[c].notna().any()),
            None,
        )  # a weight-named column holding text is checked (and named), never silently ignored
    if label is None:
        label = roles.label
        if label is None:
            raise ValidationError(
                f"no label column: name one. Columns: {', '.join(frame.columns[:20])}."
            )
    if probability_columns and len(set(probability_columns)) != len(probability_columns):
        raise ValidationError(
            f"probability columns are listed twice: {', '.join(probability_columns)}."
        )
    if len(probability_columns) == 1:
        raise ValidationError(
            f"one probability column ({probability_columns[0]!r}): give one column per class "
            "(two or more), or pass it as the score.",
            column=probability_columns[0],
        )
    for column in [*probability_columns, label, *filter(None, (score, weight))]:
        _require_column(frame, column)
    return score, probability_columns, label, weight or None


def _covariate_names(
    frame: pd.DataFrame,
    roles: Roles,
    covariates: Sequence[str] | None,
    id_columns: Sequence[str] | None,
    excluded: set[str | None],
) -> list[str]:
    """Return the covariates asked for, or every other column not score-like nor an id."""
    if covariates is None:
        ids = set(roles.id_columns if id_columns is None else id_columns)
        score_like = set(roles.score_candidates) | set(roles.probabilities) | {roles.score}
        # a column named as the weight is no covariate, even when the user asked for no weights
        return [c for c in frame.columns if c not in excluded | ids | score_like
                and c != roles.weight]
    for column in covariates:
        _require_column(frame, column)
    return [c for c in covariates if c not in excluded]


def _assemble(
    frame: pd.DataFrame,
    rows: _RowFilter,
    answer: _Response,
    weight_values: np.ndarray,
    covariates: Sequence[str],
    nominal: Sequence[str],
    ordinal: Sequence[str],
    warnings: list[str],
    *,
    label: str,
    weight: str | None,
    probability_columns: tuple[str, ...],
    response: Literal["binary", "continuous"],
) -> Predictions:
    """Sort the kept rows by score once and build the :class:`Predictions`.

    The default (unstable) sort suffices: every statistic is evaluated at the ends of runs of
    tied scores (``run_end``), so the order inside a run cannot change a result, and ``row``
    still names each observation's input row.
    """
    pending, kinds, notices = plan_covariates(frame, covariates, rows.keep, nominal, ordinal)
    kept_rows = np.flatnonzero(rows.keep)
    kept_rows = kept_rows[np.argsort(answer.score[kept_rows])]
    sorted_scores = np.ascontiguousarray(answer.score[kept_rows], dtype=float)
    run_end = np.ones(kept_rows.size, dtype=bool)
    run_end[:-1] = sorted_scores[1:] != sorted_scores[:-1]
    report = LoadReport(
        n_read=rows.n,
        n_kept=int(kept_rows.size),
        dropped=tuple(rows.dropped),
        warnings=tuple(warnings),
        notices=tuple(notices),
    )

    def in_order(values: np.ndarray | None, dtype: type | None = float) -> np.ndarray | None:
        if values is None:
            return None
        return _readonly(np.ascontiguousarray(values[kept_rows], dtype=dtype))

    return Predictions(
        score=_readonly(sorted_scores),
        label=in_order(answer.response),
        weight=in_order(weight_values),
        row=_readonly(kept_rows.astype(np.int64)),
        run_end=_readonly(run_end),
        covariates=pending,  # type: ignore[arg-type]  # put in score order on first access
        covariate_kinds=kinds,
        score_column=answer.score_column,
        label_column=label,
        weight_column=weight,
        probability_columns=probability_columns,
        classes=answer.classes,
        predicted_class=in_order(answer.predicted_class, None),
        true_class=in_order(answer.true_class, None),
        positive=answer.positive,
        response_kind=response,
        report=report,
    )


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


# --------------------------------------------------------------------------------------------
# Embedded demos

_DEMOS = {
    "adult": "adult.parquet",
    "letter": "letter.parquet",
}


def demo_path(name: str = "adult") -> Path:
    """Path of an embedded demo dataset (``"adult"`` binary or ``"letter"`` multi-class)."""
    if name not in _DEMOS:
        raise ValidationError(f"unknown demo {name!r}; choose one of {', '.join(_DEMOS)}.")
    return Path(__file__).parent.parent / "data" / _DEMOS[name]


def load_demo(name: str = "adult", *, score: str | None = None, **options: object) -> Predictions:
    """Load an embedded demo as :class:`Predictions` (Adult: ``score_gbm`` by default).

    The Adult demo uses ``fnlwgt`` as a covariate unless it is passed as ``weight``.
    """
    path = demo_path(name)
    if name == "adult":
        options.setdefault("label", "income_gt_50k")
        return load_predictions(path, score=score or "score_gbm", **options)
    frame = read_table(path)
    probability_columns = [c for c in frame.columns if c.startswith("prob_")]
    options.setdefault("label", "letter")
    return load_predictions(frame, probabilities=probability_columns, **options)
