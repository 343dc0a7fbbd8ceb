"""Spark's large results (a finding's runs, the comparison's sums) come through files (issue #44).

``mcviz report --engine spark`` at 10^7 rows under the ``--memory-limit`` it named died in
the JVM's heap (``getResult``) while ``toArrow`` gathered a large result there
(:meth:`mcviz.engines.tables.SparkTable.large_frame`). Reference: the in-memory deviation of
the same rows (:func:`mcviz.stats.deviation.subpopulation_deviation`, paper 003 eqs. (5)-(8)),
with ``toArrow`` refused for every ``GROUP BY`` and a sorted result cut into several part files.
"""

from __future__ import annotations

import numpy as np
import pytest
from spark_available import skip_module_without_spark

skip_module_without_spark()

from test_deviation_runs_engines import FINDING, _pred, _rows, _same_deviation  # noqa: E402

from mcviz.engines import calibration  # noqa: E402
from mcviz.engines.tables import SparkTable  # noqa: E402
from mcviz.stats import deviation  # noqa: E402
from mcviz.stats.measures.runs import ScoreRuns  # noqa: E402
from mcviz.subpopulations.filters import filter_subpopulation  # noqa: E402


@pytest.mark.spark
def test_spark_s_runs_and_sums_come_through_files_in_score_order(tmp_path, monkeypatch):
    """With ``toArrow`` refused for every ``GROUP BY``, the full population's fine bins, the
    finding's runs per distinct score (``ORDER BY s``: eight part files, read in part order)
    and every row summed between them give the rows' deviation to 1e-9."""
    from spark_available import spark_table

    monkeypatch.setattr(calibration, "COMPARISON_CELLS", 64)
    through = SparkTable.frame

    def small_only(self, q, text):  # what the heap may hold: no runs, no sums per cell
        assert "GROUP BY" not in text, text
        return through(self, q, text)

    monkeypatch.setattr(SparkTable, "frame", small_only)
    score = np.round(np.random.default_rng(85).beta(2, 5, 20_000), 4)
    path, frame, columns = _rows(tmp_path, score, False, 86)
    pred = _pred(frame, False)
    sub = filter_subpopulation(pred, FINDING)
    with spark_table(str(path)) as table:
        table.spark.conf.set("spark.sql.shuffle.partitions", "8")
        table.spark.conf.set("spark.sql.adaptive.enabled", "false")  # eight parts, not merged
        full = ScoreRuns(**calibration.score_runs_table(table, columns, limit=200))
        mine = ScoreRuns(**calibration.finding_runs_table(table, columns, tuple(sub.conditions)))
        comparison = calibration.comparison_sums_table(table, columns,
                                                       deviation.deviation_edges(mine.score))
    assert full.bins is not None
    assert mine.bins is None
    assert mine.score.size > 1000
    assert np.all(np.diff(mine.score) > 0)
    _same_deviation(deviation.deviation_from_runs(full, mine, comparison=comparison),
                    deviation.subpopulation_deviation(pred, sub.index))
