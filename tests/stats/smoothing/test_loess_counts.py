"""The LOESS fit from sums per distinct value (an engine's GROUP BY) equals the fit on the rows.

Reference: :func:`mcviz.stats.smoothing.loess_curve` on the rows themselves. The designs cover
the direct path (at most 2,048 distinct values: bins are the values) and the Taylor-binned path
(more), weighted and not, with ties of every length; the fit must agree to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.errors import ValidationError
from mcviz.stats.smoothing import loess_curve, loess_fit_from_counts


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize(("n", "levels"), [(3_000, 40), (20_000, 1_500), (40_000, 8_000)])
def test_fit_from_counts_equals_the_fit_on_the_rows(n, levels, weighted):
    rng = np.random.default_rng(levels)
    x = np.round(rng.beta(2, 5, n) * levels) / levels
    y = (rng.random(n) < x**0.8).astype(float)
    w = rng.exponential(size=n) if weighted else None
    at = np.linspace(x.min(), x.max(), 150)
    expected = loess_curve(x, y, w, span=0.75, degree=2, at=at).fit
    values, slot, counts = np.unique(x, return_inverse=True, return_counts=True)
    weight = np.bincount(slot, weights=np.ones(n) if w is None else w)
    mean = np.bincount(slot, weights=y if w is None else w * y) / weight
    got = loess_fit_from_counts(values, counts, weight, mean, at, span=0.75)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # the span counts rows, not values: one value per row would be another curve
    ones = loess_fit_from_counts(values, np.ones_like(counts), weight, mean, at, span=0.75)
    assert np.abs(ones - expected).max() > 1e-4


def test_bad_counts_are_refused():
    with pytest.raises(ValidationError, match="ascending"):
        loess_fit_from_counts(np.array([1.0, 0.0]), np.array([1, 1]), np.ones(2), np.ones(2),
                              np.array([0.5]), span=0.9)
    with pytest.raises(ValidationError, match="positive"):
        loess_fit_from_counts(np.array([0.0, 1.0]), np.array([1, 0]), np.ones(2), np.ones(2),
                              np.array([0.5]), span=0.9)
