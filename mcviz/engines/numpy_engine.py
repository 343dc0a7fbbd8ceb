"""The in-memory numpy engine: the reference every other engine is tested against.

Exact mode cuts the score-sorted rows of :class:`~mcviz.io.Predictions` into blocks at tie-run
ends, finds each subpopulation's members in a block from integer codes prepared once per
covariate (:class:`~mcviz.core.membership.MembershipPlan`: a child is tested only for the
conditions it adds to its parent), summarises each block with the shared evaluator
(:class:`~mcviz.core.evaluator.Evaluator`) and combines the summaries in score order;
histogram mode feeds the same blocks to the
:class:`~mcviz.engines.base.HistogramAccumulator` of the other engines, so all engines share
one bound.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1), (2), (5).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from mcviz.core.evaluator import ChunkSummaries, Evaluator, combine_all
from mcviz.core.membership import MembershipPlan
from mcviz.engines.base import (
    BinSummaries,
    Columns,
    Engine,
    HistogramAccumulator,
    SubpopulationSpec,
    expand_paths,
)
from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions
from mcviz.subpopulations import is_score_column

__all__ = ["NumpyEngine"]

BLOCK_ROWS = 1 << 17
"""Rows per block of exact mode (cut at tie-run ends): membership and paths stay in cache."""


class NumpyEngine(Engine):
    """Screen predictions held in memory.

    Build it from loaded :class:`~mcviz.io.Predictions` (:meth:`from_predictions`) or from files
    (the constructor reads them whole, so they must fit in memory).
    """

    name = "numpy"

    def __init__(self, paths, columns: Columns, *, drop_invalid: bool = False) -> None:
        import pyarrow.dataset as ds

        files = expand_paths(paths)
        frame = ds.dataset(list(files), format="parquet").to_table().to_pandas()
        roles = {columns.score, columns.label, columns.weight}
        covariates = [c for c in frame.columns if c not in roles]
        pred = load_predictions(
            frame, score=columns.score, label=columns.label, positive=columns.positive,
            weight=columns.weight if columns.weight is not None else False,
            covariates=covariates, id_columns=[], drop_invalid=drop_invalid,
        )
        # Conditions may name any column (also ones the loader drops as constant or all
        # missing), as in SQL: keep every covariate, in score order.
        raw = frame[covariates].iloc[pred.row].reset_index(drop=True)
        kinds = {}
        for name in covariates:
            series = raw[name]
            if isinstance(series.dtype, pd.CategoricalDtype) or not (
                pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
                or pd.api.types.is_datetime64_any_dtype(series)
            ):
                raw[name] = series.astype("string").astype("category")
                kinds[name] = "nominal"
            else:
                kinds[name] = "ordinal"
        self._init(dataclasses.replace(pred, covariates=raw, covariate_kinds=kinds))

    @classmethod
    def from_predictions(cls, pred: Predictions) -> NumpyEngine:
        """Build an engine over predictions already in memory."""
        engine = cls.__new__(cls)
        engine._init(pred)
        return engine

    def _init(self, pred: Predictions) -> None:
        if pred.response_kind != "binary":
            raise ValidationError("screening needs binary responses (eq. (5) of the sigma).")
        self.pred = pred

    def _blocks(self, specs: Sequence[SubpopulationSpec]) -> Iterator[tuple]:
        """(start, stop, members of every spec in rows start:stop) per block of rows."""
        plan = MembershipPlan(specs)
        covariates = self.pred.covariates
        columns = {}
        for name in plan.columns:  # a condition may bound the score itself (score >= 0.6)
            if is_score_column(self.pred, name):
                columns[name] = pd.Series(self.pred.score, copy=False)
                continue
            self.pred.require_covariate(name, " in the condition")
            columns[name] = covariates[name]
        codes = plan.encode(columns)
        for start, stop in _blocks(self.pred.run_end, BLOCK_ROWS):
            yield start, stop, plan.members_from_codes(
                {k: v[start:stop] for k, v in codes.items()}, stop - start)

    def overview(self) -> tuple[int, int, float, float]:
        """Rows, rows dropped at load time, lowest and highest score."""
        p = self.pred
        return p.n, p.report.n_dropped, float(p.score[0]), float(p.score[-1])

    def histogram(self, specs: Sequence[SubpopulationSpec], lo: float, scale: float,
                  bins: int) -> BinSummaries:
        """Per-(subpopulation, bin) sums with the same bin rule as the other engines."""
        p = self.pred
        accumulator = HistogramAccumulator(MembershipPlan(specs), lo, scale, bins)
        for start, stop, members in self._blocks(specs):
            accumulator.add_members(members, p.score[start:stop], p.label[start:stop],
                                    p.weight[start:stop])
        return accumulator.summaries()

    def exact_summaries(self, specs: Sequence[SubpopulationSpec]) -> ChunkSummaries:
        """Blocks of the score-sorted rows, cut at tie-run ends, summarised and combined."""
        p = self.pred
        chunks = []
        for start, stop, members in self._blocks(specs):
            evaluator = Evaluator(p.score[start:stop], p.weight[start:stop],
                                  run_end=p.run_end[start:stop])
            chunks.append(evaluator.summaries(  # eq. (5) only: screening is binary
                p.label[start:stop] - p.score[start:stop], members, adjacent=False))
        return combine_all(chunks)


def _blocks(run_end: np.ndarray, rows: int) -> Iterator[tuple[int, int]]:
    """Consecutive (start, stop) of about ``rows`` rows each, cut at the ends of tie runs."""
    n = run_end.size
    ends = np.flatnonzero(run_end) + 1  # possible stops
    start = 0
    while start < n:
        at = int(np.searchsorted(ends, min(start + rows, n), side="left"))
        stop = int(ends[min(at, ends.size - 1)])
        yield start, stop
        start = stop
