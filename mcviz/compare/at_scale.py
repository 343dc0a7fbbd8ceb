r"""Compare two models on every row of Parquet data inside DuckDB or Spark (``--engine``).

Every number of :func:`mcviz.compare.compare_models` that is a sum or a path over the rows is
computed by the engine on every row, with the in-memory formulas (:mod:`mcviz.compare.paired`):

* the paired Brier and log-loss differences and their 95% intervals, and the net benefit of A
  and B at each threshold with the paired interval of the difference: one aggregate pass of
  sums (:math:`\sum W`, :math:`\sum W v`, :math:`\sum W^2 v^2`, :math:`\sum W^2 v`,
  :math:`\sum W^2`, the intervals by
  :func:`~mcviz.engines.holdout.mean_interval_from_sums`);
* each model's calibration (eqs. (1)-(3), (5) of paper 000: :math:`D`, :math:`G`,
  :math:`\sigma`, :math:`D/\sigma`, p) and the paired cumulative differences of the Brier
  losses (Kloumann et al., :math:`D`, the paired :math:`\sigma^2 = \sum W^2 d^2/(\sum W)^2`,
  :math:`D/\sigma`, p) ordered by the average score, by each score and by each numeric
  covariate: one pass over the rows sorted by the ordering variable each (DuckDB sorts out of
  core; Spark range-partitions by it and chains the partitions,
  :func:`~mcviz.engines.calibration.spark_ordered_path`), the path read at the end of every
  run of tied values, exactly as in memory.

The groups where B is worse or better (``regressions``, ``improvements``) are searched on a
random sample of the rows (:func:`~mcviz.compare.models.search_groups` on the sample) and
confirmed by the engine on every row the search did not look at
(:mod:`mcviz.compare.groups_at_scale`); the notice says so. Each model's classical measures
(ECE, ...): on DuckDB from the run sums of the pass sorted by its score
(:class:`~mcviz.engines.calibration.RunSums`, ``measures``), on Spark from the caller (one
``GROUP BY`` by score each, :func:`~mcviz.engines.calibration.score_runs_table`). With the
whole file as the sample every number equals the in-memory comparison
(``tests/engines/test_compare_engines.py``: 1e-9).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcviz.compare.paired import NetBenefitComparison, PairedDifference
from mcviz.compare.words import comparison_sentences
from mcviz.core.brownian import brownian_range_sf
from mcviz.core.ratio import safe_ratio
from mcviz.decision.net_benefit import check_thresholds
from mcviz.engines import sql
from mcviz.engines.calibration import (
    KEY,
    STEP,
    VARIANCE,
    PathAccumulator,
    RunSums,
    spark_ordered_path,
)
from mcviz.engines.holdout import dialect_of, mean_interval_from_sums, query_frame, role_rows_sql
from mcviz.errors import ValidationError
from mcviz.settings import LOG_LOSS_CLIP

__all__ = ["PathSummary", "check_score_b", "compare_on_engine"]

B = "__mcviz_sb"
"""B's score in the engine's rows."""
_LABEL = "__mcviz_rr"
_COUNT = "__mcviz_n"

ORDERED_KINDS = ("int", "float", "bool")
"""Engine column kinds a covariate path is ordered by (their values as numbers)."""

GROUPED_KEYS = 1 << 16
"""A covariate with at most this many distinct values (approximately counted) orders its path
from per-value sums (a hash aggregate) instead of a sort of every row."""


@dataclass(frozen=True, slots=True)
class PathSummary:
    """A cumulative path's statistics (the JSON's ``paths`` entries and ``calibration``)."""

    order_by: str
    kuiper: float
    ks: float
    sigma: float
    kuiper_z: float
    p_value: float
    n: int
    n_missing: int

    def as_json(self) -> dict:
        """Return the ``paths`` entry of ``mcviz compare --json``."""
        return {"order_by": self.order_by, "kuiper": self.kuiper, "sigma": self.sigma,
                "kuiper_z": self.kuiper_z, "p_value": self.p_value, "n": self.n,
                "n_missing": self.n_missing}


def _rows(engine, q: sql.Query, score_b: str) -> str:
    """Select the engine's valid rows with S, R, W and B's score."""
    return (f"SELECT *, CAST({q.dialect.ident(score_b)} AS DOUBLE) + 0.0 AS {B} FROM "
            f"({role_rows_sql(engine, q)}) AS h")


def check_score_b(engine, score_b: str) -> None:
    """Refuse B's column when it is missing, not numbers, or has values outside [0, 1]."""
    kind = engine.kinds.get(score_b)
    if kind is None:
        raise ValidationError(f"--score-b {score_b!r}: no such column in {engine.files[0]!r}.",
                              column=score_b)
    if score_b == engine.columns.score:
        raise ValidationError(f"--score-b {score_b!r} is the same column as --score: give two "
                              "different score columns.", column=score_b)
    if kind not in ("int", "float"):
        raise ValidationError(f"column {score_b!r}: the second model's scores must be numbers "
                              "in [0, 1].", column=score_b)
    q = sql.Query(dialect_of(engine))
    text = (f"SELECT COUNT(*) AS n, SUM(CASE WHEN {B} IS NULL OR isnan({B}) OR {B} < 0 OR "
            f"{B} > 1 THEN 1 ELSE 0 END) AS bad FROM ({_rows(engine, q, score_b)}) AS b")
    row = query_frame(engine, q, text).iloc[0]
    bad = int(row["bad"] or 0)
    if bad:
        raise ValidationError(f"column {score_b!r}: {bad:,} of {int(row['n']):,} rows are "
                              "missing or outside [0, 1].", column=score_b)


