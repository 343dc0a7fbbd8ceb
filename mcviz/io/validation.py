"""Validation of the score, label and weight columns: every bad row counted, named, or dropped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError, describe_rows
from mcviz.io.roles import _label_text, _matching_class_names, _numeric_labels_as_classes

PROBABILITY_SUM_TOLERANCE = 1e-6
"""Per-class probabilities summing to 1 within this are taken as a distribution (else a warning)."""


class _RowFilter:
    """Collect invalid rows: raise at once, or drop them and count them per reason."""

    def __init__(self, n: int, drop_invalid: bool) -> None:
        self.n = n
        self.drop_invalid = drop_invalid
        self.keep = np.ones(n, dtype=bool)
        self.dropped: list[tuple[str, int]] = []

    def reject(self, bad: np.ndarray, *, column: str, problem: str, example: str = "") -> None:
        bad = bad & self.keep
        count = int(bad.sum())
        if count == 0:
            return
        if not self.drop_invalid:
            rows = np.flatnonzero(bad)
            raise ValidationError(
                f"column {column!r}: {describe_rows(rows, self.n)} {problem}{example}. "
                "Fix the file, choose another column, or drop invalid rows (--drop-invalid; "
                "drop_invalid=True in Python; the Data page's 'Drop invalid rows' checkbox).",
                column=column,
            )
        self.keep &= ~bad
        self.dropped.append((f"column {column!r}: {problem}", count))


@dataclass(frozen=True, slots=True, eq=False)
class _Response:
    """Score and response per input row (before sorting), and what they mean."""

    score: np.ndarray
    response: np.ndarray
    score_column: str
    classes: tuple[str, ...]
    positive: object = None
    predicted_class: np.ndarray | None = None
    true_class: np.ndarray | None = None


def _validated_scores(
    frame: pd.DataFrame, columns: Sequence[str], rows: _RowFilter
) -> dict[str, np.ndarray]:
    """Each score column as floats; non-numbers, NaN, inf and values outside [0, 1] rejected."""
    scores = {}
    for column in columns:
        values = _numeric_column(frame, column, rows, what="scores")
        rows.reject(~np.isfinite(values), column=column, problem="are NaN or infinite")
        outside = np.isfinite(values) & ((values < 0) | (values > 1))
        rows.reject(
            outside, column=column, problem="lie outside [0, 1]",
            example=_examples(values[outside & rows.keep]),
        )
        scores[column] = values
    return scores


def _validated_weights(frame: pd.DataFrame, weight: str | None, rows: _RowFilter) -> np.ndarray:
    """Return the weight column as positive floats (all ones without one)."""
    if not weight:
        return np.ones(rows.n)
    values = _numeric_column(frame, weight, rows, what="weights")
    rows.reject(~np.isfinite(values), column=weight, problem="are NaN or infinite")
    non_positive = np.isfinite(values) & (values <= 0)
    rows.reject(
        non_positive, column=weight, problem="are zero or negative",
        example=_examples(values[non_positive & rows.keep]),
    )
    return values


def _top_label_response(
    label_series: pd.Series,
    label: str,
    probability_columns: Sequence[str],
    scores: dict[str, np.ndarray],
    rows: _RowFilter,
    warnings: list[str],
) -> _Response:
    """Multi-class reduction: score = largest probability, response = label is its class.

    Kelly & Smyth, Section 6 (top-label calibration); class names follow the one rule of
    :func:`mcviz.io.roles._matching_class_names`.
    """
    n = rows.n
    label_text = _label_text(label_series)
    class_names = _matching_class_names(probability_columns, label_text)
    label_text = _numeric_labels_as_classes(label_text, class_names)
    known = np.isin(label_text, np.array(class_names, dtype=object))
    unknown = ~known & rows.keep
    rows.reject(
        ~known, column=label, problem="are not a known class",
        example=f" (values {', '.join(map(repr, pd.unique(label_text[unknown])[:5]))}; "
        f"classes are {', '.join(class_names[:10])}{'...' if len(class_names) > 10 else ''})",
    )
    matrix = np.column_stack([scores[c] for c in probability_columns])
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
    predicted_class = np.array(class_names, dtype=object)[argmax]
    return _Response(
        score=matrix[np.arange(n), argmax],
        response=(label_text == predicted_class).astype(float),
        score_column="top-label probability",
        classes=tuple(class_names),
        predicted_class=predicted_class,
        true_class=label_text,
    )


def _label_response(
    label_series: pd.Series,
    label: str,
    score: str,
    scores: dict[str, np.ndarray],
    positive: object,
    rows: _RowFilter,
    response: str,
    warnings: list[str],
) -> _Response:
    """Binary (or real-valued) response from the label column; warns on a single class."""
    values, classes, positive_value = _binary_response(
        label_series, label, positive, rows, response, rows.n
    )
    kept = values[rows.keep]
    if response != "continuous" and kept.size and kept.min() == kept.max():
        warnings.append(
            f"column {label!r}: every kept row has the same label "
            f"({'positive' if kept[0] == 1 else 'negative'}); calibration can still be "
            "measured but reliability is limited."
        )
    return _Response(score=scores[score], response=values, score_column=score, classes=classes,
                     positive=positive_value)



def _check_declared_kinds(
    frame: pd.DataFrame, covariates: Sequence[str], nominal: Sequence[str],
    ordinal: Sequence[str],
) -> None:
    # A declaration that cannot apply is a typo or a mapping mistake: say so, never ignore it.
    for column in (*nominal, *ordinal):
        _require_column(frame, column)
        if column not in covariates:
            kind = "nominal" if column in nominal else "ordinal"
            raise ValidationError(
                f"column {column!r} is declared {kind} but is not one of the covariates "
                f"({', '.join(map(str, covariates[:20])) or 'none'}).", column=column,
            )
    both = sorted(set(nominal) & set(ordinal), key=str)
    if both:
        raise ValidationError(
            f"column {both[0]!r} is declared both nominal and ordinal; choose one.",
            column=both[0],
        )


def _require_column(frame: pd.DataFrame, column: str) -> None:
    if column not in frame.columns:
        listed = ", ".join(map(str, frame.columns[:20]))
        raise ValidationError(
            f"column {column!r} is missing from the file. Columns: {listed}.", column=column
        )


def _examples(values: np.ndarray, shown: int = 3) -> str:
    if values.size == 0:
        return ""
    return f" (e.g. {', '.join(f'{v:g}' for v in values[:shown])})"


def _numeric_column(frame: pd.DataFrame, column: str, rows: _RowFilter, *, what: str) -> np.ndarray:
    series = frame[column]
    if isinstance(series.dtype, pd.CategoricalDtype):  # Parquet dictionary columns
        series = series.astype(object)
    if pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=float)
    if pd.api.types.is_numeric_dtype(series):
        return series.to_numpy(dtype=float, na_value=np.nan)
    converted = pd.to_numeric(series, errors="coerce")
    not_numbers = converted.isna().to_numpy() & series.notna().to_numpy()
    examples = pd.unique(series[not_numbers & rows.keep].astype(str))[:3]
    rows.reject(
        not_numbers, column=column, problem=f"are not numbers ({what} must be numeric)",
        example=f" (e.g. {', '.join(map(repr, examples))})" if len(examples) else "",
    )
    return converted.to_numpy(dtype=float, na_value=np.nan)


def _binary_response(
    series: pd.Series,
    column: str,
    positive: object,
    rows: _RowFilter,
    response: str,
    n: int,
) -> tuple[np.ndarray, tuple[str, ...], object]:
    """Map a label column to the 0/1 response (or real values for continuous responses)."""
    present = series.notna().to_numpy()
    if response == "continuous":
        values = _numeric_column(series.to_frame(), column, rows, what="responses")
        rows.reject(~np.isfinite(values) & present, column=column, problem="are infinite")
        return values, (), None

    if pd.api.types.is_bool_dtype(series) or (
        pd.api.types.is_numeric_dtype(series) and positive is None
    ):
        values = series.to_numpy(dtype=float, na_value=np.nan)
        other = present & ~np.isin(values, [0.0, 1.0])
        rows.reject(
            other, column=column, problem="are neither 0 nor 1",
            example=f" (values {', '.join(f'{v:g}' for v in pd.unique(values[other])[:5])}; "
            "give the positive value to use two other labels)",
        )
        return values, ("0", "1"), 1

    text = series.astype("string").str.strip()
    observed = list(pd.unique(text.dropna()))
    if positive is None:
        lowered = {str(v).lower() for v in observed}
        for negative_word, positive_word in (("false", "true"), ("no", "yes"), ("0", "1")):
            if lowered <= {negative_word, positive_word}:
                if len(lowered) < len(observed):  # "yes" and "YES": one label, any case
                    text = text.str.lower()
                    observed = list(pd.unique(text.dropna()))
                positive = next(v for v in observed if str(v).lower() == positive_word) if (
                    positive_word in lowered
                ) else positive_word
                break
    if positive is None:
        raise ValidationError(
            f"column {column!r}: labels are {', '.join(map(repr, observed[:5]))}; name the "
            "positive value (for example positive='yes').",
            column=column,
        )
    positive_text = str(positive).strip()
    if positive_text not in {str(v) for v in observed} and _looks_numeric(positive_text):
        positive_text = next((str(v) for v in observed if _same_number(v, positive_text)),
                             positive_text)
    values_text = text.to_numpy(dtype=object, na_value=None)
    others = sorted({str(v) for v in observed} - {positive_text})
    if positive_text not in {str(v) for v in observed} and len(others) > 1:
        raise ValidationError(
            f"column {column!r}: the positive value {positive_text!r} is not one of its labels "
            f"({', '.join(map(repr, observed[:5]))}{', ...' if len(observed) > 5 else ''}).",
            column=column,
        )
    if len(others) > 1:
        counts = text.value_counts()
        negative_value = max(others, key=lambda v: counts.get(v, 0))
        extra = present & (values_text != positive_text) & (values_text != negative_value)
        rows.reject(
            extra, column=column,
            problem=f"have a third label value besides {positive_text!r} and {negative_value!r}",
            example=_listed_values(values_text[extra & rows.keep]),
        )
    else:
        negative_value = others[0] if others else f"not {positive_text}"
    result = (values_text == positive_text).astype(float)
    result[~present] = np.nan
    return result, (str(negative_value), positive_text), positive


def _listed_values(values: np.ndarray) -> str:
    return f" (values {', '.join(map(repr, pd.unique(values)[:5]))})" if values.size else ""


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _same_number(value: object, text: str) -> bool:
    try:
        return float(str(value)) == float(text)
    except ValueError:
        return False

