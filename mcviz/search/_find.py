r"""The guided search for the worst subpopulations, confirmed on held-out rows.

Score: :math:`D/\sigma` of each candidate over its members in score order, eq. (2) over
eq. (5) of [1] (Appendix C eq. (6) for real-valued responses), by the core's evaluator.
Conditions, on every covariate and on the score itself (``score >= 0.6``: "where the model
says 0.6 or more"): numeric thresholds and bands at 63 quantile cuts, refined between them;
``is missing``; every single level of a nominal scored exactly, and a level set only when
it beats its best single level out of fold by a margin growing with its size
(:mod:`mcviz.search._screen`). A beam of width 16 (half under-, half over-predicted) adds
one condition per level, the best cut of each covariate in the node's rows (a first one only
if it raises D/sigma materially); the best candidates are refined, pruned out of fold, grown
and folded (:mod:`mcviz.search._beam`, :func:`_finish`); a finding that reached
``max_conditions`` may grow to ``RULES.max_depth`` conditions by evidence; the search looks again
among the search rows outside its findings (:func:`_look_again`); groups smaller than
``min_share`` are searched when their effect could be confirmed at their size
(:func:`_small_groups`); memory O(n + candidates).

Confirmation: each finding's held-out :math:`D/\sigma`, its p-value and Holm's adjustment
over the findings reported (no held-out label reaches the split, the findings or their
number: no adjustment for the candidates searched; listed by held-out evidence); effects
are held-out weighted means of R - S with 95% intervals (MDE:
:func:`~mcviz.search._confirm.minimum_detectable_effect`). The p-value is P(range of standard
Brownian motion > it); small held-out groups of binary responses, where that tail is
anti-conservative at extreme scores, get a simulated p-value of the same statistic under
labels drawn Bernoulli(score) (:func:`~mcviz.search._confirm.holdout_p_values`).

References: I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
multi-calibration", 2025; eqs. (1), (2), (5), Appendix C eq. (6).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from mcviz.budget import Budget, Estimate, check
from mcviz.core import Evaluator
from mcviz.core.evaluator import GROUP_ELEMENTS
from mcviz.core.sigma import pooled_response_variance
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.search._beam import Beam, Node, jaccard
from mcviz.search._columns import prepare_columns, round_cut
from mcviz.search._confirm import (
    Confirmation,
    detectable_drift,
    effect,
    holdout_p_values,
    holm,
    is_confirmed,
    minimum_detectable_effect,
    p_value_kinds,
    sentence,
    split_rows,
    subsample_rows,
)
from mcviz.search._screen import NODES_GATHERED, Data, score_candidates
from mcviz.search._union import FindingUnion, offer_unions
from mcviz.search.rules import RULES
from mcviz.settings import SearchSettings
from mcviz.subpopulations import (
    Subpopulation,
    SubpopulationSet,
    describe_conditions,
    full_population,
    select_rows,
    subpopulation_words,
)

if TYPE_CHECKING:
    import pandas as pd

MDE_SHARES = (0.01, 0.05, 0.2)
"""Shares of the rows whose minimum detectable effect the search reports."""

# Measured with tracemalloc and wall time on the 2-core reference machine (planted data of
# benchmarks/bench_find.py, max_conditions 3): peak 136-194 B per row at 7-12 covariates,
# 10^5-10^6 rows; 3.5-5 us per row and covariate under load. The constants err high: ties add a
# content hash of the covariates (split_rows), counted in the per-covariate term.
# Peak RSS above the RSS before the call (benchmarks/bench_budget.py, issue #25): 95-115 B per
# row at 4-12 covariates, 1-2 x 10^5 rows; the memory constants follow it (within 1.5x).
_BYTES_PER_ROW = 110
_BYTES_PER_ROW_COVARIATE = 6
_BYTES_FIXED = 3_500_000  # the scoring counted apart below (was 6.5 MB)
_BYTES_FIXED_POINT = 16
"""Per row: the fixed-point copies of W(R-S) and S(1-S)W^2 (:meth:`Data.layout`)."""
_BYTES_LAYOUT = 17
"""Per searched row, for each of the :data:`NODES_GATHERED` block layouts kept."""
_BYTES_GATHERED = 17
"""Per searched row, for each of the :data:`NODES_GATHERED` gathers :meth:`Data.at` keeps
(``W(R-S)``, ``S(1-S)W^2``, the fold parity). The outside searches of a union's second arm
(:meth:`~mcviz.search._beam.Beam._outside`) gather other row arrays, so the kept ones are
then the largest (issue #42: a 30,000-row search's peak 15.4 MB against an estimate of 14.3)."""
_SETS_SCORED = 8
"""Member sets scored at once, in searched rows: a finding and each of its conditions dropped
or a band widened (:meth:`~mcviz.search._prune.Pruning.prune`), or a cut's moved variants
(:mod:`~mcviz.search._refine`). Measured (the sets' sizes, planted shapes of ``bench_find.py``
at 10,000-30,000 rows, with and without ties, 33 searches): at most 5.3 times the searched
rows."""
_BYTES_SCORED = 30
"""Per member scored at once, up to ``GROUP_ELEMENTS`` at a time: the core's work arrays
(gathered positions, residual and variance pairs, tie runs, the path;
:meth:`mcviz.core.Evaluator.summaries`). With :data:`_BYTES_FIXED` fitted to two measures
at once: the tracemalloc peak of planted searches (upper bound: 10,000 rows 7.95 MB, 30,000
rows 15.4 MB, 100,000 rows 35.4 MB) and the peak RSS of ``bench_budget.py``'s searches
(within 1.5x: 53 MB at 240,000 x 4, 45 MB at 160,000 x 12)."""
# CPU time (user + sys) of the search, 2026-11-26 16:40 at load 1.7 after session 6's #30
# changes (beam admission, bounded findings work above finish_rows, exact integer masked sums):
# the planted three-condition shape of benchmarks/shapes.py 0.38-0.81 s at 10^5 x 8 and
# 2.46-2.82 s at 10^6 x 10 (seeds 0-2, benchmarks/bench_search_time.py), and
# benchmarks/bench_budget.py search 0.40 s (600,000 x 4, random covariates: little to refine)
# and 1.05 s (400,000 x 12); these constants give 0.8-1.8x, 1.0-1.2x, 3.0x and 1.7x of them
# (a fit of the planted shapes, erring high on data without a signal).
_SECONDS_PER_ROW_COVARIATE = 1.8e-7
_SECONDS_FIXED = 0.45
_REFINE_SHARE = 0.3  # of the CPU time at 10^6 x 10: refine 2.0 of 7.3 s (by phase)

TABLE_COLUMNS = (
    "rank", "description", "size", "share", "kuiper_z", "search_kuiper_z", "holdout_size",
    "holdout_kuiper_z", "p_value", "p_adjusted", "p_kind", "confirmed", "mean_residual",
    "ci_low", "ci_high", "predicted", "observed", "observed_expected",
)


@dataclass(frozen=True, slots=True, eq=False)
class Finding(Confirmation):
    r"""One subpopulation found by the search, with its held-out confirmation.

    Attributes
    ----------
    rank : int
        Its place in the list, by held-out evidence: confirmed findings first, then by held-out
        p-value and held-out D/sigma (:func:`_by_held_out_evidence`).
    subpopulation : Subpopulation
        Its conditions, description (re-parseable by the filter language) and members among
        all rows.
    size, share : int, float
        Members among all rows, and their share of the rows.
    kuiper_z : float
        :math:`D/\sigma` over all its rows (eqs. (2), (5) of paper 000), as the Subpopulations
        table shows it.
    search_kuiper_z : float
        :math:`D/\sigma` on the search rows, with the :math:`\sigma` of M (eq. (5); Appendix C
        eq. (6) floored by the whole population's pooled variance): selected for being large,
        not a test.
    holdout_size : int
    holdout_kuiper_z : float
        :math:`D/\sigma` on the held-out rows.
    p_value, p_adjusted : float
        P(range of Brownian motion on [0, 1] > ``holdout_kuiper_z``) -- for a small held-out
        group of binary responses a simulated p-value of the same statistic
        (:func:`~mcviz.search._confirm.holdout_p_values`) -- and Holm's adjustment over the
        findings reported; NaN when void.
    p_kind : str
        What ``p_value`` is (:data:`~mcviz.search._confirm.P_KINDS`): ``"brownian"``,
        ``"simulated"`` or ``"void"`` (weights that depend on the labels: no valid p-value).
    mean_residual, ci_low, ci_high : float
        The effect: weighted mean of observed - predicted (``observed - predicted``) on the
        held-out rows and its 95% interval; negative: fewer positives than predicted.
    predicted, observed : float
        Weighted means of the score and of the response on the held-out rows.
    observed_expected : float
        :math:`\sum W R / \sum W S` on the held-out rows.
    sentence : str
        The finding in one plain sentence without a filter operator
        (:func:`~mcviz.search._confirm.sentence`: the group in words with rounded bounds,
        what was predicted against what happened, the interval, confirmed or not).
    confirmed : bool
        A property: a valid held-out p-value (``p_kind`` not void) whose Holm adjustment is
        below ``RULES.alpha``. The one rule for "confirmed" (verdict, fix, report and deck read
        it). An unconfirmed finding is a lead, not a result (the sentence says so).
    """

    rank: int
    subpopulation: Subpopulation

    @property
    def description(self) -> str:
        """The conditions in words (valid input to :func:`~mcviz.parse_filter`)."""
        return self.subpopulation.description


@dataclass(frozen=True, slots=True, eq=False)
class MinimumDetectableEffect:
    """The mean shift of R - S a subpopulation of each share needs (80% power).

    See the Notes of :func:`~mcviz.search._confirm.minimum_detectable_effect`; ``shift[i]`` is
    for ``shares[i]``.
    """

    shares: tuple[float, ...]
    shift: np.ndarray
    alpha: float
    power: float
    n_tests: int


@dataclass(frozen=True, slots=True, eq=False)
class SearchResult:
    """The findings of :func:`search_subpopulations` and how they were found.

    Attributes
    ----------
    findings : tuple of Finding
        In rank order.
    subpopulations : SubpopulationSet
        The full population (id 0) and the findings (ids = ranks), for the table, the
        drill-down and the report.
    mde : MinimumDetectableEffect
    n, n_search, n_holdout : int
        Rows in all, searched, held out.
    max_conditions, seed : int
    holdout : float
    candidates_scored : int
        Candidate subpopulations screened.
    seconds : float
    covariates : tuple of str
        The covariates searched (those asked for, less any left out for too many levels); the
        score's own bands, searched beside them, are not counted among them.
    notice : str or None
    holdout_index : ndarray
        Positions (score order) of the held-out rows (read-only).
    unions : tuple of FindingUnion
        Confirmed findings of one direction offered together as one problem, when the union
        deviates more than each part on the search and the held-out rows
        (:mod:`mcviz.search._union`); never among ``findings`` (a union is no conjunction). Empty
        when measured at scale (the engines re-measure findings only).
    """

    findings: tuple[Finding, ...]
    subpopulations: SubpopulationSet
    mde: MinimumDetectableEffect
    n: int
    n_search: int
    n_holdout: int
    max_conditions: int
    holdout: float
    seed: int
    candidates_scored: int
    seconds: float
    covariates: tuple[str, ...]
    notice: str | None
    holdout_index: np.ndarray
    unions: tuple[FindingUnion, ...] = ()

    @property
    def table(self) -> pd.DataFrame:
        """One row per finding (columns :data:`TABLE_COLUMNS`)."""
        import pandas as pd

        rows = [{name: (f.description if name == "description" else getattr(f, name))
                 for name in TABLE_COLUMNS} for f in self.findings]
        return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def search_estimate(rows: int, covariates: int, *, max_conditions: int = 3,
                    holdout: float = SearchSettings.holdout) -> Estimate:
    r"""Cost of :func:`search_subpopulations` on ``rows`` rows and ``covariates`` covariates.

    Memory is :math:`O(n + \text{candidates})`: the split, per-row arrays of the residuals,
    covariate codes and the beam's member positions (measured constants, upper estimates), and
    up to ``RULES.masks_cached`` one-byte masks per searched row,
    ``RULES.sets_cached`` times the searched rows' positions, the
    fixed-point block layouts of :mod:`~mcviz.search._masked` and the gathers of
    :meth:`Data.at`, and the core's work arrays over the member sets scored at once
    (:data:`_SETS_SCORED`, :data:`_BYTES_SCORED`); the score
    counts as one more covariate;
    time grows with the rows searched (at most ``RULES.max_search_rows``; the candidates are
    refined on at most ``RULES.finish_rows`` of them), the covariates and the depth.

    Examples
    --------
    >>> e = search_estimate(1_000_000, 10)
    >>> e.bytes < 10**9, e.seconds < 60
    (True, True)
    """
    rows, covariates = int(rows), max(int(covariates), 1)
    searched = min(rows * (1.0 - holdout), RULES.max_search_rows)
    finished = min(searched, RULES.finish_rows)  # cut points refined on at most these rows
    # the time constant is per row of data searched on half of its rows; refining takes 0.3 of
    # the time at 10^6 x 10 and scales with the rows refined (_finish), the rest with the rows
    # searched
    work = ((1.0 - _REFINE_SHARE) * searched + _REFINE_SHARE * finished) / 0.5
    columns = covariates + 1  # the score is searched too (score bands)
    extra_masks = finished if searched > RULES.finish_rows else 0  # the refiner's own mask cache
    scored = _SETS_SCORED * searched  # members of the sets scored at once
    memory = (_BYTES_FIXED + rows * (_BYTES_PER_ROW + _BYTES_PER_ROW_COVARIATE * columns)
              # masks: 1 B/row, and the members of recent conjunctions: 8 B per position
              + (searched + extra_masks) * (RULES.masks_cached + 8 * RULES.sets_cached)
              + rows * _BYTES_FIXED_POINT
              + searched * NODES_GATHERED * (_BYTES_LAYOUT + _BYTES_GATHERED)
              # scoring: the core's work arrays over the sets scored at once (a group at a time)
              + _BYTES_SCORED * min(scored, GROUP_ELEMENTS))
    depth = (1 + max_conditions) / 4  # measured at max_conditions = 3
    seconds = _SECONDS_FIXED + work * columns * _SECONDS_PER_ROW_COVARIATE * depth
    return Estimate(
        what=(f"guided search: {rows:,} rows × {covariates} covariates, up to "
              f"{max_conditions} conditions"),
        bytes=int(memory),
        seconds=float(seconds),
        advice=("search a random sample of the rows (mcviz search FILE --engine duckdb "
                "--sample-rows N searches a sample and measures the findings on every row), "
                "fewer covariates, or fewer conditions (max_conditions)"),
    )


def _data(pred: Predictions, parity: np.ndarray, parts: Sequence[np.ndarray] = ()) -> Data:
    """Per-row arrays of the search; ``parts`` (search rows, held-out rows) never mix.

    Real-valued responses: each row's variance terms (eq. (6)'s pooled floor and the screen's
    adjacent differences) come from the rows of its own part only (the rows in no part form
    one more), so no held-out response reaches the search's sigma and no search response the
    held-out sigma. Binary responses need no responses for sigma (eq. (5)).
    """
    residual = pred.label - pred.score
    weight = pred.weight
    bernoulli = pred.response_kind == "binary"
    if bernoulli:
        evaluator = Evaluator.from_predictions(pred)
        variance = pred.score * (1.0 - pred.score) * weight**2  # eq. (5)
        return Data(evaluator, weight * residual, variance, residual, weight, bernoulli, parity)
    part = np.full(pred.n, len(parts))
    for k, rows in enumerate(parts):
        part[rows] = k
    floor, variance = np.zeros(pred.n), np.zeros(pred.n)
    for k in np.unique(part):
        rows = np.flatnonzero(part == k)
        floor[rows] = pooled_response_variance(pred.score[rows], pred.label[rows],
                                               weight[rows] if pred.weighted else None)
        # per-row share of Appendix C eq. (6): (d_j - d_j+1)^2 (W_j + W_j+1)^2 / 8
        w, d = weight[rows], residual[rows]
        step = np.diff(d) ** 2 * (w[:-1] + w[1:]) ** 2 / 8.0
        variance[rows] = np.concatenate((step, step[-1:])) if step.size else 0.0
    evaluator = Evaluator(pred.score, weight if pred.weighted else None, run_end=pred.run_end,
                          response_variance=floor)  # eq. (6) with the part's pooled floor
    variance = np.maximum(variance, evaluator.floor)  # at least the pooled floor (core.sigma)
    return Data(evaluator, weight * residual, variance, residual, weight, bernoulli, parity)


def _check(pred, covariates, max_conditions, n_findings, min_share, holdout, seed) -> list[str]:
    if not isinstance(pred, Predictions):
        raise ValidationError(f"search needs Predictions, not {type(pred).__name__}.")
    SearchSettings(max_conditions=max_conditions, n_findings=n_findings,  # bounds: settings
                   min_share=min_share, holdout=holdout, seed=seed)
    names = list(pred.covariate_names) if covariates is None else list(
        dict.fromkeys(covariates))
    for name in names:
        pred.require_covariate(name, " to search")
    if not names:
        raise ValidationError("search: there are no covariates to describe subpopulations by.")
    if pred.n * (1 - holdout) < 2 * RULES.min_rows:
        need = 2 * RULES.min_rows / (1 - holdout)
        raise ValidationError(f"search: {pred.n:,} rows are too few to search on "
                              f"{1 - holdout:.0%} of them (need {need:,.0f}).")
    return names


def search_subpopulations(
    pred: Predictions,
    *,
    covariates: Sequence[str] | None = None,
    max_conditions: int = SearchSettings.max_conditions,
    n_findings: int = SearchSettings.n_findings,
    min_share: float = SearchSettings.min_share,
    holdout: float = SearchSettings.holdout,
    seed: int = SearchSettings.seed,
    progress: Callable[[float, str], None] | None = None,
    budget: Budget | int | str | None = None,
) -> SearchResult:
    r"""Find the subpopulations with the largest cumulative deviation D/sigma, then confirm them.

    Parameters
    ----------
    pred : Predictions
    covariates : sequence of str, optional
        Covariates to describe subpopulations by (default: all).
    max_conditions : int, default 3
        Depth of the beam (a band ``a <= x < b`` counts as one condition); a finding may grow
        past it to ``RULES.max_depth`` when each added condition passes the pruning tests.
    n_findings : int, default 5
    min_share : float, default 0.005
        Smallest share of the searched rows a finding may hold (and at least 20 rows); at the
        default or below, smaller groups when their effect could be confirmed
        (:func:`_small_groups`).
    holdout : float, default 0.3
        Share of the rows held out (a random share of every 20 consecutive rows in score
        order); the search sees the rest. Why 0.3: :func:`~mcviz.search._confirm.split_rows`.
    seed : int, default 0
    progress : callable(fraction, text), optional
        Called as the search advances; raising from it cancels the search.
    budget : Budget, int, str or None
        Memory (and time) the search may use (:func:`mcviz.budget.check`; None: the default
        budget). The search is refused before it starts when :func:`search_estimate` exceeds
        it.

    Returns
    -------
    SearchResult
        ValidationError is raised for unknown covariates, invalid parameters, too few rows or
        an estimate above the budget (the message says what to change).

    Notes
    -----
    How candidates are made, searched and confirmed: the module's docstring
    (:mod:`mcviz.search._find`); D/sigma is eq. (2) over eq. (5) (Appendix C eq. (6)) of Guy et
    al., "Measuring multi-calibration", 2025.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = 4000
    >>> group = rng.integers(0, 10, n)
    >>> score = rng.uniform(0.2, 0.8, n)
    >>> label = rng.random(n) < score + 0.25 * (group == 3)
    >>> pred = Predictions.from_arrays(score, label, covariates={
    ...     "group": [f"g{g}" for g in group], "x": rng.normal(size=n)})  # text: nominal
    >>> result = search_subpopulations(pred, n_findings=2)
    >>> result.findings[0].description
    'group == g3'
    """
    started = time.perf_counter()
    names = _check(pred, covariates, max_conditions, n_findings, min_share, holdout, seed)
    check(search_estimate(pred.n, len(names), max_conditions=int(max_conditions),
                          holdout=float(holdout)), budget)
    search_rows, holdout_rows, rank = split_rows(pred, holdout, np.random.default_rng(int(seed)),
                                                 max_search=RULES.max_search_rows)
    holdout_rows.flags.writeable = False
    columns, notes = _columns(pred, names, search_rows, holdout_rows)
    data = _data(pred, (rank % 2).astype(bool), (search_rows, holdout_rows))
    min_rows = max(RULES.min_rows, int(np.ceil(min_share * search_rows.size)))
    small = _small_groups(min_share, search_rows.size, holdout_rows.size, int(n_findings))

    beam = Beam(data, columns, search_rows, min_rows, _searching(progress), rules=RULES,
                small=small)
    beam.run(int(max_conditions))
    found = _look_again(beam, _finish(beam, rank, int(n_findings), min_share, int(seed)), rank,
                        int(n_findings), min_share, int(seed), holdout_rows.size)
    if progress is not None:
        progress(0.9, "confirming on held-out rows")
    findings, subs = _confirm(pred, data, columns, found, holdout_rows, int(seed), search_rows)
    unions = offer_unions(pred, data, _whole(pred, data), findings, search_rows, holdout_rows,
                          int(seed)) if sum(f.confirmed for f in findings) > 1 else ()
    notes += _shortfall(findings, int(n_findings), beam.stops, min_rows)
    notice = " ".join(notes) or None  # names: the covariates searched, not the score's bands
    names = tuple(dict.fromkeys(c.name for c in columns if not c.is_score))
    sub_set = SubpopulationSet(subpopulations=(full_population(pred), *subs), notice=notice,
                               seed=int(seed), min_size=min_rows, n_requested=int(n_findings),
                               covariates=names, n_paths=0, source="searched")
    if progress is not None:
        progress(1.0, "done")
    return SearchResult(findings=tuple(findings), subpopulations=sub_set,
                        mde=_mde(pred, data, holdout_rows.size, int(n_findings)), n=pred.n,
                        n_search=search_rows.size, n_holdout=holdout_rows.size,
                        max_conditions=int(max_conditions), holdout=float(holdout), seed=int(seed),
                        candidates_scored=beam.screened, seconds=time.perf_counter() - started,
                        covariates=names, notice=notice, holdout_index=holdout_rows,
                        unions=unions)


def _small_groups(min_share: float, n_search: int, n_holdout: int,
                  n_findings: int) -> tuple[int, float] | None:
    r"""Return the floor and D/sigma of small groups, below ``min_share`` (None: none searched).

    With the default ``min_share`` or a smaller one, groups of down to
    :math:`\max(` ``RULES.small_rows``, ``RULES.small_share`` of the search rows:math:`)` are
    searched -- but a candidate of fewer rows than ``min_share`` asks is kept only when its
    effect could be confirmed at its size: its D/sigma on the :math:`n_s` search rows,
    :math:`z`, predicts :math:`z\sqrt{n_h/n_s}` on the :math:`n_h` held-out rows (the same
    shift, :math:`n_h/n_s` as many rows), which must reach the drift :math:`\mu^*` that the
    minimum detectable effect is built on (:func:`~mcviz.search._confirm.detectable_drift` at
    Holm's first level ``alpha / n_findings``, 80% power): :math:`z \ge \mu^* \sqrt{n_s/n_h}`
    (5.5 at the defaults). That is, the candidate's mean shift is at least the MDE at its share
    (:func:`~mcviz.search._confirm.minimum_detectable_effect`). A group too small for its
    effect to be confirmed is not searched, so it cannot crowd out one that can; every small
    group reported is still confirmed on its held-out rows (simulated p-values below
    ``RULES.simulate_below``), so the false-find rate is that of the held-out test.
    A larger ``min_share`` is the user's floor: no smaller group is searched.
    """
    if min_share > SearchSettings.min_share or n_holdout == 0:
        return None
    floor = max(RULES.small_rows, int(np.ceil(RULES.small_share * n_search)))
    return floor, _detectable_z(n_search, n_holdout, n_findings)


def _detectable_z(n_search: int, n_holdout: int, n_findings: int) -> float:
    r"""D/sigma on the search rows whose held-out counterpart reaches the MDE's drift.

    :math:`\mu^* \sqrt{n_s / n_h}` (:func:`_small_groups`); infinite with no held-out rows.
    """
    if n_holdout == 0:
        return float("inf")
    mu = detectable_drift(RULES.alpha / max(n_findings, 1), 0.8)
    return float(mu * np.sqrt(n_search / n_holdout))


def _finish(beam: Beam, rank: np.ndarray, n_findings: int, min_share: float,
            seed: int) -> list[tuple[Node, np.ndarray]]:
    r"""Return the beam's findings, their cut points refined on at most ``RULES.finish_rows`` rows.

    Above the cap the cut points of the candidates are chosen again
    (:meth:`~mcviz.search._beam.Beam.refine`, the costliest step at 10^6 rows) on a random
    subset of the search rows (:func:`~mcviz.search._confirm.subsample_rows`, drawn from
    ``seed`` in an order free of the order of tied rows); which conditions stay (pruning) and
    which are added (growing), the search D/sigma and the ranks are decided on all the search
    rows, so the power of those tests is kept. Fewer pool entries are examined, in proportion to
    the subset, an entry whose last condition fails the pruning test is not refined, and each
    finding is polished on all the search rows (:meth:`~mcviz.search._beam.Beam.findings`;
    measured on ``benchmarks/bench_find.py``'s 10^6-row shapes: the same recovery, at 1.0-1.3
    times the CPU of ``mcviz metrics --subpopulations 1000`` in place of 1.7-2.9). The held-out
    p-values stay valid: the subset only changes *which* cut points are chosen, every choice is
    made on search rows, never on held-out ones, and all held-out rows are used for the
    confirmation. What is lost is some precision of the cut points: they maximise D/sigma on
    :math:`k` of the :math:`m` search rows (:math:`k` the cap), whose D/sigma is about
    :math:`\sqrt{k/m}` of that on all of them (0.76 at 10^6 rows, 700,000 searched). Below the
    cap nothing changes.
    """
    if beam.rows.size > RULES.finish_rows:
        rng = np.random.default_rng([int(seed), 1])  # independent of the split's draws
        rows = subsample_rows(rank, beam.rows, RULES.finish_rows, rng)
        min_rows = max(RULES.min_rows, int(np.ceil(min_share * rows.size)))
        small = None if beam.min_rows == beam.regular_rows else (  # the same share of the subset
            max(RULES.min_rows, int(beam.min_rows * rows.size / beam.rows.size)), beam.small_z)
        beam.refiner = Beam(beam.data, beam.columns, rows, min_rows, None, rules=RULES,
                            small=small)
    found = beam.findings(n_findings)
    if beam.refiner is not None:
        beam.screened += beam.refiner.screened
    return found


def _look_again(beam: Beam, found: list[tuple[Node, np.ndarray]], rank: np.ndarray,
                n_findings: int, min_share: float, seed: int,
                n_holdout: int) -> list[tuple[Node, np.ndarray]]:
    r"""Return the findings and those of a second search among the search rows outside them.

    A deviation that a finding does not explain can still be hidden by it: the search's first
    conditions must raise D/sigma over *all* the search rows, whose own deviation the finding
    carries (the second arm of a union -- ``kind in {k3, k7}`` or ``0.8 <= u < 0.9`` -- and a
    second group of the opposite sign were not reported, issue #42). So when fewer than
    ``n_findings`` were found, the beam runs again (the same depth and rules) on the search rows
    in no finding; each finding of that search, its members and D/sigma taken again on all
    the search rows, is added when its D/sigma could be confirmed (at least
    :func:`_detectable_z`: the second look adds no lead that would only dilute Holm's
    adjustment) unless it overlaps a finding (Jaccard above ``RULES.jaccard_fold``) or its
    deviation lies in a better finding's rows
    (:meth:`~mcviz.search._beam.Beam.explained`). Only search rows are read: the held-out
    rows still decide, with Holm's adjustment over every finding reported, whether each is
    confirmed (no held-out label chooses a finding or their number).
    """
    if not found or len(found) >= n_findings:
        return found
    outside = np.setdiff1d(beam.rows, np.concatenate([m for _, m in found]))
    if outside.size < 2 * beam.regular_rows:
        return found
    small = None if beam.min_rows == beam.regular_rows else (beam.min_rows, beam.small_z)
    tell = beam.progress
    again = Beam(beam.data, beam.columns, outside, beam.regular_rows, None if tell is None else (
        lambda fraction, text: tell(fraction, f"second look outside the findings: {text}")),
        rules=RULES, small=small)
    again.run(beam.max_conditions)
    more = _finish(again, rank, n_findings - len(found), min_share, seed)
    beam.screened += again.screened
    detectable = _detectable_z(beam.rows.size, n_holdout, n_findings)
    for node, _ in more:
        members = beam.members(node.cuts)
        z, _, _, mean = beam.scores([node.cuts])[0]
        better = [m for n, m in found if n.z >= z]
        if members.size < beam.min_rows or z < detectable or any(
                jaccard(members, m) > RULES.jaccard_fold for _, m in found) or beam.explained(
                members, float(z), better):
            beam.stops["overlap"] = beam.stops.get("overlap", 0) + 1
            continue
        found.append((Node(node.cuts, float(z), float(mean), members.size), members))
    return found[:n_findings]


def _searching(progress: Callable[[float, str], None] | None) -> Callable[[float, str], None]:
    """The beams' progress as 0-90% of the search's, never going back (the second look
    restarts its beam at 0)."""
    reached = [0.0]

    def report(fraction: float, text: str) -> None:
        if progress is not None:
            reached[0] = max(reached[0], fraction)
            progress(0.9 * reached[0], text)

    return report


def _columns(pred: Predictions, names: list[str], search_rows: np.ndarray,
             holdout_rows: np.ndarray) -> tuple[list, list[str]]:
    """Return the prepared covariates (and the score), and notes on what was not searched."""
    notes = []
    if search_rows.size + holdout_rows.size < pred.n:
        notes.append(f"searched a random {search_rows.size:,} of the "
                     f"{pred.n - holdout_rows.size:,} rows not held out.")
    columns, left_out = prepare_columns(pred, names, search_rows)
    if left_out:
        notes.append("not searched: "
                     + ", ".join(f"{name!r} ({why})" for name, why in left_out) + ".")
    if not columns:
        raise ValidationError("search: no covariate can be searched (" + " ".join(notes) + ")")
    return columns, notes


def _mde(pred: Predictions, data: Data, n_holdout: int, n_tests: int) -> MinimumDetectableEffect:
    sigma_all = score_candidates(data, [np.arange(pred.n)])[0, 2]
    shift = minimum_detectable_effect(sigma_all, pred.n, n_holdout, MDE_SHARES, n_tests=n_tests,
                                      alpha=RULES.alpha)
    return MinimumDetectableEffect(MDE_SHARES, shift, RULES.alpha, 0.8, n_tests)


def _confirm(pred, data, columns, found, holdout_rows, seed, search_rows):
    """Held-out statistics, Holm's adjustment, effects and sentences of the findings.

    Listed by their held-out evidence (:func:`_by_held_out_evidence`).
    """
    subs, all_members, held_members = [], [], []
    for rank, (node, _) in enumerate(found, start=1):
        cuts = [round_cut(columns[cut.column], cut) for cut in node.cuts]
        conditions = tuple(c for cut in cuts for c in cut.conditions(columns[cut.column]))
        members = select_rows(pred, conditions)
        subs.append(Subpopulation(rank, len(node.cuts), conditions,
                                  describe_conditions(conditions), members))
        all_members.append(np.asarray(members))
        held_members.append(np.asarray(select_rows(pred, conditions, within=holdout_rows)))
    whole = _whole(pred, data)
    everywhere = score_candidates(whole, all_members)
    held = score_candidates(data, held_members)
    p_values = holdout_p_values(pred, held_members, held[:, 0],  # NaN: Appendix B weights
                                [sub.description for sub in subs], seed)
    adjusted = holm(p_values)
    binary = pred.response_kind == "binary"
    kinds = p_value_kinds(pred, held_members)
    findings = []
    for k, sub in enumerate(subs):
        mean, low, high, ratio, predicted, observed = (
            effect(pred, held_members[k]) if held_members[k].size else (np.nan,) * 6)
        share = sub.size / pred.n
        findings.append(Finding(
            rank=sub.id, subpopulation=sub, size=sub.size, share=share,
            kuiper_z=float(everywhere[k, 0]), search_kuiper_z=found[k][0].z,
            holdout_size=int(held_members[k].size), holdout_kuiper_z=float(held[k, 0]),
            p_value=float(p_values[k]), p_adjusted=float(adjusted[k]), p_kind=kinds[k],
            mean_residual=mean, ci_low=low, ci_high=high, predicted=predicted,
            observed=observed, observed_expected=ratio,
            sentence=sentence(subpopulation_words(pred, sub), size=sub.size, share=share,
                              effect=mean, low=low, high=high, predicted=predicted,
                              observed=observed, confirmed=is_confirmed(kinds[k], adjusted[k]),
                              p_kind=kinds[k], binary=binary),
        ))
    searched = [np.asarray(select_rows(pred, sub.conditions, within=search_rows)) for sub in subs]
    return _by_held_out_evidence(findings, score_candidates(whole, searched)[:, 0])


def _whole(pred: Predictions, data: Data) -> Data:
    """Return ``data`` to score sets of all rows (real-valued responses: the pooled floor)."""
    return data if data.bernoulli else replace(data, evaluator=Evaluator.from_predictions(pred),
                                               _nodes=[])


def _by_held_out_evidence(findings: list[Finding],
                          search_z: np.ndarray) -> tuple[list[Finding], list[Subpopulation]]:
    r"""Order the findings by their held-out evidence; give each the search rows' D/σ of M.

    Order: confirmed findings first, then by held-out p-value (smallest first; a void one,
    NaN, last), then by held-out :math:`D/\sigma` (largest first), then by the search's own
    order. Ranks and subpopulation ids are renumbered in that order. The order changes no
    p-value (Holm's adjustment is over the set of findings, which no held-out label chose);
    it keeps a group the held-out rows do not support from leading the list because the
    search rows' :math:`\sigma` was small (with real-valued responses, eq. (6) at extreme
    scores).

    ``search_kuiper_z`` becomes :math:`D/\sigma` over the finding's search rows with the
    :math:`\sigma` of M (eq. (5), or Appendix C eq. (6) floored by the whole population's
    pooled variance, :mod:`mcviz.core.sigma`): every in-sample number a list shows uses
    M's :math:`\sigma`.
    """
    def key(k: int) -> tuple:
        f = findings[k]
        p = f.p_value if np.isfinite(f.p_value) else np.inf
        held = f.holdout_kuiper_z if np.isfinite(f.holdout_kuiper_z) else -np.inf
        return (not f.confirmed, p, -held, k)

    listed, subs = [], []
    for rank, k in enumerate(sorted(range(len(findings)), key=key), start=1):
        sub = replace(findings[k].subpopulation, id=rank)
        subs.append(sub)
        listed.append(replace(findings[k], rank=rank, subpopulation=sub,
                              search_kuiper_z=float(search_z[k])))
    return listed, subs


def _shortfall(findings: list[Finding], wanted: int, stops: dict, min_rows: int) -> list[str]:
    """Say why fewer findings than asked were reported, and which are not confirmed."""
    notes = []
    if len(findings) < wanted:
        why = []
        if stops.get("overlap"):
            why.append(f"{stops['overlap']:,} further candidates lay mostly in the rows of "
                       "better findings (folded into them)")
        if stops.get("weak"):
            why.append(f"{stops['weak']:,} had no condition that raised D/σ materially")
        if stops.get("small"):
            why.append(f"{stops['small']:,} held fewer than {min_rows:,} search rows (the "
                       "size limit, min_share)")
        if stops.get("budget"):
            why.append("the search stopped after checking its best candidates (the work "
                       "allowed per finding)")
        if not why:
            why.append("no other candidate deviated more than its parent")
        notes.append(f"{len(findings)} of the {wanted} findings asked for: " + "; ".join(why)
                     + ".")
    confirmation = _confirmation_note(findings)
    return notes + ([confirmation] if confirmation else [])


def _confirmation_note(findings) -> str | None:
    """Say which findings are not confirmed on the held-out rows (None: all are, or none)."""
    unconfirmed = sum(not f.confirmed for f in findings)
    if findings and unconfirmed == len(findings):
        return ("No finding is confirmed on the held-out rows (every adjusted p ≥ "
                f"{RULES.alpha:g}): nothing here is more than chance would give.")
    if unconfirmed:
        return (f"{unconfirmed} of the {len(findings)} findings are not confirmed on the "
                f"held-out rows (adjusted p ≥ {RULES.alpha:g}): leads, not results.")
    return None
