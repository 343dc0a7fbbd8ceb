"""Tables as people read them: every number through the one formatter, widths from content.

Plain Python (no Streamlit): :func:`formatted` writes a frame's numbers with
:func:`mcviz.present.figures.format_number` (p-value columns as p-values, ``%`` columns as
percentages), and :func:`content_widths` gives each column the pixel width its longest text
needs, so no cell is cut ("208" for 2,086); a wide table scrolls instead.
"""

from __future__ import annotations

import math

import pandas as pd

from mcviz.present.figures import format_number, format_percent
from mcviz.text import display_text

__all__ = ["VARIABLE_COLUMNS", "content_widths", "displayed", "formatted", "is_p_column",
           "is_percent_column", "variable_table"]

CHAR_PX = 7.6
"""Average width (px) of a character of the dashboard's table font (14 px Source Sans)."""
PADDING_PX = 30
MAX_PX = 1200


def is_p_column(name: object) -> bool:
    """Say whether a column holds p-values: ``p``, ``p-value``, ``p_adjusted``, ``p (held-out)``...

    >>> [is_p_column(c) for c in ("p", "p_value", "p adjusted (Holm)", "pop", "share")]
    [True, True, True, False, False]
    """
    text = str(name).lower()
    return text == "p" or text.startswith(("p ", "p_", "p-", "p(", "p-value"))


def is_percent_column(name: object) -> bool:
    """Say whether a column holds shares as fractions (``share``, ``share of weight``...).

    Columns named ``... %`` already hold percentages: they are written as numbers.
    """
    return str(name).lower() in ("share", "share of weight", "share of rows")


def formatted(frame: pd.DataFrame, *, percent: tuple[str, ...] = ()) -> pd.DataFrame:
    """Return ``frame`` with float columns written by the one formatter (as text).

    ``percent`` names columns holding fractions to be written as percentages (also those
    :func:`is_percent_column` recognises by name). Integer columns get thousands separators.

    >>> formatted(pd.DataFrame({"size": [2086], "share": [0.0427], "p": [3e-5]})).iloc[0].tolist()
    ['2,086', '4.27%', '< 0.0001']
    """
    shown = frame.copy()
    for column in shown.columns:
        series = shown[column]
        if pd.api.types.is_bool_dtype(series):
            continue
        if column in percent or (is_percent_column(column)
                                 and pd.api.types.is_float_dtype(series)):
            shown[column] = [format_percent(v) for v in series]
        elif pd.api.types.is_float_dtype(series):
            kind = "p" if is_p_column(column) else None
            shown[column] = [format_number(v, kind=kind) for v in series]
        elif pd.api.types.is_integer_dtype(series):
            shown[column] = [format_number(int(v)) for v in series]
    return shown


def displayed(frame: pd.DataFrame) -> pd.DataFrame:
    r"""Return a copy of ``frame`` to show, its text through :func:`mcviz.text.display_text`.

    Text cells, column names and index labels: bidi controls and line separators are shown as
    ``[U+XXXX]``.

    Only what is drawn changes; the frame a computation uses is never this one. Numbers,
    booleans and dates keep their types (the grid still sorts them as numbers).

    >>> shown = displayed(pd.DataFrame({"a\u202eb": ["x\ry", 1.5], "n": [1, 2]}))
    >>> list(shown.columns), shown.iloc[0, 0], shown.iloc[1, 0]
    (['a[U+202E]b', 'n'], 'x[U+000D]y', 1.5)
    """
    shown = frame.copy()
    for position in range(shown.shape[1]):
        series = shown.iloc[:, position]
        if isinstance(series.dtype, pd.CategoricalDtype):
            series = series.astype(object)
        if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
            shown.isetitem(position, [display_text(v) if isinstance(v, str) else v
                                      for v in series])
    shown.columns = _labels(shown.columns)
    shown.index = _labels(shown.index)
    return shown


def _labels(labels: pd.Index) -> pd.Index:
    if isinstance(labels, pd.MultiIndex):
        return labels.set_levels([_labels(level) for level in labels.levels])
    if labels.dtype.kind in "OSUT" or isinstance(labels.dtype, (pd.StringDtype,
                                                                 pd.CategoricalDtype)):
        return pd.Index([display_text(v) if isinstance(v, str) else v for v in labels],
                        name=None if labels.name is None else display_text(labels.name))
    return labels


