r"""The monitor on a table inside DuckDB or Spark: sufficient statistics by one grouped pass.

Every statistic of :func:`~mcviz.monitor.monitor_calibration` is a function of sums over the
*cells* (membership pattern :math:`\times` period; :mod:`mcviz.monitor.alarm`): per cell the
rows, :math:`\sum W`, :math:`\sum WS`, :math:`\sum WR`, :math:`\sum W^2 S(1-S)` and
:math:`\sum W^3 S(1-S)(1-2S)`. :func:`monitor_table` has the engine compute them in one
``GROUP BY`` over (period, each segment column's value, each filter's truth value), after one
aggregate pass that checks the rows (score, label, weight, time) and finds the time range.
The periods are computed in SQL by the rules of :mod:`mcviz.monitor.periods` (days since
1970-01-01 by exact integer division of nanoseconds; weeks from Monday 1969-12-29; months and
quarters from the wall-time year and month; equal-width periods by the same floating-point
expression); the labels, the reference and the checks (no empty period, at least two) are
:mod:`mcviz.monitor.periods`' own, from the time range. The segments are the in-memory ones:
each level of a ``--segments`` column present in the data (text: one per value, sorted, and
one for missing values; boolean or 0/1: its true rows), each ``--filter`` (translated to bound
SQL, :func:`~mcviz.subpopulations.sql.predicate_sql`), deduplicated by description; the
membership patterns are ordered as :func:`~mcviz.monitor.segments.membership_atoms` orders
them, so the null draws consume the random stream in the same order.

The window scan, the threshold, the adjusted p-values and every series' view are then computed
in memory from the cell sums by the same functions as in memory. **The one approximation**:
the null draws are always the cell-level ``"normal"`` draws (two moments exact, third cumulant
by Cornish-Fisher; :mod:`mcviz.monitor.alarm`) -- the row-level Bernoulli redraw needs the
rows. In memory, ``null="auto"`` uses the same draws once rows :math:`\times` draws exceed
:data:`~mcviz.monitor.alarm.EXACT_ROW_DRAWS` (every table with more than 10^5 rows at the
default 199 draws), so at the sizes the engines are for, the two agree; with ``null="normal"``
in memory they agree at any size: the same periods, segments, cells and draws, sums equal up to
the order of floating-point additions (``tests/monitor/test_monitor_engines.py``: identical
alarms, p-values and first alarms, shifts to 1e-9). Not supported here: ``search_reference``
(the search needs the rows; run it on a sample), text time columns (store them as timestamps)
and time-zone aware timestamps (their zone is not kept by the engines' readers).
"""

from __future__ import annotations

from dataclasses import replace
from time import perf_counter

import numpy as np

from mcviz.engines import sql
from mcviz.engines.base import Columns
from mcviz.errors import ValidationError
from mcviz.monitor.alarm import CellSums, null_maxima, scan, threshold, window_plan
from mcviz.monitor.monitor import MonitorResult, _series
from mcviz.monitor.periods import (
    Periods,
    _calendar,
    _check_periods,
    _equal_width,
    _label,
    _period_kind,
    _reference,
)
from mcviz.monitor.segments import MAX_ATOM_PERIODS, MAX_SEGMENTS
from mcviz.settings import MonitorSettings
from mcviz.subpopulations import Condition, Subpopulation, describe_conditions, parse_filter

__all__ = ["monitor_table"]

_DAY_NS = 86_400 * 10**9
_SUMS = ("c", "n", "ws", "wr", "v", "k3")


