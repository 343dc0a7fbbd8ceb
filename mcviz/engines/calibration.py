r"""The calibration block of ``mcviz metrics`` from score-sorted batches (DuckDB and Spark).

The cumulative differences of eq. (1) of [1] along the score, :math:`C_k = \sum_{j \le k} W_j
(R_j - S_j) / \sum_j W_j` at the origin and at the end of every run of tied scores, give the
Kuiper range :math:`D = \max C - \min C` and :math:`G = \max |C|` (eq. (2)); :math:`\sigma` is
eq. (5), :math:`\sqrt{\sum W^2 S(1-S)} / \sum W`, and :math:`p` the Brownian-range tail of
:math:`D/\sigma` (eq. (3)). :class:`PathAccumulator` keeps only the running sum, the path's
largest and smallest values so far and the last row of the previous batch (a tie run may
straddle two batches: its end is known when the next batch's first score differs), so one pass
over the rows sorted by score (DuckDB sorts out of core) gives the statistics exactly, in
memory of one batch. On Spark (:func:`spark_calibration_block`) each range partition of the
score (a tie run never straddles two: :func:`~mcviz.engines.spark_engine.check_partitions`)
returns its accumulator's sum and extremes, and the driver chains them in score order (the
path's extremes are each partition's extremes shifted by the sums before it). The numbers
equal :func:`mcviz.cumulative_differences`' up to the order of floating-point additions
(``tests/engines/test_metrics_engines.py``: 1e-12). Binary responses only (eq. (5)).

The classical measures (ECE, smECE, ICI, Hosmer-Lemeshow, ...) come from
:func:`score_runs_table`: one ``GROUP BY`` of the rows by their score (by fine score bins when
there are more distinct scores than ``limit``), whose sums
:func:`mcviz.stats.measures.runs.classical_from_runs` turns into the in-memory numbers.

References
----------
.. [1] I. Guy et al., "Measuring multi-calibration", 2025; eqs. (1)-(3), (5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcviz.core.brownian import brownian_range_sf
from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import sigma_from_variance

__all__ = ["KEY", "STEP", "VARIANCE", "PathAccumulator", "PopulationCalibration", "RunSums",
           "calibration_block", "comparison_sums_table", "finding_counts_table",
           "finding_runs_table",
           "level_sums_table",
           "population_calibration", "score_runs_table",
           "spark_calibration_block", "spark_ordered_path"]


class PathAccumulator:
    """Running statistics of the cumulative path over batches of rows sorted by score."""

    def __init__(self) -> None:
        self.total = 0.0  # sum of W (R - S) so far
        self.high = 0.0  # the path's extremes so far (times the total weight), origin included
        self.low = 0.0
        self.pending: tuple[float, float] | None = None  # (score, running sum) of the last row
        self.weight = 0.0
        self.variance = 0.0
        self.rows = 0

    def _see(self, values: np.ndarray) -> None:
        if values.size:
            self.high = max(self.high, float(values.max()))
            self.low = min(self.low, float(values.min()))

    def add(self, score: np.ndarray, label: np.ndarray, weight: np.ndarray | None) -> None:
        """Take the next batch (scores ascending, continuing the previous batch)."""
        if score.size == 0:
            return
        self.add_steps(*_calibration_steps(score, label, weight))

    def add_steps(self, key: np.ndarray, step: np.ndarray, weight: float,
                  variance: float) -> None:
        r"""Take the next batch of path steps in ascending ``key`` (ties: equal keys).

        ``step`` is each row's step of the path (times the total weight), ``weight`` and
        ``variance`` the batch's sums of :math:`W` and of the terms of :math:`\sigma^2`.
        """
        if key.size == 0:
            return
        steps = self.total + np.cumsum(step)
        if self.pending is not None and key[0] != self.pending[0]:
            self._see(np.array([self.pending[1]]))  # the previous batch ended a tie run
        self._see(steps[:-1][key[1:] != key[:-1]])
        self.pending = (float(key[-1]), float(steps[-1]))
        self.total = float(steps[-1])
        self.weight += weight
        self.variance += variance
        self.rows += key.size

    def finish(self) -> dict:
        """Return kuiper, ks, sigma, kuiper_z and p_value (keys of the metrics JSON)."""
        if self.pending is not None:
            self._see(np.array([self.pending[1]]))
        kuiper = float(safe_ratio(self.high - self.low, self.weight))
        ks = float(safe_ratio(max(abs(self.high), abs(self.low)), self.weight))
        sigma = float(sigma_from_variance(self.variance, self.weight))  # eq. (5)
        z = float(safe_ratio(kuiper, sigma))
        return {"kuiper": kuiper, "ks": ks, "sigma": sigma, "kuiper_z": z,
                "p_value": float(brownian_range_sf(z))}


@dataclass(frozen=True, slots=True)
class PopulationCalibration:
    r"""The full population's calibration from an engine's exact screen (eqs. (1)-(3), (5)).

    The numbers of :func:`calibration_block` (``mcviz metrics --engine``) from the screen's
    full population row: its :math:`D` is the range of the same path at the origin and every
    tie-run end, :math:`\sigma` eq. (5), ``p_value`` the Brownian-range tail of
    :math:`D/\sigma`. No path is kept (a verdict says no score band of the largest gap).
    """

    n: int
    weight_total: float
    kuiper: float
    sigma: float
    kuiper_z: float
    p_value: float


def population_calibration(screen) -> PopulationCalibration:
    """Read the full population's calibration from an exact :class:`ScreenResult` (row 0)."""
    row = screen.table.iloc[0]
    if row["depth"] != 0 or not screen.exact:
        raise ValueError("the screen's first row must be the full population, measured exactly")
    z = float(row["kuiper_z"])
    return PopulationCalibration(n=int(row["size"]), weight_total=float(row["weight_total"]),
                                 kuiper=float(row["kuiper"]), sigma=float(row["sigma"]),
                                 kuiper_z=z, p_value=float(brownian_range_sf(z)))


