r"""A fix judged on rows it never saw: :func:`verify_fix`.

The rows are split once (:func:`~mcviz.recalibration.holdout_split`, the guided search's split
and tie order). On the fit part only: the guided search (its findings are judged) and the fit of
the map (with its own searches, for ``findings``). On the held-out part only: the statistics
before and after (:func:`mcviz.recalibration.judge.before_after`) -- the multi-calibration
metric M (eq. (4) of [1]) over one *judged family*, each finding's :math:`D/\sigma` (eqs. (2),
(5)), the ECE (10 equal-width bins), smECE, log loss and Brier score, and the bands of each
covariate (:func:`~mcviz.recalibration.judge.band_shifts`).

The judged family is the same for every method on the same rows, covariates and seed:
Algorithm-1 subpopulations generated on the held-out rows, the search's findings from the fit
rows and the caller's scopes. A fix's own terms are reported beside it (their D/sigma) but are
not in M, so "before" is identical across methods.

Recommendation. A fix is *recommended* when its held-out log loss is not worse beyond noise
(the 95% interval of its change does not lie above 0) and no confirmed finding -- of the search,
or a term of the fix -- got worse beyond noise (the interval of the log loss change within it
does not lie above 0). Changes are "better", "worse" or "no meaningful change" by their
interval (:class:`~mcviz.recalibration.judge.Change`); a fitted map carries the verdict
(:attr:`Recalibrator.verdict`), and ``mcviz apply`` refuses a map not recommended unless
``--force``.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mcviz.budget import Budget, Estimate, check
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.recalibration._split import holdout_split, subset
from mcviz.recalibration.judge import (
    BandShift,
    Change,
    FixSide,
    band_shifts,
    before_after,
    loss_change,
)
from mcviz.recalibration.recalibrator import Recalibrator
from mcviz.recalibration.registry import get_method
from mcviz.settings import DEFAULT_THRESHOLDS, DecisionSettings, FixSettings
from mcviz.text import format_percent, format_signed

if TYPE_CHECKING:
    from mcviz.compare import ModelComparison

__all__ = ["BandShift", "Change", "FixResult", "FixSide", "fix_estimate", "fix_summary",
           "held_out_decisions", "recommend", "verify_fix"]


# Measured by benchmarks/bench_fix.py (planted data, 4 covariates, 300 subpopulations) on the
# 2-core reference machine: the peak RSS rose by 52-81 MB at 10^5 rows and 255-287 MB at 10^6
# (boost highest); CPU 2.1-2.6 s at 10^6 for platt/isotonic/beta, 7.2 s for findings (three
# searches of the fit rows), 18.4 s for boost. The constants err high.
# Peak RSS above the RSS before the call (benchmarks/bench_budget.py fix, issue #25; re-measured
# 2026-11-29 once the fix is also judged as a challenger and searched in two views: platt
# 108 MB at 2.4x10^5 rows and 222 MB at 6x10^5, findings 101 MB at 1.6x10^5 and 185 MB at
# 4x10^5, i.e. 317-349 B per row over 32-45 MB), rounded; held within 1.5x by
# tests/test_budget_measured.py. A method's own cost: RecalibrationMethod.cost.
_BYTES_FIXED = 35_000_000
_BYTES_PER_ROW = 330
# Time besides the guided searches' own estimates and the method's (RecalibrationMethod.cost):
# the judgement of the held-out rows and the comparison of the fix, as a challenger, with the
# model (its statistics, bands per covariate, decisions), per row and covariate. Refitted to the
# CPU time of `cd benchmarks && python bench_budget.py fix` (2026-11-29, load 26-41): without
# this term the estimates were 0.39x (platt, 6x10^5 rows x 4 covariates: 3.5 s against 8.1-8.9
# s CPU), 0.35x (platt 3x10^5 x 8: 2.6 s against 7.4 s), 0.78x (findings 4x10^5 x 6) and 0.74x
# (findings 2x10^5 x 4); the missing seconds are 2.0-2.3e-6 per row and covariate.
_SECONDS_FIXED = 0.3
_SECONDS_PER_ROW_COVARIATE = 2.1e-6


@dataclass(frozen=True, slots=True, eq=False)
class FixResult:
    """A fix fitted on one split and judged on the other.

    Attributes
    ----------
    method : str
    recalibrator : Recalibrator
        The fitted map (its ``verdict`` set from this judgement).
    recommended : bool
        Held-out log loss not worse beyond noise, and no confirmed finding worse beyond noise.
    reason : str
        Why (not) recommended, with the numbers.
    n_fit, n_eval : int
    fit_index, eval_index : ndarray
        Sorted positions (score order of the input) of the fit and held-out rows.
    findings : tuple of str
        Descriptions (filter language) of the judged findings: the search's on the fit rows and
        the caller's scopes, each once (one selecting the same held-out rows as an earlier one
        is left out). With the Algorithm-1 subpopulations they make the judged family of M.
    confirmed : tuple of bool
        Per finding: confirmed (Holm-adjusted held-out p below 0.05 in the search on the fit
        rows); False for the caller's scopes.
    terms : tuple of str
        The fix's terms' findings (``findings`` fix), judged beside the family, not in M.
    before, after : FixSide
    log_loss_change : Change
        Mean per-row change of the held-out log loss and its 95% interval.
    finding_changes : tuple of (str, Change)
        The log loss change within each confirmed finding and each term.
    bands : tuple of BandShift
        Each covariate's bands on the held-out rows, before and after.
    eval_before, eval_after : Predictions
        The held-out rows with the model's scores and with the fixed scores (each sorted).
    eval_position : ndarray
        Position in ``eval_after`` of each row of ``eval_before``.
    notes : tuple of str
    seconds : float
    comparison : ModelComparison or None
        The fix judged as a challenger is (:func:`mcviz.recalibration.judge.judged_as_challenger`):
        the model's scores (A) against the fixed ones (B) on the held-out rows — paired loss
        differences, regressions and improvements of the fix, net benefit of A and B.
    """

    method: str
    recalibrator: Recalibrator
    recommended: bool
    reason: str
    n_fit: int
    n_eval: int
    fit_index: np.ndarray
    eval_index: np.ndarray
    findings: tuple[str, ...]
    confirmed: tuple[bool, ...]
    terms: tuple[str, ...]
    before: FixSide
    after: FixSide
    log_loss_change: Change
    finding_changes: tuple[tuple[str, Change], ...]
    bands: tuple[BandShift, ...]
    eval_before: Predictions
    eval_after: Predictions
    eval_position: np.ndarray
    notes: tuple[str, ...]
    seconds: float
    comparison: ModelComparison | None = None

    @property
    def accepted(self) -> bool:
        """The same as :attr:`recommended` (the older name)."""
        return self.recommended

    @property
    def meaningful(self) -> bool:
        """True when the held-out log loss moved beyond noise (its interval excludes 0)."""
        return self.log_loss_change.direction != "no meaningful change"

    @property
    def metric_reduction(self) -> float:
        """Share of the held-out M the fix removes (negative when M grew)."""
        return 1.0 - self.after.metric / self.before.metric if self.before.metric > 0 else 0.0

    @property
    def bands_moved(self) -> tuple[BandShift, ...]:
        """The bands miscalibrated beyond noise after the fix, and more than before."""
        return tuple(b for b in self.bands if b.moved)

    @property
    def verdict(self) -> str:
        """One line: "the findings fix removes 78% of held-out M; held-out log loss: better ..."."""
        m = self.metric_reduction
        # three significant digits: "0%" for an M that moved 0.06% read as no change (#40)
        m_text = (f"removes {format_percent(m)} of held-out M" if m >= 0
                  else f"raises held-out M by {format_percent(-m)}")
        head = "recommended: " if self.recommended else "not recommended: "
        return (f"{head}the {self.method} fix {m_text}; "
                + self.log_loss_change.sentence("held-out log loss"))

    def as_json(self) -> dict:
        """Return the object of ``mcviz fix --json`` (the CLI adds the net benefit)."""
        return {"method": self.method, "recommended": self.recommended,
                "reason": self.reason, "verdict": self.verdict, "n_fit": self.n_fit,
                "n_eval": self.n_eval, "map": self.recalibrator.describe(),
                "log_loss_change": self.log_loss_change.as_json(),
                "notes": list(self.notes),
                "before": self.before.as_json(self.findings, self.terms),
                "after": self.after.as_json(self.findings, self.terms),
                "finding_changes": [{"description": d, **c.as_json()}
                                    for d, c in self.finding_changes],
                "bands_moved": [b.as_json() for b in self.bands_moved],
                "comparison": (None if self.comparison is None
                               else self.comparison.as_json())}


def fix_estimate(rows: int, covariates: int, *, method: str = "findings",
                 search: bool = True, holdout: float = FixSettings.holdout,
                 compare: bool = True) -> Estimate:
    """Cost of :func:`verify_fix` on ``rows`` rows and ``covariates`` covariates.

    Memory :math:`O(n)`: the split, the held-out rows before and after, the subpopulations of
    M; the boosting adds its feature matrix. The guided search (its own estimate) runs before
    and is counted when larger; so is the comparison's search of the held-out rows
    (``compare``).

    Examples
    --------
    >>> fix_estimate(1_000_000, 4, method="platt").bytes < 10**9
    True
    """
    from mcviz.search import search_estimate

    rows, covariates = int(rows), max(int(covariates), 1)
    registered = get_method(method)
    method_bytes, method_seconds = registered.cost(rows, covariates)
    memory = _BYTES_FIXED + rows * _BYTES_PER_ROW + method_bytes
    seconds = _SECONDS_FIXED + rows * covariates * _SECONDS_PER_ROW_COVARIATE + method_seconds
    if search or registered.searches:
        searched = search_estimate(int(rows * (1 - holdout)), covariates)
        memory = max(memory, searched.bytes)
        seconds += searched.seconds if search else 0.0
    if compare and covariates:
        judged = search_estimate(int(rows * holdout), covariates)
        memory, seconds = max(memory, judged.bytes), seconds + judged.seconds
    return Estimate(
        what=f"the {method} fix, judged on held-out rows: {rows:,} rows × {covariates} covariates",
        bytes=int(memory), seconds=float(seconds),
        advice="fit on a random sample of the rows, or with fewer covariates")


def _judged_family(eval_pred, names, scopes, descriptions, notes, *, n_subpopulations, seed):
    """Algorithm-1 subpopulations of the held-out rows, then each finding and scope once.

    Returns the family, the descriptions kept and their positions in the family with the full
    population first.
    """
    from mcviz.subpopulations import filter_subpopulation, generate_subpopulations

    family: list = []
    if names:
        family = list(generate_subpopulations(eval_pred, covariates=names,
                                              n_subpopulations=n_subpopulations,
                                              seed=seed).subpopulations[1:])
    kept, ids = [], []
    for description in dict.fromkeys([*descriptions, *map(str, scopes)]):
        try:
            sub = filter_subpopulation(eval_pred, description, id=len(family) + 1)
        except ValidationError as error:
            if description in scopes:
                raise
            notes.append(f"{description!r} is not judged: {error}")
            continue
        if any(np.array_equal(family[i - 1].index, sub.index) for i in ids):
            continue  # the same rows in other words: once
        family.append(sub)
        kept.append(description)
        ids.append(len(family))
    return family, kept, ids


def _term_subpopulations(eval_pred, terms: Sequence[str]) -> list:
    from mcviz.subpopulations import filter_subpopulation

    return [filter_subpopulation(eval_pred, d, id=k + 1) for k, d in enumerate(terms)]


def recommend(log_loss: Change, finding_changes: Sequence[tuple[str, Change]]
              ) -> tuple[bool, str]:
    """Return whether the fix is recommended, and why (the rule: module docstring)."""
    causes = []
    if log_loss.worse:
        causes.append(f"the held-out log loss got worse beyond noise (95% CI "
                      f"{format_signed(log_loss.low)} to {format_signed(log_loss.high)} per row)")
    causes += [f"confirmed finding {d!r} got worse beyond noise (its held-out log loss "
               f"{format_signed(c.mean)} per row, 95% CI {format_signed(c.low)} to "
               f"{format_signed(c.high)})"
               for d, c in finding_changes if c.worse]
    if causes:
        return False, "not recommended: " + "; ".join(causes) + "."
    return True, ("recommended: the held-out log loss is not worse beyond noise ("
                  f"{log_loss.direction}) and no confirmed finding got worse beyond noise.")


def _searched(fit_pred, names, seed, report) -> tuple[list[str], set[str]]:
    """Return the search's findings on the fit rows (descriptions) and the confirmed ones."""
    if not names:
        return [], set()
    from mcviz.search import search_subpopulations

    report(0.0, "searching the fit rows")
    found = search_subpopulations(fit_pred, covariates=names, seed=seed,
                                  progress=lambda f, t: report(0.2 * f, t))
    return ([f.description for f in found.findings],
            {f.description for f in found.findings if f.confirmed})


