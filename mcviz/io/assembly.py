"""Assembly: read, infer roles, validate and sort into one :class:`Predictions`.

:class:`Predictions` is defined in :mod:`mcviz.io.predictions` (no pandas there) and
re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io.covariates import plan_covariates
from mcviz.io.model import LoadReport, Roles
from mcviz.io.predictions import Predictions, sorted_predictions, validate_index
from mcviz.io.readers import Source, read_table
from mcviz.io.roles import _SCORE_NAME, _WEIGHT_NAME, id_note, infer_roles, labels_are_classes
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

__all__ = [
    "PROBABILITY_SUM_TOLERANCE",
    "Predictions",
    "demo_path",
    "load_demo",
    "load_predictions",
    "validate_index",
]


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
    notices: list[str] = []
    if probability_columns and not probabilities:
        score, probability_columns = _alternative_scores(
            frame, label, score, probability_columns, notices)
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
        notices=[*notices, *_id_notes(roles, excluded, covariates, id_columns)],
    )


def _alternative_scores(
    frame: pd.DataFrame, label: str, score: str | None, columns: tuple, notices: list[str]
) -> tuple[str | None, tuple]:
    """Return ``(score, probability columns)``: inferred class columns that are alternative scores.

    ``score_gbm``, ``score_logistic``, ... with two-valued labels that name no class are
    alternative scores of one binary model each (the page's rule,
    ``dashboard.state.default_mapping``): the first is analysed and a notice names the others.
    """
    levels = pd.unique(frame[label].dropna())
    if len(levels) > 2 or any(labels_are_classes(columns, [v]) for v in levels):
        return score, columns
    score, others = columns[0], columns[1:]
    notices.append(f"the columns {', '.join(map(repr, [score, *others]))} are alternative "
                   f"scores (the labels in {label!r} are not their class names): {score!r} "
                   "is analysed; name another as the score column to analyse it.")
    return score, ()


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


def _id_notes(roles: Roles, excluded: set[str | None], covariates: Sequence[str] | None,
              id_columns: Sequence[str] | None) -> list[str]:
    """Return one note per id column left out of the default covariates (:func:`id_note`)."""
    if covariates is not None or id_columns is not None:  # the caller chose
        return []
    return [id_note(name) for name in roles.id_columns if name not in excluded]


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
    notices: Sequence[str] = (),
) -> Predictions:
    """Decide the covariates, then sort the kept rows by score once (:func:`sorted_predictions`)."""
    pending, kinds, dropped = plan_covariates(frame, covariates, rows.keep, nominal, ordinal)
    report = LoadReport(
        n_read=rows.n,
        n_kept=int(rows.keep.sum()),
        dropped=tuple(rows.dropped),
        warnings=tuple(warnings),
        notices=(*notices, *dropped),
    )
    return sorted_predictions(
        answer.score, rows.keep, pending, report=report,
        arrays={"label": answer.response, "weight": weight_values,
                "predicted_class": answer.predicted_class, "true_class": answer.true_class},
        columns={"covariate_kinds": kinds, "score_column": answer.score_column,
                 "label_column": label, "weight_column": weight,
                 "probability_columns": probability_columns, "classes": answer.classes,
                 "positive": answer.positive, "response_kind": response},
    )


# --------------------------------------------------------------------------------------------
# Embedded demos

_DEMOS = {
    "adult": "adult.parquet",
    "letter": "letter.parquet",
    "flights": "flights.parquet",
}


def demo_path(name: str = "adult") -> Path:
    """Path of an embedded demo dataset (``"adult"``, ``"letter"`` multi-class, ``"flights"``)."""
    if name not in _DEMOS:
        raise ValidationError(f"unknown demo {name!r}; choose one of {', '.join(_DEMOS)}.")
    return Path(__file__).parent.parent / "data" / _DEMOS[name]


def load_demo(name: str = "adult", *, score: str | None = None, **options: object) -> Predictions:
    """Load an embedded demo as :class:`Predictions` (Adult: ``score_gbm`` by default).

    The Adult demo uses ``fnlwgt`` as a covariate unless it is passed as ``weight``. The
    flights demo (NYC 2013, dated by ``departure``) is the Monitor page's.
    """
    path = demo_path(name)
    if name == "flights":
        options.setdefault("label", "delayed")
        return load_predictions(path, score=score or "score_gbm", **options)
    if name == "adult":
        options.setdefault("label", "income_gt_50k")
        return load_predictions(path, score=score or "score_gbm", **options)
    frame = read_table(path)
    probability_columns = [c for c in frame.columns if c.startswith("prob_")]
    options.setdefault("label", "letter")
    return load_predictions(frame, probabilities=probability_columns, **options)