def calibration_block(engine) -> tuple[int, float, dict]:
    """Stream ``engine``'s rows sorted by score; return rows, total weight and the statistics.

    ``engine`` is a :class:`~mcviz.engines.duckdb_engine.DuckDBEngine` (validated rows).
    """
    from mcviz.core.membership import MembershipPlan

    engine.overview()  # every row checked once (invalid rows: an error with their counts)
    accumulator = PathAccumulator()
    for score, label, weight, _ in engine._batches(MembershipPlan(()), ordered=True):
        accumulator.add(score, label, weight)
    return accumulator.rows, accumulator.weight, accumulator.finish()


def _calibration_steps(score: np.ndarray, label: np.ndarray,
                       weight: np.ndarray | None) -> tuple:
    """Return eq. (1)'s steps of sorted rows: (key, step, sum of W, sum of eq. (5)'s terms)."""
    w = np.ones(score.size) if weight is None else weight
    return score, w * (label - score), float(w.sum()), float(np.sum(score * (1.0 - score) * w**2))


_PARTS = "lo DOUBLE, hi DOUBLE, total DOUBLE, high DOUBLE, low DOUBLE, weight DOUBLE, " \
    "variance DOUBLE, rows LONG"

KEY, STEP, VARIANCE = "__mcviz_key", "__mcviz_step", "__mcviz_variance"
"""Columns of a frame of path steps (:func:`spark_ordered_path`)."""


def _score_batch(weighted: bool, batch) -> tuple:
    from mcviz.engines import sql

    return _calibration_steps(batch.column(sql.S).to_numpy(), batch.column(sql.R).to_numpy(),
                              batch.column(sql.W).to_numpy() if weighted else None)


def _step_batch(batch) -> tuple:
    from mcviz.engines import sql

    return (batch.column(KEY).to_numpy(), batch.column(STEP).to_numpy(),
            float(batch.column(sql.W).to_numpy().sum()),
            float(batch.column(VARIANCE).to_numpy().sum()))


def _partition_path(read, batches):
    """Executor side: one sorted partition's path statistics, as one row."""
    import pyarrow as pa

    accumulator = PathAccumulator()
    low_key, high_key = float("nan"), float("nan")
    for batch in batches:
        if batch.num_rows == 0:
            continue
        key, step, weight, variance = read(batch)
        if accumulator.rows == 0:
            low_key = float(key[0])
        high_key = float(key[-1])
        accumulator.add_steps(key, step, weight, variance)
    if accumulator.rows:
        if accumulator.pending is not None:
            accumulator._see(np.array([accumulator.pending[1]]))
        yield pa.RecordBatch.from_pydict(
            {"lo": [low_key], "hi": [high_key], "total": [accumulator.total],
             "high": [accumulator.high], "low": [accumulator.low],
             "weight": [accumulator.weight], "variance": [accumulator.variance],
             "rows": [accumulator.rows]},
            schema=pa.schema([(name, pa.float64()) for name in
                              ("lo", "hi", "total", "high", "low", "weight", "variance")]
                             + [("rows", pa.int64())]))


def _chained(ranged, read) -> PathAccumulator:
    """Run :func:`_partition_path` on each sorted range partition; chain them in key order."""
    from functools import partial

    from mcviz.engines.spark_engine import check_partitions

    parts = sorted(ranged.mapInArrow(partial(_partition_path, read), _PARTS).collect(),
                   key=lambda r: r["lo"])
    check_partitions([(r["lo"], r["hi"], r["rows"]) for r in parts])
    total = PathAccumulator()
    for part in parts:  # the path continues from the sum of the partitions before
        total.high = max(total.high, total.total + part["high"])
        total.low = min(total.low, total.total + part["low"])
        total.total += part["total"]
        total.weight += part["weight"]
        total.variance += part["variance"]
        total.rows += part["rows"]
    return total


def spark_calibration_block(engine) -> tuple[int, float, dict]:
    """Return rows, total weight and the statistics from ``engine``'s range partitions.

    ``engine`` is a :class:`~mcviz.engines.spark_engine.SparkEngine`.
    """
    from functools import partial

    from mcviz.core.membership import MembershipPlan
    from mcviz.engines import sql

    engine.overview()
    frame = engine._rows(MembershipPlan(()))
    ranged = frame.repartitionByRange(engine._partition_count(), sql.S).sortWithinPartitions(sql.S)
    total = _chained(ranged, partial(_score_batch, engine.columns.weight is not None))
    return total.rows, total.weight, total.finish()


