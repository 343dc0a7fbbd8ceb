r"""Multicalibration boosting: rounds of boosted trees on (covariates, logit), early-stopped.

The scheme of MCGrad [1] (Algorithm 1 there), with LightGBM, started from the Platt fit
:math:`f_0 = c + a \operatorname{logit} s` (weighted maximum likelihood on the fit rows; MCGrad
starts from :math:`\operatorname{logit} s`: trees approximate a global rescaling of the logit
only by steps, whose error every segment then carries). Round :math:`r` fits a LightGBM
ensemble :math:`h_r` of cross-entropy trees to the responses with :math:`f_{r-1}` as the base
margin (``init_score``) and the covariates *and* :math:`f_{r-1}` as features (so a tree can
split on the current prediction: that is what makes the result calibrated within the segments
the trees find, at every score), then rescales:

.. math::
    f_r = \alpha_r \left(f_{r-1} + h_r(x, f_{r-1})\right), \qquad
    \alpha_r = \arg\min_\alpha \sum_i w_i\, \ell\!\left(y_i, \alpha\, g_i\right),

where :math:`\ell` is the cross-entropy and :math:`g = f_{r-1} + h_r` clipped to [-10, 10] (the
"unshrink" step of [1]: one logistic regression without intercept on the logit). Rounds are
added while the weighted log loss of a score-stratified validation part of the fit rows (40%,
as in [1]) decreases (patience 0, at most ``max_rounds``); the chosen number of rounds is then
refitted on all the fit rows. The trees: 200 per round, 8 leaves, depth 5, learning rate 0.1,
at least 160 rows per leaf, L2 0.0091, minimum split gain 0.15 (MCGrad's defaults have 94
trees of 5 leaves at learning rate 0.0287; on the planted data of
:mod:`mcviz.recalibration.simulate` at 2 x 10^5 rows those left held-out D/sigma of 3.0-5.9 in
the planted findings, these 1.0-3.0: ``benchmarks/bench_fix.py`` compares both with MCGrad).

Nominal covariates are coded by their categories seen at fit (LightGBM categorical features;
an unseen category or a missing value is "missing"); ordinal ones are numbers (datetimes as
nanoseconds), NaN where missing.

References
----------
.. [1] N. Tax, L. Perini, F. Linder, D. Haimovich, D. Karamshuk, N. Okati, M. Vojnovic,
   P. A. Apostolopoulos, "MCGrad: Multicalibration at Web Scale", KDD 2026 (arXiv:2509.19884);
   Algorithm 1 and Section 4.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.recalibration._logistic import fit_logistic, logit, mean_log_loss

__all__ = ["BOOST_TREES", "MCGRAD_TREES", "boost_fit", "boost_transform", "encode_covariates"]

BOOST_TREES = {"n_trees": 200, "learning_rate": 0.1, "num_leaves": 8, "max_depth": 5,
               "min_child_samples": 160, "lambda_l2": 0.009131373863997217,
               "min_gain_to_split": 0.15007305226251808}
"""mcviz's trees per round (module docstring)."""
MCGRAD_TREES = {**BOOST_TREES, "n_trees": 94, "learning_rate": 0.028729759162731475,
                "num_leaves": 5}
"""MCGrad 0.1.5's default trees per round (``MCGrad.DEFAULT_HYPERPARAMS``)."""
_FIXED = {"objective": "cross_entropy", "verbose": -1, "deterministic": True, "num_threads": 1,
          "seed": 0}
UNSHRINK_CLIP = 10.0
VALID_SHARE = 0.4


def _lightgbm():
    try:
        import lightgbm
    except ImportError as error:  # an optional extra
        raise ValidationError("method 'boost' needs LightGBM: pip install mcviz[boost] "
                              "(or pip install lightgbm).") from error
    return lightgbm


def encode_covariates(covariates: pd.DataFrame, kinds: Mapping[str, str],
                      spec: list[dict] | None = None) -> tuple[np.ndarray, list[dict]]:
    """Return the covariates as a float matrix for the trees, and the coding (made when None).

    The coding lists each covariate's name, kind and (nominal) categories.
    """
    if spec is None:
        spec = []
        for name, kind in kinds.items():
            item: dict = {"name": name, "kind": kind}
            if kind == "nominal":
                item["categories"] = [str(c) for c in covariates[name].cat.categories]
            spec.append(item)
    columns = []
    for item in spec:
        series = covariates[item["name"]]
        if item["kind"] == "nominal":
            lookup = {c: float(k) for k, c in enumerate(item["categories"])}
            values = series.astype("string").map(lookup).to_numpy(dtype=float, na_value=np.nan)
        elif pd.api.types.is_datetime64_any_dtype(series):
            values = pd.DatetimeIndex(series).as_unit("ns").asi8.astype(float)
            values[series.isna().to_numpy()] = np.nan
        else:
            values = series.to_numpy(dtype=float, na_value=np.nan)
        columns.append(values)
    matrix = np.column_stack(columns) if columns else np.empty((len(covariates), 0))
    return matrix, spec


