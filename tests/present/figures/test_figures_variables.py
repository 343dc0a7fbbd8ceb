"""Figures of variable-based calibration and of the LCS (mcviz/present/figures/variables.py, lcs.py)."""

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from mcviz import Predictions
from mcviz.present.figures import (
    MAX_POINTS,
    categorical_levels_figure,
    gap_figure,
    lcs_figure,
    variable_curves_figure,
)
from mcviz.present.figures.variables import rank_scale
from mcviz.stats.smoothing import local_calibration_score
from mcviz.stats.variables import level_calibration, variable_calibration


@pytest.fixture(scope="module")
def pred():
    rng = np.random.default_rng(0)
    n = 3000
    score = rng.random(n)
    label = (rng.random(n) < score).astype(int)
    return Predictions.from_arrays(
        score, label,
        covariates={"age": rng.integers(18, 90, n), "group": rng.choice(list("xyz"), n)},
    )


def points(figure: go.Figure) -> int:
    return sum(len(trace.x) for trace in figure.data if trace.x is not None)


def test_variable_curves_are_drawn_in_percent(pred):
    result = variable_calibration(pred, "age")
    figure = variable_curves_figure(result)
    lines = [t for t in figure.data if isinstance(t, go.Scatter) and t.mode == "lines"]
    assert [t.name for t in lines] == ["error rate", "predicted error"]
    assert not result.error.thin.any()  # 72 ages, none sparse: the whole curve is drawn
    np.testing.assert_allclose(lines[0].y, 100 * result.error.fit)
    np.testing.assert_allclose(lines[1].y, 100 * result.predicted.fit)
    bands = [t for t in figure.data if getattr(t, "fill", None) == "toself"]
    assert len(bands) == 2
    np.testing.assert_allclose(bands[0].y[: result.error.x.size], 100 * result.error.upper)
    assert any(isinstance(t, go.Bar) for t in figure.data)  # rows along V
    assert f"VECE {100 * result.vece:.2f}%" in figure.layout.title.text
    assert points(figure) <= MAX_POINTS


def test_gap_figure_marks_vce(pred):
    result = variable_calibration(pred, "age")
    figure = gap_figure(result, presentation=True)
    marker = next(t for t in figure.data if t.name == "VCE(v*)")
    assert marker.x[0] == result.vce_at
    assert abs(marker.y[0]) == pytest.approx(100 * result.vce)
    line = next(t for t in figure.data if t.name == "error − predicted error")
    np.testing.assert_allclose(line.y, 100 * result.gap.fit)
    assert figure.layout.font.size == 22
    assert points(figure) <= MAX_POINTS


def test_categorical_levels_bars_with_intervals(pred):
    result = level_calibration(pred, "group")
    figure = categorical_levels_figure(result)
    bars = [t for t in figure.data if isinstance(t, go.Bar)]
    assert [b.name for b in bars] == ["error rate", "predicted error"]
    order = np.argsort(-result.count, kind="stable")
    np.testing.assert_allclose(bars[0].y, 100 * result.error[order])
    np.testing.assert_allclose(bars[0].error_y.array,
                               100 * (result.error_upper - result.error)[order])
    assert f"at {result.vce_at}" in figure.layout.title.text


def test_categorical_levels_caps_the_number_of_levels():
    rng = np.random.default_rng(1)
    n = 2000
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n),
                                   covariates={"g": rng.integers(0, 60, n).astype(str)})
    figure = categorical_levels_figure(level_calibration(pred, "g"), max_levels=10)
    assert len(figure.data[0].x) == 10
    assert "10 of 60 levels shown" in figure.layout.title.text


