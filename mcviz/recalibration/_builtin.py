r"""The maps of one score: Platt, isotonic, beta; and multicalibration boosting.

Equations and references: :mod:`mcviz.recalibration.recalibrator`.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.special import expit

from mcviz.recalibration import _boost
from mcviz.recalibration._logistic import clip_probability, fit_logistic, logit
from mcviz.recalibration._split import holdout_split
from mcviz.recalibration.method import RecalibrationMethod

__all__ = ["BetaMethod", "BoostMethod", "IsotonicMethod", "PlattMethod", "covariate_names"]


def covariate_names(fix, pred) -> list[str]:
    """Return the covariates the method fits on (``fix.covariates``, default all), each checked."""
    names = list(pred.covariates.columns) if fix.covariates is None else fix.covariates
    for name in names:
        pred.require_covariate(name, f" for the {fix.method} fix")
    if not names:
        from mcviz.errors import ValidationError

        raise ValidationError(f"the {fix.method} fix needs covariates; the predictions have "
                              "none.")
    return names


class PlattMethod(RecalibrationMethod):
    """Platt scaling: logistic regression on logit s."""

    name = "platt"
    title = "Platt: logistic on logit s"

    def fit(self, fix, pred, w, progress=None) -> dict:
        z = logit(pred.score)
        beta = fit_logistic(np.column_stack((np.ones_like(z), z)), pred.label, w)
        return {"intercept": float(beta[0]), "slope": float(beta[1])}

    def transform(self, fix, params, pred):
        return expit(params["intercept"] + params["slope"] * logit(pred.score))

    def describe(self, params) -> str:
        return f"Platt: logit p = {params['intercept']:.3g} + {params['slope']:.3g} · logit s"

    def coefficients(self, params) -> list[float]:
        return [params["intercept"], params["slope"]]


class BetaMethod(RecalibrationMethod):
    """Beta calibration (Kull et al. 2017), kept monotone."""

    name = "beta"
    title = "beta calibration (Kull et al.)"

    def fit(self, fix, pred, w, progress=None) -> dict:
        s = clip_probability(pred.score)
        design = np.column_stack((np.ones_like(s), np.log(s), -np.log1p(-s)))
        beta = fit_logistic(design, pred.label, w)
        if beta[1] < 0 or beta[2] < 0:  # keep the map monotone (Kull et al., Section 3.3)
            keep = 2 if beta[1] < 0 else 1
            refit = fit_logistic(design[:, [0, keep]], pred.label, w)
            beta = np.zeros(3)
            beta[0], beta[keep] = refit
        return {"c": float(beta[0]), "a": float(beta[1]), "b": float(beta[2])}

    def transform(self, fix, params, pred):
        s = clip_probability(pred.score)
        return expit(params["c"] + params["a"] * np.log(s) - params["b"] * np.log1p(-s))

    def describe(self, params) -> str:
        return (f"beta: logit p = {params['c']:.3g} + {params['a']:.3g} · ln s − "
                f"{params['b']:.3g} · ln(1 − s)")

    def coefficients(self, params) -> list[float]:
        return [params["c"], params["a"], params["b"]]


class IsotonicMethod(RecalibrationMethod):
    """Isotonic regression, tied scores pooled, blocks shrunk by one pseudo-observation."""

    name = "isotonic"
    title = "isotonic regression"

    def fit(self, fix, pred, w, progress=None) -> dict:
        ends = np.flatnonzero(pred.run_end)  # pool tied scores first
        starts = np.concatenate(([0], ends[:-1] + 1))
        x = pred.score[ends]
        weight = np.add.reduceat(w, starts)
        mean = np.add.reduceat(w * pred.label, starts) / weight
        blocks = isotonic_regression(mean, weights=weight, increasing=True).blocks
        block_weight = np.add.reduceat(weight, blocks[:-1])
        block_label = np.add.reduceat(weight * mean, blocks[:-1])
        block_score = np.add.reduceat(weight * x, blocks[:-1]) / block_weight
        value = np.maximum.accumulate((block_label + block_score) / (block_weight + 1.0))
        knots_x = np.ravel(np.column_stack((x[blocks[:-1]], x[blocks[1:] - 1])))
        knots_y = np.repeat(value, 2)
        keep = np.concatenate(([True], np.diff(knots_x) > 0))  # one-score blocks: one knot
        return {"x": knots_x[keep].tolist(), "y": knots_y[keep].tolist()}

    def transform(self, fix, params, pred):
        return np.interp(pred.score, params["x"], params["y"])

    def describe(self, params) -> str:
        return (f"isotonic: a non-decreasing step map of the score ({len(params['x']):,} "
                "knots, linear between them)")


class BoostMethod(RecalibrationMethod):
    """Multicalibration boosting (MCGrad's scheme) from the Platt fit, with LightGBM."""

    name = "boost"
    title = "multicalibration boosting (MCGrad's scheme, LightGBM)"
    needs_covariates = True
    packages = ("lightgbm",)
    seconds_per_row = 2.5e-5
    bytes_per_row_covariate = 24.0

    def fit(self, fix, pred, w, progress=None) -> dict:
        names = covariate_names(fix, pred)
        fix.covariate_kinds = {name: pred.covariate_kinds[name] for name in names}
        features, spec = _boost.encode_covariates(pred.covariates, fix.covariate_kinds)
        _, valid_rows = holdout_split(pred, _boost.VALID_SHARE, fix.seed)
        valid = np.zeros(pred.n, dtype=bool)
        valid[valid_rows] = True
        categorical = [k for k, item in enumerate(spec) if item["kind"] == "nominal"]
        params = _boost.boost_fit(features, categorical, pred.score, pred.label, w, valid,
                                  max_rounds=fix.max_rounds, trees=fix.trees,
                                  progress=progress)
        params["features"] = spec
        if params["n_rounds"] == 0:
            fix.notes.append("boosting stopped before its first round: no round lowered the "
                             "validation log loss, so the map is the Platt step alone.")
        return params

    def transform(self, fix, params, pred):
        features, _ = _boost.encode_covariates(pred.covariates, fix.covariate_kinds,
                                               params["features"])
        return _boost.boost_transform(params, features, pred.score)

    def describe(self, params) -> str:
        init = params["init"]
        platt = f"logit p = {init['intercept']:.3g} + {init['slope']:.3g} · logit s"
        if not params["n_rounds"]:
            return f"boost: the Platt step alone ({platt}); no boosting round helped"
        return (f"boost: the Platt step ({platt}), then {params['n_rounds']} rounds of "
                f"{params['trees']['n_trees']} trees on the covariates and the score")
