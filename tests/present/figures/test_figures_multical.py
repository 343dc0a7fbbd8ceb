"""Figure content of the subpopulation scatter (not pixels)."""

import numpy as np
import pytest

from mcviz.present.figures import MAX_POINTS, subpopulation_scatter_figure
from mcviz.present.figures.multical import HOVER_CHARACTERS
from mcviz.io import Predictions
from mcviz.stats.multical import multicalibration
from mcviz.subpopulations import generate_subpopulations


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(5)
    n = 4000
    score = rng.random(n)
    covariates = {f"c{i}": rng.normal(size=n) for i in range(4)}
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   covariates=covariates)
    return multicalibration(pred, generate_subpopulations(pred, n_subpopulations=300, seed=1))


def test_one_point_per_subpopulation_and_the_selection_ringed(result):
    figure = subpopulation_scatter_figure(result, selected=result.argmax.id)
    points, ring = figure.data
    assert len(points.x) == len(result.subpopulations)
    assert list(points.customdata) == [s.id for s in result.subpopulations]
    assert np.allclose(points.y, result.kuiper_z)
    # normalised value = σ_0 · D_k/σ_k, so the argmax has the largest D/σ too
    assert ring.y[0] == pytest.approx(max(points.y))
    for text, sub in zip(points.text, result.subpopulations, strict=True):
        assert len(text) <= HOVER_CHARACTERS
        assert sub.description.startswith(text.rstrip("…"))


def test_caps_the_points_keeping_the_largest(result):
    figure = subpopulation_scatter_figure(result, max_points=50)
    drawn = np.sort(np.asarray(figure.data[0].y))
    assert drawn.size == 50
    assert np.allclose(drawn, np.sort(result.kuiper_z)[-50:])
    assert len(figure.data) == 1  # nothing selected
    assert MAX_POINTS >= 1000
