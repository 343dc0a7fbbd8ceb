"""The Monitor page's services (no Streamlit): its settings, time columns, Review filters.

:class:`MonitorSettings` is the one settings object of a monitor run: the widgets write it, it
gives the keyword arguments of :func:`mcviz.monitor.monitor_calibration` (and so the cache key)
and the CLI equivalent. :func:`review_filter` turns a cell of the heat map (a series and a range
of periods) into a filter expression the Review page's "Filter" scope reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from dashboard import state as s
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.monitor import MonitorResult, infer_time_column
from mcviz.monitor.segments import MAX_SEGMENTS
from mcviz.settings import FILTER_MAX_CHARS
from mcviz.settings import MonitorSettings as LibrarySettings
from mcviz.subpopulations import conditions_words
from mcviz.subpopulations.describe import timestamp_text
from mcviz.text import format_interval, format_points

__all__ = ["PERIOD_CHOICES", "MonitorSettings", "default_segments", "review_filter",
           "segment_candidates", "series_table", "settings_from_state", "time_candidates"]

PERIOD_CHOICES = {"day": "day", "week": "week", "month": "month", "quarter": "quarter",
                  "10": "10 equal periods", "20": "20 equal periods", "52": "52 equal periods"}
MAX_LEVELS = 60
"""Segment columns offered: nominal covariates with at most this many levels."""
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
DEMO_SEGMENTS = ("carrier", "origin")
"""Monitored by default on the dated demo (NYC flights)."""


@dataclass(frozen=True)
class MonitorSettings:
    """What the Monitor page computes (widgets -> library call, cache key, CLI).

    α and the null draws are :class:`mcviz.settings.MonitorSettings` settings: their widgets,
    links, bounds and the command line's flags come from there.
    """

    time: str
    period: str = LibrarySettings.period
    reference: str = ""
    segments: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    search_reference: bool = False
    alpha: float = LibrarySettings.alpha
    draws: int = LibrarySettings.draws

    def library(self) -> LibrarySettings:
        """Return the library's settings of this run (validated: bounds named in the message)."""
        return LibrarySettings(
            time=self.time, period=int(self.period) if self.period.isdigit() else self.period,
            reference=self.reference.strip() or None, segments=self.segments,
            filters=self.filters, search_reference=self.search_reference, alpha=self.alpha,
            draws=self.draws)

    def call_options(self) -> dict:
        """Keyword arguments of :func:`~mcviz.monitor.monitor_calibration`.

        The settings object's text (every field) keys the cache.
        """
        return {"settings": self.library()}

    def command_line(self, file: str = "FILE") -> str:
        """Return the equivalent ``mcviz monitor`` command.

        Examples
        --------
        >>> MonitorSettings("when", "month", segments=("region",)).command_line()
        'mcviz monitor FILE --time when --period month --segments region --json'
        >>> MonitorSettings("when", alpha=0.01).command_line()
        'mcviz monitor FILE --time when --period week --alpha 0.01 --json'
        """
        parts = ["mcviz monitor", file, "--time", _shell(self.time), "--period", self.period]
        if self.reference.strip():
            parts += ["--reference", _shell(self.reference.strip())]
        if self.segments:
            parts += ["--segments", _shell(",".join(self.segments))]
        for expression in self.filters:
            parts += ["--filter", _shell(expression)]
        if self.search_reference:
            parts.append("--search-reference")
        for spec in LibrarySettings.settings():
            value = getattr(self, spec.name, spec.default)
            if value != spec.default:
                parts += [spec.flag, spec.text(value)]
        return " ".join([*parts, "--json"])


def _shell(text: str) -> str:
    return text if re.fullmatch(r"[A-Za-z0-9_.,:\-]+", text) else "'" + text.replace(
        "'", "'\\''") + "'"


def time_candidates(pred: Predictions) -> list[str]:
    """Covariates that can be the time column: datetime ones, then the inferred one."""
    columns = pred.covariates
    found = [str(c) for c in columns.columns
             if pd.api.types.is_datetime64_any_dtype(columns[c])]
    inferred = infer_time_column(columns)
    if inferred is not None and inferred not in found:
        found.append(inferred)
    return found


