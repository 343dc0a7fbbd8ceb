"""Guided search vs the worst Algorithm-1 subpopulation vs pysubgroup on planted groups.

Run: ``python benchmarks/bench_find.py [--n 100000] [--null-draws 100] [--null-n 20000]
[--no-pysubgroup]``. Prints, per planted group and shift delta: the group's own D/sigma over all
rows; for each method the Jaccard index of its first finding with the group, the finding's
D/sigma on the held-out rows, and the time; then the share of perfectly calibrated draws in
which any finding has a Holm-adjusted p below 0.05, and the speed at 10^5 x 8 and 10^6 x 10.

Planted data (:func:`planted`): age (integers 18-89), income (log-normal), x1 and x2 (standard
normal noise, not in the model), sex (2 levels), occupation (12), region (50); the score is a
logistic model of age, income, sex and occupation; labels are drawn from the score plus delta
inside one planted group (minus delta for the over-predicted one):

- ``level``: region == r7 (2%)
- ``set``: occupation in {o1, o2} and income >= its median (8%)
- ``band``: 30 <= age < 40 and x1 > 1 (2%)
- ``over``: age >= 62 and sex == F (19%), over-predicted

pysubgroup 0.9 pins numpy < 2, so it runs in its own virtual environment
(``/tmp/mcviz-psg``, created on first use) through a subprocess, on the same rows as a Parquet
file: beam search, depth 2, quality ``StandardQTM(a=0.5)`` on the residual (mean residual times
the square root of the size), both directions.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcviz import Predictions, generate_subpopulations, multicalibration  # noqa: E402
from mcviz.search import search_subpopulations  # noqa: E402
from mcviz.subpopulations import parse_filter, select_rows  # noqa: E402

GROUPS = ("level", "set", "band", "over")
GROUP_TEXT = {
    "level": "region == r7",
    "set": "occupation in {o1, o2} and income >= MEDIAN",
    "band": "age >= 30 and age < 40 and x1 > 1",
    "over": "age >= 62 and sex == F",
}
VENV = Path("/tmp/mcviz-psg")


def planted(n: int, group: str | None, delta: float, seed: int = 0,
            *, calibrated: bool = False, extra: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Planted data: a frame (score, label, covariates) and the planted group's mask.

    ``group`` None (or ``calibrated``) draws perfectly calibrated labels. ``extra`` adds that
    many more noise covariates (x3, x4, ...).
    """
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    income = np.exp(rng.normal(10.5, 0.6, n))
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    sex = rng.integers(0, 2, n)
    occupation = rng.integers(0, 12, n)
    region = rng.integers(0, 50, n)
    occupation_effect = np.linspace(-0.6, 0.6, 12)
    logit = (-0.8 + 0.025 * (age - 50) + 0.5 * (np.log(income) - 10.5) + 0.3 * (sex == 0)
             + occupation_effect[occupation])
    score = 1.0 / (1.0 + np.exp(-logit))
    frame = pd.DataFrame({
        "age": age, "income": income, "x1": x1, "x2": x2,
        "sex": pd.Categorical(np.where(sex == 0, "F", "M")),
        "occupation": pd.Categorical([f"o{k + 1}" for k in occupation],
                                     categories=[f"o{k + 1}" for k in range(12)]),
        "region": pd.Categorical([f"r{k + 1}" for k in region],
                                 categories=[f"r{k + 1}" for k in range(50)]),
    })
    for k in range(extra):
        frame[f"x{k + 3}"] = rng.normal(size=n)
    mask = group_mask(frame, group) if group else np.zeros(n, dtype=bool)
    shift = np.where(mask, -delta if group == "over" else delta, 0.0)
    truth = np.clip(score + (0.0 if calibrated else shift), 0.0, 1.0)
    frame.insert(0, "label", (rng.random(n) < truth).astype(int))
    frame.insert(0, "score", score)
    return frame, mask


def group_mask(frame: pd.DataFrame, group: str) -> np.ndarray:
    """Rows of a planted group (in the frame's order)."""
    if group == "level":
        return (frame["region"] == "r7").to_numpy()
    if group == "set":
        return (frame["occupation"].isin(["o1", "o2"])
                & (frame["income"] >= frame["income"].median())).to_numpy()
    if group == "band":
        return ((frame["age"] >= 30) & (frame["age"] < 40) & (frame["x1"] > 1)).to_numpy()
    return ((frame["age"] >= 62) & (frame["sex"] == "F")).to_numpy()


def predictions(frame: pd.DataFrame) -> Predictions:
    """The frame as Predictions (every column but score and label a covariate)."""
    covariates = frame.drop(columns=["score", "label"])
    return Predictions.from_arrays(frame["score"].to_numpy(), frame["label"].to_numpy(),
                                   covariates=covariates)


def planted_rows(pred: Predictions, mask: np.ndarray) -> np.ndarray:
    """Positions (score order) of the planted group's rows."""
    return np.flatnonzero(mask[pred.row])


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a & b| / |a | b| of two sets of positions."""
    common = np.intersect1d(a, b).size
    union = np.union1d(a, b).size
    return common / union if union else 0.0


def own_z(pred: Predictions, rows: np.ndarray) -> float:
    """D/sigma of a set of rows over all rows (the multi-calibration table's number)."""
    from mcviz.subpopulations import Subpopulation

    sub = Subpopulation(1, 0, (), "planted", rows.astype(np.int64))
    return float(multicalibration(pred, [sub]).kuiper_z[1])


def held_out_z(pred: Predictions, description: str, holdout_rows: np.ndarray) -> float:
    """D/sigma of a description's rows among the held-out rows."""
    from mcviz.subpopulations import Subpopulation

    rows = select_rows(pred, parse_filter(description, pred), within=holdout_rows)
    if rows.size == 0:
        return float("nan")
    sub = Subpopulation(1, 0, (), "x", np.asarray(rows, dtype=np.int64))
    return float(multicalibration(pred, [sub]).kuiper_z[1])
