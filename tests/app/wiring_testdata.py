"""Planted-data prediction files for the wiring tests (guided search, null distribution)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

PLANTED = "region == r7"
PLANTED_WORDS = "region is r7"  # the same group in a sentence (mcviz.subpopulations.words)
"""The planted group's description as the filter language (and the search) writes it."""


def planted_frame(n: int = 60_000, *, shift: float = 0.1, seed: int = 0,
                  group: str = "region") -> pd.DataFrame:
    """Scores from a logistic model; labels Bernoulli(score), plus ``shift`` in one group.

    ``group`` "region": region = r7 (region has 50 equally likely levels: 2% of the rows);
    "old": age >= 54 (half of the rows, what random median splits find). x is noise;
    ``shift`` 0 gives a perfectly calibrated file.
    """
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    region = np.array([f"r{k + 1}" for k in range(50)])[rng.integers(0, 50, n)]
    x = rng.normal(size=n)
    score = 1.0 / (1.0 + np.exp(-(-0.8 + 0.03 * (age - 50))))
    inside = region == "r7" if group == "region" else age >= 54
    truth = np.clip(score + np.where(inside, shift, 0.0), 0.0, 1.0)
    label = (rng.random(n) < truth).astype(int)
    return pd.DataFrame({"score": score.round(6), "label": label, "age": age,
                         "region": region, "x": x.round(4)})


def planted_csv(n: int = 60_000, *, shift: float = 0.1, seed: int = 0,
                group: str = "region") -> bytes:
    """:func:`planted_frame` as CSV bytes (what a user uploads)."""
    buffer = io.StringIO()
    planted_frame(n, shift=shift, seed=seed, group=group).to_csv(buffer, index=False)
    return buffer.getvalue().encode()
