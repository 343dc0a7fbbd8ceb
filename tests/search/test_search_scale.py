"""The guided search at scale: the budget, the source of the set, and all-rows measurement.

``mcviz search --engine duckdb|numpy|spark --sample-rows N`` searches a sample and measures the
findings on every row; the all-rows D/sigma must equal the in-memory multi-calibration
statistics of the same subpopulations over the whole file (an independent implementation:
SQL histogram + refinement versus the core's block evaluator on all rows). Spark's search is
checked against DuckDB's to 1e-9 in tests/engines/test_engines_spark.py (its shared session:
a JVM of its own here cost 65 s of the suite).
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz import (
    ValidationError,
    generate_subpopulations,
    load_predictions,
    multicalibration,
    parse_filter,
)
from mcviz.budget import check, default_budget
from mcviz.search import _beam, _find, search_estimate, search_subpopulations
from mcviz.search._beam import Node, _next_beam
from mcviz.search._columns import Cut
from mcviz.search._screen import score_candidates
from mcviz.search.rules import RULES
from mcviz.subpopulations import Subpopulation, SubpopulationSet, select_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_find import planted, predictions

cli = pytest.importorskip("mcviz.cli")

CONTRACT = ["rank", "confirmed", "holdout_kuiper_z", "p_adjusted", "p_value", "mean_residual",
            "ci_low", "ci_high", "holdout_size", "description", "size", "share", "kuiper_z",
            "sentence"]
ALL_ROWS = ["sample_size", "sample_share", "all_rows_size", "all_rows_share",
            "all_rows_kuiper_z", "all_rows_p_value", "measured_on"]


# ------------------------------------------------------------------------------------------
# budget


def test_tiny_budget_refuses_and_says_what_to_change():
    frame, _ = planted(5000, "level", 0.2, seed=2)
    pred = predictions(frame)
    with pytest.raises(ValidationError, match=(
            r"refused before starting: guided search: 5,000 rows × 7 covariates, up to 3 "
            r"conditions would need about .* \(memory .* > budget 1(\.0)? MB\)\. "
            r"To run it: search a random sample of the rows "
            r"\(mcviz search FILE --engine duckdb --sample-rows N")):
        search_subpopulations(pred, budget="1MB")


def test_default_budget_admits_the_planted_searches(monkeypatch):
    # The planted tests of test_search.py run 10^5 rows x 7 covariates with the default budget
    # (25% of the machine's memory); 10^6 x 10 (the speed target) fits too.
    monkeypatch.delenv("MCVIZ_MEMORY_BUDGET", raising=False)
    monkeypatch.delenv("MCVIZ_TIME_BUDGET", raising=False)
    budget = default_budget()
    assert check(search_estimate(100_000, 7), budget).bytes < budget.bytes
    assert check(search_estimate(1_000_000, 10), budget).bytes < 10**9
    frame, _ = planted(20_000, "level", 0.2, seed=3)
    result = search_subpopulations(predictions(frame), n_findings=2, budget=budget)
    assert result.findings[0].description == "region == r7"


@pytest.mark.parametrize("ties", [False, True])
def test_estimate_is_an_upper_bound_of_the_measured_peak(ties):
    # tracemalloc sees numpy's allocations; the estimate must not under-state them (ties add
    # the content hash of split_rows).
    frame, _ = planted(30_000, "set", 0.1, seed=4, extra=3)
    if ties:
        frame["score"] = frame["score"].round(2)
    pred = predictions(frame)
    tracemalloc.start()
    try:
        search_subpopulations(pred)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = search_estimate(pred.n, pred.covariates.shape[1])
    assert peak <= estimate.bytes
    assert estimate.bytes < 20 * peak + 25_000_000  # and not absurdly loose


# ------------------------------------------------------------------------------------------
# source


def test_sets_say_where_they_came_from():
    frame, _ = planted(4000, "level", 0.2, seed=5)
    pred = predictions(frame)
    assert search_subpopulations(pred, n_findings=1).subpopulations.source == "searched"
    assert generate_subpopulations(pred, n_subpopulations=5).source == "generated"
    # positional construction (the seven fields of before) still works, as "generated"
    full = Subpopulation(0, 0, (), "full population", np.arange(pred.n))
    assert SubpopulationSet((full,), None, 0, 1, 1, (), 0).source == "generated"


# ------------------------------------------------------------------------------------------
# the CLI at scale


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    frame, _ = planted(40_000, "level", 0.2, seed=3)
    rng = np.random.default_rng(11)
    frame.insert(2, "w", rng.uniform(0.5, 2.0, len(frame)))  # weights reach every engine
    path = tmp_path_factory.mktemp("search_scale") / "planted.parquet"
    frame.to_parquet(path)
    return path


def _run(capsys, path, *options):
    status = cli.main(["search", str(path), "--score", "score", "--label", "label",
                       "--weight", "w", "--findings", "3", "--json", *options])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return json.loads(captured.out)


def _in_memory(path, descriptions):
    """D_k/sigma_k, sizes and p-values of the described subpopulations over every row."""
    pred = load_predictions(pd.read_parquet(path), score="score", label="label", weight="w")
    subs = []
    for k, text in enumerate(descriptions, start=1):
        conditions = parse_filter(text, pred)
        subs.append(Subpopulation(k, len(conditions), conditions, text,
                                  select_rows(pred, conditions)))
    return multicalibration(pred, subs)


def _assert_measured_on_all_rows(output, path, engine):
    findings = output["findings"]
    assert findings, "the planted group must give a finding"
    assert [list(f)[: len(CONTRACT)] for f in findings] == [CONTRACT] * len(findings)
    assert all(list(f)[len(CONTRACT):] == ALL_ROWS for f in findings)
    reference = _in_memory(path, [f["description"] for f in findings])
    for k, finding in enumerate(findings, start=1):
        assert finding["measured_on"] == f"all rows ({engine})"
        assert finding["all_rows_size"] == finding["size"] == reference.size[k]
        assert finding["all_rows_share"] == finding["share"] == pytest.approx(
            reference.size[k] / 40_000, abs=1e-12)
        z = reference.kuiper_z[k]
        assert abs(finding["all_rows_kuiper_z"] - z) <= 1e-9 * max(1.0, abs(z))
        assert finding["all_rows_p_value"] == pytest.approx(reference.p_value[k], rel=1e-9,
                                                            abs=1e-15)
    assert output["all_rows"] == {"engine": engine, "n": 40_000, "n_dropped": 0}
    if engine == "numpy":  # DuckDB, Spark: confirmed on every row not searched (tests/engines)
        assert "held-out confirmation (p_value, p_adjusted) is on the sample" in output["notice"]
        assert output["held_out"] is None
    else:
        assert output["held_out"] == {"engine": engine, "rows": 40_000 - 17_500}
    assert "not adjusted for the search" in output["notice"]


@pytest.mark.parametrize("engine", ["duckdb", "numpy"])
def test_search_on_a_sample_measures_findings_on_every_row(planted_file, capsys, engine):
    output = _run(capsys, planted_file, "--engine", engine, "--sample-rows", "25000")
    assert list(output) == ["n", "search", "mde", "findings", "unions", "size_counts", "sample",
                            "all_rows", "held_out", "notice"]
    assert output["n"] == 40_000  # the findings' size and share are of every row
    assert output["size_counts"] == "all_rows"
    assert output["sample"] == {"rows": 25_000, "n_dropped": 0, "searched": 17_500,
                                "held_out": 7_500}  # the default held-out share, 0.3
    # the planted group (on this draw narrowed by an income condition: seeds 1-5 give it alone)
    assert output["findings"][0]["description"].startswith("region == r7")
    _assert_measured_on_all_rows(output, planted_file, engine)


def test_default_search_is_unchanged(planted_file, capsys):
    output = _run(capsys, planted_file)
    assert list(output) == ["n", "search", "mde", "findings", "unions", "notice"]
    assert output["n"] == 40_000
    assert list(output["findings"][0]) == CONTRACT


def test_sample_options_are_checked(planted_file, capsys):
    status = cli.main(["search", str(planted_file), "--score", "score", "--label", "label",
                       "--engine", "duckdb", "--sample-rows", "0", "--json"])
    assert status == 2
    assert "--sample-rows must be positive, not 0" in capsys.readouterr().err
    status = cli.main(["search", str(planted_file), "--score", "score", "--label", "label",
                       "--engine", "duckdb", "--weighting", "proportional", "--json"])
    assert status == 2
    assert "--weighting is not supported when the search runs on a sample" in (
        capsys.readouterr().err)


# ------------------------------------------------------------------------------------------
# candidates refined on a capped subset of the search rows (issue #30, time at 10^6)


def test_candidates_are_refined_on_at_most_finish_rows(monkeypatch):
    from mcviz.search import _beam, _find

    frame, mask = planted(40_000, "level", 0.2, seed=4)
    pred = predictions(frame)
    monkeypatch.setattr(_find, "RULES", replace(RULES, finish_rows=10_000))
    refined_on = set()
    refine = _beam.Beam.refine

    def spy(self, cuts):
        refined_on.add(self.rows.size)
        return refine(self, cuts)

    monkeypatch.setattr(_beam.Beam, "refine", spy)
    polished = []
    polish = _beam.Beam._polished

    def spy_polish(self, node, members):
        out = polish(self, node, members)
        polished.append((self.rows.size, node.z, out[0].z))
        return out

    monkeypatch.setattr(_beam.Beam, "_polished", spy_polish)
    first = search_subpopulations(pred, seed=3)
    assert len(polished) == len(first.findings)
    again = search_subpopulations(pred, seed=3)
    assert first.n_search == 28_000
    # the cap applied: the candidates' cut points refined on 10,000 of the 28,000 rows (and
    # on all of them only when grown, or when an accepted finding is polished)
    assert 10_000 in refined_on
    assert refined_on <= {10_000, 28_000}
    # each finding's cut points chosen again on all the search rows, kept when better
    assert all(rows == 28_000 and after >= before for rows, before, after in polished)
    assert [f.description for f in first.findings] == [f.description for f in again.findings]
    assert [f.holdout_kuiper_z for f in first.findings] == [
        f.holdout_kuiper_z for f in again.findings]
    # the planted level is still found, and its search D/sigma is over all the search rows
    top = first.findings[0]
    planted_set = set(np.flatnonzero(mask[pred.row]).tolist())
    found = set(np.asarray(top.subpopulation.index).tolist())
    assert len(found & planted_set) / len(found | planted_set) >= 0.8
    held = set(np.asarray(first.holdout_index).tolist())
    searched_members = np.array(sorted(found - held))
    z = score_candidates(_find._data(pred, np.zeros(pred.n, dtype=bool)),
                          [searched_members])[0, 0]
    assert top.search_kuiper_z == pytest.approx(z, rel=1e-9)
    keys = [(not f.confirmed, f.p_value) for f in first.findings]  # by held-out evidence
    assert keys == sorted(keys)



def test_a_finding_whose_polished_conditions_all_drop_is_never_the_full_population(monkeypatch):
    """Above finish_rows each finding is re-chosen on all the search rows (_polished); when
    pruning the re-chosen conditions left none, all the search rows (the full population, the
    larger D/sigma) replaced the finding: 'full population' was reported as a confirmed
    finding (bench_engines' search at 10^7 on every engine). Planted: region r3 off the web
    under-predicted, web at 60 or older over-predicted (planted_fix_data)."""
    from mcviz.io.assembly import load_predictions
    from mcviz.recalibration.simulate import planted_fix_data

    frame = planted_fix_data(60_000, seed=102).drop(columns="truth")
    monkeypatch.setattr(_find, "RULES", replace(RULES, finish_rows=10_000))
    emptied = []
    polish = _beam.Beam._polished

    def spy(self, node, members):
        emptied.append(not self.prune(self.refine(node.cuts)))
        return polish(self, node, members)

    monkeypatch.setattr(_beam.Beam, "_polished", spy)
    pred = load_predictions(frame, score="score", label="label", weight=False)
    result = search_subpopulations(pred, covariates=["region", "age", "channel", "tenure"],
                                   n_findings=5, seed=0)
    assert any(emptied)  # the case arises here: a finding's re-chosen conditions all dropped
    assert all(f.subpopulation.conditions for f in result.findings)
    assert all(f.size < pred.n for f in result.findings)
    # the finding that lost its conditions is grown from its own instead: the planted group
    rows = frame.iloc[np.asarray(pred.row)]
    planted_web = set(np.flatnonzero((rows["channel"] == "web").to_numpy()
                                     & (rows["age"] >= 60).to_numpy()).tolist())
    best = max(len(planted_web & (found := set(np.asarray(f.subpopulation.index).tolist())))
               / len(planted_web | found) for f in result.findings)
    assert best >= 0.8

def _beam_after_run(pred, seed=3):
    """The search's beam over the planted data, its pool filled (the search's own set-up)."""
    from mcviz.search import _beam, _confirm, _find

    search_rows, holdout_rows, rank = _confirm.split_rows(
        pred, 0.3, np.random.default_rng(seed), max_search=RULES.max_search_rows)
    columns, _ = _find._columns(pred, list(pred.covariates.columns), search_rows,
                                holdout_rows)
    data = _find._data(pred, (rank % 2).astype(bool), (search_rows, holdout_rows))
    beam = _beam.Beam(data, columns, search_rows, 20, None)
    return beam, dict(reversed([(c.name, j) for j, c in enumerate(columns)]))  # ranges first


def _record_refines(monkeypatch) -> list:
    """Record the conjunctions :meth:`Beam.refine` is called with (they are still refined)."""
    called = []
    refine = _beam.Beam.refine

    def spy(self, cuts):
        called.append(tuple(cuts))
        return refine(self, cuts)

    monkeypatch.setattr(_beam.Beam, "refine", spy)
    return called


def test_entries_explained_by_a_better_finding_are_folded_before_refining(monkeypatch):
    from mcviz.search import _beam
    from mcviz.search._columns import Cut

    frame, _ = planted(40_000, "level", 0.2, seed=4)
    pred = predictions(frame)
    beam, index = _beam_after_run(pred)
    region = index["region"]
    code = beam.columns[region].levels.index
    planted_level = Cut(region, "in", levels=(code("r7"),))
    three_levels = Cut(region, "in", levels=tuple(sorted(code(r) for r in ("r3", "r5", "r7"))))
    elsewhere = Cut(index["age"], "ge", lo=60.0)
    most = Cut(index["x1"], "lt", hi=2.0)  # about 98% of the rows
    entries = [(planted_level,), (three_levels, most), (elsewhere,)]
    scores = beam.scores(entries)
    assert scores[0, 0] > scores[1, 0] > 3.0 > scores[2, 0]  # the planted level ranks first
    # a third of the second entry's rows are the planted level's, where its deviation lies:
    # outside them it does not deviate (the test a refined entry faces last)
    inside, planted_rows = beam.members(entries[1]), beam.members(entries[0])
    assert np.isin(inside, planted_rows).mean() < 0.5  # not mostly inside the planted rows
    assert beam.explained(inside, float(scores[1, 0]), [planted_rows])
    beam.pool = {frozenset(c.key() for c in cuts): _beam.Node(cuts, float(z), float(mean), 0)
                 for cuts, (z, _, _, mean) in zip(entries, scores, strict=True)}
    refined = _record_refines(monkeypatch)
    found = beam.findings(3)
    assert entries[0] in refined
    assert entries[2] in refined
    assert entries[1] not in refined  # folded before it was refined and pruned
    assert beam.stops["overlap"] >= 1
    assert found[0][0].cuts == entries[0]


def test_refined_subset_does_not_depend_on_the_order_of_tied_rows():
    from mcviz.io import Predictions
    from mcviz.search._confirm import canonical_order, subsample_rows

    rng = np.random.default_rng(0)
    n = 3000
    score = rng.choice([0.2, 0.5, 0.8], n)  # every score tied with a thousand others
    label = rng.random(n) < score
    ident = np.arange(n)
    chosen = []
    for order in (ident, rng.permutation(n)):
        pred = Predictions.from_arrays(score[order], label[order], covariates={
            "id": ident[order].astype(float)})
        rows = np.flatnonzero(pred.covariates["id"].to_numpy() % 2 == 0)  # the same rows
        rank = np.empty(n, dtype=np.int64)
        rank[canonical_order(pred)] = np.arange(n)
        got = subsample_rows(rank, rows, 500, np.random.default_rng([7, 1]))
        assert got.size == 500
        assert np.all(np.diff(got) > 0)
        chosen.append(set(pred.covariates["id"].to_numpy()[got].tolist()))
    # the same rows' positions (score order, ties by content) hold the same rows either way
    assert chosen[0] == chosen[1]

# ------------------------------------------------------------------------------------------
# the search's work at scale (issue #30: 10^6 rows in at most twice `metrics --subpopulations`):
# each rule is checked against the numbers it is stated in, recomputed here from the beam's
# exact scores, and shown to bite on the data used


def test_level_one_expands_only_conditions_with_a_material_gain(monkeypatch):
    frame, _ = planted(40_000, "level", 0.2, seed=2, extra=8)
    beam, _ = _beam_after_run(predictions(frame))
    root_z = float(score_candidates(beam.data, [beam.rows])[0, 0])
    root = Node((), root_z, 0.0, beam.rows.size, beam.rows)
    children = beam.expand(root, pool=False)
    weak = {child.key() for child in children
            if child.z - root_z < RULES.material(root_z, child.count / beam.rows.size)}
    # without the rule, the beam's diversity choice would expand some of them
    assert weak & {node.key() for node in _next_beam(children, RULES.beam_width,
                                                   [c.name for c in beam.columns])}
    expanded = []
    expand = _beam.Beam.expand

    def spy(self, node, *args, **kwargs):
        expanded.append(node)
        return expand(self, node, *args, **kwargs)

    monkeypatch.setattr(_beam.Beam, "expand", spy)
    beam.run(3)
    level_one = [node for node in expanded if len(node.cuts) == 1]
    assert level_one
    for node in level_one:
        assert node.z - root_z >= RULES.material(root_z, node.count / beam.rows.size)
    # every child of the root still enters the pool (a finding may be one condition)
    assert weak <= set(beam.pool)


def test_grow_adds_only_conditions_that_pass_the_pruning_test_out_of_fold(monkeypatch):
    frame, _ = planted(20_000, None, 0.0, seed=1, extra=20)  # calibrated: nothing to add
    beam, index = _beam_after_run(predictions(frame))
    cuts = (Cut(index["x1"], "lt", hi=1.0),)
    rows = beam.members(cuts)
    z, _, _, mean = beam.scores([cuts])[0]
    children = beam.expand(Node(cuts, float(z), 0.0, rows.size, rows), gain=-np.inf,
                           pool=False)
    f = np.array([child.count for child in children]) / rows.size
    t = (np.array([child.z for child in children]) - np.sqrt(f) * z) / np.sqrt(1.0 - f)

    def passes(child, ti):
        under = bool(mean >= 0)
        return ti >= RULES.sure_t or beam._oof_t(child.cuts[-1], cuts, under) >= RULES.drop_t_oof

    significant = [(child, ti) for child, ti in zip(children, t, strict=True) if ti >= RULES.drop_t]
    # the largest of some 600 noise cuts passes the in-sample threshold ...
    assert significant
    best = max(significant, key=lambda item: item[0].z)
    assert not passes(*best)  # ... and fails out of fold: the old rule would have added it
    tried = _record_refines(monkeypatch)
    grown = beam.grow(cuts)
    for conjunction in tried:  # every condition grow tried to add passed the test
        child, ti = next((c, ti) for c, ti in significant if c.cuts == conjunction)
        assert passes(child, ti)
    assert grown == cuts  # here none did: the noise condition is not added


def test_above_finish_rows_fewer_entries_are_examined(monkeypatch):
    frame, _ = planted(40_000, "level", 0.2, seed=4, extra=20)
    pred = predictions(frame)

    def examined(finish_rows):
        monkeypatch.setattr(_find, "RULES", replace(RULES, finish_rows=finish_rows))
        checked = []
        tell = _beam.Beam._tell

        def spy_tell(self, fraction, text):  # one "checking candidate k" per entry examined
            if text.startswith("checking candidate") and self.rows.size == 28_000:
                checked.append(text)  # the first search's (the second look outside its
            return tell(self, fraction, text)  # findings, _find._look_again, has its own cap)

        monkeypatch.setattr(_beam.Beam, "_tell", spy_tell)
        result = search_subpopulations(pred, seed=3, n_findings=5)
        monkeypatch.undo()
        return result, len(checked)

    whole, checked_whole = examined(10**9)
    capped, checked_capped = examined(5_000)
    searched = whole.n_search
    assert searched == 28_000
    cap = int(np.ceil((RULES.examine_per_finding * 5 + 5) * 5_000 / searched))
    assert checked_whole > cap  # all the rows: more entries examined than the cap allows
    assert 0 < checked_capped <= cap
    # the planted level is still the first finding
    assert capped.findings[0].description == whole.findings[0].description


def test_above_finish_rows_entries_whose_last_condition_fails_pruning_are_skipped(monkeypatch):
    frame, _ = planted(40_000, "level", 0.2, seed=7, extra=20)
    pred = predictions(frame)
    calls = []
    noise_tail = _beam.Beam._noise_tail

    def spy(self, entry):
        out = noise_tail(self, entry)
        calls.append((self, entry, out))
        return out

    monkeypatch.setattr(_beam.Beam, "_noise_tail", spy)
    search_subpopulations(pred, seed=3)  # 28,000 search rows: below finish_rows
    assert not calls
    monkeypatch.setattr(_find, "RULES", replace(RULES, finish_rows=10_000))
    refined = _record_refines(monkeypatch)
    result = search_subpopulations(pred, seed=3)
    skipped = [(beam, entry) for beam, entry, out in calls if out]
    assert skipped  # the rule bites
    assert all(entry.cuts not in refined for _, entry in skipped)
    for beam, entry in skipped:  # recomputed: the last condition fails prune's test
        node = entry.cuts[:-1]
        (z, _, _, mean), (z0, _, _, _) = beam.scores([entry.cuts, node])
        f = beam.members(entry.cuts).size / beam.members(node).size
        t = (z - np.sqrt(f) * z0) / np.sqrt(1.0 - f) if f < 1 else -np.inf
        assert t < RULES.sure_t
        assert t < RULES.drop_t or beam._oof_t(entry.cuts[-1], node,
                                               bool(mean >= 0)) < RULES.drop_t_oof
    assert any(out is False and len(entry.cuts) > 1 for _, entry, out in calls)
    assert "region == r" in result.findings[0].description  # the planted level, still first


def test_polished_findings_are_grown_and_never_overlap(monkeypatch):
    frame, _ = planted(40_000, "level", 0.2, seed=5, extra=8)
    pred = predictions(frame)
    monkeypatch.setattr(_find, "RULES", replace(RULES, finish_rows=10_000))
    grown = []
    polished = _beam.Beam._polished
    grow = _beam.Beam.grow

    def spy_polished(self, node, members):
        grown.append([node.cuts, None])
        return polished(self, node, members)

    def spy_grow(self, cuts):
        if grown and grown[-1][1] is None:
            grown[-1][1] = cuts
        return grow(self, cuts)

    monkeypatch.setattr(_beam.Beam, "_polished", spy_polished)
    monkeypatch.setattr(_beam.Beam, "grow", spy_grow)
    result = search_subpopulations(pred, seed=3, n_findings=5)
    assert len(grown) >= len(result.findings)  # every finding polished (some then fold)
    # a finding of fewer than three conditions: its polish tried to grow it
    assert any(tried is not None and len(tried) < result.max_conditions for _, tried in grown)
    members = [set(np.asarray(f.subpopulation.index).tolist()) for f in result.findings]
    for i, a in enumerate(members):  # polishing never leaves two findings as one
        for b in members[:i]:
            assert len(a & b) / len(a | b) <= RULES.jaccard_fold
