"""Does a change to the search leave every result as it was?  (A check for pure speed-ups.)

Runs :func:`mcviz.search.search_subpopulations` at its defaults on a fixed set of inputs and
writes every finding's description, size, D/sigma (all rows, search rows, held-out rows) and
p-values, and every union's, to a JSON file; then compares two such files field by field,
exactly (``==`` on floats, which JSON stores to the last bit).

Inputs: the "three" shape at 10^5 rows (``shapes.shaped(100_000, "three", 0)``, the file the
CPU ratio of issue #42 is measured on); ``shapes_more.shaped_more(100_000, shape, seed)`` for
the shapes union, four, codes, tiny, opposite and seeds 0-2 (searched with ``seed=seed``); and
the calibrated 30-covariate draw ``calibrated_30(20_000, 7000 + seed)`` for seeds 0-4 (loaded
and searched as ``find_more.null_30`` does).

Usage (from the repository root; the mcviz imported is the one on PYTHONPATH)::

    python benchmarks/search_identity.py dump OUT.json [--quick]
    python benchmarks/search_identity.py compare A.json B.json
    python benchmarks/search_identity.py against OTHER_ROOT     # dumps with OTHER_ROOT's mcviz
                                                                # and this one's, then compares

``compare`` prints ``identical`` or each difference (input, item, field, both values, and
the relative difference of floats).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SHAPES = ("union", "four", "codes", "tiny", "opposite")
FIELDS = ("description", "size", "kuiper_z", "search_kuiper_z", "holdout_size",
          "holdout_kuiper_z", "p_value", "p_adjusted")


def _inputs(quick: bool):
    """(name, frame, search seed) of every input, built lazily."""
    from shapes import shaped
    from shapes_more import calibrated_30, shaped_more
    yield "three1e5", lambda: shaped(100_000, "three", 0)[0], 0
    for shape in SHAPES:
        for seed in range(1 if quick else 3):
            yield f"{shape}/{seed}", (lambda s=shape, d=seed: shaped_more(100_000, s, d)[0]), seed
    for seed in range(1 if quick else 5):
        yield f"calibrated_30/{seed}", (lambda d=seed: calibrated_30(20_000, 7000 + d)), seed


def _record(item) -> dict:
    return {f: getattr(item, f) for f in FIELDS if hasattr(item, f)}


def dump(out: str, quick: bool = False) -> None:
    import mcviz
    from mcviz import load_predictions
    from mcviz.search import search_subpopulations
    results, cpu = {}, 0.0
    for name, build, seed in _inputs(quick):
        pred = load_predictions(build(), score="score", label="label", weight=False)
        start = time.process_time()
        result = search_subpopulations(pred, seed=seed)
        cpu += time.process_time() - start
        results[name] = {
            "findings": [_record(f) for f in result.findings],
            "unions": [_record(u) | {"parts": list(u.parts)} for u in result.unions],
            "candidates_scored": result.candidates_scored,
        }
    Path(out).write_text(json.dumps({"mcviz": mcviz.__file__, "results": results}, indent=1))
    print(f"{mcviz.__file__}: {len(results)} inputs, search CPU {cpu:.1f} s -> {out}")


def _differences(a: dict, b: dict) -> list[str]:
    out = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            out.append(f"{name}: only in {'A' if name in a else 'B'}")
            continue
        ra, rb = a[name], b[name]
        if ra["candidates_scored"] != rb["candidates_scored"]:
            out.append(f"{name}: candidates_scored {ra['candidates_scored']} != "
                       f"{rb['candidates_scored']}")
        for kind in ("findings", "unions"):
            if len(ra[kind]) != len(rb[kind]):
                out.append(f"{name}: {len(ra[kind])} {kind} != {len(rb[kind])}")
            for k, (x, y) in enumerate(zip(ra[kind], rb[kind])):
                for field in sorted(set(x) | set(y)):
                    u, v = x.get(field), y.get(field)
                    if u == v:
                        continue
                    rel = ""
                    if isinstance(u, float) and isinstance(v, float):
                        rel = f" (relative {abs(u - v) / max(abs(u), abs(v), 1e-300):.2e})"
                    out.append(f"{name}: {kind}[{k}].{field}: {u!r} != {v!r}{rel}")
    return out


def compare(path_a: str, path_b: str) -> bool:
    a, b = (json.loads(Path(p).read_text()) for p in (path_a, path_b))
    print(f"A: {a['mcviz']}\nB: {b['mcviz']}")
    diffs = _differences(a["results"], b["results"])
    n = len(a["results"])
    print(f"identical ({n} inputs, every field ==)" if not diffs else "\n".join(diffs))
    return not diffs


def against(other_root: str, quick: bool = False) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for root in (other_root, str(HERE.parent)):
            out = os.path.join(tmp, f"{len(outs)}.json")
            env = os.environ | {"PYTHONPATH": root}
            subprocess.run([sys.executable, __file__, "dump", out, *(["--quick"] if quick else [])],
                           env=env, check=True)
            outs.append(out)
        return compare(*outs)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv
    if args[:1] == ["dump"] and len(args) == 2:
        dump(args[1], quick)
    elif args[:1] == ["compare"] and len(args) == 3:
        sys.exit(0 if compare(args[1], args[2]) else 1)
    elif args[:1] == ["against"] and len(args) == 2:
        sys.exit(0 if against(args[1], quick) else 1)
    else:
        print(__doc__)
        sys.exit(2)
