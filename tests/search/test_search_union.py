"""A union's second arm is chosen outside the first arm's rows (issue #42).

Two arms of one error: ``kind in {k1, k4}`` (40% of the rows) OR ``0.6 <= u < 0.8``. On all
the rows, the first arm's rows beyond 0.8 carry the error too, so a band re-chosen there is
pulled past 0.8 (and then lies mostly in the first arm's deviation: the arm is never
reported). Re-chosen outside the better finding's rows, its ends are the planted 0.6 and 0.8.
The beam's pool is set by hand (the first arm, then the band too wide) so that only the
finishing step is tested; with the old rule (every finding refined on all the search rows)
the band is reported in none of these seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcviz import Predictions
from mcviz.search import _beam, _confirm, _find
from mcviz.search._columns import Cut


def _union(seed: int, n: int = 20_000) -> Predictions:
    rng = np.random.default_rng(seed)
    kind, u = rng.integers(0, 5, n), rng.uniform(size=n)
    score = rng.uniform(0.2, 0.6, n)
    arms = np.isin(kind, [1, 4]) | ((u >= 0.6) & (u < 0.8))
    label = rng.random(n) < score + 0.15 * arms
    return Predictions.from_arrays(score, label, covariates={
        "kind": [f"k{k}" for k in kind], "u": u})


def _beam_over(pred: Predictions) -> tuple[_beam.Beam, dict[str, int]]:
    """The search's beam (its own split and data), nothing searched yet."""
    search, held, rank = _confirm.split_rows(pred, 0.3, np.random.default_rng(0),
                                             max_search=10**6)
    columns, _ = _find._columns(pred, ["kind", "u"], search, held)
    data = _find._data(pred, (rank % 2).astype(bool), (search, held))
    return _beam.Beam(data, columns, search, 20, None), {c.name: j for j, c in enumerate(columns)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_second_arm_of_a_union_keeps_its_own_band_ends(seed):
    beam, index = _beam_over(_union(seed))
    code = beam.columns[index["kind"]].levels.index
    first = (Cut(index["kind"], "in", levels=(code("k1"), code("k4"))),)
    too_wide = (Cut(index["u"], "band", lo=0.6, hi=0.95),)
    scores = beam.scores([first, too_wide])
    assert scores[0, 0] > scores[1, 0] > 10  # the first arm first; the band strong
    beam.pool = {frozenset(c.key() for c in cuts): _beam.Node(cuts, float(z), float(mean), 0)
                 for cuts, (z, _, _, mean) in zip((first, too_wide), scores, strict=True)}
    found = [node.cuts for node, _ in beam.findings(2)]
    assert first in found
    bands = [cuts for cuts in found if cuts[0].column == index["u"]]
    assert len(bands) == 1
    assert len(bands[0]) == 1
    band = bands[0][0]
    assert band.op == "band"
    assert abs(band.lo - 0.6) < 0.01
    assert abs(band.hi - 0.8) < 0.01
