r"""The ``findings`` fix: a Platt step, then one term per confirmed finding, in the shape it has.

The map. A base :math:`\eta_0 = c + a \operatorname{logit} s`, then the terms in order; term
:math:`k` changes the rows of its finding :math:`F_k` only, in one of three shapes:

* ``offset``: :math:`\eta \mapsto \eta + b_k` (the odds within :math:`F_k` times :math:`e^{b_k}`);
* ``slope``: :math:`\eta \mapsto a_k \eta + b_k` (a model too extreme, or too timid, within
  :math:`F_k`: its logits shrunk or stretched);
* ``additive``: :math:`p \mapsto p + b_k` (the rate within :math:`F_k` shifted by :math:`b_k`
  at every score, which no logit offset can follow; clipped to [1e-4, 1 - 1e-4], in the fit
  too, :math:`|b_k| \le 0.5`).

Each is monotone in the score within :math:`F_k` (for :math:`a_k > 0`; a slope fitted negative
is refused in favour of the other shapes). The shape is chosen on the fit rows of :math:`F_k` by
two-fold cross-validation (each shape fitted by weighted maximum likelihood on one half, given
the map so far, and scored by the weighted log loss of the other half; the folds are the parity
of the rows' rank in the search's tie order, :func:`mcviz.search.canonical_order`, so they
alternate along the score and do not depend on the order of tied rows): the offset unless
another shape's out-of-fold gain over it exceeds 1.96 standard errors of that gain (the simplest
shape unless the data clearly ask for another). Measured on the planted data at 2 x 10^5 rows
(seed 0): BIC, and plain cross-validation, both took a chance slope in an offset segment (out-
of-fold gain 3.9 nats) that left held-out D/sigma 3.1 in it.

The fit. Candidates come from the guided search (:func:`mcviz.search_subpopulations`) run on
the fit rows after a Platt fit (pass 1), then on the rows as fixed so far (passes 2, 3: a
segment the first terms got wrong is found too). Each pass searches two views of the same rows:
the probabilities as fixed so far, and their top-label form (the chance of an error,
:func:`~mcviz.recalibration._split.top_label`: score :math:`\min(s, 1-s)`, label 1 on a miss).
Why two. The search ranks groups by the range of the cumulative differences in score order
(Kuiper, eqs. (2), (5) of [1]). Within a group where the model is too extreme (true logit
:math:`c\,\eta` with :math:`c < 1`) the differences are positive below :math:`p = 1/2` and
negative above, so the walk rises, then falls back: the range is about the rise alone, and the
search reports the group cut to one side of the scores (a band "score < 0.34 and ..."), whose
covariate part is a larger group (measured on the planted data at 2 x 10^5 rows: "age < 44 and
channel != web" for the planted "age < 35 and channel == phone", a term diluted to D/sigma 3.3).
In the top-label view every row's difference has the sign of the group's over-confidence,
on both sides of 1/2, so the walk keeps rising: the range is the sum of both parts (measured:
held-out D/sigma 4.1 in place of 3.0-3.6 for the planted group on 5 x 10^4 rows). The view keeps
a calibrated model calibrated (:math:`E[y' | x] = s'` iff :math:`E[y | x] = s`, the same
Bernoulli variance), so the search's statistics stay valid; binary responses only.

A candidate is the finding's covariate conditions (a bound on the score as fixed so far cannot
be applied to new rows by a term: it is dropped, with a note). Each pass splits the fit rows
anew (the score-stratified split of :func:`~mcviz.recalibration._split.holdout_split`, seed
``seed + pass``) into search rows and test rows (:data:`~mcviz.settings.FIX_TERM_TEST_SHARE`,
half): both views are searched on the search rows only, every candidate is refined there to the
group its term fits best, and the groups a term fits best are also sought from scratch
(:mod:`~mcviz.recalibration._refine`: coordinate ascent on the score statistic of the term, with
a cost per condition), which sets the order of the candidates. Then each candidate's term is
tested on the test rows -- never seen by the searches or the refinement, so the p-values are
valid however the candidates were chosen (the map so far was fitted on all fit rows; that fit
pulls the residuals of its own groups toward 0 there, which makes the test conservative, not
liberal) -- by the score test of adding :math:`b + a\eta` to the logits of its rows
(:func:`score_tests`, 2 degrees of freedom: an offset, a slope or both), adjusted over the
candidates by Holm's weighted procedure with weights halving along the order (the first tested
at about ``alpha / 2``), step-down, each step on the logits adjusted by the terms of the
candidates it accepted before (fitted on the test rows: :func:`stepwise_tests`; a broad group
is not given a term for the groups inside it); a candidate gets a term when its adjusted p is
below ``alpha / passes`` (Bonferroni over the passes: a chance term anywhere has probability
at most ``alpha``, and on calibrated rows at most ``alpha / passes``, since a pass runs only
after one that added a term). Why the score test and not the search's own held-out p
(the range of the walk): a term has a shape, and the score test for it is far more powerful
against it than the range, which is built to detect any shape (measured on the planted slope
group, 3.4 x 10^3 held-out rows: score test p 1e-5 to 1e-6 against a range p near 3e-3, seeds
0-2). Why the refinement, the test rows and the order: measured on the planted data at 2 x
10^5 rows, seed 2 (:func:`~mcviz.recalibration.simulate.planted_shapes_data`), the searches
proposed parts of the planted slope segment ("age in [24.7, 35)", "channel == phone"), never the
segment; the true segment's p on the searches' own 3 x 10^4 held-out rows was 0.002 to 0.02, and
Holm over 5 candidates at ``alpha / 6`` asked for 0.0017: the slope segment kept held-out
D/sigma 5.6. With the changes its term is "channel == phone and age < 36.4" (p 0.0009 on the
test rows; D/sigma after 2.4).
After each pass the map is refitted: the base on the rows outside every
term's group (so the bands a term does not target keep the Platt fit of their own rows; all
rows when fewer than a fifth of the weight lies outside), then each term on its group's rows
given the map so far. Reviewed findings passed in (``Recalibrator(findings=...)``) must be
confirmed by the search's rule (:func:`mcviz.search.is_confirmed`) and get a term each, with no
search.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit

from mcviz.errors import ValidationError
from mcviz.recalibration._builtin import covariate_names
from mcviz.recalibration._logistic import fit_logistic, logit
from mcviz.recalibration._refine import refine_candidates
from mcviz.recalibration._split import holdout_split, rescored, subset, top_label
from mcviz.recalibration.method import RecalibrationMethod

__all__ = ["PASSES", "SHAPES", "FindingsMethod", "is_confirmed", "stepwise_tests",
           "weighted_holm"]

PASSES = 3
"""The findings fix searches at most this many times."""
VIEWS = ("the probability", "the chance of an error")
"""What each pass searches: the scores as fixed so far, and their top-label form
(:func:`~mcviz.recalibration._split.top_label`; binary responses only)."""
SHAPES = ("offset", "slope", "additive")
ADDITIVE_CLIP = 1e-4
ADDITIVE_RANGE = 0.5
Z_95 = 1.959963984540054
BASE_SHARE = 0.2
"""The base is fitted outside the findings when at least this share of the weight lies there."""


def is_confirmed(finding, level: float) -> bool:
    """Say whether the finding is confirmed at ``level`` (the search's one rule, at that level).

    :func:`mcviz.search.is_confirmed` (a valid held-out p-value, Holm-adjusted, below the
    level); at ``alpha`` = 0.05 it is ``Finding.confirmed`` itself.
    """
    from mcviz.search import is_confirmed as confirmed

    return confirmed(finding.p_kind, finding.p_adjusted, alpha=level)


def _masks(pred, descriptions: Sequence[str]) -> list[np.ndarray]:
    from mcviz.subpopulations import parse_filter, select_rows

    masks = []
    for description in descriptions:
        mask = np.zeros(pred.n, dtype=bool)
        mask[select_rows(pred, parse_filter(description, pred))] = True
        masks.append(mask)
    return masks


def _nll(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-(w @ (y * np.log(p) + (1 - y) * np.log1p(-p))))


def _fit_one(shape: str, eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict | None:
    """Fit one shape by weighted maximum likelihood (None: it cannot be fitted here)."""
    if shape == "offset":
        b = float(fit_logistic(np.ones((eta.size, 1)), y, w, offset=eta)[0])
        return {"shape": "offset", "a": 1.0, "b": b}
    if shape == "slope":
        b, a = fit_logistic(np.column_stack((np.ones_like(eta), eta)), y, w)
        return {"shape": "slope", "a": float(a), "b": float(b)} if a > 0 else None
    p = expit(eta)
    best = minimize_scalar(
        lambda d: _nll(np.clip(p + d, ADDITIVE_CLIP, 1.0 - ADDITIVE_CLIP), y, w),
        bounds=(-ADDITIVE_RANGE, ADDITIVE_RANGE), method="bounded", options={"xatol": 1e-9})
    return {"shape": "additive", "a": 0.0, "b": float(best.x)}


def _row_loss(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -w * (y * np.log(p) + (1 - y) * np.log1p(-p))


def _fit_shape(eta: np.ndarray, y: np.ndarray, w: np.ndarray, fold: np.ndarray) -> dict:
    r"""Fit the shapes on one finding's rows; return the offset unless another beats it clearly.

    Two folds (``fold``, the parity of the rows' rank in the search's tie order): each shape is
    fitted on one fold and scored on the other, row by row (weighted log loss, both ways). A
    slope or a shift replaces the offset only when its summed out-of-fold gain over the offset
    exceeds 1.96 standard errors of that sum (:math:`1.96\sqrt{k}\,\mathrm{sd}(g_i)` over the
    :math:`k` rows' gains :math:`g_i`); the chosen shape is refitted on all rows.
    """
    losses = {}
    for shape in SHAPES:
        loss = np.full(eta.size, np.inf)
        for k in (0, 1):
            train, test = fold != k, fold == k
            term = _fit_one(shape, eta[train], y[train], w[train]) if train.any() else None
            if term is None:
                break
            loss[test] = _row_loss(expit(_apply_term(term, eta[test])), y[test], w[test])
        losses[shape] = loss
    best, best_gain = "offset", 0.0
    for shape in SHAPES[1:]:
        gain = losses["offset"] - losses[shape]
        if not np.all(np.isfinite(gain)):
            continue
        total = float(gain.sum())
        if total > max(best_gain, Z_95 * np.sqrt(gain.size) * float(gain.std())):
            best, best_gain = shape, total
    return _fit_one(best, eta, y, w) or _fit_one("offset", eta, y, w)


def _apply_term(term: dict, eta: np.ndarray) -> np.ndarray:
    """Return the logits after one term (all of ``eta`` lies in the term's finding)."""
    if term["shape"] == "additive":
        p = np.clip(expit(eta) + term["b"], ADDITIVE_CLIP, 1.0 - ADDITIVE_CLIP)
        return logit(p)
    return term["a"] * eta + term["b"]


def map_logits(params: dict, score: np.ndarray, masks: Sequence[np.ndarray]) -> np.ndarray:
    """Return the map's logits: the base, then each term on its rows (``masks``, one per term)."""
    eta = params["intercept"] + params["slope"] * logit(score)
    for term, mask in zip(params["terms"], masks, strict=True):
        eta[mask] = _apply_term(term, eta[mask])
    return eta


def fit_terms(pred, w: np.ndarray, descriptions: Sequence[str],
              p_adjusted: dict[str, float]) -> dict:
    """Fit the base and one term per description (module docstring: the fit).

    The terms are fitted and applied from the largest group to the smallest (ties: in the order
    given), each on its rows given the map so far: a group within another gets its own term
    after the larger one's, which cannot then move it (measured: "channel == store" fitted after
    "region == r3 and channel == store" moved the planted logit shift there back to held-out
    D/sigma 4.0, 2 x 10^5 rows, seed 1).
    """
    masks = _masks(pred, descriptions)
    order = sorted(range(len(masks)), key=lambda k: -float(w[masks[k]].sum()))
    descriptions = [descriptions[k] for k in order]
    masks = [masks[k] for k in order]
    outside = ~np.logical_or.reduce(masks) if masks else np.ones(pred.n, dtype=bool)
    base_rows = outside if w[outside].sum() >= BASE_SHARE * w.sum() else np.ones(pred.n, bool)
    from mcviz.search import canonical_order

    fold = np.empty(pred.n, dtype=np.int64)
    fold[canonical_order(pred)] = np.arange(pred.n) % 2
    z = logit(pred.score)
    beta = fit_logistic(np.column_stack((np.ones(int(base_rows.sum())), z[base_rows])),
                        pred.label[base_rows], w[base_rows])
    eta = beta[0] + beta[1] * z
    terms = []
    for description, mask in zip(descriptions, masks, strict=True):
        term = {"description": description,
                **_fit_shape(eta[mask], pred.label[mask], w[mask], fold[mask]),
                "p_adjusted": float(p_adjusted[description])}
        eta[mask] = _apply_term(term, eta[mask])
        terms.append(term)
    return {"intercept": float(beta[0]), "slope": float(beta[1]), "terms": terms}


def describe_term(term: dict) -> str:
    """Say what one term does within its finding."""
    where = f"within [{term['description']}]"
    if term["shape"] == "offset":
        return f"{where} the odds × {np.exp(term['b']):.3g}"
    if term["shape"] == "slope":
        return f"{where} logit p × {term['a']:.3g} {term['b']:+.3g}"
    return f"{where} the rate {term['b'] * 100:+.2g} points"


class FindingsMethod(RecalibrationMethod):
    """A Platt step plus one shaped term per confirmed finding (module docstring)."""

    name = "findings"
    title = "findings: Platt plus one term per confirmed finding (offset, slope or shift)"
    needs_covariates = True
    seconds_per_row = 1.8e-5  # two searches per pass (was 9e-6 with one; bench_fix CPU)
    searches = True

    def fit(self, fix, pred, w, progress=None) -> dict:
        from mcviz.subpopulations import parse_filter

        level = fix.alpha / PASSES if fix.findings is None else fix.alpha
        if fix.findings is None:
            found, descriptions, params = self._search_passes(fix, pred, w, level, progress)
        else:
            found = fix.findings
            unconfirmed = [f for f in found if not is_confirmed(f, fix.alpha)]
            if unconfirmed:
                listed = "; ".join(f"{f.description!r} (p adjusted {f.p_adjusted:.3g})"
                                   for f in unconfirmed)
                raise ValidationError(
                    f"the findings fix adds terms for confirmed findings only (Holm-adjusted "
                    f"held-out p below {fix.alpha:g}); not confirmed: {listed}.")
            descriptions = list(dict.fromkeys(f.description for f in found))
            params = fit_terms(pred, w, descriptions,
                               {f.description: f.p_adjusted for f in found})
        for f in {f.description: f for f in found
                  if f.description not in descriptions}.values():
            fix.notes.append(f"no term for {f.description!r}: its held-out score test's "
                             f"adjusted p is {f.p_adjusted:.3g}, not below {level:.2g}.")
        if not descriptions:
            fix.notes.append("no finding held up on held-out rows: the findings fix is the Platt "
                             "fit alone.")
        used = sorted({c.column for d in descriptions for c in parse_filter(d, pred)}
                      - {pred.score_column})  # a band of the model's own score needs no covariate
        fix.covariate_kinds = {name: pred.covariate_kinds[name] for name in used}
        return params

    def _search_passes(self, fix, pred, w, level: float, progress=None):
        """Search the rows as fixed so far in both views, add the tested findings, refit; again.

        Each pass splits the fit rows anew (:func:`holdout_split`, share
        :data:`~mcviz.settings.FIX_TERM_TEST_SHARE` held out, seed ``fix.seed + pass``): both
        views are searched, and the candidates refined (:mod:`~mcviz.recalibration._refine`),
        on the other rows only, which also set their order; they are tested on the held-out
        rows (weighted Holm, weights halving along the order, step-down given the terms
        accepted before: :func:`stepwise_tests`); a candidate gets a term
        when its adjusted p is below ``level`` (``alpha`` over the passes, Bonferroni: a chance
        term anywhere has probability at most ``alpha``; module docstring).
        """
        from mcviz.settings import FIX_TERM_SEARCH_HOLDOUT, FIX_TERM_TEST_SHARE

        names = covariate_names(fix, pred)
        found: list = []
        descriptions: list[str] = []
        p_adjusted: dict[str, float] = {}
        params = fit_terms(pred, w, [], {})
        views = VIEWS if pred.response_kind == "binary" else VIEWS[:1]
        for k in range(PASSES):
            eta = map_logits(params, pred.score,
                             _masks(pred, [t["description"] for t in params["terms"]]))
            search_rows, _ = holdout_split(pred, FIX_TERM_TEST_SHARE, seed=fix.seed + k)
            adjusted, _ = rescored(subset(pred, search_rows), expit(eta[search_rows]))
            candidates = []
            for v, view in enumerate(views):
                step = _step(progress, (k * len(views) + v) / (PASSES * len(views)),
                             1 / (PASSES * len(views)), f"search {k + 1} ({view})")
                searched = adjusted if view == VIEWS[0] else top_label(adjusted)
                candidates += self._search(fix, searched, names, k, FIX_TERM_SEARCH_HOLDOUT,
                                           step)
            held = np.ones(pred.n, dtype=bool)
            held[search_rows] = False
            candidates = refine_candidates(pred, eta, w, candidates, held, names,
                                           fix.max_conditions, fix.notes)
            tested = stepwise_tests(pred, eta, w, candidates, held, level)
            usable = [f for f in tested if f.description not in descriptions]
            new = [f for f in usable if is_confirmed(f, level)]
            found += usable
            if not new:
                break
            descriptions += [f.description for f in new]
            p_adjusted.update({f.description: float(f.p_adjusted) for f in new})
            params = fit_terms(pred, w, descriptions, p_adjusted)
        return found, descriptions, params

    @staticmethod
    def _search(fix, searched, names, k: int, holdout: float, step) -> list[str]:
        """One guided search of one view: its findings on covariates (descriptions)."""
        from mcviz.search import search_subpopulations

        result = search_subpopulations(
            searched, covariates=names, max_conditions=fix.max_conditions,
            n_findings=fix.n_findings, seed=fix.seed + k, progress=step, holdout=holdout)
        return list(dict.fromkeys(_covariate_findings(fix, result.findings,
                                                      searched.score_column)))

    def transform(self, fix, params, pred):
        masks = _masks(pred, [t["description"] for t in params["terms"]])
        return expit(map_logits(params, pred.score, masks))

    def describe(self, params) -> str:
        base = f"logit p = {params['intercept']:.3g} + {params['slope']:.3g} · logit s"
        terms = "".join(f"; {describe_term(t)}" for t in params["terms"])
        return f"findings: {base}{terms}" if terms else f"findings: {base} (no term)"

    def coefficients(self, params) -> list[float]:
        return [params["intercept"], params["slope"], *(t["b"] for t in params["terms"])]


def _step(progress, start: float, share: float, label: str):
    """Return a search's progress callback, reporting a part of the fit's (None: no callback)."""
    if progress is None:
        return None
    return lambda f, t: progress(start + share * f, f"{label}: {t}")


@dataclass(frozen=True, slots=True)
class Tested:
    """A candidate term's finding (covariate conditions) and its held-out score test."""

    description: str
    p_value: float
    p_adjusted: float
    p_kind: str


def score_tests(pred, eta: np.ndarray, w: np.ndarray, descriptions: Sequence[str],
                held: np.ndarray, *, sequence: bool = False) -> list[Tested]:
    r"""Test each candidate's term on the search's held-out rows; adjust over the candidates.

    For the finding's held-out rows :math:`i` (logits :math:`\eta_i` of the map so far,
    :math:`p_i = \sigma(\eta_i)`, weights :math:`w_i`) the score statistic of adding
    :math:`b + a\eta` to the logit is :math:`U = \sum_i w_i x_i (y_i - p_i)` with
    :math:`x_i = (1, \eta_i)`; under calibration of these rows :math:`E[U] = 0` and
    :math:`V = \operatorname{Var} U = \sum_i w_i^2 p_i(1 - p_i) x_i x_i^\top`, so
    :math:`U^\top V^{-1} U` is :math:`\chi^2` with 2 degrees of freedom (1 when the logits do
    not vary: the offset alone). Rao's score test; the rows were not seen by the search that
    proposed the candidate, so the p-value is valid however the candidate was chosen. Void
    (no term) under weights that depend on the label, as the search's own p-values.

    The adjustment over the candidates: Holm's, or with ``sequence`` Holm's weighted procedure
    with weights halving along the order given (fixed before any held-out row is read; the
    first candidate is tested at :math:`\alpha/2`, the second at :math:`\alpha/4`, ..., and a
    rejected candidate's weight goes to the others: :func:`weighted_holm`). The family-wise
    error stays at most :math:`\alpha` for any weights fixed in advance; halving them spends
    most of it on the first candidates (the strongest on the search rows) while one chance
    group at the head of the order does not block the ones behind it, as it would in a fixed
    sequence (measured: a tiny group the search overfitted, first in order, p 0.96, ahead of
    two with p 0.001 and 0.002, 2 x 10^5 rows, seed 1).
    """
    from mcviz.search import holm

    p_values = [_score_p(pred, eta, w, mask & held) for mask in _masks(pred, descriptions)]
    if not p_values:
        adjusted = np.array([])
    elif sequence:
        adjusted = weighted_holm(np.asarray(p_values), 0.5 ** np.arange(len(p_values)))
    else:
        adjusted = holm(np.asarray(p_values))
    kind = "void" if pred.weights_depend_on_label else "score test"
    return [Tested(d, p, float(a), kind)
            for d, p, a in zip(descriptions, p_values, adjusted, strict=True)]


def _score_p(pred, eta: np.ndarray, w: np.ndarray, rows: np.ndarray) -> float:
    """Return the score test's p-value for a term on ``rows`` (a mask; :func:`score_tests`)."""
    from scipy.stats import chi2

    p = expit(eta[rows])
    x = np.column_stack((np.ones(int(rows.sum())), eta[rows]))
    u = x.T @ (w[rows] * (pred.label[rows] - p))
    v = (x * (w[rows] ** 2 * p * (1 - p))[:, None]).T @ x
    df = int(np.linalg.matrix_rank(v)) if rows.sum() >= 2 else 0
    q = float(u @ np.linalg.pinv(v) @ u) if df else 0.0
    return float(chi2.sf(q, df)) if df else 1.0


def stepwise_tests(pred, eta: np.ndarray, w: np.ndarray, descriptions: Sequence[str],
                   held: np.ndarray, level: float) -> list[Tested]:
    r"""Test the candidates on the held-out rows step-down, each given the terms accepted before.

    Holm's weighted procedure (weights halving along the order given, :func:`weighted_holm`)
    with one change: after each rejection the rejected candidate's term (its shape chosen as in
    the fit, :func:`_fit_shape`) is fitted on its held-out rows, and the candidates left are
    tested again on the logits so adjusted -- Rao's score test with that term as a nuisance
    parameter, estimated under the null (its variance is at most the plain :math:`V`, so the
    test is conservative). The first step is the weighted Bonferroni test of unadjusted
    p-values, so on calibrated rows a term is added with probability at most ``level``, as
    before. Why: tested on the map so far alone, a broad group holding a planted one ("channel
    != web" over "age < 35 and channel == phone" and "region == r3 and channel == store") is
    significant because of the groups inside it, and its term (odds x 1.11 on every row of two
    channels) moved bands no segment lies in (measured: 2 x 10^5 rows, seed 1, two bands beyond
    the bound, |z| 3.89; the slope segment kept held-out D/sigma 4.4). Given the planted groups'
    terms its p is that of a calibrated group.
    Returns the candidates in the order given, with the p-values of the step that decided them
    (adjusted: the running maximum, as in Holm's procedure).
    """
    from mcviz.search import canonical_order

    masks = [m & held for m in _masks(pred, descriptions)]
    weights = 0.5 ** np.arange(len(masks))
    fold = np.empty(pred.n, dtype=np.int64)
    fold[canonical_order(pred)] = np.arange(pred.n) % 2
    eta = eta.copy()
    left, raw, adjusted, running = list(range(len(masks))), {}, {}, 0.0
    while left:
        p = {k: _score_p(pred, eta, w, masks[k]) for k in left}
        total = float(weights[left].sum())
        k = min(left, key=lambda j: (p[j] / weights[j], j))
        running = max(running, min(1.0, p[k] * total / weights[k]))
        raw[k], adjusted[k] = p[k], running
        left.remove(k)
        if running >= level:
            rest = weighted_holm(np.array([p[j] for j in left]), weights[left]) if left else []
            adjusted.update({j: max(running, float(a)) for j, a in zip(left, rest, strict=True)})
            raw.update({j: p[j] for j in left})
            break
        rows = masks[k]
        term = _fit_shape(eta[rows], pred.label[rows], w[rows], fold[rows])
        eta[rows] = _apply_term(term, eta[rows])
    kind = "void" if pred.weights_depend_on_label else "score test"
    return [Tested(d, raw[k], adjusted[k], kind) for k, d in enumerate(descriptions)]


def weighted_holm(p_values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Return Holm's weighted adjusted p-values (Holm 1979, Section 5).

    With weights :math:`v_i > 0`, the hypotheses are taken in increasing :math:`p_i / v_i`;
    step :math:`j` rejects when :math:`p_{(j)} \le \alpha\, v_{(j)} / \sum_{k \ge j} v_{(k)}`
    (the weights of those not yet rejected), so the adjusted p is
    :math:`\tilde p_{(j)} = \max_{i \le j} \min(1, p_{(i)} \sum_{k \ge i} v_{(k)} / v_{(i)})`.
    Equal weights give Holm's procedure.

    Examples
    --------
    >>> weighted_holm(np.array([0.01, 0.04]), np.array([1.0, 1.0])).tolist()
    [0.02, 0.04]
    >>> weighted_holm(np.array([0.9, 0.004]), np.array([0.5, 0.25])).round(3).tolist()
    [0.9, 0.012]
    """
    p = np.asarray(p_values, dtype=float)
    v = np.asarray(weights, dtype=float)
    order = np.argsort(p / v, kind="stable")
    remaining = np.cumsum(v[order][::-1])[::-1]
    steps = np.maximum.accumulate(np.minimum(1.0, p[order] * remaining / v[order]))
    adjusted = np.empty_like(p)
    adjusted[order] = steps
    return adjusted


def _covariate_findings(fix, findings: Sequence, score_column: str) -> list[str]:
    """Return the findings a term can be made of, each on covariates only (descriptions).

    The search may bound the score it is given (a band "where the model says"); in a pass that
    score is the fix so far (column ``<score>_recalibrated``), which no term on the input rows
    can name. Such a finding keeps its covariate conditions (a segment whose error changes with
    the score -- a model too extreme within it -- shows as a band of scores; the term's slope
    shape follows it over all the segment's scores), with a note; one bounding the score alone
    is left out.
    """
    from mcviz.subpopulations import describe_conditions

    usable = []
    for finding in findings:
        conditions = finding.subpopulation.conditions
        kept = [c for c in conditions if c.column != score_column]
        if len(kept) == len(conditions):
            usable.append(finding.description)
        elif not kept:
            fix.notes.append(f"no term for {finding.description!r}: it bounds the scores as "
                             "fixed so far, and no covariate.")
        else:
            description = describe_conditions(kept)
            fix.notes.append(f"{finding.description!r} bounds the scores as fixed so far: it is "
                             f"tested, and fixed if it holds up, on {description!r} (its "
                             "covariates).")
            usable.append(description)
    return usable
