"""The Spark engine's executor and driver steps without Spark: Arrow batches of one partition
in, one ℓ-wide summary row out, combined in score order (compared with the numpy engine)."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from test_engines import assert_same

from mcviz.engines import NumpyEngine
from mcviz.engines.base import as_specs
from mcviz.engines.spark_engine import (
    _summarise_partition,
    check_partitions,
    pack_summaries,
    unpack_summaries,
)
from mcviz.engines.sql import R, S, W, covariate_aliases
from mcviz.subpopulations import Condition


class _Broadcast:  # what the executors read: .value
    def __init__(self, value):
        self.value = value


def _arrow_batches(pred, columns, start, stop, size):
    frame = pred.covariates.iloc[start:stop].reset_index(drop=True)
    aliases = covariate_aliases(columns)
    table = pa.table({S: pred.score[start:stop], R: pred.label[start:stop],
                      W: pred.weight[start:stop],
                      **{aliases[c]: pa.array(frame[c].astype(object).where(frame[c].notna(), None)
                                              .tolist()) for c in columns}})
    return table.to_batches(max_chunksize=size)


def test_partitions_cut_at_score_changes_combine_to_the_exact_result():
    from mcviz.core.evaluator import combine_all, finish
    from mcviz.engines.base import assemble_result
    from mcviz.io import Predictions

    rng = np.random.default_rng(1)
    n = 2000
    score = rng.integers(0, 7, n) / 6  # seven tie runs
    covariates = {"x": rng.normal(size=n), "g": rng.choice(["a", "b", "c"], n)}
    import pandas as pd

    pred = Predictions.from_arrays(score, (rng.random(n) < score).astype(int),
                                   rng.random(n) + 0.5, covariates=pd.DataFrame(covariates))
    specs = as_specs([[], [Condition("x", "<", 0.3)], [Condition("g", "in", ("a", "c"))],
                      [Condition("x", ">=", -0.5), Condition("g", "!=", "b")]])
    # partitions: whole tie runs [0, 3), [3, 4), [4, 7) in score order; batches of 37 rows cut
    # the runs inside a partition anywhere
    ends = np.flatnonzero(pred.run_end) + 1
    bounds = [0, int(ends[2]), int(ends[3]), n]
    rows = []
    for start, stop in itertools.pairwise(bounds):
        out = list(_summarise_partition(_Broadcast(specs), True,
                                        iter(_arrow_batches(pred, ["g", "x"], start, stop, 37))))
        assert len(out) == 1
        rows.append(out[0].to_pylist()[0])
    rows = rows[::-1]  # arrival order is arbitrary: the driver sorts by lowest score
    rows.sort(key=lambda r: r["lo"])
    check_partitions([(r["lo"], r["hi"], r["rows"]) for r in rows])
    summaries = combine_all(unpack_summaries(r["payload"]) for r in rows)
    stats = finish(summaries, "bernoulli")
    got = assemble_result("spark", specs, count=stats.size, weight=stats.weight_total,
                          variance=summaries.variance, kuiper=stats.kuiper, bound=None, bins=0,
                          n=n, n_dropped=0)
    assert_same(NumpyEngine.from_predictions(pred).screen(specs), got)


def test_pack_round_trip_and_split_runs_are_refused():
    from mcviz.core.evaluator import ChunkSummaries

    empty = ChunkSummaries.empty(3)
    back = unpack_summaries(pack_summaries(empty))
    assert back.count.dtype == np.int64
    assert back.high.shape == (3,)
    check_partitions([(0.0, 0.2, 5), (0.3, 0.5, 2)])
    with pytest.raises(RuntimeError, match="tie run was split"):
        check_partitions([(0.0, 0.3, 5), (0.3, 0.5, 2)])