def spark_ordered_path(engine, frame) -> tuple[int, float, dict]:
    """Return rows, total weight and the path statistics of a Spark frame of path steps.

    ``frame`` has the columns :data:`KEY` (the ordering variable), :data:`STEP`,
    :data:`VARIANCE` and the weight ``mcviz.engines.sql.W``; it is range-partitioned by the
    key (a tie run never straddles two partitions) and chained as the score's path is.
    """
    ranged = frame.repartitionByRange(engine._partition_count(), KEY).sortWithinPartitions(KEY)
    total = _chained(ranged, _step_batch)
    return total.rows, total.weight, total.finish()


_RUN_SUMS = ("n", "w", "wr", "ww", "ws", "lo", "hi", "se", "ll", "sn", "sv")


def fine_bins(limit: int) -> int:
    """Fine bins per ECE bin of :func:`score_runs_table` above ``limit`` distinct scores."""
    return max(limit // 100, 1) * 10


class RunSums:
    r""":func:`score_runs_table`'s sums from rows streamed in ascending score (a sorted pass).

    For a pass that sorts the rows by score anyway (``mcviz compare --engine``: each model's
    calibration path), so that its ``GROUP BY`` is not needed. A run is a distinct score, or with
    ``binned`` the same fine bin as the ``GROUP BY``'s (the same double arithmetic): the rows of
    a run are consecutive in score order, so each batch's runs are ``np.add.reduceat`` sums and a
    run crossing a batch end is joined in :meth:`finish`. Memory: the runs' sums, as the
    ``GROUP BY``'s result.
    """

    def __init__(self, *, binned: bool, limit: int, weighted: bool) -> None:
        self.per_coarse = fine_bins(limit) if binned else None
        self.weighted = weighted
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.totals = np.zeros(4)  # se, ll, sn, sv

    def _keys(self, s: np.ndarray) -> np.ndarray:
        if self.per_coarse is None:
            return s
        c = np.zeros(s.size, dtype=np.int64)
        for k in range(1, 10):
            c += s > k / 10
        low = c.astype(float) / 10.0
        sub = np.ceil((s - low) * (10.0 * self.per_coarse)).astype(np.int64) - 1
        return c * self.per_coarse + np.clip(sub, 0, self.per_coarse - 1)

    def add(self, s: np.ndarray, r: np.ndarray, w: np.ndarray) -> None:
        """Take the next batch (scores ascending, continuing the previous batch)."""
        if s.size == 0:
            return
        k = self._keys(s)
        starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
        ends = np.append(starts[1:], s.size) - 1
        wr = w * r
        self.parts.append((k[starts], (ends - starts + 1).astype(float),
                           *(np.add.reduceat(v, starts) for v in (w, wr, w * w, w * s)),
                           s[starts], s[ends]))
        clipped = np.clip(s, 1e-15, 1.0 - 1e-15)
        tilt = 1.0 - 2.0 * s
        self.totals += (float((w * (s - r) ** 2).sum()),
                        float((wr * np.log(clipped) + (w - wr) * np.log(1.0 - clipped)).sum()),
                        float((w * (r - s) * tilt).sum()),
                        float((w * w * tilt * tilt * s * (1.0 - s)).sum()))

    def finish(self) -> dict:
        """Return the keyword arguments of :class:`~mcviz.stats.measures.runs.ScoreRuns`."""
        k, n, w, wr, ww, ws, lo, hi = (np.concatenate(c) for c in zip(*self.parts, strict=True))
        starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
        n, w, wr, ww, ws = (np.add.reduceat(v, starts) for v in (n, w, wr, ww, ws))
        lo, hi = np.minimum.reduceat(lo, starts), np.maximum.reduceat(hi, starts)
        score = lo if self.per_coarse is None else np.clip(ws / w, lo, hi)
        se, ll, sn, sv = (float(v) for v in self.totals)
        return {"score": score, "count": n.astype(np.int64), "weight": w, "positive": wr,
                "square_weight": ww, "square_error": se, "log_likelihood": ll,
                "spiegelhalter_numerator": sn, "spiegelhalter_variance": sv,
                "weighted": self.weighted,
                "bins": None if self.per_coarse is None else 10 * self.per_coarse,
                "bin_index": None if self.per_coarse is None else k[starts]}


def score_runs_table(table, columns, *, limit: int, conditions: tuple = (),
                     binned: bool | None = None) -> dict:
    r"""Return the rows' sums per distinct score, or per fine score bin (one aggregate pass).

    ``table`` is a :class:`mcviz.engines.tables.Table` (rows checked first, as the screening
    checks them). With at most ``limit`` distinct scores (counted approximately first, so up to
    a few per cent more may come back) each run is one distinct score; otherwise the runs are
    about ``limit`` equal-width bins nested in the ECE's 10 (:mod:`mcviz.stats.measures.runs`;
    a multiple of 10 per ECE bin), each at its weighted mean score (kept within its rows'
    range) and with its bin's number (``bin_index``: bin :math:`k` holds the scores in
    :math:`(k h, (k + 1) h]`, the first also 0). Returns the keyword arguments of
    :class:`~mcviz.stats.measures.runs.ScoreRuns` (arrays ascending by score).

    ``conditions`` (a subpopulation's, as SQL: :func:`~mcviz.subpopulations.sql.predicate_sql`)
    sum only its rows (their distinct scores counted, the table's rows checked once before);
    ``binned`` given (the full population's choice) groups by distinct scores or by the same
    fine bins without counting.
    """
    from mcviz.engines import sql

    if binned is None:
        q = table.query()
        if not conditions:
            overview = table.frame(q, sql.overview_sql(columns, table.kinds, q,
                                                       table.source)).iloc[0]
            sql.read_overview(overview, columns, table.kinds, drop_invalid=False)
            q = table.query()
        s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
        # Spark's default relative error is 5% (10^6 distinct scores were once counted above
        # 2^20); 1% there, DuckDB's HyperLogLog as it is
        accuracy = f", {q.bind(0.01)}" if table.dialect.name == "spark" else ""
        distinct = table.frame(q, f"SELECT approx_count_distinct({s}{accuracy}) AS d FROM "
                               f"{_rows_of(table, q, conditions)}")
        binned = int(distinct["d"].iloc[0]) > limit
    q = table.query()
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    r = sql.response_sql(columns, table.kinds, q)
    w = "1.0" if columns.weight is None else f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)"
    source = _rows_of(table, q, conditions)
    if binned:
        # a multiple of 10 per ECE bin: the fine bins nest in 20 and 50 equal-width bins too
        per_coarse = fine_bins(limit)
        edges = " + ".join(f"CASE WHEN s > {q.bind(k / 10)} THEN 1 ELSE 0 END"
                           for k in range(1, 10))
        low = f"CAST(c AS DOUBLE) / {q.bind(10.0)}"
        # the fine bin within its ECE bin (c/10, (c+1)/10]: ceil of the share of the width
        sub = (f"LEAST(GREATEST(CAST(CEIL((s - {low}) * {q.bind(10.0 * per_coarse)}) AS BIGINT)"
               f" - 1, 0), {q.bind(per_coarse - 1)})")
        inner = (f"SELECT s, r, w, c * {q.bind(per_coarse)} + {sub} AS k FROM (SELECT s, r, w, "
                 f"{edges} AS c FROM (SELECT {s} AS s, {r} AS r, {w} AS w FROM {source}) "
                 "a) b")
    else:
        inner = f"SELECT s, r, w, s AS k FROM (SELECT {s} AS s, {r} AS r, {w} AS w FROM " \
                f"{source}) a"
    clip_low, clip_high = q.bind(1e-15), q.bind(1.0 - 1e-15)
    clipped = f"LEAST(GREATEST(s, {clip_low}), {clip_high})"
    parts = ["COUNT(*) AS n", "SUM(w) AS w", "SUM(w * r) AS wr", "SUM(w * w) AS ww",
             "SUM(w * s) AS ws", "MIN(s) AS lo", "MAX(s) AS hi",
             "SUM(w * (s - r) * (s - r)) AS se",
             f"SUM(w * (r * LN({clipped}) + (1.0 - r) * LN(1.0 - {clipped}))) AS ll",
             "SUM(w * (r - s) * (1.0 - 2.0 * s)) AS sn",
             "SUM(w * w * (1.0 - 2.0 * s) * (1.0 - 2.0 * s) * s * (1.0 - s)) AS sv",
             f"{'MIN(k)' if binned else '0'} AS kb"]
    frame = table.large_frame(q, f"SELECT {', '.join(parts)} FROM ({inner}) t GROUP BY k")
    values = {name: frame[name].to_numpy(dtype=float) for name in _RUN_SUMS}
    order = np.argsort(values["lo"], kind="stable")  # runs never overlap: by their lowest score
    values = {name: v[order] for name, v in values.items()}
    if binned:  # each bin at its weighted mean score, within its rows' range
        score = np.clip(values["ws"] / values["w"], values["lo"], values["hi"])
    else:
        score = values["lo"]
    return {"score": score, "count": values["n"].astype(np.int64), "weight": values["w"],
            "positive": values["wr"], "square_weight": values["ww"],
            "square_error": float(values["se"].sum()),
            "log_likelihood": float(values["ll"].sum()),
            "spiegelhalter_numerator": float(values["sn"].sum()),
            "spiegelhalter_variance": float(values["sv"].sum()),
            "weighted": columns.weight is not None,
            "bins": 10 * fine_bins(limit) if binned else None,
            "bin_index": (frame["kb"].to_numpy(dtype=np.int64)[order] if binned else None)}


