"""The one result of loading: :class:`Predictions`, score-sorted and immutable (no pandas here).

Defined apart from the loader (:mod:`mcviz.io.assembly`) so that a statistic, the Parquet path
of ``mcviz metrics`` (:mod:`mcviz.io.arrow_path`) and every module that only reads arrays can
import it without importing pandas: the covariates are a :class:`PendingColumns` until a
statistic first reads them, and only then become a DataFrame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from mcviz.errors import ValidationError
from mcviz.io.columns import CovariateColumn, column_of_series
from mcviz.io.model import LoadReport

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ClassVar

    import pandas as pd

__all__ = ["PARALLEL_TAKE_ROWS", "CovariateColumn", "PendingColumns", "Predictions",
           "roles_sentence", "sorted_predictions", "take_all", "validate_index"]  # CovariateColumn: from mcviz.io.columns


class PendingColumns:
    """Covariate columns read and checked but not yet put in score order (a DataFrame).

    Subclasses hold the columns (a DataFrame snapshot, or Arrow columns) and build the
    DataFrame at the given input rows in :meth:`in_order`; ``names`` are the kept columns in
    order (what ``Predictions.covariate_names`` reports without building anything).
    """

    __slots__ = ()

    @property
    def names(self) -> tuple[str, ...]:  # pragma: no cover - every subclass defines it
        """The kept columns, in order."""
        raise NotImplementedError

    def in_order(self, rows: np.ndarray) -> pd.DataFrame:  # pragma: no cover
        """Return the covariates at input rows ``rows`` (score order), with a RangeIndex."""
        raise NotImplementedError

    def arrays(self, names: Sequence[str], rows: np.ndarray) -> dict[str, CovariateColumn]:
        """Return those of the named columns it can read without pandas, at input rows ``rows``.

        Each exactly what :func:`mcviz.io.columns.column_of_series` gives for the column of
        :meth:`in_order`; the others are left out (the default: all) and are then read from the
        DataFrame.
        """
        return {}

    def numbers(self, names: Sequence[str]) -> dict[str, np.ndarray] | None:
        """Return the named columns as float64 arrays over every input row (NaN: missing).

        Only when each is a plain number column whose values as float64 (NaN where missing)
        are exactly what :meth:`in_order` would give as keys (:func:`mcviz.core.conditions.
        ordinal_keys`); None otherwise (the default): the caller then uses :meth:`in_order`.
        """
        return None


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
        if isinstance(value, PendingColumns):
            value = value.in_order(obj.row)  # type: ignore[attr-defined]
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: object, value: pd.DataFrame | PendingColumns) -> None:
        if self.slot in obj.__dict__:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {self.slot[1:]!r}")
        obj.__dict__[self.slot] = value


@dataclass(frozen=True, eq=False)
class Predictions:
    """Validated predictions, sorted once by ascending score.

    Built by the loaders (:func:`~mcviz.io.load_predictions`, the Parquet path) and, from
    arrays in memory, by ``Predictions.from_arrays`` (:func:`mcviz.io.arrays.from_arrays`).

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
        (loading passes a :class:`PendingColumns`); the kinds and the dropped columns are
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
        says why); the null draws of :func:`mcviz.stats.significance.null_distribution` recompute
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
    if TYPE_CHECKING:  # bound by the package (mcviz.io): mcviz.io.arrays.from_arrays
        from_arrays: ClassVar[Callable[..., Predictions]]

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

    @property
    def covariate_names(self) -> tuple[str, ...]:
        """The covariates' names, in order, without putting the covariates in score order."""
        value = self.__dict__["_covariates"]
        if isinstance(value, PendingColumns):
            return value.names
        return tuple(str(c) for c in value.columns)

    def covariate_numbers(self, names: Sequence[str]) -> dict[str, np.ndarray] | None:
        """Ordinal number covariates as float64 arrays over the input rows, without pandas.

        ``values[name][self.row]`` is the column in score order, NaN where missing (the keys
        :func:`mcviz.core.conditions.ordinal_keys` gives for ``self.covariates[name]``). Only
        while the covariates are not yet a DataFrame and only when every named one is an
        ordinal plain number column its source can read as such
        (:meth:`PendingColumns.numbers`); None otherwise (use :attr:`covariates`).
        """
        value = self.__dict__["_covariates"]
        if not isinstance(value, PendingColumns) or not names:
            return None
        known = set(value.names)
        if any(name not in known or self.covariate_kinds.get(name) != "ordinal"
               for name in names):
            return None
        return value.numbers(list(dict.fromkeys(names)))

    @property
    def covariates_pending(self) -> bool:
        """True while the covariates are not yet a DataFrame (nothing has read them)."""
        return isinstance(self.__dict__["_covariates"], PendingColumns)

    def covariate_column(self, name: str) -> CovariateColumn:
        """One covariate in score order as numpy arrays (:class:`CovariateColumn`).

        Read from the source without pandas while the covariates are pending and the source
        can (a Parquet file's numbers, booleans, text and categoricals:
        :class:`mcviz.io.arrow_path.ArrowCovariates`), else from :attr:`covariates`; the
        same values either way. Raises KeyError for a name that is not a covariate.
        """
        return self.covariate_columns([name])[name]

    def covariate_columns(self, names: Sequence[str]) -> dict[str, CovariateColumn]:
        """:meth:`covariate_column` of several covariates (read from the source at once).

        Columns read from the source are kept (later calls reuse them); those taken from the
        DataFrame are not (it holds them already).
        """
        names = list(dict.fromkeys(names))
        kept = self.__dict__.setdefault("_covariate_columns", {})
        wanted = [name for name in names if name not in kept]
        found: dict[str, CovariateColumn] = {}
        source = self.__dict__["_covariates"]
        if wanted and isinstance(source, PendingColumns):
            known = set(source.names)
            missing = [name for name in wanted if name not in known]
            if missing:
                raise KeyError(missing[0])
            kept.update(source.arrays(wanted, self.row))
            wanted = [name for name in wanted if name not in kept]
        if wanted:
            frame = self.covariates
            found = {name: column_of_series(frame[name]) for name in wanted}
        return {name: kept[name] if name in kept else found[name] for name in names}

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
        names = self.covariate_names if self.covariates_pending else self.covariates.columns
        if name in names:
            return
        dropped = next(
            (n for n in self.report.notices if n.startswith(f"covariate {name!r} dropped")), None
        )
        if dropped is not None:
            raise ValidationError(dropped, column=name)
        listed = ", ".join(map(str, names[:20])) or "none"
        raise ValidationError(f"no covariate {name!r}{purpose}; covariates: {listed}.",
                              column=name)

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
        if not isinstance(covariates, PendingColumns):
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