def test_lcs_figure(pred):
    result = local_calibration_score(pred.score, pred.label)
    figure = lcs_figure(result)
    curve = next(t for t in figure.data if t.name and t.name.startswith("observed rate, local"))
    np.testing.assert_allclose(curve.y, result.fit)
    diagonal = next(t for t in figure.data if t.name == "perfect calibration")
    assert list(diagonal.x) == [0, 1]
    assert list(diagonal.y) == [0, 1]
    density = next(t for t in figure.data if t.name == "density of scores")
    assert density.yaxis == "y2"
    assert f"LCS {result.lcs:.3g}" in figure.layout.title.text
    assert points(figure) <= MAX_POINTS


def test_thin_support_spikes_and_clipping_are_drawn():
    # 85% zeros (a spike drawn as a marker with its interval) and a log-normal tail (thin
    # support: dotted, shaded, out of the solid line).
    rng = np.random.default_rng(2)
    n = 20_000
    wage = np.where(rng.random(n) < 0.85, 0.0, rng.lognormal(3.0, 0.8, n))
    score = rng.random(n)
    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   covariates={"wage": wage})
    result = variable_calibration(pred, "wage")
    for figure in (variable_curves_figure(result), gap_figure(result)):
        name = "error rate" if "Error" in figure.layout.title.text else "error − predicted error"
        curve = result.error if name == "error rate" else result.gap
        smooth = ~curve.spike
        solid = next(t for t in figure.data if t.name == name)
        thin = curve.thin[smooth]
        assert thin.any()
        assert np.isnan(np.asarray(solid.y, dtype=float)[thin]).all()
        np.testing.assert_allclose(np.asarray(solid.y, dtype=float)[~thin],
                                   100 * curve.fit[smooth][~thin])
        dotted = next(t for t in figure.data if t.name == f"{name} (thin support)")
        assert dotted.line.dash == "dot"
        spike = next(t for t in figure.data if t.name and t.name.startswith(f"{name} (own rows"))
        scale = rank_scale(result)  # a long tail: V drawn at its ranks, the spike left of 0
        assert list(spike.x) == [-0.08] and list(spike.customdata) == [0.0]
        assert spike.y[0] == pytest.approx(100 * curve.fit[curve.spike][0])
        shaded = [shape for shape in figure.layout.shapes if shape.type == "rect"]
        assert shaded
        assert shaded[-1].x1 == pytest.approx(scale(curve.x[smooth][-1:])[0])
        # named in the legend, not written on the shading (where it ran over the legend)
        assert any(t.name == "grey: thin support" for t in figure.data)
        assert not any(a.text == "thin support" for a in figure.layout.annotations)
        assert points(figure) <= MAX_POINTS


def test_lcs_figure_shades_where_the_window_reaches_the_end(pred):
    result = local_calibration_score(pred.score, pred.label)
    figure = lcs_figure(result)
    rects = [shape for shape in figure.layout.shapes if shape.type == "rect"]
    assert len(rects) == 2
    assert rects[0].x0 == result.grid[0]
    assert rects[0].x1 == pytest.approx(result.boundary_below)
    assert rects[1].x0 == pytest.approx(result.boundary_above)
    assert rects[1].x1 == result.grid[-1]
    assert "flattening at the range ends is not over-prediction" in figure.layout.title.text


def test_levels_without_enough_rows_are_lighter():
    rng = np.random.default_rng(3)
    level = np.repeat(["big", "small"], [2000, 10])
    score = rng.random(level.size)
    pred = Predictions.from_arrays(score, (rng.random(level.size) < score).astype(int),
                                   covariates={"g": level})
    result = level_calibration(pred, "g")
    figure = categorical_levels_figure(result)
    assert list(figure.data[0].marker.opacity) == [1.0, 0.4]
    assert "too few rows" in figure.layout.title.text


