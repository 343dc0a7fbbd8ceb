"""The loaded objects: :class:`Predictions`, :class:`LoadReport` and :class:`Roles`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError

__all__ = ["VOID_P_VALUES", "LoadReport", "PendingCovariates", "Predictions", "Roles"]

VOID_P_VALUES = "not valid with label-dependent weights — use the null draws"
"""What every Brownian or classical p-value says when the weights depend on the labels."""


@dataclass(frozen=True, slots=True, eq=False)
class LoadReport:
    """What loading did to the input.

    Attributes
    ----------
    n_read : int
        Rows in the input.
    n_kept : int
        Rows in the returned predictions.
    dropped : tuple of (str, int)
        Each reason rows were dropped (only with ``drop_invalid=True``) and how many rows it cost;
        a row with several problems counts once, under the first reason checked.
    warnings : tuple of str
        Problems that did not stop the load (a single class, probabilities not summing to 1).
    notices : tuple of str
        Decisions taken for the caller (covariates dropped for being constant or all missing).
    """

    n_read: int
    n_kept: int
    dropped: tuple[tuple[str, int], ...] = ()
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def n_dropped(self) -> int:
        """Total rows dropped."""
        return sum(count for _, count in self.dropped)


class PendingCovariates:
    """Covariate columns read but not yet put in score order (see :class:`_LazyCovariates`).

    Parameters
    ----------
    columns : DataFrame
        The kept covariate columns, in input row order (a copy-on-write snapshot).
    kinds : Mapping[str, str]
        ``"ordinal"`` or ``"nominal"`` per column, decided at load time.
    """

    __slots__ = ("columns", "kinds")

    def __init__(self, columns: pd.DataFrame, kinds: Mapping[str, str]) -> None:
        self.columns = columns
        self.kinds = kinds

    def in_order(self, rows: np.ndarray) -> pd.DataFrame:
        """Return the covariates at input rows ``rows`` (score order)."""
        from mcviz.io.covariates import covariates_in_order

        return covariates_in_order(self.columns, self.kinds, rows)


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
        longer describe the statistics, which report NaN p-values
        (:data:`VOID_P_VALUES` says why); the null draws of
        :func:`mcviz.significance.null_distribution` recompute the weights and stay valid.
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
        *,
        covariates: pd.DataFrame | Mapping[str, Sequence] | None = None,
        response: Literal["binary", "continuous"] = "binary",
    ) -> Predictions:
        """Validate and sort plain arrays (the library's entry point without a file).

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
        from mcviz.io.assembly import load_predictions

        return load_predictions(
            frame,
            score="score",
            label="label",
            weight="weight" if weight is not None else False,
            covariates=names,
            response=response,
        )


@dataclass(frozen=True, slots=True)
class Roles:
    """Column roles inferred from names and contents; every field can be overridden.

    Attributes
    ----------
    score : str or None
        The score column (the first score-like column).
    score_candidates : tuple of str
        Every score-like numeric column (for choosing or comparing models).
    probabilities : tuple of str
        Per-class probability columns, when three or more share a prefix such as ``prob_``.
    label, weight : str or None
    id_columns : tuple of str
    covariates : tuple of str
        All other columns.
    """

    score: str | None
    score_candidates: tuple[str, ...]
    probabilities: tuple[str, ...]
    label: str | None
    weight: str | None
    id_columns: tuple[str, ...]
    covariates: tuple[str, ...]

