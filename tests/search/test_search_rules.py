"""Each rule of :mod:`mcviz.search.rules` pinned by a small planted case that fails if it drifts.

Every test states the rule as its docstring in ``rules.py`` writes it (a number the benchmark
set), builds a few thousand rows where the rule decides the outcome, and checks the outcome
against what the rule says, worked out by hand (never by calling the rule): a drift of the
constant either way changes the outcome. Each runs in about a second.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mcviz import Predictions, ValidationError, search_subpopulations
from mcviz.search import _beam, _confirm, _find
from mcviz.search._columns import Cut, prepare_columns
from mcviz.search._screen import best_level_prefix


def _beam_over(pred: Predictions, seed: int = 0,
               min_rows: int = 20) -> tuple[_beam.Beam, dict[str, int]]:
    """A search's beam over ``pred`` (its own set-up: split, columns, per-row data)."""
    search_rows, holdout_rows, rank = _confirm.split_rows(
        pred, 0.3, np.random.default_rng(seed), max_search=10**6)
    columns, _ = _find._columns(pred, list(pred.covariate_names), search_rows, holdout_rows)
    data = _find._data(pred, (rank % 2).astype(bool), (search_rows, holdout_rows))
    return _beam.Beam(data, columns, search_rows, min_rows, None), dict(reversed(
        [(column.name, j) for j, column in enumerate(columns)]))  # a name's first: its ranges


def _uniform(n: int, seed: int = 0, **covariates) -> Predictions:
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.1, 0.9, n)
    return Predictions.from_arrays(score, rng.random(n) < score, covariates=covariates or None)


# -- candidate cuts and level sets ---------------------------------------------------------


def test_128_distinct_values_are_cut_at_each_and_more_at_64_quantiles():
    # distinct_bins = 128: "at most this many distinct values: cut at every one of them";
    # numeric_bins = 64: otherwise 64 quantile bins of the search rows, each an observed value
    n = 6400
    rng = np.random.default_rng(1)
    pred = _uniform(n, d128=(np.arange(n) % 128).astype(float),
                    d129=(np.arange(n) % 129).astype(float),
                    u=rng.permutation(n).astype(float))
    columns, _ = prepare_columns(pred, ["d128", "d129", "u"], np.arange(n))
    edges = {c.name: c.edges for c in columns}
    assert edges["d128"].tolist() == list(range(1, 128))  # every value but the smallest
    assert 1 < edges["d129"].size <= 63  # quantiles, not every value
    assert edges["u"].tolist() == [100.0 * k for k in range(1, 64)]  # 0..6399: 64 bins of 100


def test_a_level_set_keeps_at_most_64_levels():
    # max_set_levels = 64: "level sets hold at most this many levels". Every one of 100
    # levels drifts the same way (labels 0.6 where scores say 0.2), so the best prefix, with
    # no penalty inside a finding (prefix_penalty = 0), would take every level but one
    n = 20_000
    rng = np.random.default_rng(2)
    group = pd.Categorical([f"g{k:03d}" for k in rng.integers(0, 100, n)])
    pred = Predictions.from_arrays(np.full(n, 0.2) + rng.uniform(0, 1e-3, n),
                                   rng.random(n) < 0.6, covariates={"group": group})
    beam, index = _beam_over(pred)
    j = index["group"]
    cut = best_level_prefix(beam.data, beam.rows, beam.columns[j], j, True, min_rows=20)
    assert len(cut.levels) == 64


# -- bounded work --------------------------------------------------------------------------


def test_a_search_needs_40_search_rows_and_a_finding_20():
    # min_rows = 20: "no finding has fewer search rows, whatever min_share; a search needs
    # twice as many". With half the rows held out: 79 rows refused, 80 searched.
    with pytest.raises(ValidationError, match=r"79 rows are too few .* \(need 80\)"):
        search_subpopulations(_uniform(79, x=np.arange(79.0)), holdout=0.5, min_share=0.01)
    result = search_subpopulations(_uniform(80, x=np.arange(80.0)), holdout=0.5,
                                   min_share=0.01)
    assert result.n_search == 40
    assert result.subpopulations.min_size == 20  # not ceil(0.01 * 40) = 1


