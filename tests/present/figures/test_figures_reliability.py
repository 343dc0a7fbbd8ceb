"""Figure content of the reliability diagrams and the metrics table (not pixels)."""

import numpy as np
import pytest

from mcviz.stats.binning import calibration_metrics, reliability_diagrams
from mcviz.present.figures._style import BLACK, GRAY, LIGHT_GRAY
from mcviz.present.figures.reliability import metrics_table_figure, reliability_figure
from mcviz.io import Predictions


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(4)
    n = 5000
    score = rng.beta(2, 5, n)  # few scores near 1: some equal-width bins stay empty
    return Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   weight=rng.random(n) + 0.5)


def _by_name(figure, name):
    return [t for t in figure.data if t.name == name]


def test_full_population_figure(pred):
    result = reliability_diagrams(pred, n_bins=(10, 20, 50), n_bootstrap=20)
    figure = reliability_figure(result)
    # Per column: diagonal, bootstrap, points, histogram.
    assert len(figure.data) == 3 * 4
    points = _by_name(figure, "full population")
    points = [t for t in points if t.type == "scatter"]
    assert len(points) == 3
    for trace, diagram in zip(points, result.full, strict=True):
        keep = diagram.count > 0
        assert len(trace.x) == keep.sum()  # empty bins never drawn
        assert not np.any(np.isnan(np.asarray(trace.y, dtype=float)))
        np.testing.assert_allclose(trace.y, diagram.mean_response[keep])
        np.testing.assert_allclose(
            np.asarray(trace.y) + np.asarray(trace.error_y.array), diagram.interval_high[keep]
        )
        # Hover: count and total weight per bin.
        np.testing.assert_array_equal(trace.customdata[:, 4], diagram.count[keep])
        np.testing.assert_allclose(trace.customdata[:, 5], diagram.weight[keep])
        assert "count" in trace.hovertemplate
        assert "total weight" in trace.hovertemplate
        assert "bin (%{customdata[0]" in trace.hovertemplate  # equal width: (B_{k-1}, B_k]
        assert trace.marker.color == BLACK
    assert any((d.count == 0).any() for d in result.full)  # the fixture has empty bins
    boot = [t for t in figure.data if t.legendgroup == "bootstrap"]
    assert len(boot) == 3
    assert boot[0].line.color == LIGHT_GRAY
    # 20 replicates separated by gaps.
    assert sum(v is None for v in boot[0].x) == 20
    bars = [t for t in figure.data if t.type == "bar"]
    assert len(bars) == 3
    np.testing.assert_allclose(bars[0].y, result.histogram_full)
    assert "Reliability diagram" in figure.layout.title.text
    assert [a.text for a in figure.layout.annotations][:3] == ["10 bins", "20 bins", "50 bins"]
    assert sum(len(t.x) for t in figure.data if t.x is not None) < 10_000


def test_subpopulation_in_black_full_in_gray(pred):
    index = np.arange(0, pred.n, 3)
    result = reliability_diagrams(pred, n_bins=(10, 20), index=index, description="every third",
                                  kind="equal_count", n_bootstrap=0)
    figure = reliability_figure(result)
    # Per column: diagonal, full points, subpopulation points, two histograms (no bootstrap).
    assert len(figure.data) == 2 * 5
    sub = [t for t in _by_name(figure, "every third") if t.type == "scatter"]
    full = [t for t in _by_name(figure, "full population") if t.type == "scatter"]
    assert len(sub) == len(full) == 2
    assert sub[0].marker.color == BLACK
    assert full[0].marker.color == GRAY
    np.testing.assert_allclose(sub[1].x, result.subpopulation[1].mean_score)
    long = reliability_figure(reliability_diagrams(
        pred, n_bins=(10,), index=index, description="x" * 80, kind="equal_count",
        n_bootstrap=0))  # a long name took a legend row of its own (#40): "subpopulation"
    names = {t.name for t in long.data if t.showlegend is not False}
    assert "subpopulation" in names and "x" * 80 not in names
    assert any(t.meta == "x" * 80 for t in long.data)  # the hover still names it
    # Equal-count bins carry the smallest and largest score in the bin (both included), not
    # nominal right-closed edges.
    assert "scores %{customdata[0]" in sub[0].hovertemplate
    np.testing.assert_allclose(sub[0].customdata[:, 0], result.subpopulation[0].lower_edge)
    np.testing.assert_allclose(sub[0].customdata[:, 1], result.subpopulation[0].upper_edge)
    assert "Reliability diagram (equal number" in figure.layout.title.text


def test_bootstrap_can_be_hidden(pred):
    result = reliability_diagrams(pred, n_bins=(10,), n_bootstrap=5)
    assert len(reliability_figure(result, show_bootstrap=False).data) == 3
    assert len(reliability_figure(result).data) == 4


def test_presentation_fonts(pred):
    result = reliability_diagrams(pred, n_bins=(10,), n_bootstrap=0)
    assert (reliability_figure(result, presentation=True).layout.font.size
            > reliability_figure(result).layout.font.size)


def test_metrics_table_figure(pred):
    metrics = calibration_metrics(pred)
    figure = metrics_table_figure(metrics)
    assert len(figure.data) == 1
    table = figure.data[0]
    assert table.type == "table"
    names, values, _ = table.cells.values
    assert list(names) == metrics.to_frame()["metric"].tolist()
    assert values[0] == f"{metrics.ece_equal_width:.4g}"
    assert "weighted" in figure.layout.title.text


def test_real_valued_responses_are_not_cut_at_one():
    rng = np.random.default_rng(6)
    score = rng.random(2000)
    real = Predictions.from_arrays(score, 2.0 * score, response="continuous")  # up to 2
    figure = reliability_figure(reliability_diagrams(real, n_bins=(10,), n_bootstrap=0))
    assert figure.layout.yaxis.range is None  # autorange: the points near 2 stay visible
    binary = reliability_figure(reliability_diagrams(
        Predictions.from_arrays(score, (rng.random(2000) < score).astype(int)), n_bins=(10,),
        n_bootstrap=0))
    assert tuple(binary.layout.yaxis.range) == (-0.02, 1.02)