def monitor_table(table, columns: Columns, *, time: str,
                  settings: MonitorSettings | None = None) -> MonitorResult:
    """Monitor the rows of ``table`` (:class:`mcviz.engines.tables.Table`); see the module.

    Raises
    ------
    ValidationError
        Invalid rows (with their counts), a bad time column or periods, bad segments, or an
        option the engines do not support.
    """
    started = perf_counter()
    chosen = MonitorSettings() if settings is None else settings
    if chosen.search_reference:
        raise ValidationError("--search-reference needs the rows in memory: run the search on a "
                              "sample (mcviz search --engine) and monitor its findings with "
                              "--filter.")
    q = table.query()
    overview = table.frame(q, sql.overview_sql(columns, table.kinds, q, table.source)).iloc[0]
    n_rows = sql.read_overview(overview, columns, table.kinds, drop_invalid=False)[0]
    kind, low, high = _time_range(table, time)
    periods, unit = _periods(table, time, kind, low, high, chosen)
    groups, found = _grouped(table, columns, time, unit, chosen)
    code = groups["u"].to_numpy(dtype=np.int64)
    if periods.kind == "datetime" and isinstance(chosen.period, str):
        code = code - int(code.min())
    _check_periods(code, periods.labels, periods.period, time)
    periods = replace(periods, code=code.astype(np.int32))
    segments, member = _segments(groups, found, table.kinds)
    cells, sums = _cells(groups, member, code, periods.n_periods)
    plan = window_plan(periods.n_periods - periods.n_reference)
    observed = scan(sums["x"], sums["n"], sums["v"], periods.n_reference, plan)
    draws = null_maxima(cells, periods.n_reference, plan, n_draws=chosen.draws, method="normal",
                        rng=np.random.default_rng(chosen.seed))
    c = threshold(draws.maxima, chosen.alpha)
    nobody = np.empty(0, dtype=np.int64)  # the rows stay in the engine
    everyone = (Subpopulation(0, 0, (), "full population", nobody), *segments)
    series = tuple(_series(sub, k, sums, observed[k], periods, plan, c, draws.maxima)
                   for k, sub in enumerate(everyone))
    draws.maxima.flags.writeable = False
    return MonitorResult(periods=periods, series=series, alpha=float(chosen.alpha), threshold=c,
                         null_maxima=draws.maxima, null_method=draws.method, n=int(n_rows),
                         seed=int(chosen.seed), seconds=perf_counter() - started,
                         notices=periods.notes)


def _time_value(table, time: str, kind: str, q: sql.Query) -> str:
    """Return the time as SQL: int64 nanoseconds of wall time (dates at midnight), or a DOUBLE."""
    ident = q.dialect.ident(time)
    if kind != "datetime":
        return f"CAST({ident} AS DOUBLE)"
    return sql.nanoseconds_sql(ident, table.types.get(time, ""), q)


def _time_range(table, time: str) -> tuple[str, object, object]:
    """Check the time column (one pass); return its kind and lowest and highest value."""
    if time not in table.kinds:
        raise ValidationError(f"no time column {time!r} in the file.", column=time)
    engine_kind = table.kinds[time]
    if engine_kind == "timestamp" and "TIME ZONE" in table.types.get(time, "").upper():
        raise ValidationError(f"column {time!r} holds time-zone aware times; --engine monitors "
                              "wall times only: store them as timestamps without a zone, or "
                              "use --engine numpy.", column=time)
    if engine_kind not in ("timestamp", "int", "float"):
        raise ValidationError(f"column {time!r} holds {engine_kind} values; --engine monitors a "
                              "timestamp, date or number column (store parsed dates).",
                              column=time)
    kind = "datetime" if engine_kind == "timestamp" else "number"
    q = table.query()
    value = _time_value(table, time, kind, q)
    missing = sql.missing_sql(time, engine_kind, q)
    infinite = (f"OR {value} = CAST('Infinity' AS DOUBLE) OR {value} = CAST('-Infinity' AS "
                "DOUBLE)") if engine_kind == "float" else ""
    row = table.frame(q, f"SELECT COUNT(*) AS n, SUM(CASE WHEN {missing} {infinite} THEN 1 "
                      f"ELSE 0 END) AS bad, MIN({value}) AS lo, MAX({value}) AS hi "
                      f"FROM {table.source}").iloc[0]
    if int(row["bad"] or 0):
        raise ValidationError(f"column {time!r}: {int(row['bad']):,} of {int(row['n']):,} rows "
                              "have no time (missing or not finite).", column=time)
    if kind == "datetime":
        return kind, int(row["lo"]), int(row["hi"])
    return kind, float(row["lo"]), float(row["hi"])


def _floor_div(a: str, b: int) -> str:
    """Exact integer floor division in SQL (``%`` keeps the dividend's sign in both dialects)."""
    return f"CAST((({a}) - ((({a}) % {b}) + {b}) % {b}) / {b} AS BIGINT)"


