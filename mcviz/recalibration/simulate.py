r"""Planted miscalibration for tests and benchmarks: a global distortion and two findings.

The true probability of each row is

.. math::
    p = \sigma\left(\operatorname{logit} s
        + \delta\,1\{\text{region} = r3,\ \text{channel} \ne \text{web}\}
        - \delta\,1\{\text{age} \ge 60,\ \text{channel} = \text{web}\}\right),

and the model reports :math:`s' = \sigma(\kappa \operatorname{logit} s)` (over-confident for
:math:`\kappa > 1`); :math:`\operatorname{logit} s \sim N(-0.6, 1.1^2)`. With ``calibrated=True``
the model reports :math:`p` itself. Region has 8 equally likely levels, age is uniform on
[18, 80), channel has 3 levels (web with probability 0.4). The two findings are disjoint
(7.5% and 12.9% of the rows).

:func:`planted_shapes_data` plants three segments of three shapes (:data:`PLANTED_SHAPES`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

__all__ = ["PLANTED", "PLANTED_SHAPES", "planted_fix_data", "planted_shapes_data"]

PLANTED = ('region == "r3" and channel != "web"', 'age >= 60 and channel == "web"')
"""The two planted findings in the filter language (+delta and -delta on the logit)."""


def _customers(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """Draw the covariates (region, age, channel, tenure) and the base logit :math:`b`."""
    region = rng.integers(0, 8, n)
    age = rng.uniform(18, 80, n)
    channel = rng.choice(np.array(["web", "store", "phone"]), n, p=[0.4, 0.35, 0.25])
    tenure = rng.integers(0, 21, n)
    return region, age, channel, tenure, rng.normal(-0.6, 1.1, n)


def _frame(rng: np.random.Generator, score: np.ndarray, truth: np.ndarray, region: np.ndarray,
           age: np.ndarray, channel: np.ndarray, tenure: np.ndarray) -> pd.DataFrame:
    """Draw the labels from ``truth``; return the rows as a frame (region named r0..r7)."""
    n = score.size
    return pd.DataFrame({
        "score": score, "label": (rng.random(n) < truth).astype(np.int8),
        "region": pd.Categorical([f"r{k}" for k in region]), "age": age,
        "channel": pd.Categorical(channel), "tenure": tenure, "truth": truth,
    })


def planted_fix_data(n: int, *, seed: int = 0, distortion: float = 1.3, shift: float = 0.8,
                     calibrated: bool = False, weighted: bool = False) -> pd.DataFrame:
    """Return ``n`` rows: score, label, (weight), region, age, channel, tenure, and ``truth``.

    ``truth`` is the true probability p; ``score`` what the model reports.

    Examples
    --------
    >>> frame = planted_fix_data(1000, seed=1)
    >>> sorted(frame.columns)
    ['age', 'channel', 'label', 'region', 'score', 'tenure', 'truth']
    """
    rng = np.random.default_rng(seed)
    region, age, channel, tenure, base = _customers(rng, n)
    web = channel == "web"
    truth = expit(base + shift * ((region == 3) & ~web) - shift * ((age >= 60) & web))
    score = truth if calibrated else expit(distortion * base)
    frame = _frame(rng, score, truth, region, age, channel, tenure)
    if weighted:
        frame.insert(2, "weight", rng.choice([0.5, 1.0, 2.0], n))
    return frame


PLANTED_SHAPES = {
    "logit shift": 'region == "r3" and channel == "store"',
    "additive shift": 'age >= 60 and channel == "web"',
    "slope change": 'age < 35 and channel == "phone"',
}
"""Three planted segments, disjoint (by channel), and the shape of each."""


def planted_shapes_data(n: int, *, seed: int = 0, distortion: float = 1.3, shift: float = 0.8,
                        rate_shift: float = 0.08, slope: float = 0.6) -> pd.DataFrame:
    r"""Return ``n`` rows with three planted segments, one of each shape; columns as above.

    With :math:`b \sim N(-0.6, 1.1^2)` the model reports :math:`s = \sigma(\kappa b)`; the truth
    is :math:`\sigma(b)` outside the segments and, within them (:data:`PLANTED_SHAPES`):
    logit shift :math:`\sigma(b + \delta)` (4.4% of the rows), additive shift
    :math:`\max(\sigma(b) - r, 0.001)` (the rate ``rate_shift`` below at every score; 12.9%),
    slope change :math:`\sigma(c \operatorname{logit} s)` (the model too extreme: the true
    logit ``slope`` times the model's; 6.9%).

    Examples
    --------
    >>> frame = planted_shapes_data(2000, seed=1)
    >>> bool((frame["truth"] <= 1).all()), len(frame)
    (True, 2000)
    """
    rng = np.random.default_rng(seed)
    region, age, channel, tenure, base = _customers(rng, n)
    score = expit(distortion * base)
    truth = expit(base)
    logit_rows = (region == 3) & (channel == "store")
    additive_rows = (age >= 60) & (channel == "web")
    slope_rows = (age < 35) & (channel == "phone")
    truth[logit_rows] = expit(base[logit_rows] + shift)
    truth[additive_rows] = np.maximum(truth[additive_rows] - rate_shift, 0.001)
    truth[slope_rows] = expit(slope * distortion * base[slope_rows])
    return _frame(rng, score, truth, region, age, channel, tenure)