def content_widths(frame: pd.DataFrame, *, index: bool = False) -> dict[str, int]:
    """Pixel width of each column: its longest cell or header, so nothing is cut.

    >>> content_widths(pd.DataFrame({"size": ["2,086"], "description": ["age >= 40"]}))
    {'size': 68, 'description': 114}
    """
    widths = {}
    for column in frame.columns:
        texts = [str(column), *map(str, frame[column].tolist())]
        longest = max(len(t) for t in texts)
        widths[str(column)] = min(math.ceil(CHAR_PX * longest + PADDING_PX), MAX_PX)
    return widths


VARIABLE_COLUMNS: dict[str, tuple[str, str]] = {
    "name": ("variable", "The covariate (its kind, ordinal or nominal, is in the Variable list "
             "below)."),
    "vece": ("average gap", "VECE (Kelly & Smyth eq. 7): |error rate - predicted error rate| "
             "averaged over the variable's rows, in percentage points."),
    "vce": ("largest gap", "VCE(v*): the largest |error rate - predicted error rate| where the "
            "data can say it (thin support, small levels and overshooting fits left out), in "
            "percentage points; beyond noise: the 95% band of the gap at v* (valid for a v* "
            "picked as the largest gap) excludes 0; within noise: it does not."),
    "vce_at": ("where", "v*: the value or level of the variable at the largest gap."),
    "vce_support": ("rows there", "The rows (weight) within the curve's window at v*: how much "
                    "data the largest gap rests on."),
    "kuiper_z": ("change along (D/σ)", "Kuiper's D/σ of the cumulative differences of "
                 "response - score about their mean, ordered by the variable: does the "
                 "miscalibration change along it (no span, so a local error a smooth curve "
                 "averages away still shows)? The cumulative chart along the variable keeps the "
                 "overall offset, so its D/σ is another number; – for nominal variables: their "
                 "levels have no order."),
    "p_adjusted": ("p adjusted", "The p-value of that D/σ (Kuiper's distribution: the range of a "
                   "Brownian bridge, as the path about its mean ends at 0), "
                   "Bonferroni-adjusted over the numeric variables: a variable picked because "
                   "its p is the smallest is judged by this one (mcviz variables --json also "
                   "gives each variable's own p)."),
}
"""The Variables ranking as people read it: columns of
:func:`mcviz.stats.variables.rank_variables` -> (header in words, hover help). Page and report
read this one mapping; seven columns fit the 1440-px page without a scroll (the kind is in the
Variable list, the unadjusted p and the warnings in ``mcviz variables --json``, the warnings
also under each variable's charts)."""


def variable_table(ranking: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Return the ranking with headers in words and values as text, and each header's help.

    Gaps are percentages (as the charts write them), the largest with "beyond noise" or
    "within noise"; ``rows there`` is a row count (weight), never a percentage; p-values through
    the one p formatter.

    >>> frame = pd.DataFrame({"name": ["age"], "kind": ["ordinal"], "vece": [0.0123],
    ...     "vce": [0.031], "vce_at": [41.5], "vce_support": [3630.0],
    ...     "vce_significant": [True], "kuiper_z": [5.2], "p_value": [2e-6],
    ...     "p_adjusted": [1.2e-5], "warnings": [("thin",)]})
    >>> table, _ = variable_table(frame)
    >>> table.iloc[0].tolist()
    ['age', '1.23%', '3.1%, beyond noise', '41.5', '3,630', '5.2', '< 0.0001']
    """
    shown = formatted(ranking[[c for c in VARIABLE_COLUMNS if c in ranking.columns]],
                      percent=("vece", "vce"))
    shown["vce"] = [gap if gap == "–" else f"{gap}, {'beyond' if sig else 'within'} noise"
                    for gap, sig in zip(shown["vce"], ranking["vce_significant"], strict=True)]
    shown["vce_at"] = [format_number(v) if isinstance(v, float) else
                       ("–" if v is None else str(v)) for v in ranking["vce_at"]]
    shown.columns = [VARIABLE_COLUMNS[c][0] for c in shown.columns]
    return shown, dict(VARIABLE_COLUMNS.values())
