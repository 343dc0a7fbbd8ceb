r"""Where B is worse or better, confirmed by the engine on EVERY held-out row (``compare --engine``).

``mcviz compare --engine duckdb|spark`` searches a random sample in memory for groups where the
paired Brier difference :math:`d = L_B - L_A` is off its mean (:func:`mcviz.compare.compare_models`:
the search's rows have score :math:`\bar S = (S_A + S_B)/2` and response :math:`\bar S + d`, both
on the :math:`2^{-30}` grid). Every row the search did not look at -- the sample's held-out rows
and every row outside the sample -- was chosen without looking at a label, so all of them are
held out (as for ``mcviz search --engine``, :mod:`mcviz.search.at_scale`). This module measures
each group the search reported on those rows, by the engine:

* the rows, sorted by :math:`(S_A + S_B)/2` (DuckDB out of core; Spark partition by partition,
  through files on a local master: :func:`mcviz.engines.holdout.local_sorted_batches`),
  stream once through the core's evaluator in batches cut at tie-run ends
  (:class:`~mcviz.core.evaluator.Evaluator`, :func:`~mcviz.core.evaluator.combine`): per group
  the path of eqs. (1)-(2) and Appendix C eq. (6) over its tie runs, the bridge term between
  batches included; the scores and differences are rounded to the grid exactly as in memory;
* eq. (6)'s pooled floor over the held-out rows from the same pass
  (:class:`~mcviz.core.pooled_stream.StreamedFloor`: blocks of :math:`\max(200, n/100)` rows,
  joined as in memory), so :math:`\sigma = \max(\sigma_{(6)}, \sigma_{\text{pool}})`;
* the sums of the effect's interval and of each model's held-out calibration (:math:`R - S_A`,
  :math:`R - S_B`) in the same pass;
* then the Brownian p-value, Holm's adjustment over every group the search reported, the order
  by held-out evidence (:func:`mcviz.search.at_scale.remeasured`) and the split by direction,
  as in memory. Each group's size is counted on all rows.

Memory: one batch (:math:`2^{17}` rows) plus at most three pooling blocks (:math:`3n/100` rows
of three floats); the searched rows' keys go to the engine. With the whole file as the sample
the held-out rows are the in-memory search's and every number equals the in-memory comparison
(``tests/engines/test_compare_engines.py``: 1e-9).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mcviz.compare.models import _GRID, _score_b, _search_predictions, comparison_finding
from mcviz.compare.paired import brier_loss
from mcviz.core.evaluator import ChunkSummaries, Evaluator, combine, finish
from mcviz.core.pooled_stream import StreamedFloor
from mcviz.core.sigma import SigmaMethod
from mcviz.engines import sql
from mcviz.engines.holdout import (
    SUMS,
    condition_columns,
    dialect_of,
    exclude_rows,
    held_out_sums,
    mean_interval_from_sums,
    query_frame,
    role_rows_sql,
    sorted_batches,
)
from mcviz.search.at_scale import remeasured
from mcviz.subpopulations import subpopulation_words

__all__ = ["confirm_groups", "searched_rows"]

_B = "__mcviz_sb"
BATCH_ROWS = 1 << 17
"""Rows per batch of the sorted pass (a tie run that crosses a batch end is carried over)."""


class _HeldOut:
    """The one pass over the held-out rows in average-score order (module notes)."""

    def __init__(self, n: int, k: int, weighted: bool) -> None:
        self.k, self.weighted = k, weighted
        self.floor = StreamedFloor(n, k)
        self.summaries = ChunkSummaries.empty(k)
        self.sums = np.zeros((k, len(SUMS)))
        self.calibration = np.zeros((2, k, 6))  # rows, ΣW, ΣWv, ΣW²v², ΣW²v, ΣW² of R - S_A/B

    def add(self, score_a, score_b, label, weight, members) -> None:
        average = np.round((score_a + score_b) / 2.0 / _GRID) * _GRID
        difference = brier_loss(score_b, label) - brier_loss(score_a, label)
        response = average + np.round(difference / _GRID) * _GRID
        d = response - average
        ends = np.append(average[1:] != average[:-1], True)
        evaluator = Evaluator(average, weight if self.weighted else None, run_end=ends)
        self.summaries = combine(self.summaries, evaluator.summaries(d, members))
        self.floor.add(d, response, weight, ends, members)
        w, ww = weight, weight * weight
        for j, m in enumerate(members):
            self.sums[j] += [np.count_nonzero(m), w[m].sum(), w[m] @ d[m],
                             ww[m] @ (d[m] * d[m]), ww[m].sum(), ww[m] @ d[m], 0.0,
                             w[m] @ average[m], w[m] @ response[m], 0.0]
            for side, score in enumerate((score_a, score_b)):
                v = label[m] - score[m]
                self.calibration[side, j] += [v.size, w[m].sum(), w[m] @ v, ww[m] @ (v * v),
                                              ww[m] @ v, ww[m].sum()]

    def z(self) -> np.ndarray:
        """Held-out D/sigma of each group (eq. (6) with the pooled floor)."""
        total = replace(self.summaries, floor=self.floor.finish())
        return np.asarray(finish(total, SigmaMethod.ADJACENT).kuiper_z, dtype=float)


def _stream(engine, score_b: str, conditions, n: int) -> _HeldOut:
    """Read the engine's rows once in average-score order; return the accumulated pass."""
    q = sql.Query(dialect_of(engine))
    flags = ", ".join(f"({sql.predicate_sql(tuple(c), engine.kinds, q) if c else 'TRUE'}) "
                      f"AS __mcviz_m{j}" for j, c in enumerate(conditions))
    text = (f"SELECT {sql.S}, CAST({q.dialect.ident(score_b)} AS DOUBLE) + 0.0 AS {_B}, "
            f"{sql.R}, {sql.W}, {flags} FROM ({role_rows_sql(engine, q)}) AS h")
    held = _HeldOut(n, len(conditions), engine.columns.weight is not None)
    names = (sql.S, _B, sql.R, sql.W)
    carry = None
    for batch in sorted_batches(engine, q, text, f"({sql.S} + {_B}) / 2.0", rows=BATCH_ROWS,
                                n=n):  # the held-out rows (engine.n is 0 once they are narrowed)
        if carry is not None:
            batch = {c: np.concatenate((carry[c], batch[c])) for c in batch}
        average = np.round((batch[sql.S] + batch[_B]) / 2.0 / _GRID) * _GRID
        cut = int(np.searchsorted(average, average[-1], side="left"))  # the last run may go on
        carry = {c: v[cut:] for c, v in batch.items()}
        if cut:
            held.add(*(batch[c][:cut].astype(float) for c in names),
                     [batch[f"__mcviz_m{j}"][:cut].astype(bool) for j in range(held.k)])
    if carry is not None and carry[sql.S].size:
        held.add(*(carry[c].astype(float) for c in names),
                 [carry[f"__mcviz_m{j}"].astype(bool) for j in range(held.k)])
    return held