def _periods(table, time: str, kind: str, low, high, chosen: MonitorSettings
             ) -> tuple[Periods, str]:
    """Return the periods (labels, starts, reference) and the SQL of each row's period unit."""
    count, calendar = _period_kind(chosen.period)
    if kind == "number" and calendar:
        raise ValidationError(f"column {time!r} holds numbers, not dates: calendar periods "
                              f"({chosen.period!r}) need dates; give a count of periods instead "
                              "(for example 20).", column=time)
    times = np.array([low, high], dtype=np.int64 if kind == "datetime" else float)
    q = table.query()
    value = _time_value(table, time, kind, q)
    if calendar:
        _, starts = _calendar(times, calendar)
        name = calendar
        ident = q.dialect.ident(time)
        day = _floor_div(value, _DAY_NS)
        months = f"((year({ident}) - 1970) * 12 + month({ident}) - 1)"
        unit = {"day": day, "week": _floor_div(f"{day} + 3", 7), "month": months,
                "quarter": _floor_div(months, 3)}[calendar]
    else:
        _, starts = _equal_width(times, count, kind)
        name = f"{count} equal periods"
        span = float(high) - float(low)
        offset = f"CAST({value} - {low!r} AS DOUBLE)" if kind == "datetime" else \
            f"({value} - {float(low)!r})"
        unit = ("0" if span <= 0 else
                f"LEAST(CAST(FLOOR({offset} / {span!r} * {count}) AS BIGINT), {count - 1})")
    labels = tuple(_label(s, kind) for s in starts[:-1])
    n_reference, reference_end, notes = _reference(times, starts, labels, chosen.reference,
                                                   kind, time, None)
    periods = Periods(column=time, period=name, code=np.empty(0, dtype=np.int32), labels=labels,
                      starts=starts, n_reference=n_reference, reference_end=reference_end,
                      timezone=None, kind=kind, notes=notes)
    return periods, unit


def _grouped(table, columns: Columns, time: str, unit: str, chosen: MonitorSettings):
    """One GROUP BY: the cell sums per (period, segment columns' values, filters' truth)."""
    segment_columns = list(dict.fromkeys(chosen.segments))
    for name in segment_columns:
        if name not in table.kinds:
            raise ValidationError(f"no segment column {name!r} in the file.", column=name)
    parse_kinds = {name: "nominal" if kind in ("string", "bool") else "ordinal"
                   for name, kind in table.kinds.items()}
    filters = []
    for expression in chosen.filters:
        conditions = parse_filter(expression, parse_kinds)
        filters.append((expression, conditions))
    q = table.query()
    keys = [f"{unit} AS u"]
    keys += [f"{q.dialect.ident(name)} AS s{i}" for i, name in enumerate(segment_columns)]
    keys += [f"{sql.predicate_sql(conditions, table.kinds, q)} AS f{i}"
             for i, (_, conditions) in enumerate(filters)]
    s = f"CAST({q.dialect.ident(columns.score)} AS DOUBLE)"
    r = sql.response_sql(columns, table.kinds, q)
    w = "1.0" if columns.weight is None else f"CAST({q.dialect.ident(columns.weight)} AS DOUBLE)"
    sums = ["COUNT(*) AS c", f"SUM({w}) AS n", f"SUM({w} * {s}) AS ws",
            f"SUM({w} * ({r})) AS wr", f"SUM({w} * {w} * {s} * (1.0 - {s})) AS v",
            f"SUM({w} * {w} * {w} * {s} * (1.0 - {s}) * (1.0 - 2.0 * {s})) AS k3"]
    ordinals = ", ".join(str(i + 1) for i in range(len(keys)))
    text = f"SELECT {', '.join(keys + sums)} FROM {table.source} GROUP BY {ordinals}"
    groups = table.frame(q, text)
    return groups, (segment_columns, filters)


