"""The rows a measure is computed on: the full population or a subpopulation, pooled by tied score.

Every measure in this package depends on the data only through score-sorted arrays and, where
the score enters only as a value, through per-run sums over the runs of tied scores (the tie
rule: nothing may depend on the order of tied rows). :class:`_Rows` holds both, computed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mcviz.core.arrays import weighted_quantile
from mcviz.core.path import run_ends
from mcviz.errors import ValidationError, describe_rows
from mcviz.io import (
    Predictions,
    validate_index,  # one rule for indices
)

CLIP = 1e-15
"""Scores are clipped to [CLIP, 1 - CLIP] wherever their logit or logarithm is taken."""


@dataclass(frozen=True, slots=True)
class _Rows:
    score: np.ndarray  # ascending
    label: np.ndarray
    weight: np.ndarray
    starts: np.ndarray  # first position of each run of tied scores
    weighted: bool
    binary: bool  # responses are 0/1
    _cache: dict = field(default_factory=dict)
    # rows given by their sums per distinct score (mcviz.stats.measures.runs): each entry of
    # the arrays above is one run, ``counts`` its rows (None: the arrays hold the rows)
    counts: np.ndarray | None = None

    @property
    def unit_weights(self) -> bool:
        return not self.weighted

    @property
    def n(self) -> int:
        return int(self.score.size)

    @property
    def total(self) -> float:
        return self.cached("total", lambda: float(self.weight.sum()))

    def cached(self, key: str, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def run_sum(self, name: str) -> np.ndarray:
        """Per-run sums of ``w`` (weight), ``wy`` (weight x label) or ``wyy``."""

        def make() -> np.ndarray:
            if name == "wyy" and self.binary:
                return self.run_sum("wy")  # R² = R for 0/1 responses
            values = {
                "w": lambda: self.weight,
                "wy": lambda: self.label if self.unit_weights else self.weight * self.label,
                "wyy": lambda: self.weight * self.label**2,
            }[name]()
            if self.starts.size == self.score.size:  # no ties: the runs are the rows
                return values
            return np.add.reduceat(values, self.starts)

        return self.cached("run_" + name, make)

    def times_weight(self, values: np.ndarray) -> np.ndarray:
        """Return ``weight * values`` (``values`` itself with unit weights: the same numbers)."""
        return values if self.unit_weights else self.weight * values

    @property
    def no_ties(self) -> bool:
        """True when every run of tied scores is one row."""
        return self.starts.size == self.score.size

    @property
    def run_score(self) -> np.ndarray:
        return self.cached("run_score", lambda: self.score[self.starts])


def _rows(pred: Predictions, index: np.ndarray | None, *, what: str) -> _Rows:
    """Validate the subpopulation and the responses once, and return its sorted rows."""
    if not isinstance(pred, Predictions):
        raise ValidationError(
            f"{what} takes a Predictions object (Predictions.from_arrays(score, label, weight) "
            f"builds one from arrays), not {type(pred).__name__}."
        )
    if index is None:
        score, label, weight = pred.score, pred.label, pred.weight
        run_end = pred.run_end
    else:
        members = validate_index(pred, index)
        score, label, weight = pred.score[members], pred.label[members], pred.weight[members]
        run_end = run_ends(score)
    outside = (label < 0) | (label > 1)
    if outside.any():
        rows = pred.row if index is None else pred.row[members]
        raise ValidationError(
            f"column {pred.label_column!r}: {what} needs responses in [0, 1]; "
            f"{describe_rows(np.sort(rows[outside]), label.size)} lie outside.",
            column=pred.label_column,
        )
    starts = np.concatenate(([0], np.flatnonzero(run_end[:-1]) + 1))
    binary = pred.response_kind == "binary"
    return _Rows(score=score, label=label, weight=weight, starts=starts, weighted=pred.weighted,
                 binary=binary)


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """Inner product without BLAS threads (several times faster on a loaded machine)."""
    return float(np.einsum("i,i->", x, y))


def _weighted_quantile(
    values: np.ndarray, weight: np.ndarray, p: list[float], equal: bool
) -> np.ndarray:
    """Quantiles ``p``: R's type 7 when the weights are equal, else the weighted inverse CDF.

    The weighted quantile is the smallest value whose cumulative weight reaches ``p`` times the
    total (the lower weighted quantile; for integer weights it is the type-1 quantile of the
    rows repeated by their weights).
    """
    if equal:
        return np.quantile(values, p)  # type 7, by partial sorting
    return weighted_quantile(values, weight, p)


def counted_quantile(values: np.ndarray, counts: np.ndarray, p: list[float]) -> np.ndarray:
    """R's type-7 quantiles of ``values`` each repeated ``counts`` times (no repeat made).

    The same interpolation as ``np.quantile(np.repeat(values, counts), p)``: position
    :math:`h = (N - 1) p` in the sorted repeated values, linear between its two neighbours.
    """
    order = np.argsort(values, kind="stable")
    v = np.asarray(values, dtype=float)[order]
    ends = np.cumsum(np.asarray(counts, dtype=np.int64)[order])  # last position + 1 of each
    h = (ends[-1] - 1) * np.asarray(p, dtype=float)
    low = np.floor(h).astype(np.int64)
    below = v[np.searchsorted(ends, low, side="right")]
    above = v[np.searchsorted(ends, np.minimum(low + 1, ends[-1] - 1), side="right")]
    t = h - low
    # numpy's lerp: from the nearer end (the same rounding as np.quantile)
    return np.where(t >= 0.5, above - (above - below) * (1 - t), below + (above - below) * t)