def confirm_groups(engine, comparison, *, score_b: str, searched, keys: np.ndarray,
                   n: int) -> tuple[tuple, tuple, int, str | None]:
    """Return (regressions, improvements, held-out rows, the search's notice) at scale.

    The notice is the sample search's, its sentence on which groups are confirmed stated for
    every held-out row (:func:`mcviz.search.at_scale.held_out_notice`).

    Parameters
    ----------
    engine : DuckDBEngine or SparkEngine
        Over all rows (checked); narrowed here to the rows not searched
        (:func:`mcviz.engines.holdout.exclude_rows`): the caller restores ``engine.source``.
    comparison : ModelComparison
        :func:`~mcviz.compare.compare_models` of the sample (its ``search`` reported the groups).
    score_b : str
    searched : Predictions
        The sample's search rows (for the groups' words).
    keys : ndarray, shape (m, 2)
        (file index, row number) of every row the search looked at.
    n : int
        Rows of the data (for the shares).
    """
    search = comparison.search
    if search is None or not search.findings:  # nothing to confirm: the search's own notice
        return (), (), n - int(np.asarray(keys).reshape(-1, 2).shape[0]), (
            None if search is None else search.notice)
    findings = search.findings
    conditions = [f.subpopulation.conditions for f in findings]
    sizes = held_out_sums(engine, conditions)[:, 0]  # on all rows
    # the roles, B's score and the groups' columns: what the held-out pass reads (_stream)
    exclude_rows(engine, keys, columns=[score_b, *condition_columns(conditions)])
    q = sql.Query(dialect_of(engine))
    n_held = int(query_frame(engine, q, f"SELECT COUNT(*) AS n FROM "
                                        f"({role_rows_sql(engine, q)}) AS h").iloc[0]["n"])
    held = _stream(engine, score_b, conditions, n_held)
    z = held.z()
    z = [float(z[k]) if held.sums[k, 0] else np.nan for k in range(len(findings))]
    order = {f.description: k for k, f in enumerate(findings)}
    result = remeasured(search, searched, z=z, sums=held.sums, sizes=sizes, n=n)
    sides: tuple[list, list] = ([], [])
    wanted = comparison.settings.n_findings
    for finding in result.findings:
        side = (sides[0] if finding.mean_residual > 0 else
                sides[1] if finding.mean_residual < 0 else None)
        if side is None or len(side) >= wanted:
            continue
        k = order[finding.description]
        side.append(comparison_finding(
            finding, rank=len(side) + 1,
            group=subpopulation_words(searched, finding.subpopulation), size=int(sizes[k]),
            n=n, holdout_size=int(held.sums[k, 0]),
            calibration_a=mean_interval_from_sums(*held.calibration[0, k]),
            calibration_b=mean_interval_from_sums(*held.calibration[1, k]),
            index=np.zeros(0, dtype=np.int64)))
    return tuple(sides[0]), tuple(sides[1]), n_held, result.notice


def searched_rows(comparison, pred, score_b: str, names) -> tuple:
    """The sample search's rows (Predictions) and, in ``pred``'s order, the rows it looked at.

    ``comparison`` is :func:`~mcviz.compare.compare_models` of ``pred`` with ``score_b`` and
    the covariates ``names``: its search ran on these rows (score = the average score on the
    grid), and every row outside its held-out index was looked at.
    """
    scores_b, _ = _score_b(pred, score_b)
    searched = _search_predictions(pred, scores_b, list(names))
    looked = np.zeros(pred.n, dtype=bool)
    if comparison.search is not None:
        looked[:] = True
        looked[searched.row[comparison.search.holdout_index]] = False
    return searched, looked
