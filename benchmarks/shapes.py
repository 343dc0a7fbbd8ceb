"""Planted miscalibration of many shapes, for the guided search's benchmark and tests.

:func:`shaped` draws ``n`` rows with 8 covariates of the kinds real files hold (normal,
log-normal, uniform, an integer with 30% zeros, nominals of 5, 20 and 200 Zipf-distributed
levels, a numeric with 10% missing; ``extra`` adds noise covariates, the first two a normal and a
nominal of 50 levels, then normals), a score from a logistic model of some of them, and labels
drawn from the score, shifted inside the planted group(s) so that each group's own D/sigma over
all rows (eqs. (2), (5) of paper 000) is about ``target`` in expectation:

- ``rare``: ``zip == z23``, one rare level (about 0.6%) of the 200-level nominal;
- ``three``: ``kind in {k3, k6, k9} and 0.2 <= u < 0.7 and cnt >= 2``, a level set, a band
  and a threshold (about 3%), each weak alone;
- ``score``: ``chan == c2 and score >= 0.6`` (about 2%, over-predicted): miscalibrated only
  at high scores of one segment;
- ``two``: ``kind == k4`` under-predicted and ``1 <= x < 2.5 and chan == c1``
  over-predicted, two problems at once (the second group is ``mask2``; the rows in both are
  over-predicted, so the first group's mask leaves them out: those are the rows shifted up);
- ``missing``: ``bmi is missing`` (10%);
- ``band``: ``0.3 <= u < 0.42`` (12%);
- None: perfectly calibrated labels.

The shift is :math:`\\delta = t \\sqrt{\\sum_G s(1-s)} / |G|` (the drift of the group's
path in units of its sigma is then ``t``), clipped so that probabilities stay in [0, 1].
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SHAPES = ("rare", "three", "score", "two", "missing", "band")
SHAPE_TEXT = {
    "rare": "zip == z23",
    "three": "kind in {k3, k6, k9} and 0.2 <= u < 0.7 and cnt >= 2",
    "score": "chan == c2 and score >= 0.6",
    "two": "kind == k4 (under) / 1 <= x < 2.5 and chan == c1 (over)",
    "missing": "bmi is missing",
    "band": "0.3 <= u < 0.42",
}


def _zipf(rng: np.random.Generator, n: int, levels: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, levels + 1) ** exponent
    return rng.choice(levels, size=n, p=weights / weights.sum())


def _nominal(codes: np.ndarray, prefix: str, levels: int) -> pd.Categorical:
    names = [f"{prefix}{k + 1}" for k in range(levels)]
    return pd.Categorical.from_codes(codes, categories=names)


def shaped(n: int, shape: str | None, seed: int = 0, *, target: float = 13.0,
           extra: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Return (frame with score, label and covariates; first group's mask; second's mask)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    income = np.exp(rng.normal(10.5, 0.6, n))
    u = rng.uniform(size=n)
    cnt = np.where(rng.random(n) < 0.3, 0, rng.poisson(2.0, n) + 1).astype(float)
    chan = _zipf(rng, n, 5, 1.0)
    kind = _zipf(rng, n, 20, 1.0)
    zipc = _zipf(rng, n, 200, 1.1)
    bmi = rng.normal(27, 5, n)
    missing = rng.random(n) < 0.10
    chan_effect = np.array([0.3, -0.2, 0.1, 0.0, -0.3])
    logit = (-0.5 + 0.6 * x + 0.5 * (np.log(income) - 10.5) + 0.15 * (cnt - 2)
             + chan_effect[chan] + 0.03 * np.where(missing, 0.0, bmi - 27))
    score = 1.0 / (1.0 + np.exp(-logit))
    bmi[missing] = np.nan
    frame = pd.DataFrame({
        "x": x, "income": income, "u": u, "cnt": cnt,
        "chan": _nominal(chan, "c", 5), "kind": _nominal(kind, "k", 20),
        "zip": _nominal(zipc, "z", 200), "bmi": bmi,
    })
    if extra >= 1:
        frame["noise1"] = rng.normal(size=n)
    if extra >= 2:
        frame["noise2"] = _nominal(rng.integers(0, 50, n), "m", 50)
    for k in range(2, extra):
        frame[f"noise{k + 1}"] = rng.normal(size=n)
    first, second = shape_masks(frame, score, shape)
    truth = score.copy()
    for mask, sign in ((first, -1.0 if shape == "score" else 1.0), (second, -1.0)):
        if mask.any():
            s = score[mask]
            delta = target * np.sqrt(np.sum(s * (1 - s))) / mask.sum()
            truth[mask] = np.clip(s + sign * delta, 0.0, 1.0)
    frame.insert(0, "label", (rng.random(n) < truth).astype(int))
    frame.insert(0, "score", score)
    return frame, first, second


def shape_masks(frame: pd.DataFrame, score: np.ndarray,
                shape: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The planted groups' rows (frame order); the second is empty but for ``two``."""
    n = len(frame)
    none = np.zeros(n, dtype=bool)
    if shape is None:
        return none, none
    u, cnt, x = frame["u"].to_numpy(), frame["cnt"].to_numpy(), frame["x"].to_numpy()
    if shape == "rare":
        return (frame["zip"] == "z23").to_numpy(), none
    if shape == "three":
        return (frame["kind"].isin(["k3", "k6", "k9"]).to_numpy() & (u >= 0.2) & (u < 0.7)
                & (cnt >= 2)), none
    if shape == "score":
        return (frame["chan"] == "c2").to_numpy() & (score >= 0.6), none
    if shape == "two":  # the rows of both are over-predicted (the second shift is applied
        second = (x >= 1.0) & (x < 2.5) & (frame["chan"] == "c1").to_numpy()  # last), so the
        return (frame["kind"] == "k4").to_numpy() & ~second, second  # first group is k4 less them
    if shape == "missing":
        return frame["bmi"].isna().to_numpy(), none
    if shape == "band":
        return (u >= 0.3) & (u < 0.42), none
    raise ValueError(f"unknown shape {shape!r}")


def calibrated_wide(n: int, seed: int) -> pd.DataFrame:
    """Perfectly calibrated labels with 30 covariates: the 8 of :func:`shaped`, a 200-level
    nominal among them, and 22 more of pure noise (normals, uniforms and nominals)."""
    frame, _, _ = shaped(n, None, seed, extra=2)
    rng = np.random.default_rng(seed + 10**6)
    return pure_noise(frame, rng)


def pure_noise(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Add 20 covariates of pure noise (normals, uniforms and 12-level nominals) to ``frame``."""
    n = len(frame)
    for k in range(20):
        if k % 4 == 3:
            frame[f"pure{k}"] = _nominal(rng.integers(0, 12, n), "p", 12)
        elif k % 4 == 2:
            frame[f"pure{k}"] = rng.uniform(size=n)
        else:
            frame[f"pure{k}"] = rng.normal(size=n)
    return frame
