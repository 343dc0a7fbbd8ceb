"""The evaluator's and the membership plan's two passes, numpy and compiled (numba), per block.

Writes (or reuses) ``bench_scale.py``'s data at --rows rows, draws ℓ = --subpopulations
Algorithm-1 subpopulations on it, and times, on one thread, what an engine does with each block
of score-sorted rows: the members of every subpopulation (``MembershipPlan.members_from_codes``)
and their eq. (5) summaries (``Evaluator.summaries``), once with numpy's passes
(``kernels.enabled = False``) and once with the compiled loops, alternately, --repeat times.
Prints seconds for all blocks and nanoseconds per member, and checks that both passes give the
same members and summaries to 1e-12 (relative). The loops are loaded and compiled before timing.

Run: python benchmarks/bench_kernels.py [--rows 1000000] [--block 131072] [--repeat 3]
     [--dir /tmp/mcviz-scale]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import COLUMNS, make_specs, write_data

from mcviz.core import kernels
from mcviz.core.evaluator import Evaluator
from mcviz.engines.numpy_engine import NumpyEngine


def one_pass(engine, plan, columns, blocks, compiled: bool) -> tuple[float, float, int, list]:
    """Seconds in the members and in the summaries over every block, members, summaries."""
    kernels.enabled = compiled
    p = engine.pred
    members_s = summaries_s = 0.0
    total = 0
    out = []
    for start, stop in blocks:
        codes = plan.encode({k: v.iloc[start:stop] for k, v in columns.items()})
        t = time.perf_counter()
        members = plan.members_from_codes(codes, stop - start, compiled=True)
        t1 = time.perf_counter()
        evaluator = Evaluator(p.score[start:stop], p.weight[start:stop],
                              run_end=p.run_end[start:stop])
        summary = evaluator.summaries(p.label[start:stop] - p.score[start:stop], members,
                                      adjacent=False)
        t2 = time.perf_counter()
        members_s += t1 - t
        summaries_s += t2 - t1
        total += sum(len(m) for m in members)
        out.append(summary)
    kernels.enabled = True
    return members_s, summaries_s, total, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--subpopulations", type=int, default=1000)
    parser.add_argument("--block", type=int, default=1 << 17)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "mcviz-scale"))
    args = parser.parse_args()
    from mcviz.engines.numpy_engine import _blocks

    data = write_data(Path(args.dir), args.rows)
    specs = make_specs(data, args.subpopulations, 0)["specs"]
    engine = NumpyEngine(str(data), COLUMNS, threads=1)
    plan, columns = engine._columns(specs)
    blocks = list(_blocks(engine.pred.run_end, args.block))
    if kernels.loops(force=True) is None:
        sys.exit("numba is not installed: there are no compiled loops to time")
    one_pass(engine, plan, columns, blocks[:1], True)  # load (and compile) before timing
    times = {False: [], True: []}
    results = {}
    for _ in range(args.repeat):
        for compiled in (False, True):
            members_s, summaries_s, total, out = one_pass(engine, plan, columns, blocks,
                                                          compiled)
            times[compiled].append((members_s, summaries_s))
            results[compiled] = out
    for a, b in zip(results[False], results[True], strict=True):
        for name in ("count", "weight", "variance", "offset", "high", "low"):
            np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-12,
                                       atol=1e-12, err_msg=name)
    print(f"{args.rows:,} rows, {len(blocks)} blocks of {args.block:,}, {total:,} members "
          f"({total / args.rows:.1f} a row), one thread, median of {args.repeat}; "
          "the same summaries to 1e-12")
    print("| pass | members s | ns/member | summaries s | ns/member |")
    print("|---|---|---|---|---|")
    for compiled, name in ((False, "numpy"), (True, "compiled")):
        members_s = statistics.median(t[0] for t in times[compiled])
        summaries_s = statistics.median(t[1] for t in times[compiled])
        print(f"| {name} | {members_s:.3f} | {members_s / total * 1e9:.1f} | "
              f"{summaries_s:.3f} | {summaries_s / total * 1e9:.1f} |")


if __name__ == "__main__":
    main()
