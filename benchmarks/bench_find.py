"""Guided search vs the worst Algorithm-1 subpopulation vs pysubgroup on planted shapes.

Run (about 55 minutes on the shared 2-core machine with the defaults)::

    nice -n 10 prlimit --as=8000000000 -- python benchmarks/bench_find.py \\
        [--more all [--more-start 0]]  # only issue #42's shapes and null (find_more.py)
        [--n 100000] [--draws 15] [--big-n 1000000] [--big-draws 15] [--psg-big-draws 2] \\
        [--null-draws 400] [--null-start 0] [--null-jobs 1] [--null-n 20000] [--no-pysubgroup] \\
        [--shapes rare,three,...]

Shapes (:mod:`shapes`, 10^5 rows and 8 covariates of the kinds real files hold, the planted
group's own D/sigma about 13): ``rare`` (one rare level of a 200-level Zipf nominal),
``three`` (level set & band & threshold), ``score`` (a level & score >= 0.6), ``two`` (two
groups of opposite sign), ``missing``, ``band``; then ``three`` at 10^6 rows x 10 covariates.
For each shape and seeded draw, each method searches the same search rows (the share not held
out, 70% by default): this
search (:func:`mcviz.search_subpopulations`), the worst of 1000 Algorithm-1 subpopulations
(eq. (4)'s argmax) and pysubgroup 0.9's beam search. A draw is recovered when the first
finding's Jaccard index with the planted group is at least 0.8 (for ``two``: each group among
the first two findings) with a held-out p below 0.01 (this search: Holm-adjusted over its
findings; the others report one subgroup: its held-out Brownian p). The table gives the share of
draws recovered, and medians of Jaccard, held-out D/sigma, p and CPU seconds. Then the share of
perfectly calibrated draws with 30 covariates (20 of pure noise, one of 200 levels) in which
any finding has p_adjusted < 0.05 (400 seeded draws by default, about 15 CPU minutes;
``--null-jobs 2`` uses both cores: the count, the rate with its Wilson and Clopper-Pearson 95%
intervals, and per-100-seed blocks), and the speed at 10^5 x 8 and 10^6 x 10 beside
``mcviz metrics --subpopulations 1000`` on the same file.

pysubgroup 0.9 pins numpy < 2, so it runs in its own virtual environment (``/work/venvs/psg``
or ``$MCVIZ_PSG_VENV``, created on first use) through a subprocess, on the same search rows as
a CSV file: beam search (width 20), depth 3, selectors from ``create_selectors(nbins=10)`` over
every covariate and the score, quality ``StandardQFNumeric(a=0.5)`` on the residual (mean
residual times the square root of the size), both directions; its CPU seconds are measured in
the subprocess. ``--scale N`` also runs ``mcviz search --engine duckdb --sample-rows M`` on a
Parquet file (see :func:`scale`). The older generator :func:`planted` (age, income, region, ...)
stays for the tests that use it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcviz import Predictions, brownian_range_sf, generate_subpopulations, multicalibration
from mcviz.search import search_subpopulations
from mcviz.settings import SearchSettings
from mcviz.subpopulations import parse_filter, select_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import SHAPE_TEXT, SHAPES, calibrated_wide, shaped

GROUPS = ("level", "set", "band", "over")
GROUP_TEXT = {
    "level": "region == r7",
    "set": "occupation in {o1, o2} and income >= MEDIAN",
    "band": "age >= 30 and age < 40 and x1 > 1",
    "over": "age >= 62 and sex == F",
}
VENV = Path(os.environ.get("MCVIZ_PSG_VENV", "/work/venvs/psg"))


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
# The methods compared (each searches the same search rows; Jaccard is over all rows)

PYSUBGROUP_SCRIPT = r'''
import json, sys, time
import numpy as np, pandas as pd, pysubgroup as ps
search = pd.read_csv(sys.argv[1]); everything = pd.read_csv(sys.argv[2])
started = time.process_time()
bests = []
for sign in (1.0, -1.0):  # under- and over-prediction
    frame = search.copy()
    frame["residual"] = sign * frame["residual"]
    space = ps.create_selectors(frame, nbins=10, ignore=["residual"])
    task = ps.SubgroupDiscoveryTask(frame, ps.NumericTarget("residual"), space,
                                    result_set_size=5, depth=int(sys.argv[3]),
                                    qf=ps.StandardQFNumeric(0.5))
    results = ps.BeamSearch(beam_width=20).execute(task).results
    quality, subgroup, *_ = results[0]
    bests.append((quality, subgroup, results[1][1] if len(results) > 1 else subgroup))
seconds = time.process_time() - started
bests.sort(key=lambda item: -item[0])  # the better direction first
print(json.dumps({"description": str(bests[0][1]), "seconds": seconds,
                  "rows": np.flatnonzero(bests[0][1].covers(everything)).tolist(),
                  "second": np.flatnonzero(bests[1][1].covers(everything)).tolist(),
                  "next": np.flatnonzero(bests[0][2].covers(everything)).tolist(),
                  "next_description": str(bests[0][2])}))
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


def run_pysubgroup(frame: pd.DataFrame, search_rows: np.ndarray, *, depth: int = 2,
                   with_score: bool = False, cpu_limit: int | None = None) -> dict | None:
    """pysubgroup's best subgroup on the search rows (frame order), covering all rows.

    ``rows``: the best subgroup (the better direction), ``second``: the other direction's best,
    ``next``: the better direction's second best. With ``cpu_limit`` (CPU seconds, the process's
    RLIMIT_CPU) a run that exceeds it returns None.
    """
    data = frame.drop(columns=["label"] if with_score else ["score", "label"]).copy()
    data["residual"] = frame["label"] - frame["score"]
    with tempfile.TemporaryDirectory() as tmp:
        search_path, all_path = Path(tmp) / "search.csv", Path(tmp) / "all.csv"
        data.iloc[search_rows].reset_index(drop=True).to_csv(search_path, index=False)
        data.drop(columns=["residual"]).to_csv(all_path, index=False)
        limit = None if cpu_limit is None else (
            lambda: resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5)))
        done = subprocess.run([str(VENV / "bin" / "python"), "-c", PYSUBGROUP_SCRIPT,
                               str(search_path), str(all_path), str(depth)],
                              capture_output=True, text=True, preexec_fn=limit)
    if cpu_limit is not None and done.returncode < 0:  # SIGXCPU / SIGKILL at the CPU limit
        return None
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


# --------------------------------------------------------------------------------------------
# The shapes of issue #30 (benchmarks/shapes.py)


def _recovery(groups: list[np.ndarray], found: list[np.ndarray]) -> tuple[float, list[int]]:
    """Jaccard of the first finding (each group among the first two when there are two)."""
    if len(groups) == 1:
        return (jaccard(groups[0], found[0]) if found else 0.0), [0]
    scores, which = [], []
    for group in groups:
        options = [jaccard(group, f) for f in found[:2]] or [0.0]
        scores.append(max(options))
        which.append(int(np.argmax(options)))
    return min(scores), which


def _psg_covered(pred: Predictions, psg: dict) -> list[np.ndarray]:
    """pysubgroup's two subgroups (frame order) as positions in score order."""
    covered = []
    for key in ("rows", "second"):
        in_frame = np.zeros(pred.n, dtype=bool)
        in_frame[psg[key]] = True
        covered.append(np.flatnonzero(in_frame[pred.row]))
    return covered


