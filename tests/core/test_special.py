"""mcviz.core.special against SciPy (the reference it replaces on the metrics path)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from mcviz.core import special as ours


def test_ndtr_and_ndtri_equal_scipy():
    x = np.concatenate([np.linspace(-38, 38, 2001), [0.0, -1e-300, 1e-12, 8.3, -8.3]])
    # SciPy flushes values below 1e-300 to 0; far in the tail its erfc is ~5e-14 off
    np.testing.assert_allclose(ours.ndtr(x), special.ndtr(x), rtol=1e-13, atol=1e-300)
    p = np.concatenate([np.logspace(-300, -1, 400), np.linspace(0.01, 0.99, 999),
                        1 - np.logspace(-16, -1, 200)])
    np.testing.assert_allclose(ours.ndtri(p), special.ndtri(p), rtol=2e-14, atol=1e-300)
    assert ours.ndtri(0.0) == -np.inf
    assert ours.ndtri(1.0) == np.inf
    assert np.isnan(ours.ndtri(np.nan))
    assert np.isnan(ours.ndtri(1.5))
    assert isinstance(ours.ndtr(0.3), float)
    assert ours.ndtr(np.array([0.3])).shape == (1,)


def test_expit_and_xlogy_equal_scipy():
    x = np.concatenate([np.linspace(-800, 800, 4001), [0.0, -0.0, 1e-20, -745.2, 36.8]])
    np.testing.assert_allclose(ours.expit(x), special.expit(x), rtol=1e-15, atol=1e-300)
    buffer = x.copy()
    assert ours.expit(buffer, out=buffer) is buffer  # in place, as the logistic fits use it
    np.testing.assert_array_equal(buffer, ours.expit(x))
    a = np.array([0.0, 0.0, 1.0, 2.5, 3.0, 1e-300])
    b = np.array([0.0, 2.0, 0.5, 1e-300, 7.0, 0.3])
    np.testing.assert_allclose(ours.xlogy(a, b), special.xlogy(a, b), rtol=1e-15)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 8, 9, 17, 40, 101])
def test_chi2_sf_equals_scipy(df):
    for x in [1e-8, 0.01, 0.5, 1.0, df / 2, df, 2.0 * df, 5.0 * df + 30, 400.0, 1500.0]:
        assert ours.chi2_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-12,
                                                    abs=1e-300), x
    assert ours.chi2_sf(0.0, df) == 1.0
    assert ours.chi2_sf(np.inf, df) == 0.0
    assert np.isnan(ours.chi2_sf(np.nan, df))
