"""The shapes of issue #42 in the search benchmark (:mod:`shapes_more`), run from bench_find.

Each draw is loaded as a user's file is (:func:`mcviz.load_predictions` on the frame, score and
label named: the id column is left out by the loader's rule; ``codes_declared`` names ``code``
with ``nominal=``, what ``--nominal code`` does on the command line), searched with the default
settings and the draw's seed. A draw is recovered when the first finding's Jaccard index with
the planted group is at least 0.8 (``union``: the first finding covers the union, or each arm
is among the first two, or the first union offered (``SearchResult.unions``: confirmed findings
offered as one problem) covers it, which counts as the first finding; ``opposite``: each group
among the first two) and its held-out p_adjusted is below 0.05. A missed draw's line says whether the search rows themselves prefer
what was found (:func:`_wider_wins`). pysubgroup 0.9 (its own virtual environment,
:func:`bench_find.run_pysubgroup`, without the id column) runs on ``--more-psg`` draws of each
shape when asked, with a CPU limit per draw (:func:`psg_table`).
"""

from __future__ import annotations

import time

import numpy as np

from mcviz import load_predictions
from mcviz.search import search_subpopulations
from shapes_more import (MERCHANT_SET, MERCHANTS, MORE_SHAPES, MORE_TEXT, calibrated_30,
                         shaped_more)

VARIANTS = {"codes_declared": ("codes", ("code",), {}, {}),
            "four_depth4": ("four", (), {"max_conditions": 4}, {}),
            "levels25_d30": ("levels25", (), {}, {"target": 30.0})}
"""Extra rows: a shape run with covariates declared nominal, other search settings, or another
planted strength (the generator's keywords)."""
TEXT = MORE_TEXT | {"codes_declared": MORE_TEXT["codes"] + ", --nominal code",
                    "four_depth4": MORE_TEXT["four"] + ", --max-conditions 4",
                    "levels25_d30": MORE_TEXT["levels25"] + ", own D/sigma 30"}


def _load(frame, nominal=()):
    return load_predictions(frame, score="score", label="label", weight=False,
                            nominal=list(nominal))


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = np.union1d(a, b).size
    return np.intersect1d(a, b).size / union if union else 0.0


def recovery(groups: list[np.ndarray], found: list[np.ndarray], p: list[float],
             shape: str, union: tuple[np.ndarray, float] | None = None
             ) -> tuple[bool, float, float]:
    """(recovered, Jaccard, largest p_adjusted of the findings matched) of one draw.

    ``union``: the members and p_adjusted of the first union the search offered (None: none);
    for ``union`` it counts as the first finding (the union as one finding).
    """
    if not found:
        return False, 0.0, 1.0
    if len(groups) == 1:
        j = _jaccard(groups[0], found[0])
        return j >= 0.8 and p[0] < 0.05, j, p[0]
    each, which = [], []
    for group in groups:
        options = [_jaccard(group, f) for f in found[:2]]
        each.append(max(options))
        which.append(int(np.argmax(options)))
    j, worst = min(each), max(p[k] for k in which)
    ok = j >= 0.8 and worst < 0.05 and len(set(which)) == len(groups)
    if shape == "union":  # the union as one finding counts too: a finding's, or a union's
        for rows, p_union in ((found[0], p[0]), *([union] if union is not None else [])):
            whole = _jaccard(np.union1d(*groups), rows)
            if whole >= 0.8 and p_union < 0.05 and not ok:
                return True, whole, p_union
    return ok, j, worst