def _sum_terms(q: sql.Query, thresholds: np.ndarray) -> dict[str, str]:
    """Name -> SQL of every sum the losses and the net benefit need."""
    s, r, w = sql.S, sql.R, sql.W
    clip_low, clip_high = q.bind(LOG_LOSS_CLIP), q.bind(1.0 - LOG_LOSS_CLIP)
    terms = {"rows": "1.0", "w": w, "ww": f"{w} * {w}", "wr": f"{w} * {r}"}
    log = {}
    for name, score in (("a", s), ("b", B)):
        clipped = f"LEAST(GREATEST({score}, {clip_low}), {clip_high})"
        log[name] = f"(-({r} * LN({clipped}) + (1.0 - {r}) * LN(1.0 - {clipped})))"
    brier = {name: f"(({score} - {r}) * ({score} - {r}))" for name, score in
             (("a", s), ("b", B))}
    for loss, value in (("brier", brier), ("log", log)):
        d = f"({value['b']} - {value['a']})"
        terms |= {f"{loss}_a": f"{w} * {value['a']}", f"{loss}_b": f"{w} * {value['b']}",
                  f"{loss}_wd": f"{w} * {d}", f"{loss}_wdd": f"{w} * {w} * {d} * {d}",
                  f"{loss}_wwd": f"{w} * {w} * {d}"}
    for k, t in enumerate(thresholds):
        at, ratio = q.bind(float(t)), q.bind(float(t / (1.0 - t)))
        gain = f"({r} - (1.0 - {r}) * {ratio})"
        treated = {name: f"(CASE WHEN {score} >= {at} THEN 1.0 ELSE 0.0 END)" for name, score in
                   (("a", s), ("b", B))}
        delta = f"(({treated['b']} - {treated['a']}) * {gain})"
        terms |= {f"nb{k}_a": f"{w} * {treated['a']} * {gain}",
                  f"nb{k}_b": f"{w} * {treated['b']} * {gain}",
                  f"nb{k}_wd": f"{w} * {delta}", f"nb{k}_wdd": f"{w} * {w} * {delta} * {delta}",
                  f"nb{k}_wwd": f"{w} * {w} * {delta}",
                  f"nb{k}_changed": f"(CASE WHEN {treated['b']} <> {treated['a']} THEN {w} "
                                    "ELSE 0.0 END)"}
    return terms


def _difference(sums: dict, loss: str, name: str) -> PairedDifference:
    mean, low, high = mean_interval_from_sums(sums["rows"], sums["w"], sums[f"{loss}_wd"],
                                              sums[f"{loss}_wdd"], sums[f"{loss}_wwd"],
                                              sums["ww"])
    return PairedDifference(loss=name, a=sums[f"{loss}_a"] / sums["w"],
                            b=sums[f"{loss}_b"] / sums["w"], difference=mean, ci_low=low,
                            ci_high=high, n=int(sums["rows"]))


