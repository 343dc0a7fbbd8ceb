"""Figure content of the cumulative plots (not pixels)."""

import numpy as np
import pandas as pd
import pytest

from mcviz.stats.cumulative import cumulative_differences
from mcviz.stats.deviation import subpopulation_deviation
from mcviz.present.figures import MAX_POINTS
from mcviz.present.figures.cumulative import cumulative_figure, deviation_figure
from mcviz.io import Predictions, load_predictions


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(2)
    n = 50_000
    score = rng.random(n)
    return Predictions.from_arrays(
        score, (rng.random(n) < score**1.3).astype(int),
        covariates={"age": rng.integers(18, 90, n).astype(float)},
    )


def _traces(figure):
    path = next(t for t in figure.data if t.name and "±2σ" not in t.name and t.xaxis != "x2")
    triangle = next(t for t in figure.data if t.name and t.name.startswith("±2σ"))
    return path, triangle


def test_cumulative_figure_content(pred):
    result = cumulative_differences(pred)
    figure = cumulative_figure(result)
    assert len(figure.data) == 3  # path, triangle, top-axis helper
    path, triangle = _traces(figure)
    # Decimated, but the drawn range is exactly D.
    assert len(path.y) <= MAX_POINTS
    assert max(path.y) - min(path.y) == result.kuiper
    # Triangle vertices (0, 0), (x_tri, ±2σ): tip-to-tip 4σ.
    assert list(triangle.x) == [0.0, 0.1, 0.1, 0.0]
    assert triangle.y[0] == 0
    assert triangle.y[1] == pytest.approx(2 * result.sigma)
    assert triangle.y[2] == pytest.approx(-2 * result.sigma)
    assert triangle.y[1] - triangle.y[2] == pytest.approx(4 * result.sigma)
    title = figure.layout.title.text
    assert "slope = miscalibration" in title
    assert f"D = {result.kuiper:.4g}" in title
    assert f"D/σ = {result.kuiper_z:.3g}" in title
    # p below 0.0001 is written "p < 0.0001" (mcviz.text.format_p), never 8.56e-273
    assert result.p_value < 1e-4
    assert "(p < 0.0001)" in title
    # Hover carries k/n and the score.
    assert path.customdata.shape == (len(path.x), 2)
    assert "k/n" in path.hovertemplate
    # Top axis k/n, bottom axis scores.
    assert figure.layout.xaxis2.side == "top"
    assert "k/n" in figure.layout.xaxis2.title.text
    # the bottom ticks are the scores at every 20% of rows (quantiles): the title says so
    assert figure.layout.xaxis.title.text == "score (a tick every 20% of rows)"
    assert figure.layout.xaxis.ticktext[-1] == f"{result.position[-1]:.3g}"


def test_cumulative_figure_order_by_variable(pred):
    result = cumulative_differences(pred, order_by="age")
    figure = cumulative_figure(result)
    assert figure.layout.xaxis.title.text == "age (a tick every 20% of rows)"
    assert "along age" in figure.layout.title.text
    assert figure.layout.xaxis.ticktext[0] == "18"


def test_presentation_is_bigger(pred):
    result = cumulative_differences(pred)
    small = cumulative_figure(result)
    big = cumulative_figure(result, presentation=True)
    assert big.layout.font.size > small.layout.font.size
    assert _traces(big)[0].line.width > _traces(small)[0].line.width


def test_deviation_figure_content(pred):
    index = np.flatnonzero(pred.covariates["age"].to_numpy() >= 60)
    result = subpopulation_deviation(pred, index, description="age ≥ 60")
    figure = deviation_figure(result)
    assert len(figure.data) == 3
    path, triangle = _traces(figure)
    assert len(path.y) <= MAX_POINTS
    assert max(path.y) - min(path.y) == result.kuiper
    assert triangle.y[1] == pytest.approx(2 * result.sigma)
    assert triangle.y[2] == pytest.approx(-2 * result.sigma)
    assert "age ≥ 60" in figure.layout.title.text
    assert f"D/σ = {result.kuiper_z:.3g}" in figure.layout.title.text
    assert "the group's rows" in figure.layout.xaxis.title.text  # the subpopulation's scores


def test_weighted_top_axis_ticks_follow_k_over_n():
    # Weights 1, 1, 1, 7 unweighted fractions 1/4, 2/4, ... sit at A_k = 0.1, 0.2, 0.3, 1.
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], weight=[1, 1, 1, 7])
    figure = cumulative_figure(cumulative_differences(pred))
    ticks = figure.layout.xaxis2
    # targets 0, 0.2, ..., 1 of k/n land (searchsorted) on k/n = 0, 1/4, 2/4, 3/4, 1, 1 at
    # A_k = 0, 0.1, 0.2, 0.3, 1, 1; the duplicate is merged and each tick reads its own k/n
    assert list(ticks.ticktext) == ["0", "0.25", "0.5", "0.75", "1"]
    np.testing.assert_allclose(ticks.tickvals, [0, 0.1, 0.2, 0.3, 1])
    assert "cumulative weight" in ticks.title.text


def test_figure_json_roundtrip(pred):
    figure = cumulative_figure(cumulative_differences(pred))
    assert pd.notna(figure.to_json())


def test_charts_state_which_sigma_they_use(pred):
    """Paper 000 Appendix C: σ for real-valued responses is chosen automatically and stated."""
    assert "non-binary" not in cumulative_figure(cumulative_differences(pred)).layout.title.text
    rng = np.random.default_rng(3)
    score = rng.random(400)
    real = Predictions.from_arrays(score, score + rng.normal(0, 0.1, 400), response="continuous")
    result = cumulative_differences(real)
    assert result.sigma_method == "adjacent"
    assert "σ for non-binary responses (paper 000 eq. (6))" in (
        cumulative_figure(result).layout.title.text
    )


def test_ticks_do_not_stack_on_a_long_tie_run():
    # 96 of 100 rows share the value 0: the path is evaluated at the run's last row, so the
    # abscissa jumps from 0 to 0.96 and the targets 0.2, ..., 0.8 all fall on that point, only
    # 0.04 from the end (closer than 0.07): the ticks left are the two ends, x = 0 and 1.
    rng = np.random.default_rng(0)
    values = np.r_[np.zeros(96), [1e5, 2e5, 3e5, 4e5]]
    frame = pd.DataFrame({"score": rng.uniform(0.1, 0.9, 100), "label": rng.integers(0, 2, 100),
                          "v": values})
    pred = load_predictions(frame, score="score", label="label")
    figure = cumulative_figure(cumulative_differences(pred, order_by="v"))
    for axis in (figure.layout.xaxis, figure.layout.xaxis2):
        gaps = np.diff(axis.tickvals)
        assert (gaps >= 0.07).all(), axis.tickvals
    assert list(figure.layout.xaxis.ticktext) == ["0", "400,000"]
    assert list(figure.layout.xaxis2.ticktext) == ["0", "1"]