def shape_draw(shape: str, n: int, seed: int, *, extra: int, with_psg: bool) -> dict:
    """One draw of one shape: the three methods on the same search rows."""
    frame, first, second = shaped(n, shape, seed, extra=extra)
    pred = predictions(frame)
    groups = [planted_rows(pred, m) for m in (first, second) if m.any()]
    row = {"own": min(own_z(pred, g) for g in groups)}
    cpu = time.process_time()
    result = search_subpopulations(pred, seed=seed)
    row["search_s"] = time.process_time() - cpu
    found = [np.asarray(f.subpopulation.index) for f in result.findings]
    row["search_j"], which = _recovery(groups, found)
    chosen = [result.findings[k] for k in which] if result.findings else []
    row["search_hz"] = min((f.holdout_kuiper_z for f in chosen), default=np.nan)
    row["search_p"] = max((f.p_adjusted for f in chosen), default=1.0)
    row["search_desc"] = result.findings[0].description if result.findings else "(none)"
    held = result.holdout_index
    search = np.setdiff1d(np.arange(pred.n), held)
    cpu = time.process_time()
    description, _ = worst_algorithm1(pred, search)
    row["alg1_s"] = time.process_time() - cpu
    members = np.asarray(select_rows(pred, parse_filter(description, pred)))
    row["alg1_j"], _ = _recovery(groups, [members])
    row["alg1_hz"] = held_out_z(pred, description, held)
    row["alg1_p"] = float(brownian_range_sf(row["alg1_hz"])) if np.isfinite(
        row["alg1_hz"]) else 1.0
    if with_psg:
        psg = run_pysubgroup(frame, pred.row[search], depth=3 if shape == "three" else 2,
                             with_score=True)
        covered = _psg_covered(pred, psg)
        row["psg_j"], which = _recovery(groups, covered)
        zs = []
        for k in which:
            rows = np.intersect1d(covered[k], held)
            zs.append(own_z(pred, rows) if rows.size else np.nan)
        row["psg_hz"] = min(zs)
        row["psg_p"] = max(float(brownian_range_sf(z)) if np.isfinite(z) else 1.0 for z in zs)
        row["psg_s"] = psg["seconds"]
        row["psg_desc"] = psg["description"]
    return row