def segment_candidates(pred: Predictions, time: str | None) -> list[str]:
    """Nominal covariates with at most :data:`MAX_LEVELS` levels (booleans too)."""
    out = []
    for name, kind in pred.covariate_kinds.items():
        if name == time:
            continue
        series = pred.covariates[name]
        if pd.api.types.is_bool_dtype(series) or (
                kind == "nominal" and series.nunique(dropna=False) <= MAX_LEVELS):
            out.append(str(name))
    return out


def default_segments(candidates: Sequence[str]) -> list[str]:
    """Return the demo's carrier and origin when offered; otherwise none (full population)."""
    return [c for c in DEMO_SEGMENTS if c in candidates]


def settings_from_state(state: Mapping, time: str) -> MonitorSettings:
    """Read the page's widget values (keys of :mod:`dashboard.state`) into settings."""
    period = str(state.get(s.W_MON_PERIOD) or "week")
    text = str(state.get(s.W_MON_FILTERS) or "")
    if len(text) > FILTER_MAX_CHARS:  # bounded before it is split or parsed
        raise ValidationError(f"Segments: filters: {len(text):,} characters typed; at most "
                              f"{FILTER_MAX_CHARS:,} are read. Give fewer or shorter filters.")
    filters = tuple(line.strip() for line in text.splitlines() if line.strip())
    if len(filters) > MAX_SEGMENTS:
        raise ValidationError(f"Segments: filters: {len(filters):,} lines; at most "
                              f"{MAX_SEGMENTS} segments can be monitored at once.")
    return MonitorSettings(time=time, period=period if period in PERIOD_CHOICES else "week",
                           reference=str(state.get(s.W_MON_REFERENCE) or ""),
                           segments=tuple(state.get(s.W_MON_SEGMENTS) or ()), filters=filters,
                           search_reference=bool(state.get(s.W_MON_SEARCH)),
                           alpha=float(state.get(s.W_MON_ALPHA, LibrarySettings.alpha)),
                           draws=int(state.get(s.W_MON_DRAWS, LibrarySettings.draws)))


def _column(name: str) -> str:
    return name if _BARE.fullmatch(name) else "`" + name.replace("`", "") + "`"


def review_filter(result: MonitorResult, series: int, first: int, last: int,
                  time_dtype: object) -> str | None:
    """Return the filter of ``series`` in periods ``first..last`` (None if not writable).

    The time clause is ``time >= start and time < end`` with the periods' starts written as
    the filter language reads them; a time column of text (parsed by the monitor) cannot be
    compared in a filter, so None is returned.

    Examples
    --------
    >>> import numpy as np
    >>> from mcviz import Predictions
    >>> from mcviz.monitor import monitor_calibration
    >>> days = pd.Timestamp("2026-01-05") + pd.to_timedelta(np.arange(60) % 30, unit="D")
    >>> pred = Predictions.from_arrays(np.full(60, 0.5), np.arange(60) % 2,
    ...                                covariates={"day": days, "g": ["a", "b"] * 30})
    >>> result = monitor_calibration(pred, settings=LibrarySettings(
    ...     period="week", segments=["g"], draws=19, alpha=0.05))
    >>> review_filter(result, 1, 1, 2, pred.covariates["day"].dtype)
    'g == a and day >= 2026-01-12 and day < 2026-01-26'
    """
    periods = result.periods
    number = periods.kind == "number"
    if not number and not pd.api.types.is_datetime64_any_dtype(time_dtype):
        return None
    start, end = periods.start(first), periods.start(last + 1)
    if number:
        low, high = repr(float(start)), repr(float(end))
    else:
        low, high = timestamp_text(start), timestamp_text(end)
    column = _column(periods.column)
    upper = "<=" if last + 1 == periods.n_periods else "<"  # the last period is closed
    clause = f"{column} >= {low} and {column} {upper} {high}"
    description = result.series[series].description
    return clause if description == "full population" else f"{description} and {clause}"


