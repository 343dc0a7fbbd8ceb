r"""The screening-engine interface and the arithmetic every engine shares.

The screening stage of the multi-calibration metric needs, per subpopulation :math:`k`, the
Kuiper statistic :math:`D_k` of its cumulative differences (eqs. (1)-(2) of [1]) and the scale
:math:`\sigma_k` of eq. (5), then :math:`M = \max_k D_k \sigma_0 / \sigma_k` (eq. (4)). Every
quantity except :math:`D_k` is a sum over the members (:math:`\sum W`, :math:`\sum S(1-S)W^2`),
and :math:`D_k` is a function of *ordered chunk summaries*: cutting the score axis into bins
(a tie run never straddles two bins, since a bin is a score interval), each bin contributes its
sum :math:`d_b = \sum W(R-S)`, and the running sum at the end of bin :math:`b` is
:math:`C^{\mathrm{end}}_b = \sum_{b' \le b} d_{b'} / \sum W`.

Histogram mode
--------------
.. math::
    K_{\mathrm{hist}} = \max(0, \max_b C^{\mathrm{end}}_b) - \min(0, \min_b C^{\mathrm{end}}_b)

is a lower bound of :math:`D_k` (bin ends are ends of tie runs, so they are points of the
path). Inside bin :math:`b` the path never rises more than the positive parts
:math:`p_b = \sum_{\mathrm{bin}} \max(W(R-S), 0)` above its start, nor falls more than the negative
parts :math:`q_b`, hence the proven bound

.. math::
    K_{\mathrm{hist}} \le D_k \le \max(0, \max_b (C^{\mathrm{start}}_b + p_b/\textstyle\sum W))
    - \min(0, \min_b (C^{\mathrm{start}}_b - q_b/\textstyle\sum W))
    \le K_{\mathrm{hist}} + 2 \max_b \textstyle\sum_{\mathrm{bin}} |W(R-S)| / \sum W,

reported beside every value as ``kuiper_bound`` (upper minus lower bound).

Exact mode
----------
The engine (numpy in memory, DuckDB ``ORDER BY score`` out of core, Spark range partitions)
hands score-sorted rows to the shared evaluator (:mod:`mcviz.core.batches`): per
subpopulation the ordered chunk summaries (offset, highest and lowest point of the path at
tie-run ends, :math:`\sum W`, :math:`\sum S(1-S)W^2`, count) of each batch, combined in score
order by :math:`(S_1 + S_2, \max(M_1, S_1 + M_2), \min(m_1, S_1 + m_2))`. One sorted pass; no
predicate is evaluated per (row, subpopulation) in SQL.

Histogram mode needs no sort: the bin sums above are order-free, so the engines stream the
rows in any order through :class:`HistogramAccumulator` (memory :math:`\ell \times` bins,
never rows).

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5).
.. [2] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023; section "High-level strategy".
"""

from __future__ import annotations

import glob
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mcviz.core.evaluator import ChunkSummaries, finish
from mcviz.core.membership import MembershipPlan
from mcviz.core.metric import multicalibration_metric, normalized_kuiper
from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import SigmaMethod, sigma_from_variance
from mcviz.errors import ValidationError
from mcviz.subpopulations import Condition, Subpopulation

__all__ = [
    "DEFAULT_EXACT_BINS",
    "BinSummaries",
    "Columns",
    "Engine",
    "HistogramAccumulator",
    "ScreenResult",
    "SubpopulationSpec",
    "arrow_blocks",
    "arrow_columns",
    "as_specs",
    "assemble_result",
    "exact_result",
    "expand_paths",
    "finish_screen",
    "rows_in_files",
]

DEFAULT_EXACT_BINS = 1024
"""Score bins of histogram mode when none are given (exact mode uses no bins)."""

HISTOGRAM_CELLS = 1 << 22
"""Most (subpopulation, bin) cells histogram mode holds (six float sums each: 192 MiB)."""


