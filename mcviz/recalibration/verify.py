r"""A fix judged on rows it never saw: :func:`verify_fix`.

The rows are split once, stratified by score (:func:`~mcviz.recalibration.holdout_split`). On
the fit part only: the guided search (the findings reported) and the fit of the map (with its
own search, for ``findings``). On the held-out part only: the statistics before and after --
the multi-calibration metric M (eq. (4) of [1]) over Algorithm-1 subpopulations generated on
the held-out rows plus the findings, each finding's :math:`D/\sigma` (eqs. (2), (5)), the ECE
(10 equal-width bins), smECE, log loss and Brier score. The subpopulations are the same rows
before and after (their members are carried over to the new score order).

Acceptance. A fix is *rejected* when it raises the held-out weighted mean log loss. Its change
is *meaningful* when the 95% interval of the mean per-row change of log loss,
:math:`\bar\Delta \pm 1.96\,\widehat{se}`, :math:`\Delta_i = \ell_i^{after} - \ell_i^{before}`,
lies below 0; :math:`\widehat{se}^2 = \frac{k}{k-1}\sum_i W_i^2 (\Delta_i - \bar\Delta)^2 /
(\sum_i W_i)^2` (the ratio-estimator variance; the held-out rows are independent of the fit,
so the interval is valid conditionally on the fitted map).

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mcviz.budget import Budget, Estimate, check
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.recalibration._logistic import clip_probability
from mcviz.recalibration._split import holdout_split, rescored, subset
from mcviz.recalibration.recalibrator import Recalibrator

__all__ = ["FixResult", "FixSide", "fix_estimate", "verify_fix"]

Z_95 = 1.959963984540054
ALPHA = 0.05

# Measured by benchmarks/bench_fix.py (planted data, 4 covariates, 300 subpopulations) on the
# 2-core reference machine: the peak RSS rose by 52-81 MB at 10^5 rows and 255-287 MB at 10^6
# (boost highest); CPU 2.1-2.6 s at 10^6 for platt/isotonic/beta, 7.2 s for findings (three
# searches of the fit rows), 18.4 s for boost. The constants err high.
# Peak RSS above the RSS before the call (benchmarks/bench_budget.py, issue #25): 215 B per
# row (platt at 6x10^5 rows, findings at 4x10^5), rounded up; held within 1.5x by
# tests/test_budget_measured.py.
_BYTES_FIXED = 10_000_000
_BYTES_PER_ROW = 230
_BYTES_PER_ROW_COVARIATE_BOOST = 24
# Time besides the guided search's own estimate (CPU time of benchmarks/bench_budget.py fix at
# 2x10^5-8x10^5 rows, issue #25, 2026-11-26 at load 8: 1.0-6.7 s): the estimates lie 1.3-1.8x
# above it (the findings fix searches the fit rows again in its passes).
_SECONDS_FIXED = 0.3
_SECONDS_PER_ROW = {"platt": 2.5e-6, "isotonic": 2.5e-6, "beta": 2.5e-6, "findings": 9e-6,
                    "boost": 2.5e-5}


@dataclass(frozen=True, slots=True, eq=False)
class FixSide:
    r"""Held-out statistics of one set of scores (before or after the fix).

    Attributes
    ----------
    metric, metric_z : float
        M (eq. (4)) and :math:`M/\sigma_0` over the held-out subpopulations.
    metric_p : float or None
        Monte-Carlo p-value of M under perfect calibration (when ``null_draws`` was given).
    ece, smece, log_loss, brier : float
    findings_kuiper_z : tuple of float
        :math:`D/\sigma` of each finding (:attr:`FixResult.findings`) on the held-out rows.
    """

    metric: float
    metric_z: float
    metric_p: float | None
    ece: float
    smece: float
    log_loss: float
    brier: float
    findings_kuiper_z: tuple[float, ...]

    def as_json(self, findings: Sequence[str]) -> dict:
        """Return the ``before`` / ``after`` object of ``mcviz fix --json``."""
        return {"metric": self.metric, "metric_z": self.metric_z, "metric_p": self.metric_p,
                "ece": self.ece, "smece": self.smece, "log_loss": self.log_loss,
                "brier": self.brier,
                "findings": [{"description": d, "holdout_kuiper_z": z}
                             for d, z in zip(findings, self.findings_kuiper_z, strict=True)]}


@dataclass(frozen=True, slots=True, eq=False)
class FixResult:
    """A fix fitted on one split and judged on the other.

    Attributes
    ----------
    method : str
    recalibrator : Recalibrator
        The fitted map.
    accepted : bool
        False when the held-out log loss got worse.
    meaningful : bool
        True when the held-out log loss improved beyond its 95% interval.
    reason : str
        The verdict in words, with the numbers.
    n_fit, n_eval : int
    fit_index, eval_index : ndarray
        Sorted positions (score order of the input) of the fit and held-out rows.
    findings : tuple of str
        Descriptions (filter language) of the findings judged: the search's on the fit rows,
        the fix's terms and the caller's scopes, each once (a description selecting the same
        held-out rows as an earlier one is left out).
    confirmed : tuple of bool
        Per finding: confirmed (Holm-adjusted held-out p below 0.05 in the search on the fit
        rows, or a term of the fix); False for the caller's scopes and unconfirmed findings.
    before, after : FixSide
    log_loss_change : tuple of float
        Mean per-row change of the held-out log loss and its 95% interval.
    eval_before, eval_after : Predictions
        The held-out rows with the model's scores and with the fixed scores (each sorted).
    eval_position : ndarray
        Position in ``eval_after`` of each row of ``eval_before``.
    notes : tuple of str
    seconds : float
    """

    method: str
    recalibrator: Recalibrator
    accepted: bool
    meaningful: bool
    reason: str
    n_fit: int
    n_eval: int
    fit_index: np.ndarray
    eval_index: np.ndarray
    findings: tuple[str, ...]
    confirmed: tuple[bool, ...]
    before: FixSide
    after: FixSide
    log_loss_change: tuple[float, float, float]
    eval_before: Predictions
    eval_after: Predictions
    eval_position: np.ndarray
    notes: tuple[str, ...]
    seconds: float

    @property
    def metric_reduction(self) -> float:
        """Share of the held-out M the fix removes (negative when M grew)."""
        return 1.0 - self.after.metric / self.before.metric if self.before.metric > 0 else 0.0

    @property
    def verdict(self) -> str:
        """One line: "the findings fix removes 78% of held-out M and improves log loss by ..."."""
        loss = (self.before.log_loss - self.after.log_loss) / self.before.log_loss
        m = self.metric_reduction
        m_text = (f"removes {m:.0%} of held-out M" if m >= 0
                  else f"raises held-out M by {-m:.0%}")
        l_text = (f"improves log loss by {_percent(loss)}" if loss >= 0
                  else f"worsens log loss by {_percent(-loss)}")
        tail = "" if self.meaningful else " (no meaningful change: within noise)"
        head = "" if self.accepted else "rejected: "
        return f"{head}the {self.method} fix {m_text} and {l_text}{tail}"

    def as_json(self) -> dict:
        """Return the object of ``mcviz fix --json`` (the CLI adds the net benefit)."""
        return {"method": self.method, "accepted": self.accepted, "meaningful": self.meaningful,
                "reason": self.reason, "verdict": self.verdict, "n_fit": self.n_fit,
                "n_eval": self.n_eval, "map": self.recalibrator.describe(),
                "notes": list(self.notes),
                "before": self.before.as_json(self.findings),
                "after": self.after.as_json(self.findings)}


def fix_estimate(rows: int, covariates: int, *, method: str = "findings",
                 search: bool = True, holdout: float = 0.5) -> Estimate:
    """Cost of :func:`verify_fix` on ``rows`` rows and ``covariates`` covariates.

    Memory :math:`O(n)`: the split, the held-out rows before and after, the subpopulations of
    M; the boosting adds its feature matrix. The guided search (its own estimate) runs before
    and is counted when larger.

    Examples
    --------
    >>> fix_estimate(1_000_000, 4, method="platt").bytes < 10**9
    True
    """
    from mcviz.search import search_estimate

    rows, covariates = int(rows), max(int(covariates), 1)
    memory = _BYTES_FIXED + rows * _BYTES_PER_ROW
    if method == "boost":
        memory += rows * covariates * _BYTES_PER_ROW_COVARIATE_BOOST
    seconds = _SECONDS_FIXED + rows * _SECONDS_PER_ROW.get(method, 2.5e-5)
    if search or method == "findings":
        searched = search_estimate(int(rows * (1 - holdout)), covariates)
        memory = max(memory, searched.bytes)
        seconds += searched.seconds if search else 0.0
    return Estimate(
        what=f"the {method} fix, judged on held-out rows: {rows:,} rows × {covariates} covariates",
        bytes=int(memory), seconds=float(seconds),
        advice="fit on a random sample of the rows, or with fewer covariates")


def _judged_family(eval_pred, names, scopes, descriptions, confirmed, notes, *,
                   n_subpopulations, seed):
    """Algorithm-1 subpopulations of the held-out rows, then each finding once.

    Returns the family, the findings' descriptions kept and their positions in the family
    with the full population first; ``confirmed`` and ``notes`` are updated in place.
    """
    from mcviz.subpopulations import filter_subpopulation, generate_subpopulations

    family: list = []
    if names:
        family = list(generate_subpopulations(eval_pred, covariates=names,
                                              n_subpopulations=n_subpopulations,
                                              seed=seed).subpopulations[1:])
    kept, ids = [], []
    for description in dict.fromkeys([*map(str, scopes), *descriptions]):  # scopes: own words
        try:
            sub = filter_subpopulation(eval_pred, description, id=len(family) + 1)
        except ValidationError as error:
            if description in scopes:
                raise
            notes.append(f"{description!r} is not judged: {error}")
            continue
        same = next((k for k, i in enumerate(ids) if np.array_equal(family[i - 1].index,
                                                                     sub.index)), None)
        if same is not None:  # the same rows in other words (a search's and a term's): once
            if description in confirmed:
                confirmed.add(kept[same])
            continue
        family.append(sub)
        kept.append(description)
        ids.append(len(family))
    return family, kept, ids


def _judgement(before: FixSide, after: FixSide, change: tuple[float, float, float]
               ) -> tuple[bool, bool, str]:
    """Return accepted (log loss not worse), meaningful (its 95% CI below 0), the reason."""
    accepted = after.log_loss <= before.log_loss
    meaningful = change[2] < 0
    reason = (f"held-out log loss {before.log_loss:.5g} -> {after.log_loss:.5g} (per-row change "
              f"{change[0]:+.3g}, 95% CI {change[1]:+.3g} to {change[2]:+.3g}); held-out M "
              f"{before.metric:.4g} -> {after.metric:.4g}")
    if not accepted:
        reason = "rejected: the held-out log loss got worse; " + reason
    elif not meaningful:
        reason = "no meaningful change: " + reason
    return bool(accepted), bool(meaningful), reason


def _percent(share: float) -> str:
    """Write a share as a percentage, two significant digits below 1% (0.043%, 0.4%, 3.6%)."""
    return f"{share:.1%}" if share >= 0.01 else f"{share * 100:.2g}%"


def _side(pred: Predictions, family: list, findings_ids: list[int], null_draws: int,
          seed: int) -> FixSide:
    from mcviz.stats.binning import calibration_metrics
    from mcviz.stats.measures import smooth_ece
    from mcviz.stats.multical import multicalibration

    result = multicalibration(pred, family)
    metric_p = None
    if null_draws:
        from mcviz.stats.significance import null_distribution

        metric_p = float(null_distribution(pred, family, draws=null_draws, seed=seed).p_value)
    metrics = calibration_metrics(pred)
    return FixSide(metric=float(result.metric), metric_z=float(result.metric_z), metric_p=metric_p,
                   ece=float(metrics.ece_equal_width), smece=float(smooth_ece(pred).smece),
                   log_loss=float(metrics.log_loss), brier=float(metrics.brier),
                   findings_kuiper_z=tuple(float(result.kuiper_z[k]) for k in findings_ids))


def _row_log_loss(pred: Predictions) -> np.ndarray:
    s = clip_probability(pred.score)
    return -(pred.label * np.log(s) + (1.0 - pred.label) * np.log1p(-s))


def _loss_change(before: Predictions, after: Predictions, position: np.ndarray
                 ) -> tuple[float, float, float]:
    delta = _row_log_loss(after)[position] - _row_log_loss(before)
    w = before.weight
    total = float(w.sum())
    mean = float(w @ delta) / total
    k = delta.size
    se = float(np.sqrt(np.sum(w**2 * (delta - mean) ** 2) / total**2 * k / max(k - 1, 1)))
    return mean, mean - Z_95 * se, mean + Z_95 * se


def verify_fix(
    pred: Predictions,
    *,
    method: str = "findings",
    covariates: Sequence[str] | None = None,
    holdout: float = 0.5,
    seed: int = 0,
    scopes: Sequence[str] = (),
    search: bool = True,
    n_subpopulations: int = 1000,
    null_draws: int = 0,
    recalibrator: Recalibrator | None = None,
    progress: Callable[[float, str], None] | None = None,
    budget: Budget | int | str | None = None,
) -> FixResult:
    """Fit a fix on one score-stratified split and judge it on the other (module docstring).

    Parameters
    ----------
    pred : Predictions
    method : str, default "findings"
        A method of :class:`Recalibrator` (ignored when ``recalibrator`` is given).
    covariates : sequence of str, optional
        Searched, boosted on and split by Algorithm 1 (default all).
    holdout : float, default 0.5
        Share of the rows held out to judge the fix.
    seed : int, default 0
        The split, the search and Algorithm 1.
    scopes : sequence of str
        Further subpopulations (filter expressions) whose held-out D/sigma is reported.
    search : bool, default True
        Run the guided search on the fit rows and report its findings.
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

    Returns
    -------
    FixResult

    Raises
    ------
    ValidationError
        Bad options, too few rows, unknown covariates or scopes.
    """
    from mcviz.subpopulations import Subpopulation

    started = time.perf_counter()

    def report(fraction: float, text: str) -> None:
        if progress is not None:
            progress(fraction, text)

    fix = recalibrator or Recalibrator(method, covariates=covariates, seed=seed)
    n_covariates = len(pred.covariate_kinds) if covariates is None else len(covariates)
    check(fix_estimate(pred.n, n_covariates, method=fix.method, search=search,
                       holdout=float(holdout) if 0 < holdout < 1 else 0.5), budget)
    fit_index, eval_index = holdout_split(pred, holdout, seed)
    fit_pred, eval_pred = subset(pred, fit_index), subset(pred, eval_index)
    names = list(pred.covariates.columns) if covariates is None else list(covariates)
    descriptions: list[str] = []
    confirmed: set[str] = set()
    if search and names:
        from mcviz.search import search_subpopulations

        report(0.0, "searching the fit rows")
        found = search_subpopulations(fit_pred, covariates=names, seed=seed,
                                      progress=lambda f, t: report(0.2 * f, t))
        descriptions += [f.description for f in found.findings]
        confirmed |= {f.description for f in found.findings if f.p_adjusted < ALPHA}
    report(0.2, f"fitting the {fix.method} fix")
    fix.fit(fit_pred, progress=lambda f, t: report(0.2 + 0.5 * f, t))
    descriptions += [t.description for t in fix.terms]
    confirmed |= {t.description for t in fix.terms}
    descriptions += [str(s) for s in scopes]
    report(0.7, "judging on the held-out rows")
    new_scores = fix.transform(eval_pred)
    eval_after, position = rescored(eval_pred, new_scores)
    notes = list(fix.notes)
    family, kept, ids = _judged_family(eval_pred, names, scopes, descriptions, confirmed, notes,
                                       n_subpopulations=n_subpopulations, seed=seed)
    family_after = [Subpopulation(s.id, s.depth, s.conditions, s.description,
                                  np.sort(position[s.index])) for s in family]
    before = _side(eval_pred, family, ids, null_draws, seed)
    report(0.85, "judging the fixed scores")
    after = _side(eval_after, family_after, ids, null_draws, seed)
    change = _loss_change(eval_pred, eval_after, position)
    accepted, meaningful, reason = _judgement(before, after, change)
    report(1.0, "done")
    return FixResult(method=fix.method, recalibrator=fix, accepted=accepted, meaningful=meaningful,
                     reason=reason, n_fit=int(fit_index.size), n_eval=int(eval_index.size),
                     fit_index=fit_index, eval_index=eval_index, findings=tuple(kept),
                     confirmed=tuple(d in confirmed for d in kept), before=before, after=after,
                     log_loss_change=change, eval_before=eval_pred, eval_after=eval_after,
                     eval_position=position, notes=tuple(notes),
                     seconds=time.perf_counter() - started)
