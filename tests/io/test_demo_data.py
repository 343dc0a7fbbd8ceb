"""Checks on the demo datasets shipped in mcviz/data (built by scripts/build_demo.py)."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[2] / "mcviz" / "data"
SCORES = ["score_gbm", "score_logistic", "score_uncalibrated"]
LETTERS = list(string.ascii_uppercase)
PROBS = [f"prob_{c}" for c in LETTERS]


def _built(name: str) -> list[str]:
    """A column list as ``scripts/build_demo.py`` declares it (read, not imported: sklearn)."""
    tree = ast.parse((DATA.parents[1] / "scripts" / "build_demo.py").read_text())
    return next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                and [getattr(t, "id", None) for t in node.targets] == [name])


ADULT_CATEGORICAL = _built("ADULT_CATEGORICAL")  # the nominal columns the build wrote
ADULT_INTEGER = _built("ADULT_NUMERIC_FEATURES")
LETTER_FEATURES = [
    "x_box",
    "y_box",
    "width",
    "high",
    "onpix",
    "x_bar",
    "y_bar",
    "x2bar",
    "y2bar",
    "xybar",
    "x2ybr",
    "xy2br",
    "x_ege",
    "xegvy",
    "y_ege",
    "yegvx",
]


def ece(confidence: np.ndarray, outcome: np.ndarray, n_bins: int = 15) -> float:
    """Binned expected calibration error, equal-width bins, weighted by bin size."""
    confidence = np.asarray(confidence, dtype=np.float64)
    outcome = np.asarray(outcome, dtype=np.float64)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    gap = np.bincount(bins, confidence - outcome, minlength=n_bins)
    return float(np.abs(gap).sum() / count.sum())


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_parquet(DATA / "adult.parquet")


@pytest.fixture(scope="module")
def letter() -> pd.DataFrame:
    return pd.read_parquet(DATA / "letter.parquet")


# ---------------------------------------------------------------------------------------
# Adult
# ---------------------------------------------------------------------------------------


def test_adult_files_are_small_and_documented():
    assert (DATA / "README.md").is_file()
    assert (DATA / "adult.parquet").stat().st_size < 1.5 * 2**20
    assert (DATA / "letter.parquet").stat().st_size < 3 * 2**20


def test_adult_shape_and_columns(adult):
    assert len(adult) == 48_842
    expected = [
        *ADULT_CATEGORICAL,
        *ADULT_INTEGER,
        "fnlwgt",
        "income_gt_50k",
        *SCORES,
    ]
    assert sorted(adult.columns) == sorted(expected)


def test_adult_dtypes(adult):
    for col in ADULT_CATEGORICAL:
        assert isinstance(adult[col].dtype, pd.CategoricalDtype), col
    for col in [*ADULT_INTEGER, "fnlwgt", "income_gt_50k"]:
        assert pd.api.types.is_integer_dtype(adult[col].dtype), col
        assert adult[col].dtype.itemsize <= 4, col
    for col in SCORES:
        assert adult[col].dtype == np.float32, col


def test_adult_label(adult):
    y = adult["income_gt_50k"]
    assert set(y.unique()) == {0, 1}
    assert int(y.sum()) == 11_687
    assert y.mean() == pytest.approx(0.239, abs=0.001)


def test_adult_missing_values_kept_as_missing(adult):
    # '?' in the raw files becomes a missing value, never a "?" category, and no row is dropped.
    missing = adult.isna().sum()
    assert missing["workclass"] == 2_799
    assert missing["occupation"] == 2_809
    assert missing["native_country"] == 857
    assert missing.drop(["workclass", "occupation", "native_country"]).sum() == 0
    for col in ADULT_CATEGORICAL:
        assert "?" not in adult[col].cat.categories, col
        assert not any(str(c) != str(c).strip() for c in adult[col].cat.categories), col


def test_adult_covariates_plausible(adult):
    assert adult["age"].between(17, 90).all()
    assert adult["education_num"].between(1, 16).all()
    assert adult["hours_per_week"].between(1, 99).all()
    assert set(adult["sex"].dropna().unique()) == {"Female", "Male"}
    assert (adult["fnlwgt"] > 0).all()


@pytest.mark.parametrize("col", SCORES)
def test_adult_scores_are_probabilities(adult, col):
    s = adult[col].to_numpy()
    assert np.isfinite(s).all()
    assert (s >= 0).all()
    assert (s <= 1).all()
    assert s.std() > 0.1  # not a constant


def test_adult_scores_are_informative(adult):
    y = adult["income_gt_50k"].to_numpy()
    for col in SCORES:
        accuracy = ((adult[col].to_numpy() >= 0.5) == (y == 1)).mean()
        assert 0.8 < accuracy < 0.9, col


def test_adult_scores_differ_in_calibration(adult):
    y = adult["income_gt_50k"].to_numpy()
    e = {col: ece(adult[col].to_numpy(), y) for col in SCORES}
    assert e["score_gbm"] < 0.015
    assert 0.025 < e["score_logistic"] < 0.07
    assert e["score_uncalibrated"] > 0.05
    assert e["score_gbm"] < e["score_logistic"] < e["score_uncalibrated"]

    # Calibration-in-the-large: the GBM is unbiased, the stretched one is not.
    bias = {col: adult[col].to_numpy(np.float64).mean() - y.mean() for col in SCORES}
    assert abs(bias["score_gbm"]) < 0.005
    assert abs(bias["score_uncalibrated"]) > 0.02


def test_adult_miscalibration_directions(adult):
    # Among confident positives (score > 0.5) the over-regularised logistic model is
    # underconfident (outcomes exceed scores) and the stretched GBM is overconfident.
    y = adult["income_gt_50k"].to_numpy()

    def gap(col: str) -> float:
        s = adult[col].to_numpy(np.float64)
        high = s > 0.5
        return float(s[high].mean() - y[high].mean())

    assert abs(gap("score_gbm")) < 0.02
    assert gap("score_logistic") < -0.04
    assert gap("score_uncalibrated") > 0.05


def test_adult_uncalibrated_is_a_monotone_transform_of_gbm(adult):
    # score_uncalibrated = sigmoid(2.5 * logit(score_gbm)): same ranking, different scale.
    order = np.argsort(adult["score_gbm"].to_numpy(), kind="stable")
    stretched = adult["score_uncalibrated"].to_numpy()[order]
    assert (np.diff(stretched.astype(np.float64)) >= -1e-6).all()


# ---------------------------------------------------------------------------------------
# Letter Recognition
# ---------------------------------------------------------------------------------------


def test_letter_shape_and_columns(letter):
    assert len(letter) == 20_000
    assert sorted(letter.columns) == sorted(["letter", *LETTER_FEATURES, *PROBS])


def test_letter_dtypes(letter):
    assert isinstance(letter["letter"].dtype, pd.CategoricalDtype)
    for col in LETTER_FEATURES:
        assert pd.api.types.is_integer_dtype(letter[col].dtype), col
        assert letter[col].between(0, 15).all(), col
    for col in PROBS:
        assert letter[col].dtype in (np.float32, np.float64), col


def test_letter_labels(letter):
    counts = letter["letter"].astype(str).value_counts()
    assert sorted(counts.index) == LETTERS
    assert counts.sum() == 20_000
    assert counts.min() > 700  # every letter has 734..813 rows
    assert counts.max() < 820


def test_letter_probabilities_sum_to_one(letter):
    p = letter[PROBS].to_numpy()
    assert np.isfinite(p).all()
    assert (p >= 0).all()
    assert (p <= 1).all()
    assert np.abs(p.astype(np.float64).sum(axis=1) - 1).max() <= 1e-6
    # also when summed in the stored precision
    assert np.abs(p.sum(axis=1, dtype=p.dtype) - 1).max() <= 1e-6


def test_letter_accuracy_and_calibration(letter):
    p = letter[PROBS].to_numpy(np.float64)
    truth = letter["letter"].astype(str).map(LETTERS.index).to_numpy()
    pred = p.argmax(axis=1)
    correct = pred == truth
    accuracy = correct.mean()
    assert 0.85 < accuracy < 0.99
    # The shipped model is visibly, but moderately, underconfident.
    confidence = p.max(axis=1)
    assert confidence.mean() < accuracy - 0.03
    assert 0.03 < ece(confidence, correct) < 0.15


def test_flights_demo_is_dated_and_scored_by_a_model_of_january_to_march():
    """mcviz/data/flights.parquet (scripts/build_flights_demo.py): 100,000 NYC flights of 2013."""
    from mcviz import load_demo

    frame = pd.read_parquet(DATA / "flights.parquet")
    assert len(frame) == 100_000
    assert list(frame.columns) == ["departure", "carrier", "origin", "dest", "distance", "hour",
                                   "weekday", "delayed", "score_gbm"]
    assert frame["departure"].min() >= pd.Timestamp("2013-01-01")
    assert frame["departure"].max() < pd.Timestamp("2014-01-01")
    assert set(frame["origin"].cat.categories) == {"EWR", "JFK", "LGA"}
    assert set(frame["delayed"].unique()) == {0, 1}
    assert frame["score_gbm"].between(0, 1).all()
    # fitted on January-March: calibrated there in the mean, not in the summer storms
    early = frame["departure"] < pd.Timestamp("2013-04-01")
    summer = frame["departure"].dt.month.isin([6, 7])
    assert abs(frame.loc[early, "delayed"].mean() - frame.loc[early, "score_gbm"].mean()) < 0.01
    assert frame.loc[summer, "delayed"].mean() - frame.loc[summer, "score_gbm"].mean() > 0.05
    pred = load_demo("flights")
    assert pred.n == 100_000
    assert pred.label_column == "delayed"
    assert pred.score_column == "score_gbm"
