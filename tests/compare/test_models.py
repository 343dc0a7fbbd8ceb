"""compare_models: identical models, swapping A and B, planted groups, bad input, the join."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcviz import ValidationError, compare_models, search_subpopulations
from mcviz.compare import join_challenger
from mcviz.compare.models import _search_predictions
from mcviz.io import Predictions, load_predictions
from mcviz.stats.cumulative import cumulative_differences


def _planted(n=12_000, seed=0):
    """A is off by +0.15 in group g2, B by +0.15 in g5; both right elsewhere."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 8, n)
    p = rng.uniform(0.1, 0.85, n)
    label = (rng.random(n) < p).astype(int)
    a = p + 0.15 * (group == 2)
    b = p + 0.15 * (group == 5)
    covariates = {"group": [f"g{g}" for g in group], "x": rng.normal(size=n)}
    return a, b, label, covariates


@pytest.fixture(scope="module")
def planted():
    a, b, label, covariates = _planted()
    forward = compare_models(Predictions.from_arrays(a, label, covariates=covariates), b)
    backward = compare_models(Predictions.from_arrays(b, label, covariates=covariates), a)
    return forward, backward


def test_planted_groups_are_found_in_their_direction(planted):
    forward, _ = planted
    assert forward.regressions[0].description == "group == g5"  # B broken there
    assert forward.improvements[0].description == "group == g2"  # B fixed A's error
    assert forward.regressions[0].confirmed
    assert forward.regressions[0].group == "group is g5"  # in words, for sentences and slides
    assert forward.regressions[0].as_json()["group"] == "group is g5"
    assert forward.improvements[0].confirmed
    worse = forward.regressions[0]
    # in g5 B over-predicts by 0.15 and A is right: observed - predicted near -0.15 and 0
    assert worse.calibration_b == pytest.approx(-0.15, abs=0.04)
    assert worse.calibration_a == pytest.approx(0.0, abs=0.04)
    assert worse.effect > 0 > forward.improvements[0].effect