def test_v_star_on_a_date_axis_is_written_at_the_day():
    """#40: VCE(v*) on a datetime variable reads "at when = 2024-03-01", never nanoseconds."""
    import pandas as pd

    from mcviz import load_predictions
    from mcviz.present.figures import variable_curves_figure
    from mcviz.stats.variable_curves import variable_calibration

    rng = np.random.default_rng(5)
    n = 6_000
    day = rng.integers(0, 120, n)
    score = rng.uniform(0.1, 0.9, n)
    label = rng.random(n) < np.clip(score + 0.2 * (day > 80), 0, 1)
    frame = pd.DataFrame({"s": score, "y": label.astype(int),
                          "when": pd.Timestamp("2024-01-01 00:00:00.123456789")
                          + pd.to_timedelta(day * 86_400 + rng.integers(0, 86_400, n),
                                            unit="s")})
    pred = load_predictions(frame, score="s", label="y", covariates=["when"])
    title = variable_curves_figure(variable_calibration(pred, variable="when")).layout.title.text
    said = re.search(r"at when = (.+?)(?: ·|<|$)", title)
    assert said, title
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", said.group(1)), title


def _drawn_outside(figure: go.Figure) -> list[str]:
    """Points of scatter traces (curves, bands, markers) outside the axes' ranges."""
    x_range, y_range = figure.layout.xaxis.range, figure.layout.yaxis.range
    outside = []
    for trace in figure.data:
        if trace.type != "scatter" or trace.x is None or trace.yaxis not in (None, "y"):
            continue
        x = np.asarray([np.nan if v is None else v for v in trace.x], dtype=float)
        y = np.asarray([np.nan if v is None else v for v in trace.y], dtype=float)
        drawn = np.isfinite(x) & np.isfinite(y)
        if not (x_range[0] <= x[drawn]).all() or not (x[drawn] <= x_range[1]).all():
            outside.append(f"{trace.name}: x")
        if not (y_range[0] <= y[drawn]).all() or not (y[drawn] <= y_range[1]).all():
            outside.append(f"{trace.name}: y")
    return outside


def test_a_long_tail_is_drawn_at_its_ranks_and_every_drawn_point_is_inside_the_axes():
    # capital_gain's shape (#40): 85% zeros, a long log-normal tail whose thin stretches took
    # most of a linear axis, and curves that left the y axis there
    rng = np.random.default_rng(5)
    n = 6000
    gain = np.where(rng.random(n) < 0.85, 0.0, rng.lognormal(8.0, 1.5, n))
    score = rng.uniform(0.05, 0.95, n)
    truth = np.where(gain > 20_000, 0.9, score)  # wrong in the tail
    pred = Predictions.from_arrays(score, (rng.random(n) < truth).astype(int),
                                   covariates={"gain": gain, "age": rng.integers(18, 90, n)})
    result = variable_calibration(pred, "gain")
    assert result.gap.thin.any()
    positive = np.sort(gain[gain > 0])
    for figure in (variable_curves_figure(result), gap_figure(result)):
        axis = figure.layout.xaxis
        assert axis.title.text.startswith("gain (spaced by rank: a tick every 20% of the rows")
        assert figure.layout.yaxis.range is not None
        assert not _drawn_outside(figure), _drawn_outside(figure)
        labels = {round(v, 6): t for v, t in zip(axis.tickvals, axis.ticktext, strict=True)}
        assert labels[-0.08] == "0"  # the spike, left of the ranks
        inside = sorted(rank for rank in labels if 0 <= rank <= 1)
        assert len(inside) == 6  # ticks: V near every 20% of the positive rows, data values
        for target, rank in zip(np.linspace(0, 1, 6), inside, strict=True):
            value = float(labels[rank].replace(",", ""))
            assert rank == pytest.approx(target, abs=0.011)
            assert np.mean(positive <= value) == pytest.approx(rank, abs=0.02)
        line = next(t for t in figure.data if t.name in ("error rate", "error − predicted error"))
        assert np.array_equal(np.asarray(line.customdata), result.gap.x[~result.gap.spike])
        assert "%{customdata" in line.hovertemplate  # hover says V's value, not its rank
    plain = variable_curves_figure(variable_calibration(pred, "age"))
    assert plain.layout.xaxis.title.text == "age"  # spread evenly: a linear axis
