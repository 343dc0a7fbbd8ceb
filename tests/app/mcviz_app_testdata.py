"""Synthetic prediction files shared by the dashboard tests."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd


def synthetic_csv(n: int = 3000, *, bad_scores: int = 0, seed: int = 0) -> bytes:
    """A small prediction file with a miscalibrated corner (x > 0.7 and group 'b')."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    group = rng.choice(["a", "b", "<b>c</b>", "=cmd"], size=n)
    score = np.clip(rng.beta(2, 3, size=n), 0.01, 0.99)
    truth = np.where((x > 0.7) & (group == "b"), np.minimum(score + 0.3, 1), score)
    label = (rng.uniform(size=n) < truth).astype(int)
    frame = pd.DataFrame({"x": x.round(4), "group": group, "score": score.round(4),
                          "label": label})
    if bad_scores:
        frame.loc[: bad_scores - 1, "score"] = 1.5
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode()