def _net_benefit(sums: dict, t: np.ndarray) -> NetBenefitComparison:
    total = sums["w"]
    columns = [(sums[f"nb{k}_a"] / total, sums[f"nb{k}_b"] / total,
                *mean_interval_from_sums(sums["rows"], total, sums[f"nb{k}_wd"],
                                         sums[f"nb{k}_wdd"], sums[f"nb{k}_wwd"], sums["ww"]),
                sums[f"nb{k}_changed"] / total) for k in range(t.size)]
    a, b, difference, low, high, changed = (np.array(c) for c in zip(*columns, strict=True))
    positive = sums["wr"]
    treat_all = (positive - (total - positive) * t / (1.0 - t)) / total
    return NetBenefitComparison(thresholds=t, a=a, b=b, difference=difference, ci_low=low,
                                ci_high=high, treat_all=treat_all, changed=changed)


def _ordered(engine, score_b: str, key: str, paths: Sequence[tuple[str, str, str]],
             n_all: int, runs: RunSums | None = None, grouped: bool = False,
             ) -> list[PathSummary]:
    """Paths summed in the order of ``key`` (rows where it is missing left off).

    ``paths``: (name, step, variance) SQL of each path; on DuckDB they share ONE sorted pass
    (each model's calibration and the paired path ordered by its score), on Spark one each.
    ``runs`` (DuckDB, ``key`` a score): also the score's run sums for the classical measures.
    ``grouped`` (DuckDB, a key with few distinct values): the rows' sums per distinct key,
    sorted, instead of the rows sorted: the path is read at the end of each run of tied keys
    only, so its points, D and sigma are the same (one hash aggregate, no sort of the rows).
    """
    q = sql.Query(dialect_of(engine))
    steps = ", ".join(f"{step} AS {STEP}{j}, {variance} AS {VARIANCE}{j}"
                      for j, (_, step, variance) in enumerate(paths))
    label = "" if runs is None else f", {sql.R} AS {_LABEL}"
    text = (f"SELECT {key} AS {KEY}, {steps}, {sql.W}{label} FROM "
            f"({_rows(engine, q, score_b)}) AS o WHERE {key} IS NOT NULL AND NOT isnan({key})")
    if engine.name == "duckdb":
        accumulators = [PathAccumulator() for _ in paths]
        import duckdb
        import pyarrow as pa

        count = 0
        if grouped:
            sums = ", ".join(f"SUM({c}{j}) AS {c}{j}" for j in range(len(paths))
                             for c in (STEP, VARIANCE))
            text = (f"SELECT {KEY}, {sums}, SUM({sql.W}) AS {sql.W}, COUNT(*) AS {_COUNT} "
                    f"FROM ({text}) AS g GROUP BY {KEY}")
        try:  # a relation streams the sorted rows (DuckDB sorts out of core)
            reader = engine.con.sql(f"{text} ORDER BY {KEY}", params=q.params).to_arrow_reader(
                1 << 17)
            for batch in reader:
                if grouped:
                    count += int(np.sum(batch.column(_COUNT).to_numpy(zero_copy_only=False)))
                column = batch.column
                keys = column(KEY).to_numpy(zero_copy_only=False)
                weights = column(sql.W).to_numpy(zero_copy_only=False)
                weight = float(np.sum(weights))
                if runs is not None:
                    runs.add(keys, column(_LABEL).to_numpy(zero_copy_only=False), weights)
                for j, accumulator in enumerate(accumulators):
                    accumulator.add_steps(
                        keys, column(f"{STEP}{j}").to_numpy(zero_copy_only=False), weight,
                        float(np.sum(column(f"{VARIANCE}{j}").to_numpy(zero_copy_only=False))))
        except (duckdb.Error, pa.ArrowException) as error:
            raise ValidationError(f"DuckDB could not order the rows by {paths[0][0]!r}: "
                                  f"{str(error).splitlines()[0]} Raise --memory-limit or free "
                                  "disk space for spilling.") from None
        results = [(count if grouped else a.rows, a.finish()) for a in accumulators]
    else:
        results = []
        for j in range(len(paths)):
            one = (f"SELECT {KEY}, {STEP}{j} AS {STEP}, {VARIANCE}{j} AS {VARIANCE}, {sql.W} "
                   f"FROM ({text}) AS p")
            rows, _, stats = spark_ordered_path(engine, engine.spark.sql(one, args=q.params))
            results.append((rows, stats))
    out = []
    for (name, _, _), (rows, stats) in zip(paths, results, strict=True):
        z = float(safe_ratio(stats["kuiper"], stats["sigma"]))
        out.append(PathSummary(order_by=name, kuiper=stats["kuiper"], ks=stats["ks"],
                               sigma=stats["sigma"], kuiper_z=z,
                               p_value=float(brownian_range_sf(z)), n=int(rows),
                               n_missing=int(n_all - rows)))
    return out