def psg_draw(shape: str, n: int, seed: int, *, extra: int = 0) -> dict:
    """pysubgroup alone on one draw: the search rows this search would use with ``seed``.

    The split (:func:`mcviz.search._confirm.split_rows` with ``default_rng(seed)``) depends on
    the seed and the rows only, so pysubgroup's column can be run apart from (and long before)
    the search's; ``--psg-only`` prints one JSON line per draw.
    """
    from mcviz.search._confirm import split_rows
    from mcviz.search.rules import RULES

    frame, first, second = shaped(n, shape, seed, extra=extra)
    pred = predictions(frame)
    groups = [planted_rows(pred, m) for m in (first, second) if m.any()]
    search, held, _ = split_rows(pred, SearchSettings.holdout, np.random.default_rng(seed),
                                 max_search=RULES.max_search_rows)
    psg = run_pysubgroup(frame, pred.row[search], depth=3 if shape == "three" else 2,
                         with_score=True)
    covered = _psg_covered(pred, psg)
    j, which = _recovery(groups, covered)
    zs = [own_z(pred, np.intersect1d(covered[k], held)) if np.intersect1d(covered[k], held).size
          else np.nan for k in which]
    p = max(float(brownian_range_sf(z)) if np.isfinite(z) else 1.0 for z in zs)
    return {"shape": shape, "n": n, "seed": seed, "psg_j": j, "psg_hz": float(min(zs)),
            "psg_p": p, "psg_s": psg["seconds"], "psg_desc": psg["description"]}


