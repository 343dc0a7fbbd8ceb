"""Role inference: which column is the score, the label, the weight, an id, a covariate.

Holds the one class-name rule for per-class probability columns (:func:`_class_names`,
:func:`_matching_class_names`): the class name is what follows the columns' common prefix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mcviz.io.model import Roles
from mcviz.io.predictions import roles_sentence  # defined beside Predictions (no pandas there)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "class_names",
    "id_note",
    "infer_roles",
    "labels_are_classes",
    "looks_like_id",
    "roles_from_columns",
    "roles_sentence",
    "text_looks_like_id",
]

_SCORE_NAME = re.compile(
    r"^(score|scores|prob|probs|probability|proba|pred|prediction|predicted|y_prob|y_proba|"
    r"y_score|y_pred_proba|y_pred|p|p_hat|phat)([_\-\s.].*)?$|.*[_\-\s.](score|prob|proba|pred)$",
    re.IGNORECASE,
)
_LABEL_NAME = re.compile(
    r"^(label|labels|y|y_true|target|outcome|class|truth|response|actual)$", re.IGNORECASE
)
_WEIGHT_NAME = re.compile(r"^(weight|weights|w|sample_weight|wt)$", re.IGNORECASE)
_ID_NAME = re.compile(
    r"^(id|row_id|rowid|index|unnamed: ?0|record_id|uid|guid)$|^id[_\-.\s].+|.+[_\-.\s]id$"
    r"|.*uuid.*",
    re.IGNORECASE,
)
ID_MIN_ROWS = 200
"""Columns with fewer present values are never called ids by their content."""
ID_DISTINCT_SHARE = 0.95
"""A text or integer column with at least this share of distinct values is an id (content)."""
ID_INTEGER_SPREAD = 1.5
"""An integer id's values span at most this many times its distinct values (dense codes)."""
_PROBABILITY_PREFIX = re.compile(
    r"^(prob|proba|probability|p|score|pred)[_\-.:](.+)$", re.IGNORECASE
)



def infer_roles(frame: pd.DataFrame) -> Roles:
    """Guess column roles from common names and contents.

    Score: a numeric column named like ``score``, ``prob``, ``pred``, ``y_prob``, ``p`` (or
    ending in ``_score``/``_prob``); when no such column is numeric, the first column so named
    all the same, so that loading it says what is wrong with it (a score never silently moves to
    another column). Probabilities: three or more numeric columns sharing a prefix
    such as ``prob_``. Label: ``label``/``y``/``target``/``outcome``..., else the last column
    holding only 0 and 1. Weight: ``weight``/``w``. Id: ``id``/``row_id``/``index``, a name
    ``*_id``, ``id_*`` or holding ``uuid``, or by content a column of near-unique values
    (:func:`looks_like_id`). Ids are not covariates unless named as such.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"id": [1, 2], "age": [30, 40], "score": [0.2, 0.7],
    ...                       "label": [0, 1]})
    >>> roles = infer_roles(frame)
    >>> roles.score, roles.label, roles.id_columns, roles.covariates
    ('score', 'label', ('id',), ('age',))
    """
    columns = [str(c) for c in frame.columns]
    numeric = {c for c in columns if _is_numeric(frame[c])}
    return roles_from_columns(columns, numeric, frame)


