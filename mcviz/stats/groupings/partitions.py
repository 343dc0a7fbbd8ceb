"""Partitions: score bins, covariate bins, user partitions and index groups."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcviz.stats.binning import score_bin_bounds
from mcviz.budget import Budget, check, partition_estimate
from mcviz.errors import ValidationError
from mcviz.stats.groupings._sums import _check_columns, _from_sums, _observed, _per_point
from mcviz.stats.groupings.results import GroupErrors, Strategy
from mcviz.io import Predictions
from mcviz.subpopulations.describe import timestamp_text


def _partition(
    pred: Predictions,
    assignment: np.ndarray,
    labels: Sequence[str],
    *,
    kind: str,
    description: str,
    notice: str | None = None,
    budget: Budget | int | str | None = None,
) -> GroupErrors:
    """Group errors of a partition given each observation's group id (-1: in no group)."""
    check(partition_estimate(pred.n, len(labels)), budget)
    keep = assignment >= 0
    groups = assignment[keep]
    m = len(labels)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(groups, weights=values[keep], minlength=m)

    size = np.bincount(groups, minlength=m)
    nonempty = size > 0
    dropped = int((~nonempty).sum())
    if dropped:
        extra = f"{dropped} empty group{'s' if dropped > 1 else ''} dropped."
        notice = f"{notice} {extra}" if notice else extra
    sums = {key: total(values)[nonempty] for key, values in _per_point(pred).items()}
    return _from_sums(
        pred=pred,
        kind=kind,
        description=description,
        labels=[label for label, ok in zip(labels, nonempty, strict=True) if ok],
        size=size[nonempty],
        mass=sums["v_sum"].copy(),
        centre=None,
        overlapping=False,
        notice=notice,
        sums=sums,
    )


def group_errors(
    pred: Predictions,
    assignment: np.ndarray | Sequence[int],
    labels: Sequence[str] | None = None,
    *,
    description: str = "user partition",
    budget: Budget | int | str | None = None,
) -> GroupErrors:
    """Group errors of a partition given each observation's group number.

    Parameters
    ----------
    pred : Predictions
    assignment : array of int, shape (n,)
        Group number of each observation in score order, 0..m-1; -1 leaves it out.
    labels : sequence of str, optional
        Label of each group (default "group 0", "group 1", ...).
    description : str
    budget : Budget, int, str or None
        Memory budget (:mod:`mcviz.budget`); refused before starting when exceeded.

    Returns
    -------
    GroupErrors

    Examples
    --------
    Two groups of two, errors mean(label - score): (0 - 0.2 + 1 - 0.4)/2 = 0.2 and
    (0 - 0.6 + 1 - 0.8)/2 = -0.2.

    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> group_errors(pred, [0, 0, 1, 1]).error.round(12).tolist()
    [0.2, -0.2]
    """
    assignment = np.asarray(assignment)
    if assignment.shape != (pred.n,) or not np.issubdtype(assignment.dtype, np.integer):
        raise ValidationError(
            f"assignment must hold one integer group number per observation ({pred.n:,}); "
            f"got shape {assignment.shape} of dtype {assignment.dtype}."
        )
    m = int(assignment.max()) + 1 if assignment.size else 0
    if labels is None:
        labels = [f"group {j}" for j in range(m)]
    if len(labels) < m:
        raise ValidationError(f"{m} groups but only {len(labels)} labels.")
    return _partition(
        pred, assignment.astype(np.int64), list(labels), kind="index groups",
        description=description, budget=budget,
    )


# --------------------------------------------------------------------------------------------
# Prediction-based bins


