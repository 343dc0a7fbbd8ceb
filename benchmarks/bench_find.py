"""Guided search vs the worst Algorithm-1 subpopulation vs pysubgroup on planted groups.

Run: ``python benchmarks/bench_find.py [--n 100000] [--null-draws 100] [--null-n 20000]
[--no-pysubgroup]``. Prints, per planted group and shift delta: the group's own D/sigma over all
rows; for each method the Jaccard index of its first finding with the group, the finding's
D/sigma on the held-out rows, and the time; then the share of perfectly calibrated draws in
which any finding has a Holm-adjusted p below 0.05, and the speed at 10^5 x 8 and 10^6 x 10.
``--scale N [--sample-rows M] [--engine duckdb]`` also writes N planted rows to a Parquet file
and runs ``mcviz search --engine ... --sample-rows M`` on it (search on the sample, findings
measured on every row by the engine): seconds of the search and of the rest (sample read and
all-rows measurement), and the first finding's held-out and all-rows D/sigma beside the planted
group's own; then :func:`mcviz.search.search_estimate` beside the measured peak memory.

Planted data (:func:`planted`): age (integers 18-89), income (log-normal), x1 and x2 (standard
normal noise, not in the model), sex (2 levels), occupation (12), region (50); the score is a
logistic model of age, income, sex and occupation; labels are drawn from the score plus delta
inside one planted group (minus delta for the over-predicted one):

- ``level``: region == r7 (2%)
- ``set``: occupation in {o1, o2} and income >= its median (8%)
- ``band``: 30 <= age < 40 and x1 > 1 (2%)
- ``over``: age >= 62 and sex == F (19%), over-predicted

pysubgroup 0.9 pins numpy < 2, so it runs in its own virtual environment
(``/tmp/mcviz-psg``, created on first use) through a subprocess, on the same rows as a CSV
file (pyarrow does not install beside numpy < 2 here): beam search (width 20), depth 2,
selectors from ``create_selectors(nbins=10)``, quality ``StandardQFNumeric(a=0.5)`` on the
residual (mean residual times the square root of the size), both directions.
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

from mcviz import Predictions, generate_subpopulations, multicalibration
from mcviz.search import search_subpopulations
from mcviz.subpopulations import parse_filter, select_rows

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


# --------------------------------------------------------------------------------------------
# The methods compared (each searches the search half of the rows; Jaccard is over all rows)

PYSUBGROUP_SCRIPT = r'''
import json, sys, time
import numpy as np, pandas as pd, pysubgroup as ps
search = pd.read_csv(sys.argv[1]); everything = pd.read_csv(sys.argv[2])
started = time.perf_counter()
best = None
for sign in (1.0, -1.0):  # under- and over-prediction
    frame = search.copy()
    frame["residual"] = sign * frame["residual"]
    space = ps.create_selectors(frame, nbins=10, ignore=["residual"])
    task = ps.SubgroupDiscoveryTask(frame, ps.NumericTarget("residual"), space,
                                    result_set_size=5, depth=2, qf=ps.StandardQFNumeric(0.5))
    quality, subgroup, *_ = ps.BeamSearch(beam_width=20).execute(task).results[0]
    if best is None or quality > best[0]:
        best = (quality, subgroup)
seconds = time.perf_counter() - started
rows = np.flatnonzero(best[1].covers(everything)).tolist()
print(json.dumps({"description": str(best[1]), "rows": rows, "seconds": seconds}))
'''


def ensure_pysubgroup() -> str | None:
    """Create the virtual environment for pysubgroup 0.9 once; None when it works."""
    python = VENV / "bin" / "python"
    if not python.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True)
        if made.returncode:
            return "venv failed"
    check = subprocess.run([str(python), "-c", "import pysubgroup"], capture_output=True)
    if check.returncode == 0:
        return None
    install = subprocess.run(
        [str(VENV / "bin" / "pip"), "install", "-q", "pysubgroup==0.9", "numpy<2", "pandas"],
        capture_output=True, text=True)
    return None if install.returncode == 0 else "pip install failed: " + install.stderr[-200:]


def run_pysubgroup(frame: pd.DataFrame, search_rows: np.ndarray) -> dict:
    """pysubgroup's best subgroup on the search rows (frame order), covering all rows."""
    data = frame.drop(columns=["score", "label"]).copy()
    data["residual"] = frame["label"] - frame["score"]
    with tempfile.TemporaryDirectory() as tmp:
        search_path, all_path = Path(tmp) / "search.csv", Path(tmp) / "all.csv"
        data.iloc[search_rows].reset_index(drop=True).to_csv(search_path, index=False)
        data.drop(columns=["residual"]).to_csv(all_path, index=False)
        done = subprocess.run([str(VENV / "bin" / "python"), "-c", PYSUBGROUP_SCRIPT,
                               str(search_path), str(all_path)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-500:])
    return json.loads(done.stdout)


