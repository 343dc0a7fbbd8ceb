r"""A search at scale: the findings of a sample's search confirmed on EVERY held-out row.

``mcviz search --engine duckdb|spark`` searches a random sample in memory
(:func:`~mcviz.search.search_subpopulations`), then asks the engine to measure each finding on
all rows the search never looked at: the sample's held-out rows and every row outside the
sample (:mod:`mcviz.engines.holdout` narrows the engine to them by an anti-join with the
searched rows' keys). Which rows are held out depends on the sample draw and the split only,
never on a label the search used, so the held-out test keeps its validity on the larger set, and
its power grows with it.

Per finding, on the held-out rows (the same formulas as in memory,
:mod:`mcviz.search._confirm`):

* :math:`D/\sigma` of eqs. (2), (5) of paper 000, exact, from the engine's score-sorted screen;
* its p-value: the Brownian-range tail, or for a small group of binary responses
  (:math:`V_{\text{eff}} <` ``RULES.simulate_below``, from two sums) the simulated p-value on
  the group's rows, read from the engine (few rows by that rule), with the in-memory seed;
* Holm's adjustment over the findings;
* the effect: weighted mean of :math:`d = R - S` and its 95% interval from
  :math:`\sum W, \sum W d, \sum W^2 d^2, \sum W^2 d, \sum W^2` (one aggregate pass):
  :math:`\sum W^2 (d - \bar d)^2 = \sum W^2 d^2 - 2 \bar d \sum W^2 d + \bar d^2 \sum W^2`;
  observed / expected and the rates from :math:`\sum W R, \sum W S`.

Then the findings are listed by held-out evidence as in memory, and the MDE is that of the
held-out rows at scale (eq. (5)'s :math:`\sigma` of all rows). When the sample holds every row,
the held-out rows are the in-memory search's and every number equals the in-memory one (to
rounding: tested to 1e-9).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from mcviz.engines.base import SubpopulationSpec, as_specs
from mcviz.engines.holdout import (
    HELD_OUT,
    SUMS,
    held_out_rows,
    held_out_sums,
    mean_interval_from_sums,
    screen_groups,
)
from mcviz.search._confirm import (
    holm,
    is_confirmed,
    minimum_detectable_effect,
    sentence,
    simulated_p,
)
from mcviz.search._find import (
    Finding,
    MinimumDetectableEffect,
    SearchResult,
    _by_held_out_evidence,
    _confirmation_note,
)
from mcviz.search.rules import RULES
from mcviz.stats.cumulative import brownian_range_sf
from mcviz.subpopulations import subpopulation_words

if TYPE_CHECKING:
    from mcviz.engines.base import ScreenResult
    from mcviz.io import Predictions

__all__ = ["at_all_rows", "confirm_at_scale", "effect_from_sums", "held_out_notice",
           "measure_at_scale", "remeasured", "sample_rows"]


def effect_from_sums(sums: np.ndarray) -> tuple[float, ...]:
    r"""``(mean, low, high, ratio, predicted, observed)`` from one row of :data:`SUMS`.

    As :func:`mcviz.search._confirm.effect`; NaN (six times) for a group with no rows.

    Examples
    --------
    >>> w, d = np.array([1.0, 2.0, 1.0]), np.array([0.5, -0.25, 1.0])  # scores 0.5, R = S + d
    >>> s = np.full(3, 0.5)
    >>> sums = [3, w.sum(), w @ d, w**2 @ d**2, w @ w, w**2 @ d, 0, w @ s, w @ (s + d), 0]
    >>> [round(float(v), 6) for v in effect_from_sums(np.array(sums, dtype=float))[:3]]
    [0.25, -0.514998, 1.014998]
    """
    value = dict(zip(SUMS, (float(v) for v in sums), strict=True))
    rows, total = value["rows"], value["w"]
    if rows == 0 or total == 0:
        return (np.nan,) * 6
    mean, low, high = mean_interval_from_sums(rows, total, value["wd"], value["wdd"],
                                              value["wws"], value["ww"])
    ratio = value["wr"] / value["ws"] if value["ws"] > 0 else np.inf
    return mean, low, high, ratio, value["ws"] / total, value["wr"] / total


def _p_value(pred: Predictions, engine, finding: Finding, z: float, sums: np.ndarray,
             seed: int, *, flagged: bool = False) -> tuple[float, str]:
    """Return the held-out p-value and its kind (:data:`mcviz.search._confirm.P_KINDS`)."""
    if pred.weights_depend_on_label:
        return np.nan, "void"
    value = dict(zip(SUMS, sums, strict=True))
    binary = pred.response_kind == "binary"
    small = (binary and value["rows"] > 0 and value["third"] > 0
             and value["wwss"] ** 3 / value["third"] ** 2 < RULES.simulate_below)
    if not small:
        return float(brownian_range_sf(np.float64(z))), "brownian"
    conditions = tuple(finding.subpopulation.conditions)
    score, label, weight = held_out_rows(engine, (HELD_OUT, *conditions) if flagged else
                                         conditions)
    run = np.concatenate(([0], np.cumsum(score[1:] != score[:-1])))
    rng = np.random.default_rng([int(seed), zlib.crc32(finding.description.encode("utf-8"))])
    draws = int(min(RULES.simulated_draws, max(999, RULES.simulated_work // score.size)))
    return simulated_p(score, weight, run, label, rng, draws=draws)[0], "simulated"


def measure_at_scale(result: SearchResult, pred: Predictions, engine, *,
                     overview: tuple | None = None,
                     ) -> tuple[ScreenResult, SearchResult, int, np.ndarray]:
    r"""Measure ``result``'s findings on every row and on every held-out row in ONE sorted pass.

    ``engine`` (DuckDB or Spark) carries :func:`mcviz.engines.holdout.flag_searched`'s flag.
    The specs screened together: the full population and the findings (all rows), then the
    held-out rows (:data:`~mcviz.engines.holdout.HELD_OUT`) and each finding's held-out rows
    (its conditions and ``HELD_OUT``); on DuckDB the held-out :data:`SUMS` come from the same
    batches. Each number is the one of :func:`confirm_at_scale` over the rows it names.
    ``overview``: the engine's overview taken before the flag's join (it validates every row).

    Returns
    -------
    ScreenResult, SearchResult, int, ndarray
        The findings on all rows; the findings with their held-out numbers, listed by
        held-out evidence (``n_holdout``: every held-out row; ``size``, ``share``: every
        row's, as the sentences say); the number of held-out rows;
        the :data:`SUMS` of all rows (the full population: its predicted and observed rates).
    """
    every = as_specs(result.subpopulations.subpopulations)
    base = max(spec.id for spec in every) + 1
    held = [SubpopulationSpec(base, 1, (HELD_OUT,), "held-out rows")]
    held += [SubpopulationSpec(base + 1 + k, f.subpopulation.depth + 1,
                               (HELD_OUT, *f.subpopulation.conditions), f.description,
                               parent=base) for k, f in enumerate(result.findings)]
    (everywhere, screened), sums = screen_groups(  # sums: the population, the held-out sets
        engine, [every, held], sums=[0, *range(len(every), len(every) + len(held))],
        overview=overview)
    population, sums = sums[0], sums[1:]
    confirmed, n_held = _confirmed(result, pred, engine, everywhere=everywhere,
                                   z=screened.table["kuiper_z"].to_numpy()[1:], sums=sums[1:],
                                   n_held=int(sums[0, 0]), flagged=True)
    return everywhere, confirmed, n_held, population


def confirm_at_scale(result: SearchResult, pred: Predictions, engine, *,
                     everywhere: ScreenResult) -> tuple[SearchResult, int]:
    r"""Re-measure ``result``'s findings on the rows of ``engine`` (narrowed to the held-out rows).

    Parameters
    ----------
    result, pred : SearchResult, Predictions
        The search of the sample and the sample's predictions.
    engine : DuckDBEngine or SparkEngine
        Narrowed by :func:`mcviz.engines.holdout.exclude_rows` to the rows not searched.
    everywhere : ScreenResult
        The findings measured on all rows (their ``size`` and ``share``, stated by the
        sentences; :math:`\sigma` of all rows for the MDE).

    Returns
    -------
    SearchResult, int
        The findings with held-out numbers from every held-out row, listed by held-out
        evidence; and the number of held-out rows.
    """
    findings = result.findings
    screened = engine.screen([f.subpopulation for f in findings])
    held = screened.table.set_index("id")
    sums = held_out_sums(engine, [f.subpopulation.conditions for f in findings])
    return _confirmed(result, pred, engine, everywhere=everywhere,
                      z=[float(held.loc[f.rank, "kuiper_z"]) for f in findings], sums=sums,
                      n_held=int(screened.n), flagged=False)


def _confirmed(result: SearchResult, pred: Predictions, engine, *, everywhere: ScreenResult,
               z: Sequence[float], sums: np.ndarray, n_held: int,
               flagged: bool) -> tuple[SearchResult, int]:
    """Return :func:`confirm_at_scale`'s held-out numbers from each finding's D/sigma and sums."""
    findings = result.findings
    all_rows = everywhere.table.set_index("id")
    z = [float(z[k]) if sums[k, 0] else np.nan for k in range(len(findings))]
    tested = [_p_value(pred, engine, f, z[k], sums[k], result.seed, flagged=flagged)
              if sums[k, 0] else (np.nan, "brownian") for k, f in enumerate(findings)]
    listed, subs = _remeasured(result, pred, z, tested, sums,
                               [int(all_rows.loc[f.rank, "size"]) for f in findings],
                               everywhere.n)
    population = result.subpopulations.subpopulations[0]
    sub_set = replace(result.subpopulations, subpopulations=(population, *subs))
    mde = result.mde
    shift = minimum_detectable_effect(everywhere.sigma0, everywhere.n, max(n_held, 1),
                                      mde.shares, n_tests=mde.n_tests, alpha=mde.alpha)
    mde = MinimumDetectableEffect(mde.shares, shift, mde.alpha, mde.power, mde.n_tests)
    return replace(result, findings=tuple(listed), subpopulations=sub_set, mde=mde,
                   n_holdout=int(n_held), notice=held_out_notice(result, listed),
                   unions=()), n_held  # the sample's unions: not re-measured here


def _remeasured(result: SearchResult, pred: Predictions, z: Sequence[float],
                tested: Sequence[tuple[float, str]], sums: np.ndarray, sizes: Sequence[int],
                n: int) -> tuple[list[Finding], list]:
    """The findings with held-out D/sigma ``z``, (p, kind) ``tested`` and :data:`SUMS` ``sums``.

    Holm over the findings, the effect from the sums, ``size`` and ``share`` (``sizes`` of
    ``n`` rows: every row's, as the sentence states them), then listed by held-out evidence as
    in memory. The sample's counts stay in the sample's search (and each subpopulation's
    ``index``: its members among the sample's rows).
    """
    findings = result.findings
    adjusted = holm(np.array([p for p, _ in tested]))
    binary = pred.response_kind == "binary"
    measured = []
    for k, f in enumerate(findings):
        mean, low, high, ratio, predicted, observed = effect_from_sums(sums[k])
        size = int(sizes[k])
        share = size / n if n else np.nan
        kind = tested[k][1]
        measured.append(replace(
            f, size=size, share=share,  # every row's: the one count every surface shows
            holdout_size=int(sums[k, 0]), holdout_kuiper_z=z[k], p_value=float(tested[k][0]),
            p_adjusted=float(adjusted[k]), p_kind=kind, mean_residual=mean, ci_low=low,
            ci_high=high, predicted=predicted, observed=observed, observed_expected=ratio,
            sentence=sentence(subpopulation_words(pred, f.subpopulation), size=size,
                              share=share, effect=mean, low=low, high=high,
                              predicted=predicted, observed=observed,
                              confirmed=is_confirmed(kind, adjusted[k]), p_kind=kind,
                              binary=binary)))
    return _by_held_out_evidence(measured, np.array([f.search_kuiper_z for f in findings]))


def at_all_rows(result: SearchResult, pred: Predictions, *, sizes: Sequence[int],
                n: int) -> SearchResult:
    """Give ``result``'s findings the ``size`` and ``share`` of every row, stated by the sentence.

    The held-out numbers stay unchanged (the sample's held-out rows'). For a sample's search
    measured on every row but confirmed in memory (``mcviz search --engine numpy
    --sample-rows``): ``sizes`` each finding's rows among all ``n`` rows, in
    ``result.findings``' order.

    Examples
    --------
    >>> import pandas as pd
    >>> from mcviz.io import load_predictions
    >>> from mcviz.search import search_subpopulations
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 4, 4000)
    >>> s = rng.uniform(0.2, 0.8, 4000)
    >>> y = (rng.random(4000) < np.clip(s + 0.25 * (x == 3), 0, 1)).astype(int)
    >>> pred = load_predictions(pd.DataFrame({"s": s, "y": y, "x": x}), score="s", label="y",
    ...                         covariates=["x"], nominal=["x"])
    >>> found = search_subpopulations(pred, n_findings=1, seed=0)
    >>> sized = at_all_rows(found, pred, sizes=[12_345], n=40_000)
    >>> sized.findings[0].size, round(sized.findings[0].share, 4)
    (12345, 0.3086)
    >>> "(12,345 rows, 30.9% of all)" in sized.findings[0].sentence
    True
    """
    binary = pred.response_kind == "binary"
    findings = []
    for f, size in zip(result.findings, sizes, strict=True):
        share = int(size) / n if n else np.nan
        findings.append(replace(f, size=int(size), share=share, sentence=sentence(
            subpopulation_words(pred, f.subpopulation), size=int(size), share=share,
            effect=f.mean_residual, low=f.ci_low, high=f.ci_high, predicted=f.predicted,
            observed=f.observed, confirmed=f.confirmed, p_kind=f.p_kind, binary=binary)))
    return replace(result, findings=tuple(findings))


def held_out_notice(result: SearchResult, findings: Sequence[Finding]) -> str | None:
    """``result.notice`` with its sentence on the sample's confirmation replaced by ``findings``'.

    The sample's held-out rows confirmed some findings; every held-out row may confirm others:
    one statement, of the numbers shown.
    """
    before, after = _confirmation_note(result.findings), _confirmation_note(findings)
    notice = result.notice or ""
    if before:
        notice = notice.replace(before, "").strip()
    return " ".join(part for part in (notice, after) if part) or None


def remeasured(result: SearchResult, pred: Predictions, *, z: Sequence[float],
               sums: np.ndarray, sizes: Sequence[int], n: int) -> SearchResult:
    r"""``result`` with every finding's held-out numbers measured elsewhere, relisted.

    For real-valued responses (the paired difference of ``mcviz compare --engine``): ``z`` the
    held-out :math:`D/\sigma` (Appendix C eq. (6) with its pooled floor), ``sums`` the
    :data:`SUMS` of each finding's held-out rows, ``sizes`` its rows among ``n``. The p-value
    is the Brownian-range tail (void, NaN, when the weights depend on the labels), as
    :func:`mcviz.search._confirm.holdout_p_values` gives for real-valued responses.
    """
    if pred.response_kind == "binary":
        raise ValueError("remeasured takes real-valued responses (binary: confirm_at_scale)")
    void = pred.weights_depend_on_label
    tested = [(np.nan, "void") if void else
              ((float(brownian_range_sf(np.float64(z[k]))) if sums[k, 0] else np.nan),
               "brownian") for k in range(len(result.findings))]
    listed, subs = _remeasured(result, pred, z, tested, sums, sizes, n)
    population = result.subpopulations.subpopulations[0]
    return replace(result, findings=tuple(listed), subpopulations=replace(
        result.subpopulations, subpopulations=(population, *subs)),
        notice=held_out_notice(result, listed), unions=())  # unions are not re-measured


def sample_rows(covariates: int, *, holdout: float, max_conditions: int,
                budget=None) -> int:
    r"""Rows to sample for a search at scale: the most the memory budget allows, up to a cap.

    The cap is :math:`\lceil m / (1 - h) \rceil` with :math:`m` = ``RULES.max_search_rows``:
    a larger sample adds only held-out rows, and at scale every row outside the searched ones is
    held out anyway. Below the cap, the largest :math:`n` (to 1,000 rows) whose
    :func:`~mcviz.search.search_estimate` (``covariates`` columns, ``max_conditions``) stays
    within ``budget`` (:func:`mcviz.budget.as_budget`: the default budget when None), at
    least 1,000. The estimate is the one the in-memory search refuses by, so the sample's
    search is never refused for memory.

    Examples
    --------
    >>> sample_rows(10, holdout=0.3, max_conditions=3, budget="100GB")
    1428572
    >>> sample_rows(10, holdout=0.3, max_conditions=3, budget="250MB")  # to 1,000 rows
    738485
    """
    from mcviz.budget import as_budget
    from mcviz.search._find import search_estimate

    allowed = as_budget(budget).bytes
    cap = int(np.ceil(RULES.max_search_rows / (1.0 - holdout)))

    def fits(rows: int) -> bool:
        return search_estimate(rows, covariates, max_conditions=max_conditions,
                               holdout=holdout).bytes <= allowed

    if fits(cap):
        return cap
    low, high = 1_000, cap  # fits(high) is False
    while high - low > 1_000:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