@dataclass(frozen=True, slots=True)
class Columns:
    """Where the score, label and weight are in the data.

    Attributes
    ----------
    score, label : str
    weight : str or None
        None: unweighted (every weight 1).
    positive : str or None
        None when the labels are 0/1 numbers or booleans; else the text of the positive label
        (the response is 1 where the trimmed label text equals it).
    negative : str or None
        The other label text (rows with a third value are invalid), when ``positive`` is set.
    """

    score: str
    label: str
    weight: str | None = None
    positive: str | None = None
    negative: str | None = None


@dataclass(frozen=True, slots=True)
class SubpopulationSpec:
    """A subpopulation as a predicate: what an engine evaluates on the full data."""

    id: int
    depth: int
    conditions: tuple[Condition, ...]
    description: str
    parent: int | None = None
    """Id of a subpopulation that contains this one (its parent on an Algorithm 1 path), when
    known: the in-memory engine then evaluates the conditions on the parent's rows only."""


def as_specs(
    subpopulations: Sequence[Subpopulation | SubpopulationSpec | Sequence[Condition]],
) -> tuple[SubpopulationSpec, ...]:
    """Normalise subpopulations (objects, specs or bare condition lists) to specs.

    Bare condition lists get ids in order (0, 1, ...); their descriptions come from
    :func:`~mcviz.subpopulations.describe_conditions`. The first spec is always the full
    population (subpopulation 0 of eq. (4)): it is put first when the first given one has
    conditions (with id 0, or one below the smallest id when 0 is taken).
    """
    from mcviz.subpopulations import describe_conditions

    specs = []
    for position, item in enumerate(subpopulations):
        if isinstance(item, SubpopulationSpec):
            specs.append(item)
        elif isinstance(item, Subpopulation):
            specs.append(SubpopulationSpec(item.id, item.depth, tuple(item.conditions),
                                           item.description, item.parent))
        else:
            conditions = tuple(item)
            specs.append(SubpopulationSpec(position, len(conditions), conditions,
                                           describe_conditions(conditions)))
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise ValidationError("subpopulation ids must be distinct.")
    if not specs or specs[0].conditions:  # subpopulation 0 is always the full population
        free = 0 if 0 not in ids else min(ids) - 1
        specs.insert(0, SubpopulationSpec(free, 0, (), "full population"))
    return tuple(specs)


@dataclass(frozen=True, slots=True, eq=False)
class BinSummaries:
    """Sparse per-(subpopulation, bin) sums, sorted by position then bin.

    ``position`` indexes the spec list; every array has one entry per non-empty cell.
    """

    position: np.ndarray
    bin: np.ndarray
    count: np.ndarray
    weight: np.ndarray  # sum W
    diff: np.ndarray  # sum W(R - S)
    positive: np.ndarray  # sum max(W(R - S), 0)
    negative: np.ndarray  # sum max(S - R, 0) W
    variance: np.ndarray  # sum S(1 - S) W^2

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> BinSummaries:
        """Build from a frame with columns k, b, n, w, d, p, q, v (any order of rows)."""
        frame = frame.sort_values(["k", "b"], kind="stable")
        return cls(
            position=frame["k"].to_numpy(np.int64),
            bin=frame["b"].to_numpy(np.int64),
            count=frame["n"].to_numpy(np.int64),
            weight=frame["w"].to_numpy(float),
            diff=frame["d"].to_numpy(float),
            positive=frame["p"].to_numpy(float),
            negative=frame["q"].to_numpy(float),
            variance=frame["v"].to_numpy(float),
        )