def more_draw(name: str, n: int, seed: int) -> dict:
    """One draw of one shape (or variant): the search's recovery."""
    shape, nominal, options, planted = VARIANTS.get(name, (name, (), {}, {}))
    frame, first, second = shaped_more(n, shape, seed, **planted)
    pred = _load(frame, nominal)
    groups = [np.flatnonzero(m[pred.row]) for m in (first, second) if m.any()]
    cpu = time.process_time()
    result = search_subpopulations(pred, seed=seed, **options)
    seconds = time.process_time() - cpu
    found = [np.asarray(f.subpopulation.index) for f in result.findings]
    union = (np.asarray(result.unions[0].index), result.unions[0].p_adjusted) if result.unions \
        else None
    ok, j, p = recovery(groups, found, [f.p_adjusted for f in result.findings], shape, union)
    return {"ok": ok, "j": j, "p": p, "s": seconds, "share": float(first.mean()),
            "desc": " | ".join(f.description for f in result.findings[:2]) or "(none)",
            "union": result.unions[0].description if result.unions else None,
            "chance": None if ok else _wider_wins(pred, result, groups, found)}


def _wider_wins(pred, result, groups: list[np.ndarray], found: list[np.ndarray]) -> str:
    """Of a missed draw: each planted group's D/sigma on the search rows beside that of the
    finding (among the first two) that overlaps it most.

    When every such finding's is at least the planted group's, the search rows themselves
    prefer what was found: a search that maximises D/sigma there cannot do better (a miss of
    chance, as levels25's oracle for level sets); otherwise the search missed a group its own
    objective ranks higher (a search failure).
    """
    from bench_find import own_z

    search = np.setdiff1d(np.arange(pred.n), result.holdout_index)
    parts, chance = [], True
    for group in groups:
        z_group = own_z(pred, np.intersect1d(group, search))
        overlaps = [_jaccard(group, f) for f in found[:2]]
        if not overlaps or max(overlaps) == 0:
            parts.append(f"planted {z_group:.2f}, no finding overlaps it")
            chance = False
            continue
        k = int(np.argmax(overlaps))
        z_found = own_z(pred, np.intersect1d(found[k], search))
        chance &= z_found >= z_group
        parts.append(f"planted {z_group:.2f}, finding {k + 1} {z_found:.2f}")
    return ("search-row D/sigma " + "; ".join(parts)
            + (": the search rows prefer the finding (chance)" if chance
               else ": the search missed a group it ranks higher"))


def _draws(name: str, first_seed: int, draws: int, draw) -> list[dict]:
    """Run ``draw(seed)`` over the seeds, printing one line per draw; return the rows."""
    rows = []
    for seed in range(first_seed, first_seed + draws):
        rows.append(draw(seed))
        r = rows[-1]
        print(f"|   {name} draw {seed}: {'ok' if r['ok'] else 'missed'} J {r['j']:.2f} "
              f"p {r['p']:.2g} {r['s']:.1f}s: {r['desc']}"
              + (f" [first union offered: {r['union']}]" if r.get("union") else "")
              + (f" [{r['chance']}]" if r.get("chance") else ""), flush=True)
    return rows


def more_table(names: list[str], n: int, draws: int, first_seed: int = 0) -> None:
    """Print one row per shape: recovered draws, medians of Jaccard, p_adjusted, CPU s."""
    print(f"\nissue #42 shapes, n = {n:,}, 10 covariates (a 5,000-level nominal and an id "
          f"among them), seeds {first_seed}-{first_seed + draws - 1}: recovered = Jaccard >= 0.8 "
          "and held-out p_adjusted < 0.05 (first finding; both groups or arms among the first "
          "two for union/opposite; for union the first union offered counts as the first "
          "finding)", flush=True)
    print("| shape | share | recovered | median J | median p_adj | median CPU s |\n"
          "|---|---|---|---|---|---|", flush=True)
    for name in names:
        rows = _draws(name, first_seed, draws, lambda seed, name=name: more_draw(name, n, seed))
        print(f"| {name}: {TEXT[name]} | {np.median([r['share'] for r in rows]):.2%} "
              f"| {sum(r['ok'] for r in rows)}/{len(rows)} "
              f"| {np.median([r['j'] for r in rows]):.2f} "
              f"| {np.median([r['p'] for r in rows]):.2g} "
              f"| {np.median([r['s'] for r in rows]):.1f} |", flush=True)


