"""The CORP and smECE figures draw their results (no statistics recomputed)."""

import numpy as np
import pytest

from mcviz.present.figures._style import MAX_POINTS
from mcviz.present.figures.corp import corp_figure, smooth_reliability_figure
from mcviz.io import Predictions
from mcviz.stats.measures import corp_reliability, smooth_reliability


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(3)
    score = rng.uniform(0.02, 0.98, 2000)
    return Predictions.from_arrays(score, (rng.random(score.size) < score**1.5).astype(float))


def test_corp_figure_draws_the_blocks_and_the_band(pred):
    result = corp_reliability(pred, n_resamples=30)
    figure = corp_figure(result)
    names = [trace.name for trace in figure.data]
    assert names[0] == "perfect calibration"
    assert names[-1] == "CORP (isotonic) curve"
    curve = figure.data[-1]
    np.testing.assert_array_equal(curve.x[0::2], result.block_low)
    np.testing.assert_array_equal(curve.x[1::2], result.block_high)
    np.testing.assert_array_equal(curve.y[0::2], result.block_value)
    np.testing.assert_array_equal(figure.data[1].y, result.band_lower)
    np.testing.assert_array_equal(figure.data[2].y, result.band_upper)
    assert "90% consistency band" in figure.data[2].name
    assert "MCB" in figure.layout.title.text


def test_corp_figure_without_band_and_with_many_blocks():
    # responses equal to the scores: PAV keeps every distinct score as its own block
    score = np.linspace(0.0, 1.0, 30001)
    result = corp_reliability(
        Predictions.from_arrays(score, score, response="continuous"), n_resamples=0
    )
    assert result.block_value.size == score.size
    figure = corp_figure(result)
    assert len(figure.data) == 2
    curve = figure.data[-1]
    assert len(curve.x) <= MAX_POINTS
    assert curve.x[0] == 0.0
    assert curve.x[-1] == 1.0


def test_smooth_reliability_figure(pred):
    result = smooth_reliability(pred, n_bootstrap=20, rng=0)
    figure = smooth_reliability_figure(result, presentation=True)
    names = [trace.name for trace in figure.data]
    assert names == ["perfect calibration", *["95% bootstrap band (20)"] * 2,
                     "smoothed mean response", "density of scores"]
    np.testing.assert_array_equal(figure.data[3].y, result.fit)
    np.testing.assert_array_equal(figure.data[4].y, result.density)
    assert "σ*" in figure.layout.title.text
    no_band = smooth_reliability_figure(smooth_reliability(pred, n_bootstrap=0))
    assert len(no_band.data) == 3
