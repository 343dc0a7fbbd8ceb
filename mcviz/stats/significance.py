r"""How much of the multi-calibration metric chance alone produces: its null distribution.

Paper 000 gives the scale :math:`\sigma_k` of each subpopulation's Kuiper statistic under
perfect calibration, but no distribution for the maximum over many subpopulations: with
:math:`\ell = 1000` subpopulations, perfectly calibrated responses routinely give
:math:`M/\sigma_0` of 4 to 8, and the worst subpopulation's own (unadjusted) p-value can be
tiny. This module simulates the null by a parametric bootstrap:

* **binary responses**: :math:`R^*_j \sim \mathrm{Bernoulli}(S_j)` independently, which is
  exactly perfect calibration (:math:`E[R \mid S] = S`);
* **real-valued responses**: a wild bootstrap :math:`R^*_j = S_j + \varepsilon_j (R_j - S_j)`
  with Rademacher signs :math:`\varepsilon_j = \pm 1`. It makes :math:`E[R^* \mid S] = S`
  exactly while keeping each row's residual magnitude (the spread of real-valued responses is
  not determined by the score, unlike Bernoulli's :math:`S(1-S)`); any miscalibration in the
  observed residuals only widens the null, so the test is conservative;

with the same subpopulations (Algorithm 1 splits covariates, never responses, so conditioning on
them is valid) and the same weights. Weights that depend on the responses - the low-prevalence
weighting of Appendix B, :math:`W_j = 1/A` for :math:`R_j = 1` - are recomputed for every draw
from the drawn responses, because with them eq. (5)'s :math:`\sigma` and the Brownian p-values no
longer describe the statistic.

The test statistic of draw :math:`b` is :math:`T^*_b = \max_k D^*_{kb}/\sigma^*_{kb}`, which is
:math:`M^*_b / \sigma^*_{0b}` of eq. (4) (row 0 is the full population, for which the argument
of the max is :math:`D_0`). From :math:`B` draws:

.. math::
    p_M = \frac{1 + \#\{b : T^*_b \ge M/\sigma_0\}}{B + 1}, \qquad
    \widehat{\mathrm{se}}(p_M) = \sqrt{p_M (1 - p_M) / B},

and for every subpopulation the family-wise adjusted p-value of the single-step max-statistic
method (Westfall & Young 1993, Algorithm 2.5),

.. math:: \tilde p_k = \frac{1 + \#\{b : T^*_b \ge D_k/\sigma_k\}}{B + 1},

which controls the probability of naming *any* subpopulation of a perfectly calibrated model at
level :math:`\alpha` whatever their number and overlap. The full population's own Monte-Carlo
p-value :math:`(1 + \#\{b : D^*_{0b}/\sigma^*_{0b} \ge D_0/\sigma_0\})/(B + 1)` comes from the
same draws; with label-dependent weights it replaces the void Brownian p-value of the
calibration statistics. :math:`p_M = \tilde p_{k^*}` for the
argmax :math:`k^*`. The ``(1 + \cdot)/(B + 1)`` form never reports 0 and is exact
(valid) for any :math:`B` (Davison & Hinkley 1997, eq. (4.11)).

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5), Appendices B and C.
.. [2] P. H. Westfall, S. S. Young, "Resampling-Based Multiple Testing", Wiley, 1993; Sec. 2.6.
.. [3] A. C. Davison, D. V. Hinkley, "Bootstrap Methods and their Application", Cambridge
   University Press, 1997; Sec. 4.2.
.. [4] C. F. J. Wu, "Jackknife, bootstrap and other resampling methods in regression
   analysis", Ann. Statist. 14, 1986 (the wild bootstrap).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from mcviz.budget import Budget, Estimate, Progress, check, report_progress
from mcviz.core import Evaluator, resolve_sigma_method, safe_ratio
from mcviz.core.sigma import SigmaMethod
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations import Subpopulation, SubpopulationSet

__all__ = ["NULL_KINDS", "NullDistribution", "null_distribution", "null_draws_estimate"]

NULL_KINDS = ("bernoulli", "wild-rademacher")
"""How responses are redrawn: Bernoulli(score) for 0/1 responses, sign flips otherwise."""

DRAW_COLUMNS = 32
"""Sets of responses evaluated together (a (rows x 32) block of residuals at a time)."""

_SECONDS_PER_MEMBER_DRAW = 6.5e-9
"""Cost of one member of one subpopulation in one draw: CPU 5.5e-9 s (benchmarks/bench_budget.py
null, a least-squares fit with :data:`_SECONDS_PER_ROW_DRAW` over five shapes of 1.6x10^5-10^6 rows,
2026-11-26), set about 1.2x above it."""
_SECONDS_PER_ROW_DRAW = 3e-8
"""Redrawing, weighting and ordering one row's response in one draw: CPU 2.1e-8 s (the same fit;
the estimates lie 1.0-1.8x above the CPU time of those five shapes)."""
_BLOCK_BYTES_PER_ROW_COLUMN = 12
"""Peak RSS of one row of one redrawn column (benchmarks/bench_budget.py, issue #25: 310-360 B
per row for the 32 columns of a block at 4x10^5-10^6 rows; the block's float64 arrays are not
all alive at once)."""


def null_draws_estimate(rows: int, members: int, draws: int) -> Estimate:
    """State the cost of :func:`null_distribution` before it runs.

    Parameters
    ----------
    rows : int
        Rows of the predictions.
    members : int
        Members summed over the subpopulations (the full population included).
    draws : int

    Returns
    -------
    Estimate
        Memory: a block of :data:`DRAW_COLUMNS` redrawn responses, their residuals and the
        evaluator's weighted copy (float64), plus its gathered work arrays; time: proportional
        to members x draws.
    """
    block = rows * DRAW_COLUMNS * _BLOCK_BYTES_PER_ROW_COLUMN + (1 << 18) * 8 * 6
    return Estimate(
        what=(f"null distribution of M: {draws:,} draws over {rows:,} rows and "
              f"{members:,} subpopulation members"),
        bytes=int(block),
        seconds=float(members) * draws * _SECONDS_PER_MEMBER_DRAW
        + float(rows) * draws * _SECONDS_PER_ROW_DRAW,
        advice="use fewer draws, fewer subpopulations, or a sample of rows",
    )


@dataclass(frozen=True, slots=True, eq=False)
class NullDistribution:
    r"""The null distribution of :math:`M/\sigma_0` and the adjusted p-values.

    Attributes
    ----------
    draws : int
        :math:`B`, the number of simulated sets of responses.
    seed : int or None
    kind : {"bernoulli", "wild-rademacher"}
        How responses were redrawn (see the module notes).
    weights_redrawn : bool
        True when the weights depend on the responses (low-prevalence) and were recomputed
        for every draw.
    statistic : ndarray, shape (B,)
        :math:`T^*_b = \max_k D^*_{kb}/\sigma^*_{kb}` (:math:`M^*_b/\sigma^*_{0b}`).
    observed : float
        :math:`\max_k D_k/\sigma_k` of the observed responses.
    p_value : float
        Monte-Carlo p-value of :math:`M`, :math:`(1 + \#\{T^* \ge T\})/(B + 1)`.
    p_value_se : float
        Its Monte-Carlo standard error :math:`\sqrt{p(1-p)/B}`.
    metric_z_median, metric_z_q95 : float
        Median and 95% quantile of :math:`T^*`.
    p_adjusted : ndarray, shape (l + 1,)
        Single-step max-statistic adjusted p-value of every subpopulation (row 0: full
        population), in the order of the subpopulations given.
    full_p_value : float
        Monte-Carlo p-value of the full population's :math:`D_0/\sigma_0` alone (not adjusted:
        the calibration statistics' p-value), :math:`(1 + \#\{T^*_0 \ge T_0\})/(B + 1)`.
    """

    draws: int
    seed: int | None
    kind: str
    weights_redrawn: bool
    statistic: np.ndarray
    observed: float
    p_value: float
    p_value_se: float
    metric_z_median: float
    metric_z_q95: float
    p_adjusted: np.ndarray
    full_p_value: float = float("nan")

    def as_json(self) -> dict:
        """Return the ``"null"`` object of ``mcviz metrics --json``."""
        return {
            "draws": self.draws,
            "kind": self.kind,
            "weights_redrawn": self.weights_redrawn,
            "p_value": self.p_value,
            "p_value_se": self.p_value_se,
            "metric_z_median": self.metric_z_median,
            "metric_z_q95": self.metric_z_q95,
            "full_population_p_value": self.full_p_value,
        }


def null_distribution(
    pred: Predictions,
    subpopulations: SubpopulationSet | Sequence[Subpopulation],
    *,
    draws: int = 200,
    seed: int | np.random.Generator | None = 0,
    low_prevalence: bool = False,
    budget: Budget | int | str | None = None,
    progress: Progress | None = None,
) -> NullDistribution:
    r"""Simulate :math:`M/\sigma_0` under perfect calibration and adjust every p-value.

    Parameters
    ----------
    pred : Predictions
        The predictions as analysed, with every weighting that does not depend on the
        responses already applied; for the low-prevalence weighting pass the predictions
        *before* it and ``low_prevalence=True``.
    subpopulations : SubpopulationSet or sequence of Subpopulation
        As given to :func:`~mcviz.multicalibration`; the full population is put first when
        missing, so ``p_adjusted`` lines up with :attr:`MulticalResult.subpopulations`.
    draws : int
        :math:`B` (at least 19, so that a p-value below 0.05 is possible).
    seed : int or Generator, optional
    low_prevalence : bool
        Apply Appendix B's weights :math:`W_j/A` for :math:`R_j = 1` (:math:`A` the weighted
        prevalence), recomputed from each draw's responses.
    budget : Budget, int or str, optional
        Refuse before starting when :func:`null_draws_estimate` exceeds it
        (:func:`mcviz.budget.check`; default: :func:`mcviz.budget.default_budget`).
    progress : callable, optional
        ``progress(fraction, text)`` after each block of draws; raising from it (e.g.
        :class:`mcviz.budget.Cancelled`) stops the work and leaves nothing behind.

    Returns
    -------
    NullDistribution

    Raises
    ------
    ValidationError
        Too few draws; low-prevalence weights on real-valued responses; empty subpopulations;
        a cost above the budget.

    Notes
    -----
    Responses are redrawn in blocks of :data:`DRAW_COLUMNS`; each block is one pass of the
    core's block evaluator over the score-sorted rows with a residual matrix, so membership is
    gathered once per block, never per draw. With low-prevalence weights, :math:`W^*(R^*-S)
    = W f^*(R^* - S)` with :math:`f^* \in \{1/A^*, 1\}`, so the path uses residuals
    :math:`f^*(R^*-S)` on the fixed weights, and since :math:`D_k/\sigma_k` does not depend on
    the total weight, :math:`\sigma^*_k` needs only :math:`\sum_k S(1-S)W^2 f^{*2}`, a second
    pass of the same evaluator.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> score = np.sort(rng.uniform(0.1, 0.9, 400))
    >>> pred = Predictions.from_arrays(score, rng.random(400) < score,
    ...                                covariates={"x": rng.normal(size=400)})
    >>> from mcviz.subpopulations import generate_subpopulations
    >>> subs = generate_subpopulations(pred, n_subpopulations=20, min_size=10, seed=0)
    >>> null = null_distribution(pred, subs, draws=39, seed=0)
    >>> null.p_adjusted.shape[0] == len(subs.subpopulations), 0 < null.p_value <= 1
    (True, True)
    """
    method = _null_method(pred, draws, low_prevalence)
    members = _members(pred, subpopulations)
    check(null_draws_estimate(pred.n, sum(m.size for m in members), int(draws)), budget)
    rng = np.random.default_rng(seed)
    evaluator = Evaluator.from_predictions(pred)
    z_observed = _z(evaluator, pred, pred.label[:, None], members, method, low_prevalence)[:, 0]
    observed = float(z_observed.max())
    statistic, full = _simulate(evaluator, pred, members, method, low_prevalence,
                                rng=rng, draws=int(draws), progress=progress)
    exceed = np.sort(statistic)
    # (1 + #{T* >= t}) / (B + 1) for every t at once, by a search in the sorted draws
    count = draws - np.searchsorted(exceed, z_observed, side="left")
    p_adjusted = (1.0 + count) / (draws + 1.0)
    p_value = float((1 + np.sum(statistic >= observed)) / (draws + 1))
    p_adjusted.flags.writeable = False
    statistic.flags.writeable = False
    return NullDistribution(
        draws=int(draws),
        seed=seed if isinstance(seed, int | None) else None,
        kind="bernoulli" if method is SigmaMethod.BERNOULLI else "wild-rademacher",
        weights_redrawn=bool(low_prevalence),
        statistic=statistic,
        observed=observed,
        p_value=p_value,
        p_value_se=float(np.sqrt(p_value * (1.0 - p_value) / draws)),
        metric_z_median=float(np.median(statistic)),
        metric_z_q95=float(np.quantile(statistic, 0.95)),
        p_adjusted=p_adjusted,
        full_p_value=float((1 + np.sum(full >= z_observed[0])) / (draws + 1)),
    )


def _null_method(pred: Predictions, draws: int, low_prevalence: bool) -> SigmaMethod:
    """Return the null draws' sigma method; refuse too few draws or real-valued low prevalence."""
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 19:
        raise ValidationError(f"draws must be a whole number of at least 19, not {draws!r}.")
    method = resolve_sigma_method("auto", pred.response_kind)
    if low_prevalence and method is not SigmaMethod.BERNOULLI:
        raise ValidationError(
            f"column {pred.label_column!r}: low-prevalence weights need 0/1 responses, and the "
            "responses are real-valued.", column=pred.label_column)
    return method