def psg_more(name: str, n: int, seed: int, cpu_limit: int, drop: tuple[str, ...] = ()) -> dict:
    """pysubgroup 0.9 on one draw of a shape: the search rows the search uses with ``seed``.

    The same frame without the id column (which the loader leaves out), the score among the
    covariates, beam 20, depth 2 (3 for ``four``'s four conditions would not run in time), 10
    bins per numeric column and one selector per level (5,000 for ``merchant``); its best
    subgroup, and as the second candidate its other direction's best (``opposite``) or its
    better direction's second best (``union``). Held-out p: the Brownian-range tail of the
    subgroup's own D/sigma on the held-out rows (not adjusted). None when the run exceeds
    ``cpu_limit`` CPU seconds. ``drop``: covariates pysubgroup is not given (``merchant``: its
    5,000 selectors alone take pysubgroup past 120 CPU s per draw at 10,000 rows).
    """
    from bench_find import brownian_range_sf, own_z, run_pysubgroup

    from mcviz.search._confirm import split_rows
    from mcviz.search.rules import RULES
    from mcviz.settings import SearchSettings

    shape, _, _, planted = VARIANTS.get(name, (name, (), {}, {}))
    frame, first, second = shaped_more(n, shape, seed, **planted)
    pred = _load(frame)
    groups = [np.flatnonzero(m[pred.row]) for m in (first, second) if m.any()]
    search, held, _ = split_rows(pred, SearchSettings.holdout, np.random.default_rng(seed),
                                 max_search=RULES.max_search_rows)
    psg = run_pysubgroup(frame.drop(columns=["customer_id", *drop]), pred.row[search],
                         depth=2, with_score=True, cpu_limit=cpu_limit)
    if psg is None:
        return {"ok": False, "timeout": True, "j": 0.0, "p": 1.0, "s": float(cpu_limit),
                "desc": f"(over {cpu_limit} CPU s)"}
    found = []
    for key in ("rows", "next" if shape == "union" else "second"):
        in_frame = np.zeros(pred.n, dtype=bool)
        in_frame[psg[key]] = True
        found.append(np.flatnonzero(in_frame[pred.row]))
    p = []
    for rows in found:
        rows = np.intersect1d(rows, held)
        z = own_z(pred, rows) if rows.size else np.nan
        p.append(float(brownian_range_sf(z)) if np.isfinite(z) else 1.0)
    ok, j, worst = recovery(groups, found, p, shape)
    return {"ok": ok, "timeout": False, "j": j, "p": worst, "s": psg["seconds"],
            "desc": psg["description"]}


def psg_table(names: list[str], n: int, draws: int, first_seed: int, cpu_limit: int,
              drop: tuple[str, ...] = ()) -> None:
    """Print pysubgroup's row per shape (the rule of :func:`more_table`, p not adjusted)."""
    print(f"\npysubgroup 0.9 on the issue #42 shapes, n = {n:,}, seeds {first_seed}-"
          f"{first_seed + draws - 1}, at most {cpu_limit} CPU s per draw (beam 20, depth 2)"
          + (f", without {', '.join(drop)}" if drop else ""),
          flush=True)
    print("| shape | recovered | over the CPU limit | median J | median p | median CPU s |\n"
          "|---|---|---|---|---|---|", flush=True)
    for name in names:
        if name in ("codes_declared", "four_depth4"):
            continue  # search settings of this search: pysubgroup's row is the shape's
        rows = _draws(name, first_seed, draws,
                      lambda seed, name=name: psg_more(name, n, seed, cpu_limit, drop))
        print(f"| {name}: {TEXT[name]} | {sum(r['ok'] for r in rows)}/{len(rows)} "
              f"| {sum(r['timeout'] for r in rows)} "
              f"| {np.median([r['j'] for r in rows]):.2f} "
              f"| {np.median([r['p'] for r in rows]):.2g} "
              f"| {np.median([r['s'] for r in rows]):.1f} |", flush=True)


