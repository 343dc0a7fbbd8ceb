r"""The time role of a column, calendar or equal-width periods, and the reference period.

A time column holds dates or datetimes (a ``datetime64`` column, time-zone aware or not, or
text that pandas parses as dates) or numbers (integers such as a day or batch number). It is
inferred from the covariates when not named: the first datetime column, else the first text
column whose name reads like a time (``date``, ``time``, ``day``, ``week``, ``month``, ...) and
whose values parse as dates, else the first integer column named plainly as a time (``t``,
``day``, ``week``, ``year``, ``period``, ``step``, ...; not ``hours_per_week``).

Periods
-------
``"day"``, ``"week"`` (Monday to Sunday, labelled by its Monday), ``"month"``, ``"quarter"``
(calendar periods, dates only) or a count :math:`N \ge 2` of equal-width periods
:math:`[t_{min} + j\,\Delta, t_{min} + (j+1)\Delta)`, :math:`\Delta = (t_{max} - t_{min})/N`
(the last one closed), for dates and numbers. Time-zone aware times are put in periods by their
own wall time (a week in New York starts at midnight in New York); text with mixed UTC offsets
is converted to UTC, as ``pandas.to_datetime(..., utc=True)`` does.

Reference
---------
The reference is the periods that end by the reference end (whole periods only): by default
:math:`t_{min} + (t_{max} - t_{min})/4` (the first quarter of the time range; at least the first
period), or a date (or number) the caller gives. A date without a time of day counts through
its last moment (``2013-01-31`` takes in all of January). It must hold at least one period and
leave at least one to monitor. A period that the reference end cuts in two is monitored, not
part of the reference, and :attr:`Periods.notes` says so. Dates must lie within what pandas
holds (:data:`DATE_RANGE`); others are refused with that range.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.settings import PERIODS

__all__ = ["CALENDAR_PERIODS", "DATE_RANGE", "MAX_PERIODS", "REFERENCE_RULE", "Periods",
           "infer_time_column", "make_periods"]

CALENDAR_PERIODS = PERIODS  # written once: mcviz.settings
REFERENCE_RULE = ("the reference is every whole period that ends by the reference end (a date "
                  "without a time counts through its last moment); a period the end cuts in two "
                  "is monitored")
"""The reference rule in words (messages, ``mcviz monitor --help``)."""
DATE_RANGE = (pd.Timestamp.min.ceil("D").date().isoformat(),
              pd.Timestamp.max.floor("D").date().isoformat())
"""The first and last dates a time column or a reference may hold (pandas' nanosecond range)."""
MAX_PERIODS = 1000
"""At most this many periods (the alarm statistic's windows grow with their square)."""
_TIME_NAME = re.compile(r"(^|[_\s.-])(date|time|timestamp|datetime|day|week|month|quarter|year|"
                        r"period|when|t)($|[_\s.-])|date|time", re.IGNORECASE)
_TIME_WORDS = {"t", "time", "timestamp", "date", "day", "week", "month", "quarter", "year",
               "period", "step", "epoch", "batch", "timestep", "dayindex", "weeknumber"}
_DAY_NS = 86_400 * 10**9


@dataclass(frozen=True, slots=True, eq=False)
class Periods:
    """Each row's period, the period labels and the reference.

    Attributes
    ----------
    column : str
        The time column.
    period : str
        ``"day"``, ``"week"``, ``"month"``, ``"quarter"`` or ``"N equal periods"``.
    code : ndarray of int32, shape (n,)
        Period of each row, 0 to ``len(labels) - 1`` (the rows' order is the caller's).
    labels : tuple of str
        Each period's start: ``"2026-01-05"`` (ISO date or datetime) or a number.
    starts : ndarray
        Each period's start (``datetime64[ns]`` wall time, or float), and one more entry: the
        end of the last period.
    n_reference : int
        The first ``n_reference`` periods are the reference.
    reference_end : str
        The start of the first monitored period (the reference ends just before it).
    timezone : str or None
        The time zone of time-zone aware times (periods are in its wall time).
    kind : {"datetime", "number"}
    notes : tuple of str
        What the reference rule did that a reader may not expect (a period cut in two).
    """

    column: str
    period: str
    code: np.ndarray
    labels: tuple[str, ...]
    starts: np.ndarray
    n_reference: int
    reference_end: str
    timezone: str | None
    kind: str
    notes: tuple[str, ...] = ()

    @property
    def n_periods(self) -> int:
        """Number of periods."""
        return len(self.labels)

    def start(self, period: int) -> pd.Timestamp | float:
        """Return the start of ``period`` (``len(labels)``: the last one's end), in its zone."""
        value = self.starts[period]
        if self.kind == "number":
            return float(value)
        stamp = pd.Timestamp(value)
        return stamp.tz_localize(self.timezone) if self.timezone else stamp


def infer_time_column(frame: pd.DataFrame, exclude: Sequence[str] = ()) -> str | None:
    """Return the column inferred to hold time (see the module docstring), or None.

    Examples
    --------
    >>> infer_time_column(pd.DataFrame({"x": [1, 2], "day": ["2021-01-01", "2021-01-02"]}))
    'day'
    >>> infer_time_column(pd.DataFrame({"x": [1.5, 2.5]})) is None
    True
    """
    names = [str(c) for c in frame.columns if str(c) not in set(exclude)]
    for name in names:
        if pd.api.types.is_datetime64_any_dtype(frame[name]):
            return name
    timely = [name for name in names if _TIME_NAME.search(name)]
    for name in timely:
        series = frame[name]
        if series.dtype == object or isinstance(series.dtype, pd.StringDtype | pd.CategoricalDtype):
            sample = series.dropna().astype(str).head(200)
            if len(sample) and _parses(sample):
                return name
    for name in names:  # integers only under a plain time name ("week", not "hours_per_week")
        if re.sub(r"[^a-z]", "", name.lower()) in _TIME_WORDS and pd.api.types.is_integer_dtype(
                frame[name]):
            return name
    return None


def _parses(sample: pd.Series) -> bool:
    try:
        parsed = pd.to_datetime(sample, errors="coerce", format="mixed", utc=True)
    except (ValueError, TypeError, OverflowError):
        return False
    return bool(parsed.notna().mean() >= 0.9)


def make_periods(
    values: pd.Series,
    *,
    column: str,
    period: str | int = "week",
    reference: object = None,
    rows: np.ndarray | None = None,
) -> Periods:
    """Assign each value to its period and choose the reference periods.

    Parameters
    ----------
    values : Series, shape (n,)
        The time column (any order; the codes follow it).
    column : str
        Its name (for messages).
    period : {"day", "week", "month", "quarter"} or int
        Calendar periods (dates only) or a count of equal-width periods (>= 2).
    reference : str, Timestamp, number or None
        The reference is the whole periods ending by this time (default: the first quarter of
        the time range, at least one period).
    rows : ndarray of int, optional
        Input row numbers of the values (for messages; default 0..n-1).

    Raises
    ------
    ValidationError
        Unparseable or missing times, a calendar period for numbers, a single period, periods
        without rows, a reference that is empty or covers every period.
    """
    rows = np.arange(len(values)) if rows is None else np.asarray(rows)
    count, calendar = _period_kind(period)
    times, kind, timezone = _times(values, column, rows)
    if kind == "number" and calendar:
        raise ValidationError(f"column {column!r} holds numbers, not dates: calendar periods "
                              f"({period!r}) need dates; give a count of periods instead "
                              f"(for example 20).", column=column)
    if calendar:
        code, starts = _calendar(times, calendar)
        name = calendar
    else:
        code, starts = _equal_width(times, count, kind)
        name = f"{count} equal periods"
    labels = tuple(_label(s, kind) for s in starts[:-1])
    _check_periods(code, labels, name, column)
    n_reference, reference_end, notes = _reference(times, starts, labels, reference, kind,
                                                   column, timezone)
    code = code.astype(np.int32)
    code.flags.writeable = False
    return Periods(column=column, period=name, code=code, labels=labels, starts=starts,
                   n_reference=n_reference, reference_end=reference_end, timezone=timezone,
                   kind=kind, notes=notes)


def _period_kind(period: str | int) -> tuple[int, str | None]:
    if isinstance(period, str) and period.strip().lower() in CALENDAR_PERIODS:
        return 0, period.strip().lower()
    text = period.strip() if isinstance(period, str) else period
    try:
        count = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        count = None
    if count is None or isinstance(period, bool | float) or not (
            2 <= count <= MAX_PERIODS):
        raise ValidationError(f"period must be one of {', '.join(CALENDAR_PERIODS)} or a count "
                              f"of equal periods from 2 to {MAX_PERIODS}, not {period!r}.")
    return count, None


def _times(values: pd.Series, column: str, rows: np.ndarray) -> tuple[np.ndarray, str, str | None]:
    """Return int64 wall-time nanoseconds (or float numbers), the kind and the time zone."""
    series = pd.Series(values).reset_index(drop=True)
    missing = series.isna().to_numpy()
    if missing.any():
        raise ValidationError(_rows_message(column, missing, rows, "have no time (missing)"),
                              column=column)
    if pd.api.types.is_bool_dtype(series):
        raise ValidationError(f"column {column!r} holds booleans, not times.", column=column)
    if pd.api.types.is_numeric_dtype(series):
        numbers = series.to_numpy(dtype=float)
        bad = ~np.isfinite(numbers)
        if bad.any():
            raise ValidationError(_rows_message(column, bad, rows, "are not finite"),
                                  column=column)
        return numbers, "number", None
    if not pd.api.types.is_datetime64_any_dtype(series):
        series = _parse_text(series, column, rows)
    timezone = None
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        timezone = str(series.dt.tz)
        series = series.dt.tz_localize(None)  # wall time in its own zone
    try:  # pandas 3 parses to microseconds; to_numpy(ns) would wrap year 9999 silently
        series = series.dt.as_unit("ns")
    except (pd.errors.OutOfBoundsDatetime, OverflowError):
        bad = ((series < pd.Timestamp.min) | (series > pd.Timestamp.max)).to_numpy()
        raise ValidationError(_rows_message(
            column, bad, rows, f"lie outside the dates that can be monitored ({DATE_RANGE[0]} "
            f"to {DATE_RANGE[1]})", f" (first: {series[bad].iloc[0]!s})"), column=column) from None
    return series.to_numpy(dtype="datetime64[ns]").astype(np.int64), "datetime", timezone


def _parse_text(series: pd.Series, column: str, rows: np.ndarray) -> pd.Series:
    text = series.astype(str)
    try:
        with warnings.catch_warnings():  # mixed UTC offsets: pandas asks for utc=True
            warnings.simplefilter("error", FutureWarning)
            parsed = pd.to_datetime(text, errors="coerce", format="mixed")
    except (ValueError, TypeError, FutureWarning):
        parsed = None
    if parsed is None or not pd.api.types.is_datetime64_any_dtype(parsed):
        try:
            parsed = pd.to_datetime(text, errors="coerce", format="mixed", utc=True)
        except (ValueError, TypeError, OverflowError) as error:
            raise ValidationError(f"column {column!r}: the times cannot be parsed as dates "
                                  f"({str(error)[:200]}).", column=column) from None
    bad = parsed.isna().to_numpy()
    if bad.any():
        first = text[bad].iloc[0][:40]
        outside = _beyond_range(first)
        problem = (f"lie outside the dates that can be monitored ({DATE_RANGE[0]} to "
                   f"{DATE_RANGE[1]})" if outside else "cannot be parsed as dates")
        raise ValidationError(_rows_message(column, bad, rows, problem, f" (first: {first!r})"),
                              column=column)
    return parsed


def _beyond_range(text: str) -> bool:
    """Tell whether ``text`` is a date outside pandas' nanosecond range (``9999-12-31``)."""
    try:
        stamp = pd.Timestamp(text)  # pandas 2 holds such dates at a coarser unit
        stamp.as_unit("ns")
    except (pd.errors.OutOfBoundsDatetime, OverflowError):
        return True
    except (TypeError, ValueError):
        return False
    return False


def _rows_message(column: str, bad: np.ndarray, rows: np.ndarray, problem: str,
                  extra: str = "") -> str:
    where = np.sort(rows[bad])[:3]
    listed = ", ".join(str(int(r)) for r in where)
    return (f"column {column!r}: {int(bad.sum()):,} of {bad.size:,} rows {problem}{extra} "
            f"(rows {listed}).")


def _calendar(times: np.ndarray, calendar: str) -> tuple[np.ndarray, np.ndarray]:
    day = np.floor_divide(times, _DAY_NS)  # days since 1970-01-01 (a Thursday)
    if calendar == "day":
        unit = day
    elif calendar == "week":
        unit = np.floor_divide(day + 3, 7)  # weeks since Monday 1969-12-29
    else:
        months = times.astype("datetime64[ns]").astype("datetime64[M]").astype(np.int64)
        unit = months if calendar == "month" else np.floor_divide(months, 3)
    low, high = int(unit.min()), int(unit.max())
    code = unit - low
    units = np.arange(low, high + 2)
    if calendar == "day":
        starts = units.astype("datetime64[D]")
    elif calendar == "week":
        starts = (units * 7 - 3).astype("datetime64[D]")
    elif calendar == "month":
        starts = units.astype("datetime64[M]")
    else:
        starts = (units * 3).astype("datetime64[M]")
    return code, starts.astype("datetime64[ns]")


def _equal_width(times: np.ndarray, count: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    low, high = times.min(), times.max()
    span = float(high) - float(low)
    if span <= 0:
        code = np.zeros(times.size, dtype=np.int64)
    else:
        code = np.minimum(((times - low) / span * count).astype(np.int64), count - 1)
    edges = float(low) + span * np.arange(count + 1) / count
    if kind == "number":
        return code, edges
    return code, np.round(edges).astype(np.int64).astype("datetime64[ns]")


def _label(start: object, kind: str) -> str:
    if kind == "number":
        value = float(start)
        return str(int(value)) if value == round(value) and abs(value) < 2**53 else f"{value:.6g}"
    stamp = pd.Timestamp(start)
    if stamp == stamp.normalize():
        return stamp.date().isoformat()
    return stamp.isoformat(sep=" ", timespec="seconds")


def _check_periods(code: np.ndarray, labels: tuple[str, ...], name: str, column: str) -> None:
    noun = name if name.endswith("periods") else f"{name}s"
    if len(labels) < 2:
        raise ValidationError(f"column {column!r}: every row falls in one {name.split()[0]} "
                              f"({labels[0]}); monitoring needs at least 2 periods: choose "
                              f"shorter periods.", column=column)
    if len(labels) > MAX_PERIODS:
        raise ValidationError(f"column {column!r}: {len(labels):,} {noun}; at most "
                              f"{MAX_PERIODS:,} can be monitored: choose longer periods.",
                              column=column)
    empty = np.flatnonzero(np.bincount(code, minlength=len(labels)) == 0)
    if empty.size:
        listed = ", ".join(labels[i] for i in empty[:5])
        raise ValidationError(f"column {column!r}: {empty.size:,} of {len(labels):,} {noun} have "
                              f"no rows ({listed}{', ...' if empty.size > 5 else ''}); choose "
                              f"longer periods or a count of periods.", column=column)


def _reference(times: np.ndarray, starts: np.ndarray, labels: tuple[str, ...], reference: object,
               kind: str, column: str, timezone: str | None) -> tuple[int, str, tuple[str, ...]]:
    numeric_starts = starts.astype(np.float64) if kind == "number" else starts.astype(np.int64)
    default = reference is None or (isinstance(reference, str) and not reference.strip())
    if default:
        low, high = times.min(), times.max()
        end = float(low) + (float(high) - float(low)) / 4.0
        what = "the first quarter of the time range"
    else:
        end = _reference_value(reference, kind, column, timezone)
        what = f"the reference end {reference!s}"
    n_reference = int(np.sum(numeric_starts[1:] <= end))  # whole periods ending by the end
    if default:
        n_reference = max(n_reference, 1)  # periods longer than the quarter: the first one
    if n_reference == 0:
        raise ValidationError(
            f"column {column!r}: {what} comes before the end of the first period (it starts "
            f"{labels[0]} and ends {_label(starts[1], kind)}), so the reference would be empty; "
            f"{REFERENCE_RULE}. Give a later reference.", column=column)
    if n_reference >= len(labels):
        raise ValidationError(
            f"column {column!r}: {what} covers every period (the last starts {labels[-1]}), so "
            f"nothing is left to monitor; {REFERENCE_RULE}. Give an earlier reference.",
            column=column)
    notes = ()
    if not default and numeric_starts[n_reference] <= end < numeric_starts[n_reference + 1] \
            and end > numeric_starts[n_reference]:
        notes = (f"the period starting {labels[n_reference]} is cut in two by {what}: it is "
                 "monitored, not part of the reference (the reference takes whole periods "
                 "only).",)
    return n_reference, labels[n_reference], notes


def _reference_value(reference: object, kind: str, column: str, timezone: str | None) -> float:
    if kind == "number":
        try:
            value = float(reference)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValidationError(f"reference {reference!r} is not a number (column {column!r} "
                                  f"holds numbers).", column=column) from None
        return value
    outside = (f"reference {reference!s} lies outside the dates that can be monitored "
               f"({DATE_RANGE[0]} to {DATE_RANGE[1]}); give a date within the data's range.")
    try:
        stamp = pd.Timestamp(reference)  # type: ignore[arg-type]
    except (pd.errors.OutOfBoundsDatetime, OverflowError):
        raise ValidationError(outside, column=column) from None
    except (TypeError, ValueError):
        raise ValidationError(f"reference {reference!r} is not a date.", column=column) from None
    if pd.isna(stamp):
        raise ValidationError(f"reference {reference!r} is not a date.", column=column)
    whole_day = isinstance(reference, str) and stamp == stamp.normalize() and not re.search(
        r"\d[T ]\d|:", reference.strip())
    try:
        if stamp.tzinfo is not None:
            stamp = stamp.tz_convert(timezone).tz_localize(None) if timezone else \
                stamp.tz_convert("UTC").tz_localize(None)
        value = stamp.as_unit("ns").value
        if whole_day:  # a date without a time: through its last moment
            value = (stamp + pd.Timedelta(days=1)).as_unit("ns").value
    except (pd.errors.OutOfBoundsDatetime, OverflowError):
        raise ValidationError(outside, column=column) from None
    return float(value)