def _as_challenger(compare: bool, pred: Predictions, names: list[str],
                   thresholds: Sequence[float], seed: int,
                   report: Callable[[float, str], None], notes: list[str]) -> dict | None:
    """Options of the comparison of the fix as a challenger, or None when it is not made."""
    if not compare:
        return None
    if pred.multiclass or np.any((pred.label < 0) | (pred.label > 1)):
        notes.append("the fix is not compared as a challenger: that needs one score and "
                     "responses in [0, 1].")
        return None
    return {"covariates": names, "thresholds": thresholds, "seed": seed,
            "progress": lambda f, t: report(0.75 + 0.15 * f, f"as a challenger: {t}")}


def _bands_note(bands) -> list[str]:
    """Return a note naming the bands the fix made miscalibrated beyond noise (or none)."""
    moved = [b for b in bands if b.moved]
    if not moved:
        return []
    listed = "; ".join(f"{b.band} (z {b.z_before:+.1f} -> {b.z_after:+.1f})" for b in moved[:10])
    return [f"bands made miscalibrated beyond noise (|z| > {moved[0].bound:.2f}, the bound a "
            f"calibrated fix keeps over all {len(bands)} bands in 95% of draws, and more than "
            f"before): {listed}{'' if len(moved) <= 10 else '; ...'}"]