def _unshrink(g: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    clipped = np.clip(g, -UNSHRINK_CLIP, UNSHRINK_CLIP)[:, None]
    return float(fit_logistic(clipped, y, w)[0])


def _round(lgb, features: np.ndarray, f: np.ndarray, y: np.ndarray, w: np.ndarray,
           categorical: list[int], trees: Mapping):
    x = np.column_stack((features, f))
    data = lgb.Dataset(x, label=y, weight=w, init_score=f, categorical_feature=categorical,
                       free_raw_data=True,
                       params={"verbose": -1, "bin_construct_sample_cnt": max(len(y), 1)})
    params = {**_FIXED, **{k: v for k, v in trees.items() if k != "n_trees"}}
    booster = lgb.train(params, data, num_boost_round=int(trees["n_trees"]))
    g = f + booster.predict(x, raw_score=True)
    alpha = _unshrink(g, y, w)
    return booster, alpha, alpha * g


def boost_fit(features: np.ndarray, categorical: list[int], score: np.ndarray, y: np.ndarray,
              w: np.ndarray, valid: np.ndarray, *, max_rounds: int = 100,
              trees: Mapping = BOOST_TREES,
              progress: Callable[[float, str], None] | None = None) -> dict:
    """Fit the rounds (module docstring); ``valid`` marks the validation rows (bool).

    Returns the JSON-able parameters: the rounds (LightGBM model text and alpha), the number
    of rounds, and the validation log loss after each round tried.
    """
    lgb = _lightgbm()
    train = ~valid
    z = logit(score)
    init = fit_logistic(np.column_stack((np.ones_like(z), z)), y, w)  # the Platt start
    f0 = init[0] + init[1] * z
    f_train, f_valid = f0[train], f0[valid]
    history = [mean_log_loss(f_valid, y[valid], w[valid])]
    rounds = 0
    for r in range(max_rounds):
        if progress is not None:
            progress(r / (2 * max_rounds), f"boosting round {r + 1} (early stopping)")
        booster, alpha, f_new = _round(lgb, features[train], f_train, y[train], w[train],
                                       categorical, trees)
        x_valid = np.column_stack((features[valid], f_valid))
        f_valid_new = alpha * (f_valid + booster.predict(x_valid, raw_score=True))
        loss = mean_log_loss(f_valid_new, y[valid], w[valid])
        history.append(loss)
        if not loss < history[-2]:
            break
        rounds, f_train, f_valid = r + 1, f_new, f_valid_new
    f_all = f0
    fitted = []
    for r in range(rounds):  # refit the chosen number of rounds on every fit row
        if progress is not None:
            progress(0.5 + r / (2 * max(rounds, 1)), f"refitting round {r + 1} of {rounds}")
        booster, alpha, f_all = _round(lgb, features, f_all, y, w, categorical, trees)
        fitted.append({"alpha": alpha, "model": booster.model_to_string()})
    return {"init": {"intercept": float(init[0]), "slope": float(init[1])}, "rounds": fitted,
            "validation_log_loss": history, "n_rounds": rounds, "trees": dict(trees)}


def boost_transform(params: Mapping, features: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Return the boosted scores of rows with these features and scores."""
    f = params["init"]["intercept"] + params["init"]["slope"] * logit(score)
    if params["rounds"]:
        lgb = _lightgbm()
        for k, item in enumerate(params["rounds"]):
            try:  # a map is input: a broken or foreign model is refused, not a traceback
                booster = lgb.Booster(model_str=item["model"])
                raw = booster.predict(np.column_stack((features, f)), raw_score=True)
            except lgb.basic.LightGBMError as error:
                first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
                raise ValidationError(f"recalibration map: round {k + 1} of the boosted map "
                                      f"cannot be read or applied by LightGBM ({first}); fit "
                                      "the map again with mcviz fix --map.") from None
            f = item["alpha"] * (f + raw)
    from scipy.special import expit

    return expit(f)
