"""Planted shapes the search was never shown before issue #42 (its own definitions and seeds).

:func:`shaped_more` draws ``n`` rows with 10 covariates: a normal ``x``, a uniform ``u``, a
zero-inflated count ``cnt`` (45% zeros), nominals ``chan`` (5 levels), ``kind`` (20 Zipf
levels), ``dev`` (a device: 40 levels, a few of them rare), ``merchant`` (5,000 Zipf levels),
integer codes ``code`` (1..60, stored as integers), a log-normal ``income`` and an id column
``customer_id`` (unique integers 1..n shuffled, which the loader leaves out as an id). The score
comes from a logistic model of some of them and the labels from the score, shifted inside the
planted group(s) so that each group's own D/sigma over all rows (eqs. (2), (5) of paper 000) is
about ``target`` in expectation (:func:`shift`):

- ``levels25``: ``merchant in {25 levels}``, 25 mid-frequency levels of the 5,000 (about 2.5%);
- ``codes``: ``code in {3, 11, 19, 27, 42, 55}`` (about 10%; six integer codes, no band);
- ``four``: ``kind in {k2, k5, k8} and chan in {c1, c3} and 0.25 <= u < 0.75 and x >= -0.3``
  (two level sets and two ranges, about 2%);
- ``union``: ``kind in {k3, k7}`` OR ``0.8 <= u < 0.9`` (one under-prediction over the union;
  the two arms, which overlap, are the groups to find);
- ``tiny``: ``dev == d31`` (0.3% of rows, own D/sigma 10);
- ``opposite``: ``cnt == 0 and dev == d12`` over-predicted (1.5%, own D/sigma 12) and
  ``kind in {k4, k6}`` under-predicted (two groups of opposite sign).

Seeds are the draw numbers; nothing is shared with :mod:`shapes`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from shapes import pure_noise

MORE_SHAPES = ("levels25", "codes", "four", "union", "tiny", "opposite")
MORE_TEXT = {
    "levels25": "merchant in {25 of 5,000 levels}",
    "codes": "code in {3, 11, 19, 27, 42, 55} (integers)",
    "four": "kind in {k2,k5,k8} and chan in {c1,c3} and 0.25 <= u < 0.75 and x >= -0.3",
    "union": "kind in {k3, k7} OR 0.8 <= u < 0.9",
    "tiny": "dev == d31 (0.3%)",
    "opposite": "cnt == 0 and dev == d12 (over) / kind in {k4, k6} (under)",
}
TARGET = {"tiny": 10.0, "opposite": 12.0}
MERCHANTS = 5_000
MERCHANT_SET = tuple(range(300, 1300, 40))  # 25 levels of middling frequency


def _zipf(rng: np.random.Generator, n: int, levels: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, levels + 1) ** exponent
    return rng.choice(levels, size=n, p=weights / weights.sum())


def _nominal(codes: np.ndarray, prefix: str, levels: int) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=[f"{prefix}{k + 1}" for k in range(levels)])


def _device(rng: np.random.Generator, n: int) -> np.ndarray:
    """40 device levels: d12 at 3.3% (with cnt == 0 about 1.5%), d31 at 0.3%, the rest common."""
    weights = np.full(40, 1.0)
    weights[11] = 1.4  # d12
    weights[30] = 0.12  # d31
    return rng.choice(40, size=n, p=weights / weights.sum())


def shift(score: np.ndarray, mask: np.ndarray, target: float, sign: float) -> np.ndarray:
    r"""Scores shifted by :math:`\delta = t \sqrt{\sum_G s(1-s)} / |G|` inside ``mask``."""
    s = score[mask]
    delta = target * np.sqrt(np.sum(s * (1 - s))) / mask.sum()
    return np.clip(s + sign * delta, 0.0, 1.0)


def shaped_more(n: int, shape: str | None, seed: int = 0, *,
                target: float = 13.0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Return (frame with score, label, covariates; first group's mask; second's mask)."""
    rng = np.random.default_rng(10_000 + seed)
    x, u = rng.normal(size=n), rng.uniform(size=n)
    cnt = np.where(rng.random(n) < 0.45, 0, rng.poisson(2.0, n) + 1).astype(np.int64)
    chan, kind = rng.integers(0, 5, n), _zipf(rng, n, 20, 0.8)
    dev = _device(rng, n)
    merchant = _zipf(rng, n, MERCHANTS, 0.7)
    code = rng.integers(1, 61, n)
    income = np.exp(rng.normal(10.5, 0.6, n))
    logit = (-0.4 + 0.6 * x + 0.4 * (np.log(income) - 10.5) + 0.1 * (cnt - 1.5)
             + 0.2 * (chan == 2) - 0.2 * (u > 0.5))
    score = 1.0 / (1.0 + np.exp(-logit))
    frame = pd.DataFrame({
        "x": x, "u": u, "cnt": cnt, "chan": _nominal(chan, "c", 5),
        "kind": _nominal(kind, "k", 20), "dev": _nominal(dev, "d", 40),
        "merchant": _nominal(merchant, "m", MERCHANTS), "code": code, "income": income,
        "customer_id": rng.permutation(n) + 1,
    })
    first, second = more_masks(frame, shape)
    truth = score.copy()
    target = TARGET.get(shape, target) if shape else target
    signs = {"opposite": (-1.0, 1.0)}.get(shape, (1.0, 1.0))
    if shape == "union":  # one error over both arms (they overlap)
        first, second = first | second, np.zeros_like(first)
        truth[first] = shift(score, first, target, 1.0)
        first, second = more_masks(frame, shape)
    for mask, sign in ((first, signs[0]), (second, signs[1])):
        if mask.any() and shape != "union":
            truth[mask] = shift(score, mask, target, sign)
    frame.insert(0, "label", (rng.random(n) < truth).astype(int))
    frame.insert(0, "score", score)
    return frame, first, second


def more_masks(frame: pd.DataFrame, shape: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The planted groups' rows (frame order); the second is empty but for union/opposite."""
    none = np.zeros(len(frame), dtype=bool)
    if shape is None:
        return none, none
    u, x, cnt = frame["u"].to_numpy(), frame["x"].to_numpy(), frame["cnt"].to_numpy()
    kind, chan, dev = (frame[c].astype(str).to_numpy() for c in ("kind", "chan", "dev"))
    if shape == "levels25":
        chosen = [f"m{k + 1}" for k in MERCHANT_SET]
        return frame["merchant"].isin(chosen).to_numpy(), none
    if shape == "codes":
        return frame["code"].isin([3, 11, 19, 27, 42, 55]).to_numpy(), none
    if shape == "four":
        return (np.isin(kind, ["k2", "k5", "k8"]) & np.isin(chan, ["c1", "c3"])
                & (u >= 0.25) & (u < 0.75) & (x >= -0.3)), none
    if shape == "union":
        return np.isin(kind, ["k3", "k7"]), (u >= 0.8) & (u < 0.9)
    if shape == "tiny":
        return dev == "d31", none
    if shape == "opposite":
        over = (cnt == 0) & (dev == "d12")
        return over, np.isin(kind, ["k4", "k6"]) & ~over
    raise ValueError(f"unknown shape {shape!r}")


def calibrated_30(n: int, seed: int) -> pd.DataFrame:
    """Perfectly calibrated labels with 30 covariates: the 10 of :func:`shaped_more` (the
    5,000-level nominal and the id column among them) and 20 more of pure noise."""
    frame, _, _ = shaped_more(n, None, seed)
    rng = np.random.default_rng(seed + 10**7)
    return pure_noise(frame, rng)
