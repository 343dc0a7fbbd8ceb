"""Each fix at 10^5 and 10^6 rows on planted data, side by side with MCGrad.

    nice -n 10 prlimit --as=6000000000 -- python benchmarks/bench_fix.py [--sizes 100000,1000000]
        [--mcgrad-python /work/venvs/mcgrad/bin/python] [--no-mcgrad]

Planted data (mcviz.recalibration.simulate: the model reports sigma(1.3 logit s); two disjoint
findings of opposite sign, +-0.8 on the logit), split in half by score strata (seed 0). Each
method is fitted on the fit half (``findings`` searches it, three passes at most) and judged on
the held-out half: M (eq. (4) of paper 000) over 300 Algorithm-1 subpopulations of the held-out
rows plus the two planted findings, the largest held-out D/sigma of the planted findings, and
the log loss. ``seconds`` is the wall time of fit + judgement (``verify_fix`` without the
reporting search), with its CPU time in parentheses (the machine is shared: wall time swells
with the load, CPU time much less); memory is the rise of the child process's peak RSS during
the fit and judgement, beyond the peak of loading the data.
``boost (MCGrad defaults)`` is mcviz's boost with MCGrad's tree settings (94 trees of 5
leaves, learning rate 0.0287) instead of mcviz's (200 trees of 8 leaves, 0.1).

MCGrad (the ``mcgrad`` package; it needs torch, so it runs in a virtual environment of its own,
``--mcgrad-python``) is fitted on the same fit rows with its defaults except
``early_stopping_use_crossvalidation=False`` (a 40% hold-out for early stopping instead of
5-fold cross-validation, which took 197 s at 10^5 rows), and judged by the same code.
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

from mcviz.stats.binning import calibration_metrics
from mcviz.io import load_predictions
from mcviz.stats.multical import multicalibration
from mcviz.recalibration import (
    MCGRAD_TREES,
    Recalibrator,
    holdout_split,
    rescored,
    subset,
    verify_fix,
)
from mcviz.recalibration.simulate import PLANTED, planted_fix_data
from mcviz.subpopulations import Subpopulation, filter_subpopulation, generate_subpopulations

COVARIATES = ["region", "age", "channel", "tenure"]
METHODS = ("platt", "isotonic", "beta", "findings", "boost")

MCGRAD_SCRIPT = r"""
import sys, time, pandas as pd
from mcgrad.methods import MCGrad
fit, held, out = sys.argv[1:4]
train, test = pd.read_parquet(fit), pd.read_parquet(held)
cats, nums = ["region", "channel"], ["age", "tenure"]
started = time.perf_counter()
model = MCGrad(random_state=0, early_stopping_use_crossvalidation=False)
model.fit(train, "score", "label", categorical_feature_column_names=cats,
          numerical_feature_column_names=nums)
scores = model.predict(test, "score", categorical_feature_column_names=cats,
                       numerical_feature_column_names=nums)
