"""Validation of the score, label and weight columns: every bad row counted, named, or dropped."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError, describe_rows


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
                "Fix the file, choose another column, or drop invalid rows.",
                column=column,
            )
        self.keep &= ~bad
        self.dropped.append((f"column {column!r}: {problem}", count))



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

