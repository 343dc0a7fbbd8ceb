"""CPU of ``mcviz search FILE --score score --label label --json`` split into its parts.

Each run is a process of its own, set up as the command's (``mcviz.cli.main()`` with
``sys.argv``: the allocator and thread settings of the console script), and reports the CPU
seconds (user + system, every thread) of

* start-up + loading: the interpreter, the imports and reading the file, until
  :func:`mcviz.search.search_subpopulations` is called;
* prepare: the covariates' preparation inside the search (``prepare_columns``: their arrays in
  score order, from Arrow or the DataFrame, and the candidate cut points);
* the rest of the search, and the output;

and whether pandas was imported. Usage (from the checkout to measure, ``PYTHONPATH=$PWD``)::

    python benchmarks/bench_search_start.py FILE [FILE ...] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import os, sys
def cpu():
    t = os.times(); return t.user + t.system
import mcviz.search as search
import mcviz.search._find as find
marks = {"prepare": 0.0}
real, real_prepare = search.search_subpopulations, find.prepare_columns
def searched(*a, **k):
    marks["before"] = cpu(); r = real(*a, **k); marks["after"] = cpu(); return r
def prepared(*a, **k):
    c = cpu(); r = real_prepare(*a, **k); marks["prepare"] += cpu() - c; return r
search.search_subpopulations, find.prepare_columns = searched, prepared
from mcviz.cli import main
sys.argv = ["mcviz", "search", sys.argv[1], "--score", "score", "--label", "label", "--json"]
sys.stdout = open(os.devnull, "w")
status = main()
end = cpu()
b, p = marks["before"], marks["prepare"]
print(f"{b:.2f} {p:.2f} {marks['after'] - b - p:.2f} {end - marks['after']:.2f} "
      f"{'pandas' in sys.modules}", file=sys.stderr)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("| file | run | start-up + load CPU s | prepare CPU s | rest of search CPU s | "
          "output CPU s | pandas imported | load |\n|---|---|---|---|---|---|---|---|")
    for path in args.files:
        for run in range(args.runs):
            done = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True,
                                  text=True)
            line = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
            print(f"| {Path(path).name} | {run + 1} | " + " | ".join(line.split())
                  + f" | {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