def worst_algorithm1(pred: Predictions, search: np.ndarray) -> tuple[str, float]:
    """The argmax of M over 1000 Algorithm-1 subpopulations of the search rows, and seconds."""
    started = time.perf_counter()
    sub = Predictions.from_arrays(pred.score[search], pred.label[search],
                                  covariates=pred.covariates.iloc[search].reset_index(drop=True))
    generated = generate_subpopulations(sub, n_subpopulations=1000, seed=0)
    result = multicalibration(sub, generated)
    return result.argmax.description, time.perf_counter() - started


def compare(n: int, delta: float, group: str, *, with_pysubgroup: bool) -> dict:
    """One row of the table."""
    frame, mask = planted(n, group, delta, seed=1)
    pred = predictions(frame)
    rows = planted_rows(pred, mask)
    started = time.perf_counter()
    result = search_subpopulations(pred)
    seconds = time.perf_counter() - started
    first = result.findings[0]
    held = result.holdout_index
    search = np.setdiff1d(np.arange(pred.n), held)
    row = {"group": group, "share": mask.mean(), "delta": delta, "own_z": own_z(pred, rows),
           "search_j": jaccard(rows, np.asarray(first.subpopulation.index)),
           "search_hz": first.holdout_kuiper_z, "search_p": first.p_adjusted,
           "search_s": seconds, "search_desc": first.description}
    description, seconds = worst_algorithm1(pred, search)
    members = select_rows(pred, parse_filter(description, pred))
    row.update(alg1_j=jaccard(rows, np.asarray(members)),
               alg1_hz=held_out_z(pred, description, held), alg1_s=seconds)
    if with_pysubgroup:
        found = run_pysubgroup(frame, pred.row[search])
        in_frame = np.zeros(pred.n, dtype=bool)
        in_frame[found["rows"]] = True
        covered = np.flatnonzero(in_frame[pred.row])  # frame order -> score order
        row.update(psg_j=jaccard(rows, covered), psg_hz=own_z(pred, np.intersect1d(covered, held))
                   if np.intersect1d(covered, held).size else float("nan"),
                   psg_s=found["seconds"], psg_desc=found["description"])
    return row


def null_share(n: int, draws: int) -> tuple[float, int]:
    """Share of perfectly calibrated draws with any finding at p_adjusted < 0.05."""
    positives = 0
    for seed in range(draws):
        frame, _ = planted(n, None, 0.0, seed=1000 + seed, calibrated=True)
        result = search_subpopulations(predictions(frame), seed=seed)
        positives += any(f.p_adjusted < 0.05 for f in result.findings)
    return positives / draws, positives


def speed(n: int, extra: int) -> tuple[float, float, int]:
    """Wall and CPU seconds of one search on n rows with 7 + extra covariates."""
    frame, _ = planted(n, "level", 0.1, seed=2, extra=extra)
    pred = predictions(frame)
    wall, cpu = time.perf_counter(), time.process_time()
    search_subpopulations(pred)
    return time.perf_counter() - wall, time.process_time() - cpu, pred.covariates.shape[1]


def scale(n: int, sample_rows: int, engine: str) -> None:
    """Print the search-at-scale table (``mcviz search --engine ... --sample-rows ...``)."""
    from mcviz.cli import main as cli_main

    frame, mask = planted(n, "level", 0.05, seed=5, extra=3)
    with tempfile.TemporaryDirectory(prefix="bench-find-") as tmp:
        path = Path(tmp) / "planted.parquet"
        frame.to_parquet(path)
        own = own_z(predictions(frame), planted_rows(predictions(frame), mask))
        del frame
        out = Path(tmp) / "out.json"
        with out.open("w") as handle:
            saved, sys.stdout = sys.stdout, handle
            started = time.perf_counter()
            try:
                status = cli_main(["search", str(path), "--score", "score", "--label", "label",
                                   "--engine", engine, "--sample-rows", str(sample_rows),
                                   "--json"])
            finally:
                sys.stdout = saved
            total = time.perf_counter() - started
        if status:
            print(f"mcviz search failed with status {status}")
            return
        result = json.loads(out.read_text())
    first = result["findings"][0]
    searching = result["search"]["seconds"]
    print(f"\nsearch at scale: {n:,} rows x 10 covariates, region == r7 (2%) delta 0.05, own "
          f"D/sigma {own:.1f}; --engine {engine} --sample-rows {sample_rows:,}")
    print("| rows searched | search s | sample read + all-rows measurement s | first finding "
          "| held-out D/sigma (sample) | all-rows D/sigma | all-rows rows |\n|---|---|---|---|"
          "---|---|---|")
    print(f"| {result['sample']['searched']:,} | {searching:.1f} | {total - searching:.1f} "
          f"| {first['description']} | {first['holdout_kuiper_z']:.1f} "
          f"| {first['all_rows_kuiper_z']:.1f} | {first['all_rows_size']:,} |", flush=True)