def roles_from_columns(
    columns: Sequence[str], numeric: set[str], frame: pd.DataFrame | None = None
) -> Roles:
    """Column roles from the names and which columns are numeric (not boolean) alone.

    The rules of :func:`infer_roles`, which calls this; without ``frame`` (the values) no
    label is inferred from the values (0/1 columns, class names): the caller names the label.
    """
    groups: dict[str, list[str]] = {}
    for column in columns:
        match = _PROBABILITY_PREFIX.match(column)
        if match and column in numeric:
            groups.setdefault(match.group(1).lower(), []).append(column)
    probabilities: tuple[str, ...] = ()
    for members in groups.values():
        if len(members) >= 3 and len(members) > len(probabilities):
            probabilities = tuple(members)

    candidates = tuple(
        c for c in columns if c in numeric and _SCORE_NAME.match(c) and c not in probabilities
    )
    score = candidates[0] if candidates and not probabilities else None
    if score is None and not probabilities:  # named a score, yet not numeric: keep it
        score = next((c for c in columns if _SCORE_NAME.match(c)), None)

    label = next((c for c in columns if _LABEL_NAME.match(c)), None)
    if frame is not None:  # values at hand (and pandas imported with them)
        import pandas as pd
    if label is None and frame is not None:
        taken = set(candidates) | set(probabilities)
        binary = [
            c
            for c in columns
            if c in numeric and c not in taken and set(pd.unique(frame[c].dropna())) <= {0, 1}
            and frame[c].nunique() == 2
        ]
        label = binary[-1] if binary else None
    if label is None and probabilities and frame is not None:
        class_names = set(_class_names(probabilities))
        for column in columns:
            if column in probabilities:
                continue
            values = set(pd.unique(_label_text(frame[column]))) - {""}  # lists become text
            if values and values <= class_names:
                label = column
                break

    weight = next((c for c in columns if _WEIGHT_NAME.match(c) and c in numeric), None)
    if label == score:
        label = None
    roles_taken = {score, label, weight, *candidates, *probabilities}
    id_columns = tuple(c for c in columns if c not in roles_taken and (
        _ID_NAME.match(c) or (frame is not None and looks_like_id(frame[c]))))
    used = roles_taken | set(id_columns)
    covariates = tuple(c for c in columns if c not in used)
    return Roles(
        score=score,
        score_candidates=candidates,
        probabilities=probabilities,
        label=label,
        weight=weight,
        id_columns=id_columns,
        covariates=covariates,
    )


def id_note(name: str) -> str:
    """Return the note saying an id column was left out of the covariates, and how to keep it."""
    return (f"column {name!r} left out of the covariates: it reads as an id (an id-like name, "
            "or near-unique values); name it among the covariates to use it.")


def text_looks_like_id(present: int, distinct: int) -> bool:
    """Apply the content rule for text: at least ``ID_MIN_ROWS`` present values, 95% distinct."""
    return present >= ID_MIN_ROWS and distinct >= ID_DISTINCT_SHARE * present


def looks_like_id(series: pd.Series) -> bool:
    """Whether a column's content reads as an id: near-unique text or dense integer codes.

    At least :data:`ID_MIN_ROWS` present values, of which at least :data:`ID_DISTINCT_SHARE`
    (95%) distinct; text, categorical or integer columns only (real numbers and dates are
    measurements, near-unique by nature), and integers only when their values are dense codes
    (their span at most :data:`ID_INTEGER_SPREAD` times the distinct values: 1..n shuffled,
    not incomes in dollars).

    Examples
    --------
    >>> import pandas as pd
    >>> looks_like_id(pd.Series([f"c{i:05d}" for i in range(300)]))
    True
    >>> looks_like_id(pd.Series(range(1000, 1300)))
    True
    >>> looks_like_id(pd.Series([i * 97 for i in range(300)]))  # sparse integers: a measure
    False
    >>> looks_like_id(pd.Series(["a", "b"] * 150))
    False
    """
    import pandas as pd

    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else ""
    if kind and kind in "fcmMb":  # real numbers, dates, durations, booleans
        return False
    present = series.dropna()
    if present.size < ID_MIN_ROWS:
        return False
    distinct = present.nunique()
    if not text_looks_like_id(present.size, distinct):
        return False
    if pd.api.types.is_integer_dtype(series.dtype):
        spread = float(present.max()) - float(present.min()) + 1.0
        return spread <= ID_INTEGER_SPREAD * distinct
    return True


