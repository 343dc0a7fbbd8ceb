"""The in-memory numpy engine: the reference every other engine is tested against.

Exact mode cuts the score-sorted rows of :class:`~mcviz.io.Predictions` into blocks at tie-run
ends, finds each subpopulation's members in a block from integer codes prepared once per
covariate (:class:`~mcviz.core.membership.MembershipPlan`: a child is tested only for the
conditions it adds to its parent), summarises each block with the shared evaluator
(:class:`~mcviz.core.evaluator.Evaluator`) and combines the summaries in score order;
histogram mode computes the same bin summaries as the SQL engines, so all engines share one
bound.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1), (2), (5).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from mcviz.core.evaluator import Evaluator, combine_all, finish
from mcviz.core.membership import MembershipPlan
from mcviz.core.sigma import SigmaMethod
from mcviz.engines.base import (
    BinSummaries,
    Columns,
    Engine,
    ScreenResult,
    SubpopulationSpec,
    _check_bins,
    as_specs,
    assemble_result,
    expand_paths,
)
from mcviz.errors import ValidationError
from mcviz.io import Predictions, load_predictions
from mcviz.subpopulations import Condition, Subpopulation

__all__ = ["NumpyEngine"]

BLOCK_ROWS = 1 << 18
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
        self.diff = pred.weight * (pred.label - pred.score)
        self.variance = pred.score * (1.0 - pred.score) * pred.weight**2

    def _members(self, plan: MembershipPlan, start: int = 0, stop: int | None = None):
        """Members of every spec among rows ``start:stop`` (positions relative to ``start``)."""
        stop = self.pred.n if stop is None else stop
        codes = self._codes(plan)
        return plan.members_from_codes({k: v[start:stop] for k, v in codes.items()},
                                       stop - start)

    def _codes(self, plan: MembershipPlan) -> dict[str, np.ndarray]:
        covariates = self.pred.covariates
        for name in plan.columns:
            self.pred.require_covariate(name, " in the condition")
        return plan.encode({name: covariates[name] for name in plan.columns})

    def overview(self) -> tuple[int, int, float, float]:
        """Rows, rows dropped at load time, lowest and highest score."""
        p = self.pred
        return p.n, p.report.n_dropped, float(p.score[0]), float(p.score[-1])

    def _indices(self, specs: Sequence[SubpopulationSpec]) -> Iterator[np.ndarray]:
        """Each spec's members over all rows (parents' rows reused, see MembershipPlan)."""
        yield from self._members(MembershipPlan(specs))

    def histogram(self, specs: Sequence[SubpopulationSpec], lo: float, scale: float,
                  bins: int) -> BinSummaries:
        """Per-(subpopulation, bin) sums with the same bin rule as the SQL engines."""
        p = self.pred
        binned = np.minimum(np.floor((p.score - lo) * scale).astype(np.int64), bins - 1)
        positive = np.maximum(self.diff, 0.0)
        negative = np.maximum(-self.diff, 0.0)
        parts = []
        for position, index in enumerate(self._indices(specs)):
            if index.size == 0:
                continue
            b = binned[index]
            present = np.flatnonzero(np.bincount(b, minlength=bins))
            sums = {
                name: np.bincount(b, weights=values[index], minlength=bins)[present]
                for name, values in (("w", p.weight), ("d", self.diff), ("p", positive),
                                     ("q", negative), ("v", self.variance))
            }
            parts.append(pd.DataFrame({
                "k": position, "b": present,
                "n": np.bincount(b, minlength=bins)[present], **sums,
            }))
        if not parts:
            parts = [pd.DataFrame({c: np.zeros(0) for c in "kbnwdpqv"})]
        return BinSummaries.from_frame(pd.concat(parts, ignore_index=True))

    def refine(self, specs, candidates, lo, scale, bins) -> pd.DataFrame:
        """Not needed: exact mode computes each path directly."""
        raise NotImplementedError

    def screen(
        self,
        subpopulations: Sequence[Subpopulation | SubpopulationSpec | Sequence[Condition]],
        *,
        exact: bool = True,
        bins: int | None = None,
    ) -> ScreenResult:
        """Evaluate every subpopulation; exact mode computes each path directly."""
        if not exact:
            return super().screen(subpopulations, exact=False, bins=bins)
        specs = as_specs(subpopulations)
        bins = _check_bins(bins)
        p = self.pred
        plan = MembershipPlan(specs)
        codes = self._codes(plan)
        chunks = []
        for start, stop in _blocks(p.run_end, BLOCK_ROWS):
            members = plan.members_from_codes(
                {k: v[start:stop] for k, v in codes.items()}, stop - start)
            evaluator = Evaluator(p.score[start:stop], p.weight[start:stop],
                                  run_end=p.run_end[start:stop])
            chunks.append(evaluator.summaries(  # eq. (5) only: screening is binary
                p.label[start:stop] - p.score[start:stop], members, adjacent=False))
        summaries = combine_all(chunks)
        stats = finish(summaries, SigmaMethod.BERNOULLI)
        count, weight, variance, kuiper = (
            stats.size, stats.weight_total, summaries.variance, stats.kuiper)
        return assemble_result(self.name, specs, count=count, weight=weight, variance=variance,
                               kuiper=kuiper, bound=None, bins=bins, n=p.n,
                               n_dropped=p.report.n_dropped)


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
