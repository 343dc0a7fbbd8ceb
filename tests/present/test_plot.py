"""mcviz.present.plot (one-call charts) and the calling convention ``(pred, *, index=None, ...)``."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

import mcviz
from mcviz.present import plot
from mcviz.errors import ValidationError
from mcviz.io import Predictions


@pytest.fixture(scope="module")
def pred() -> Predictions:
    rng = np.random.default_rng(7)
    n = 3_000
    score = rng.random(n)
    age = rng.integers(18, 90, n)
    # miscalibrated above 60: the response rate is the score plus 0.2 there
    label = rng.random(n) < np.clip(score + 0.2 * (age >= 60), 0, 1)
    return Predictions.from_arrays(score, label, covariates={
        "age": age, "group": rng.choice(["a", "b", "c"], n)})


# Statistics whose index= means "the statistic of those rows alone": each must equal the
# statistic of pred.subset(index) (an independent path: the rows taken first, then measured).
ALONE = [
    (lambda p, **k: mcviz.cumulative_differences(p, **k).kuiper, ()),
    (lambda p, **k: mcviz.variable_calibration(p, "age", **k).vece, ()),
    (lambda p, **k: mcviz.rank_variables(p, **k)["vece"].tolist(), ()),
    (lambda p, **k: mcviz.local_calibration_score(p, **k).lcs, ()),
    (lambda p, **k: mcviz.classical_measures(p, **k).as_json()["ece"], ()),
    (lambda p, **k: mcviz.calibration_metrics(p, **k).ece_equal_width, ()),
]


@pytest.mark.parametrize(("statistic", "_"), ALONE)
def test_index_means_the_rows_alone(pred, statistic, _):
    mask = pred.covariates["age"].to_numpy() >= 60
    expected = statistic(pred.subset(mask))
    assert statistic(pred, index=mask) == pytest.approx(expected, rel=1e-12)
    assert statistic(pred, index=np.flatnonzero(mask)[::-1]) == pytest.approx(expected,
                                                                               rel=1e-12)
    assert statistic(pred, index=None) == pytest.approx(statistic(pred), rel=1e-12)


def test_subset_keeps_score_order_rows_and_covariates(pred):
    rows = np.array([5, 17, 2_000, 2_999])
    sub = pred.subset(rows[::-1])
    assert sub.score.tolist() == pred.score[rows].tolist()
    assert sub.row.tolist() == pred.row[rows].tolist()
    assert sub.covariates["age"].tolist() == pred.covariates["age"].to_numpy()[rows].tolist()
    assert sub.run_end.all()
    assert (sub.n, sub.report.n_kept) == (4, 4)
    with pytest.raises(ValidationError, match="positions are repeated"):
        pred.subset([1, 1])
    with pytest.raises(ValidationError, match="outside"):
        pred.subset([pred.n])


def test_subset_recomputes_ties():
    pred = Predictions.from_arrays([0.1, 0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1, 1])
    assert pred.subset([1, 2, 4]).run_end.tolist() == [False, True, True]


def test_cumulative_chart_shows_the_statistic(pred):
    result = mcviz.cumulative_differences(pred)
    figure = plot.cumulative(pred)
    assert isinstance(figure, go.Figure)
    drawn = np.concatenate([np.asarray(t.y, dtype=float) for t in figure.data
                            if t.y is not None and len(t.y) > 2])
    # the drawn path keeps every extreme (decimation keeps minima and maxima), so its range
    # read off the chart is D
    path = result.path[result.plot_index]
    assert np.isin(np.round(path, 12), np.round(drawn, 12)).all()


def test_scope_as_filter_subpopulation_or_mask_gives_one_chart(pred):
    by_filter = plot.cumulative(pred, index="age >= 60")
    sub = mcviz.filter_subpopulation(pred, "age >= 60")
    by_subpopulation = plot.cumulative(pred, index=sub)
    by_mask = plot.cumulative(pred, index=pred.covariates["age"].to_numpy() >= 60)
    expected = mcviz.subpopulation_deviation(pred, sub.index)
    for figure in (by_filter, by_subpopulation, by_mask):
        ys = [np.asarray(t.y, dtype=float) for t in figure.data if t.y is not None]
        assert any(y.size == expected.plot_index.size
                   and np.allclose(y, expected.path[expected.plot_index]) for y in ys)


def test_review_has_four_charts_and_says_why_not(pred):
    figures = plot.review(pred, scope="age >= 60", variable="age")
    assert all(isinstance(f, go.Figure) for f in figures)
    assert "age ≥ 60" in figures.cumulative.layout.title.text
    assert plot.review(pred).variable is None
    rng = np.random.default_rng(1)
    continuous = Predictions.from_arrays(rng.random(500), rng.random(500),
                                         response="continuous")
    assert plot.review(continuous).lcs is None
    with pytest.raises(ValidationError, match="0/1 responses"):
        plot.lcs(continuous)


def test_helpers_draw_nominal_and_numeric_variables(pred):
    assert isinstance(plot.variable(pred, "group"), go.Figure)
    assert isinstance(plot.variable(pred, "age", index="group == a"), go.Figure)
    assert isinstance(plot.reliability(pred, bins=(5, 10)), go.Figure)
    with pytest.raises(ValidationError, match="no covariate 'nope'"):
        plot.variable(pred, "nope")
    with pytest.raises(ValidationError):
        plot.cumulative(pred, index="nope > 1")


def test_deviation_needs_a_subpopulation(pred):
    with pytest.raises(ValidationError, match="needs the subpopulation"):
        mcviz.subpopulation_deviation(pred)
