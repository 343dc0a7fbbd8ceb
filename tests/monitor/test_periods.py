"""Time role, periods and the reference: calendars worked out by hand, messages for bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcviz.errors import ValidationError
from mcviz.monitor import infer_time_column, make_periods


def _dates(*texts):
    return pd.Series(pd.to_datetime(list(texts), format="mixed"))


def test_weeks_start_on_monday_and_are_labelled_by_it():
    # 2026-01-01 is a Thursday: its week starts Monday 2025-12-29.
    values = _dates("2026-01-01", "2026-01-04 23:59", "2026-01-05", "2026-01-18", "2026-01-19")
    periods = make_periods(values, column="d", period="week")
    assert periods.labels == ("2025-12-29", "2026-01-05", "2026-01-12", "2026-01-19")
    assert periods.code.tolist() == [0, 0, 1, 2, 3]


def test_months_quarters_days():
    values = _dates("2026-01-31", "2026-02-01", "2026-03-15", "2026-04-01")
    assert make_periods(values, column="d", period="month").code.tolist() == [0, 1, 2, 3]
    quarters = make_periods(values, column="d", period="quarter")
    assert quarters.labels == ("2026-01-01", "2026-04-01")
    assert quarters.code.tolist() == [0, 0, 0, 1]
    days = make_periods(_dates("2026-01-01 10:00", "2026-01-02 01:00", "2026-01-02 23:00"),
                        column="d", period="day")
    assert days.labels == ("2026-01-01", "2026-01-02")
    assert days.code.tolist() == [0, 1, 1]


def test_equal_width_periods_of_numbers_and_the_default_reference():
    values = pd.Series(np.arange(0, 101))  # 0..100 in 4 periods of width 25, the last closed
    periods = make_periods(values, column="t", period=4)
    assert periods.labels == ("0", "25", "50", "75")
    assert np.bincount(periods.code).tolist() == [25, 25, 25, 26]
    # the first quarter of the range ends at 25: only the first period ends by then
    assert periods.n_reference == 1
    assert periods.reference_end == "25"


def test_reference_date_takes_the_periods_starting_before_it():
    values = pd.Series(pd.date_range("2026-01-01", "2026-06-30", freq="D"))
    periods = make_periods(values, column="d", period="month", reference="2026-03-01")
    assert periods.n_reference == 2
    assert periods.reference_end == "2026-03-01"
    later = make_periods(values, column="d", period="month", reference="2026-03-31")
    assert later.n_reference == 3  # a date counts through its last moment: March ends by it
    assert later.notes == ()
    cut = make_periods(values, column="d", period="month", reference="2026-03-30")
    assert cut.n_reference == 2  # whole periods only: March is cut, monitored, and said so
    assert len(cut.notes) == 1
    assert "2026-03-01 is cut in two" in cut.notes[0]
    assert make_periods(values, column="d", period="month",
                        reference="2026-03-31 00:00").n_reference == 2  # a time: that moment
    assert make_periods(values, column="d", period="month",
                        reference="2026-04-01").n_reference == 3


def test_time_zone_aware_times_fall_in_periods_of_their_own_wall_time():
    # 23:30 in New York on Sunday 2026-01-04 is Monday in UTC: it belongs to the earlier week.
    values = pd.Series(pd.to_datetime(["2026-01-04 23:30", "2026-01-05 00:30",
                                       "2026-01-12 09:00"]).tz_localize("America/New_York"))
    periods = make_periods(values, column="d", period="week", reference="2026-01-05")
    assert periods.code.tolist() == [0, 1, 2]
    assert periods.timezone == "America/New_York"
    assert periods.start(1) == pd.Timestamp("2026-01-05", tz="America/New_York")


def test_text_in_mixed_formats_and_mixed_offsets_is_parsed_as_pandas_does():
    text = pd.Series(["2026-01-02", "January 20, 2026", "2026-02-03T10:00:00+01:00",
                      "2026-03-04 08:00:00-05:00"])
    periods = make_periods(text, column="d", period="month")
    assert periods.labels == ("2026-01-01", "2026-02-01", "2026-03-01")
    assert periods.code.tolist() == [0, 0, 1, 2]


@pytest.mark.parametrize(("values", "period", "reference", "message"), [
    (pd.Series(["2026-01-01", "soon", "2026-02-01", "never"]), "month", None,
     r"column 'd': 2 of 4 rows cannot be parsed as dates \(first: 'soon'\) \(rows 1, 3\)"),
    (_dates("2026-01-01", "2026-01-02"), "month", None, "every row falls in one month"),
    (_dates("2026-01-01", "2026-03-02", "2026-04-01"), "month", None,
     "1 of 4 months have no rows \\(2026-02-01\\)"),
    (_dates("2026-01-01", "2026-02-02"), "month", "2027-01-01", "covers every period"),
    (_dates("2026-01-01", "2026-02-02"), "month", "2025-01-01", "reference would be empty"),
    (pd.Series([1, 2, 3]), "week", None, "holds numbers, not dates"),
    (pd.Series([pd.Timestamp("2026-01-01"), pd.NaT]), "day", None, "1 of 2 rows have no time"),
    (_dates("2026-01-01", "2026-03-02"), "fortnight", None, "period must be one of"),
    (_dates("2026-01-01", "2026-03-02"), 1, None, "period must be one of"),
])
def test_bad_time_input_gets_a_clear_message(values, period, reference, message):
    with pytest.raises(ValidationError, match=message):
        make_periods(values, column="d", period=period, reference=reference)


def test_time_role_inference():
    frame = pd.DataFrame({"x": [1.0, 2.0], "when": pd.to_datetime(["2026-01-01", "2026-01-02"]),
                          "date_text": ["2026-01-01", "2026-01-02"]})
    assert infer_time_column(frame) == "when"
    assert infer_time_column(frame.drop(columns="when")) == "date_text"
    assert infer_time_column(pd.DataFrame({"week": [1, 2], "name": ["a", "b"]})) == "week"
    assert infer_time_column(pd.DataFrame({"size": [1, 2], "name": ["a", "b"]})) is None
    assert infer_time_column(pd.DataFrame({"hours_per_week": [40, 38]})) is None
