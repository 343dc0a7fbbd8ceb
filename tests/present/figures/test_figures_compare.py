"""The comparison's figures draw the PairedPath they are given and escape user text."""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.compare import paired_cumulative_differences
from mcviz.present.figures import paired_cumulative_figure, paired_residuals_figure


@pytest.fixture(scope="module")
def path():
    rng = np.random.default_rng(2)
    a = rng.uniform(0.1, 0.9, 3000)
    label = (rng.random(3000) < a).astype(float)
    b = np.clip(a + 0.1 * (a > 0.6), 0, 1)
    return paired_cumulative_differences(a, b, label, order_values=a,
                                         order_by="<b>age</b> & co")


def test_the_loss_path_and_its_triangle_are_the_results(path):
    figure = paired_cumulative_figure(path)
    line, triangle = figure.data[0], figure.data[1]
    np.testing.assert_array_equal(line.y, path.path[path.plot_index])
    assert max(triangle.y) == pytest.approx(2 * path.sigma)
    assert f"{path.n:,}" in figure.layout.title.text
    assert "<b>age" not in figure.layout.xaxis.title.text  # escaped, not rendered
    assert "&lt;b&gt;age" in figure.layout.xaxis.title.text


def test_the_residual_paths_are_each_models(path):
    figure = paired_residuals_figure(path)
    np.testing.assert_array_equal(figure.data[0].y, path.path_a[path.plot_index])
    np.testing.assert_array_equal(figure.data[1].y, path.path_b[path.plot_index])
