"""The in-memory numpy engine: the reference every other engine is tested against.

Exact mode evaluates each subpopulation's path directly (eq. (1) of [1] at the ends of runs of
tied scores, over the score-sorted arrays of :class:`~mcviz.io.Predictions`); histogram mode
computes the same bin summaries as the SQL engines, so all engines share one bound.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1), (2), (5).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

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
from mcviz.subpopulations import Condition, Subpopulation, select_rows

__all__ = ["NumpyEngine", "subpopulation_kuiper"]


def subpopulation_kuiper(score: np.ndarray, diff: np.ndarray, weight_total: float) -> float:
    r"""Kuiper statistic of one subpopulation from its score-sorted members, eqs. (1)-(2).

    ``diff`` holds :math:`W(R - S)` in score order; the path is evaluated at the last member of
    each run of tied scores, and :math:`D = \max(0, \max C) - \min(0, \min C)`.

    Examples
    --------
    >>> subpopulation_kuiper(np.array([0.1, 0.2, 0.2]), np.array([0.5, -1.0, 0.25]), 2.0)
    0.375
    """
    if score.size == 0 or weight_total <= 0:
        return 0.0
    ends = np.flatnonzero(np.r_[score[1:] != score[:-1], True])
    path = np.cumsum(diff)[ends] / weight_total  # eq. (1)
    return float(max(path.max(), 0.0) - min(path.min(), 0.0))  # eq. (2)


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

    def overview(self) -> tuple[int, int, float, float]:
        """Rows, rows dropped at load time, lowest and highest score."""
        p = self.pred
        return p.n, p.report.n_dropped, float(p.score[0]), float(p.score[-1])

    def _indices(self, specs: Sequence[SubpopulationSpec]) -> Iterator[np.ndarray]:
        """Each spec's members in turn, testing a child's conditions on its parent's rows only.

        Algorithm 1 nests every subpopulation in its parent, so a path of depth d costs about
        the parent's size per step instead of n. Parents are held only until their last child
        in ``specs`` is done.
        """
        position_of = {spec.id: position for position, spec in enumerate(specs)}
        children_left: dict[int, int] = {}
        for position, spec in enumerate(specs):
            parent = position_of.get(spec.parent) if spec.parent is not None else None
            if parent is not None and parent < position:
                children_left[parent] = children_left.get(parent, 0) + 1
        held: dict[int, np.ndarray] = {}
        for position, spec in enumerate(specs):
            parent = position_of.get(spec.parent) if spec.parent is not None else None
            within = held.get(parent) if parent is not None else None
            index = select_rows(self.pred, spec.conditions, within=within)
            if within is not None:
                children_left[parent] -= 1
                if children_left[parent] == 0:
                    del held[parent]
            if children_left.get(position):
                held[position] = index
            yield index

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
        size = len(specs)
        count = np.zeros(size, dtype=np.int64)
        weight = np.zeros(size)
        variance = np.zeros(size)
        kuiper = np.zeros(size)
        for position, index in enumerate(self._indices(specs)):
            count[position] = index.size
            if index.size == 0:
                continue
            weight[position] = total = float(p.weight[index].sum())
            variance[position] = float(self.variance[index].sum())
            kuiper[position] = subpopulation_kuiper(p.score[index], self.diff[index], total)
        return assemble_result(self.name, specs, count=count, weight=weight, variance=variance,
                               kuiper=kuiper, bound=None, bins=bins, n=p.n,
                               n_dropped=p.report.n_dropped)