def _distinct_counts(engine, score_b: str, orders: Sequence[str],
                     scores: bool) -> dict[str | int, int]:
    """Approximate distinct values, in ONE scan (DuckDB; empty on Spark).

    Of each covariate in ``orders`` (keyed by its name) and, with ``scores``, of A's and B's
    scores as doubles (keyed ``0`` and ``1``).
    """
    q = sql.Query(dialect_of(engine))
    ident = q.dialect.ident
    counted = [(k, f"CAST({ident(name)} AS DOUBLE)")
               for k, name in enumerate((engine.columns.score, score_b)) if scores]
    counted += [(name, ident(name)) for name in orders]
    if engine.name != "duckdb" or not counted:
        return {}
    text = ", ".join(f"approx_count_distinct({e}) AS d{k}" for k, (_, e) in enumerate(counted))
    row = query_frame(engine, q, f"SELECT {text} FROM {engine.source}").iloc[0]
    return {key: int(row[f"d{k}"]) for k, (key, _) in enumerate(counted)}


def _paths(engine, score_b: str, orders: Sequence[str], n_all: int, average: str,
           runs: tuple = (None, None), counts: dict | None = None,
           ) -> tuple[PathSummary, PathSummary, list[PathSummary]]:
    """Each model's calibration path, and the paired paths (average score, A, B, covariates).

    Five sorts and more: by each score (its calibration, its paired path and ``runs``' sums in
    one pass), by the average score and by each covariate.
    """
    s, r, w, ident = sql.S, sql.R, sql.W, dialect_of(engine).ident
    d = f"(({B} - {r}) * ({B} - {r}) - ({s} - {r}) * ({s} - {r}))"
    paired = (f"{w} * {d}", f"{w} * {w} * {d} * {d}")
    by_score = [_ordered(engine, score_b, score, [
        (name, f"{w} * ({r} - {score})", f"{score} * (1.0 - {score}) * {w} * {w}"),
        (name, *paired)], n_all, side) for (name, score), side in
        zip(((engine.columns.score, s), (score_b, B)), runs, strict=True)]
    few = {name for name in orders if (counts or {}).get(name, GROUPED_KEYS + 1) <= GROUPED_KEYS}
    keys = [(average, f"(({s} + {B}) / 2.0)")]
    keys += [(name, f"CAST({ident(name)} AS DOUBLE)") for name in orders]
    paths = [_ordered(engine, score_b, key, [(name, *paired)], n_all, grouped=name in few)[0]
             for name, key in keys]
    paths[1:1] = [by_score[0][1], by_score[1][1]]
    return by_score[0][0], by_score[1][0], paths


def _run_sums(engine, counts: dict, limit: int) -> tuple[RunSums, RunSums]:
    """Empty run sums of A and B, binned as :func:`score_runs_table` bins.

    ``counts``: their approximate distinct scores (:func:`_distinct_counts`).
    """
    weighted = engine.columns.weight is not None
    return tuple(RunSums(binned=counts[k] > limit, limit=limit, weighted=weighted)
                 for k in range(2))