@dataclass(frozen=True, slots=True, eq=False)
class ScreenResult:
    r"""Per-subpopulation statistics and the metric M from one engine.

    Attributes
    ----------
    engine : str
        ``"numpy"``, ``"duckdb"`` or ``"spark"``.
    exact : bool
        True: ``kuiper`` is :math:`D_k` exactly. False (histogram mode): ``kuiper`` is the lower
        bound :math:`K_{\mathrm{hist}}` and ``kuiper + kuiper_bound`` an upper bound.
    bins : int
        Score bins of the histogram pass (of the first pass in exact mode).
    n : int
        Rows evaluated (after dropping invalid rows, if asked).
    n_dropped : int
    weight_total : float
    metric : float
        :math:`M` of eq. (4) (with histogram Kuiper values in histogram mode).
    metric_bound : float or None
        Histogram mode: :math:`M \le` ``metric + metric_bound``; None in exact mode.
    sigma0 : float
        Eq. (5) for the full population.
    argmax : int
        Row of ``table`` attaining ``metric`` (the first when tied).
    table : DataFrame
        One row per subpopulation: id, depth, description, size, weight_total, kuiper,
        kuiper_bound, sigma, kuiper_z, normalized (:math:`D_k \sigma_0/\sigma_k`).
    """

    engine: str
    exact: bool
    bins: int
    n: int
    n_dropped: int
    weight_total: float
    metric: float
    metric_bound: float | None
    sigma0: float
    argmax: int
    table: pd.DataFrame

    def summary(self) -> dict:
        """Return the JSON object of ``mcviz screen --json`` (keys as in ``mcviz metrics``)."""
        row = self.table.iloc[self.argmax]
        return {
            "engine": self.engine,
            "exact": self.exact,
            "metric": float(self.metric),
            "metric_bound": None if self.metric_bound is None else float(self.metric_bound),
            "n": int(self.n),
            "n_subpopulations": len(self.table),
            "argmax": {
                "description": str(row["description"]),
                "size": int(row["size"]),
                "kuiper": float(row["kuiper"]),
                "sigma": float(row["sigma"]),
            },
        }


