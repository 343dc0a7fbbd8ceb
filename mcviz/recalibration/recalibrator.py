r"""The :class:`Recalibrator`: a fix of the scores, fitted on some rows, applied to any rows.

Methods
-------
``platt``
    Logistic regression of the response on :math:`\operatorname{logit} s` [1]:
    :math:`\hat p = \sigma(c + a \operatorname{logit} s)`.
``isotonic``
    The weighted isotonic (pool-adjacent-violators) regression of the response on the score
    [2], tied scores pooled first; each block's mean is shrunk by one pseudo-observation at the
    block's mean score, :math:`(\sum_b w y + \bar s_b)/(\sum_b w + 1)` with weights scaled to mean
    1 (so no block predicts exactly 0 or 1 and the log loss stays finite), and the scores in
    between blocks are interpolated linearly.
``beta``
    Beta calibration [3]: :math:`\hat p = \sigma(a \ln s - b \ln(1 - s) + c)`. If the scores
    of each class are beta distributed, :math:`s \mid y{=}k \sim \mathrm{Beta}(\alpha_k,
    \beta_k)`, the likelihood ratio is

    .. math::
        \frac{f_1(s)}{f_0(s)} = \frac{B(\alpha_0, \beta_0)}{B(\alpha_1, \beta_1)}\,
        s^{\alpha_1 - \alpha_0} (1 - s)^{\beta_1 - \beta_0},

    so by Bayes' rule :math:`\operatorname{logit} P(y{=}1 \mid s) = a \ln s - b \ln(1-s) + c`
    with :math:`a = \alpha_1 - \alpha_0`, :math:`b = \beta_0 - \beta_1` and :math:`c` collecting
    the constants and the prior odds: a logistic regression on the two features
    :math:`\ln s` and :math:`-\ln(1-s)`. As in [3] (Section 3.3) the map is kept monotone: when
    the fitted :math:`a` (or :math:`b`) is negative the regression is refitted without that
    feature (its coefficient 0).
``findings``
    :math:`\hat p = \sigma(c + a \operatorname{logit} s + \sum_k \beta_k 1\{x \in F_k\})`: one
    term per *confirmed* finding :math:`F_k` (Holm-adjusted held-out p below ``alpha``). The
    findings come from the guided search (:func:`mcviz.search_subpopulations`) run on the fit
    rows after a Platt fit, so they are what is left once the global distortion is removed;
    findings given by the caller must be confirmed or the fit is refused. Each term reads as
    "within F_k the odds are multiplied by :math:`e^{\beta_k}`".
``boost``
    Multicalibration boosting (:mod:`mcviz.recalibration._boost`, the scheme of MCGrad [4]).

Every method is fitted by weighted maximum likelihood (:mod:`mcviz.recalibration._logistic`).
The fitted map is JSON (:meth:`Recalibrator.to_json`): the method, its coefficients or knots,
the findings' descriptions in the filter language, the covariates and their kinds, the score
column and the mcviz version.

References
----------
.. [1] J. Platt, "Probabilistic outputs for support vector machines and comparisons to
   regularized likelihood methods", Advances in Large Margin Classifiers, 1999.
.. [2] B. Zadrozny, C. Elkan, "Transforming classifier scores into accurate multiclass
   probability estimates", KDD 2002.
.. [3] M. Kull, T. Silva Filho, P. Flach, "Beta calibration: a well-founded and easily
   implemented improvement on logistic calibration for binary classifiers", AISTATS 2017;
   eqs. (1)-(4), Section 3.3.
.. [4] N. Tax et al., "MCGrad: Multicalibration at Web Scale", KDD 2026.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import isotonic_regression
from scipy.special import expit

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.recalibration import _boost
from mcviz.recalibration._logistic import clip_probability, fit_logistic, logit
from mcviz.recalibration._split import holdout_split, rescored, subset

__all__ = ["FORMAT", "METHODS", "FixTerm", "Recalibrator"]

METHODS = ("platt", "isotonic", "beta", "findings", "boost")
FORMAT = "mcviz-recalibration-map"
PASSES = 3
"""The findings fix searches at most this many times (see ``_search_passes``)."""


def _version() -> str:
    from mcviz import __version__

    return __version__


@dataclass(frozen=True, slots=True)
class FixTerm:
    r"""One term of the ``findings`` fix.

    Attributes
    ----------
    description : str
        The finding in the filter language.
    coefficient : float
        Its log-odds shift :math:`\\beta_k`.
    p_adjusted : float
        The finding's Holm-adjusted held-out p-value in the search that found it.
    """

    description: str
    coefficient: float
    p_adjusted: float


class Recalibrator:
    """Fit a recalibration map on some rows; apply it to any rows with the same columns.

    Parameters
    ----------
    method : {"platt", "isotonic", "beta", "findings", "boost"}, default "platt"
        See the module docstring.
    covariates : sequence of str, optional
        ``findings`` and ``boost``: the covariates to search or to boost on (default all).
    findings : sequence of Finding, optional
        ``findings``: use these findings (each must be confirmed) instead of searching.
    alpha : float, default 0.05
        A finding is confirmed when its Holm-adjusted held-out p-value is below ``alpha``.
    max_conditions, n_findings : int
        ``findings``: the search's options (:func:`mcviz.search_subpopulations`).
    max_rounds : int, default 100
        ``boost``: at most this many rounds.
    trees : mapping, optional
        ``boost``: tree settings per round over :data:`~mcviz.recalibration.BOOST_TREES`
        (``n_trees``, ``learning_rate``, ``num_leaves``, ...; ``MCGRAD_TREES`` are MCGrad's).
    seed : int, default 0
        The search's split and the boosting's validation split.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(0.05, 0.95, 4000)
    >>> y = rng.random(4000) < expit(1.5 * logit(s))
    >>> fix = Recalibrator("platt").fit(Predictions.from_arrays(s, y))
    >>> [round(v, 1) for v in fix.coefficients]
    [0.0, 1.5]
    >>> Recalibrator.from_json(fix.to_json()).coefficients == fix.coefficients
    True
    """

    def __init__(self, method: str = "platt", *, covariates: Sequence[str] | None = None,
                 findings: Sequence | None = None, alpha: float = 0.05,
                 max_conditions: int = 3, n_findings: int = 5, max_rounds: int = 100,
                 trees: Mapping | None = None, seed: int = 0) -> None:
        if method not in METHODS:
            raise ValidationError(f"method must be one of {', '.join(METHODS)}, not {method!r}.")
        if not 0.0 < float(alpha) < 1.0:
            raise ValidationError(f"alpha must lie in (0, 1), not {alpha!r}.")
        self.method = method
        self.covariates = None if covariates is None else list(dict.fromkeys(covariates))
        self.findings = None if findings is None else tuple(findings)
        self.alpha = float(alpha)
        self.max_conditions, self.n_findings = int(max_conditions), int(n_findings)
        self.max_rounds, self.seed = int(max_rounds), int(seed)
        unknown = set(trees or {}) - set(_boost.BOOST_TREES)
        if unknown:
            raise ValidationError(f"trees: unknown setting(s) {', '.join(sorted(unknown))}; "
                                  f"known: {', '.join(_boost.BOOST_TREES)}.")
        self.trees = {**_boost.BOOST_TREES, **(trees or {})}
        self.params: dict | None = None
        self.score_column: str | None = None
        self.covariate_kinds: dict[str, str] = {}
        self.n_fit = 0
        self.notes: list[str] = []

    # ---------------------------------------------------------------------------------
    # fitting

    def fit(self, pred: Predictions, *, index: np.ndarray | None = None,
            progress: Callable[[float, str], None] | None = None) -> Recalibrator:
        """Fit the map on ``pred`` (or on the rows ``index``, sorted positions); return self.

        Raises
        ------
        ValidationError
            Responses outside [0, 1], unknown covariates, unconfirmed findings given, or
            LightGBM missing for ``boost``.
        """
        if not isinstance(pred, Predictions):
            raise ValidationError(f"fit needs Predictions, not {type(pred).__name__}.")
        if index is not None:
            pred = subset(pred, np.sort(np.asarray(index)))
        label = pred.label
        if np.any((label < 0) | (label > 1)):
            raise ValidationError(f"column {pred.label_column!r}: recalibration needs "
                                  "responses in [0, 1].", column=pred.label_column)
        self.score_column, self.n_fit, self.notes = pred.score_column, pred.n, []
        w = pred.weight / pred.weight.mean()
        fit = getattr(self, f"_fit_{self.method}")
        self.params = fit(pred, w, progress)
        return self

    def _fit_platt(self, pred: Predictions, w: np.ndarray, progress=None) -> dict:
        z = logit(pred.score)
        beta = fit_logistic(np.column_stack((np.ones_like(z), z)), pred.label, w)
        return {"intercept": float(beta[0]), "slope": float(beta[1])}

    def _fit_beta(self, pred: Predictions, w: np.ndarray, progress=None) -> dict:
        s = clip_probability(pred.score)
        features = np.column_stack((np.log(s), -np.log1p(-s)))
        design = np.column_stack((np.ones_like(s), features))
        beta = fit_logistic(design, pred.label, w)
        if beta[1] < 0 or beta[2] < 0:  # keep the map monotone (Kull et al., Section 3.3)
            keep = 2 if beta[1] < 0 else 1
            refit = fit_logistic(design[:, [0, keep]], pred.label, w)
            beta = np.zeros(3)
            beta[0], beta[keep] = refit
        return {"c": float(beta[0]), "a": float(beta[1]), "b": float(beta[2])}

    def _fit_isotonic(self, pred: Predictions, w: np.ndarray, progress=None) -> dict:
        ends = np.flatnonzero(pred.run_end)  # pool tied scores first
        starts = np.concatenate(([0], ends[:-1] + 1))
        x = pred.score[ends]
        weight = np.add.reduceat(w, starts)
        mean = np.add.reduceat(w * pred.label, starts) / weight
        fitted = isotonic_regression(mean, weights=weight, increasing=True)
        blocks = fitted.blocks
        block_weight = np.add.reduceat(weight, blocks[:-1])
        block_label = np.add.reduceat(weight * mean, blocks[:-1])
        block_score = np.add.reduceat(weight * x, blocks[:-1]) / block_weight
        value = np.maximum.accumulate((block_label + block_score) / (block_weight + 1.0))
        lo, hi = x[blocks[:-1]], x[blocks[1:] - 1]
        knots_x = np.ravel(np.column_stack((lo, hi)))
        knots_y = np.repeat(value, 2)
        keep = np.concatenate(([True], np.diff(knots_x) > 0))  # one-score blocks: one knot
        return {"x": knots_x[keep].tolist(), "y": knots_y[keep].tolist()}

    def _covariate_names(self, pred: Predictions) -> list[str]:
        names = list(pred.covariates.columns) if self.covariates is None else self.covariates
        for name in names:
            pred.require_covariate(name, f" for the {self.method} fix")
        if not names:
            raise ValidationError(f"the {self.method} fix needs covariates; the predictions "
                                  "have none.")
        return names

    def _fit_findings(self, pred: Predictions, w: np.ndarray, progress=None) -> dict:
        from mcviz.subpopulations import parse_filter

        if self.findings is None:
            found, descriptions, beta = self._search_passes(pred, w, progress)
        else:
            found = self.findings
            unconfirmed = [f for f in found if not f.p_adjusted < self.alpha]
            if unconfirmed:
                listed = "; ".join(f"{f.description!r} (p adjusted {f.p_adjusted:.3g})"
                                   for f in unconfirmed)
                raise ValidationError(
                    f"the findings fix adds terms for confirmed findings only (Holm-adjusted "
                    f"held-out p below {self.alpha:g}); not confirmed: {listed}.")
            descriptions = list(dict.fromkeys(f.description for f in found))
            beta = fit_logistic(_findings_design(pred, descriptions), pred.label, w)
        confirmed = [f for f in found if f.p_adjusted < self.alpha]
        for f in {f.description: f for f in found if f not in confirmed}.values():
            self.notes.append(f"no term for {f.description!r}: not confirmed "
                              f"(Holm-adjusted held-out p {f.p_adjusted:.3g}).")
        p_adjusted = {f.description: float(f.p_adjusted) for f in confirmed}
        if not descriptions:
            self.notes.append("no confirmed finding: the findings fix is the Platt fit alone.")
        used = sorted({c.column for d in descriptions for c in parse_filter(d, pred)})
        self.covariate_kinds = {name: pred.covariate_kinds[name] for name in used}
        return {"intercept": float(beta[0]), "slope": float(beta[1]),
                "terms": [{"description": d, "coefficient": float(b),
                           "p_adjusted": p_adjusted[d]}
                          for d, b in zip(descriptions, beta[2:], strict=True)]}

    def _search_passes(self, pred: Predictions, w: np.ndarray, progress=None):
        """Search the rows as fixed so far, add the confirmed findings as terms, refit; again.

        Pass 1 searches after the Platt fit; pass k + 1 after the fix of pass k, so that a
        segment the first terms got wrong (the overlap of two findings, say) is found too.
        Stops after :data:`PASSES` passes or when a pass confirms nothing new.
        """
        from mcviz.search import search_subpopulations

        names = self._covariate_names(pred)
        found: list = []
        descriptions: list[str] = []
        beta = fit_logistic(_findings_design(pred, []), pred.label, w)
        for k in range(PASSES):
            scores = expit(_findings_design(pred, descriptions) @ beta)
            adjusted, _ = rescored(pred, scores)
            step = None if progress is None else (
                lambda f, t, k=k: progress((k + f) / PASSES, f"search {k + 1}: {t}"))
            result = search_subpopulations(
                adjusted, covariates=names, max_conditions=self.max_conditions,
                n_findings=self.n_findings, seed=self.seed + k, progress=step)
            usable = self._covariate_findings(result.findings, adjusted.score_column)
            new = [f for f in usable
                   if f.p_adjusted < self.alpha and f.description not in descriptions]
            found += [f for f in usable if f.description not in descriptions]
            if not new:
                break
            descriptions += [f.description for f in new]
            beta = fit_logistic(_findings_design(pred, descriptions), pred.label, w)
        return found, descriptions, beta

    def _covariate_findings(self, findings: Sequence, score_column: str) -> list:
        """Return the findings a term can be made of: those bounding no score of a pass.

        The search may bound the score it is given (a band "where the model says"); in a pass
        that score is the fix so far (column ``<score>_recalibrated``), which no term on the
        input rows can name. Such findings are left out, with a note.
        """
        usable = []
        for finding in findings:
            if any(c.column == score_column for c in finding.subpopulation.conditions):
                self.notes.append(f"no term for {finding.description!r}: it bounds the scores "
                                  "as fixed so far, not a covariate.")
            else:
                usable.append(finding)
        return usable

    def _fit_boost(self, pred: Predictions, w: np.ndarray, progress=None) -> dict:
        names = self._covariate_names(pred)
        self.covariate_kinds = {name: pred.covariate_kinds[name] for name in names}
        features, spec = _boost.encode_covariates(pred.covariates, self.covariate_kinds)
        _, valid_rows = holdout_split(pred, _boost.VALID_SHARE, self.seed)
        valid = np.zeros(pred.n, dtype=bool)
        valid[valid_rows] = True
        categorical = [k for k, item in enumerate(spec) if item["kind"] == "nominal"]
        params = _boost.boost_fit(features, categorical, pred.score, pred.label, w, valid,
                                  max_rounds=self.max_rounds, trees=self.trees,
                                  progress=progress)
        params["features"] = spec
        if params["n_rounds"] == 0:
            self.notes.append("boosting stopped before its first round: no round lowered the "
                              "validation log loss (the map is the identity).")
        return params

    # ---------------------------------------------------------------------------------
    # applying

    @property
    def fitted(self) -> bool:
        """True once :meth:`fit` ran (or the map was read)."""
        return self.params is not None

    @property
    def coefficients(self) -> list[float]:
        """Platt, findings: [intercept, slope, terms...]; beta: [c, a, b]; else []."""
        p = self._params()
        if self.method in ("platt", "findings"):
            return [p["intercept"], p["slope"], *(t["coefficient"] for t in p.get("terms", ()))]
        if self.method == "beta":
            return [p["c"], p["a"], p["b"]]
        return []

    @property
    def terms(self) -> tuple[FixTerm, ...]:
        """The terms of the ``findings`` fix (empty for other methods)."""
        return tuple(FixTerm(t["description"], t["coefficient"], t["p_adjusted"])
                     for t in self._params().get("terms", ()))

    def _params(self) -> dict:
        if self.params is None:
            raise ValidationError("the recalibrator is not fitted: call fit() first.")
        return self.params

    def transform(self, pred: Predictions, *, index: np.ndarray | None = None) -> np.ndarray:
        """Return the recalibrated scores of ``pred``'s rows (score order), or of ``index``.

        Raises
        ------
        ValidationError
            Not fitted, or a covariate the map needs is not in ``pred``.
        """
        params = self._params()
        for name, kind in self.covariate_kinds.items():
            pred.require_covariate(name, " (the recalibration map uses it)")
            if pred.covariate_kinds[name] != kind:
                raise ValidationError(
                    f"column {name!r} is {pred.covariate_kinds[name]} here but was {kind} "
                    "when the map was fitted.", column=name)
        score = pred.score
        if self.method == "platt":
            out = _platt(params, score)
        elif self.method == "beta":
            s = clip_probability(score)
            out = expit(params["c"] + params["a"] * np.log(s) - params["b"] * np.log1p(-s))
        elif self.method == "isotonic":
            out = np.interp(score, params["x"], params["y"])
        elif self.method == "findings":
            out = self._findings_scores(params, pred)
        else:
            features, _ = _boost.encode_covariates(pred.covariates, self.covariate_kinds,
                                                   params["features"])
            out = _boost.boost_transform(params, features, score)
        out = np.asarray(out, dtype=float)
        return out if index is None else out[np.asarray(index)]

    @staticmethod
    def _findings_scores(params: dict, pred: Predictions) -> np.ndarray:
        from mcviz.subpopulations import parse_filter, select_rows

        eta = params["intercept"] + params["slope"] * logit(pred.score)
        for term in params["terms"]:
            rows = select_rows(pred, parse_filter(term["description"], pred))
            eta[rows] += term["coefficient"]
        return expit(eta)

    # ---------------------------------------------------------------------------------
    # the saved map

    def to_dict(self) -> dict:
        """Return the map as a JSON-able dict (see :meth:`to_json`)."""
        return {"format": FORMAT, "mcviz_version": _version(), "method": self.method,
                "score_column": self.score_column, "covariates": self.covariate_kinds,
                "n_fit": self.n_fit, "alpha": self.alpha, "seed": self.seed,
                "notes": list(self.notes), "params": self._params()}

    def to_json(self) -> str:
        """Return the map as JSON text.

        It holds the method, its coefficients or knots (or the boosted trees), the findings'
        descriptions in the filter language, the covariates and their kinds, the score column
        and the mcviz version.
        """
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Recalibrator:
        """Read a map written by :meth:`to_json`.

        Raises
        ------
        ValidationError
            Not a map, or a map from another mcviz version.
        """
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as error:
            raise ValidationError(f"recalibration map: not JSON ({error}).") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValidationError("recalibration map: not a map written by mcviz fix "
                                  f"(no \"format\": \"{FORMAT}\").")
        version = data.get("mcviz_version")
        if version != _version():
            raise ValidationError(f"recalibration map: written by mcviz {version}, this is "
                                  f"mcviz {_version()}; fit it again with this version.")
        try:
            fix = cls(data["method"], alpha=data["alpha"], seed=data["seed"])
            fix.score_column = data["score_column"]
            fix.covariate_kinds = {str(k): str(v) for k, v in data["covariates"].items()}
            fix.n_fit, fix.notes, fix.params = int(data["n_fit"]), list(data["notes"]), \
                dict(data["params"])
        except (KeyError, TypeError, AttributeError) as error:
            raise ValidationError(f"recalibration map: missing or malformed {error}.") from None
        return fix

    def describe(self) -> str:
        """Describe the fitted map in one line."""
        p = self._params()
        if self.method == "platt":
            return (f"Platt: logit p = {p['intercept']:.3g} + {p['slope']:.3g} · logit s")
        if self.method == "beta":
            return (f"beta: logit p = {p['c']:.3g} + {p['a']:.3g} · ln s − {p['b']:.3g} · "
                    "ln(1 − s)")
        if self.method == "isotonic":
            return f"isotonic: {len(p['x']):,} knots"
        if self.method == "findings":
            terms = "".join(f" {t['coefficient']:+.3g} · [{t['description']}]"
                            for t in p["terms"])
            return f"findings: logit p = {p['intercept']:.3g} + {p['slope']:.3g} · logit s{terms}"
        return f"boost: {p['n_rounds']} rounds of {p['trees']['n_trees']} trees"


def _findings_design(pred: Predictions, descriptions: Sequence[str]) -> np.ndarray:
    """Columns 1, logit s and one indicator per finding."""
    from mcviz.subpopulations import parse_filter, select_rows

    columns = [np.ones(pred.n), logit(pred.score)]
    for description in descriptions:
        indicator = np.zeros(pred.n)
        indicator[select_rows(pred, parse_filter(description, pred))] = 1.0
        columns.append(indicator)
    return np.column_stack(columns)


def _platt(params: dict, score: np.ndarray) -> np.ndarray:
    return expit(params["intercept"] + params["slope"] * logit(score))


def frame_for_scoring(frame: pd.DataFrame, fix: Recalibrator, *, score: str | None = None
                      ) -> Predictions:
    """Predictions of a file to score: its score column and the covariates the map uses.

    No label is needed. The covariates keep the kinds they had at fit (nominal columns as
    categories, ordinal ones as numbers or dates); a column missing from the file, or holding
    text where the map expects numbers, is refused.

    Raises
    ------
    ValidationError
    """
    from mcviz.io import load_predictions
    from mcviz.io.covariates import covariates_in_order

    column = score or fix.score_column
    if column not in frame.columns:
        raise ValidationError(f"column {column!r} (the score the map was fitted on) is not in "
                              f"the file; columns: {', '.join(map(str, frame.columns[:20]))}.",
                              column=column)
    missing = [name for name in fix.covariate_kinds if name not in frame.columns]
    if missing:
        listed = ", ".join(map(repr, missing))
        raise ValidationError(f"the recalibration map needs column(s) {listed}, missing in "
                              "the file.", column=missing[0])
    for name, kind in fix.covariate_kinds.items():
        series = frame[name]
        if kind == "ordinal" and not (pd.api.types.is_numeric_dtype(series)
                                      or pd.api.types.is_datetime64_any_dtype(series)):
            raise ValidationError(f"column {name!r} holds {series.dtype} values; the map "
                                  "treats it as a number.", column=name)
    work = pd.DataFrame({"__score": frame[column].to_numpy(), "__label": 0})
    work.columns = [column if c == "__score" else c for c in work.columns]
    base = load_predictions(work, score=column, label="__label", weight=False, covariates=[])
    covariates = covariates_in_order(frame[list(fix.covariate_kinds)].reset_index(drop=True),
                                     fix.covariate_kinds, base.row)
    from dataclasses import replace

    return replace(base, covariates=covariates, covariate_kinds=dict(fix.covariate_kinds))
