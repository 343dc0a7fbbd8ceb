r"""Net benefit on a table inside DuckDB or Spark: its sums by one aggregate pass.

:func:`~mcviz.decision.net_benefit` needs, at each threshold :math:`t`, :math:`\sum W R` and
:math:`\sum W (1 - R)` over the rows with :math:`S \ge t`, and over every row :math:`\sum W R`
and :math:`\sum W` (eq. (1) of :mod:`mcviz.decision.net_benefit`). :func:`net_benefit_table`
has the engine compute them in one pass (one ``SUM(CASE WHEN score >= t ...)`` per threshold,
every threshold a bound parameter) after the rows are checked as the screening checks them
(:func:`mcviz.engines.sql.overview_sql`: a missing or out-of-range score, a label that is not
one of the two, a bad weight: refused with its count). The result is the in-memory
:class:`~mcviz.decision.NetBenefit`, exact up to the order of floating-point additions
(``tests/engines/test_decide_engines.py``: 1e-12).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcviz.decision.net_benefit import check_thresholds, net_benefit_from_sums
from mcviz.engines import sql
from mcviz.engines.base import Columns

__all__ = ["net_benefit_table"]


def net_benefit_table(table, columns: Columns, *, thresholds: Sequence[float]):
    """Return the :class:`~mcviz.decision.NetBenefit` of every row of ``table``.

    ``table`` is a :class:`mcviz.engines.tables.Table`; ``columns`` names the score, label (and
    positive value) and weight.

    Raises
    ------
    ValidationError
        Thresholds outside (0, 1); invalid rows, with their counts.
    """
    t = check_thresholds(thresholds)
    q = table.query()
    overview = table.frame(q, sql.overview_sql(columns, table.kinds, q, table.source)).iloc[0]
    sql.read_overview(overview, columns, table.kinds, drop_invalid=False)
    q = table.query()
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    r = sql.response_sql(columns, table.kinds, q)
    w = "1.0" if columns.weight is None else f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)"
    parts = ["COUNT(*) AS n", f"SUM({w}) AS total", f"SUM({w} * ({r})) AS positive"]
    for k, value in enumerate(t):
        marker = q.bind(float(value))
        parts.append(f"SUM(CASE WHEN {s} >= {marker} THEN {w} * ({r}) ELSE 0.0 END) AS p{k}")
        parts.append(f"SUM(CASE WHEN {s} >= {marker} THEN {w} * (1.0 - ({r})) ELSE 0.0 END) "
                     f"AS q{k}")
    row = table.frame(q, f"SELECT {', '.join(parts)} FROM {table.source}").iloc[0]
    positive = np.array([float(row[f"p{k}"] or 0.0) for k in range(t.size)])
    negative = np.array([float(row[f"q{k}"] or 0.0) for k in range(t.size)])
    return net_benefit_from_sums(t, positive, negative, all_positive=float(row["positive"]),
                                 total=float(row["total"]), n=int(row["n"]))