def _segments(groups, found, kinds) -> tuple[list[Subpopulation], np.ndarray]:
    """Return the monitored segments (as in memory) and each group's membership."""
    segment_columns, filters = found
    subs: list[Subpopulation] = []
    member: list[np.ndarray] = []
    nobody = np.empty(0, dtype=np.int64)
    for i, name in enumerate(segment_columns):
        values = groups[f"s{i}"]
        present = values.notna().to_numpy()
        if kinds[name] == "string":
            levels = sorted({str(v) for v in values[present]})
            sets = [((Condition(name, "==", level),), present & (values.astype(str) == level)
                     .to_numpy()) for level in levels]
            if not present.all():
                sets.append(((Condition(name, "is missing"),), ~present))
        elif kinds[name] == "bool":
            sets = [((Condition(name, "==", True),), (values == True).to_numpy(  # noqa: E712
                dtype=bool, na_value=False))]
        elif kinds[name] in ("int", "float") and set(values[present].astype(float)) <= {0.0, 1.0}:
            sets = [((Condition(name, "==", 1),), (values == 1).to_numpy(dtype=bool,
                                                                          na_value=False))]
        else:
            raise ValidationError(f"group column {name!r} is neither boolean (0/1) nor text; "
                                  f"describe the group with a filter instead (for example "
                                  f"'{name} >= ...').", column=name)
        for conditions, mask in sets:
            if mask.any():
                subs.append(Subpopulation(0, 0, conditions, describe_conditions(conditions),
                                          nobody))
                member.append(mask)
    for i, (expression, conditions) in enumerate(filters):
        mask = groups[f"f{i}"].to_numpy(dtype=bool, na_value=False)
        if not mask.any():
            raise ValidationError(f"filter {expression!r} selects none of the rows.")
        subs.append(Subpopulation(0, 0, conditions, describe_conditions(conditions), nobody))
        member.append(mask)
    if len(subs) > MAX_SEGMENTS:
        raise ValidationError(f"{len(subs):,} segments: at most {MAX_SEGMENTS} can be monitored "
                              f"at once; choose covariates with fewer levels or fewer filters.")
    segments, masks, seen = [], [], set()
    for sub, mask in zip(subs, member, strict=True):
        if sub.description not in seen:
            seen.add(sub.description)
            segments.append(Subpopulation(len(segments) + 1, 0, sub.conditions, sub.description,
                                          nobody))
            masks.append(mask)
    matrix = np.column_stack(masks) if masks else np.zeros((len(groups), 0), dtype=bool)
    return segments, matrix


def _atoms(member: np.ndarray, n_periods: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's atom and the incidence, in :func:`membership_atoms`' order."""
    n_groups, k = member.shape
    if not (member.sum(axis=1) > 1).any():  # disjoint segments: atom k + 1 for segment k
        atom = np.zeros(n_groups, dtype=np.int64)
        rows, cols = np.nonzero(member)
        atom[rows] = cols + 1
        incidence = np.zeros((k + 1, k + 1))
        incidence[0] = 1.0
        incidence[np.arange(1, k + 1), np.arange(1, k + 1)] = 1.0
        return atom, incidence
    keys = np.random.default_rng(20_260_105).integers(1, 2**63, size=k, dtype=np.uint64)
    code = np.zeros(n_groups, dtype=np.uint64)
    for j in range(k):
        code[member[:, j]] += keys[j]  # wraps modulo 2**64, as in membership_atoms
    _, first, atom = np.unique(code, return_index=True, return_inverse=True)
    if first.size * n_periods > MAX_ATOM_PERIODS:
        raise ValidationError(f"the segments overlap in {first.size:,} distinct ways over "
                              f"{n_periods} periods: more than {MAX_ATOM_PERIODS:,} cells to "
                              f"simulate; monitor fewer overlapping segments or longer periods.")
    incidence = np.vstack((np.ones(first.size), member[first].T.astype(float)))
    return atom.astype(np.int64), incidence


def _cells(groups, member: np.ndarray, code: np.ndarray, n_periods: int
           ) -> tuple[CellSums, dict[str, np.ndarray]]:
    atom, incidence = _atoms(member, n_periods)
    shape = (incidence.shape[1], n_periods)
    cell = {}
    for name in _SUMS:
        total = np.zeros(shape)
        np.add.at(total, (atom, code), groups[name].to_numpy(dtype=float))
        cell[name] = total
    x = cell["wr"] - cell["ws"]
    empty = np.empty(0)
    cells = CellSums(n=cell["n"], x=x, v=cell["v"], incidence=incidence,
                     atom=np.empty(0, dtype=np.int32), period=np.empty(0, dtype=np.int32),
                     score=empty, weight=empty, k3=cell["k3"])
    sums = {"count": incidence @ cell["c"], "n": incidence @ cell["n"], "x": incidence @ x,
            "v": incidence @ cell["v"], "ws": incidence @ cell["ws"],
            "wr": incidence @ cell["wr"]}
    return cells, sums