def finding_runs_table(table, columns, conditions: tuple) -> dict:
    r"""Return a subpopulation's rows summed per distinct score: what its deviation reads.

    One ``GROUP BY`` of the score over the rows meeting ``conditions`` (as
    :func:`score_runs_table` takes them), ordered by the engine, of only the sums
    :func:`~mcviz.stats.deviation.deviation_from_runs` (paper 003 eqs. (5)-(8), (21)), the
    reliability diagrams, the cumulative path and the LCS read from a run: its score, rows and
    :math:`\sum W R`, and with a weight column :math:`\sum W` and :math:`\sum W^2` (without
    one both equal the rows, and ``square_weight`` is ``weight``). The totals of the classical
    measures are not read (NaN). Returns the keyword arguments of
    :class:`~mcviz.stats.measures.runs.ScoreRuns` (``bins`` None: exact).
    """
    from mcviz.engines import sql

    q = table.query()
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    r = sql.response_sql(columns, table.kinds, q)
    weighted = columns.weight is not None
    w = f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)" if weighted else None
    parts = ["COUNT(*) AS n", "SUM(r) AS wr" if w is None else "SUM(w * r) AS wr",
             *(["SUM(w) AS w", "SUM(w * w) AS ww"] if weighted else [])]
    inner = (f"SELECT {s} AS s, {r} AS r{'' if w is None else f', {w} AS w'} FROM "
             f"{_rows_of(table, q, conditions)}")
    frame = table.large_frame(q, f"SELECT s, {', '.join(parts)} FROM ({inner}) a GROUP BY s "
                                 "ORDER BY s")
    count = frame.pop("n").to_numpy(dtype=np.int64)
    arrays = {name: frame.pop(name).to_numpy(dtype=float)
              for name in ("s", "wr", *(("w", "ww") if weighted else ()))}
    del frame
    weight = arrays["w"] if weighted else count.astype(float)
    nan = float("nan")
    return {"score": arrays["s"], "count": count, "weight": weight, "positive": arrays["wr"],
            "square_weight": arrays["ww"] if weighted else weight, "square_error": nan,
            "log_likelihood": nan, "spiegelhalter_numerator": nan,
            "spiegelhalter_variance": nan, "weighted": weighted, "bins": None,
            "bin_index": None}


