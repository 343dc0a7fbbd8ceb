"""Shared subpopulation runs, review scopes and the review grid's results (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import review, runs
from mcviz.stats.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.io import load_predictions


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(0)
    n = 3_000
    x = rng.uniform(size=n)
    group = rng.choice(["a", "b", "c"], size=n)
    score = np.clip(rng.beta(2, 3, size=n), 0.01, 0.99)
    truth = np.where((x > 0.7) & (group == "b"), np.minimum(score + 0.3, 1), score)
    label = (rng.uniform(size=n) < truth).astype(int)
    frame = pd.DataFrame({"x": x, "group": group, "score": score, "label": label})
    return load_predictions(frame, score="score", label="label")


def _counting():
    calls: list[str] = []
    cache: dict = {}

    def compute(name, fn, *args, **kwargs):
        key = (name, repr(sorted(kwargs.items())))
        if key not in cache:
            calls.append(name)
            cache[key] = fn(*args, **kwargs)
        return cache[key]

    return compute, calls


def test_runs_are_computed_once_and_every_repeat_uses_its_own_seed(pred):
    compute, calls = _counting()
    settings = runs.RunSettings(("x", "group"), 40, 10, seed=5, repeats=3)
    first = runs.run_subpopulations(pred, settings, compute=compute)
    again = runs.run_subpopulations(pred, settings, compute=compute)
    assert [r.seed for r in first] == [5, 6, 7]
    assert calls.count("subpopulations") == 3
    assert calls.count("multicalibration") == 3
    assert all(a.result is b.result for a, b in zip(first, again, strict=True))
    table = runs.repeats_table(first)
    assert list(table["seed"]) == [5, 6, 7]
    assert table["M"].tolist() == [r.result.metric for r in first]


def test_settings_from_the_page_dictionary():
    settings = runs.RunSettings.from_mapping({"key": "k", "covariates": ["x"],
                                              "n_subpopulations": "10", "min_size": 3,
                                              "seed": 1, "repeats": 2})
    assert settings == runs.RunSettings(("x",), 10, 3, 1, 2)


def test_scopes(pred):
    full = runs.resolve_scope(pred, "full")
    assert full.is_full
    assert full.subpopulation.size == pred.n
    with pytest.raises(ValidationError, match="no subpopulations computed"):
        runs.resolve_scope(pred, "argmax")
    done = runs.run_subpopulations(pred, runs.RunSettings(("x", "group"), 30, 10, 0))
    argmax = runs.resolve_scope(pred, "argmax", runs=done)
    assert argmax.subpopulation is done[0].result.argmax
    some = done[0].subsets.subpopulations[3]
    assert runs.resolve_scope(pred, "sub", runs=done, sub_id=some.id).subpopulation is some
    with pytest.raises(ValidationError, match="no generated subpopulation has id"):
        runs.resolve_scope(pred, "sub", runs=done, sub_id=10**6)
    chosen = runs.resolve_scope(pred, "filter", expression='group == "b" and x > 0.7')
    expected = np.flatnonzero((pred.covariates["group"] == "b").to_numpy()
                              & (pred.covariates["x"] > 0.7).to_numpy())
    np.testing.assert_array_equal(chosen.subpopulation.index, expected)
    with pytest.raises(ValidationError, match="filter is empty"):
        runs.resolve_scope(pred, "filter", expression="  ")


def test_levels_partition_the_rows(pred):
    for variable in ("x", "group"):
        levels = runs.scope_levels(pred, variable)
        sizes = [runs.resolve_scope(pred, "level", expression=e).subpopulation.size
                 for e in levels]
        assert sum(sizes) == pred.n, (variable, levels)
    assert len(runs.scope_levels(pred, "x")) == 5
    assert len(runs.scope_levels(pred, "group")) == 3


def test_own_cumulative_equals_the_statistic_of_the_subset(pred):
    index = np.flatnonzero(pred.covariates["group"].to_numpy() == "a")
    own = runs.own_cumulative(pred, index)
    frame = pd.DataFrame({"score": pred.score[index], "label": pred.label[index]})
    direct = cumulative_differences(load_predictions(frame, score="score", label="label"))
    assert own.kuiper == pytest.approx(direct.kuiper)
    assert own.sigma == pytest.approx(direct.sigma)


def test_review_results_of_a_subpopulation_are_restricted_to_it(pred):
    scope = runs.resolve_scope(pred, "filter", expression='group == "b"')
    results = review.review_results(pred, scope, variable="x", bins=(10, 20, 50))
    assert results.cumulative.n == scope.subpopulation.size  # deviation of the subpopulation
    assert results.own.n == scope.subpopulation.size
    assert results.curves.n == scope.subpopulation.size  # LOESS along x within the scope
    assert results.lcs.n == scope.subpopulation.size
    assert tuple(results.reliability.n_bins) == (10, 20, 50)
    cells = review.review_figures(results)
    assert all(not isinstance(c, str) for c in cells)
    names = [t.name for t in cells[0].data]
    assert any(n and n.startswith("±2σ") for n in names)  # the triangle
    assert [a.text for a in cells[1].layout.annotations][:3] == ["10 bins", "20 bins", "50 bins"]
    bands = [t for t in cells[2].data if getattr(t, "fill", None) == "toself"]
    assert len(bands) == 2  # error and predicted-error bands
    own = review.review_figures(results, own_calibration=True)[0]
    assert "Own calibration" in own.layout.title.text


def test_review_of_real_valued_responses_explains_the_missing_lcs():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"score": rng.uniform(size=300), "label": rng.uniform(size=300),
                          "x": rng.normal(size=300)})
    pred = load_predictions(frame, score="score", label="label", response="continuous")
    results = review.review_results(pred, runs.resolve_scope(pred, "full"), variable="x",
                                    bins=(10,))
    cells = review.review_figures(results)
    assert isinstance(cells[3], str)
    assert "0/1 responses" in cells[3]


def test_run_id_is_the_settings_objects_key():
    """The cache key comes from mcviz.settings: every setting of Algorithm 1 changes it."""
    import json

    from mcviz.settings import SearchSettings, SubpopulationSettings

    base = runs.RunSettings(("x", "group"), 40, 10, seed=5, repeats=2)
    ident = runs.run_id("k", base)
    assert ident == f"k|{json.dumps(['generated', ['x', 'group'], 40, 10, 5, 2])}"
    assert json.loads(ident.split("|", 1)[1])[2:] == list(SubpopulationSettings(
        n_subpopulations=40, min_size=10, seed=5, repeats=2).key())
    # the page's mapping (text values as widgets and links give them) names the same run
    mapping = {"key": "k", "covariates": ["x", "group"], "n_subpopulations": "40",
               "min_size": 10, "seed": 5, "repeats": 2, "mode": "generated"}
    assert runs.run_id("k", mapping) == ident
    assert runs.run_id("other", mapping) != ident
    for spec in SubpopulationSettings.settings():  # each setting of the object is in the key
        changed = dict(mapping, **{spec.name: getattr(base, spec.name) + 1})
        assert runs.run_id("k", changed) != ident, spec.name
    assert runs.run_id("k", dict(mapping, covariates=["x"])) != ident
    # a searched run: the search's settings object, whatever ℓ, m and the repeats say
    searched = dict(mapping, mode="searched", max_conditions=2, n_findings=3)
    assert runs.run_id("k", searched) == runs.run_id("k", dict(searched, n_subpopulations=9,
                                                                 repeats=5))
    assert json.loads(runs.run_id("k", searched).split("|", 1)[1])[2:] == list(
        SearchSettings(max_conditions=2, n_findings=3, seed=5).key())
    assert runs.run_id("k", dict(searched, max_conditions=3)) != runs.run_id("k", searched)
    with pytest.raises(ValidationError, match="n_subpopulations"):
        runs.run_id("k", dict(mapping, n_subpopulations=0))  # bounds: the settings object's
