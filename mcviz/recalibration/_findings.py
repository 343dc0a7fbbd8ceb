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

The fit. The findings come from the guided search (:func:`mcviz.search_subpopulations`) run on
the fit rows after a Platt fit (pass 1), then on the rows as fixed so far (passes 2, 3: a
segment the first terms got wrong is found too); only findings confirmed at ``alpha`` / 3 (the
level spent over the three passes) get a term. After each
pass the map is refitted: the base on the rows outside every finding (so the bands a term does
not target keep the Platt fit of their own rows; all rows when fewer than a fifth of the weight
lies outside), then each term on its finding's rows given the map so far.
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
from mcviz.recalibration._split import rescored
from mcviz.recalibration.method import RecalibrationMethod

__all__ = ["PASSES", "SHAPES", "FindingsMethod", "is_confirmed"]

PASSES = 3
"""The findings fix searches at most this many times."""
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
    """Fit the base and one term per description (module docstring: the fit)."""
    masks = _masks(pred, descriptions)
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
    seconds_per_row = 9e-6
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
                  if not is_confirmed(f, level)}.values():
            fix.notes.append(f"no term for {f.description!r}: not confirmed at {level:.2g} "
                             f"(Holm-adjusted held-out p {f.p_adjusted:.3g}).")
        if not descriptions:
            fix.notes.append("no confirmed finding: the findings fix is the Platt fit alone.")
        used = sorted({c.column for d in descriptions for c in parse_filter(d, pred)}
                      - {pred.score_column})  # a band of the model's own score needs no covariate
        fix.covariate_kinds = {name: pred.covariate_kinds[name] for name in used}
        return params

    def _search_passes(self, fix, pred, w, level: float, progress=None):
        """Search the rows as fixed so far, add the confirmed findings as terms, refit; again.

        A finding gets a term when its Holm-adjusted p is below ``level`` (``alpha`` over the
        passes, Bonferroni: a chance term in any pass has probability at most ``alpha``).
        """
        from mcviz.search import search_subpopulations

        names = covariate_names(fix, pred)
        found: list = []
        descriptions: list[str] = []
        p_adjusted: dict[str, float] = {}
        params = fit_terms(pred, w, [], {})
        for k in range(PASSES):
            scores = expit(map_logits(params, pred.score, _masks(pred, descriptions)))
            adjusted, _ = rescored(pred, scores)
            step = None if progress is None else (
                lambda f, t, k=k: progress((k + f) / PASSES, f"search {k + 1}: {t}"))
            result = search_subpopulations(
                adjusted, covariates=names, max_conditions=fix.max_conditions,
                n_findings=fix.n_findings, seed=fix.seed + k, progress=step)
            usable = _covariate_findings(fix, result.findings, adjusted.score_column)
            new = [f for f in usable
                   if is_confirmed(f, level) and f.description not in descriptions]
            found += [f for f in usable if f.description not in descriptions]
            if not new:
                break
            descriptions += [f.description for f in new]
            p_adjusted.update({f.description: float(f.p_adjusted) for f in new})
            params = fit_terms(pred, w, descriptions, p_adjusted)
        return found, descriptions, params

    def transform(self, fix, params, pred):
        masks = _masks(pred, [t["description"] for t in params["terms"]])
        return expit(map_logits(params, pred.score, masks))

    def describe(self, params) -> str:
        base = f"logit p = {params['intercept']:.3g} + {params['slope']:.3g} · logit s"
        terms = "".join(f"; {describe_term(t)}" for t in params["terms"])
        return f"findings: {base}{terms}" if terms else f"findings: {base} (no term)"

    def coefficients(self, params) -> list[float]:
        return [params["intercept"], params["slope"], *(t["b"] for t in params["terms"])]


@dataclass(frozen=True, slots=True)
class _Covariates:
    """A finding's covariate conditions (its score bounds dropped) and its adjusted p."""

    description: str
    p_adjusted: float
    p_kind: str


def _covariate_findings(fix, findings: Sequence, score_column: str) -> list:
    """Return the findings a term can be made of, each on covariates only.

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
            usable.append(finding)
        elif not kept:
            fix.notes.append(f"no term for {finding.description!r}: it bounds the scores as "
                             "fixed so far, and no covariate.")
        else:
            description = describe_conditions(kept)
            fix.notes.append(f"{finding.description!r} bounds the scores as fixed so far: its "
                             f"term is fitted on {description!r} (its covariates).")
            usable.append(_Covariates(description, float(finding.p_adjusted), finding.p_kind))
    return usable
