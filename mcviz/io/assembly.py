"""Assembly: read, infer roles, validate and sort into one :class:`Predictions` (defined here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io.covariates import PendingCovariates, plan_covariates
from mcviz.io.model import LoadReport, Roles
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

__all__ = [
    "PROBABILITY_SUM_TOLERANCE",
    "Predictions",
    "demo_path",
    "load_demo",
    "load_predictions",
    "validate_index",
]


class _LazyCovariates:
    """The ``covariates`` attribute: prepared (reordered, categories built) on first access.

    Loading decides each covariate's kind and which are dropped at once (so messages and notices
    come from the loader), but reordering every column by score is left until a statistic asks
    for it: ``mcviz metrics FILE`` never does.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj: object, owner: type | None = None) -> pd.DataFrame:
        if obj is None:  # no class-level default: the dataclass field stays required
            raise AttributeError(self.slot[1:])
        value = obj.__dict__[self.slot]
        if isinstance(value, PendingCovariates):
            value = value.in_order(obj.row)  # type: ignore[attr-defined]
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: object, value: pd.DataFrame | PendingCovariates) -> None:
        if self.slot in obj.__dict__:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {self.slot[1:]!r}")
        obj.__dict__[self.slot] = value


@dataclass(frozen=True, eq=False)
class Predictions:
    """Validated predictions, sorted once by ascending score.

    Attributes
    ----------
    score : ndarray of shape (n,)
        Predicted probability of the positive class (top-label probability for multi-class).
    label : ndarray of shape (n,)
        The response R: 0/1 for binary labels (1 = positive class); for multi-class, 1 when the
        label equals the predicted class; real-valued when loaded with ``response="continuous"``.
    weight : ndarray of shape (n,)
        Positive weights; all ones when the file has no weight column.
    row : ndarray of shape (n,)
        0-based row number of each observation in the input.
    run_end : ndarray of bool, shape (n,)
        True at the last index of each run of tied scores.
    covariates : DataFrame
        Covariates in the same (score) order, with a RangeIndex. Prepared on first access
        (loading passes a :class:`PendingCovariates`); the kinds and the dropped columns are
        decided at load time.
    covariate_kinds : Mapping[str, str]
        ``"ordinal"`` or ``"nominal"`` per covariate.
    score_column, label_column : str
        The input columns used (``score_column`` is ``"top-label probability"`` for multi-class).
    weight_column : str or None
    probability_columns : tuple of str
        Per-class probability columns (multi-class only, else empty).
    classes : tuple of str
        Class names for multi-class, ``(negative, positive)`` for binary labels.
    predicted_class : ndarray or None
        Multi-class only: the argmax class name of each row.
    true_class : ndarray or None
        Multi-class only: the label of each row as a class name.
    positive : object
        The label value counted as the positive class (binary only).
    response_kind : {"binary", "continuous"}
    report : LoadReport
    weights_depend_on_label : bool
        True when the weights were computed from the responses (the low-prevalence weighting of
        paper 000 Appendix B): eq. (5)'s sigma and every Brownian or classical p-value then no
        longer describe the statistics, which report NaN p-values (``mcviz.io.VOID_P_VALUES``
        says why); the null draws of :func:`mcviz.significance.null_distribution` recompute
        the weights and stay valid.
    """

    score: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    row: np.ndarray
    run_end: np.ndarray
    covariates: pd.DataFrame = _LazyCovariates()  # type: ignore[assignment]
    covariate_kinds: Mapping[str, str]
    score_column: str
    label_column: str
    weight_column: str | None = None
    probability_columns: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    predicted_class: np.ndarray | None = None
    true_class: np.ndarray | None = None
    positive: object = 1
    response_kind: Literal["binary", "continuous"] = "binary"
    report: LoadReport = field(default_factory=lambda: LoadReport(0, 0))
    weights_depend_on_label: bool = False

    @property
    def n(self) -> int:
        """Number of observations."""
        return int(self.score.size)

    @property
    def weighted(self) -> bool:
        """True when a weight column was given."""
        return self.weight_column is not None

    @property
    def weight_total(self) -> float:
        """Sum of the weights (n when unweighted)."""
        return float(self.weight.sum())

    @property
    def multiclass(self) -> bool:
        """True when the score is a top-label probability from per-class columns."""
        return bool(self.probability_columns)

    def require_covariate(self, name: str, purpose: str = "") -> None:
        """Raise a :class:`ValidationError` unless ``name`` is a covariate.

        The message says why a column is not one when loading dropped it (constant, all
        missing), and otherwise lists the covariates there are.

        Examples
        --------
        >>> pred = Predictions.from_arrays([0.2, 0.8], [0, 1], covariates={"c": [1, 1]})
        >>> pred.require_covariate("c")
        Traceback (most recent call last):
        ...
        mcviz.errors.ValidationError: covariate 'c' dropped: it takes a single value.
        """
        if name in self.covariates.columns:
            return
        dropped = next(
            (n for n in self.report.notices if n.startswith(f"covariate {name!r} dropped")), None
        )
        if dropped is not None:
            raise ValidationError(dropped, column=name)
        listed = ", ".join(map(str, self.covariates.columns[:20])) or "none"
        raise ValidationError(f"no covariate {name!r}{purpose}; covariates: {listed}.",
                              column=name)

    @classmethod
    def from_arrays(
        cls,
        score: np.ndarray | Sequence[float],
        label: np.ndarray | Sequence[float],
        weight: np.ndarray | Sequence[float] | None = None,
        covariates: pd.DataFrame | Mapping[str, Sequence] | None = None,
        *,
        response: Literal["binary", "continuous"] = "binary",
    ) -> Predictions:
        """Validate and sort plain arrays: the library's entry point without a file.

        Every statistic of mcviz takes the result, ``(pred, *, index=None, ...)``.

        Parameters
        ----------
        score : array of shape (n,)
            Predicted probability of the positive class, in [0, 1].
        label : array of shape (n,)
            0/1 (or booleans) for a binary response; real values with
            ``response="continuous"``.
        weight : array of shape (n,), optional
            Positive weights (all ones when omitted).
        covariates : DataFrame or mapping of name to array of shape (n,), optional
            Columns to split, filter and order by (subpopulations, variables, LCS curves).
        response : {"binary", "continuous"}, default "binary"

        Returns
        -------
        Predictions
            Sorted once by ascending score; ``row`` gives each observation's input position.

        Raises
        ------
        ValidationError
            Invalid values, named by column with counts and rows (as for a file).

        Examples
        --------
        >>> pred = Predictions.from_arrays([0.9, 0.1, 0.5], [1, 0, 0])
        >>> pred.score.tolist(), pred.row.tolist()
        ([0.1, 0.5, 0.9], [1, 2, 0])
        """
        frame = pd.DataFrame({"score": np.asarray(score), "label": np.asarray(label)})
        if weight is not None:
            frame["weight"] = np.asarray(weight)
        if covariates is not None:
            covariate_frame = pd.DataFrame(covariates).reset_index(drop=True)
            for name in covariate_frame.columns:
                frame[name] = covariate_frame[name].to_numpy()
            names: Sequence[str] | None = list(covariate_frame.columns)
        else:
            names = []
        return load_predictions(
            frame,
            score="score",
            label="label",
            weight="weight" if weight is not None else False,
            covariates=names,
            response=response,
        )

    def subset(self, index: np.ndarray | Sequence[int] | None) -> Predictions:
        """Return the predictions of a subpopulation: the rows at ``index``, still score-sorted.

        Parameters
        ----------
        index : array of int or bool, or None
            Positions in score order (sorted or not, distinct) or a boolean mask of shape
            ``(n,)``; None returns ``self``. Checked by :func:`validate_index`.

        Returns
        -------
        Predictions
            ``row`` still names each observation's input row; ties are recomputed from the kept
            scores; the covariates are taken on first access, as for a loaded file.

        Examples
        --------
        >>> pred = Predictions.from_arrays([0.9, 0.1, 0.5, 0.7], [1, 0, 0, 1],
        ...                                covariates={"age": [30, 40, 50, 60]})
        >>> sub = pred.subset([1, 3])
        >>> sub.score.tolist(), sub.row.tolist(), sub.covariates["age"].tolist()
        ([0.5, 0.9], [2, 0], [50, 30])
        """
        if index is None:
            return self
        members = validate_index(self, index)
        score = self.score[members]
        run_end = np.ones(members.size, dtype=bool)
        run_end[:-1] = score[1:] != score[:-1]
        covariates = self.__dict__["_covariates"]
        if not isinstance(covariates, PendingCovariates):
            covariates = covariates.take(members).reset_index(drop=True)

        def take(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else _readonly(np.ascontiguousarray(values[members]))

        return dataclasses.replace(
            self,
            score=take(self.score),
            label=take(self.label),
            weight=take(self.weight),
            row=take(self.row),
            run_end=_readonly(run_end),
            covariates=covariates,
            predicted_class=take(self.predicted_class),
            true_class=take(self.true_class),
            report=dataclasses.replace(self.report, n_kept=int(members.size)),
        )


def validate_index(pred: Predictions, index: np.ndarray | Sequence[int]) -> np.ndarray:
    """Return a subpopulation's positions as a sorted int64 array, or raise.

    The one validation rule for a subpopulation given by index (sorted or not, distinct
    positions in score order, or a boolean mask over the rows), shared by
    :meth:`Predictions.subset` and every statistic's ``index=`` option.

    Raises
    ------
    ValidationError
        A mask of the wrong shape, non-integer positions, an empty subpopulation, positions
        outside ``[0, n)`` or repeated positions (with counts and the first offender).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.2, 0.3], [0, 1, 1])
    >>> validate_index(pred, [2, 0]).tolist()
    [0, 2]
    >>> validate_index(pred, [0, 0])
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: subpopulation index: 1 positions are repeated (first 0).
    """
    array = np.asarray(index)
    if array.dtype == bool:
        if array.shape != (pred.n,):
            raise ValidationError(
                f"subpopulation mask has shape {array.shape}; expected ({pred.n},) "
                "(one entry per observation)."
            )
        array = np.flatnonzero(array)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValidationError(
            "subpopulation index must be a 1-D array of integer positions or a boolean mask."
        )
    if array.size == 0:
        raise ValidationError("the subpopulation is empty (0 rows); nothing to compare.")
    array = array.astype(np.int64, copy=False)
    outside = (array < 0) | (array >= pred.n)
    if outside.any():
        raise ValidationError(
            f"subpopulation index: {int(outside.sum()):,} of {array.size:,} positions lie "
            f"outside [0, {pred.n - 1}] (first {int(array[outside][0])})."
        )
    if np.any(array[1:] <= array[:-1]):
        array = np.sort(array)
        repeated = np.flatnonzero(array[1:] == array[:-1])
        if repeated.size:
            raise ValidationError(
                f"subpopulation index: {repeated.size:,} positions are repeated "
                f"(first {int(array[repeated[0]])})."
            )
    return array


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
