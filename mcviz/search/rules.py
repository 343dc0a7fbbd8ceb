r"""The guided search's rules: every tuning constant of the search, in one documented object.

Each field of :class:`SearchRules` states the rule, the guarantee it protects, the benchmark
that set it (under ``benchmarks/``; its history: ``benchmarks/search_rules.md``) and the test
(under ``tests/search/``) that fails if it drifts -- or says that no test pins it yet. A mutation
check (each field set far off, below and above, its test run; session lead8) found 22 of the 35
fields then present pinned, 16 of them by ``tests/search/test_search_rules.py`` (one small
planted case each); the fields added since say in their docstrings which test pins them. The search
reads the one instance :data:`RULES`; a test that needs another rule builds
``dataclasses.replace(RULES, ...)`` and hands it to :class:`~mcviz.search._beam.Beam` (or
patches ``mcviz.search._find.RULES``).

The rules come in six groups: the beam (which candidates are expanded), pruning and growth
(which conditions a finding keeps, :meth:`SearchRules.material` and the test statistic
:math:`T = (z - \sqrt f z_0)/\sqrt{1-f}` of :meth:`~mcviz.search._prune.Pruning.prune`),
folding (when two candidates are one finding), the bounded work (rows searched, entries
examined, caches), level sets and candidate cuts (what the screen offers), and the held-out
confirmation (when a p-value is simulated). They are not user settings
(:class:`mcviz.settings.SearchSettings` holds those): changing one changes what the search
finds, so it is re-measured on ``benchmarks/bench_find.py`` first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RULES", "SearchRules"]


@dataclass(frozen=True, slots=True)
class SearchRules:
    """The guided search's tuning constants (one frozen instance, :data:`RULES`)."""

    # -- the beam ---------------------------------------------------------------------------
    beam_width: int = 16
    """Nodes kept per level of the beam, half under-, half over-predicted. Protects: every planted
    shape of up to three conditions is reached from some node. Set by: ``bench_find.py`` shape
    table, 10^5 rows. Test (fails when it drifts: checked with 2 and 32):
    ``test_search_rules.py::test_each_level_of_the_beam_expands_16_nodes``."""
    beam_gain: float = 0.5
    """A condition added to a node of level 1 or more (and by
    :meth:`~mcviz.search._prune.Pruning.grow`) must raise its D/sigma on the search rows by more
    than this. Protects: a node is not its parent less a few rows. Set by: ``bench_find.py``
    shape table, 10^5 rows. Test (exercises it; not mutation-checked):
    ``test_search_shapes.py::test_three_conditions_most_of_the_time``."""
    keep_per_column: int = 3
    """Screened cuts per covariate that an expansion re-scores exactly. Protects: the coarse
    screen's ranking error (block ends) does not lose the best cut. Set by: ``bench_find.py``
    shape table. Test (fails when it drifts: checked with 1 and 10):
    ``test_search_rules.py::test_a_node_is_expanded_into_the_best_3_cuts_of_each_numeric_covariate``.
    """
    material_base: float = 0.2
    """With :attr:`material_noise`, the gain in D/sigma a condition must bring to stay
    (:meth:`material`: ``0.2 + 0.5 sqrt(1 - f)`` for a condition keeping the share ``f`` of the
    rows). Protects: a condition that trims a few rows still brings a gain beyond rounding. Set by:
    ``bench_find.py`` shape table. Test (fails when it drifts: checked with 0.1 and 0.4):
    ``test_search_rules.py::test_a_condition_must_bring_02_plus_05_root_1_minus_f``. (Until
    session lead9 the gain was capped at ``max(1, 0.05 z)`` by two further fields; the second
    term is at most 0.7, so the cap never bound: both were removed, nothing changed.)"""
    material_noise: float = 0.5
    """The factor of ``sqrt(1 - f)`` in :meth:`material`: a condition that halves the rows must
    bring a gain of the order of the noise its removal of rows adds. Protects: an unrelated
    condition is not kept for a gain its trimming makes by chance. Set by: ``bench_find.py``
    shape table. Test (fails when it drifts: checked with 0.25 and 1.0):
    ``test_search_rules.py::test_a_condition_must_bring_02_plus_05_root_1_minus_f``."""
    # -- pruning and growth -----------------------------------------------------------------
    drop_t: float = 3.0
    r"""A condition stays only when its :math:`T = (z - \sqrt f z_0)/\sqrt{1-f}` (its gain over the
    rest of the finding in standard errors of an unrelated condition) is at least this.
    Protects: the best of a few thousand unrelated cuts is dropped (the largest of that many
    standard normals rarely reaches 3). Set by: ``bench_find.py`` shape table and calibrated
    null. No test pins it yet:
    ``test_search_scale.py::test_grow_adds_only_conditions_that_pass_the_pruning_test_out_of_fold``
    exercises it but still passes with 1.0 (mutation check, 01:55 UTC)."""
    drop_t_oof: float = 2.5
    """... and its out-of-fold :math:`T` (chosen on one fold, measured on the other) at least this,
    unless its :math:`T` reaches :attr:`sure_t`. Protects: no condition stays only because it
    was chosen on the rows it is measured on. Set by: ``bench_find.py`` at 10^5 and 10^6 rows.
    Test (fails when it drifts: checked with 0.0):
    ``test_search_scale.py::test_grow_adds_only_conditions_that_pass_the_pruning_test_out_of_fold``."""
    sure_t: float = 5.0
    """A :math:`T` this large skips the out-of-fold test (the largest of a few thousand unrelated
    cuts hardly reaches it) -- except for a set of several levels, chosen among the subsets of its
    levels, which always faces it (:meth:`~mcviz.search._prune.Pruning._sure`; a noise exclusion
    of 8 of 72 ages reached :math:`T \\approx 5`: ``tests/compare/test_models.py::
    test_a_noise_integer_column_adds_no_exclusion_to_the_planted_groups``). Protects: bounded
    work without losing a strong condition. Set by: ``bench_find.py`` at 10^6 rows. Test (fails when it drifts: checked with 2.0):
    ``test_search_scale.py::test_above_finish_rows_entries_whose_last_condition_fails_pruning_are_skipped``."""
    min_fold_rows: int = 10
    """A fold of fewer rows (or of fewer than half the smallest finding) gives an out-of-fold
    :math:`T` of 0. Protects: no out-of-fold test on a handful of rows. Set by:
    ``bench_find.py`` rare shape. Test (fails when it drifts: checked with 2 and 10_000):
    ``test_search_rules.py::test_an_out_of_fold_t_needs_folds_of_more_than_10_rows``."""
    grow_limit: int = 4
    """Pruned candidates (the strongest, examined first) that
    :meth:`~mcviz.search._prune.Pruning.grow` tries to complete; it screens every covariate.
    Protects: bounded finishing work. Set by: ``bench_find.py`` speed table. Test (exercises it;
    not mutation-checked): ``test_search_shapes.py::test_three_conditions_most_of_the_time``."""
    grow_from: int = 3
    """A finding of this many conditions is grown (:meth:`~mcviz.search._prune.Pruning.grow`, up
    to :attr:`max_depth`) when the beam is deeper (``max_conditions`` 4 or 5); with
    ``max_conditions`` at most this, a finding is grown once it reaches ``max_conditions``.
    Protects: a deeper beam grows every finding the default depth 3 grows (issue #42:
    ``bench_find.py --more four_depth4`` draw 10 stopped at three conditions, J 0.35, where depth
    3 grows the fourth). Set by: the default ``max_conditions`` (3). Test (fails when it drifts:
    checked with 4): ``test_search_more.py::test_a_deeper_beam_grows_a_three_condition_finding``."""
    grow_tries: int = 3
    """:meth:`~mcviz.search._prune.Pruning.grow`'s candidate conditions tested out of fold per step
    (the largest D/sigma first). Protects: bounded work per step. Set by: ``bench_find.py
    --big-n 1000000``. No test pins it yet:
    ``test_search_scale.py::test_grow_adds_only_conditions_that_pass_the_pruning_test_out_of_fold``
    exercises it but still passes with 1 (mutation check, 01:55 UTC)."""
    max_depth: int = 5
    """Conditions a finding may reach past ``max_conditions`` (depth by evidence): the beam
    stops at ``max_conditions``, then :meth:`~mcviz.search._prune.Pruning.grow` adds a condition
    to a finding that reached it only when it passes the pruning tests (:attr:`drop_t` in
    sample, :attr:`drop_t_oof` out of fold unless :attr:`sure_t`, a :meth:`material` gain), up to
    this many conditions. Protects: a four-condition group is found at the default depth 3
    without the cost of a fourth beam level; an unrelated condition is added only as often as
    the out-of-fold test lets one pass. Set by: ``bench_find.py --more four`` (0/15 at depth 3
    before, issue #42 item 3) and the calibrated null. Test (exercises it):
    ``test_search_more.py::test_four_conditions_are_found_at_the_default_depth``."""
    refine_passes: int = 2
    """Passes of the coordinate ascent over a finding's conditions
    (:meth:`~mcviz.search._refine.Refining.refine`). Protects: bounded work (most findings
    converge in one pass). Set by: ``bench_find.py`` shape table. Test (exercises it; not
    mutation-checked): ``test_search_shapes.py::test_three_conditions_most_of_the_time``."""
    refine_steps: int = 8
    """Observed values tried for each cut point between its neighbouring candidate cuts. Protects:
    a cut point lands within an eighth of a bin of the best observed value. Set by:
    ``bench_find.py`` shape table. Test (exercises it; not mutation-checked):
    ``test_search_shapes.py::test_each_shape_is_the_first_finding``."""
    # -- folding ----------------------------------------------------------------------------
    jaccard_fold: float = 0.5
    """Two candidates whose members overlap with a Jaccard index above this are one finding (the
    better stays). Protects: no two reported findings are mostly the same rows. Set by:
    ``bench_find.py`` shape table (two groups). No test pins it yet:
    ``test_search_scale.py::test_polished_findings_are_grown_and_never_overlap`` exercises it
    but still passes with 0.95 (mutation check, 01:55 UTC)."""
    union_overlap: float = 0.5
    """Two confirmed findings of one direction are offered as a union (:mod:`mcviz.search._union`)
    only when the rows they share are at most this share of the smaller's: mostly apart. Two
    groups on unrelated columns share the other's share of their rows (the arms of
    ``bench_find.py --more union``: 9-21%), so a bound of 10% would refuse the planted union;
    the union's D/sigma must also exceed each part's, on the search and the held-out rows.
    Protects: a union is never a finding seen again with a few rows added. Set by:
    ``bench_find.py --more union`` (draws 0-14: the arms share 9-21% of the smaller).
    Test (exercises it): ``test_search_union_offer.py::test_a_planted_union_is_offered``."""
    explained: float = 0.5
    """A candidate whose D/sigma outside the rows of better findings falls below this share of its
    own folds into them. Protects: a finding is not a better one seen through a window. Set by:
    ``bench_find.py`` at 10^6 rows. Test (fails when it drifts: checked with 0.0):
    ``test_search_scale.py::test_entries_explained_by_a_better_finding_are_folded_before_refining``."""
    # -- bounded work -----------------------------------------------------------------------
    examine_per_finding: int = 3
    """Pool entries examined per finding wanted (plus 5; in proportion to the rows above
    :attr:`finish_rows`). Protects: the finishing work is bounded whatever the pool. Set by:
    ``bench_find.py`` speed table. Test (fails when it drifts: checked with 1):
    ``test_search_scale.py::test_above_finish_rows_fewer_entries_are_examined``."""
    max_search_rows: int = 1_000_000
    """At most this many rows are searched (a random subset of the search rows); findings are
    measured on every row. Protects: bounded memory and time. Set by: ``bench_find.py --scale``.
    Test (fails when it drifts: checked with 1_000):
    ``test_search_scale.py::test_default_budget_admits_the_planted_searches``."""
    finish_rows: int = 400_000
    """At most this many search rows refine the candidates' cut points (pruning and ranking stay on
    all the search rows). Protects: bounded finishing work at 10^6 rows, the same recovery. Set
    by: ``bench_find.py --big-n 1000000``. Test (fails when it drifts: checked with 1_000 and
    1_000_000): ``test_search_rules.py::test_candidates_are_refined_on_at_most_400000_search_rows``.
    """
    min_rows: int = 20
    """No finding has fewer search rows, whatever ``min_share``; a search needs twice as many.
    Protects: no finding of a handful of rows. Set by: none (a floor). Test (fails when it drifts:
    checked with 2 and 200):
    ``test_search_rules.py::test_a_search_needs_40_search_rows_and_a_finding_20``."""
    small_rows: int = 100
    """With :attr:`small_share`, the floor of small groups: below ``min_share`` (at its default
    or below), groups of down to ``max(small_rows, small_share x search rows)`` are searched when
    their D/sigma could reach the held-out level at their size
    (:func:`~mcviz.search._find._small_groups`: their mean shift at least the MDE at their
    share). Protects: a tiny group with a strong effect is found (0.3% of rows, own D/sigma 10:
    0/15 before, issue #42 item 5); a group too small to be confirmed is not searched, and the
    held-out test holds the false-find rate. Set by: ``bench_find.py --more tiny`` and the
    calibrated null. Test (exercises it): ``test_search_more.py::test_a_tiny_group_is_found``."""
    small_share: float = 0.001
    """The share of the search rows in the floor of small groups (see :attr:`small_rows`).
    Protects: as :attr:`small_rows`, at 10^6 rows and more. Set by: issue #42 (0.1%). Test
    (exercises it): ``test_search_more.py::test_a_tiny_group_is_found``."""
    masks_cached: int = 32
    """Boolean masks over the search rows kept for reuse (one byte per search row each; the memory
    estimate counts them). Protects: memory within :func:`~mcviz.search.search_estimate`. Set
    by: ``bench_budget.py``. Test (fails when it drifts: checked with 8 and 256):
    ``test_search_rules.py::test_the_last_32_masks_are_kept``."""
    masked_share: float = 0.125
    """Subsets of at least this share of a node's rows are scored from masks, smaller ones gathered
    (the same numbers: exact integer sums). Protects: speed only. Set by:
    ``bench_search_time.py``. Test (exercises it; not mutation-checked):
    ``test_search_shapes.py::test_masked_subsets_are_scored_exactly``."""
    sets_cached: int = 2
    """Members of recent conjunctions kept for reuse, in all at most this many times the search
    rows (eight bytes per position; the memory estimate counts them). Protects: memory within
    :func:`~mcviz.search.search_estimate`. Set by: ``bench_budget.py``. Test (fails when it drifts:
    checked with 1 and 16):
    ``test_search_rules.py::test_recent_conjunctions_hold_at_most_twice_the_search_rows``."""
    # -- candidate cuts and level sets ------------------------------------------------------
    numeric_bins: int = 64
    """Candidate cut points per numeric covariate (quantiles of the search rows; refined later).
    Protects: any threshold or band is within a bin of a candidate. Set by: ``bench_find.py``
    shape table. Test (fails when it drifts: checked with 4 and 128):
    ``test_search_rules.py::test_128_distinct_values_are_cut_at_each_and_more_at_64_quantiles``."""
    distinct_bins: int = 128
    """A numeric covariate with at most this many distinct values is cut at every one of them.
    Protects: counts and small integers are cut exactly. Set by: ``bench_find.py`` shape table.
    Test (fails when it drifts: checked with 2 and 256):
    ``test_search_rules.py::test_128_distinct_values_are_cut_at_each_and_more_at_64_quantiles``."""
    max_levels: int = 100_000
    """Nominal covariates with more levels are left out of the search, with a notice. Protects:
    bounded work (the level sets' memory is O(rows + levels): bincounts over the level codes,
    paths for the first :attr:`max_set_levels` levels only; a 10^5-level column searched
    under ``prlimit``: ``test_search_levels.py``). Set by: none (a bound; id columns are left out
    by the loader before). Test (fails when it drifts below 5,000):
    ``test_search_levels.py::test_a_set_of_25_of_5000_levels_is_found``."""
    code_levels: int = 100
    """A whole-number covariate with 3 to this many distinct values (over all rows) is searched
    both as ranges and as level sets (codes such as 1..60 stored as integers); the held-out test
    judges whichever the search reports. Protects: a set of integer codes is found without
    ``--nominal``. Set by: ``bench_find.py --more codes``. Test (fails when it drifts below 60):
    ``test_search_levels.py::test_integer_codes_are_searched_as_level_sets_too``."""
    blocks: int = 256
    """Blocks of the screen's coarse path (block ends are tie-run ends). Protects: the screen's D
    is within a block's drift of the exact one. Set by: ``bench_find.py`` speed table. Test (fails
    when it drifts: checked with 4 and 1024):
    ``test_search_rules.py::test_the_screen_path_has_256_blocks_ending_at_tie_runs``."""
    set_penalty: float = 0.75
    """The out-of-fold D/sigma of a set of :math:`k` levels is lowered by ``set_penalty *
    log2(k)``. Protects: a level set is not chosen for its many levels alone. Set by:
    ``bench_find.py`` shape table (the set group). Test (exercises it; not mutation-checked):
    ``test_search_shapes.py::test_each_shape_is_the_first_finding``."""
    prefix_penalty: float = 0.0
    """Within a finding's other conditions, a prefix set of :math:`k` levels is lowered by
    ``prefix_penalty * log2(k)`` (there :attr:`join_tail` guards instead). Protects: as
    :attr:`set_penalty`, within a finding. Set by: ``bench_find.py`` shape table. Test
    (exercises it; not mutation-checked):
    ``test_search_shapes.py::test_each_shape_is_the_first_finding``."""
    join_tail: float = 0.1
    """A level joins a set within a finding's other conditions only when its own drift there is
    beyond the ``1 - join_tail / L`` normal quantile (``L`` levels), or, when at least
    ``1 / join_tail`` levels pass, beyond Benjamini-Hochberg's step-up threshold at
    ``join_tail`` (:func:`~mcviz.search._screen.join_threshold`). Protects: about
    ``join_tail`` unrelated levels join by chance, at most that share of a large set. Set by:
    ``bench_find.py`` shape table (``--more levels25_d30``). Tests:
    ``test_search_levels.py::test_the_join_threshold_is_benjamini_hochberg_step_up``,
    ``test_search_levels.py::test_levels_that_fail_one_by_one_join_together``."""
    step_up_levels: int = 1_000
    """:attr:`join_tail`'s step-up is used on columns of at least this many levels present
    (there the per-level threshold, 3.7 and more, loses true levels of a few rows each); on
    fewer, one unrelated level is a large part of a set and the per-level threshold stays: with
    the step-up on a 20-level column, a strongly miscalibrated group kept ``kind not in {8 of
    20 levels}`` as a condition (``bench_find.py --more codes`` draw 7, J 0.61). Protects: sets of
    few-level columns as before. Set by: ``bench_find.py --more codes,levels25_d30``. Test
    (exercises it; not mutation-checked):
    ``test_search_levels.py::test_levels_that_fail_one_by_one_join_together``."""
    max_set_levels: int = 64
    """Level sets hold at most this many levels (the rest is described as a complement). Protects:
    a sentence a person can read. Set by: none (a bound). Test (fails when it drifts: checked with 2
    and 128): ``test_search_rules.py::test_a_level_set_keeps_at_most_64_levels``."""
    # -- held-out confirmation --------------------------------------------------------------
    simulate_below: float = 50.0
    r"""Held-out groups of binary responses whose effective variance :math:`V_{\text{eff}} = V^3 /
    (\sum_j W_j^3 S_j(1-S_j)(S_j^2 + (1-S_j)^2))^2` (the inverse square of the Lyapunov ratio of
    eq. (5)'s terms; :math:`V = \sum_j S_j(1-S_j)W_j^2`; :math:`V_{\text{eff}} \approx V` at
    extreme scores, :math:`4V` at 0.5) is below this get a simulated p-value. Protects: a
    held-out p-value keeps its level where the Brownian tail does not. Set by:
    ``bench_holdout_tail.py``. Test (fails when it drifts: checked with 0.0):
    ``test_holdout_p.py::test_simulated_p_keeps_the_level_where_the_brownian_p_does_not``."""
    simulated_draws: int = 9_999
    """Most simulated draws per finding (the smallest simulated p-value is 1 / 10,000). Protects:
    p-values small enough for Holm over the findings. Set by: ``bench_holdout_tail.py``. Test (fails
    when it drifts: checked with 99 and 99_999):
    ``test_search_rules.py::test_the_smallest_simulated_p_value_is_one_in_10000``."""
    simulated_stop: int = 50
    """The simulation stops once this many draws reach the observed D/sigma (Besag and Clifford's
    sequential p-value, valid at any stop). Protects: bounded time for large p-values. Set by:
    ``bench_holdout_tail.py``. Test (fails when it drifts: checked with 5 and 500):
    ``test_search_rules.py::test_the_simulation_stops_at_the_50th_draw_reaching_the_observed``."""
    simulated_work: int = 3 * 10**7
    """Rows x draws simulated per finding at most (fewer draws for groups of many rows). Protects:
    bounded time. Set by: ``bench_holdout_tail.py``. Test (fails when it drifts: checked with 10_000
    and 3 x 10^9):
    ``test_search_rules.py::test_a_group_of_5000_rows_gets_at_most_30_million_rows_times_draws``."""
    alpha: float = 0.05
    """A finding is confirmed when its Holm-adjusted held-out p-value is below this; the minimum
    detectable effect is at this level. Protects: the family-wise error of the confirmed
    findings. Set by: ``bench_find.py`` calibrated null. Test (fails when it drifts: checked with
    0.01 and 0.5): ``test_search_rules.py::test_a_finding_is_confirmed_below_005``."""

    def material(self, z: float, kept: float | np.ndarray = 0.0) -> float | np.ndarray:
        r"""Return the gain in D/sigma a condition must bring to stay.

        The condition keeps a share :math:`f` (``kept``) of the rows it is added to. If it had
        nothing to do with the deviation, the D/sigma with it would be that without it, shrunk
        by :math:`\sqrt f`, plus a noise of standard deviation about :math:`\sqrt{1-f}` (the
        part of the path it removes); a condition stays when it raises D/sigma by at least
        :math:`0.2 + 0.5\sqrt{1 - f}` (:attr:`material_base`, :attr:`material_noise`): a
        condition that trims a few rows must bring a small gain, one that halves the rows a gain
        of the order of the noise. The gain does not depend on :math:`z` (the argument is kept
        for the callers: a rule of :math:`z` would go here).

        Examples
        --------
        >>> round(float(RULES.material(40.0)), 12)  # 0.2 + 0.5
        0.7
        >>> round(float(RULES.material(4.0, kept=0.96)), 12)  # 0.2 + 0.5 * 0.2
        0.3
        """
        del z  # the gain is the same at any D/sigma
        return self.material_base + self.material_noise * np.sqrt(
            np.clip(1.0 - np.asarray(kept), 0.0, 1.0))


RULES = SearchRules()
"""The rules the search runs with."""