def _rows_of(table, q, conditions: tuple) -> str:
    """Return the relation of the table's rows, or of those meeting ``conditions``."""
    if not conditions:
        return table.source
    from mcviz.subpopulations.sql import predicate_sql

    return (f"(SELECT * FROM {table.source} WHERE "
            f"{predicate_sql(tuple(conditions), table.kinds, q)}) f")


def finding_counts_table(table, columns, conditions: tuple) -> list[tuple[int, int]]:
    r"""Return each subpopulation's rows and (approximate) distinct scores, in one scan.

    ``conditions``: one tuple of conditions per subpopulation (as
    :func:`score_runs_table` takes them). One aggregate over every row, a ``COUNT`` and an
    ``approx_count_distinct`` of the score per subpopulation (``CASE WHEN`` its ``WHERE``),
    instead of two scans per subpopulation: what :func:`score_runs_table` needs to choose its
    runs (``binned``) and the report its memory reserve.
    """
    from mcviz.subpopulations.sql import predicate_sql

    if not conditions:
        return []
    q = table.query()
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    accuracy = f", {q.bind(0.01)}" if table.dialect.name == "spark" else ""  # as above
    parts = []
    for i, found in enumerate(conditions):
        where = predicate_sql(tuple(found), table.kinds, q)
        parts += [f"COUNT(CASE WHEN {where} THEN 1 END) AS n{i}",
                  f"approx_count_distinct(CASE WHEN {where} THEN {s} END{accuracy}) AS d{i}"]
    row = table.frame(q, f"SELECT {', '.join(parts)} FROM {table.source}").iloc[0]
    return [(int(row[f"n{i}"]), min(int(row[f"d{i}"]), int(row[f"n{i}"])))
            for i in range(len(conditions))]


def comparison_sums_table(table, columns, edges: np.ndarray, *, full_runs=None,
                          interval=None) -> tuple[np.ndarray, ...]:
    r"""Return every row's count, :math:`\sum W` and :math:`\sum W R` in the bins of eq. (7).

    Bin :math:`k` holds the rows with :math:`B_k < S \le B_{k+1}` (:math:`B_0 = -\infty`, the
    ``edges`` :math:`B_1 < \dots < B_{q-1}` from
    :func:`~mcviz.stats.deviation.deviation_edges`, :math:`B_q = \infty`; paper 003 eqs.
    (6)-(7), the comparison of :func:`~mcviz.stats.deviation.deviation_from_runs`), each
    row's :math:`k` the number of edges below its score. The edges are written as Parquet and
    read back by the engine. DuckDB: an ``ASOF LEFT JOIN`` of each row to the largest edge
    below its score, then a ``GROUP BY`` of the bin, in the passes of
    :func:`comparison_passes` (one when the join fits DuckDB's ``memory_limit``, or no
    ``full_runs``: the full population's fine bins, that say where the rows lie). Spark (no
    ASOF join): the rows and the
    edges in one relation cut into cells of the score (:data:`COMPARISON_CELLS` equal-width
    cells, a window per cell: distributed, no global sort, no Python over rows); in its cell,
    ordered by score with a row before an edge of the same value, a row takes the last edge
    before it (``last(k, true)``), and a row with none in its cell the count of the edges in
    the cells below (computed here from the same ``FLOOR(b * cells)``). Binary responses.

    ``interval``: the finding's runs when its conditions bound the score alone (an interval
    of it: every row at its scores is its row). Then no row is joined: a row of an inner bin
    (:math:`S_k \le B_k < S \le B_{k+1} < S_{k+2}`) lies between two of its scores, so in
    the interval, so at one of its scores, :math:`S_{k+1}`: the inner bins are its runs, and
    only the two end bins are summed (a ``WHERE`` and an aggregate each; any engine).
    """
    import itertools
    import uuid
    from pathlib import Path

    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mcviz.engines import sql

    edges = np.asarray(edges, dtype=float)
    path = Path(getattr(table, "temp_directory", None) or _spill_directory()) / \
        f"mcviz-edges-{uuid.uuid4().hex}.parquet"
    pq.write_table(pa.table({"k": np.arange(1, edges.size + 1, dtype=np.int64), "b": edges}),
                   path)
    try:
        def rows(q) -> str:
            s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
            r = sql.response_sql(columns, table.kinds, q)
            w = ("1.0" if columns.weight is None
                 else f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)")
            return f"(SELECT {s} AS s, {r} AS r, {w} AS w FROM {table.source}) t"

        if interval is not None:  # a score interval: the inner bins are its runs
            m = edges.size
            parts = itertools.chain(_asof_comparison(
                table, rows, "", edges, [(0, 0), (m, m)] if m else [(0, 0)],
                weighted=columns.weight is not None), [(np.arange(1, m), pd.DataFrame(
                    {"n": interval.count[1:m], "w": interval.weight[1:m],
                     "wr": interval.positive[1:m]}))])
        elif table.dialect.name == "duckdb":
            parts = _asof_comparison(table, rows, table.relation(path), edges, comparison_passes(
                edges, full_runs, _join_budget(table)), weighted=columns.weight is not None)
        else:  # one part file at a time (issue #44: the whole frame peaked the driver)
            q = table.query()
            parts = _cell_comparison(table, q, rows(q), table.relation(path), edges)
        out = tuple(np.zeros(edges.size + 1, dtype=kind) for kind in (np.int64, float, float))
        for k, frame in parts:
            for array, name in zip(out, ("n", "w", "wr"), strict=True):
                np.add.at(array, k, frame.pop(name).to_numpy(dtype=array.dtype))
            del k, frame
    finally:
        _remove(path)
    return out


