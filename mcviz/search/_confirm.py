r"""Held-out confirmation: the split, Holm's adjustment, effects, sentences, the MDE.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (2), (5).
.. [2] S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian Journal
   of Statistics 6(2), 65-70, 1979.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcviz.core.special import ndtri
from mcviz.io import VOID_P_VALUES, Predictions
from mcviz.search.rules import RULES
from mcviz.stats.cumulative import brownian_range_sf
from mcviz.text import format_count, format_number, format_percent, format_points

STRATUM = 20
"""Consecutive rows in score order per stratum of the split."""

Z_95 = 1.959963984540054


def canonical_order(pred: Predictions, rng: np.random.Generator | None = None) -> np.ndarray:
    """Positions in score order with each run of tied scores ordered free of the input order.

    Within a run of tied scores the rows are ordered by a hash of their weight and covariates:
    never by their labels, so which rows are held out (:func:`split_rows`) and the folds of the
    search (their parity) do not depend on any label. Rows equal in score, weight and every
    covariate can only be told apart by their labels; they are put in a random order drawn from
    ``rng`` (sorted by label first, so the result does not depend on their input order either),
    which makes the labels at their positions exchangeable: the split then draws held-out rows
    among them as from any other rows. ``rng`` None: such rows stay sorted by label (used only
    where no labels are held out).
    """
    if pred.run_end.all():
        return np.arange(pred.n)
    import pandas as pd

    tie_group = np.cumsum(np.concatenate(([0], pred.run_end[:-1])))
    frame = pred.covariates.copy()
    frame["__weight"] = pred.weight
    content = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    order = np.lexsort((pred.label, content, tie_group))
    if rng is None:
        return order
    same = (content[order][1:] == content[order][:-1]) & (
        tie_group[order][1:] == tie_group[order][:-1])
    if not same.any():
        return order
    group = np.cumsum(np.concatenate(([False], ~same)))  # rows equal but for the label
    return order[np.lexsort((rng.random(order.size), group))]


def subsample_rows(rank: np.ndarray, rows: np.ndarray, size: int,
                   rng: np.random.Generator) -> np.ndarray:
    """Return a random ``size`` of the sorted positions ``rows`` (all when fewer), sorted.

    ``rank`` is each position's rank in :func:`canonical_order` (the third result of
    :func:`split_rows`); the draw is made over the rows in that order, so which rows are drawn
    does not depend on the input order of tied rows, only on ``rng``.
    """
    if rows.size <= size:
        return rows
    ordered = rows[np.argsort(rank[rows], kind="stable")]
    return np.sort(ordered[rng.choice(ordered.size, size=int(size), replace=False)])


def split_rows(
    pred: Predictions, holdout: float, rng: np.random.Generator, *, max_search: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Search and held-out rows (sorted positions), and each position's rank in content order.

    The held-out rows are a random share of every stratum of the score.

    Strata are :data:`STRATUM` consecutive rows in score order. Within a run of tied scores the
    rows are first put in an order fixed by their content (:func:`canonical_order`: a hash of
    weight and covariates, never of labels), so the split depends neither on the input order
    of tied rows nor on any label. At most
    ``max_search`` search rows are searched (a random subset of it); the held-out
    rows are always the held-out share of all rows. The rank of each position in that content
    order (:func:`canonical_order`) is returned: its parity splits any set of rows into two
    folds stratified by score, and :func:`subsample_rows` draws in its order.

    The default held-out share is 0.3 (``SearchSettings.holdout``). A group's D/sigma grows
    as the square root of its rows, so the search sees a group of own D/sigma :math:`t` (over
    all rows) at about :math:`t\sqrt{1-h}` and the held-out test at :math:`t\sqrt h`: at
    :math:`h = 0.3` a 13-sigma group is searched at 10.9 (9.2 at 0.5, where the weakest
    condition of a conjunction was lost) and confirmed at about 7.1 (p about 1e-11). Measured
    on the planted shapes of ``benchmarks/bench_find.py`` (three-condition recovery at 10^5
    rows 9/15 at 0.5, 15/15 at 0.3); the held-out p-values stay valid whatever the share.
    """
    n = pred.n
    canonical = canonical_order(pred, rng.spawn(1)[0])  # spawn: the draws below unchanged
    stratum = np.arange(n) // STRATUM
    sizes = np.bincount(stratum)
    wanted = np.floor(holdout * sizes + rng.random(sizes.size)).astype(np.int64)
    shuffled = np.argsort(stratum + rng.random(n))  # by stratum, random within
    position = np.arange(n) - stratum * STRATUM
    held = np.zeros(n, dtype=bool)
    held[shuffled[position < wanted[stratum]]] = True
    search = np.flatnonzero(~held)
    if search.size > max_search:
        search = np.sort(rng.choice(search, size=max_search, replace=False))
    rank = np.empty(n, dtype=np.int64)
    rank[canonical] = np.arange(n)
    return np.sort(canonical[search]), np.sort(canonical[held]), rank