def estimate_table() -> None:
    """Print search_estimate beside the peak memory tracemalloc measures."""
    import tracemalloc

    from mcviz.search import search_estimate

    print("\n| rows | covariates | estimated MB | measured peak MB | estimated s | wall s |"
          "\n|---|---|---|---|---|---|")
    for n, extra in ((30_000, 0), (100_000, 5), (300_000, 3)):
        frame, _ = planted(n, "level", 0.1, seed=2, extra=extra)
        pred = predictions(frame)
        estimate = search_estimate(pred.n, pred.covariates.shape[1])
        tracemalloc.start()
        started = time.perf_counter()
        search_subpopulations(pred)
        wall = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"| {n:,} | {pred.covariates.shape[1]} | {estimate.bytes / 1e6:.0f} "
              f"| {peak / 1e6:.0f} | {estimate.seconds:.1f} | {wall:.1f} |", flush=True)


def main() -> None:
    """Print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--null-draws", type=int, default=100)
    parser.add_argument("--null-n", type=int, default=20_000)
    parser.add_argument("--no-pysubgroup", action="store_true")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--no-planted", action="store_true")
    parser.add_argument("--scale", type=int, default=0, metavar="N",
                        help="also search N planted rows of a Parquet file at scale")
    parser.add_argument("--sample-rows", type=int, default=1_000_000)
    parser.add_argument("--engine", choices=("duckdb", "spark", "numpy"), default="duckdb")
    parser.add_argument("--no-estimate", action="store_true")
    args = parser.parse_args()
    if args.scale:
        scale(args.scale, args.sample_rows, args.engine)
    if not args.no_estimate:
        estimate_table()
    if not args.no_planted:
        planted_table(args)
    if args.null_draws:
        share, count = null_share(args.null_n, args.null_draws)
        print(f"\nperfectly calibrated draws (n = {args.null_n:,}, {args.null_draws} draws): "
              f"{count} with any finding at p_adjusted < 0.05 ({share:.1%})", flush=True)
    if not args.no_speed:
        print("\n| rows | covariates | wall s | CPU s |\n|---|---|---|---|")
        for n, extra in ((100_000, 1), (1_000_000, 3)):
            wall, cpu, p = speed(n, extra)
            print(f"| {n:,} | {p} | {wall:.1f} | {cpu:.1f} |", flush=True)


def planted_table(args: argparse.Namespace) -> None:
    """Print the table of planted groups."""
    problem = None if args.no_pysubgroup else ensure_pysubgroup()
    with_psg = not args.no_pysubgroup and problem is None
    print(f"planted groups, n = {args.n:,}; Jaccard of each method's first finding with the "
          "group (over all rows), its D/sigma on the held-out half, seconds")
    if problem:
        print(f"pysubgroup 0.9 could not be installed ({problem}): its columns are left out")
    head = ("| group (share) | delta | D/sigma of the group | search: Jaccard | held-out D/sigma "
            "| adj. p | s | Algorithm 1 worst of 1000: Jaccard | held-out D/sigma | s |")
    if with_psg:
        head += " pysubgroup 0.9 beam depth 2: Jaccard | held-out D/sigma | s |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for delta in (0.05, 0.10):
        for group in GROUPS:
            r = compare(args.n, delta, group, with_pysubgroup=with_psg)
            line = (f"| {GROUP_TEXT[group]} ({r['share']:.1%}) | {delta:.2f} | {r['own_z']:.1f} "
                    f"| {r['search_j']:.2f} | {r['search_hz']:.1f} | {r['search_p']:.1g} "
                    f"| {r['search_s']:.1f} | {r['alg1_j']:.2f} | {r['alg1_hz']:.1f} "
                    f"| {r['alg1_s']:.1f} |")
            if with_psg:
                line += f" {r['psg_j']:.2f} | {r['psg_hz']:.1f} | {r['psg_s']:.1f} |"
            print(line, flush=True)
            print(f"|   search found: {r['search_desc']}"
                  + (f"; pysubgroup: {r['psg_desc']}" if with_psg else ""), flush=True)


if __name__ == "__main__":
    main()