def _join_budget(table) -> int | None:
    """Bytes of DuckDB's ``memory_limit`` beyond its floor (None: no limit, one pass)."""
    limit = getattr(table, "memory_limit", None)
    if limit is None:
        return None
    from mcviz.budget import parse_bytes
    from mcviz.engines.memory import DUCKDB_FLOOR

    return max(parse_bytes(limit) - DUCKDB_FLOOR, 0)


def comparison_passes(edges: np.ndarray, full_runs, budget: int | None
                      ) -> list[tuple[int, int]]:
    r"""Cut DuckDB's join of every row to the ``edges`` into passes that each fit ``budget``.

    A pass ``(a, b)`` sums the rows of the bins :math:`a \le k \le b` of
    :func:`comparison_sums_table` (:math:`B_a < S \le B_{b+1}`; no lower bound for
    :math:`a = 0`, no upper for :math:`b = q - 1`, :math:`q` = ``edges.size + 1``), the ASOF
    join's right side only those bins' edges (:math:`B_a, \dots, B_b`): a row never joins
    outside its pass, so the passes' sums, added by bin, are the one join's. Its need in
    DuckDB beyond the floor grows with its edges and its rows
    (:data:`~mcviz.engines.memory.FINDING_ENGINE_RUN_BYTES` and
    :data:`~mcviz.engines.memory.FINDING_ENGINE_ROW_BYTES` each, measured on the one join:
    10^8 rows ran out of memory in 304 MiB); a pass of one bin joins nothing (a ``WHERE``
    and an aggregate), so it fits in any share. The rows of a pass are bounded above from the
    full population's fine bins (``full_runs``: bin :math:`j` holds
    :math:`(j h, (j + 1) h]`, the first also the scores below; one fine bin more on each side
    for rounding), and the passes taken greedily in score order, each as many bins as
    ``budget`` holds: with every bin's edges and rows bounded by the budget, the memory of
    each pass is bounded independently of the table's rows (only the number of passes, each
    a scan of the score, grows with them). No budget or no fine bins: one pass.
    """
    from mcviz.engines.memory import FINDING_ENGINE_ROW_BYTES, FINDING_ENGINE_RUN_BYTES

    edges = np.asarray(edges, dtype=float)
    m = edges.size
    if budget is None or full_runs is None or getattr(full_runs, "bins", None) is None:
        return [(0, m)]
    bins = int(full_runs.bins)
    per_bin = np.zeros(bins, dtype=np.int64)
    np.add.at(per_bin, np.clip(np.asarray(full_runs.bin_index, dtype=np.int64), 0, bins - 1),
              np.asarray(full_runs.count, dtype=np.int64))
    below = np.concatenate(([0], np.cumsum(per_bin)))  # below[j]: rows of the bins < j
    at = np.floor(np.clip(edges, -1.0, 2.0) * bins).astype(np.int64)
    # rows with k <= j (S <= B_{j+1}): at most / at least; every row at k <= q - 1
    most = np.append(below[np.clip(at + 2, 1, bins)], below[-1])
    least = np.append(below[np.clip(at - 1, 0, bins - 1)], below[-1])
    cost = FINDING_ENGINE_ROW_BYTES * most + FINDING_ENGINE_RUN_BYTES * np.arange(m + 1)
    passes, first = [], 0
    while first <= m:
        base = 0 if first == 0 else (FINDING_ENGINE_ROW_BYTES * int(least[first - 1])
                                     + FINDING_ENGINE_RUN_BYTES * (first - 1))
        last = max(int(np.searchsorted(cost, base + budget, side="right")) - 1, first)
        passes.append((first, last))
        first = last + 1
    return passes