pd.DataFrame({"fixed": scores}).to_parquet(out)
print(time.perf_counter() - started, len(model.mr))
"""


def judge(evaluation, scores, family):
    """M reduction, largest planted D/sigma after, log loss before and after."""
    after, position = rescored(evaluation, scores)
    moved = [Subpopulation(s.id, s.depth, s.conditions, s.description,
                           np.sort(position[s.index])) for s in family]
    before_m, after_m = multicalibration(evaluation, family), multicalibration(after, moved)
    planted = [len(family) - 1, len(family)]  # the last two (ids shift by the full population)
    return {"m_reduction": 1 - after_m.metric / before_m.metric,
            "planted_z_after": float(max(after_m.kuiper_z[k] for k in planted)),
            "log_loss_before": calibration_metrics(evaluation).log_loss,
            "log_loss_after": calibration_metrics(after).log_loss}


def run_mcgrad(python, fit_pred, evaluation, family):
    def frame(pred):
        out = pred.covariates[COVARIATES].copy()
        out["score"], out["label"] = pred.score, pred.label
        return out

    with tempfile.TemporaryDirectory() as directory:
        paths = [str(Path(directory) / name) for name in ("fit.parquet", "held.parquet",
                                                          "out.parquet")]
        frame(fit_pred).to_parquet(paths[0])
        frame(evaluation).to_parquet(paths[1])
        started = time.perf_counter()
        done = subprocess.run([python, "-c", MCGRAD_SCRIPT, *paths], capture_output=True,
                              text=True, check=False)
        seconds = time.perf_counter() - started
        if done.returncode:
            return {"error": done.stderr.strip().splitlines()[-1]}
        scores = pd.read_parquet(paths[2])["fixed"].to_numpy()
    rounds = done.stdout.split()[-1]
    return {**judge(evaluation, scores, family), "seconds": seconds, "note": f"{rounds} rounds"}


def prepared(n: int):
    """The planted predictions, the split, the held-out rows and the judging family."""
    frame = planted_fix_data(n, seed=0)
    pred = load_predictions(frame.drop(columns="truth"), score="score", label="label",
                            covariates=COVARIATES)
    fit_index, held_index = holdout_split(pred, 0.5, 0)
    evaluation = subset(pred, held_index)
    family = list(generate_subpopulations(evaluation, n_subpopulations=300,
                                          seed=0).subpopulations[1:])
    family += [filter_subpopulation(evaluation, d) for d in PLANTED]
    return pred, fit_index, evaluation, family


def child(n: int, method: str) -> dict:
    """One method at one size, in this process: metrics, seconds and peak memory (RSS)."""
    import resource

    pred, _, evaluation, family = prepared(n)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    trees = MCGRAD_TREES if method.startswith("boost (") else None
    started, cpu = time.perf_counter(), time.process_time()
    result = verify_fix(pred, scopes=PLANTED, seed=0, search=False, n_subpopulations=300,
                        recalibrator=Recalibrator(method.split()[0], trees=trees))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    fixed = result.eval_after.score[result.eval_position]
    return {**judge(evaluation, fixed, family), "seconds": seconds, "cpu": cpu,
            "note": result.recalibrator.describe()[:60], "extra_mb": (peak - base) / 2**20,
            "baseline_mb": base / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--methods", default=",".join((*METHODS, "boost (MCGrad defaults)")))
    parser.add_argument("--mcgrad-python", default="/work/venvs/mcgrad/bin/python")
    parser.add_argument("--no-mcgrad", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("ROWS", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1])))
        return
    print("| rows | method | held-out M reduction | max planted D/σ after | log loss before → "
          "after | seconds (CPU) | peak memory beyond the data | note |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(v) for v in args.sizes.split(",")):
        rows = []
        for method in args.methods.split(","):
            done = subprocess.run([sys.executable, __file__, "--child", str(n), method],
                                  capture_output=True, text=True, check=False)
            rows.append((method, json.loads(done.stdout) if done.returncode == 0 else
                         {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}))
            _print(n, *rows[-1])
        if not args.no_mcgrad and Path(args.mcgrad_python).exists():
            pred, fit_index, evaluation, family = prepared(n)
            _print(n, "MCGrad 0.1.5", run_mcgrad(args.mcgrad_python, subset(pred, fit_index),
                                                  evaluation, family))


def _print(n: int, method: str, r: dict) -> None:
    if "error" in r:
        print(f"| {n:,} | {method} | – | – | – | – | – | {r['error']} |", flush=True)
        return
    memory = f"{r['extra_mb']:.0f} MB" if "extra_mb" in r else "–"
    cpu = f" ({r['cpu']:.1f})" if "cpu" in r else ""
    print(f"| {n:,} | {method} | {r['m_reduction']:.0%} | {r['planted_z_after']:.2f} | "
          f"{r['log_loss_before']:.4f} → {r['log_loss_after']:.4f} | {r['seconds']:.1f}{cpu} | "
          f"{memory} | {r['note']} |", flush=True)


if __name__ == "__main__":
    main()
