"""The streamed pooled floor equals the in-memory one (mcviz.core.sigma.pooled_response_variance)."""

import numpy as np
import pytest

from mcviz.core.pooled_stream import StreamedFloor
from mcviz.core.sigma import pooled_response_variance


def _rows(n, seed, *, ties, weighted, zero_inflated):
    rng = np.random.default_rng(seed)
    score = np.sort(rng.integers(0, n // 4, n) / (n // 4) if ties else rng.random(n))
    label = rng.normal(score, 0.3)
    if zero_inflated:  # long stretches of one value: blocks with few informative rows join
        label[(score < 0.55) | (rng.random(n) < 0.9)] = 0.0
    weight = rng.gamma(2.0, 1.0, n) if weighted else np.ones(n)
    members = [rng.random(n) < 0.3, score > 0.8, (score > 0.2) & (score < 0.4), np.zeros(n, bool)]
    return score, label, weight, members


def _streamed(score, label, weight, members, seed):
    n = score.size
    ends = np.append(score[1:] != score[:-1], True)
    floor = StreamedFloor(n, len(members))
    rng = np.random.default_rng(seed)
    start = 0
    run_ends = np.flatnonzero(ends)
    while start < n:  # batches of random lengths, each cut at a tie-run end
        want = start + int(rng.integers(1, max(2, n // 7)))
        stop = int(run_ends[min(np.searchsorted(run_ends, want - 1), run_ends.size - 1)]) + 1
        part = slice(start, stop)
        floor.add(label[part] - score[part], label[part], weight[part], ends[part],
                  [m[part] for m in members])
        start = stop
    return floor.finish()


@pytest.mark.parametrize("n", [450, 5_000, 30_301])
@pytest.mark.parametrize("ties,weighted,zero_inflated", [
    (False, False, False), (True, True, False), (True, False, True), (False, True, True)])
def test_streamed_floor_equals_the_in_memory_floor(n, ties, weighted, zero_inflated):
    score, label, weight, members = _rows(n, n + 7 * ties, ties=ties, weighted=weighted,
                                          zero_inflated=zero_inflated)
    v = pooled_response_variance(score, label, weight if weighted else None)
    expected = np.array([np.sum(weight[m] ** 2 * v[m]) for m in members])
    got = _streamed(score, label, weight, members, seed=n)
    assert np.allclose(got, expected, rtol=1e-12, atol=0.0)
    assert expected[:3].min() > 0  # not vacuous


def test_thin_blocks_join_and_a_short_last_block_joins_the_one_before():
    # 100 blocks of 250 rows (25,099 rows: a 99-row last block, shorter than 125, joins the
    # one before); responses constant below 0.6: those blocks have no informative rows
    rng = np.random.default_rng(3)
    n = 25_099
    score = np.sort(rng.random(n))
    label = np.where(score < 0.6, 0.0, rng.normal(score, 0.2))
    members = [np.ones(n, bool), score > 0.5]
    v = pooled_response_variance(score, label)
    expected = np.array([v[m].sum() for m in members])
    assert np.allclose(_streamed(score, label, np.ones(n), members, 1), expected, rtol=1e-12)
    # the joins matter: 250-row blocks alone (no join) give another floor
    d = label - score
    alone = np.concatenate([np.full(len(b), b.var(ddof=1)) for b in np.split(d, range(250, n, 250))])
    assert abs(alone.sum() - expected[0]) > 1e-3 * expected[0]