def score_bins(
    pred: Predictions,
    *,
    n_bins: int = 10,
    strategy: Strategy = "width",
    budget: Budget | int | str | None = None,
) -> GroupErrors:
    r"""Prediction-based bins: the groups of the ECE, ACE and MCE (eqs. (14)-(16) of [1]).

    Parameters
    ----------
    pred : Predictions
    n_bins : int, default 10
    strategy : {"width", "count"}
        ``"width"``: right-closed bins :math:`[0, 1/K], (1/K, 2/K], \ldots` ``"count"``: about
        :math:`1/K` of the weight each, in score order; a run of tied scores goes to the bin
        where its cumulative weight ends, so tied scores share a bin (and bins may empty).
        Both follow :mod:`mcviz.stats.binning`, so the ECE, ACE and MCE agree with it.
    budget : Budget, int, str or None
        Memory budget (:mod:`mcviz.budget`); refused before starting when exceeded.

    Returns
    -------
    GroupErrors
        Empty bins are dropped (and counted in ``notice``).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.05, 0.15, 0.55, 0.65], [0, 1, 1, 1])
    >>> result = score_bins(pred, n_bins=2)
    >>> result.labels, result.error.round(12).tolist()
    (('[0, 0.5]', '(0.5, 1]'), [0.4, 0.4])
    """
    if not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValidationError(f"n_bins must be a positive integer, not {n_bins!r}.")
    if strategy not in ("width", "count"):
        raise ValidationError(f"strategy must be 'width' or 'count', not {strategy!r}.")
    # The one score-bin rule (mcviz.stats.binning): bin j is the score-sorted rows bounds[j]:bounds[j+1].
    bounds = score_bin_bounds(pred, n_bins=int(n_bins), kind=f"equal_{strategy}")
    assignment = np.repeat(np.arange(n_bins), np.diff(bounds))
    if strategy == "width":
        edges = np.arange(n_bins + 1) / n_bins
        labels = [
            f"{'[' if j == 0 else '('}{_fmt(edges[j])}, {_fmt(edges[j + 1])}]"
            for j in range(n_bins)
        ]
    else:
        first, last = bounds[:-1], bounds[1:] - 1
        labels = [
            f"[{_fmt(pred.score[a])}, {_fmt(pred.score[b])}]" if b >= a else "empty"
            for a, b in zip(first, last, strict=True)
        ]
    return _partition(
        pred, assignment, labels, kind="score bins",
        description=f"{n_bins} equal-{strategy} score bins", budget=budget,
    )


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _bin_column(
    series: pd.Series, name: str, n_bins: int, strategy: Strategy
) -> tuple[np.ndarray, list[str]]:
    """Codes 0..m-1 and labels for one covariate (missing is the last group when present)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        labels = [f"{name} = {level}" for level in series.cat.categories]
    else:
        values, present, observed = _observed(series, name)
        if strategy == "count":
            edges = np.unique(np.quantile(observed, np.linspace(0, 1, n_bins + 1)))
        elif strategy == "width":
            edges = np.unique(np.linspace(observed.min(), observed.max(), n_bins + 1))
        else:
            raise ValidationError(f"strategy must be 'width' or 'count', not {strategy!r}.")
        if edges.size == 1:
            edges = np.array([edges[0], edges[0]])
        codes = np.full(values.size, -1, dtype=np.int64)
        codes[present] = np.clip(
            np.searchsorted(edges, observed, side="right") - 1, 0, edges.size - 2
        )
        if pd.api.types.is_datetime64_any_dtype(series):  # edges are nanoseconds: write dates
            tz = series.dt.tz
            text = [timestamp_text(pd.Timestamp(round(e), tz=tz)) for e in edges]
        else:
            text = [_fmt(e) for e in edges]
        labels = [
            f"{name} ∈ [{text[j]}, {text[j + 1]}{']' if j == edges.size - 2 else ')'}"
            for j in range(edges.size - 1)
        ]
    missing = codes < 0
    if missing.any():
        codes[missing] = len(labels)
        labels.append(f"{name} missing")
    return codes, labels


def covariate_bins(
    pred: Predictions,
    columns: str | Sequence[str],
    *,
    n_bins: int = 5,
    strategy: Strategy = "count",
    budget: Budget | int | str | None = None,
) -> GroupErrors:
    """Input-based partition: bins of one covariate or the grid of two.

    Parameters
    ----------
    pred : Predictions
    columns : str or sequence of one or two str
        Numeric covariates are cut into ``n_bins`` bins (equal count by quantiles, or equal width
        between the observed extremes; duplicate edges merge bins); nominal covariates give one
        group per level. A missing value is its own group ("<name> missing").
    n_bins : int, default 5
    strategy : {"count", "width"}
    budget : Budget, int, str or None
        Memory budget (:mod:`mcviz.budget`); refused before starting when exceeded.

    Returns
    -------
    GroupErrors
        With two columns, one group per non-empty cell of the grid.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.5] * 4, [0, 0, 1, 1],
    ...                                covariates={"sex": ["f", "f", "m", "m"]})
    >>> covariate_bins(pred, "sex").error.tolist()
    [-0.5, 0.5]
    """
    columns = _check_columns(pred, columns)
    if not 1 <= len(columns) <= 2:
        raise ValidationError(f"choose one or two covariates to bin, not {len(columns)}.")
    if not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValidationError(f"n_bins must be a positive integer, not {n_bins!r}.")
    codes, labels = _bin_column(pred.covariates[columns[0]], columns[0], n_bins, strategy)
    if len(columns) == 2:
        codes2, labels2 = _bin_column(pred.covariates[columns[1]], columns[1], n_bins, strategy)
        codes = codes * len(labels2) + codes2
        labels = [f"{a} and {b}" for a in labels for b in labels2]
    return _partition(
        pred, codes, labels, kind="covariate bins",
        description=f"bins of {' × '.join(columns)} ({n_bins} equal-{strategy} bins per "
        "numeric covariate, one group per level of a nominal one)",
        budget=budget,
    )


def index_groups(
    pred: Predictions,
    groups: Sequence[np.ndarray] | Sequence[object],
    labels: Sequence[str] | None = None,
    *,
    description: str = "user groups",
    budget: Budget | int | str | None = None,
) -> GroupErrors:
    """Group errors of any list of groups (index arrays, or subpopulations).

    Parameters
    ----------
    pred : Predictions
    groups : sequence
        Each an array of indices in score order, or an object with ``.index`` (and
        ``.description``), such as :class:`mcviz.subpopulations.Subpopulation`.
    labels : sequence of str, optional
        Default: each group's ``description``, else "group j".
    description : str
    budget : Budget, int, str or None
        Memory budget (:mod:`mcviz.budget`); refused before starting when exceeded.

    Returns
    -------
    GroupErrors
        ``mass`` is each group's weight over the total of all groups' weights (for a partition,
        its share of the population); ``overlapping`` says whether any observation is in two.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    >>> result = index_groups(pred, [np.array([0, 1, 2, 3]), np.array([2, 3])])
    >>> (result.error.round(12) + 0.0).tolist()
    [0.0, -0.2]
    """
    if len(groups) == 0:
        raise ValidationError("no groups given.")
    indices = []
    names = []
    for j, group in enumerate(groups):
        index = np.asarray(getattr(group, "index", group))
        if index.ndim != 1 or (index.size and not np.issubdtype(index.dtype, np.integer)):
            raise ValidationError(f"group {j} is not a one-dimensional array of integer indices.")
        if index.size == 0:
            raise ValidationError(f"group {j} is empty.")
        if index.min() < 0 or index.max() >= pred.n:
            raise ValidationError(
                f"group {j} holds indices outside 0..{pred.n - 1} (the predictions' rows)."
            )
        indices.append(index.astype(np.int64))
        names.append(str(getattr(group, "description", f"group {j}")))
    if labels is not None:
        if len(labels) != len(indices):
            raise ValidationError(f"{len(indices)} groups but {len(labels)} labels.")
        names = [str(label) for label in labels]
    check(partition_estimate(sum(i.size for i in indices), len(indices)), budget)
    per_point = _per_point(pred)
    # One pass per statistic over the concatenated memberships.
    flat = np.concatenate(indices)
    owner = np.repeat(np.arange(len(indices)), [i.size for i in indices])
    sums = {
        key: np.bincount(owner, weights=values[flat], minlength=len(indices))
        for key, values in per_point.items()
    }
    counts = np.bincount(flat, minlength=pred.n)
    return _from_sums(
        pred=pred,
        kind="index groups",
        description=description,
        labels=names,
        size=np.array([i.size for i in indices]),
        mass=sums["v_sum"].copy(),
        centre=None,
        overlapping=bool(counts.max() > 1),
        notice=None,
        sums=sums,
    )