def verify_fix(
    pred: Predictions,
    *,
    method: str = "findings",
    covariates: Sequence[str] | None = None,
    holdout: float = FixSettings.holdout,
    seed: int = FixSettings.seed,
    scopes: Sequence[str] = (),
    search: bool = True,
    n_subpopulations: int = FixSettings.n_subpopulations,
    null_draws: int = 0,
    recalibrator: Recalibrator | None = None,
    progress: Callable[[float, str], None] | None = None,
    budget: Budget | int | str | None = None,
    compare: bool = True, thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
) -> FixResult:
    """Fit a fix on one score-stratified split and judge it on the other (module docstring).

    Parameters
    ----------
    pred : Predictions
    method : str, default "findings"
        A registered method (ignored when ``recalibrator`` is given).
    covariates : sequence of str, optional
        Searched, boosted on, split by Algorithm 1 and cut into bands (default all).
    holdout : float, default 0.5
        Share of the rows held out to judge the fix (:class:`mcviz.settings.FixSettings`).
    seed : int, default 0
        The split, the search and Algorithm 1.
    scopes : sequence of str
        Further subpopulations (filter expressions) judged with the findings.
    search : bool, default True
        Run the guided search on the fit rows and judge its findings.
    n_subpopulations : int, default 1000
        Algorithm-1 subpopulations of the held-out rows in M (besides the findings).
    null_draws : int, default 0
        When positive, the Monte-Carlo p-value of M before and after (that many draws).
    recalibrator : Recalibrator, optional
        An unfitted recalibrator with its options (default ``Recalibrator(method, ...)``).
    progress : callable(fraction, text), optional
        Called as the work advances; raising from it stops the work.
    budget : Budget, int, str or None
        Refuse before starting when :func:`fix_estimate` exceeds it (:func:`mcviz.budget.check`;
        None: the default budget).
    compare, thresholds : bool, sequence of float
        Also judge the fix as a challenger is (:attr:`FixResult.comparison`; net benefit).

    Returns
    -------
    FixResult

    Raises
    ------
    ValidationError
        Bad options, too few rows, unknown covariates or scopes.
    """
    started = time.perf_counter()

    def report(fraction: float, text: str) -> None:
        if progress is not None:
            progress(fraction, text)

    fix = recalibrator or Recalibrator(method, covariates=covariates, seed=seed)
    n_covariates = len(pred.covariate_kinds) if covariates is None else len(covariates)
    check(fix_estimate(pred.n, n_covariates, method=fix.method, search=search,
                       holdout=float(holdout) if 0 < holdout < 1 else FixSettings.holdout,
                       compare=compare), budget)
    fit_index, eval_index = holdout_split(pred, holdout, seed)
    fit_pred, eval_pred = subset(pred, fit_index), subset(pred, eval_index)
    names = list(pred.covariates.columns) if covariates is None else list(covariates)
    descriptions, confirmed = _searched(fit_pred, names if search else [], seed, report)
    report(0.2, f"fitting the {fix.method} fix")
    fix.fit(fit_pred, progress=lambda f, t: report(0.2 + 0.5 * f, t))
    report(0.7, "judging on the held-out rows")
    notes = list(fix.notes)
    family, kept, ids = _judged_family(eval_pred, names, scopes, descriptions, notes,
                                       n_subpopulations=n_subpopulations, seed=seed)
    terms = tuple(dict.fromkeys(t.description for t in fix.terms))
    term_subs = _term_subpopulations(eval_pred, terms)
    eval_after, position, (before, after), change, comparison = before_after(
        eval_pred, fix.transform(eval_pred), family, ids, term_subs, null_draws=null_draws,
        seed=seed, compare=_as_challenger(compare, pred, names, thresholds, seed, report, notes))
    report(0.9, "checking the bands and the findings")
    checked = [(d, family[i - 1].index) for d, i in zip(kept, ids, strict=True)
               if d in confirmed] + [(s.description, s.index) for s in term_subs]
    finding_changes = tuple((d, loss_change(eval_pred, eval_after, position, index))
                            for d, index in dict(checked).items())
    bands = band_shifts(eval_pred, eval_after, position, names)
    recommended, reason = recommend(change, finding_changes)
    fix.verdict = {"recommended": recommended, "reason": reason}
    notes += _bands_note(bands)
    report(1.0, "done")
    return FixResult(
        method=fix.method, recalibrator=fix, recommended=recommended, reason=reason,
        n_fit=int(fit_index.size), n_eval=int(eval_index.size), fit_index=fit_index,
        eval_index=eval_index, findings=tuple(kept),
        confirmed=tuple(d in confirmed for d in kept), terms=terms, before=before,
        after=after, log_loss_change=change, finding_changes=finding_changes, bands=bands,
        eval_before=eval_pred, eval_after=eval_after, eval_position=position,
        notes=tuple(notes), seconds=time.perf_counter() - started, comparison=comparison)