def levels_oracle(n: int, draws: int, first_seed: int = 0, target: float = 13.0) -> None:
    """What any level ranking can reach on ``levels25``: the best Jaccard of a prefix set.

    On each draw's search rows (the split the search makes with the draw's seed) the merchants
    are ordered by their own D/sigma there, :math:`\\sum(R-S)/\\sqrt{\\sum S(1-S)}`, and the
    Jaccard index with the planted rows (search rows) of every prefix is computed knowing the
    truth; the table gives the best over prefixes (an oracle's choice of the size), and how many
    of the 25 true levels are among the first 25. A search that ranks levels by their rows cannot
    do better than an oracle that also knows where to stop.
    """
    from mcviz.search._confirm import split_rows
    from mcviz.search.rules import RULES
    from mcviz.settings import SearchSettings

    best, top = [], []
    for seed in range(first_seed, first_seed + draws):
        frame, first, _ = shaped_more(n, "levels25", seed, target=target)
        pred = _load(frame)
        search, _, _ = split_rows(pred, SearchSettings.holdout, np.random.default_rng(seed),
                                  max_search=RULES.max_search_rows)
        rows = pred.row[search]
        codes = frame["merchant"].cat.codes.to_numpy()[rows]
        s = frame["score"].to_numpy()[rows]
        d = np.bincount(codes, frame["label"].to_numpy()[rows] - s, MERCHANTS)
        v = np.bincount(codes, s * (1 - s), MERCHANTS)
        size = np.bincount(codes, minlength=MERCHANTS)
        truth = np.zeros(MERCHANTS, dtype=bool)
        truth[list(MERCHANT_SET)] = True
        order = np.argsort(-np.where(v > 0, d / np.sqrt(np.where(v > 0, v, 1)), -np.inf),
                           kind="stable")[:200]
        common = np.cumsum(size[order] * truth[order])
        union = size[truth].sum() + np.cumsum(size[order] * ~truth[order])
        best.append(float((common / union).max()))
        top.append(int(truth[order[:25]].sum()))
    print(f"levels25 oracle (own D/sigma {target:g}, n = {n:,}, seeds {first_seed}-"
          f"{first_seed + draws - 1}): best prefix Jaccard median {np.median(best):.2f}, "
          f"max {max(best):.2f}, draws >= 0.8: {sum(b >= 0.8 for b in best)}/{draws}; true "
          f"levels among the first 25: median {np.median(top):.0f}", flush=True)


def null_30(n: int, draws: int, start: int = 0) -> None:
    """Calibrated draws with 30 covariates (a 5,000-level nominal and an id among them).

    A draw counts when it has a confirmed finding or a confirmed union (a union is offered only
    over confirmed findings, so the union count is printed apart: it adds no draw).
    """
    hits, joined, cpu = 0, 0, time.process_time()
    for seed in range(start, start + draws):
        result = search_subpopulations(_load(calibrated_30(n, 7000 + seed)), seed=seed)
        confirmed = [f for f in result.findings if f.p_adjusted < 0.05]
        unions = [u for u in result.unions if u.confirmed]
        hits += bool(confirmed or unions)
        joined += bool(unions)
        for f in (*confirmed, *unions):
            print(f"  seed {seed}: {f.description} p_adjusted {f.p_adjusted:.2g}", flush=True)
        if (seed - start + 1) % 10 == 0:  # a partial count, should the run be stopped
            print(f"  seeds {start}-{seed}: {hits}/{seed - start + 1} with a confirmed finding, "
                  f"{time.process_time() - cpu:.0f} CPU s", flush=True)
    print(f"calibrated, n = {n:,}, 30 covariates (5,000-level nominal, id), seeds {start}-"
          f"{start + draws - 1}: {hits}/{draws} = {hits / draws:.1%} draws with a confirmed "
          f"finding or union (target <= 5%; {joined} with a confirmed union); "
          f"{time.process_time() - cpu:.0f} CPU s", flush=True)


ALL = (*MORE_SHAPES, *VARIANTS)