def _simulate(evaluator, pred, members, method, low_prevalence, *, rng, draws,
              progress) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`T^*_b` and the full population's :math:`D^*_0/\sigma^*_0` for ``draws`` draws.

    Blocks are evaluated on every core.

    Responses are drawn in the calling thread, block after block from one generator, so the
    result depends on the seed only, never on the number of threads; the numpy work of the
    evaluator releases the GIL, so blocks run in parallel. At most one block per worker waits
    ahead, which bounds memory; a progress callback that raises stops the work after the
    blocks already running.
    """
    statistic = np.empty(draws)
    full = np.empty(draws)
    file_rank = _file_rank(pred.row)
    starts = range(0, draws, DRAW_COLUMNS)
    workers = max(1, min(os.cpu_count() or 1, len(starts)))

    def evaluate(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = _z(evaluator, pred, labels, members, method, low_prevalence)
        return z.max(axis=0), z[0]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = deque()
        try:
            for start in starts:
                size = min(DRAW_COLUMNS, draws - start)
                labels = _redraw(pred, rng, size, method, file_rank)
                pending.append((start, size, pool.submit(evaluate, labels)))
                while len(pending) > workers or (pending and start + size == draws):
                    first, count, future = pending.popleft()
                    statistic[first:first + count], full[first:first + count] = future.result()
                    done = first + count
                    report_progress(progress, done / draws, f"null draws: {done:,} of {draws:,}")
        finally:
            for *_, future in pending:
                future.cancel()
    return statistic, full


def _members(pred: Predictions, subpopulations) -> list[np.ndarray]:
    """Member positions, the full population first (as multicalibration does)."""
    if isinstance(subpopulations, SubpopulationSet):
        subpopulations = subpopulations.subpopulations
    subpopulations = tuple(subpopulations or ())
    for sub in subpopulations:
        if sub.size == 0:
            raise ValidationError(f"subpopulation {sub.id} ({sub.description}) has no members.")
    members = [np.asarray(s.index) for s in subpopulations]
    if not subpopulations or subpopulations[0].conditions or members[0].size != pred.n:
        members.insert(0, np.arange(pred.n))
    return members


def _file_rank(row: np.ndarray) -> np.ndarray:
    """Rank of each (score-sorted) row in file order, so draws follow rows, not tie order."""
    rank = np.empty(row.size, dtype=np.intp)
    rank[np.argsort(row)] = np.arange(row.size)
    return rank


def _redraw(pred: Predictions, rng: np.random.Generator, size: int, method,
            file_rank: np.ndarray) -> np.ndarray:
    """Responses under perfect calibration, shape (n, size) (see the module notes).

    Random numbers are drawn in file order and then put in score order, so a row gets the
    same draw whatever the order of the rows tied with it.
    """
    shape = (pred.n, size)
    if method is SigmaMethod.BERNOULLI:
        score_in_file_order = np.empty(pred.n)
        score_in_file_order[file_rank] = pred.score
        # R* ~ Bernoulli(S) as bool, compared in file order and then moved (1 byte, not 8)
        return (rng.random(shape) < score_in_file_order[:, None])[file_rank]
    signs = (rng.integers(0, 2, size=shape, dtype=np.int8) * 2 - 1)[file_rank]  # Rademacher
    return pred.score[:, None] + signs * (pred.label - pred.score)[:, None]


def _z(evaluator, pred, labels, members, method, low_prevalence) -> np.ndarray:
    r""":math:`D_k/\sigma_k` for each column of responses, shape (l + 1, N)."""
    if not low_prevalence:  # 0/1 responses take the evaluator's integer path
        return np.asarray(evaluator.label_statistics(labels, members, method).kuiper_z)
    labels = labels.astype(float)
    residual = labels - pred.score[:, None]
    # Appendix B weights W f*, f* = 1/A* on R* = 1, recomputed per column of responses
    prevalence = (pred.weight @ labels) / pred.weight.sum()
    if np.any(prevalence <= 0):
        raise ValidationError("a set of redrawn responses has no positive response, so the "
                              "low-prevalence weight 1/A is undefined.")
    factor = np.where(labels == 1, 1.0 / prevalence, 1.0)
    kuiper_sums = evaluator.summaries(factor * residual, members, adjacent=False)
    high_low = kuiper_sums.high - kuiper_sums.low  # path range, in units of the weights
    # sum_k S(1-S) W^2 f*^2 = V_k + (1/A*^2 - 1) sum_k S(1-S) W^2 R*, via a second pass
    variance = pred.score * (1.0 - pred.score) * pred.weight
    extra = evaluator.summaries(variance[:, None] * labels, members, adjacent=False).offset
    total = kuiper_sums.variance[:, None] + (1.0 / prevalence**2 - 1.0) * extra
    return np.asarray(safe_ratio(high_low, np.sqrt(np.maximum(total, 0.0))), dtype=float)