def report_section(result: MonitorResult) -> object:
    """Return the report's section of a monitor: verdicts, the heat map, the alarmed series.

    A :class:`mcviz.present.report.ReportSection`: one sentence per alarm (all series when none
    alarmed), the heat map, the first alarmed series over time (or the full population), and
    the table of every series.
    """
    from mcviz.present.figures import monitor_heatmap_figure, monitor_series_figure
    from mcviz.present.report import ReportSection

    periods = result.periods
    alarmed = result.alarms
    text = [f"Calibration over time along {periods.column} in {periods.n_periods} "
            f"{periods.period}s; the reference is the first {periods.n_reference} (before "
            f"{periods.reference_end}). {len(alarmed)} of {len(result.series)} series alarm; "
            f"the chance of any false alarm in any series over the whole horizon is at most "
            f"{result.alpha:g} (threshold {result.threshold:.3f}, {result.null_maxima.size} "
            f"{result.null_method} null draws)."]
    text += [s.sentence for s in (alarmed or result.series[:1])]
    shown = alarmed[0] if alarmed else result.full
    figures = (monitor_heatmap_figure(result),
               monitor_series_figure(result, result.series.index(shown)))
    table = series_table(result)
    metrics = (("periods", f"{periods.n_periods} {periods.period}s"),
               ("alarms", f"{len(alarmed)} of {len(result.series)}"),
               ("threshold c", f"{result.threshold:.3f}"), ("α", f"{result.alpha:g}"))
    return ReportSection("Calibration over time (monitor)", text=tuple(text), metrics=metrics,
                         figures=figures, tables=(("Every monitored series", table),))


HELD = "monitor_report"
"""Session key of the Monitor page's last run: ``(analysis key, MonitorResult)``."""
MAX_SENTENCES = 2


def verdict_section(result: MonitorResult) -> object:
    """Return the monitor as a :class:`mcviz.present.verdict.Section` (page, report and deck slide).

    The horizon and the rule in one sentence, then the first alarms' sentences (at most
    :data:`MAX_SENTENCES`; the full population's when nothing alarmed) and the facts.
    """
    from mcviz.present.verdict import Section

    periods = result.periods
    alarmed = result.alarms
    head = (f"Over {periods.n_periods} {periods.period}s of {periods.column}, {len(alarmed)} of "
            f"{len(result.series)} monitored series changed calibration since the reference "
            f"(before {periods.reference_end}); the chance of any false alarm over every series "
            f"and period is at most {result.alpha:g}.")
    shown = [s.sentence for s in (alarmed or result.series[:1])][:MAX_SENTENCES]
    if len(alarmed) > MAX_SENTENCES:
        shown.append(f"{len(alarmed) - MAX_SENTENCES} more alarms: see the Monitor page.")
    facts = (("periods", f"{periods.n_periods} {periods.period}s"),
             ("alarms (family-wise false-alarm rate ≤ " f"{result.alpha:g})",
              f"{len(alarmed)} of {len(result.series)} series"))
    return Section("Monitoring: calibration over time", (head, *shown), facts,
                   draw=lambda: _slide_figures(result), next_step=monitor_next_step(result))


def monitor_next_step(result: MonitorResult) -> str | None:
    """Say which periods and segments to look at when monitoring alarms (None: no alarm)."""
    alarmed = result.alarms
    if not alarmed:
        return None
    segments = [s for s in alarmed if s.subpopulation.conditions]  # a segment names a place
    first = segments[0] if segments else alarmed[0]
    noun = result.periods.period
    where = (conditions_words(first.subpopulation.conditions) if segments
             else "the full population")
    since = result.label(first.first_alarm)
    others = len(segments) - 1 if segments else 0
    more = (f" (and {others:,} more alarmed segment{'' if others == 1 else 's'})"
            if others else "")
    return (f"Look at {where}{more} from the {noun} of {since}: open it in Review from the "
            "Monitor page's heat map, then refit or fix the model on rows from after the change.")