class Engine(ABC):
    """One way of evaluating subpopulation predicates on the full data.

    Subclasses provide the data's overall statistics (:meth:`overview`), the chunk summaries of
    one pass over the score-sorted rows (:meth:`exact_summaries`) and the order-free bin sums of
    histogram mode (:meth:`histogram`); :meth:`screen` (shared) turns them into M.
    """

    name: str = "engine"

    @abstractmethod
    def overview(self) -> tuple[int, int, float, float]:
        """Validate the data once; return (rows kept, rows dropped, lowest, highest score)."""

    @abstractmethod
    def exact_summaries(self, specs: Sequence[SubpopulationSpec]) -> ChunkSummaries:
        """Ordered chunk summaries of every spec over all rows (one score-sorted pass)."""

    @abstractmethod
    def histogram(
        self, specs: Sequence[SubpopulationSpec], lo: float, scale: float, bins: int
    ) -> BinSummaries:
        """Per-(subpopulation, bin) sums; bin = min(floor((S - lo) * scale), bins - 1)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, sessions)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def screen(
        self,
        subpopulations: Sequence[Subpopulation | SubpopulationSpec | Sequence[Condition]],
        *,
        exact: bool = True,
        bins: int | None = None,
    ) -> ScreenResult:
        """Evaluate every subpopulation and the metric M.

        Parameters
        ----------
        subpopulations : sequence
            :class:`~mcviz.subpopulations.Subpopulation` objects (only their conditions are
            used), specs, or bare condition lists.
        exact : bool, default True
            Exact Kuiper statistics (to rounding); False: histogram mode with its bound.
        bins : int, optional
            Score bins of histogram mode (default :data:`DEFAULT_EXACT_BINS`).
        """
        specs = as_specs(subpopulations)
        bins = _check_bins(bins)
        n, dropped, low, high = self.overview()
        if exact:
            return exact_result(self.name, specs, self.exact_summaries(specs), n=n,
                                n_dropped=dropped)
        _check_cells(len(specs), bins)
        scale = bins / (high - low) if high > low else 0.0
        summaries = self.histogram(specs, low, scale, bins)
        return finish_screen(self.name, specs, summaries, bins=bins, n=n, n_dropped=dropped)


def exact_result(engine: str, specs: Sequence[SubpopulationSpec], summaries: ChunkSummaries, *,
                 n: int, n_dropped: int) -> ScreenResult:
    """Return the exact-mode ScreenResult of ``specs`` from chunk summaries (eqs. (1), (2), (5))."""
    stats = finish(summaries, SigmaMethod.BERNOULLI)
    return assemble_result(engine, specs, count=stats.size, weight=stats.weight_total,
                           variance=summaries.variance, kuiper=stats.kuiper, bound=None, bins=0,
                           n=n, n_dropped=n_dropped)


def _check_bins(bins: int | None) -> int:
    if bins is None:
        return DEFAULT_EXACT_BINS
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or not 1 <= bins <= 10**6:
        raise ValidationError(f"bins must be an integer from 1 to 1,000,000, not {bins!r}.")
    return int(bins)


def _check_cells(size: int, bins: int) -> None:
    if size * bins > HISTOGRAM_CELLS:
        raise ValidationError(
            f"histogram mode with {size:,} subpopulations x {bins:,} bins = {size * bins:,} "
            f"cells exceeds the budget of {HISTOGRAM_CELLS:,}: use at most "
            f"{max(HISTOGRAM_CELLS // size, 1):,} bins, fewer subpopulations, or exact mode.")


class HistogramAccumulator:
    r"""Per-(subpopulation, bin) sums of histogram mode, from batches of rows in any order.

    Parameters
    ----------
    plan : MembershipPlan
    lo, scale : float
        Bin of a score: ``min(floor((S - lo) * scale), bins - 1)``.
    bins : int

    Notes
    -----
    Sums are dense arrays of shape (6, l * bins) (count, :math:`\sum W`, :math:`\sum W(R-S)`,
    its positive and negative parts, :math:`\sum S(1-S)W^2`); each batch adds one bincount per
    group of gathered members, so a row costs one gather per subpopulation it belongs to.
    Partial accumulators (e.g. Spark partitions) add up: :meth:`merge`.
    """

    def __init__(self, plan: MembershipPlan, lo: float, scale: float, bins: int) -> None:
        _check_cells(len(plan.specs), bins)
        self.plan, self.lo, self.scale, self.bins = plan, float(lo), float(scale), int(bins)
        self.sums = np.zeros((6, len(plan.specs) * self.bins))

    def add(self, score, label, weight, columns) -> None:
        """Add a batch (score, 0/1 label, weight or None, the plan's covariate columns)."""
        score = np.asarray(score, dtype=float)
        if score.size:
            self.add_members(self.plan.members(columns, score.size), score, label, weight)

    def add_members(self, members: Sequence[np.ndarray], score, label, weight) -> None:
        """Add a batch whose members per spec are already known (positions in the batch)."""
        score = np.asarray(score, dtype=float)
        weight = np.ones(score.size) if weight is None else np.asarray(weight, dtype=float)
        diff = weight * (np.asarray(label, dtype=float) - score)
        values = np.stack([np.ones(score.size), weight, diff, np.maximum(diff, 0.0),
                           np.maximum(-diff, 0.0), score * (1.0 - score) * weight**2])
        binned = np.minimum(np.floor((score - self.lo) * self.scale).astype(np.int64),
                            self.bins - 1)
        sizes = np.array([m.size for m in members], dtype=np.int64)
        first = 0
        while first < len(members):  # groups of about 2^20 gathered members
            last = first + max(int(np.searchsorted(np.cumsum(sizes[first:]), 1 << 20)), 1)
            last = min(last, len(members))
            rows = np.concatenate(members[first:last]).astype(np.intp, copy=False)
            key = np.repeat(np.arange(last - first) * self.bins, sizes[first:last]) + binned[rows]
            span = (last - first) * self.bins
            target = self.sums[:, first * self.bins:last * self.bins]
            for j in range(6):
                target[j] += np.bincount(key, weights=values[j, rows], minlength=span)
            first = last

    def merge(self, sums: np.ndarray) -> None:
        """Add the sums of another accumulator over other rows (same plan and bins)."""
        self.sums += sums

    def summaries(self) -> BinSummaries:
        """Return the non-empty cells, sorted by position then bin."""
        present = np.flatnonzero(self.sums[0] > 0)
        s = self.sums[:, present]
        return BinSummaries(position=present // self.bins, bin=present % self.bins,
                            count=np.rint(s[0]).astype(np.int64), weight=s[1], diff=s[2],
                            positive=s[3], negative=s[4], variance=s[5])


def rows_in_files(files) -> int | None:
    """Return the rows the Parquet footers count over ``files`` (None: a footer unreadable).

    No row is read (the footers only): the engine's own read says what is wrong with a file.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    total = 0
    for name in files:
        try:
            total += int(pq.ParquetFile(name).metadata.num_rows)
        except (OSError, ValueError, TypeError, pa.ArrowException):
            return None
    return total


def arrow_blocks(batches, rows: int):
    """Regroup an iterator of pyarrow record batches into tables of at least ``rows`` rows.

    Readers hand out batches of their own size (DuckDB about 122,880 rows, Spark 10,000 by
    default); the evaluator's per-subpopulation work per batch is fixed, so fewer, larger
    blocks cost less. The last table may be shorter; empty batches are skipped.
    """
    import pyarrow as pa

    pending, count = [], 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(pending).combine_chunks()
            pending, count = [], 0
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()


def arrow_columns(table, names: dict[str, str]) -> dict[str, pd.Series]:
    """Covariate columns of a pyarrow batch or table as Series whose kind is stable by batch.

    ``names`` maps each covariate to its column in ``table`` (e.g. an alias of the query).

    Text becomes categorical (one dictionary per batch), booleans the nullable ``boolean`` dtype
    and integers float (a batch with a null would otherwise turn an int column into float or a
    bool column into objects, and the membership plan into another kind of comparison).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for name, alias in names.items():
        column = table.column(alias)
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            series = pc.dictionary_encode(column).to_pandas()
        elif pa.types.is_boolean(kind):
            series = column.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
        elif pa.types.is_integer(kind):
            series = pc.cast(column, pa.float64()).to_pandas()
        else:
            series = column.to_pandas()
        out[name] = series.reset_index(drop=True) if isinstance(series, pd.Series) else (
            pd.Series(series))
    return out


def _group_max(values: np.ndarray, position: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, -np.inf)
    np.maximum.at(out, position, values)
    return out


def _group_min(values: np.ndarray, position: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, np.inf)
    np.minimum.at(out, position, values)
    return out


def _path_bounds(s: BinSummaries, size: int) -> dict[str, np.ndarray]:
    """Per-cell running sums at bin starts and ends and per-position totals (unnormalised)."""
    position = s.position
    starts = np.searchsorted(position, np.arange(size), side="left")
    present = np.searchsorted(position, np.arange(size), side="right") > starts
    total_diff = np.cumsum(s.diff)
    offset = np.zeros(size)
    first = starts[present]
    offset[present] = total_diff[first] - s.diff[first]
    end = total_diff - offset[position]  # running sum at each bin end
    weight = np.bincount(position, weights=s.weight, minlength=size)
    return {"end": end, "start": end - s.diff, "weight": weight}


def finish_screen(
    engine: str,
    specs: Sequence[SubpopulationSpec],
    summaries: BinSummaries,
    *,
    bins: int,
    n: int,
    n_dropped: int,
) -> ScreenResult:
    """Turn histogram-mode bin summaries into a ScreenResult (K_hist and its bound)."""
    size = len(specs)
    p = _path_bounds(summaries, size)
    position = summaries.position
    weight = p["weight"]
    count = np.bincount(position, weights=summaries.count, minlength=size).astype(np.int64)
    variance = np.bincount(position, weights=summaries.variance, minlength=size)
    high = np.maximum(_group_max(p["end"], position, size), 0.0)
    low = np.minimum(_group_min(p["end"], position, size), 0.0)
    high_upper = np.maximum(_group_max(p["start"] + summaries.positive, position, size), 0.0)
    low_lower = np.minimum(_group_min(p["start"] - summaries.negative, position, size), 0.0)
    kuiper = np.asarray(safe_ratio(high - low, weight), dtype=float)  # eq. (2) at bin ends
    upper = np.asarray(safe_ratio(high_upper - low_lower, weight), dtype=float)
    return assemble_result(engine, specs, count=count, weight=weight, variance=variance,
                           kuiper=kuiper, bound=np.maximum(upper - kuiper, 0.0), bins=bins, n=n,
                           n_dropped=n_dropped)


def assemble_result(
    engine: str,
    specs: Sequence[SubpopulationSpec],
    *,
    count: np.ndarray,
    weight: np.ndarray,
    variance: np.ndarray,
    kuiper: np.ndarray,
    bound: np.ndarray | None,
    bins: int,
    n: int,
    n_dropped: int,
) -> ScreenResult:
    """Sigma (eq. (5)), normalised Kuiper values and M (eq. (4)) from per-subpopulation sums.

    ``bound`` is None in exact mode, else the additive bound of each Kuiper value.
    """
    size = len(specs)
    exact = bound is None
    bound = np.zeros(size) if bound is None else bound
    sigma = np.asarray(sigma_from_variance(variance, weight), dtype=float)  # eq. (5)
    kuiper = np.asarray(kuiper, dtype=float)
    kuiper_z = np.asarray(safe_ratio(kuiper, sigma), dtype=float)
    value = multicalibration_metric(kuiper, sigma)  # eq. (4); row 0 is the full population
    normalized, argmax, metric = value.normalized, value.argmax, value.metric
    sigma0 = float(sigma[0])
    metric_bound = None if exact else float(max(
        normalized_kuiper(kuiper + bound, sigma).max() - metric, 0.0))
    table = pd.DataFrame({
        "id": np.array([s.id for s in specs], dtype=np.int64),
        "depth": np.array([s.depth for s in specs], dtype=np.int64),
        "description": pd.array([s.description for s in specs], dtype=object),
        "size": np.asarray(count, dtype=np.int64),
        "weight_total": np.asarray(weight, dtype=float),
        "kuiper": np.asarray(kuiper, dtype=float),
        "kuiper_bound": bound,
        "sigma": sigma,
        "kuiper_z": kuiper_z,
        "normalized": normalized,
    })
    return ScreenResult(
        engine=engine, exact=exact, bins=bins, n=int(n), n_dropped=int(n_dropped),
        weight_total=float(weight[0]), metric=metric,
        metric_bound=metric_bound, sigma0=sigma0, argmax=argmax, table=table,
    )


def expand_paths(path_or_glob: str | Path | Sequence[str | Path]) -> tuple[str, ...]:
    """Files named by a path, a glob or a list of them (sorted; error when none match)."""
    items = [path_or_glob] if isinstance(path_or_glob, str | Path) else list(path_or_glob)
    files: list[str] = []
    for item in items:
        text = str(item)
        if any(ch in text for ch in "*?["):
            matched = sorted(glob.glob(text))  # noqa: PTH207 - absolute patterns too
            if not matched:
                raise ValidationError(f"no file matches {text!r}.")
            files.extend(matched)
        elif Path(text).is_dir():
            matched = sorted(str(p) for p in Path(text).glob("*.parquet"))
            if not matched:
                raise ValidationError(f"directory {text!r} holds no .parquet file.")
            files.extend(matched)
        else:
            if not Path(text).exists():
                raise ValidationError(f"file {text!r} does not exist.")
            files.append(text)
    return tuple(files)