def compare_on_engine(engine, *, score_b: str, orders: Sequence[str], thresholds,
                      regressions: tuple = (), improvements: tuple = (),
                      average: str = "average score", notes: Sequence[str] = (),
                      validated: bool = False, classical: tuple = (None, None),
                      measures=None, runs_limit: int | None = None) -> dict:
    """Return the JSON object of ``mcviz compare --json`` computed on the engine's rows.

    Parameters
    ----------
    engine : DuckDBEngine or SparkEngine
        Over the data, with A's score, the label and the weight as its columns.
    score_b : str
        B's score column.
    orders : sequence of str
        Numeric covariates to order paired paths by (after the average score and each score).
    thresholds : sequence of float
    regressions, improvements : tuple of ComparisonFinding
        The groups (searched on a sample by the caller).
    notes : sequence of str
        Sentences for ``notice``.
    validated : bool
        True when the caller has run ``engine.overview()`` and :func:`check_score_b`.
    classical : (dict or None, dict or None)
        A's and B's ``"classical"`` blocks when the caller computed them (None: null).
    measures : callable, optional
        On DuckDB: ``measures(runs)`` turns a score's run sums (the keyword arguments of
        :class:`~mcviz.stats.measures.runs.ScoreRuns`, :func:`score_runs_table`'s numbers)
        into its ``"classical"`` block; the sums come from the pass sorted by that score
        (:class:`~mcviz.engines.calibration.RunSums`; distinct scores, or fine bins above
        ``runs_limit`` of them, as the ``GROUP BY`` decides), replacing ``classical``.
    """
    t = check_thresholds(thresholds)
    for name in orders:
        if engine.kinds.get(name) not in ORDERED_KINDS:
            raise ValidationError(f"column {name!r} cannot order a path on the engine.",
                                  column=name)
    n_all = int(engine.overview()[0])  # every row checked (A's score, the label, the weight)
    if not validated:
        check_score_b(engine, score_b)
    q = sql.Query(dialect_of(engine))
    terms = _sum_terms(q, t)
    text = (f"SELECT {', '.join(f'SUM({term}) AS {name}' for name, term in terms.items())} "
            f"FROM ({_rows(engine, q, score_b)}) AS c")
    row = query_frame(engine, q, text).iloc[0]
    sums = {name: float(row[name]) for name in terms}
    with_runs = measures is not None and engine.name == "duckdb"
    counts = _distinct_counts(engine, score_b, orders, scores=with_runs)  # one scan
    runs = _run_sums(engine, counts, runs_limit) if with_runs else (None, None)
    calibration_a, calibration_b, paths = _paths(engine, score_b, orders, n_all, average, runs,
                                                 counts)
    if runs[0] is not None:
        classical = tuple(measures(side.finish()) for side in runs)
    fields = {"brier": _difference(sums, "brier", "brier"),
              "log_loss": _difference(sums, "log", "log_loss"),
              "calibration_a": calibration_a, "calibration_b": calibration_b, "paths": paths,
              "regressions": regressions, "improvements": improvements,
              "net_benefit": _net_benefit(sums, t)}
    verdict, next_step = comparison_sentences(**fields)
    return _json(fields, n_all, engine, score_b, verdict, next_step, notes, classical)


def _json(fields: dict, n: int, engine, score_b: str, verdict, next_step, notes,
          classical) -> dict:
    """Return the object of ``mcviz compare --json`` (as ModelComparison.as_json)."""
    brier, logs, head = fields["brier"], fields["log_loss"], fields["paths"][0]

    def model(column: str, calibration: PathSummary, measures: dict | None) -> dict:
        return {"score": column, "calibration": {
            "kuiper": calibration.kuiper, "ks": calibration.ks, "sigma": calibration.sigma,
            "kuiper_z": calibration.kuiper_z, "p_value": calibration.p_value},
            "classical": measures}

    return {
        "n": n,
        "models": {"a": model(engine.columns.score, fields["calibration_a"], classical[0]),
                   "b": model(score_b, fields["calibration_b"], classical[1])},
        "paired": {
            "brier_a": brier.a, "brier_b": brier.b, "brier_difference": brier.difference,
            "ci_low": brier.ci_low, "ci_high": brier.ci_high, "log_loss_a": logs.a,
            "log_loss_b": logs.b, "log_loss_difference": logs.difference,
            "log_loss_ci_low": logs.ci_low, "log_loss_ci_high": logs.ci_high,
            "order_by": head.order_by, "kuiper": head.kuiper, "sigma": head.sigma,
            "kuiper_z": head.kuiper_z, "p_value": head.p_value,
            "paths": [p.as_json() for p in fields["paths"]],
        },
        "regressions": [f.as_json() for f in fields["regressions"]],
        "improvements": [f.as_json() for f in fields["improvements"]],
        "net_benefit": fields["net_benefit"].as_json(),
        "verdict": list(verdict),
        "next_step": next_step,
        "notice": " ".join(notes) or None,
        "engine": engine.name,
    }