def _is_numeric(series: pd.Series) -> bool:
    import pandas as pd

    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def class_names(probability_columns: Sequence[str], labels: object = None) -> list[str]:
    """Return the class name of each per-class probability column: the one rule mcviz uses.

    Without labels: what follows the columns' common prefix (``prob_A`` -> ``A``), or the full
    names when that leaves an empty or repeated name. With labels: of that, the prefix cut back
    to its last separator, and the full names, the choice that matches the most label values
    (labels such as ``1.0`` match a class named ``1``).

    Examples
    --------
    >>> class_names(["prob_a1", "prob_a2"])
    ['1', '2']
    >>> class_names(["prob_a1", "prob_a2"], ["a1", "a2", "a1"])
    ['a1', 'a2']
    """
    if labels is None:
        return _class_names(probability_columns)
    return _matching_class_names(probability_columns, _label_text(labels))


def labels_are_classes(probability_columns: Sequence[str], labels: object) -> bool:
    """Tell whether every present label names a class (per-class columns, not binary models).

    Examples
    --------
    >>> labels_are_classes(["p_a", "p_b", "p_c"], ["a", "c", None])
    True
    >>> labels_are_classes(["score_a", "score_b", "score_c"], [0, 1, 1])
    False
    """
    import pandas as pd

    text = _label_text(labels)
    values = np.array(pd.unique(text[text != ""]), dtype=object)
    if values.size == 0:
        return False
    names = _matching_class_names(probability_columns, values)
    return set(_numeric_labels_as_classes(values, names)) <= set(names)


def _label_text(labels: object) -> np.ndarray:
    """Labels as stripped text, missing ones as ``""`` (as the loader compares them)."""
    import pandas as pd

    series = pd.Series(labels) if not isinstance(labels, pd.Series) else labels
    return series.astype("string").str.strip().to_numpy(dtype=object, na_value="")


def _class_names(probability_columns: Sequence[str]) -> list[str]:
    """Class names from per-class column names: what follows their common prefix."""
    prefix = _common_prefix(probability_columns)
    names = [c[len(prefix) :] for c in probability_columns]
    if any(not n for n in names) or len(set(names)) != len(names):
        return list(probability_columns)
    return names


def _matching_class_names(probability_columns: Sequence[str], labels: np.ndarray) -> list[str]:
    """Class names for the columns that match the most label values.

    Tried in order: what follows the columns' common prefix (``prob_a`` -> ``a``), what follows
    the prefix cut back to its last separator (``prob_a1``, ``prob_a2`` -> ``a1``, ``a2``),
    the full column names.
    """
    import pandas as pd

    first = _class_names(probability_columns)
    options = [first]
    prefix = _common_prefix(probability_columns)
    cut = max(prefix.rfind(ch) for ch in "_-.: ") + 1
    if 0 < cut < len(prefix):
        options.append([c[cut:] for c in probability_columns])
    options.append(list(probability_columns))
    values = np.array(pd.unique(labels[:100_000]), dtype=object)
    best, best_hits = first, -1
    for names in options:
        if len(set(names)) != len(names) or not all(names):
            continue
        known = set(_numeric_labels_as_classes(values, names))
        hits = len(known & set(names))
        if hits > best_hits:
            best, best_hits = names, hits
    return best


def _numeric_labels_as_classes(labels: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
    """Map labels such as ``'1.0'`` to a class named ``'1'`` (float labels, numeric names)."""
    import pandas as pd

    numeric: dict[float, str] = {}
    for name in class_names:
        try:
            numeric.setdefault(float(name), name)
        except ValueError:
            continue
    if not numeric:
        return labels
    names = set(class_names)
    out = labels.copy()
    for value in pd.unique(labels):
        if value in names:
            continue
        try:
            match = numeric.get(float(value))
        except (TypeError, ValueError):
            continue
        if match is not None:
            out[labels == value] = match
    return out


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return first[:length]

