"""The LCS from runs, its density binned piece by piece, equals the rows' LCS in memory.

Reference: :func:`mcviz.stats.smoothing.local_calibration_score` on the rows themselves (the
paper's eq. (6) with R's reflected ``density()``, every row binned at once). The runs are the
rows' sums per distinct score (:func:`mcviz.stats.measures.runs.score_runs`, what an engine's
``GROUP BY`` returns); :func:`~mcviz.stats.smoothing.lcs_runs.lcs_from_runs` bins the density
:data:`~mcviz.stats.smoothing.lcs_runs.DENSITY_PIECE` runs at a time. Set small here, the
density's 512 cells hold many more runs than a piece, so cells are cut between pieces and
summed piece by piece: every number still equals the rows' to 1e-9 (the tolerance of
``tests/engines/test_review_runs_engines.py``). 30,000 rows: well under a second each.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz.io import Predictions
from mcviz.stats.measures.runs import score_runs
from mcviz.stats.smoothing import lcs_runs, local_calibration_score

CURVE = ("grid", "fit", "lower", "upper", "weights", "count", "events", "density_y")


@pytest.mark.parametrize("piece", [3, 37, 4_096, None], ids=["3", "37", "4096", "default"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
def test_lcs_from_runs_binned_in_pieces_equals_the_rows(monkeypatch, piece, weighted, ties):
    rng = np.random.default_rng(44)
    n = 30_000
    score = rng.beta(0.6, 0.6, n)  # mass near 0 and 1: the reflected copies are binned too
    if ties:
        score = np.round(score, 3)
    label = (rng.random(n) < np.clip(score + 0.1 * (score < 0.3), 0, 1)).astype(float)
    weight = rng.uniform(0.3, 2.5, n) if weighted else None
    pred = (Predictions.from_arrays(score, label, weight) if weighted
            else Predictions.from_arrays(score, label))
    runs = score_runs(pred)
    if piece is not None:
        monkeypatch.setattr(lcs_runs, "DENSITY_PIECE", piece)
    got, bound = lcs_runs.lcs_from_runs(runs.score, runs.count, runs.weight, runs.positive,
                                        weighted=weighted)
    want = local_calibration_score(pred.score, pred.label, pred.weight if weighted else None)
    assert bound is None
    assert runs.score.size > (20 if ties else 20_000)
    assert got.k == want.k
    assert got.n == want.n == n
    for name in CURVE:
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-9,
                                   atol=1e-9, err_msg=name)
    for name in ("lcs", "bandwidth", "boundary_below", "boundary_above"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-9, abs=1e-12)
    np.testing.assert_array_equal(got.boundary, want.boundary)