def _asof_comparison(table, rows, edge_relation: str, edges: np.ndarray,
                     passes: list[tuple[int, int]], *, weighted: bool):
    """Yield DuckDB's bins of eq. (7) per pass of :func:`comparison_passes` (each its frame).

    See :func:`comparison_sums_table`; ``rows(q)``: the rows' relation ``t`` (``s``, ``r``,
    ``w``). One pass: the one join of every row.
    """
    weight = "SUM(t.w)" if weighted else "COUNT(*)"
    sums = f"COUNT(*) AS n, {weight} AS w, SUM(t.w * t.r) AS wr"
    m = edges.size
    for first, last in passes:
        q = table.query()
        where = []
        if first > 0:
            where.append(f"t.s > {q.bind(float(edges[first - 1]))}")
        if last < m:
            where.append(f"(t.s <= {q.bind(float(edges[last]))}"
                         + (" OR t.s IS NULL)" if first == 0 else ")"))
        source = f"(SELECT * FROM {rows(q)} WHERE {' AND '.join(where)}) t" if where else rows(q)
        if first == last:  # one bin: no join
            frame = table.frame(q, f"SELECT {sums} FROM {source} HAVING COUNT(*) > 0")
            yield np.full(len(frame), first, dtype=np.int64), frame
        else:
            right = (edge_relation if (first, last) == (0, m) else
                     f"(SELECT k, b FROM {edge_relation} WHERE k BETWEEN "
                     f"{q.bind(max(first, 1))} AND {q.bind(last)})")
            frame = table.frame(q, f"SELECT COALESCE(e.k, 0) AS k, {sums} FROM {source} ASOF "
                                   f"LEFT JOIN {right} e ON t.s > e.b GROUP BY 1")
            yield frame.pop("k").to_numpy(dtype=np.int64), frame
        del frame


COMPARISON_CELLS = 1 << 20
"""Equal-width score cells of Spark's :func:`comparison_sums_table` (each a window of its rows
and edges; one output group per cell and edge at most)."""


def _cell_comparison(table, q, rows: str, edge_relation: str, edges: np.ndarray):
    """Yield Spark's bins of eq. (7) per part file: each group's bin, the frame of its sums.

    See the caller.
    """
    cells = q.bind(float(COMPARISON_CELLS))
    union = (f"SELECT s, r, w, 0 AS e, CAST(NULL AS BIGINT) AS k FROM {rows} UNION ALL "
             f"SELECT b AS s, 0.0 AS r, 0.0 AS w, 1 AS e, k FROM {edge_relation}")
    ordered = (f"SELECT c, e, r, w, last(k, true) OVER (PARTITION BY c ORDER BY s, e ROWS "
               "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS kk FROM (SELECT s, r, w, e, k, "
               f"CAST(FLOOR(s * {cells}) AS BIGINT) AS c FROM ({union}) u) v")
    edge_cells = np.floor(edges * float(COMPARISON_CELLS)).astype(np.int64)
    for frame in table.large_parts(q, f"SELECT c, kk, COUNT(*) AS n, SUM(w) AS w, "
                                      f"SUM(w * r) AS wr FROM ({ordered}) x WHERE e = 0 "
                                      "GROUP BY c, kk"):
        kk = frame.pop("kk").to_numpy(dtype=float, na_value=np.nan)
        below = np.searchsorted(edge_cells, frame.pop("c").to_numpy(dtype=np.int64),
                                side="left")
        yield np.where(np.isnan(kk), below, kk).astype(np.int64), frame
        del kk, below, frame


def _spill_directory() -> str:
    import tempfile

    return tempfile.gettempdir()


def _remove(path) -> None:
    """Remove a file or a directory Spark wrote."""
    import shutil

    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


_LEVEL_SUMS = ("n", "w", "ww", "we", "wp", "wwe", "wwp", "wwpp", "wwep")


def level_sums_table(table, columns, variable: str) -> tuple[tuple[str, ...], dict]:
    r"""Return the levels of a text column and the rows' sums per level (one ``GROUP BY``).

    The sums of :func:`mcviz.stats.variable_levels.level_calibration_from_sums` for binary
    rows: the error :math:`e = \mathbb{1}[R \ne \mathbb{1}[S \ge 0.5]]` and the predicted
    error :math:`\hat e = 1 - \max(S, 1 - S)` (Kelly & Smyth, Section 6; as
    :func:`mcviz.stats.variable_curves.prediction_errors`). Levels ascending as text (as
    pandas orders the categories of a text column), missing values last as ``"(missing)"``.
    """
    from mcviz.engines import sql
    from mcviz.stats.variable_levels import MISSING_LEVEL

    q = table.query()
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    r = sql.response_sql(columns, table.kinds, q)
    w = "1.0" if columns.weight is None else f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)"
    level = q.dialect.ident(variable)
    inner = (f"SELECT v, w, CASE WHEN (s >= 0.5) = (r >= 0.5) THEN 0.0 ELSE 1.0 END AS e, "
             f"1.0 - GREATEST(s, 1.0 - s) AS p FROM (SELECT {level} AS v, {s} AS s, {r} AS r, "
             f"{w} AS w FROM {table.source}) a")
    parts = ["COUNT(*) AS n", "SUM(w) AS w", "SUM(w * w) AS ww", "SUM(w * e) AS we",
             "SUM(w * p) AS wp", "SUM(w * w * e) AS wwe", "SUM(w * w * p) AS wwp",
             "SUM(w * w * p * p) AS wwpp", "SUM(w * w * e * p) AS wwep"]
    frame = table.frame(q, f"SELECT v, {', '.join(parts)} FROM ({inner}) t GROUP BY v")
    missing = frame["v"].isna().to_numpy()
    names = [MISSING_LEVEL if gone else str(v) for v, gone in zip(frame["v"], missing,
                                                                   strict=True)]
    order = sorted(range(len(names)), key=lambda i: (bool(missing[i]), names[i]))
    return (tuple(names[i] for i in order),
            {k: frame[k].to_numpy(dtype=float)[order] for k in _LEVEL_SUMS})


