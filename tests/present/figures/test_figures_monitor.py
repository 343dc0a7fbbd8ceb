"""Monitor figures draw the result: cells, alarm marks and the path, nothing recomputed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcviz import Predictions
from mcviz.monitor import MonitorSettings, monitor_calibration
from mcviz.present.figures import monitor_heatmap_figure, monitor_series_figure


@pytest.fixture(scope="module")
def result(drifting):
    pred = drifting(6000, 0, days=120, start=70, groups=("a", "<b>"), scores=(0.1, 0.9))
    return monitor_calibration(pred,
                               settings=MonitorSettings(period="week", segments=["g"], draws=99))


def test_heatmap_cells_and_alarm_marks(result):
    figure = monitor_heatmap_figure(result)
    heat, _later, first, cells = figure.data
    assert np.array_equal(np.asarray(heat.z), np.clip(np.vstack([s.z for s in result.series]),
                                                      -4, 4))
    assert list(heat.x) == list(result.periods.labels)
    alarmed = [s for s in result.series if s.alarm]
    assert len(first.x) == len(alarmed) >= 1
    assert [result.periods.labels.index(x) for x in first.x] == [s.first_alarm for s in alarmed]
    assert len(cells.customdata) == len(result.series) * result.periods.n_periods
    assert "&lt;b&gt;" in " ".join(heat.y)  # a category value is text, not markup


def test_heatmap_rows_and_series_titles_name_segments_in_words(result):
    from mcviz.subpopulations.words import FILTER_OPERATORS

    rows = [label.replace("&lt;", "").replace("&gt;", "") for label in
            monitor_heatmap_figure(result).data[0].y]  # the level "<b>" is data, not an operator
    assert any(row.endswith("g is a") for row in rows), rows
    assert not [row for row in rows if any(op in row for op in FILTER_OPERATORS)], rows
    assert any("==" in s.description for s in result.series)  # links keep the filter
    title = monitor_series_figure(result, 2).layout.title.text
    assert title.startswith(f"{result.series[2].words}: "), title


def test_series_figure_draws_the_path_and_the_triangle(result):
    series = result.series[2]
    figure = monitor_series_figure(result, 2)
    path = next(t for t in figure.data if t.name == "cumulative difference")
    assert np.array_equal(np.asarray(path.y), series.path)
    triangle = next(t for t in figure.data if t.name.startswith("±2σ"))
    assert max(triangle.y) == pytest.approx(2 * series.sigma)
    response = next(t for t in figure.data if t.name == "mean response")
    np.testing.assert_array_equal(np.asarray(response.y, dtype=float), series.mean_response)


def test_heatmap_rows_leave_room_for_every_label():
    # 20 series in presentation fonts: each row at least 1.3 tick fonts high, else plotly drops
    # every other series name (seen at 1920x1080 on the flights demo)
    from mcviz.present.figures._style import tick_size

    rng = np.random.default_rng(1)
    n = 8000
    pred = Predictions.from_arrays(
        rng.uniform(0.1, 0.9, n), rng.random(n) < 0.5, covariates={
            "when": pd.Timestamp("2026-01-05") + pd.to_timedelta(rng.integers(0, 90, n), "D"),
            "g": rng.choice([f"level {i}" for i in range(19)], n)})
    watched = monitor_calibration(pred,
                                  settings=MonitorSettings(period="week", segments=["g"], draws=19))
    for presentation in (False, True):
        layout = monitor_heatmap_figure(watched, presentation=presentation).layout
        plot = layout.height - layout.margin.t - layout.margin.b
        assert plot / len(watched.series) >= 1.3 * tick_size(presentation), presentation
