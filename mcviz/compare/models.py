r"""Compare two models scored on the same labelled rows: :func:`compare_models`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from mcviz.compare.paired import (
    NetBenefitComparison,
    PairedDifference,
    PairedPath,
    brier_loss,
    log_loss,
    mean_interval,
    net_benefit_comparison,
    paired_cumulative_differences,
    paired_difference,
)
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.settings import DEFAULT_THRESHOLDS, CompareSettings

if TYPE_CHECKING:
    from mcviz.compare.join import JoinReport
    from mcviz.search import SearchResult
    from mcviz.stats.cumulative import CumulativeResult
    from mcviz.stats.measures import ClassicalMeasures

__all__ = ["AVERAGE_SCORE", "ComparisonFinding", "GroupSearch", "ModelComparison",
           "compare_models", "comparison_finding", "search_groups"]

AVERAGE_SCORE = "average score"
"""The name of the ordering variable :math:`(S^A + S^B)/2` (the search's and the headline's)."""
_GRID = 2.0**-30
"""Scores and differences of the search's rows lie on this grid, so that the search's residual
(label - score) is the paired difference exactly, and swapping A and B negates it exactly."""


@dataclass(frozen=True, slots=True, eq=False)
class ComparisonFinding:
    r"""A group where B's loss differs from A's, found by the search and confirmed held out.

    Attributes
    ----------
    rank : int
        1 for the strongest in its direction (regressions: B worse; improvements: B better).
    description : str
        Its conditions (the filter language: valid input to :func:`~mcviz.parse_filter`).
    group : str
        The same group in plain words (:func:`mcviz.subpopulations.subpopulation_words`).
    sentence : str
        The group in one plain sentence.
    size, share : int, float
        Its rows among all rows, and their share.
    effect, ci_low, ci_high : float
        Held-out weighted mean of :math:`d = L_B - L_A` (Brier) and its paired 95% interval.
    kuiper_z : float
        Held-out :math:`D/\sigma` of the search (paper 000 eq. (2) over Appendix C eq. (6)).
    p_value, p_adjusted : float
        Its held-out p-value and Holm's adjustment over every group the search reported.
    confirmed : bool
        ``p_adjusted < 0.05`` and the interval of the effect excludes 0 on its side.
    holdout_size : int
    calibration_a, calibration_b : float
        Held-out weighted mean of observed - predicted (:math:`R - S`) under A and under B.
    calibration_a_ci, calibration_b_ci : tuple of float
        Their 95% intervals.
    index : ndarray
        The group's rows, positions in the order of ``pred`` (A's score order), read-only.
    """

    rank: int
    description: str
    sentence: str
    size: int
    share: float
    effect: float
    ci_low: float
    ci_high: float
    kuiper_z: float
    p_value: float
    p_adjusted: float
    confirmed: bool
    holdout_size: int
    calibration_a: float
    calibration_b: float
    calibration_a_ci: tuple[float, float]
    calibration_b_ci: tuple[float, float]
    index: np.ndarray
    group: str = ""

    def as_json(self) -> dict:
        """One entry of ``"regressions"`` / ``"improvements"`` of ``mcviz compare --json``."""
        return {
            "description": self.description, "group": self.group or self.description,
            "sentence": self.sentence, "size": self.size,
            "share": self.share, "effect": self.effect, "ci_low": self.ci_low,
            "ci_high": self.ci_high, "kuiper_z": self.kuiper_z, "p_value": self.p_value,
            "p_adjusted": self.p_adjusted, "confirmed": self.confirmed,
            "holdout_size": self.holdout_size, "calibration_a": self.calibration_a,
            "calibration_b": self.calibration_b,
            "calibration_a_ci": list(self.calibration_a_ci),
            "calibration_b_ci": list(self.calibration_b_ci),
        }


@dataclass(frozen=True, slots=True, eq=False)
class ModelComparison:
    """Everything :func:`compare_models` measured.

    Attributes
    ----------
    n : int
    score_a, score_b : str
        The two score columns' names.
    calibration_a, calibration_b : CumulativeResult
        Each model's cumulative calibration statistics (``mcviz metrics``' ``"calibration"``).
    classical_a, classical_b : ClassicalMeasures
        Each model's classical measures (``mcviz metrics``' ``"classical"``).
    brier, log_loss : PairedDifference
        The paired loss differences B - A.
    paths : tuple of PairedPath
        The paired cumulative differences of the Brier losses, ordered by the average score
        (first: the headline), by each model's score and by each numeric covariate.
    regressions, improvements : tuple of ComparisonFinding
        Groups where B is worse (effect > 0) and better (effect < 0), in rank order.
    net_benefit : NetBenefitComparison
    search : SearchResult or None
        The search on the paired loss difference (None when it did not run: ``notice`` says
        why).
    verdict : tuple of str
        The comparison in plain sentences.
    next_step : str
    notice : str or None
    join : JoinReport or None
        How a challenger's file was joined (set by the caller that joined it).
    settings : CompareSettings
    """

    n: int
    score_a: str
    score_b: str
    calibration_a: CumulativeResult
    calibration_b: CumulativeResult
    classical_a: ClassicalMeasures
    classical_b: ClassicalMeasures
    brier: PairedDifference
    log_loss: PairedDifference
    paths: tuple[PairedPath, ...]
    regressions: tuple[ComparisonFinding, ...]
    improvements: tuple[ComparisonFinding, ...]
    net_benefit: NetBenefitComparison
    search: SearchResult | None
    verdict: tuple[str, ...]
    next_step: str
    notice: str | None
    join: JoinReport | None
    settings: CompareSettings

    @property
    def headline(self) -> PairedPath:
        """The paired path ordered by the average score (the ``"paired"`` block's test)."""
        return self.paths[0]

    def as_json(self) -> dict:
        """Return the object ``mcviz compare --json`` prints (README, "Compare two models")."""
        head = self.headline

        def model(column: str, calibration, classical) -> dict:
            return {"score": column, "calibration": {
                "kuiper": calibration.kuiper, "ks": calibration.ks, "sigma": calibration.sigma,
                "kuiper_z": calibration.kuiper_z, "p_value": calibration.p_value},
                "classical": classical.as_json()}

        output = {
            "n": self.n,
            "models": {"a": model(self.score_a, self.calibration_a, self.classical_a),
                       "b": model(self.score_b, self.calibration_b, self.classical_b)},
            "paired": {
                "brier_a": self.brier.a, "brier_b": self.brier.b,
                "brier_difference": self.brier.difference, "ci_low": self.brier.ci_low,
                "ci_high": self.brier.ci_high, "log_loss_a": self.log_loss.a,
                "log_loss_b": self.log_loss.b, "log_loss_difference": self.log_loss.difference,
                "log_loss_ci_low": self.log_loss.ci_low,
                "log_loss_ci_high": self.log_loss.ci_high, "order_by": head.order_by,
                "kuiper": head.kuiper, "sigma": head.sigma, "kuiper_z": head.kuiper_z,
                "p_value": head.p_value,
                "paths": [{"order_by": p.order_by, "kuiper": p.kuiper, "sigma": p.sigma,
                           "kuiper_z": p.kuiper_z, "p_value": p.p_value, "n": p.n,
                           "n_missing": p.n_missing} for p in self.paths],
            },
            "regressions": [f.as_json() for f in self.regressions],
            "improvements": [f.as_json() for f in self.improvements],
            "net_benefit": self.net_benefit.as_json(),
            "verdict": list(self.verdict),
            "next_step": self.next_step,
            "notice": self.notice,
        }
        if self.join is not None:
            output["join"] = self.join.as_json()
        return output


def _score_b(pred: Predictions, score_b) -> tuple[np.ndarray, str]:
    """Return B's scores in ``pred``'s order and their name, or raise naming the problem."""
    if isinstance(score_b, str):
        if score_b == pred.score_column:
            raise ValidationError(f"--score-b {score_b!r} is the same column as --score: give "
                                  "two different score columns.", column=score_b)
        pred.require_covariate(score_b, " holding the second model's scores")
        values = pred.covariate_column(score_b)
        if values.kind in ("nominal", "bool", "time"):
            raise ValidationError(f"column {score_b!r}: the second model's scores must be "
                                  "numbers in [0, 1].", column=score_b)
        scores = np.asarray(pred.covariates[score_b], dtype=float)
        name = score_b
    else:
        given = np.asarray(score_b, dtype=float).reshape(-1)
        n_input = pred.report.n_read if pred.report.n_read else pred.n
        if given.size != n_input:
            raise ValidationError(f"score_b has {given.size:,} values; the input had "
                                  f"{n_input:,} rows (one score per input row).",
                                  column="score_b")
        scores, name = given[pred.row], "score_b"
    bad = ~(np.isfinite(scores) & (scores >= 0) & (scores <= 1))
    if bad.any():
        rows = ", ".join(str(int(r)) for r in np.sort(pred.row[bad])[:5])
        raise ValidationError(f"column {name!r}: {int(bad.sum()):,} of {pred.n:,} rows are "
                              f"missing or outside [0, 1] (rows {rows}).", column=name)
    return scores, name


def _check(pred: Predictions) -> None:
    if not isinstance(pred, Predictions):
        raise ValidationError(f"compare_models needs Predictions, not {type(pred).__name__}.")
    if pred.multiclass:
        raise ValidationError("compare_models compares two binary classifiers' scores; "
                              "multi-class probabilities are not supported.")
    if np.any((pred.label < 0) | (pred.label > 1)):
        raise ValidationError(f"column {pred.label_column!r}: comparing losses needs responses "
                              "in [0, 1].", column=pred.label_column)


def compare_models(
    pred: Predictions,
    score_b: str | np.ndarray | Sequence[float],
    *,
    covariates: Sequence[str] | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    n_findings: int = CompareSettings.n_findings,
    holdout: float = CompareSettings.holdout,
    seed: int = CompareSettings.seed,
    name_b: str | None = None,
    budget=None,
    progress=None,
) -> ModelComparison:
    r"""Compare model A (``pred``'s score) with model B on the same labelled rows.

    Parameters
    ----------
    pred : Predictions
        Model A's scores, the labels (binary, or responses in [0, 1]), weights, covariates.
    score_b : str or array of shape (n_input,)
        Model B's scores: the name of a covariate of ``pred`` holding them (load the file with
        that column among the covariates), or one score per *input* row, in input order (as
        given to :meth:`Predictions.from_arrays`).
    covariates : sequence of str, optional
        Covariates to order by and search (default: every covariate but B's score column).
    thresholds : sequence of float
        Decision thresholds in (0, 1) for the net benefit.
    n_findings : int
        Regressions and improvements to report at most (each).
    holdout, seed : float, int
        The search's held-out share and seed (:func:`mcviz.search_subpopulations`).
    name_b : str, optional
        B's name when ``score_b`` is an array (default ``"score_b"``).
    budget : Budget, int, str or None
        The search's budget.
    progress : callable(fraction, text), optional
        The search's progress (raising from it stops the work).

    Returns
    -------
    ModelComparison

    Raises
    ------
    ValidationError
        B's scores missing, outside [0, 1] or the same column as A's, an unknown covariate,
        labels outside [0, 1], multi-class predictions, invalid settings or thresholds.

    Notes
    -----
    *Each model.* :func:`~mcviz.cumulative_differences` and
    :func:`~mcviz.classical_measures` of each score: the numbers ``mcviz metrics`` gives.

    *Paired losses and paths.* :mod:`mcviz.compare.paired`: the paired mean differences of the
    Brier and log losses, and the cumulative differences of the Brier losses (Kloumann et al.,
    arXiv:2305.11323) ordered by the average score :math:`(S^A + S^B)/2`, by A's score, by B's
    score and by each numeric covariate, with :math:`D`, the paired :math:`\sigma` and p.

    *Where B is worse or better.* The guided search (:func:`mcviz.search_subpopulations`) runs
    on the paired Brier difference as a real-valued response: its rows are ordered by the
    average score (symmetric in A and B, so that swapping the models negates every residual
    and leaves every order, split and candidate alone), with label
    :math:`\bar S + d` and score :math:`\bar S`, so its residual is exactly :math:`d` (both on a
    :math:`2^{-30}` grid). It searches the covariates only (not bands of the average score,
    which no file holds). It asks for ``2 * n_findings`` groups; those with a positive held-out
    mean of :math:`d` are regressions, negative ones improvements. Their p-values are the
    search's held-out ones (Appendix C eq. (6) :math:`\sigma`), Holm-adjusted over every group
    it reported. Under A and B in each group: held-out mean :math:`R - S` with its interval.
    Identical scores give :math:`d \equiv 0`: the search is not run and there is no group.

    *Decisions.* :func:`mcviz.compare.paired.net_benefit_comparison`.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> n = 4000
    >>> score = rng.uniform(0.1, 0.9, n)
    >>> label = rng.random(n) < score
    >>> pred = Predictions.from_arrays(score, label)
    >>> same = compare_models(pred, score)
    >>> same.brier.difference, same.regressions, same.improvements
    (0.0, (), ())
    """
    _check(pred)
    settings = CompareSettings(n_findings=n_findings, holdout=holdout, seed=seed)
    scores_b, name = _score_b(pred, score_b)
    name_b = name if isinstance(score_b, str) or name_b is None else str(name_b)
    names = [c for c in (pred.covariate_names if covariates is None
                         else dict.fromkeys(covariates)) if c != name_b]
    for name in names:
        pred.require_covariate(name, " to compare by")
    return _compare(pred, scores_b, name_b, names, settings, thresholds, (budget, progress))


def _compare(pred: Predictions, scores_b: np.ndarray, name_b: str, names: list[str],
             settings: CompareSettings, thresholds, run: tuple) -> ModelComparison:
    """Do the work of :func:`compare_models` on validated input."""
    from mcviz.compare.words import comparison_sentences
    from mcviz.stats.cumulative import cumulative_differences
    from mcviz.stats.measures import classical_measures

    score_a, label, weight = pred.score, pred.label, pred.weight
    brier = paired_difference(brier_loss(score_a, label), brier_loss(scores_b, label), weight,
                              loss="brier")
    logs = paired_difference(log_loss(score_a, label), log_loss(scores_b, label), weight,
                             loss="log_loss")
    paths = _paths(pred, scores_b, name_b, names)
    pred_b = _predictions_b(pred, scores_b, name_b)
    groups = _groups(pred, scores_b, names, settings, run)
    search, regressions, improvements = groups.search, groups.regressions, groups.improvements
    notes = list(groups.notes)
    fields = {
        "n": pred.n, "score_a": pred.score_column, "score_b": name_b,
        "calibration_a": cumulative_differences(pred),
        "calibration_b": cumulative_differences(pred_b),
        "classical_a": classical_measures(pred), "classical_b": classical_measures(pred_b),
        "brier": brier, "log_loss": logs, "paths": tuple(paths),
        "regressions": regressions, "improvements": improvements,
        "net_benefit": net_benefit_comparison(score_a, scores_b, label, weight,
                                              thresholds=thresholds),
        "search": search, "notice": " ".join(notes) or None, "join": None,
        "settings": settings,
    }
    verdict, next_step = comparison_sentences(**fields)
    return ModelComparison(**fields, verdict=verdict, next_step=next_step)


@dataclass(frozen=True, slots=True, eq=False)
class GroupSearch:
    """Where B is worse or better: :func:`compare_models`' search alone (:func:`search_groups`)."""

    search: SearchResult | None
    regressions: tuple[ComparisonFinding, ...]
    improvements: tuple[ComparisonFinding, ...]
    notes: tuple[str, ...]
    """The sentences :func:`compare_models` puts in its notice about the paths and the search."""
    settings: CompareSettings

    @property
    def notice(self) -> str | None:
        """The notes as one notice (None without)."""
        return " ".join(self.notes) or None


def search_groups(pred: Predictions, score_b: str | np.ndarray, *, covariates: Sequence[str],
                  n_findings: int = CompareSettings.n_findings,
                  holdout: float = CompareSettings.holdout,
                  seed: int = CompareSettings.seed) -> GroupSearch:
    """Run only the search of :func:`compare_models` (the same groups, numbers and notes).

    For ``mcviz compare --engine`` on a sample of a larger table: the engine measures every
    other number on all rows, so the sample's paths, calibration and classical measures
    (most of :func:`compare_models`' work) would be thrown away.
    """
    _check(pred)
    settings = CompareSettings(n_findings=n_findings, holdout=holdout, seed=seed)
    scores_b, name_b = _score_b(pred, score_b)
    names = [c for c in dict.fromkeys(covariates) if c != name_b]
    for name in names:
        pred.require_covariate(name, " to compare by")
    return _groups(pred, scores_b, names, settings, (None, None))


def _groups(pred: Predictions, scores_b: np.ndarray, names: list[str],
            settings: CompareSettings, run: tuple) -> GroupSearch:
    """The search on validated input, with the notes on the paths and the search."""
    notes = _nominal_note(pred, names)
    search, regressions, improvements = None, (), ()
    if not np.any(brier_loss(scores_b, pred.label) - brier_loss(pred.score, pred.label)):
        notes.append("The two scores give the same Brier loss on every row: there is no "
                     "group where one model is better.")
    elif not names:
        notes.append("No covariates: the search for groups where B is worse or better did "
                     "not run.")
    else:
        search, regressions, improvements = _search(pred, scores_b, names, settings, *run)
        if search.notice:
            notes.append(f"Search: {search.notice}")
    return GroupSearch(search=search, regressions=regressions, improvements=improvements,
                       notes=tuple(notes), settings=settings)


def _nominal_note(pred: Predictions, names: list[str]) -> list[str]:
    skipped = [name for name in names if pred.covariate_kinds.get(name) == "nominal"]
    return [f"Not ordered by the nominal covariates {', '.join(map(repr, skipped))} (no "
            "order); the search uses them."] if skipped else []


def _predictions_b(pred: Predictions, scores_b: np.ndarray, name_b: str) -> Predictions:
    """Model B's predictions: B's scores, the same labels and weights, sorted by B."""
    return dataclasses.replace(
        Predictions.from_arrays(scores_b, pred.label, pred.weight if pred.weighted else None,
                                response=pred.response_kind),
        score_column=name_b, label_column=pred.label_column,
        weights_depend_on_label=pred.weights_depend_on_label)


def _paths(pred: Predictions, scores_b: np.ndarray, name_b: str,
           names: list[str]) -> list[PairedPath]:
    """Return the paired paths by the average score, each score and each numeric covariate."""
    from mcviz.core.conditions import ordinal_values

    orders = [(AVERAGE_SCORE, (pred.score + scores_b) / 2.0), (pred.score_column, pred.score),
              (name_b, scores_b)]
    for name in names:
        if pred.covariate_kinds.get(name) != "nominal":
            orders.append((name, ordinal_values(pred.covariates[name])))
    paths = [paired_cumulative_differences(
        pred.score, scores_b, pred.label, order_values=values,
        weight=pred.weight if pred.weighted else None, order_by=name,
        void=pred.weights_depend_on_label) for name, values in orders]
    return paths


def _search_predictions(pred: Predictions, scores_b: np.ndarray,
                        names: list[str]) -> Predictions:
    """Rows for the search: score = the average score, label = it + d (exact on the grid)."""
    from mcviz.io import load_predictions

    average = np.round((pred.score + scores_b) / 2.0 / _GRID) * _GRID
    difference = brier_loss(scores_b, pred.label) - brier_loss(pred.score, pred.label)
    difference = np.round(difference / _GRID) * _GRID
    frame = pred.covariates[names].copy()
    score_name, label_name, weight_name = (_fresh(f"{base}", names) for base in (
        AVERAGE_SCORE, "Brier difference (B - A)", "weight"))
    frame[score_name] = average
    frame[label_name] = average + difference  # exact: both on the 2^-30 grid
    if pred.weighted:
        frame[weight_name] = pred.weight
    kinds = pred.covariate_kinds
    searched = load_predictions(
        frame, score=score_name, label=label_name,
        weight=weight_name if pred.weighted else False, covariates=names,
        nominal=[c for c in names if kinds[c] == "nominal"],
        ordinal=[c for c in names if kinds[c] != "nominal"], response="continuous")
    # The search adds bands of its score ("where the model says ...") unless the score is a
    # covariate; the average score is in no file, so it is marked as one and not searched.
    return dataclasses.replace(searched, covariate_kinds=MappingProxyType(
        {**searched.covariate_kinds, score_name: "ordinal"}))


def _fresh(base: str, taken: list[str]) -> str:
    name = base
    while name in taken:
        name = f"{name}_"
    return name


def _search(pred: Predictions, scores_b: np.ndarray, names: list[str],
            settings: CompareSettings, budget, progress) -> tuple:
    """Run the search on the paired Brier difference; split its groups by direction."""
    from mcviz.search import search_subpopulations
    from mcviz.subpopulations import subpopulation_words

    searched = _search_predictions(pred, scores_b, names)
    result = search_subpopulations(searched, covariates=names,
                                   n_findings=2 * settings.n_findings,
                                   holdout=settings.holdout, seed=settings.seed, budget=budget,
                                   progress=progress)
    held = np.zeros(pred.n, dtype=bool)
    held[searched.row[result.holdout_index]] = True  # searched.row: positions in pred's order
    regressions, improvements = [], []
    for finding in result.findings:
        members = np.sort(searched.row[np.asarray(finding.subpopulation.index)])
        members.flags.writeable = False
        side = regressions if finding.mean_residual > 0 else (
            improvements if finding.mean_residual < 0 else None)
        if side is None or len(side) >= settings.n_findings:
            continue
        side.append(_finding(pred, scores_b, finding, members, held, len(side) + 1,
                             subpopulation_words(searched, finding.subpopulation)))
    return result, tuple(regressions), tuple(improvements)


def _finding(pred: Predictions, scores_b: np.ndarray, finding, members: np.ndarray,
             held: np.ndarray, rank: int, group: str) -> ComparisonFinding:
    rows = members[held[members]]
    weight, label = pred.weight[rows], pred.label[rows]
    return comparison_finding(finding, rank=rank, group=group, size=int(members.size),
                              n=pred.n, holdout_size=int(rows.size),
                              calibration_a=mean_interval(label - pred.score[rows], weight),
                              calibration_b=mean_interval(label - scores_b[rows], weight),
                              index=members)


def comparison_finding(finding, *, rank: int, group: str, size: int, n: int, holdout_size: int,
                       calibration_a: tuple, calibration_b: tuple,
                       index: np.ndarray) -> ComparisonFinding:
    """A search finding on the paired difference as a group where B is worse or better.

    ``finding`` is the search's (held-out effect, interval, D/sigma, p, Holm); ``size`` its
    rows among ``n``; ``calibration_a``/``_b`` the held-out (mean, low, high) of R - S under A
    and B. Confirmed: the search confirms it and the interval excludes 0 on its side. The one
    constructor for the in-memory comparison and the comparison on an engine.
    """
    from mcviz.compare.words import finding_sentence

    worse = finding.mean_residual > 0
    confirmed = bool(finding.confirmed and (finding.ci_low > 0 if worse else finding.ci_high < 0))
    share = size / n
    return ComparisonFinding(
        rank=rank, description=finding.description,
        sentence=finding_sentence(group or finding.description, share, finding.mean_residual,
                                  finding.ci_low, finding.ci_high, calibration_a[0],
                                  calibration_b[0], finding.p_adjusted, confirmed),
        size=int(size), share=share, effect=float(finding.mean_residual),
        ci_low=float(finding.ci_low), ci_high=float(finding.ci_high),
        kuiper_z=float(finding.holdout_kuiper_z), p_value=float(finding.p_value),
        p_adjusted=float(finding.p_adjusted), confirmed=confirmed,
        holdout_size=int(holdout_size), calibration_a=calibration_a[0],
        calibration_b=calibration_b[0],
        calibration_a_ci=(calibration_a[1], calibration_a[2]),
        calibration_b_ci=(calibration_b[1], calibration_b[2]),
        index=index, group=group,
    )
