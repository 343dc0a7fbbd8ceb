r"""The ``findings`` fix: a Platt step, then one term per confirmed finding, in the shape it has.

The map. A base :math:`\eta_0 = c + a \operatorname{logit} s`, then the terms in order; term
:math:`k` changes the rows of its finding :math:`F_k` only, in one of three shapes:

* ``offset``: :math:`\eta \mapsto \eta + b_k` (the odds within :math:`F_k` times :math:`e^{b_k}`);
* ``slope``: :math:`\eta \mapsto a_k \eta + b_k` (a model too extreme, or too timid, within
  :math:`F_k`: its logits shrunk or stretched);
* ``additive``: :math:`p \mapsto p + b_k` (the rate within :math:`F_k` shifted by :math:`b_k`
  at every score, which no logit offset can follow; clipped to [1e-4, 1 - 1e-4] when applied).

Each is monotone in the score within :math:`F_k` (for :math:`a_k > 0`; a slope fitted negative
is refused in favour of the other shapes). The shape is chosen on the fit rows of :math:`F_k` by
the smallest BIC, :math:`2\,\mathrm{NLL} + q \ln W_k` (:math:`q` = 1, 2, 1 parameters;
:math:`W_k` the weight of :math:`F_k`, weights scaled to mean 1), each shape fitted by weighted
maximum likelihood given the map so far.

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
BASE_SHARE = 0.2
"""The base is fitted outside the findings when at least this share of the weight lies there."""


def is_confirmed(finding, alpha: float) -> bool:
    """Return whether the finding's Holm-adjusted held-out p-value is below ``alpha``."""
    return bool(finding.p_adjusted < alpha)


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


def _fit_shape(eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict:
    """Fit the three shapes on one finding's rows; return the one of least BIC (module doc)."""
    penalty = np.log(max(float(w.sum()), 2.0))
    ones = np.ones((eta.size, 1))
    b = float(fit_logistic(ones, y, w, offset=eta)[0])
    fits = [({"shape": "offset", "a": 1.0, "b": b}, _nll(expit(eta + b), y, w), 1)]
    b0, a = fit_logistic(np.column_stack((ones[:, 0], eta)), y, w)
    if a > 0:
        fits.append(({"shape": "slope", "a": float(a), "b": float(b0)},
                     _nll(expit(a * eta + b0), y, w), 2))
    p = expit(eta)
    low, high = ADDITIVE_CLIP - p.min(), 1.0 - ADDITIVE_CLIP - p.max()
    if low < high:
        best = minimize_scalar(lambda d: _nll(p + d, y, w), bounds=(low, high),
                               method="bounded", options={"xatol": 1e-9})
        fits.append(({"shape": "additive", "a": 0.0, "b": float(best.x)}, float(best.fun), 1))
    term, _, _ = min(fits, key=lambda item: 2.0 * item[1] + item[2] * penalty)
    return term


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
    z = logit(pred.score)
    beta = fit_logistic(np.column_stack((np.ones(int(base_rows.sum())), z[base_rows])),
                        pred.label[base_rows], w[base_rows])
    eta = beta[0] + beta[1] * z
    terms = []
    for description, mask in zip(descriptions, masks, strict=True):
        term = {"description": description,
                **_fit_shape(eta[mask], pred.label[mask], w[mask]),
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
        used = sorted({c.column for d in descriptions for c in parse_filter(d, pred)})
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


def _covariate_findings(fix, findings: Sequence, score_column: str) -> list:
    """Return the findings a term can be made of: those bounding no score of a pass.

    The search may bound the score it is given (a band "where the model says"); in a pass that
    score is the fix so far (column ``<score>_recalibrated``), which no term on the input rows
    can name. Such findings are left out, with a note.
    """
    usable = []
    for finding in findings:
        if any(c.column == score_column for c in finding.subpopulation.conditions):
            fix.notes.append(f"no term for {finding.description!r}: it bounds the scores as "
                             "fixed so far, not a covariate.")
        else:
            usable.append(finding)
    return usable
