r"""The scale of a cumulative path under perfect calibration: one family, one enum of methods.

Every method returns :math:`\sigma = \sqrt{\textstyle\sum_j W_j^2 v_j} / \sum_j W_j` for some
per-observation variance :math:`v_j`, or Appendix C's adjacent-difference estimate:

``"bernoulli"``
    :math:`v_j = S_j(1-S_j)`: eq. (5) of [1] for 0/1 responses (:func:`sigma_bernoulli`). For the
    deviation of a subpopulation from the full population, paper 003 uses the same form with
    :math:`v = \tilde R(1-\tilde R)` (eqs. (21), (31) of [2]).
``"adjacent"``
    Appendix C eq. (6) of [1] for real-valued responses (:func:`sigma_adjacent`), with the tie
    rule stated there, floored by the pooled response variance at nearby scores
    (:func:`pooled_response_variance`; see "The floor of eq. (6)" below).
``"variance"``
    :math:`v` = the empirical variance of the full population's responses in the bin around
    each member: eqs. (22)-(23), (32)-(33) of [2] (the deviation statistics only).
``"auto"``
    ``"bernoulli"`` for 0/1 responses, otherwise ``"adjacent"`` for calibration statistics and
    ``"variance"`` for the deviation statistics.

Every public function that takes ``sigma_method`` accepts exactly :data:`SIGMA_METHODS` and
resolves it with :func:`resolve_sigma_method`.

The floor of eq. (6)
--------------------
Under perfect calibration the responses are independent with :math:`E[R_j] = S_j` and some
variance :math:`v_j`, so the end point of subpopulation :math:`k`'s path has standard deviation

.. math:: \sigma_k = \sqrt{\textstyle\sum_{j \in k} W_j^2 v_j} \,/\, \textstyle\sum_{j \in k} W_j.

Eq. (6) estimates :math:`\sum_{j\in k} W_j^2 v_j` from the subpopulation's own adjacent
differences. With few members, or zero-inflated responses, it collapses: when every member's
response is 0 (probability :math:`0.95^{40} = 0.13` for 40 members of a 95%-zero response) the
adjacent differences are :math:`S_{j+1} - S_j`, :math:`\sigma_k` falls to :math:`10^{-4}` of its
true value and :math:`D_k/\sigma_k` is in the thousands; over a thousand subpopulations such a
collapse is all but certain, so calibrated data gave :math:`M/\sigma_0` of 51-7,000.

The floor pools the whole population: if the variance of a response depends on its score,
:math:`v_j = v(S_j)`, the full population's residuals :math:`d = R - S` in a block :math:`b` of
consecutive rows in score order (at least :data:`POOL_MIN_ROWS` rows, or :math:`n`/
:data:`POOL_BLOCKS`, and at least :data:`POOL_MIN_INFORMATIVE` responses off the block's own
most common value; blocks end at tie-run ends) estimate :math:`v` at those scores by

.. math::
    \hat v_b = \frac{\sum_{j\in b} W_j (d_j - \bar d_b)^2}
                    {\sum_{j\in b} W_j - \sum_{j\in b} W_j^2 / \sum_{j\in b} W_j},
    \qquad \bar d_b = \frac{\sum_{j\in b} W_j d_j}{\sum_{j\in b} W_j},

unbiased for a constant :math:`v` within the block, since
:math:`E\sum_b W_j(d_j - \bar d_b)^2 = v\,(\sum_b W_j - \sum_b W_j^2/\sum_b W_j)`. Each row gets
its block's :math:`\hat v_j = \hat v_{b(j)}` and

.. math::
    \sigma_{\text{pool},k} = \sqrt{\textstyle\sum_{j\in k} W_j^2 \hat v_j} \,/\,
    \textstyle\sum_{j\in k} W_j, \qquad
    \sigma_k = \max(\sigma_{(6),k},\ \sigma_{\text{pool},k}).

Why the block's own most common value. :math:`\hat v_b` is unbiased, but its spread is large
when few of the block's responses differ from the rest, and its failures are one-sided: a block
of 0/1 responses (or responses with a point mass) whose rare value happens to be absent gives
the variance of :math:`S` alone. At scores near 1 the rare value is 0: 200 rows at
:math:`s \approx 0.997` hold 0.6 zeros on average, none with probability :math:`e^{-0.6} =
0.55`, and then :math:`\hat v_b \approx 10^{-6}` in place of :math:`s(1-s) = 3 \times 10^{-3}`.
Counting responses off the *population's* most common value (0) counted every 1 there as
informative, so such blocks stood alone: on calibrated Adult labels read as real-valued the
group "score >= 0.994862" was confirmed (held-out :math:`D/\sigma` 3.7, Holm p 0.004). Counted
off each block's own most common value (:func:`off_block_mode`, decided on the unmerged
blocks), a block holds at least :data:`POOL_MIN_INFORMATIVE` responses that are not its typical
one, so it grows towards the middle scores until it has them (near 1: until it holds 100 zeros),
and :math:`\hat v_b` averages :math:`v` over those scores. Where :math:`v` shrinks towards the
end of the range (as :math:`s(1-s)` does) that overstates :math:`v` at the extreme rows --
conservative -- and understates it at the block's inner rows, where eq. (6) of a group with
varied responses is the larger. For responses without ties every row is off the mode, as before.

Properties. (a) Where eq. (6) is reliable (many members, responses that vary) it is at least the
pooled value up to noise, and the maximum changes :math:`\sigma_k` little. (b) No subpopulation's
:math:`\sigma_k` falls below what the population's responses at its members' scores imply, so
a run of identical responses cannot make chance look like a finding. (c) When the variance also
depends on covariates, so that a subpopulation's responses are truly less variable than the
population's at the same scores, the floor overstates its :math:`\sigma_k`, and miscalibration
that varies within a block inflates :math:`\hat v_b`: both only make the test conservative, never
anti-conservative. (d) Nothing depends on the order of tied rows (blocks end at tie-run ends).
The null draws (:func:`~mcviz.stats.significance.null_distribution`) keep the floor of the observed
responses and recompute eq. (6) per draw. The simulation in ``benchmarks/bench_sigma_real.py``
and ``tests/core/test_sigma_floor.py`` checks that calibrated zero-inflated responses then give
:math:`M/\sigma_0` within the null's range and null p-values spread over [0, 1].

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eq. (5) and Appendix C eq. (6).
.. [2] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023; eqs. (21)-(23), (31)-(33).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import numpy as np

from mcviz.core.ratio import safe_ratio
from mcviz.errors import ValidationError

__all__ = [
    "POOL_BLOCKS",
    "POOL_MIN_INFORMATIVE",
    "POOL_MIN_ROWS",
    "SIGMA_METHODS",
    "SigmaMethod",
    "adjacent_terms",
    "off_block_mode",
    "pool_block_starts",
    "pooled_response_variance",
    "resolve_sigma_method",
    "sigma_adjacent",
    "sigma_adjacent_from_terms",
    "sigma_bernoulli",
    "sigma_floored",
    "sigma_from_variance",
    "thick_block_ends",
]

POOL_MIN_ROWS = 200
"""Fewest rows of a block of the pooled response variance (see the module notes)."""
POOL_BLOCKS = 100
"""Blocks of the pooled response variance when rows are many (``n // POOL_BLOCKS`` rows each)."""
POOL_MIN_INFORMATIVE = 100
"""Fewest responses off the block's most common value (a spike, as the 0 of zero-inflated data)."""


class SigmaMethod(StrEnum):
    """How sigma is estimated (see the module docstring)."""

    BERNOULLI = "bernoulli"
    ADJACENT = "adjacent"
    VARIANCE = "variance"


SIGMA_METHODS: tuple[str, ...] = ("auto", "bernoulli", "adjacent", "variance")
"""The values every ``sigma_method`` parameter accepts."""

Statistic = Literal["calibration", "deviation"]


def resolve_sigma_method(
    sigma_method: str | SigmaMethod, response_kind: str, *, statistic: Statistic = "calibration"
) -> SigmaMethod:
    """Resolve ``"auto"`` and check that the method applies to the statistic.

    Parameters
    ----------
    sigma_method : {"auto", "bernoulli", "adjacent", "variance"} or SigmaMethod
    response_kind : {"binary", "continuous"}
    statistic : {"calibration", "deviation"}
        Calibration (cumulative differences, multi-calibration, screening) takes ``"bernoulli"``
        or ``"adjacent"``; the deviation from the full population ``"bernoulli"`` or
        ``"variance"``.

    Raises
    ------
    ValidationError
        An unknown value, or a method that does not apply to the statistic.

    Examples
    --------
    >>> resolve_sigma_method("auto", "continuous").value
    'adjacent'
    >>> resolve_sigma_method("auto", "continuous", statistic="deviation").value
    'variance'
    """
    value = sigma_method.value if isinstance(sigma_method, SigmaMethod) else sigma_method
    if value not in SIGMA_METHODS:
        raise ValidationError(
            f"sigma_method must be one of {', '.join(SIGMA_METHODS)}, not {sigma_method!r}."
        )
    if value == "auto":
        if response_kind == "binary":
            return SigmaMethod.BERNOULLI
        return SigmaMethod.ADJACENT if statistic == "calibration" else SigmaMethod.VARIANCE
    method = SigmaMethod(value)
    if statistic == "calibration" and method is SigmaMethod.VARIANCE:
        raise ValidationError(
            "sigma_method='variance' (paper 003 eqs. (22)-(23)) applies to the deviation of a "
            "subpopulation from the full population; for calibration use 'bernoulli' (eq. (5)) "
            "or 'adjacent' (Appendix C eq. (6))."
        )
    if statistic == "deviation" and method is SigmaMethod.ADJACENT:
        raise ValidationError(
            "sigma_method='adjacent' (Appendix C eq. (6)) applies to calibration statistics; "
            "for the deviation from the full population use 'bernoulli' (eq. (21)) or "
            "'variance' (eqs. (22)-(23))."
        )
    return method


def sigma_from_variance(variance_sum, weight_total):
    r"""Return :math:`\sqrt{\sum_j W_j^2 v_j} / \sum_j W_j` (0 when the weight is 0).

    The common form of eq. (5) of [1] and eqs. (21)-(22), (31)-(32) of [2], from the sums
    :math:`\sum_j W_j^2 v_j` and :math:`\sum_j W_j` (scalars or arrays).

    Examples
    --------
    >>> sigma_from_variance(0.25 * 4, 4.0)
    0.25
    """
    return safe_ratio(np.sqrt(np.maximum(variance_sum, 0.0)), weight_total)


def sigma_bernoulli(score: np.ndarray, weight: np.ndarray) -> float:
    r"""Return the standard deviation of :math:`C_n` under perfect calibration, eq. (5) of [1].

    .. math:: \sigma = \sqrt{\textstyle\sum_j S_j(1-S_j)W_j^2} \,/\, \textstyle\sum_j W_j

    Examples
    --------
    >>> round(sigma_bernoulli(np.array([0.5, 0.5, 0.5, 0.5]), np.ones(4)), 12)
    0.25
    """
    return float(sigma_from_variance(np.sum(score * (1.0 - score) * weight**2),
                                     np.sum(weight)))  # eq. (5)


def adjacent_terms(residual_sum: np.ndarray, weight: np.ndarray) -> np.ndarray:
    r"""Terms :math:`(e_t - e_{t+1})^2 (V_t + V_{t+1})^2` of eq. (6) over consecutive tie runs.

    Parameters
    ----------
    residual_sum : ndarray, shape (q,) or (q, N)
        :math:`\sum_{j \in t} W_j (R_j - S_j)` for each tie run :math:`t` in score order (one
        column per set of responses).
    weight : ndarray, shape (q,)
        :math:`V_t = \sum_{j \in t} W_j`.

    Returns
    -------
    ndarray, shape (q - 1,) or (q - 1, N)
    """
    shape = (-1,) + (1,) * (residual_sum.ndim - 1)
    mean = safe_ratio(residual_sum, weight.reshape(shape))  # an empty run has no residual
    pair = (weight[1:] + weight[:-1]).reshape(shape)
    return np.diff(mean, axis=0) ** 2 * pair**2


def sigma_adjacent_from_terms(term_sum, weight_total, first_weight, last_weight):
    r"""Eq. (6) from its pieces: :math:`\sqrt{\text{terms} / (4 W (2W - V_1 - V_q))}`.

    ``term_sum`` is the sum of :func:`adjacent_terms`, ``weight_total`` :math:`W = \sum_t V_t`,
    ``first_weight`` and ``last_weight`` :math:`V_1` and :math:`V_q`. With one run the
    denominator and the terms are 0 and so is :math:`\sigma` (0/0 = 0).
    """
    weight_total = np.asarray(weight_total, dtype=float)
    denominator = 4.0 * weight_total * (2.0 * weight_total - first_weight - last_weight)
    shape = np.shape(denominator) + (1,) * (np.ndim(term_sum) - np.ndim(denominator))
    return np.sqrt(safe_ratio(term_sum, np.reshape(denominator, shape)))


def sigma_adjacent(
    residual: np.ndarray,
    weight: np.ndarray,
    run_end: np.ndarray | None = None,
    *,
    floor: np.ndarray | None = None,
) -> float:
    r"""Variance estimate for real-valued responses, Appendix C eq. (6) of [1], tie-aware.

    .. math::
        \sigma^2 = \frac{\sum_{t=1}^{q-1} (e_t - e_{t+1})^2 (V_t + V_{t+1})^2}
        {4 \left(\sum_t V_t\right)\left(V_1 + V_q + 2\sum_{t=2}^{q-1} V_t\right)},
        \qquad e_t = \frac{\sum_{j \in t} W_j (R_j - S_j)}{V_t}, \quad
        V_t = \sum_{j \in t} W_j,

    over the :math:`q` runs of tied scores :math:`t` in score order. Tie rule: eq. (6) is
    stated for distinct scores, where each run is one observation (:math:`e_t = d_j`,
    :math:`V_t = W_j`) and this is exactly the paper's formula; with ties the observations of a
    run are aggregated first (total weight, weighted mean residual), so :math:`\sigma` does not
    depend on the order of tied rows. Differences of adjacent residuals cancel any slowly
    varying miscalibration.

    Parameters
    ----------
    residual : ndarray, shape (n,)
        :math:`d_j = R_j - S_j` in score order.
    weight : ndarray, shape (n,)
    run_end : ndarray of bool, shape (n,), optional
        True at the last row of each run of tied scores (default: no ties).
    floor : ndarray, shape (n,), optional
        The pooled response variance :math:`\hat v_j` of each row
        (:func:`pooled_response_variance`); the result is then
        :math:`\max(\sigma_{(6)}, \sigma_{\text{pool}})` (module notes). None: eq. (6) alone.

    Examples
    --------
    Residuals alternating +1, -1 with unit weights: numerator (n-1)·4·4, denominator
    4·n·(2n-2), so sigma**2 = 2/n.

    >>> round(sigma_adjacent(np.array([1.0, -1.0, 1.0, -1.0]), np.ones(4)) ** 2, 12)
    0.5

    Tied rows are one run: swapping the two tied rows changes nothing.

    >>> ends = np.array([True, False, True, True])
    >>> a = sigma_adjacent(np.array([0.1, 0.5, -0.2, 0.3]), np.ones(4), ends)
    >>> b = sigma_adjacent(np.array([0.1, -0.2, 0.5, 0.3]), np.ones(4), ends)
    >>> bool(abs(a - b) < 1e-15)
    True
    """
    if residual.size == 0:
        return 0.0
    if run_end is None or run_end.all():
        runs_residual, runs_weight = weight * residual, weight
    else:
        starts = np.concatenate(([0], np.flatnonzero(run_end[:-1]) + 1))
        runs_residual = np.add.reduceat(weight * residual, starts)
        runs_weight = np.add.reduceat(weight, starts)
    total = runs_weight.sum()
    terms = adjacent_terms(runs_residual, runs_weight).sum()  # eq. (6), numerator
    sigma = sigma_adjacent_from_terms(terms, total, runs_weight[0], runs_weight[-1])
    if floor is None:
        return float(sigma)
    return float(sigma_floored(sigma, np.sum(weight**2 * floor), total))


def sigma_floored(sigma_6, floor_sum, weight_total):
    r"""Return :math:`\max(\sigma_{(6)}, \sqrt{\sum W^2 \hat v}/\sum W)` (module notes).

    ``sigma_6`` has shape (l,) or (l, N) (one column per set of responses); ``floor_sum``
    :math:`\sum_{j\in k} W_j^2 \hat v_j` and ``weight_total`` have shape (l,) or are scalars.

    Examples
    --------
    >>> float(sigma_floored(1e-4, 0.25 * 4, 4.0))
    0.25
    """
    sigma_6 = np.asarray(sigma_6, dtype=float)
    pooled = np.asarray(sigma_from_variance(floor_sum, weight_total), dtype=float)
    pooled = pooled.reshape(pooled.shape + (1,) * (sigma_6.ndim - pooled.ndim))
    return np.maximum(sigma_6, pooled)


def pool_block_starts(run_end: np.ndarray, informative: np.ndarray | None = None) -> np.ndarray:
    """First row of each block of :func:`pooled_response_variance` (score order).

    Blocks of at least ``max(POOL_MIN_ROWS, n // POOL_BLOCKS)`` rows end at tie-run ends; a last
    block shorter than half of that joins the one before. With ``informative`` (bool per row),
    a block with fewer than :data:`POOL_MIN_INFORMATIVE` informative rows joins the next (the
    last such block the one before), so that no variance rests on a handful of responses.

    Examples
    --------
    >>> pool_block_starts(np.ones(450, dtype=bool)).tolist()
    [0, 200]
    >>> ends = np.ones(450, dtype=bool); ends[195:205] = False  # rows 195-205 tied
    >>> pool_block_starts(ends).tolist()
    [0, 206]
    >>> informative = np.zeros(1000, dtype=bool); informative[::4] = True  # 50 per block
    >>> pool_block_starts(np.ones(1000, dtype=bool), informative).tolist()
    [0, 400]
    """
    run_end = np.asarray(run_end, dtype=bool)
    n = run_end.size
    size = max(POOL_MIN_ROWS, n // POOL_BLOCKS)
    ends = np.flatnonzero(run_end)
    cut = np.unique(ends[np.minimum(np.searchsorted(ends, np.arange(size - 1, n, size)),
                                    ends.size - 1)])
    if not cut.size or cut[-1] != n - 1:
        cut = np.append(cut, n - 1)
    if cut.size > 1 and cut[-1] - cut[-2] < size // 2:  # a short last block joins its neighbour
        cut = np.delete(cut, -2)
    if informative is not None and cut.size > 1:
        counts = np.add.reduceat(np.asarray(informative, dtype=np.int64),
                                 np.concatenate(([0], cut[:-1] + 1)))
        cut = cut[thick_block_ends(counts)]
    return np.concatenate(([0], cut[:-1] + 1))


def thick_block_ends(informative_counts: np.ndarray) -> list[int]:
    """Indices of the blocks that end a merged block (:func:`pool_block_starts`).

    ``informative_counts`` are the informative rows of each block in score order; a block with
    fewer than :data:`POOL_MIN_INFORMATIVE` (with the thin blocks before it) joins the next,
    and a thin last stretch joins the block before.

    Examples
    --------
    >>> thick_block_ends(np.array([50, 60, 120, 30]))
    [1, 3]
    """
    counts = np.asarray(informative_counts, dtype=np.int64)
    keep, held = [], 0
    for k, count in enumerate(counts.tolist()):  # at most POOL_BLOCKS + 1 blocks
        held += count
        if held >= POOL_MIN_INFORMATIVE or k == counts.size - 1:
            keep.append(k)
            held = 0
    if len(keep) > 1 and counts[keep[-2] + 1:].sum() < POOL_MIN_INFORMATIVE:
        keep.pop(-2)  # the last block, too thin alone, joins the one before
    return keep


def _pair_sums(weight: np.ndarray, starts: np.ndarray) -> np.ndarray:
    r"""Return :math:`\sum_{i<j} w_i w_j` over each block ``starts[k]:starts[k+1]``.

    The denominator :math:`\sum W - \sum W^2/\sum W` of the pooled variance equals
    :math:`2\sum_{i<j} w_i w_j / \sum W` (expand :math:`(\sum W)^2`); summed this way every term
    is non-negative, so it is exactly 0 for one row and keeps its relative precision when one
    weight dwarfs the rest (the difference lost it: weights 1e9 and 1 gave 2 with a relative
    error of 6e-8, so sigma moved by 2e-8 when every weight was scaled by 1e3, and one row got
    an ulp instead of 0). A loop over blocks: there are at most ``POOL_BLOCKS + 1``.
    """
    bounds = np.append(starts, weight.size)
    out = np.empty(starts.size)
    for k in range(starts.size):
        block = weight[bounds[k]:bounds[k + 1]]
        before = np.concatenate(([0.0], np.cumsum(block)[:-1]))  # weight of the rows before
        out[k] = float(np.dot(block, before))
    return out


def off_block_mode(label: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Say which responses differ from the most common response of their block (bool per row).

    ``starts`` are the first rows of the blocks (score order). The most common value is each
    block's own: at scores near 1 the responses are mostly 1 and the 0s are the informative
    ones, at scores near 0 the other way round (module notes, "The floor of eq. (6)"). Ties
    between values go to the smallest.

    Examples
    --------
    >>> off_block_mode(np.array([0, 0, 1, 1, 1, 0.5]), np.array([0, 3])).tolist()
    [False, False, True, False, False, True]
    """
    label = np.asarray(label, dtype=float)
    bounds = np.append(starts, label.size)
    mode = np.empty(starts.size)
    for k in range(starts.size):  # at most POOL_BLOCKS + 1 blocks
        values, counts = np.unique(label[bounds[k]:bounds[k + 1]], return_counts=True)
        mode[k] = values[np.argmax(counts)] if values.size else 0.0
    return label != np.repeat(mode, np.diff(bounds))


def pooled_response_variance(
    score: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None = None,
    run_end: np.ndarray | None = None,
) -> np.ndarray:
    r"""Per-row pooled variance :math:`\hat v_j` of the responses at nearby scores.

    The floor of eq. (6) (module notes): the score-sorted rows are cut into blocks of at least
    ``max(POOL_MIN_ROWS, n // POOL_BLOCKS)`` rows ending at tie-run ends (a last block shorter
    than half of that joins the one before, and a block with fewer than
    :data:`POOL_MIN_INFORMATIVE` responses off its own most common response value joins the
    next, :func:`off_block_mode`: a stretch of scores where every response is 0, or every one
    is 1, says little about their variance), and every row gets its block's weighted variance
    of :math:`R - S` about the block's weighted mean,
    :math:`\hat v_b = \sum_b W (d - \bar d_b)^2 / (\sum_b W - \sum_b W^2/\sum_b W)`.

    Parameters
    ----------
    score, label : ndarray, shape (n,)
        In score order (ties in any order).
    weight : ndarray, shape (n,), optional
    run_end : ndarray of bool, shape (n,), optional
        True at the last row of each run of tied scores (computed when omitted).

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    Residuals -1, 1 repeated over 400 rows: two blocks of 200, each with variance 200/199.

    >>> v = pooled_response_variance(np.linspace(0, 1, 400), np.tile([-1.0, 1.0], 200)
    ...                              + np.linspace(0, 1, 400))
    >>> round(float(v[0]), 6), bool(np.all(v == v[0]))
    (1.005025, True)
    """
    score = np.asarray(score, dtype=float)
    n = score.size
    if n == 0:
        return np.zeros(0)
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=float)
    if run_end is None:
        run_end = np.append(score[1:] != score[:-1], True)
    label = np.asarray(label, dtype=float)
    residual = label - score
    starts = pool_block_starts(run_end, off_block_mode(label, pool_block_starts(run_end)))
    total = np.add.reduceat(weight, starts)
    mean = safe_ratio(np.add.reduceat(weight * residual, starts), total)
    lengths = np.diff(np.append(starts, n))
    centred = residual - np.repeat(mean, lengths)
    spread = np.add.reduceat(weight * centred**2, starts)
    effective = safe_ratio(2.0 * _pair_sums(weight, starts), total)
    block = np.asarray(safe_ratio(spread, effective), dtype=float)
    return np.repeat(np.where(np.isfinite(block), block, 0.0), lengths)