def holm(p_values: np.ndarray) -> np.ndarray:
    r"""Holm's step-down adjusted p-values [2].

    With :math:`p_{(1)} \le \dots \le p_{(m)}`,
    :math:`\tilde p_{(i)} = \max_{j \le i} \min\{1, (m - j + 1)\, p_{(j)}\}`.

    Examples
    --------
    >>> holm(np.array([0.01, 0.04, 0.03])).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted


SIMULATED_CELLS = 2**20
"""Rows x draws simulated at once (bounded memory: a few arrays of this many floats)."""


def effective_variance(score: np.ndarray, weight: np.ndarray) -> float:
    r"""Return :math:`V_{\text{eff}}` of ``RULES.simulate_below`` for rows of these scores, weights.

    Examples
    --------
    >>> round(effective_variance(np.full(100, 0.5), np.ones(100)), 6)  # 4 V at 0.5
    100.0
    """
    spread = score * (1.0 - score)
    variance = float(np.sum(spread * weight**2))
    third = float(np.sum(np.abs(weight) ** 3 * spread * (score**2 + (1.0 - score) ** 2)))
    return variance**3 / third**2 if third > 0 else np.inf


def _range_z(score, weight, ends, labels) -> np.ndarray:
    """D/sigma of eqs. (2), (5) of each row of ``labels`` (the path read at ``ends``)."""
    path = np.cumsum(weight * (labels - score), axis=-1)[..., ends]
    spread = np.maximum(path.max(axis=-1), 0.0) - np.minimum(path.min(axis=-1), 0.0)
    return spread / np.sqrt(np.sum(score * (1.0 - score) * weight**2))


def simulated_p(score: np.ndarray, weight: np.ndarray, run: np.ndarray, label: np.ndarray,
                rng: np.random.Generator, *, draws: int = RULES.simulated_draws,
                stop: int = RULES.simulated_stop) -> tuple[float, float, int]:
    r"""Monte-Carlo p-value of the D/sigma of binary responses under calibration.

    Parameters
    ----------
    score, weight, label : ndarray, shape (m,)
        The rows of one held-out group in score order (weights that do not depend on labels).
    run : ndarray, shape (m,)
        Tie-run id of each row (equal ids: tied scores); the path is read at each run's last
        row, as eq. (2) with the tie rule.
    rng : Generator
    draws, stop : int
        At most ``draws`` simulated draws; stop at ``stop`` draws at or above the observed.

    Returns
    -------
    p, z, used : float, float, int
        The p-value, the observed D/sigma and the draws simulated.

    Notes
    -----
    Under calibration the labels are independent Bernoulli(:math:`S_j`) draws given the rows'
    scores and weights; the group was chosen on other rows, so its members, scores and weights
    are fixed by what the test conditions on. The observed :math:`T` and :math:`B` draws
    :math:`T_b` (labels drawn Bernoulli(:math:`S_j`) on the same rows, the same statistic) are
    then exchangeable, and :math:`p = (1 + \#\{b: T_b \ge T\})/(1 + B)` satisfies
    :math:`P(p \le \alpha) \le \alpha` for every :math:`\alpha` and :math:`B` (the rank of
    :math:`T` among them is uniform; ties count against it, with a relative tolerance of 1e-9
    for rounding). Draws stop early once ``stop`` of them reach :math:`T` (Besag & Clifford
    1991, valid likewise: :math:`p = h/L` after :math:`L` draws with :math:`h` = ``stop``
    reaching it), so a group far from significance costs a few hundred draws. Rows are taken in
    an order of (tie run, weight) before the draws, so the p-value does not depend on the order
    of tied rows (rows equal in score and weight are interchangeable here). Cost
    :math:`O(m B)` time in chunks of at most :data:`SIMULATED_CELLS` rows x draws (the first
    of 100 draws, then doubling, so an early stop wastes little).
    """
    order = np.lexsort((weight, run))
    score, weight, run, label = score[order], weight[order], run[order], label[order]
    ends = np.flatnonzero(np.concatenate((run[1:] != run[:-1], [True])))
    observed = float(_range_z(score, weight, ends, label.astype(float)))
    bar = observed - 1e-9 * max(1.0, abs(observed))
    chunk = max(1, SIMULATED_CELLS // max(score.size, 1))
    reached = used = 0
    while used < draws:
        size = min(chunk, max(RULES.simulated_stop * 2, used), draws - used)  # doubling chunks
        z = _range_z(score, weight, ends, (rng.random((size, score.size)) < score).astype(float))
        hits = np.cumsum(z >= bar)
        if reached + hits[-1] >= stop:  # Besag-Clifford: stop at the stop-th draw reaching T
            at = int(np.searchsorted(hits, stop - reached)) + 1
            return stop / (used + at), observed, used + at
        reached += int(hits[-1])
        used += size
    return (1.0 + reached) / (1.0 + used), observed, used


P_KINDS = ("brownian", "simulated", "void")
"""What a finding's held-out p-value is (``Finding.p_kind``): the Brownian-range tail of its
D/sigma, a simulated p-value of the same statistic (small groups of binary responses), or void
(weights that depend on the labels, Appendix B of paper 000: no valid p-value, NaN)."""


def is_confirmed(p_kind: str, p_adjusted: float, *, alpha: float = RULES.alpha) -> bool:
    """Say whether a finding is confirmed: a valid held-out p-value, Holm-adjusted, below alpha.

    The one rule for "confirmed": ``Finding.confirmed`` reads it (and so does the finding's
    sentence); NaN is never below.

    >>> is_confirmed("brownian", 0.049), is_confirmed("simulated", 0.05), is_confirmed("void", 0.0)
    (True, False, False)
    """
    return p_kind != "void" and bool(float(p_adjusted) < alpha)


@dataclass(frozen=True, slots=True, eq=False)
class Confirmation:
    """A group's numbers on all, search and held-out rows: a finding's or a union's.

    The attributes are described by :class:`~mcviz.search.Finding`, which extends it (as
    :class:`~mcviz.search.FindingUnion` does).
    """

    size: int
    share: float
    kuiper_z: float
    search_kuiper_z: float
    holdout_size: int
    holdout_kuiper_z: float
    p_value: float
    p_adjusted: float
    p_kind: str
    mean_residual: float
    ci_low: float
    ci_high: float
    predicted: float
    observed: float
    observed_expected: float
    sentence: str

    @property
    def confirmed(self) -> bool:
        """True when the held-out p-value is valid and its Holm adjustment is below RULES.alpha.

        The one rule (:func:`is_confirmed`); every surface reads it.
        """
        return is_confirmed(self.p_kind, self.p_adjusted)


def p_value_kinds(pred: Predictions, held_members: Sequence[np.ndarray]) -> list[str]:
    r"""Return the kind of each held-out group's p-value (:data:`P_KINDS`).

    The one rule :func:`holdout_p_values` follows, decided from the scores and weights only
    (never the labels): void under label-dependent weights; simulated for binary responses
    and :math:`V_{\text{eff}} <` ``RULES.simulate_below``; Brownian otherwise.
    """
    if pred.weights_depend_on_label:
        return ["void"] * len(held_members)
    if pred.response_kind != "binary":
        return ["brownian"] * len(held_members)
    kinds = []
    for members in held_members:
        members = np.asarray(members)
        small = members.size > 0 and effective_variance(
            pred.score[members], pred.weight[members]) < RULES.simulate_below
        kinds.append("simulated" if small else "brownian")
    return kinds


def holdout_p_values(pred: Predictions, held_members: Sequence[np.ndarray], z: np.ndarray,
                     keys: Sequence[str], seed: int) -> np.ndarray:
    r"""P-values of the findings' held-out D/sigma ``z`` (one per member array).

    Binary responses, weights that do not depend on labels, and a held-out group of
    :math:`V_{\text{eff}} <` ``RULES.simulate_below`` (:func:`effective_variance`): the
    simulated p-value alone (:func:`simulated_p`); otherwise P(range of standard Brownian
    motion on [0, 1] > z). NaN where the weights depend on the labels (Appendix B of paper
    000: no valid p-value). Real-valued responses: the Brownian p-value of their eq. (6)
    D/sigma (there is no law of the responses to draw from; the pooled floor keeps sigma from
    small-sample collapse).

    Why the simulated p-value alone, not the larger of it and the Brownian one: the simulated
    p-value is valid by itself, exactly, for any number of draws (:func:`simulated_p`), so
    taking the maximum adds no validity, and it would throw away power where the Brownian tail
    is conservative (small groups at moderate scores: P(D/sigma > 3.1) is 0.003-0.005 by
    simulation against the Brownian 0.0077). The Brownian tail is anti-conservative for small
    groups at extreme scores, where a path moves by rare jumps of about :math:`W(1-S)`: with
    scores 0.005-0.015, :math:`V = 5` (505 rows), the Brownian 1% critical value is exceeded
    by 1.2%, its 0.2% value by 0.39%; at :math:`V = 40`, 0.25% against 0.2%; at :math:`V = 80`
    within simulation error (``benchmarks/bench_holdout_tail.py``). The Lyapunov ratio
    :math:`V_{\text{eff}}^{-1/2}` measures that skewness for any scores and weights (its
    Berry–Esseen bound), hence the rule: below 50 (about :math:`V < 48` at scores near 0 or 1,
    :math:`V < 12` at 0.5) the simulation decides. The rule uses scores and weights only,
    never labels, so which p-value a group gets is fixed before its labels are looked at.

    The draws of each finding come from a generator seeded by ``seed`` and the finding's
    ``keys`` entry (its description), never from row positions, so the p-values do not depend
    on the order of rows or of tied rows. The smallest simulated p-value is 1/10,000
    (``RULES.simulated_draws``; fewer draws, at most ``RULES.simulated_work`` rows x draws, for a
    group of many rows with very uneven weights).
    """
    p_values = np.array([float(brownian_range_sf(value)) for value in z])
    kinds = p_value_kinds(pred, held_members)  # the one rule: void, simulated or Brownian
    p_values[[k == "void" for k in kinds]] = np.nan  # Appendix B weights: no valid p-value
    run = np.concatenate(([0], np.cumsum(pred.run_end[:-1]))) if pred.n else np.zeros(0)
    for k, members in enumerate(held_members):
        if kinds[k] != "simulated":
            continue
        members = np.asarray(members)
        score, weight = pred.score[members], pred.weight[members]
        rng = np.random.default_rng([int(seed), zlib.crc32(keys[k].encode("utf-8"))])
        draws = int(min(RULES.simulated_draws, max(999, RULES.simulated_work // members.size)))
        p_values[k] = simulated_p(score, weight, run[members], pred.label[members], rng,
                                  draws=draws)[0]
    return p_values


def effect(pred: Predictions, rows: np.ndarray) -> tuple[float, ...]:
    r"""Weighted mean of R - S over ``rows``, its 95% interval, observed / expected, the rates.

    Returns ``(mean, low, high, ratio, predicted, observed)``: the last two are the weighted
    means of S and R over ``rows`` (``observed - predicted`` is ``mean``).

    The interval is :math:`\bar d \pm 1.96\,\widehat{se}` with
    :math:`\widehat{se}^2 = \frac{k}{k-1}\sum_j W_j^2 (d_j - \bar d)^2 / (\sum_j W_j)^2`
    (the ratio-estimator variance), :math:`d = R - S`; observed / expected is
    :math:`\sum W R / \sum W S` (inf when the denominator is 0).
    """
    weight = pred.weight[rows]
    residual = pred.label[rows] - pred.score[rows]
    total = float(weight.sum())
    mean = float(weight @ residual) / total
    k = rows.size
    spread = float(np.sum(weight**2 * (residual - mean) ** 2)) / total**2
    se = np.sqrt(spread * k / (k - 1)) if k > 1 else np.inf
    expected = float(weight @ pred.score[rows])
    observed = float(weight @ pred.label[rows])
    ratio = observed / expected if expected > 0 else np.inf
    return (mean, mean - Z_95 * se, mean + Z_95 * se, ratio, expected / total,
            observed / total)


def critical_z(alpha: float) -> float:
    """Return the D/sigma whose Brownian-range tail probability is ``alpha``.

    Bisection on [0.3, 40] (the tail decreases in z) to 1e-12: no SciPy on the search's path.

    Examples
    --------
    >>> round(critical_z(0.05), 6), round(float(brownian_range_sf(critical_z(0.01))), 12)
    (2.497672, 0.01)
    """
    low, high = 0.3, 40.0
    while high - low > 1e-12:
        middle = 0.5 * (low + high)
        if float(brownian_range_sf(middle)) > alpha:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def detectable_drift(alpha: float, power: float) -> float:
    r"""Return the drift :math:`\mu` solving :math:`\mu + 1/\mu - z_{\text{power}} = z_\alpha`."""
    target = critical_z(alpha) + float(ndtri(power))
    return (target + np.sqrt(max(target**2 - 4.0, 0.0))) / 2.0


def minimum_detectable_effect(
    sigma: float, n: int, n_holdout: int, shares: tuple[float, ...], *, n_tests: int,
    alpha: float = 0.05, power: float = 0.8,
) -> np.ndarray:
    r"""Return the mean shift a subpopulation of each share needs to be confirmed at ``power``.

    Parameters
    ----------
    sigma : float
        :math:`\sigma` of the full population (eq. (5) of [1]; Appendix C eq. (6)).
    n, n_holdout : int
        Rows in all, and held out.
    shares : tuple of float
        Shares :math:`s` of the rows.
    n_tests : int
        Findings the Holm adjustment runs over (the first is tested at ``alpha / n_tests``).

    Returns
    -------
    ndarray
        :math:`\delta(s)`, in the units of R - S.

    Notes
    -----
    A subpopulation of share :math:`s` holds about :math:`s n_h` held-out rows that look like
    the rest; its :math:`\sigma_s` (eq. (5)) is about :math:`\sigma \sqrt{n / (s n_h)}`. With a
    constant shift :math:`\delta` of R - S within it, its cumulative path (eq. (1)) in units of
    :math:`\sigma_s` is Brownian motion with drift :math:`\mu = \delta/\sigma_s` on [0, 1], whose
    range is about the end point :math:`\mu + Z` (:math:`Z` standard normal) plus the expected
    overshoot of the maximum beyond the end and of the minimum below 0, each exponential with
    mean :math:`1/(2\mu)` for large drift. Holm's first step tests at
    :math:`\alpha/m`; with :math:`z_{\alpha/m}` the Brownian-range critical value, 80% power
    needs :math:`\mu + 1/\mu - \Phi^{-1}(0.8) = z_{\alpha/m}`, so

    .. math:: \delta(s) = \mu^* \sigma \sqrt{n / (s\, n_h)}.

    This is the shift needed for the held-out confirmation of a subpopulation the search
    proposes; the search must also rank it above its noise (on the search rows, with a
    comparable margin), which the benchmark measures.
    """
    mu = detectable_drift(alpha / n_tests, power)
    return np.array([mu * sigma * np.sqrt(n / (s * n_holdout)) for s in shares])


def sentence(words: str, *, size: int, share: float, effect: float, low: float, high: float,
             predicted: float, observed: float, confirmed: bool, p_kind: str,
             binary: bool) -> str:
    """Write a finding in one plain sentence: the group, what happened against the prediction.

    ``words`` is the group in words (:func:`~mcviz.subpopulations.subpopulation_words`: no
    filter operator); ``effect`` (observed - predicted on the held-out rows), its interval
    ``low``-``high`` and the rates become words: "20.9% were positive where the model
    predicted 24.1%: 3.24 percentage points fewer than predicted". The numbers are written by
    :mod:`mcviz.text` exactly as the verdict's effect and interval (the same digits, one sign:
    the direction word carries it). No p-value or symbol: "confirmed on held-out rows" or why not.

    Examples
    --------
    >>> sentence("region is r7", size=2000, share=0.02, effect=0.098, low=0.079, high=0.117,
    ...          predicted=0.1, observed=0.198, confirmed=True, p_kind="brownian", binary=True)
    'Among rows with region is r7 (2,000 rows, 2% of all), 19.8% were positive where the model predicted 10%: 9.8 percentage points more than predicted (95% interval 7.9 to 11.7 more); confirmed on held-out rows.'
    >>> sentence("where the model predicts 60% or more", size=10, share=0.1, effect=-0.05,
    ...          low=-0.07, high=0.01, predicted=0.7, observed=0.65, confirmed=False,
    ...          p_kind="brownian", binary=True).split(": ", 1)[1]
    '5 percentage points fewer than predicted (95% interval 7 fewer to 1 more); not confirmed on held-out rows: a lead.'
    """  # noqa: E501
    rows = "Among rows " + (words if words.startswith("where ") else f"with {words}")
    group = f"{rows} ({format_count(size, 'row')}, {format_percent(share)} of all)"
    if binary:
        rates = (f"{format_percent(observed)} were positive where the model predicted "
                 f"{format_percent(predicted)}")
        more, fewer = "more", "fewer"
    else:
        rates = (f"the mean response was {format_number(observed, digits=3)} where the model "
                 f"predicted {format_number(predicted, digits=3)}")
        more, fewer = "higher", "lower"
    if p_kind == "void":
        tested = f"not confirmed: held-out p-values are {VOID_P_VALUES}"
    elif confirmed:
        tested = "confirmed on held-out rows"
    else:
        tested = "not confirmed on held-out rows: a lead"
    if effect != effect:  # no held-out rows
        return f"{group}: no held-out rows to measure it on; {tested}."
    size_of = (lambda v: format_points(v)) if binary else (
        lambda v: format_number(v, digits=3))
    bare = (lambda v: format_percent(v)[:-1]) if binary else (
        lambda v: format_number(v, digits=3))
    if effect == 0:
        said = "as predicted"
    else:
        said = f"{size_of(abs(effect))} {more if effect > 0 else fewer} than predicted"
    if low >= 0 or high <= 0:
        word = more if low >= 0 and effect >= 0 else fewer
        a, b = sorted((abs(low), abs(high)))
        interval = f"{bare(a)} to {bare(b)} {word}"
    else:
        interval = f"{bare(-low)} {fewer} to {bare(high)} {more}"
    return f"{group}, {rates}: {said} (95% interval {interval}); {tested}."
