"""The in-memory numpy engine: the reference every other engine is tested against.

Exact mode cuts the score-sorted rows of :class:`~mcviz.io.Predictions` into blocks at tie-run
ends, finds each subpopulation's members in a block from integer codes prepared once per
covariate (:class:`~mcviz.core.membership.MembershipPlan`: a child is tested only for the
conditions it adds to its parent), summarises each block with the shared evaluator
(:class:`~mcviz.core.evaluator.Evaluator`) and combines the summaries in score order (the
blocks run on every core, :class:`~mcviz.core.batches.InOrder`: the same numbers for any
number of threads); histogram mode feeds the same blocks to the
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

from mcviz.budget import usable_cores
from mcviz.core.batches import InOrder
from mcviz.core.evaluator import ChunkSummaries, Evaluator
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
from mcviz.io.covariates import take_rows
from mcviz.subpopulations import is_score_column

__all__ = ["NumpyEngine"]

BLOCK_ROWS = 1 << 16
"""Rows per block of exact mode (cut at tie-run ends): membership and paths stay in cache.
With the compiled loops, one thread at 10^7 rows (bench_scale's data, ℓ = 1000): 2^15 14.2 s,
2^16 12.5 s, 2^17 13.9 s (the loops' rows array of a block, 32 bytes a row, nearer the core)."""


class NumpyEngine(Engine):
    """Screen predictions held in memory.

    Build it from loaded :class:`~mcviz.io.Predictions` (:meth:`from_predictions`) or from files
    (the constructor reads them whole, so they must fit in memory). ``threads``: blocks of
    exact mode summarised at once (default: every core this process may use).
    """

    name = "numpy"

    def __init__(self, paths, columns: Columns, *, drop_invalid: bool = False,
                 threads: int | None = None) -> None:
        import pyarrow.dataset as ds

        files = expand_paths(paths)
        roles = {columns.score, columns.label, columns.weight}
        frame = _text_as_categories(ds.dataset(list(files), format="parquet").to_table(),
                                    roles).to_pandas()
        covariates = [c for c in frame.columns if c not in roles]
        pred = load_predictions(
            frame, score=columns.score, label=columns.label, positive=columns.positive,
            weight=columns.weight if columns.weight is not None else False,
            covariates=covariates, id_columns=[], drop_invalid=drop_invalid,
        )
        # Conditions may name any column (also ones the loader drops as constant or all
        # missing), as in SQL: keep every covariate, in score order.
        raw = take_rows(frame[covariates], pred.row)
        kinds = {}
        for name in covariates:
            series = raw[name]
            if _text_categories(series):  # the categories of the text as read, sorted
                raw[name] = series.cat.set_categories(
                    pd.Index(sorted(series.cat.categories), dtype="string"))
                kinds[name] = "nominal"
            elif isinstance(series.dtype, pd.CategoricalDtype) or not (
                pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
                or pd.api.types.is_datetime64_any_dtype(series)
            ):
                raw[name] = series.astype("string").astype("category")
                kinds[name] = "nominal"
            else:
                kinds[name] = "ordinal"
        self._init(dataclasses.replace(pred, covariates=raw, covariate_kinds=kinds), threads)

    @classmethod
    def from_predictions(cls, pred: Predictions, *, threads: int | None = None) -> NumpyEngine:
        """Build an engine over predictions already in memory."""
        engine = cls.__new__(cls)
        engine._init(pred, threads)
        return engine

    def _init(self, pred: Predictions, threads: int | None = None) -> None:
        if pred.response_kind != "binary":
            raise ValidationError("screening needs binary responses (eq. (5) of the sigma).")
        self.pred = pred
        self.threads = usable_cores() if threads is None else max(int(threads), 1)

    def _columns(self, specs: Sequence[SubpopulationSpec]) -> tuple[MembershipPlan, dict]:
        """Return the membership plan of ``specs`` and the columns it names (score order)."""
        plan = MembershipPlan(specs)
        covariates = self.pred.covariates
        columns = {}
        for name in plan.columns:  # a condition may bound the score itself (score >= 0.6)
            if is_score_column(self.pred, name):
                columns[name] = pd.Series(self.pred.score, copy=False)
                continue
            self.pred.require_covariate(name, " in the condition")
            columns[name] = covariates[name]
        return plan, columns

    def _codes(self, specs: Sequence[SubpopulationSpec]) -> tuple[MembershipPlan, dict]:
        """Return the membership plan of ``specs`` and the codes of the columns it names."""
        plan, columns = self._columns(specs)
        return plan, plan.encode(columns)

    def _blocks(self, specs: Sequence[SubpopulationSpec]) -> Iterator[tuple]:
        """(start, stop, members of every spec in rows start:stop) per block of rows."""
        plan, codes = self._codes(specs)
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
        """Blocks of the score-sorted rows, cut at tie-run ends, summarised and combined.

        The blocks are summarised on :attr:`threads` threads and combined in score order.
        """
        plan, columns = self._columns(specs)
        plan.encode({k: v.iloc[:1] for k, v in columns.items()})  # the codes' cuts, once
        blocks = list(_blocks(self.pred.run_end, BLOCK_ROWS))
        chunks = InOrder(min(self.threads, len(blocks)))
        try:
            for start, stop in blocks:  # each block encoded on its thread
                chunks.submit(self._block_summaries, plan, columns, start, stop)
            total = chunks.finish()
        finally:
            chunks.close()
        return ChunkSummaries.empty(len(plan.specs)) if total is None else total

    def _block_summaries(self, plan: MembershipPlan, columns: dict, start: int,
                         stop: int) -> ChunkSummaries:
        """Codes, members and chunk summaries of rows start:stop (cut at tie-run ends)."""
        p = self.pred
        codes = plan.encode({k: v.iloc[start:stop] for k, v in columns.items()})
        members = plan.members_from_codes(codes, stop - start, compiled=True)
        evaluator = Evaluator(p.score[start:stop], p.weight[start:stop],
                              run_end=p.run_end[start:stop])
        return evaluator.summaries(  # eq. (5) only: screening is binary
            p.label[start:stop] - p.score[start:stop], members, adjacent=False)


def _text_as_categories(table, roles: set):
    """Text columns other than ``roles`` dictionary-encoded (pandas categoricals when read).

    The loader's sort then moves integer codes, not millions of strings; the engine's
    covariates end as they did before (categories: the text values, sorted).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(table.schema):
        if field.name not in roles and (pa.types.is_string(field.type)
                                        or pa.types.is_large_string(field.type)):
            table = table.set_column(i, field.name, pc.dictionary_encode(
                table.column(i).combine_chunks()))
    return table


def _text_categories(series: pd.Series) -> bool:
    """Return True for a categorical whose categories are all text."""
    return isinstance(series.dtype, pd.CategoricalDtype) and all(
        isinstance(c, str) for c in series.cat.categories)


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
