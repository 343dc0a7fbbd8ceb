"""Assembly: read, infer roles, validate and sort into one :class:`Predictions`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError, describe_rows
from mcviz.io.covariates import _prepare_covariates
from mcviz.io.model import LoadReport, Predictions
from mcviz.io.readers import DEFAULT_MAX_BYTES, Source, read_table
from mcviz.io.roles import (
    _SCORE_NAME,
    _WEIGHT_NAME,
    _matching_class_names,
    _numeric_labels_as_classes,
    infer_roles,
)
from mcviz.io.validation import (
    _binary_response,
    _check_declared_kinds,
    _examples,
    _numeric_column,
    _require_column,
    _RowFilter,
)

__all__ = ["PROBABILITY_SUM_TOLERANCE", "demo_path", "load_demo", "load_predictions"]

PROBABILITY_SUM_TOLERANCE = 1e-6


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
    max_bytes: int = DEFAULT_MAX_BYTES,
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
    max_bytes : int
        Refuse larger files.

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
    n = len(frame)
    warnings: list[str] = []
    notices: list[str] = []

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
    weight = weight or None
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
    wanted = [*probability_columns, label, *filter(None, (score, weight))]
    for column in wanted:
        _require_column(frame, column)

    rows = _RowFilter(n, drop_invalid)
    score_columns = probability_columns or (score,)
    numeric_scores = {}
    for column in score_columns:
        values = _numeric_column(frame, column, rows, what="scores")
        rows.reject(~np.isfinite(values), column=column, problem="are NaN or infinite")
        outside = np.isfinite(values) & ((values < 0) | (values > 1))
        rows.reject(
            outside, column=column, problem="lie outside [0, 1]",
            example=_examples(values[outside & rows.keep]),
        )
        numeric_scores[column] = values

    weight_values = np.ones(n)
    if weight:
        weight_values = _numeric_column(frame, weight, rows, what="weights")
        rows.reject(~np.isfinite(weight_values), column=weight, problem="are NaN or infinite")
        non_positive = np.isfinite(weight_values) & (weight_values <= 0)
        rows.reject(
            non_positive, column=weight, problem="are zero or negative",
            example=_examples(weight_values[non_positive & rows.keep]),
        )

    label_series = frame[label]
    rows.reject(label_series.isna().to_numpy(), column=label, problem="are missing (NaN)")

    true_class = predicted_class = None
    classes: tuple[str, ...]
    if probability_columns:
        label_text = label_series.astype("string").str.strip().to_numpy(dtype=object, na_value="")
        class_names = _matching_class_names(probability_columns, label_text)
        label_text = _numeric_labels_as_classes(label_text, class_names)
        known = np.isin(label_text, np.array(class_names, dtype=object))
        unknown = ~known & rows.keep
        rows.reject(
            ~known, column=label, problem="are not a known class",
            example=f" (values {', '.join(map(repr, pd.unique(label_text[unknown])[:5]))}; "
            f"classes are {', '.join(class_names[:10])}{'...' if len(class_names) > 10 else ''})",
        )
        matrix = np.column_stack([numeric_scores[c] for c in probability_columns])
        keep = rows.keep
        sums = matrix[keep].sum(axis=1)
        off = np.abs(sums - 1) > PROBABILITY_SUM_TOLERANCE
        if off.any():
            warnings.append(
                f"probability columns: {describe_rows(np.flatnonzero(keep)[off], n)} do not sum "
                f"to 1 within {PROBABILITY_SUM_TOLERANCE:g} (largest deviation "
                f"{np.abs(sums - 1).max():.3g}); the top-label probability is used as given."
            )
        argmax = np.argmax(np.where(np.isfinite(matrix), matrix, -np.inf), axis=1)
        score_values = matrix[np.arange(n), argmax]
        predicted_class = np.array(class_names, dtype=object)[argmax]
        true_class = label_text
        response_values = (true_class == predicted_class).astype(float)
        classes = tuple(class_names)
        score_name = "top-label probability"
        positive_value: object = None
    else:
        score_values = numeric_scores[score]
        score_name = score
        response_values, classes, positive_value = _binary_response(
            label_series, label, positive, rows, response, n
        )

    keep = rows.keep
    n_kept = int(keep.sum())
    if n_kept == 0:
        raise ValidationError(f"no valid rows left: all {n:,} rows were dropped as invalid.")

    if response != "continuous" and not probability_columns:
        kept_labels = response_values[keep]
        if kept_labels.min() == kept_labels.max():
            warnings.append(
                f"column {label!r}: every kept row has the same label "
                f"({'positive' if kept_labels[0] == 1 else 'negative'}); calibration can still be "
                "measured but reliability is limited."
            )

    excluded = {score_name, label, weight, *probability_columns}
    if covariates is None:
        ids = set(roles.id_columns if id_columns is None else id_columns)
        score_like = set(roles.score_candidates) | set(roles.probabilities)
        covariates = [c for c in frame.columns if c not in excluded | ids | score_like]
    else:
        for column in covariates:
            _require_column(frame, column)
        covariates = [c for c in covariates if c not in excluded]
    _check_declared_kinds(frame, covariates, nominal, ordinal)

    order = np.argsort(score_values[keep], kind="stable")
    kept_rows = np.flatnonzero(keep)[order]
    sorted_scores = np.ascontiguousarray(score_values[kept_rows], dtype=float)
    run_end = np.ones(n_kept, dtype=bool)
    run_end[:-1] = sorted_scores[1:] != sorted_scores[:-1]

    covariate_frame, kinds, covariate_notices = _prepare_covariates(
        frame, covariates, kept_rows, nominal, ordinal
    )
    notices.extend(covariate_notices)

    report = LoadReport(
        n_read=n,
        n_kept=n_kept,
        dropped=tuple(rows.dropped),
        warnings=tuple(warnings),
        notices=tuple(notices),
    )
    return Predictions(
        score=_readonly(sorted_scores),
        label=_readonly(np.ascontiguousarray(response_values[kept_rows], dtype=float)),
        weight=_readonly(np.ascontiguousarray(weight_values[kept_rows], dtype=float)),
        row=_readonly(kept_rows.astype(np.int64)),
        run_end=_readonly(run_end),
        covariates=covariate_frame,
        covariate_kinds=kinds,
        score_column=score_name,
        label_column=label,
        weight_column=weight,
        probability_columns=probability_columns,
        classes=classes,
        predicted_class=None if predicted_class is None else _readonly(predicted_class[kept_rows]),
        true_class=None if true_class is None else _readonly(true_class[kept_rows]),
        positive=positive_value,
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