def sorted_predictions(
    score: np.ndarray,
    keep: np.ndarray,
    covariates: PendingColumns,
    *,
    columns: Mapping[str, object],
    arrays: Mapping[str, np.ndarray | None],
    report: LoadReport,
) -> Predictions:
    """Sort the kept rows by score once and build the :class:`Predictions` (every loader's end).

    ``score`` holds each input row's score, ``keep`` the valid rows; ``arrays`` maps the
    per-row fields (``label``, ``weight``, ``predicted_class``, ``true_class``; None when
    absent, a weight of None: all ones) to input-order arrays and ``columns`` the other fields
    (``score_column``, ``label_column``, ``covariate_kinds``...). The default (unstable) sort
    suffices: every statistic is evaluated at the ends of runs of tied scores (``run_end``), so
    the order inside a run cannot change a result, and ``row`` still names each observation's
    input row.
    """
    score = np.asarray(score)
    if keep.all():  # (takes: twice as fast as fancy indexing for these permutations)
        kept_rows = np.argsort(score)
    else:
        kept_rows = np.flatnonzero(keep)
        kept_rows = kept_rows.take(np.argsort(score.take(kept_rows)))
    present = {name: np.asarray(values) for name, values in arrays.items() if values is not None}
    taken = dict(zip(["score", *present], take_all([score, *present.values()], kept_rows),
                     strict=True))
    sorted_scores = np.ascontiguousarray(taken.pop("score"), dtype=float)
    run_end = np.ones(kept_rows.size, dtype=bool)
    run_end[:-1] = sorted_scores[1:] != sorted_scores[:-1]
    in_order = {}
    for name, values in arrays.items():
        dtype = None if name in ("predicted_class", "true_class") else float
        if name == "weight" and values is None:
            in_order[name] = _readonly(np.ones(kept_rows.size))  # unweighted
            continue
        in_order[name] = None if values is None else _readonly(
            np.ascontiguousarray(taken[name], dtype=dtype))
    return Predictions(
        score=_readonly(sorted_scores),
        row=_readonly(kept_rows.astype(np.int64)),
        run_end=_readonly(run_end),
        covariates=covariates,  # type: ignore[arg-type]  # put in score order on first access
        report=report,
        **in_order,
        **columns,
    )


PARALLEL_TAKE_ROWS = 1_000_000
"""Rows from which columns are put in score order on several threads at once (``ndarray.take``
releases the GIL; a take of 10^7 rows by a permutation costs ~0.3 s, about one cache miss a
row: seven columns took 2.2 s one after another at load time, bench_scale's 10^7 rows)."""


def take_all(arrays: Sequence[np.ndarray], rows: np.ndarray) -> list[np.ndarray]:
    """Return ``[a.take(rows) for a in arrays]``, on every usable core for many rows."""
    from mcviz.budget import usable_cores

    workers = min(usable_cores(), len(arrays))
    if np.size(rows) < PARALLEL_TAKE_ROWS or workers < 2:
        return [np.asarray(a).take(rows) for a in arrays]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda a: np.asarray(a).take(rows), arrays))


def roles_sentence(pred: Predictions) -> str:
    """Say in one line which column plays which role in loaded predictions.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.2, 0.8], [0, 1], covariates={"age": [30, 40]})
    >>> roles_sentence(pred)
    "score 'score', label 'label', unweighted, 1 covariate ('age')"
    """
    if pred.probability_columns:
        score = f"per-class probabilities {', '.join(map(repr, pred.probability_columns))}"
    else:
        score = f"score {pred.score_column!r}"
    weight = f"weight {pred.weight_column!r}" if pred.weighted else "unweighted"
    names = list(pred.covariate_names)
    shown = ", ".join(map(repr, names[:8])) + (f", … ({len(names) - 8} more)"
                                                if len(names) > 8 else "")
    count = f"{len(names)} covariate{'' if len(names) == 1 else 's'}"
    return (f"{score}, label {pred.label_column!r}"
            f"{' (real-valued)' if pred.response_kind == 'continuous' else ''}, {weight}, "
            f"{count}{f' ({shown})' if names else ''}")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array
