"""Reliability diagrams from sums per distinct score equal the diagrams of the rows.

Reference: :func:`mcviz.stats.binning.reliability_diagrams` on the rows (no bootstrap). The
sums per score are :func:`mcviz.stats.measures.runs.score_runs`' (what an engine's GROUP BY
returns): per bin the count, weight, effective size, mean score, mean response and interval
must agree to 1e-12, with long tie runs, weighted or not, equal-width and equal-count bins.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.stats.binning import reliability_diagrams, reliability_from_runs
from mcviz.stats.measures.runs import score_runs

FIELDS = ("count", "weight", "effective_size", "mean_score", "mean_response", "interval_low",
          "interval_high", "lower_edge", "upper_edge")


def _from_runs(pred, **options):
    runs = score_runs(pred)
    return reliability_from_runs(runs.score, runs.count, runs.weight, runs.positive,
                                 runs.square_weight, weighted=pred.weighted, **options)


@pytest.mark.parametrize("kind", ["equal_width", "equal_count"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_diagrams_from_runs_equal_the_rows(kind, weighted):
    rng = np.random.default_rng(4)
    n = 5_000
    score = np.round(rng.beta(2, 5, n), 2)  # long tie runs
    label = (rng.random(n) < np.clip(1.2 * score, 0, 1)).astype(float)
    pred = Predictions.from_arrays(score, label, rng.uniform(0.2, 3, n) if weighted else None)
    expected = reliability_diagrams(pred, n_bins=(10, 20, 50), kind=kind, n_bootstrap=0)
    got = _from_runs(pred, n_bins=(10, 20, 50), kind=kind)
    assert got.weighted == expected.weighted and got.n_bins == expected.n_bins
    np.testing.assert_allclose(got.histogram_full, expected.histogram_full, rtol=1e-12)
    for a, b in zip(got.full, expected.full, strict=True):
        assert a.n == b.n and a.weight_total == pytest.approx(b.weight_total, rel=1e-12)
        for field in FIELDS:
            np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12,
                                       atol=1e-15, equal_nan=True, err_msg=field)


def test_similar_ratio_bins_need_the_rows():
    pred = Predictions.from_arrays([0.1, 0.4, 0.7], [0, 1, 1])
    with pytest.raises(ValidationError, match="equal_width"):
        _from_runs(pred, kind="similar_ratio")