def shape_table(shapes: list[str], n: int, draws: int, *, extra: int = 0,
                with_psg: bool = True, psg_draws: int | None = None) -> None:
    """Print one row per shape: recovered share and medians over seeded draws."""
    methods = [("search", "this search"), ("alg1", "Algorithm-1 argmax of 1000")]
    if with_psg:
        methods.append(("psg", "pysubgroup 0.9 beam 20, depth 3 (three) or 2"))
    print(f"\nplanted shapes, n = {n:,}, {8 + extra} covariates, {draws} seeded draws each: "
          "recovered = Jaccard >= 0.8 and held-out p < 0.01 (this search: Holm-adjusted); "
          "medians of Jaccard, held-out D/sigma, p, CPU seconds")
    head = "| shape | own D/sigma (min-max) |" + "".join(
        f" {label}: recovered | J | held-out D/σ | p | s |" for _, label in methods)
    print(head)
    print("|" + "---|" * (head.count("|") - 1), flush=True)
    for shape in shapes:
        rows = []
        for seed in range(draws):
            psg = with_psg and (psg_draws is None or seed < psg_draws)
            rows.append(shape_draw(shape, n, seed, extra=extra, with_psg=psg))
            r = rows[-1]
            print(f"|   draw {seed}: own {r['own']:.1f}; search J {r['search_j']:.2f} "
                  f"p {r['search_p']:.1g} {r['search_s']:.1f}s: {r['search_desc']}"
                  + (f"; pysubgroup J {r['psg_j']:.2f}: {r['psg_desc']}" if "psg_j" in r
                     else ""), flush=True)
        own = [r["own"] for r in rows]
        line = (f"| {shape}: {SHAPE_TEXT[shape]} | {np.median(own):.1f} "
                f"({min(own):.1f}-{max(own):.1f}) |")
        for key, _ in methods:
            done = [r for r in rows if f"{key}_j" in r]
            hits = sum(r[f"{key}_j"] >= 0.8 and r[f"{key}_p"] < 0.01 for r in done)
            med = {k: float(np.nanmedian([r[f"{key}_{k}"] for r in done]))
                   for k in ("j", "hz", "p", "s")}
            line += (f" {hits}/{len(done)} | {med['j']:.2f} | {med['hz']:.1f} | {med['p']:.1g} "
                     f"| {med['s']:.1f} |")
        print(line, flush=True)


NULL_VARIANTS = ("this search", "Brownian p only", "larger of the two")
"""How the calibrated draws are counted: the search's p-values (simulated for small held-out
groups, :func:`mcviz.search._confirm.holdout_p_values`), the Brownian-range p of every
finding (as before the simulated p), and the larger of the two; each Holm-adjusted over the
findings."""


