import numpy as np
import pandas as pd
import pytest

from mcviz.stats.agglomeration import cvar_curve
from mcviz.present.figures import (
    MAX_POINTS,
    cvar_curve_figure,
    group_errors_figure,
    local_calibration_figure,
    local_error_histogram_figure,
    neighbourhood_tradeoff_figure,
)
from mcviz.stats.groupings import (
    covariate_bins,
    local_calibration,
    local_calibration_map,
    local_error_distribution,
    neighbourhood_tradeoff,
)
from mcviz.io import Predictions


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(0)
    n = 12_000
    x = rng.normal(size=n)
    score = rng.uniform(0.05, 0.95, n)
    label = (rng.random(n) < np.clip(score + 0.1 * np.sign(x), 0, 1)).astype(int)
    return Predictions.from_arrays(
        score, label,
        covariates={"x": x, "z": rng.normal(size=n),
                    "g": pd.Categorical(rng.choice(["a", "b"], n))},
    )


@pytest.fixture(scope="module")
def local(pred):
    return local_calibration(pred, ["x", "z"], k=50)


def test_cvar_curve_figure_draws_the_curve_and_the_chosen_alpha(local):
    curve = cvar_curve(local.groups)
    figure = cvar_curve_figure(curve, alpha=0.9)
    np.testing.assert_array_equal(figure.data[0].y, curve.value)
    assert figure.layout.shapes[-1].x0 == 0.9
    assert "k-NN" in figure.layout.title.text


def test_group_errors_figure_bars_and_scatter(pred, local):
    bars = group_errors_figure(covariate_bins(pred, ["g", "x"], n_bins=3), sort=True)
    assert bars.data[0].type == "bar"
    assert len(bars.data[0].y) == 6
    assert list(bars.data[0].x) == sorted(bars.data[0].x)
    scatter = group_errors_figure(local.groups)
    assert scatter.data[0].type == "scattergl"
    assert len(scatter.data[0].x) == MAX_POINTS
    assert "seeded sample (seed 0) of 10,000 of 12,000" in scatter.layout.title.text


def test_local_calibration_figure_never_exceeds_max_points_and_says_so(pred, local):
    local_map = local_calibration_map(local, pred, "x", "g")
    figure = local_calibration_figure(local_map)
    assert len(figure.data[0].x) == MAX_POINTS
    assert "seeded sample" in figure.layout.title.text
    np.testing.assert_array_equal(figure.data[0].marker.color, local_map.error)


def test_histogram_and_tradeoff_figures(pred, local):
    distribution = local_error_distribution(local, bins=30)
    histogram = local_error_histogram_figure(distribution)
    np.testing.assert_allclose(np.sum(histogram.data[0].y), 1.0)
    tradeoff = neighbourhood_tradeoff(pred, ["x"], ks=(10, 100), max_centres=500)
    figure = neighbourhood_tradeoff_figure(tradeoff)
    assert [trace.name for trace in figure.data][:2] == ["mean |local error|", "mean standard error"]
    assert list(figure.data[0].x) == [10, 100]


def test_the_grouping_charts_speak_words_not_symbols(pred, local):
    # #40: "CVaR_α of |calibration error|" and the legend "c(I)" where people read

    for figure in (cvar_curve_figure(cvar_curve(local.groups), alpha=0.9),
                   group_errors_figure(covariate_bins(pred, ["g", "x"], n_bins=3)),
                   group_errors_figure(local.groups)):
        layout = figure.layout
        texts = [t.name or "" for t in figure.data]
        texts += [layout.title.text or "", layout.xaxis.title.text or "",
                  layout.yaxis.title.text or ""]
        texts += [a.text or "" for a in layout.annotations]
        for text in texts:
            assert not any(symbol in text for symbol in ("CVaR", "α", "c(I)", "e(I)", "|c|")), text
