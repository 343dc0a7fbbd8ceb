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
    A Platt step, then one term per *confirmed* finding :math:`F_k` (Holm-adjusted held-out p
    below ``alpha``) in the shape it has on the fit rows: a logit offset, a slope on the logit,
    or an additive shift of the rate within :math:`F_k`
    (:mod:`mcviz.recalibration._findings`). The findings come from the guided search
    (:func:`mcviz.search_subpopulations`) run on the fit rows after a Platt fit, so they are
    what is left once the global distortion is removed; findings given by the caller must be
    confirmed or the fit is refused.
``boost``
    Multicalibration boosting (:mod:`mcviz.recalibration._boost`, the scheme of MCGrad [4]).

Each method is one registered object (:mod:`mcviz.recalibration.registry`). Every method is
fitted by weighted maximum likelihood (:mod:`mcviz.recalibration._logistic`). The fitted map is
JSON (:meth:`Recalibrator.to_json`, keys :data:`MAP_KEYS`): the method, its coefficients or
knots, the findings' descriptions in the filter language, the covariates and their kinds, the
score column, the mcviz version and the verdict of the held-out judgement (``verdict``: null
when the map was never judged; ``{"recommended": false, "reason": ...}`` for a fix its
judgement rejected, which ``mcviz apply`` refuses unless ``--force``).

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
from scipy.special import expit  # noqa: F401  (the doctest's namespace)

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.recalibration import _boost
from mcviz.recalibration._logistic import logit  # noqa: F401  (the doctest's namespace)
from mcviz.recalibration._split import subset
from mcviz.recalibration.registry import get_method, method_names

__all__ = ["FORMAT", "MAP_KEYS", "METHODS", "FixTerm", "Recalibrator", "frame_for_scoring"]

METHODS = method_names()
"""The methods registered when this module was imported (the registry is the truth)."""
FORMAT = "mcviz-recalibration-map"
MAP_KEYS = ("format", "mcviz_version", "method", "score_column", "covariates", "n_fit",
            "alpha", "seed", "notes", "verdict", "params")
"""The keys of a saved map (:meth:`Recalibrator.to_dict`), in order: the map's schema."""


def _version() -> str:
    from mcviz import __version__

    return __version__


@dataclass(frozen=True, slots=True)
class FixTerm:
    r"""One term of the ``findings`` fix (:mod:`mcviz.recalibration._findings`).

    Attributes
    ----------
    description : str
        The finding in the filter language.
    shape : {"offset", "slope", "additive"}
        What the term does within the finding: :math:`\eta + b`, :math:`a\eta + b`, or
        :math:`p + b`.
    a, b : float
        Its slope (1 for an offset, 0 for a shift) and its offset or shift.
    p_adjusted : float
        The finding's Holm-adjusted held-out p-value in the search that found it.
    """

    description: str
    shape: str
    a: float
    b: float
    p_adjusted: float

    @property
    def coefficient(self) -> float:
        """The term's offset (log-odds) or shift (rate): ``b``."""
        return self.b


class Recalibrator:
    """Fit a recalibration map on some rows; apply it to any rows with the same columns.

    Parameters
    ----------
    method : str, default "platt"
        A registered method (:func:`mcviz.recalibration.method_names`: ``findings``,
        ``platt``, ``isotonic``, ``beta``, ``boost``); see the module docstring.
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
        self.registered = get_method(method)
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
        self.verdict: dict | None = None

    # ---------------------------------------------------------------------------------
    # fitting

    def fit(self, pred: Predictions, *, index: np.ndarray | None = None,
            progress: Callable[[float, str], None] | None = None) -> Recalibrator:
        """Fit the map on ``pred`` (or on the rows ``index``, sorted positions); return self.

        Raises
        ------
        ValidationError
            Responses outside [0, 1], unknown covariates, unconfirmed findings given, or
            the method unavailable here (LightGBM missing for ``boost``).
        """
        if not isinstance(pred, Predictions):
            raise ValidationError(f"fit needs Predictions, not {type(pred).__name__}.")
        missing = self.registered.unavailable()
        if missing is not None:
            raise ValidationError(f"method {self.method!r} {missing}.")
        if index is not None:
            pred = subset(pred, np.sort(np.asarray(index)))
        label = pred.label
        if np.any((label < 0) | (label > 1)):
            raise ValidationError(f"column {pred.label_column!r}: recalibration needs "
                                  "responses in [0, 1].", column=pred.label_column)
        self.score_column, self.n_fit, self.notes = pred.score_column, pred.n, []
        self.covariate_kinds, self.verdict = {}, None
        w = pred.weight / pred.weight.mean()
        self.params = self.registered.fit(self, pred, w, progress)
        return self

    # ---------------------------------------------------------------------------------
    # applying

    @property
    def fitted(self) -> bool:
        """True once :meth:`fit` ran (or the map was read)."""
        return self.params is not None

    @property
    def coefficients(self) -> list[float]:
        """Platt, findings: [intercept, slope, terms' b...]; beta: [c, a, b]; else []."""
        return self.registered.coefficients(self._params())

    @property
    def terms(self) -> tuple[FixTerm, ...]:
        """The terms of the ``findings`` fix (empty for other methods)."""
        return tuple(FixTerm(description=t["description"], shape=t["shape"], a=t["a"],
                             b=t["b"], p_adjusted=t["p_adjusted"])
                     for t in self._params().get("terms", ()))

    @property
    def recommended(self) -> bool | None:
        """The held-out judgement's recommendation (None: never judged)."""
        return None if self.verdict is None else bool(self.verdict["recommended"])

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
        out = np.asarray(self.registered.transform(self, params, pred), dtype=float)
        return out if index is None else out[np.asarray(index)]

    # ---------------------------------------------------------------------------------
    # the saved map

    def to_dict(self) -> dict:
        """Return the map as a JSON-able dict (keys :data:`MAP_KEYS`; see :meth:`to_json`)."""
        values = {"format": FORMAT, "mcviz_version": _version(), "method": self.method,
                  "score_column": self.score_column, "covariates": self.covariate_kinds,
                  "n_fit": self.n_fit, "alpha": self.alpha, "seed": self.seed,
                  "notes": list(self.notes), "verdict": self.verdict, "params": self._params()}
        return {key: values[key] for key in MAP_KEYS}

    def to_json(self) -> str:
        """Return the map as JSON text.

        It holds the method, its coefficients or knots (or the boosted trees), the findings'
        descriptions in the filter language, the covariates and their kinds, the score column,
        the mcviz version and the held-out verdict (null when never judged).
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
            fix.verdict = _read_verdict(data["verdict"])
        except (KeyError, TypeError, AttributeError) as error:
            raise ValidationError(f"recalibration map: missing or malformed {error}.") from None
        return fix

    def describe(self) -> str:
        """Say in one line what the fitted map does to a score."""
        return self.registered.describe(self._params())


def _read_verdict(value) -> dict | None:
    """Read the map's ``verdict``: null, or ``{"recommended": bool, "reason": str}``."""
    if value is None:
        return None
    if (not isinstance(value, dict) or not isinstance(value.get("recommended"), bool)
            or not isinstance(value.get("reason"), str)):
        raise TypeError("'verdict' (null or {\"recommended\": true/false, \"reason\": text})")
    return {"recommended": value["recommended"], "reason": value["reason"]}


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