def _slide_figures(result: MonitorResult) -> tuple:
    """Draw the heat map for a slide.

    Alone: beside the series chart its title and dates ran into the other chart's at half a
    slide's width (the sentences name the alarmed series).
    """
    from mcviz.present.figures import monitor_heatmap_figure

    return (monitor_heatmap_figure(result, presentation=True),)


PICKED = s.MON_PICKED
"""Session key of the scope the Monitor page opened in Review: ``(analysis key, filter, series,
number of series)``."""


def remember_pick(state: dict, analysis_key: str, expression: str, series: int,
                  among: int) -> None:
    """Remember that Monitor opened ``expression`` (series ``series`` of ``among``) in Review."""
    state[PICKED] = (analysis_key, expression.strip(), int(series), int(among))


def _picked_by(result: MonitorResult, series: int, expression: str) -> bool:
    """Whether ``expression`` is series ``series`` over some window of ``result``'s periods."""
    if not 0 <= series < len(result.series):
        return False
    dtype = "float64" if result.periods.kind == "number" else "datetime64[ns]"
    count = result.periods.n_periods
    return any(review_filter(result, series, first, last, dtype) == expression
               for first in range(count) for last in range(first, count))


def picked_selection(state: Mapping, analysis_key: str, filter_text: str | None) -> object | None:
    """Return how a Review filter opened from Monitor was chosen, or None.

    The segment and periods come from the heat map, where they were picked for their colour
    among every monitored series and period: the window's own p-value is no test (#40; the
    rule of the argmax). It is judged instead by its series' adjusted p-value of the monitor
    (the series' largest standardised shift over every window against the null maxima over
    every series, :attr:`mcviz.monitor.SeriesMonitor.p_adjusted`), as a
    :class:`mcviz.present.verdict.Selection` among the monitor's series. A link that says
    Monitor picked it (``mpick``, :mod:`dashboard.links`), reopened where this session has no
    monitor run of the same series and window, is "not yet tested against chance" until Monitor
    runs — never judged by its own p-value. None when the filter is not the one Monitor
    opened (edited, or another analysis): then the user wrote it.
    """
    from mcviz.present.verdict import Selection

    if filter_text is None:
        return None
    text, held = filter_text.strip(), state.get(HELD)
    picked, linked = state.get(PICKED), state.get(s.MON_PICKED_LINK)
    if picked is not None and picked[0] == analysis_key and picked[1] == text:
        series, among = picked[2], picked[3]
    elif linked is not None and linked[0] == text:
        series, among = linked[1], linked[2]
    else:
        return None
    how = "picked on the Monitor heat map"
    result = held[1] if held is not None and held[0] == analysis_key else None
    if result is None or len(result.series) != among or not _picked_by(result, series, text):
        return Selection(among, largest=False, what="monitored series", how=how,
                         remedy="run Monitor on this file (the link keeps its settings) to get "
                                "its adjusted p-value")
    return Selection(len(result.series), largest=False,
                     p_adjusted=float(result.series[series].p_adjusted),
                     draws=int(result.null_maxima.size), what="monitored series", how=how)


def held_section(state: Mapping, analysis_key: str) -> object | None:
    """Return the Monitor page's last run on this analysis as a verdict section, or None."""
    held = state.get(HELD)
    return verdict_section(held[1]) if held is not None and held[0] == analysis_key else None


def series_table(result: MonitorResult) -> pd.DataFrame:
    """Every monitored series in a row: in words, the shift and its interval in percentage points.

    The numbers the sentences say (:attr:`~mcviz.monitor.SeriesMonitor.sentence`), written by
    the same formatters; the Monitor page and the report show this one table.
    """
    return pd.DataFrame([{
        "series": item.words, "alarm": "yes" if item.alarm else "no",
        "first alarm": result.label(item.first_alarm) or "",
        "shift (points)": format_points(item.shift, signed=True, unit="").strip(),
        "95% interval (points)": format_interval(100 * item.ci_low, 100 * item.ci_high),
        "p adjusted": item.p_adjusted, "rows": int(item.count.sum()),
    } for item in result.series])