def value_sums_table(table, columns, variable: str, *,
                     limit: int) -> tuple[dict, dict, float | None]:
    r"""Return the rows' sums per distinct value of a numeric column (one ``GROUP BY``).

    A timestamp or date column is summed by its nanoseconds since 1970-01-01 as a DOUBLE
    (:func:`~mcviz.engines.sql.nanoseconds_sql`: the values the in-memory curves put along it).

    The sums of :func:`mcviz.stats.variable_sums.variable_calibration_from_sums`
    (:data:`~mcviz.stats.variable_sums.VALUE_SUMS`: Kelly & Smyth's :math:`e` and
    :math:`\hat e` as :func:`level_sums_table` takes them, and :math:`R`, :math:`S`), ascending
    by value, and those of the rows where the value is missing (NULL or NaN). With more than
    ``limit`` distinct values (counted approximately) the groups are ``limit`` equal-width
    bins of the column's range, each at its rows' mean value (kept within their range); the
    third item is then the bins' width (else None). ``lo`` and ``hi``: each group's smallest
    and largest value (what :mod:`mcviz.stats.variable_bound` bounds the fine bins' curves by).
    """
    from mcviz.engines import sql
    from mcviz.stats.variable_sums import VALUE_SUMS

    def number(q) -> str:  # the value as DOUBLE, NULL where missing (NaN too)
        if table.kinds.get(variable) == "timestamp":  # nanoseconds, as the in-memory keys
            nanos = sql.nanoseconds_sql(q.dialect.ident(variable), table.types.get(variable, ""),
                                        q)
            return f"CAST({nanos} AS DOUBLE)"
        raw = f"CAST({q.dialect.ident(variable)} AS DOUBLE)"
        return f"CASE WHEN isnan({raw}) THEN NULL ELSE {raw} END"

    q = table.query()
    value = number(q)
    accuracy = f", {q.bind(0.01)}" if table.dialect.name == "spark" else ""
    overview = table.frame(q, f"SELECT approx_count_distinct({value}{accuracy}) AS d, "
                              f"MIN({value}) AS lo, MAX({value}) AS hi FROM {table.source}")
    low, high = float(overview["lo"].iloc[0]), float(overview["hi"].iloc[0])
    width = None
    if int(overview["d"].iloc[0]) > limit and np.isfinite(high - low) and high > low:
        width = (high - low) / limit
    q = table.query()
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    r = sql.response_sql(columns, table.kinds, q)
    w = "1.0" if columns.weight is None else f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)"
    value = number(q)
    key = "v" if width is None else (  # (LEAST skips a NULL in DuckDB: missing stays NULL)
        f"CASE WHEN v IS NULL THEN NULL ELSE LEAST(CAST(FLOOR((v - {q.bind(low)}) / "
        f"{q.bind(width)}) AS BIGINT), {q.bind(limit - 1)}) END")
    inner = (f"SELECT v, s, r, w, {key} AS k, CASE WHEN (s >= 0.5) = (r >= 0.5) THEN 0.0 "
             "ELSE 1.0 END AS e, 1.0 - GREATEST(s, 1.0 - s) AS p FROM (SELECT "
             f"{value} AS v, {s} AS s, {r} AS r, {w} AS w FROM {table.source}) a")
    parts = ["COUNT(*) AS n", "SUM(w) AS w", "SUM(w * w) AS ww", "SUM(w * e) AS we",
             "SUM(w * p) AS wp", "SUM(w * e * p) AS wep", "SUM(w * p * p) AS wpp",
             "SUM(w * r) AS wr", "SUM(w * s) AS ws", "SUM(w * w * s * (1.0 - s)) AS wwv",
             "MIN(v) AS lo", "MAX(v) AS hi", "SUM(v) AS sv"]
    frame = table.large_frame(q, f"SELECT {', '.join(parts)} FROM ({inner}) t GROUP BY k")
    gone = frame["lo"].isna().to_numpy()
    lost = frame[gone]
    frame = frame[~gone].sort_values("lo", kind="stable")
    sums = {name: frame[name].to_numpy(dtype=float) for name in VALUE_SUMS if name != "v"}
    sums["n"] = sums["n"].astype(np.int64)
    lo, hi = frame["lo"].to_numpy(dtype=float), frame["hi"].to_numpy(dtype=float)
    sums["v"] = lo if width is None else np.clip(frame["sv"].to_numpy(dtype=float) / sums["n"],
                                                 lo, hi)
    sums["lo"], sums["hi"] = lo, hi  # each group's range: the bound of fine bins
    missing = {name: float(lost[name].sum()) for name in ("n", "w", "wr", "ws")}
    return sums, missing, width