def null_draw(n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """One calibrated draw: any finding at p_adjusted < 0.05 per :data:`NULL_VARIANTS`, and a
    line per finding confirmed in any of them."""
    from mcviz.search._confirm import holm

    result = search_subpopulations(predictions(calibrated_wide(n, 5000 + seed)), seed=seed)
    if not result.findings:
        return np.zeros(len(NULL_VARIANTS), dtype=bool), []
    own = np.array([f.p_value for f in result.findings])
    brownian = np.array([float(brownian_range_sf(f.holdout_kuiper_z)) for f in result.findings])
    adjusted = np.array([[f.p_adjusted for f in result.findings], holm(brownian),
                         holm(np.maximum(own, brownian))])
    lines = []
    for j in np.flatnonzero((adjusted < 0.05).any(axis=0)):
        f = result.findings[j]
        lines.append(f"  seed {seed}: {f.description} (held-out rows {f.holdout_size}, D/sigma "
                     f"{f.holdout_kuiper_z:.2f}, p {f.p_value:.2g}, Brownian p "
                     f"{brownian[j]:.2g}, p_adjusted "
                     f"{' / '.join(f'{v:.2g}' for v in adjusted[:, j])})")
    return (adjusted < 0.05).any(axis=1), lines


def wide_null(n: int, draws: int, start: int = 0, jobs: int = 1) -> np.ndarray:
    """Calibrated draws with 30 covariates: per seed and :data:`NULL_VARIANTS`, any finding at
    p_adjusted < 0.05? (a boolean array of shape (draws, 3))

    Seeds ``start`` .. ``start + draws - 1`` (data of seed ``5000 + seed``, searched with
    ``seed``), in ``jobs`` processes; one line per finding confirmed in any variant.
    """
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    seeds = range(start, start + draws)
    hits = np.zeros((draws, len(NULL_VARIANTS)), dtype=bool)
    with ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        done = (pool.map if pool is not None else map)(partial(null_draw, n), seeds)
        for k, (hit, lines) in enumerate(done):
            hits[k] = hit
            for line in lines:
                print(line, flush=True)
    return hits


def rate_interval(count: int, draws: int) -> tuple[tuple[float, float], tuple[float, float]]:
    r"""Wilson and Clopper-Pearson 95% intervals of a rate ``count / draws``.

    Wilson: :math:`(\hat p + z^2/2m \pm z\sqrt{\hat p(1-\hat p)/m + z^2/4m^2})/(1 + z^2/m)`;
    Clopper-Pearson: the beta quantiles :math:`B_{0.025}(k, m-k+1)`, :math:`B_{0.975}(k+1, m-k)`
    (exact, conservative). The example agrees with statsmodels' ``proportion_confint``
    (``method="wilson"`` and ``"beta"``).

    Examples
    --------
    >>> [tuple(round(v, 4) for v in ci) for ci in rate_interval(14, 400)]
    [(0.021, 0.0579), (0.0193, 0.058)]
    """
    from scipy.stats import beta

    z = 1.959963984540054
    p = count / draws
    centre = (p + z**2 / (2 * draws)) / (1 + z**2 / draws)
    half = z * np.sqrt(p * (1 - p) / draws + z**2 / (4 * draws**2)) / (1 + z**2 / draws)
    low = float(beta.ppf(0.025, count, draws - count + 1)) if count else 0.0
    high = float(beta.ppf(0.975, count + 1, draws - count)) if count < draws else 1.0
    return (float(centre - half), float(centre + half)), (low, high)


def null_table(n: int, draws: int, start: int = 0, jobs: int = 1) -> None:
    """Print the calibrated-null rate with its 95% intervals and per-100-seed blocks."""
    print(f"\nperfectly calibrated draws (n = {n:,}, 30 covariates: 20 of pure noise, one of "
          f"200 levels), seeds {start}-{start + draws - 1}: draws with any finding at "
          f"p_adjusted < 0.05 (p_adjusted: {' / '.join(NULL_VARIANTS)})", flush=True)
    started, wall = time.process_time(), time.perf_counter()
    hits = wide_null(n, draws, start, jobs)
    for name, column in zip(NULL_VARIANTS, hits.T, strict=True):
        count = int(column.sum())
        (w_low, w_high), (c_low, c_high) = rate_interval(count, draws)
        print(f"{name}: {count}/{draws} = {count / draws:.1%} (95% Wilson {w_low:.1%}-"
              f"{w_high:.1%}, Clopper-Pearson {c_low:.1%}-{c_high:.1%}); target <= 5%",
              flush=True)
    print(f"{time.perf_counter() - wall:.0f} s wall; CPU of this process "
          f"{time.process_time() - started:.0f} s ({jobs} process(es))")
    print("| seeds | draws | " + " | ".join(NULL_VARIANTS) + " |\n|---|---|---|---|---|")
    for block in range(start, start + draws, 100):
        part = hits[block - start: block - start + 100]
        print(f"| {block}-{block + len(part) - 1} | {len(part)} | "
              + " | ".join(str(int(v)) for v in part.sum(axis=0)) + " |")


def timed_command(arguments: list[str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system, of the child) seconds of ``python -m mcviz ...``, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mcviz", *arguments], capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        print(f"mcviz {arguments[0]} failed:", done.stderr[-300:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def speed_against_metrics(n: int, extra: int, repeats: int = 2, seed: int = 0) -> None:
    """Whole commands on one Parquet file: ``mcviz search`` beside ``metrics --subpopulations``.

    Both read the same file in a process of their own (start-up, reading and output
    included); wall and CPU seconds, the smaller of ``repeats`` runs each, the two commands
    run alternately so that both see the same load. "in search" is the wall time of
    :func:`~mcviz.search.search_subpopulations` itself (its JSON's ``seconds``: the rest is
    start-up, reading and output). The ratios are those of the search to ``mcviz metrics FILE
    --subpopulations 1000`` (issue #30 asks for at most 2). ``seed`` is the planted draw of the
    three-condition shape (the search's own cost depends on the draw: how many pool entries
    the first finding explains; ``--speed-seeds`` runs several).
    """
    frame, _, _ = shaped(n, "three", seed, extra=extra)
    columns = frame.shape[1] - 2
    with tempfile.TemporaryDirectory(prefix="bench-find-") as tmp:
        path = Path(tmp) / "shape.parquet"
        frame.to_parquet(path)
        del frame
        common = [str(path), "--score", "score", "--label", "label", "--json"]
        runs = {"search": [], "metrics": []}
        for _ in range(repeats):
            runs["search"].append(timed_command(["search", *common]))
            runs["metrics"].append(timed_command(["metrics", *common, "--subpopulations",
                                                  "1000"]))
    (s_wall, s_cpu), (m_wall, m_cpu) = ((min(r[0] for r in runs[k]), min(r[1] for r in runs[k]))
                                        for k in ("search", "metrics"))
    inside = min(json.loads(r[2])["search"]["seconds"] if r[2].strip() else np.nan
                 for r in runs["search"])
    print(f"| {n:,} | {columns} | {seed} | {s_wall:.1f} | {s_cpu:.1f} | {inside:.1f} | "
          f"{m_wall:.1f} | {m_cpu:.1f} | "
          f"{s_wall / m_wall:.2f} | {s_cpu / m_cpu:.2f} | {os.getloadavg()[0]:.1f} |",
          flush=True)


def main() -> None:
    """Print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--draws", type=int, default=15)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--big-n", type=int, default=1_000_000)
    parser.add_argument("--big-draws", type=int, default=15)
    parser.add_argument("--psg-draws", type=int, default=15,
                        help="draws of each 10^5 shape pysubgroup runs on (about a minute each)")
    parser.add_argument("--psg-big-draws", type=int, default=2,
                        help="draws of the 10^6 shape pysubgroup runs on (it is slow)")
    parser.add_argument("--null-draws", type=int, default=400,
                        help="calibrated draws (about 2 CPU s each at --null-n 20000)")
    parser.add_argument("--null-start", type=int, default=0, help="first calibrated seed")
    parser.add_argument("--null-jobs", type=int, default=1,
                        help="processes for the calibrated draws (2: both cores)")
    parser.add_argument("--null-n", type=int, default=20_000)
    parser.add_argument("--no-pysubgroup", action="store_true")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--speed-seeds", default="0", metavar="SEEDS",
                        help="planted draws of the speed table (e.g. 0-4)")
    parser.add_argument("--old-planted", action="store_true",
                        help="also the older table of the age/income/region generator")
    parser.add_argument("--scale", type=int, default=0, metavar="N",
                        help="also search N planted rows of a Parquet file at scale")
    parser.add_argument("--sample-rows", type=int, default=1_000_000)
    parser.add_argument("--engine", choices=("duckdb", "spark", "numpy"), default="duckdb")
    parser.add_argument("--estimate", action="store_true", help="also the memory estimate table")
    parser.add_argument("--more", default="", metavar="SHAPES",
                        help="only the shapes of issue #42 (benchmarks/shapes_more.py: "
                        "levels25,codes,four,union,tiny,opposite,codes_declared or 'all'), "
                        "--draws each at --n, then --null-draws calibrated draws of 30 "
                        "covariates at --null-n (find_more.py)")
    parser.add_argument("--more-start", type=int, default=0, help="first seed of --more")
    parser.add_argument("--more-psg", type=int, default=0, metavar="DRAWS",
                        help="pysubgroup 0.9 on this many draws of each --more shape")
    parser.add_argument("--psg-cpu", type=int, default=300,
                        help="CPU seconds per pysubgroup draw of --more-psg")
    parser.add_argument("--psg-drop", default="", metavar="COLUMNS",
                        help="covariates pysubgroup is not given in --more-psg (e.g. merchant)")
    parser.add_argument("--psg-only", default="", metavar="SEEDS",
                        help="only pysubgroup, on these draws (e.g. 0-4) of --shapes: JSON lines")
    args = parser.parse_args()
    if args.more:
        from find_more import ALL, levels_oracle, more_table, null_30, psg_table

        names = list(ALL) if args.more == "all" else [s for s in args.more.split(",") if s]
        if args.draws:
            more_table(names, args.n, args.draws, args.more_start)
            for name, target in (("levels25", 13.0), ("levels25_d30", 30.0)):
                if name in names:
                    levels_oracle(args.n, args.draws, args.more_start, target)
        if args.more_psg:
            problem = ensure_pysubgroup()
            if problem:
                raise SystemExit(f"pysubgroup 0.9: {problem}")
            psg_table(names, args.n, args.more_psg, args.more_start, args.psg_cpu,
                      tuple(c for c in args.psg_drop.split(",") if c))
        if args.null_draws:
            null_30(args.null_n, args.null_draws, args.null_start)
        return
    if args.psg_only:
        low, _, high = args.psg_only.partition("-")
        problem = ensure_pysubgroup()
        if problem:
            raise SystemExit(f"pysubgroup 0.9: {problem}")
        for seed in range(int(low), int(high or low) + 1):  # every shape's draw, then the next
            for shape in [s for s in args.shapes.split(",") if s]:
                print(json.dumps(psg_draw(shape, args.n, seed)), flush=True)
        return
    problem = None if args.no_pysubgroup else ensure_pysubgroup()
    if problem:
        print(f"pysubgroup 0.9 could not be installed ({problem}): its columns are left out")
    with_psg = not args.no_pysubgroup and problem is None
    if args.scale:
        scale(args.scale, args.sample_rows, args.engine)
    if args.estimate:
        estimate_table()
    shapes = [s for s in args.shapes.split(",") if s]
    if shapes and args.draws:
        shape_table(shapes, args.n, args.draws, with_psg=with_psg, psg_draws=args.psg_draws)
    if args.big_draws:
        shape_table(["three"], args.big_n, args.big_draws, extra=2, with_psg=with_psg,
                    psg_draws=args.psg_big_draws)
    if args.old_planted:
        planted_table(args)
    if args.null_draws:
        null_table(args.null_n, args.null_draws, args.null_start, args.null_jobs)
    if not args.no_speed:
        print("\n`mcviz search FILE` and `mcviz metrics FILE --subpopulations 1000` (whole "
              "commands, same Parquet file, best of 2 each)\n\n| rows | covariates | draw | "
              "search wall s | search CPU s | in search s | metrics wall s | metrics CPU s | "
              "wall ratio | CPU ratio | load |\n|---|---|---|---|---|---|---|---|---|---|---|")
        low, _, high = args.speed_seeds.partition("-")
        for n, extra in ((100_000, 0), (1_000_000, 2)):
            for seed in range(int(low), int(high or low) + 1):
                speed_against_metrics(n, extra, seed=seed)


def planted_table(args: argparse.Namespace) -> None:
    """Print the table of planted groups."""
    problem = None if args.no_pysubgroup else ensure_pysubgroup()
    with_psg = not args.no_pysubgroup and problem is None
    print(f"planted groups, n = {args.n:,}; Jaccard of each method's first finding with the "
          "group (over all rows), its D/sigma on the held-out rows, seconds")
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
