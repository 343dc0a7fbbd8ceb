r"""Cumulative deviation of a subpopulation from the full population (Tygert, paper 003).

A subpopulation with sorted scores :math:`S_{i_1} \le \dots \le S_{i_n}` is compared with the
full population's average response :math:`\tilde R_{i_k}` in a bin around each of its scores,

.. math::
    F_k = \frac{\sum_{j\le k} W_{i_j} R_{i_j}}{\sum_{j\le n} W_{i_j}}, \qquad
    \tilde F_k = \frac{\sum_{j\le k} W_{i_j} \tilde R_{i_j}}{\sum_{j\le n} W_{i_j}}, \qquad
    \tilde R_{i_k} = \frac{\sum_{i: B_{k-1} < S_i \le B_k} W_i R_i}
                         {\sum_{i: B_{k-1} < S_i \le B_k} W_i},

with bin edges at the midpoints between consecutive subpopulation scores,
:math:`B_k = (S_{i_k} + S_{i_{k+1}})/2`, :math:`B_0 = -\infty`, :math:`B_n = \infty` (eqs. (5)-(8);
weighted eqs. (25)-(27)). The bins are right-closed and include the subpopulation's own rows.
The path :math:`F_k - \tilde F_k` is plotted against :math:`k/n` (or the cumulative weight
:math:`A_k` of eq. (28)); its slope is the deviation of the subpopulation from the full
population. Its Kolmogorov–Smirnov and Kuiper statistics are

.. math:: G = \max_k |F_k - \tilde F_k|, \qquad
          D = \max_k (F_k - \tilde F_k) - \min_k (F_k - \tilde F_k) \quad (F_0 = \tilde F_0 = 0)

(eqs. (12), (13)), scaled by

.. math:: \sigma = \frac{\sqrt{\sum_k W_{i_k}^2\, \tilde R_{i_k}(1 - \tilde R_{i_k})}}
                        {\sum_k W_{i_k}}

for 0/1 responses (eq. (21); weighted eq. (31)), or with :math:`\tilde R (1-\tilde R)` replaced by
the (weighted) empirical variance :math:`V_{i_k}` of the full population's responses in the bin
for other responses (eqs. (22)-(23); weighted (32)-(33)). The bins of eq. (7) hold few rows of
the full population when the subpopulation is large (about two at half the population), so a bin
of identical (e.g. zero-inflated) responses has :math:`V = 0`; as for Appendix C eq. (6) of
paper 000, :math:`\sigma` is floored by the pooled response variance at nearby scores,
:math:`\sigma = \max(\sigma_{(22)}, \sqrt{\sum_k W_{i_k}^2 \hat v_{i_k}}/\sum_k W_{i_k})`
(:func:`~mcviz.core.sigma.pooled_response_variance`, derived in :mod:`mcviz.core.sigma`).

Ties. Tied subpopulation scores are merged into one bin: the edges are the midpoints between
consecutive *distinct* subpopulation scores, every tied member gets the same :math:`\tilde R`, and
the path is evaluated only at the last member of each run of ties. With no ties this is exactly
the paper's construction (where tied scores would give empty bins, 0/0); with ties no result
depends on the order of tied rows.

References
----------
.. [1] M. Tygert, "Cumulative deviation of a subpopulation from the full population", Journal of
   Big Data 10, 2023; eqs. (5)-(13), (21)-(23), (25)-(33).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mcviz.core.arrays import after_zero
from mcviz.core.arrays import readonly as _readonly
from mcviz.core.path import path_axes, path_kuiper_ks, run_ends
from mcviz.core.sigma import (
    SigmaMethod,
    pooled_response_variance,
    resolve_sigma_method,
    sigma_floored,
    sigma_from_variance,
)
from mcviz.errors import ValidationError, describe_rows
from mcviz.io import (
    Predictions,
    validate_index,  # one rule for indices
)
from mcviz.stats.cumulative import path_statistics

__all__ = ["DeviationResult", "deviation_edges", "deviation_from_runs",
           "subpopulation_deviation"]

@dataclass(frozen=True, slots=True, eq=False)
class DeviationResult:
    r"""The subpopulation-versus-full-population path and its statistics.

    Path arrays have one entry for the origin and one per distinct subpopulation score (the end
    of each run of tied subpopulation scores).

    Attributes
    ----------
    x : ndarray
        Abscissa: :math:`k/n`, or the cumulative weight :math:`A_k` (eq. (28)) when weighted.
    fraction : ndarray
        :math:`k/n` (the top axis).
    position : ndarray
        The subpopulation's score at each path point (the bottom axis); ``position[0]`` repeats
        the first.
    path : ndarray
        :math:`F_k - \tilde F_k`, starting at 0.
    subpopulation_cumulative : ndarray
        :math:`F_k` (eq. (5) or (25)).
    full_cumulative : ndarray
        :math:`\tilde F_k` (eq. (8) or (27)).
    bin_edges : ndarray
        :math:`B_0 = -\infty, B_1, \dots, B_q = \infty` for the ``q`` distinct subpopulation
        scores (eq. (7)).
    full_mean : ndarray
        :math:`\tilde R` in each bin (eq. (6) or (26)).
    full_variance : ndarray
        :math:`V` in each bin (eq. (23) or (33)).
    full_count : ndarray of int
        Full-population observations in each bin (the subpopulation's own included).
    kuiper, ks : float
        :math:`D` (eq. (13)) and :math:`G` (eq. (12)).
    sigma : float
        Eq. (21)/(31), or (22)/(32) floored by the pooled response variance.
    kuiper_z, ks_z : float
        :math:`D/\sigma`, :math:`G/\sigma` (0 when both are 0, inf when only sigma is).
    p_value : float
        :math:`P(\text{range of Brownian motion on } [0,1] > D/\sigma)`.
    n : int
        Subpopulation size.
    n_full : int
        Full-population size.
    weight_total : float
        Subpopulation weight.
    weighted : bool
    sigma_method : str
        ``"bernoulli"`` (eq. (21)/(31)) or ``"variance"`` (eqs. (22)-(23)/(32)-(33)).
    description : str or None
        The subpopulation in words, when known.
    plot_index : ndarray
        Indices into the path that keep every extreme (see :func:`~mcviz.decimate_path`).
    """

    x: np.ndarray
    fraction: np.ndarray
    position: np.ndarray
    path: np.ndarray
    subpopulation_cumulative: np.ndarray
    full_cumulative: np.ndarray
    bin_edges: np.ndarray
    full_mean: np.ndarray
    full_variance: np.ndarray
    full_count: np.ndarray
    kuiper: float
    ks: float
    sigma: float
    kuiper_z: float
    ks_z: float
    p_value: float
    n: int
    n_full: int
    weight_total: float
    weighted: bool
    sigma_method: str
    description: str | None
    plot_index: np.ndarray


def subpopulation_deviation(
    pred: Predictions,
    index: np.ndarray | None = None,
    *,
    sigma_method: str = "auto",
    description: str | None = None,
) -> DeviationResult:
    r"""Cumulative deviation of a subpopulation from the full population, with D, G, sigma, p.

    Parameters
    ----------
    pred : Predictions
        The full population.
    index : array of int, or boolean mask of shape (n,)
        Required (positionally or as ``index=``, the library's convention).
        Positions of the subpopulation's members in ``pred``'s score order (for example
        ``Subpopulation.index`` or :func:`~mcviz.subpopulations.select_rows`); a boolean mask
        over ``pred`` is accepted too. Unsorted positions are sorted; repeated ones are an
        error.
    sigma_method : {"auto", "bernoulli", "variance"}
        ``"auto"`` uses eq. (21)/(31) for 0/1 responses and eqs. (22)-(23)/(32)-(33) otherwise
        (:data:`~mcviz.core.sigma.SIGMA_METHODS`; ``"adjacent"`` is refused: Appendix C of
        paper 000 is a calibration estimate).
    description : str, optional
        The subpopulation in words (carried to figure titles).

    Returns
    -------
    DeviationResult

    Raises
    ------
    ValidationError
        An empty subpopulation, positions out of range or repeated, an unknown sigma method,
        or ``sigma_method="bernoulli"`` with responses outside [0, 1].

    Notes
    -----
    Implements eqs. (5)-(13) and (21)-(23) of [1] (weighted: (25)-(33)), with tied
    subpopulation scores merged into one bin (see the module docstring). Everything is
    vectorised over the score-sorted arrays: bin edges are located with ``searchsorted`` and
    each bin is summed directly over its contiguous rows (``np.add.reduceat``).

    Examples
    --------
    Full population scores 0.1, 0.2, 0.3, 0.4 with responses 0, 1, 1, 0 and the subpopulation
    {0.2, 0.4}. The edge is B_1 = 0.3, so the bins are {0.1, 0.2, 0.3} (mean 2/3) and {0.4}
    (mean 0): F = (0, 1/2, 1/2), F~ = (0, 1/3, 1/3), path = (0, 1/6, 1/6).

    >>> pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 1, 0])
    >>> result = subpopulation_deviation(pred, np.array([1, 3]))
    >>> np.round(result.path, 6).tolist(), round(result.kuiper, 6)
    ([0.0, 0.166667, 0.166667], 0.166667)
    """
    if index is None:
        raise ValidationError("subpopulation_deviation needs the subpopulation: index= its "
                              "positions in score order or a boolean mask.")
    method = resolve_sigma_method(sigma_method, pred.response_kind, statistic="deviation")
    _check_bernoulli(pred, method)
    members = validate_index(pred, index)
    sub_score, sub_weight = pred.score[members], pred.weight[members]
    sub_label = pred.label[members]
    n = members.size
    ends, distinct, bin_edges, bounds = _bins(pred.score, sub_score)
    full_count, full_mean, full_variance = _full_bins(pred, bounds)

    # Each subpopulation member's bin (the run it belongs to).
    run_of = np.repeat(np.arange(distinct.size), np.diff(np.concatenate(([-1], ends))))
    member_mean = full_mean[run_of]
    weight_total = float(sub_weight.sum())
    spread = (member_mean * (1.0 - member_mean) if method is SigmaMethod.BERNOULLI
              else full_variance[run_of])
    x, fraction = path_axes(sub_weight, ends, weighted=pred.weighted)  # eq. (28)
    return _assembled(
        after_zero(np.cumsum(sub_weight * sub_label)[ends], weight_total),  # eq. (5) / (25)
        after_zero(np.cumsum(sub_weight * member_mean)[ends], weight_total),  # (8) / (27)
        weight_total=weight_total,
        sigma=_sigma(pred, method, members, sub_weight**2, spread, weight_total),
        x=x, fraction=fraction, distinct=distinct, bin_edges=bin_edges,
        full=(full_count, full_mean, full_variance), n=int(n), n_full=pred.n,
        weighted=pred.weighted, method=method.value, description=description,
        void=pred.weights_depend_on_label)


def deviation_from_runs(full: Any, sub: Any, *, description: str | None = None,
                        comparison: tuple | None = None) -> DeviationResult:
    r"""Return the deviation of a subpopulation from the full population, from sums per run.

    ``full`` and ``sub`` are :class:`~mcviz.stats.measures.runs.ScoreRuns` of binary rows (an
    engine's ``GROUP BY`` of the score over every row, and over the subpopulation's rows with
    its ``WHERE``: :func:`mcviz.engines.calibration.score_runs_table`). Everything
    :func:`subpopulation_deviation` computes from rows depends on them only through these sums:
    tied subpopulation scores are one bin (eq. (7), edges between distinct scores), so
    :math:`F_k` (eq. (5)/(25)) is a cumulative sum of the runs' :math:`\sum W R`,
    :math:`\tilde F_k` (eq. (8)/(27)) of :math:`\tilde R_k \sum W` with :math:`\tilde R_k`
    (eq. (6)/(26)) the full runs' :math:`\sum W R / \sum W` between two edges, and
    eq. (21)/(31)'s :math:`\sigma^2 W^2 = \sum_k \tilde R_k (1 - \tilde R_k) \sum W^2`.
    Hence, with runs of one distinct score each, the result is the in-memory one of the same
    rows up to the order of additions (``tests/engines/test_review_runs_engines.py``: 1e-9).

    Fine score bins (both runs binned alike, width :math:`h`): each run stands at the centre
    :math:`(k + \tfrac12) h` of its bin :math:`k` (``bin_index``), the subpopulation's and the
    full population's rows of one bin at the same point. The result is then exactly the
    in-memory deviation of the rows with every score moved to its bin's centre (by at most
    :math:`h/2`); the subpopulation's own :math:`F` is exact at the bins' ends. What moves is
    :math:`\tilde R`: the bins of eq. (7) become whole fine bins (a subpopulation of 19% of
    60,000 rows: about 30 rows per bin instead of about 5), so :math:`\tilde R` averages more
    rows. No bound is claimed; measured on 60,000 rows in 2,000 bins (continuous and
    U-shaped scores, weighted or not; ``tests/engines/test_deviation_runs_engines.py``),
    :math:`D` and :math:`\sigma` each came out 16-25% larger than the rows', their ratio
    :math:`D/\sigma` within 0.7 of the rows' 22-27.

    ``comparison`` (with ``sub`` per distinct score and ``full`` in fine bins): the rows,
    :math:`\sum W` and :math:`\sum W R` of every row in each bin of eq. (7), counted by the
    engine at :func:`deviation_edges` of the subpopulation's scores
    (:func:`mcviz.engines.calibration.comparison_sums_table`): the bins are then the rows'
    own, and the result the in-memory one again (to 1e-9). Given as a list it is handed
    over: emptied as it is read, its sums let go once their means are taken (its row counts
    are the result's).
    """
    if comparison is not None:
        return _with_comparison(full, sub, comparison, description)
    if (full.bins is None) != (sub.bins is None) or full.bins != sub.bins:
        raise ValidationError("the subpopulation's runs and the full population's must be "
                              "grouped alike (both per distinct score, or the same fine bins).")
    if full.bins is None:
        where, full_where = np.asarray(sub.score, dtype=float), np.asarray(full.score,
                                                                           dtype=float)
    else:  # the centre of each fine bin (docstring)
        where, full_where = ((np.asarray(runs.bin_index, dtype=float) + 0.5) / full.bins
                             for runs in (sub, full))
    if where.size == 0:
        raise ValidationError("subpopulation_deviation needs a subpopulation with rows.")
    _, distinct, bin_edges, bounds = _bins(full_where, where)
    if not (np.diff(bounds) > 0).all():  # every bin holds its subpopulation's own rows
        raise ValidationError("the subpopulation's scores are not among the full "
                              "population's runs.")
    count = np.asarray(full.count, dtype=np.int64)
    full_count = np.add.reduceat(count, bounds[:-1])
    full_mean = _bin_sums(full.positive, bounds) / _bin_sums(full.weight, bounds)  # eq. (26)
    return _from_sums(sub, full_count, full_mean, distinct, bin_edges, int(count.sum()),
                      description)


def _with_comparison(full: Any, sub: Any, comparison: tuple,
                     description: str | None) -> DeviationResult:
    """Return :func:`deviation_from_runs` with every row's sums per bin counted apart."""
    if sub.bins is not None:
        raise ValidationError("the comparison's bins are those of the subpopulation's distinct "
                              "scores: give its runs per distinct score.")
    where = np.asarray(sub.score, dtype=float)
    if where.size == 0:
        raise ValidationError("subpopulation_deviation needs a subpopulation with rows.")
    # its distinct scores (its runs) and eq. (7)'s edges between them
    distinct = where if bool(np.all(where[1:] > where[:-1])) else where[run_ends(where)]
    bin_edges = np.concatenate(([-np.inf], deviation_edges(distinct), [np.inf]))
    full_count, full_weight, full_positive = (np.asarray(v) for v in comparison)
    if isinstance(comparison, list):  # handed over: its sums let go once read
        comparison.clear()
    if full_count.size != distinct.size or not (full_count > 0).all():
        raise ValidationError("the comparison must count rows in every bin of eq. (7).")
    full_mean = (full_positive.astype(float, copy=False)
                 / full_weight.astype(float, copy=False))  # eq. (26)
    del full_weight, full_positive
    return _from_sums(sub, full_count.astype(np.int64, copy=False), full_mean, distinct,
                      bin_edges, int(np.asarray(full.count).sum()), description)


def _from_sums(sub: Any, full_count: np.ndarray, full_mean: np.ndarray, distinct: np.ndarray,
               bin_edges: np.ndarray, n_full: int, description: str | None) -> DeviationResult:
    """Return the deviation from the subpopulation's runs and the full population's bins."""
    weight, rows = np.asarray(sub.weight, dtype=float), np.asarray(sub.count, dtype=np.int64)
    weight_total = float(weight.sum())
    # one working array a run beside what is returned (the same operations, in place)
    below = 1.0 - full_mean
    work = np.asarray(sub.square_weight, dtype=float) * full_mean
    work *= below
    sigma = float(sigma_from_variance(np.sum(work), weight_total))  # eq. (21) / (31)
    del work
    full_variance = full_mean * below
    del below
    through = np.cumsum(rows)
    fraction = after_zero(through, float(through[-1]))
    del through
    x = after_zero(np.cumsum(weight), weight_total) if sub.weighted else fraction  # eq. (28)
    f_sub = after_zero(np.cumsum(np.asarray(sub.positive, dtype=float)), weight_total)
    work = weight * full_mean
    np.cumsum(work, out=work)
    f_full = after_zero(work, weight_total)
    del work
    return _assembled(
        f_sub, f_full, weight_total=weight_total, sigma=sigma, x=x, fraction=fraction,
        distinct=distinct, bin_edges=bin_edges, full=(full_count, full_mean, full_variance),
        n=int(rows.sum()), n_full=n_full, weighted=bool(sub.weighted),
        method=SigmaMethod.BERNOULLI.value, description=description, void=False)


def _assembled(f_sub: np.ndarray, f_full: np.ndarray, *, weight_total: float,
               sigma: float, x: np.ndarray, fraction: np.ndarray, distinct: np.ndarray,
               bin_edges: np.ndarray, full: tuple, n: int, n_full: int, weighted: bool,
               method: str, description: str | None, void: bool) -> DeviationResult:
    r"""Return the path and the result from the two cumulative functions.

    ``f_sub`` and ``f_full`` are 0, then :math:`\sum_{j \le k} W_j R_j / W` (eq. (5) / (25))
    and :math:`\sum_{j \le k} W_j \tilde R_j / W` (eq. (8) / (27)) at the end of each distinct
    subpopulation score.
    """
    path = f_sub - f_full
    kuiper, ks = path_kuiper_ks(path)  # eqs. (13), (12)
    full_count, full_mean, full_variance = full
    return DeviationResult(
        x=_readonly(x),
        fraction=_readonly(fraction),
        position=_readonly(np.concatenate((distinct[:1], distinct))),
        subpopulation_cumulative=_readonly(f_sub),
        full_cumulative=_readonly(f_full),
        bin_edges=_readonly(bin_edges),
        full_mean=_readonly(full_mean),
        full_variance=_readonly(full_variance),
        full_count=_readonly(full_count),
        **path_statistics(path, kuiper, ks, sigma, void=void),
        n=n,
        n_full=n_full,
        weight_total=weight_total,
        weighted=weighted,
        sigma_method=method,
        description=description,
    )


def deviation_edges(distinct: np.ndarray) -> np.ndarray:
    r"""Return the inner edges :math:`B_1, \dots, B_{q-1}` of eq. (7) between ascending scores.

    The midpoints between consecutive distinct subpopulation scores, guarded so that every
    score lies in its own right-closed bin (:math:`B_{k-1} < S_k \le B_k`; a midpoint that
    rounds up to the next score is moved down to the score before).

    >>> deviation_edges(np.array([0.1, 0.2, 0.4])).round(6).tolist()
    [0.15, 0.3]
    """
    distinct = np.asarray(distinct, dtype=float)
    middle = 0.5 * (distinct[:-1] + distinct[1:])
    return np.where(middle >= distinct[1:], distinct[:-1], middle)


def _bins(score: np.ndarray, sub_score: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return the subpopulation's run ends, distinct scores, bin edges and full-row bounds.

    Runs of tied subpopulation scores make one bin per distinct score (the documented tie
    rule); eq. (7): the edges are midpoints between consecutive distinct subpopulation scores,
    guarded so that every distinct score lies in its own right-closed bin
    (B_{k-1} < S <= B_k); ``bounds`` are the full population's rows at the edges.
    """
    ends = np.flatnonzero(run_ends(sub_score))
    distinct = sub_score[ends]
    middle = deviation_edges(distinct)
    bin_edges = np.concatenate(([-np.inf], middle, [np.inf]))
    bounds = np.concatenate(([0], np.searchsorted(score, middle, side="right"), [score.size]))
    return ends, distinct, bin_edges, bounds


def _sigma(pred: Predictions, method: SigmaMethod, members: np.ndarray, w2: np.ndarray,
           spread: np.ndarray, weight_total: float) -> float:
    """Return sigma, eqs. (21)-(22) (weighted (31)-(32)): floored for real-valued responses."""
    sigma = float(sigma_from_variance(np.sum(w2 * spread), weight_total))  # (21)-(22)
    if method is SigmaMethod.VARIANCE:  # floored by the pooled variance at nearby scores
        pooled = pooled_response_variance(pred.score, pred.label, pred.weight,
                                          pred.run_end)[members]
        sigma = float(sigma_floored(sigma, np.sum(w2 * pooled), weight_total))
    return sigma


def _check_bernoulli(pred: Predictions, method: SigmaMethod) -> None:
    """Refuse eq. (21)/(31) for responses outside [0, 1] (sigma would be NaN)."""
    if method is not SigmaMethod.BERNOULLI or pred.response_kind == "binary":
        return
    # R~(1 - R~) is a variance only for responses in [0, 1]; outside, sigma would be NaN
    # (and D/sigma silently infinite).
    outside = np.flatnonzero((pred.label < 0) | (pred.label > 1))
    if outside.size:
        raise ValidationError(
            f"column {pred.label_column!r}: "
            f"{describe_rows(np.sort(pred.row[outside]), pred.n)} lie outside [0, 1], "
            "so sigma_method='bernoulli' (eq. (21)/(31)) does not apply; use 'variance' "
            "(eqs. (22)-(23)/(32)-(33)).",
            column=pred.label_column,
        )


def _full_bins(pred: Predictions, bounds: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return the count, mean and variance of the full population's responses in each bin.

    Each bin ``bounds[k]:bounds[k+1]`` is summed on its own (every bin is non-empty: it holds
    its own subpopulation members).
    """
    label, weight = pred.label, pred.weight
    full_count = np.diff(bounds)
    if pred.weighted:
        full_weight = _bin_sums(weight, bounds)
        full_mean = _bin_sums(weight * label, bounds) / full_weight  # eq. (26)
    else:
        full_weight = full_count.astype(float)
        full_mean = _bin_sums(label, bounds) / full_weight  # eq. (6)
    if pred.response_kind == "binary":
        full_variance = full_mean * (1.0 - full_mean)  # eq. (23) / (33) for 0/1 responses
    else:  # eq. (23) / (33), two-pass (no cancellation)
        centred = label - np.repeat(full_mean, full_count)
        full_variance = _bin_sums(weight * centred**2, bounds) / full_weight
    return full_count, full_mean, full_variance


def _bin_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Return the sums of ``values`` over the non-empty slices ``bounds[k]:bounds[k+1]``.

    Each slice is summed directly (``np.add.reduceat``), not as a difference of prefix sums:
    a difference loses a light bin after a heavy one (weights 1e9 then 1e-9 gave the second bin
    weight 0) and leaves bin means of 0/1 responses off 0 or 1 by an ulp (so sigma > 0).
    """
    return np.add.reduceat(np.asarray(values, dtype=float), bounds[:-1])
