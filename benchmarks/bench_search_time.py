"""CPU and wall seconds of the guided search on a planted shape (search_estimate's constants).

    PYTHONPATH=$PWD nice -n 10 prlimit --as=6000000000 -- \
        python benchmarks/bench_search_time.py --rows 1000000 --extra 2 --seeds 0-1

``--extra 2`` gives 10 covariates (8 without); the shape is benchmarks/shapes.py's
three-condition one unless ``--shape`` says otherwise. Data generation is not timed.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_find import predictions
from shapes import shaped

from mcviz.search import search_estimate, search_subpopulations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--extra", type=int, default=0)
    parser.add_argument("--shape", default="three")
    parser.add_argument("--seeds", default="0")
    args = parser.parse_args()
    low, _, high = args.seeds.partition("-")
    for seed in range(int(low), int(high or low) + 1):
        frame, _, _ = shaped(args.rows, args.shape, seed, extra=args.extra)
        pred = predictions(frame)
        del frame
        estimate = search_estimate(pred.n, len(pred.covariate_names))
        cpu, wall = time.process_time(), time.perf_counter()
        result = search_subpopulations(pred, seed=seed)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        first = result.findings[0].description if result.findings else "(none)"
        print(f"{args.shape} {pred.n:,} x {len(pred.covariate_names)} seed {seed}: CPU {cpu:.2f} s,"
              f" wall {wall:.2f} s, estimate {estimate.seconds:.2f} s "
              f"({estimate.seconds / cpu:.2f}x CPU); first finding: {first}", flush=True)


if __name__ == "__main__":
    main()