def _regions(seed, n=8_000):
    """A off by +0.15 in region r1, B in r4; ``age`` (integers 18..89) is noise."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 6, n)
    p = rng.uniform(0.1, 0.85, n)
    label = (rng.random(n) < p).astype(int)
    covariates = {"region": [f"r{g}" for g in group], "age": rng.integers(18, 90, n)}
    return p + 0.15 * (group == 1), p + 0.15 * (group == 4), label, covariates


def test_a_noise_integer_column_adds_no_exclusion_to_the_planted_groups():
    # age (72 whole numbers) is also searched as level sets; within a planted region, excluding
    # the 8 most adverse of its 72 ages reached an in-sample T of about 5 by selection alone and
    # skipped the out-of-fold test ("region == r4 and age not in {22, 27, ...}"): before the fix
    # both groups were exact in 8 of these 10 seeds, now in all (at least 9 asked)
    # (the comparison's own search on its own rows: the rest of compare_models is not needed here)
    exact = 0
    for seed in range(10):
        a, b, label, covariates = _regions(seed)
        pred = Predictions.from_arrays(a, label, covariates=covariates)
        searched = _search_predictions(pred, b[pred.row], ["region", "age"])  # B in A's order
        found = search_subpopulations(searched, covariates=["region", "age"], n_findings=6,
                                      holdout=0.3, seed=0).findings
        first = [next((f.description for f in found if sign * f.mean_residual > 0), None)
                 for sign in (1, -1)]
        exact += first == ["region == r4", "region == r1"]
    assert exact >= 9


def test_swapping_a_and_b_swaps_the_groups_and_flips_every_sign(planted):
    forward, backward = planted
    assert forward.brier.difference == pytest.approx(-backward.brier.difference, abs=1e-15)
    assert forward.brier.ci_low == pytest.approx(-backward.brier.ci_high, abs=1e-15)
    assert forward.log_loss.difference == pytest.approx(-backward.log_loss.difference,
                                                        abs=1e-15)
    head_f, head_b = forward.headline, backward.headline
    np.testing.assert_allclose(head_f.path, -head_b.path, atol=1e-15)
    assert head_f.kuiper_z == pytest.approx(head_b.kuiper_z, rel=1e-12)
    np.testing.assert_allclose(forward.net_benefit.difference, -backward.net_benefit.difference,
                               atol=1e-15)
    assert forward.calibration_a.kuiper == pytest.approx(backward.calibration_b.kuiper)
    for mine, theirs in ((forward.regressions, backward.improvements),
                         (forward.improvements, backward.regressions)):
        assert [f.description for f in mine] == [f.description for f in theirs]
        for f, g in zip(mine, theirs, strict=True):
            assert f.effect == pytest.approx(-g.effect, abs=1e-12)
            assert (f.ci_low, f.ci_high) == pytest.approx((-g.ci_high, -g.ci_low), abs=1e-12)
            assert f.p_adjusted == pytest.approx(g.p_adjusted, rel=1e-9)
            assert (f.calibration_a, f.calibration_b) == pytest.approx(
                (g.calibration_b, g.calibration_a), abs=1e-12)
            assert f.size == g.size
            assert f.confirmed == g.confirmed


def test_identical_scores_give_zero_differences_and_no_group():
    a, _, label, covariates = _planted(3000, 1)
    result = compare_models(Predictions.from_arrays(a, label, covariates=covariates), a)
    assert result.brier.difference == 0
    assert result.log_loss.difference == 0
    assert all(not np.any(path.path) for path in result.paths)
    assert result.regressions == ()
    assert result.improvements == ()
    assert not np.any(result.net_benefit.difference)
    assert "same Brier loss on every row" in result.notice


def test_each_models_calibration_is_the_metrics_one():
    a, b, label, covariates = _planted(3000, 2)
    pred = Predictions.from_arrays(a, label, covariates=covariates)
    result = compare_models(pred, b)
    assert result.calibration_a.kuiper == cumulative_differences(pred).kuiper
    alone_b = cumulative_differences(Predictions.from_arrays(b, label))
    assert result.calibration_b.kuiper == pytest.approx(alone_b.kuiper, abs=1e-15)
    assert result.calibration_b.sigma == pytest.approx(alone_b.sigma, rel=1e-12)


def test_score_b_by_column_name_equals_by_array():
    a, b, label, covariates = _planted(3000, 3)
    frame = pd.DataFrame({"model_a": a, "model_b": b, "y": label, **covariates})
    pred = load_predictions(frame, score="model_a", label="y",
                            covariates=["model_b", "group", "x"])
    by_name = compare_models(pred, "model_b")
    by_array = compare_models(Predictions.from_arrays(a, label, covariates=covariates), b)
    assert by_name.score_b == "model_b"
    assert by_name.brier.difference == pytest.approx(by_array.brier.difference, abs=1e-15)
    assert [f.description for f in by_name.regressions] == [
        f.description for f in by_array.regressions]
    assert all("model_b" not in f.description for f in by_name.regressions)


def test_bad_input_names_the_column():
    a, b, label, covariates = _planted(500, 4)
    pred = Predictions.from_arrays(a, label, covariates=covariates)
    with pytest.raises(ValidationError, match="same column"):
        compare_models(pred, "score")
    with pytest.raises(ValidationError, match=r"500 values.*input had|one score per"):
        compare_models(pred, np.append(b, 0.5))
    bad = b.copy()
    bad[[3, 8]] = [1.5, np.nan]
    with pytest.raises(ValidationError, match=r"2 of 500 rows .* outside \[0, 1\] \(rows 3, 8\)"):
        compare_models(pred, bad)
    with pytest.raises(ValidationError, match="no covariate 'nope'"):
        compare_models(pred, b, covariates=["nope"])


def test_join_counts_unmatched_rows_and_refuses_no_match():
    a = pd.DataFrame({"id": [1, 2, 3, 4], "score": [0.1, 0.5, 0.9, 0.3], "y": [0, 1, 1, 0]})
    b = pd.DataFrame({"id": [4, 1, 7, 3, 9], "score": [0.8, 0.2, 0.4, 0.6, 0.5]})
    joined, report = join_challenger(a, b, id_column="id", score_b="score")
    assert joined["id"].tolist() == [1, 3, 4]  # the first file's order
    assert joined["score_b"].tolist() == [0.2, 0.6, 0.8]
    assert (report.matched, report.unmatched_a, report.unmatched_b) == (3, 1, 2)
    with pytest.raises(ValidationError, match="--id 'id': no id of the first file"):
        join_challenger(a, b.assign(id=b["id"] + 100), id_column="id", score_b="score")
    with pytest.raises(ValidationError, match="share an id"):
        join_challenger(a, pd.concat([b, b.head(1)]), id_column="id", score_b="score")
    with pytest.raises(ValidationError, match="--score-b 'p': no such column"):
        join_challenger(a, b, id_column="id", score_b="p")


def test_the_search_alone_gives_the_comparisons_groups_and_notes():
    """``search_groups`` (compare --engine's sample) = compare_models' groups and notice."""
    from mcviz.compare.models import search_groups

    a, b, label, covariates = _planted(6000, seed=0)
    covariates = {**covariates, "level": np.arange(6000) % 3, "chall": b}
    pred = load_predictions(pd.DataFrame({"a": a, "y": label, **covariates}), score="a",
                            label="y", covariates=["group", "x", "level", "chall"],
                            nominal=["level"])
    whole = compare_models(pred, "chall", covariates=["group", "x", "level"])
    alone = search_groups(pred, "chall", covariates=["group", "x", "level"])
    assert [f.description for f in alone.search.findings] == [
        f.description for f in whole.search.findings]
    for name in ("regressions", "improvements"):
        assert [f.as_json() for f in getattr(alone, name)] == [
            f.as_json() for f in getattr(whole, name)]
    assert alone.notice == whole.notice
    assert alone.notice.startswith("Not ordered by the nominal covariates 'group', 'level'")
    assert whole.regressions[0].description.startswith("group == g5")
    assert whole.improvements[0].description.startswith("group == g2")