@pytest.mark.parametrize(("rows", "refined_on"), [(400_000, []), (400_001, [400_000])])
def test_candidates_are_refined_on_at_most_400000_search_rows(monkeypatch, rows, refined_on):
    # finish_rows = 400,000: "at most this many search rows refine the candidates' cut points"
    made = []

    def refiner(data, columns, rows, *args, **kwargs):  # records the rows it is built on
        made.append(rows.size)
        return SimpleNamespace(screened=0)

    monkeypatch.setattr(_find, "Beam", refiner)
    beam = SimpleNamespace(rows=np.arange(rows), data=None, columns=[], refiner=None,
                           screened=0, findings=lambda n: [], min_rows=20, regular_rows=20)
    _find._finish(beam, np.arange(rows), 3, 0.05, 0)
    assert made == refined_on


def test_the_last_32_masks_are_kept():
    # masks_cached = 32: "boolean masks over the search rows kept for reuse"
    pred = _uniform(4000, x=np.arange(4000.0))
    beam, index = _beam_over(pred)
    for k in range(40):
        beam._mask(Cut(index["x"], "lt", hi=100.0 * (k + 1)))
    assert len(beam._cache) == 32
    kept = {key for key in beam._cache}
    assert Cut(index["x"], "lt", hi=4000.0).key() in kept  # the most recent
    assert Cut(index["x"], "lt", hi=800.0).key() not in kept  # the 8th of 40: dropped


def test_recent_conjunctions_hold_at_most_twice_the_search_rows():
    # sets_cached = 2: "members of recent conjunctions kept ..., in all at most this many
    # times the search rows"
    pred = _uniform(4000, x=np.arange(4000.0))
    beam, index = _beam_over(pred)
    sizes = []
    for k in range(12):  # each about 60% of the rows: 12 of them hold 7 times the rows
        sizes.append(beam.members((Cut(index["x"], "ge", lo=100.0 * k),
                                   Cut(index["x"], "lt", hi=2400.0 + 100.0 * k))).size)
    held = sum(members.size for members in beam._sets.values())
    assert held <= 2 * beam.rows.size
    assert held > 2 * beam.rows.size - max(sizes)  # full up to the cap


# -- held-out confirmation -----------------------------------------------------------------


def _held(score_group: np.ndarray, label_group: np.ndarray, seed: int = 0):
    """Predictions with the group at the lowest scores, and the group's positions."""
    rng = np.random.default_rng(seed)
    rest = rng.uniform(0.4, 0.6, 400)
    pred = Predictions.from_arrays(np.concatenate((score_group, rest)),
                                   np.concatenate((label_group, rng.random(400) < rest)))
    return pred, np.arange(score_group.size)


def test_the_smallest_simulated_p_value_is_one_in_10000():
    # simulated_draws = 9,999: "the smallest simulated p-value is 1 / 10,000". 30 rows at a
    # score of 0.02, every label 1: no draw reaches the observed D/sigma (chance 0.02^30).
    pred, members = _held(np.full(30, 0.02), np.ones(30))
    assert _confirm.p_value_kinds(pred, [members]) == ["simulated"]
    p = _confirm.holdout_p_values(pred, [members], np.array([5.0]), ["g"], 0)
    assert p.tolist() == [1 / 10_000]


def test_a_group_of_5000_rows_gets_at_most_30_million_rows_times_draws():
    # simulated_work = 3 x 10^7: "rows x draws simulated per finding at most": 5,000 rows get
    # 6,000 draws. 60 labels of 1 where the scores expect 5: no draw reaches it.
    score = np.full(5000, 0.001)
    label = np.zeros(5000)
    label[::80] = 1
    pred, members = _held(score, label)
    assert _confirm.p_value_kinds(pred, [members]) == ["simulated"]
    p = _confirm.holdout_p_values(pred, [members], np.array([5.0]), ["g"], 0)
    assert p.tolist() == [1 / 6001]


def test_the_simulation_stops_at_the_50th_draw_reaching_the_observed():
    # simulated_stop = 50: "the simulation stops once this many draws reach the observed
    # D/sigma" (p = 50 / draws used). A calibrated group: draws reach it often.
    rng = np.random.default_rng(3)
    score = rng.uniform(0.2, 0.4, 300)
    label = (rng.random(300) < score).astype(float)
    run = np.arange(300)
    p, _, used = _confirm.simulated_p(np.sort(score), np.ones(300), run,
                                      label[np.argsort(score)], np.random.default_rng(0))
    assert used < 9_999
    assert p * used == pytest.approx(50.0, abs=1e-9)