def held_out_decisions(result: FixResult, thresholds: Sequence[float], *,
                       bootstrap: int = DecisionSettings.bootstrap, seed: int = FixSettings.seed,
                       scopes: Sequence[str] | None = None) -> tuple[dict, list[dict]]:
    """Decision impact of the fix on the held-out rows: the full population, then each scope.

    :func:`mcviz.decision.decision_impact` at ``thresholds`` (its JSON objects).
    """
    from mcviz.decision import decision_impact
    from mcviz.subpopulations import filter_subpopulation

    fixed = result.eval_after.score[result.eval_position]
    full = decision_impact(result.eval_before, fixed, thresholds=thresholds,
                           n_bootstrap=bootstrap, seed=seed).at(thresholds)
    per_scope = []
    for description in scopes or []:
        sub = filter_subpopulation(result.eval_before, description)
        per_scope.append(decision_impact(result.eval_before, fixed, thresholds=thresholds,
                                         index=sub.index, scope=description,
                                         n_bootstrap=bootstrap, seed=seed).at(thresholds))
    return full, per_scope


def fix_summary(result: FixResult, thresholds: Sequence[float], *,
                bootstrap: int = DecisionSettings.bootstrap, seed: int = FixSettings.seed) -> dict:
    """Return the fix in JSON, as ``mcviz fix --json`` prints it and the Fix page offers it.

    :meth:`FixResult.as_json` plus ``thresholds``, the net benefit before and after at them and
    ``decision`` (:func:`held_out_decisions`).
    """
    decision, _ = held_out_decisions(result, thresholds, bootstrap=bootstrap, seed=seed)
    output = result.as_json()
    output["thresholds"] = [float(t) for t in thresholds]
    output["before"]["net_benefit"] = decision["net_benefit"]["model"]
    output["after"]["net_benefit"] = decision["net_benefit"]["recalibrated"]
    output["decision"] = decision
    return output