def test_a_finding_is_confirmed_below_005():
    # alpha = 0.05: "a finding is confirmed when its Holm-adjusted held-out p-value is below"
    assert _confirm.is_confirmed("brownian", 0.049)
    assert not _confirm.is_confirmed("brownian", 0.051)
    assert not _confirm.is_confirmed("simulated", 0.05)


# -- the beam, pruning and the screen ------------------------------------------------------


def test_a_node_is_expanded_into_the_best_3_cuts_of_each_numeric_covariate():
    # keep_per_column = 3: "screened cuts per covariate that an expansion re-scores exactly"
    pred = _uniform(6000, x=np.arange(6000.0), y=np.arange(6000.0)[::-1].copy())
    beam, index = _beam_over(pred)
    root = _beam.Node((), 0.0, 0.0, beam.rows.size, beam.rows)
    children = beam.expand(root, pool=False)
    per_column = [sum(child.cuts[0].column == index[name] for child in children)
                  for name in ("x", "y")]
    assert per_column == [3, 3]


def test_each_level_of_the_beam_expands_16_nodes(spy):
    # beam_width = 16: "nodes kept per level of the beam, half under-, half over-predicted".
    # 20 binary covariates each move the rate by +-0.03: 40 (covariate, side) children pass
    # the material gain, 16 of them are expanded at level 1.
    n = 20_000
    rng = np.random.default_rng(4)
    flags = {f"f{k}": rng.integers(0, 2, n) for k in range(20)}
    score = rng.uniform(0.3, 0.7, n)
    truth = score + 0.03 * sum(2 * f - 1 for f in flags.values()) / 2
    pred = Predictions.from_arrays(score, rng.random(n) < np.clip(truth, 0, 1),
                                   covariates={k: v.astype(float) for k, v in flags.items()})
    beam, _ = _beam_over(pred)
    expanded = spy(_beam.Beam, "expand")
    beam.run(2)
    level_one = [node for node in expanded if len(node.cuts) == 1]
    assert len(level_one) == 16


def test_the_screen_path_has_256_blocks_ending_at_tie_runs():
    # blocks = 256: "blocks of the screen's coarse path (block ends are tie-run ends)"
    beam, _ = _beam_over(_uniform(10_000, x=np.arange(10_000.0)))  # distinct scores
    block, n_blocks = _screen_block_ids(beam)
    assert n_blocks == 256
    sizes = np.bincount(block)
    assert sizes.size == 256 and sizes.max() - sizes.min() <= 1  # 7,000 rows in 256 blocks


def _screen_block_ids(beam):
    from mcviz.search._screen import block_ids

    return block_ids(beam.data, beam.rows)


def test_an_out_of_fold_t_needs_folds_of_more_than_10_rows():
    # min_fold_rows = 10: "a fold of fewer rows (or of fewer than half the smallest finding)
    # gives an out-of-fold T of 0" (the smallest finding here: 4 rows, so the rule decides)
    rng = np.random.default_rng(5)
    n = 4000
    x = rng.uniform(0, 1, n)
    score = rng.uniform(0.2, 0.4, n)
    pred = Predictions.from_arrays(score, rng.random(n) < np.where(x < 0.5, 0.9, score),
                                   covariates={"x": x})
    beam, index = _beam_over(pred, min_rows=4)
    odd = beam.data.parity[beam.rows]
    cut = Cut(index["x"], "lt", hi=0.5)

    def oof(per_fold):
        base = np.sort(np.concatenate((beam.rows[odd][:per_fold], beam.rows[~odd][:per_fold])))
        return beam._oof_t_of(cut, base, True)

    assert oof(10) == 0.0
    assert oof(200) > 2.0  # x < 0.5 is the planted group: found on either fold


def test_a_condition_must_bring_02_plus_05_root_1_minus_f():
    # material_base = 0.2, material_noise = 0.5: the gain a condition keeping the share f must
    # bring is 0.2 + 0.5 sqrt(1 - f) at any z (the dead cap max(1, 0.05 z) was removed)
    from mcviz.search.rules import RULES

    for z in (2.0, 5.0, 13.0, 40.0):
        for f, gain in ((0.0, 0.7), (0.75, 0.45), (0.96, 0.3), (1.0, 0.2)):
            assert float(RULES.material(z, f)) == pytest.approx(gain, abs=1e-12)
