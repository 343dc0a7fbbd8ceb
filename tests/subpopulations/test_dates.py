"""Datetime covariates are written and read as dates everywhere, never as nanoseconds."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dashboard import runs
from mcviz import Predictions
from mcviz.stats.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.present.figures import cumulative_figure, format_number, gap_figure, variable_curves_figure
from mcviz.stats.groupings import covariate_bins
from mcviz.search import search_subpopulations
from mcviz.subpopulations import (
    Condition,
    describe_conditions,
    filter_subpopulation,
    generate_subpopulations,
    parse_filter,
    select_rows,
)
from mcviz.subpopulations.describe import shortest_timestamp, timestamp_text
from mcviz.stats.variables import variable_calibration

# Written dates: "2021-03-04" or "2021-03-04 12:00:00[.fraction][+hh:mm]"; no run of 12+ digits
ISO = r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[+-]\d{2}:\d{2})?)?"
NANOSECONDS = re.compile(r"when [<≥] (?!\d{4}-\d{2}-\d{2})")  # a threshold that is no date


def _many_times_a_day(n=1500, seed=0, tz=None):
    """Several instants on each day (hours, half seconds, single nanoseconds) and a signal."""
    rng = np.random.default_rng(seed)
    when = (pd.Timestamp("2021-01-01", tz=tz)
            + pd.to_timedelta(rng.integers(0, 60, n), unit="D")
            + pd.to_timedelta(rng.integers(0, 4, n) * 5, unit="h")
            + pd.to_timedelta(rng.integers(0, 2, n) * 500, unit="ms")
            + pd.to_timedelta(rng.integers(0, 2, n), unit="ns"))
    score = rng.uniform(0.05, 0.95, n)
    late = np.asarray(when >= pd.Timestamp("2021-02-01", tz=tz))
    label = (rng.random(n) < np.where(late, score**3, score)).astype(int)
    return Predictions.from_arrays(score, label, covariates=pd.DataFrame(
        {"when": when, "x": rng.normal(size=n)}))


def _written_dates(description: str) -> list[str]:
    return re.findall(r"when [<≥] (" + ISO + ")", description)


# ------------------------------------------------------------------------------------------
# Writing and reading one instant


@pytest.mark.parametrize(("stamp", "text"), [
    (pd.Timestamp("2021-03-04"), "2021-03-04"),
    (pd.Timestamp("2021-03-04 12:00"), "2021-03-04 12:00:00"),
    (pd.Timestamp("2021-03-04 12:00:00.5"), "2021-03-04 12:00:00.500000"),
    (pd.Timestamp("2021-03-04 00:00:00.000000001"), "2021-03-04 00:00:00.000000001"),
    (pd.Timestamp("2021-03-04", tz="UTC"), "2021-03-04 00:00:00+00:00"),
])
def test_timestamp_text_is_iso_and_parses_back(stamp, text):
    assert timestamp_text(stamp) == text
    kinds = {"when": "ordinal"}
    (condition,) = parse_filter(f"when >= {text}", kinds)  # bare, as descriptions write it
    assert condition.value == stamp
    assert parse_filter(f'when >= "{text}"', kinds) == (condition,)  # quoted still reads


@pytest.mark.parametrize(("value", "previous", "expected"), [
    # previous on an earlier day: the day itself keeps the same rows
    ("2021-03-04 05:00:00.5", "2021-03-03 15:00", "2021-03-04"),
    # same day, earlier hour: the hour
    ("2021-03-04 17:30", "2021-03-04 09:00", "2021-03-04 17:00"),
    # same minute: the second, then the millisecond, then the nanosecond
    ("2021-03-04 17:30:07", "2021-03-04 17:30:06.2", "2021-03-04 17:30:07"),
    ("2021-03-04 17:30:07.25", "2021-03-04 17:30:07", "2021-03-04 17:30:07.25"),
    ("2021-03-04 00:00:00.000000001", "2021-03-04", "2021-03-04 00:00:00.000000001"),
])
def test_shortest_timestamp_hand_cases(value, previous, expected):
    assert shortest_timestamp(pd.Timestamp(value), pd.Timestamp(previous)) == pd.Timestamp(
        expected)


def test_bare_dates_select_hand_computed_rows():
    when = pd.to_datetime(["2021-03-03 12:00", "2021-03-04 09:00", "2021-03-04 17:30",
                           "2021-03-05 08:00", None])
    pred = Predictions.from_arrays([0.1, 0.3, 0.5, 0.7, 0.9], [0, 1, 0, 1, 1],
                                   covariates=pd.DataFrame({"when": when, "x": range(5)}))

    def rows(text):
        return pred.row[filter_subpopulation(pred, text).index].tolist()

    assert rows("when < 2021-03-04") == [0]
    assert rows("when >= 2021-03-04 and when < 2021-03-04 17:00:00") == [1]
    assert rows("when >= 2021-03-04T17:30") == [2, 3, 4]  # missing sorts last
    assert rows("when in {2021-03-04 09:00:00, 2021-03-05 08:00:00}") == [1, 3]
    with pytest.raises(ValidationError, match="is numeric; expected a number"):
        parse_filter("x > 2021-03-04", pred)


# ------------------------------------------------------------------------------------------
# Every description of a datetime split re-parses to exactly its members


def test_algorithm_1_descriptions_are_dates_and_round_trip():
    pred = _many_times_a_day()
    subpops = generate_subpopulations(pred, n_subpopulations=150, min_size=5, seed=3)
    written = []
    for sub in subpops.subpopulations[1:]:
        assert not NANOSECONDS.search(sub.description), sub.description
        assert np.array_equal(filter_subpopulation(pred, sub.description).index, sub.index)
        written += _written_dates(sub.description)
    assert written, "no datetime split generated"
    # thresholds between two instants of one day are written with their time
    assert any(" " in w for w in written)
    assert any(" " not in w for w in written)


def test_algorithm_1_threshold_between_two_times_of_one_day():
    # 4 distinct instants: the first split is at v_2 = 17:30 whose previous value is 09:00 on
    # the same day, so the shortest exact threshold is 17:00 (the hour).
    when = pd.to_datetime(["2021-03-03 12:00", "2021-03-04 09:00", "2021-03-04 17:30",
                           "2021-03-05 08:00"] * 5)
    pred = Predictions.from_arrays(np.linspace(0.1, 0.9, 20), [0, 1] * 10,
                                   covariates=pd.DataFrame({"when": when}))
    subpops = generate_subpopulations(pred, n_subpopulations=6, min_size=1, seed=0)
    depth_one = {s.description for s in subpops if s.depth == 1}
    assert depth_one <= {"when < 2021-03-04 17:00:00", "when ≥ 2021-03-04 17:00:00"}
    assert depth_one
    for sub in subpops:
        assert np.array_equal(select_rows(pred, parse_filter(sub.description, pred)), sub.index)


def test_time_zone_aware_descriptions_round_trip():
    pred = _many_times_a_day(n=600, seed=2, tz="Europe/Paris")
    subpops = generate_subpopulations(pred, n_subpopulations=60, min_size=5, seed=1)
    for sub in subpops.subpopulations[1:]:
        assert not NANOSECONDS.search(sub.description), sub.description
        assert np.array_equal(filter_subpopulation(pred, sub.description).index, sub.index)


def test_search_descriptions_are_dates_and_round_trip():
    pred = _many_times_a_day(n=4000, seed=1)
    result = search_subpopulations(pred, covariates=["when"], max_conditions=2, seed=0)
    assert result.findings
    for finding in result.findings:
        assert not NANOSECONDS.search(finding.description), finding.description
        assert _written_dates(finding.description)
    for sub in result.subpopulations.subpopulations[1:]:
        assert np.array_equal(filter_subpopulation(pred, sub.description).index, sub.index)


# ------------------------------------------------------------------------------------------
# Bins, review levels and cumulative positions


@pytest.mark.parametrize(("tz", "suffix"), [(None, ""), ("Europe/Paris", " 00:00:00+01:00")])
def test_covariate_bins_labels_are_dates(tz, suffix):
    # equal width between 2021-01-01 and 2021-01-05: edges 01-01, 01-03, 01-05
    when = pd.date_range("2021-01-01", periods=5, freq="D", tz=tz)
    pred = Predictions.from_arrays([0.2, 0.4, 0.5, 0.6, 0.8], [0, 1, 0, 1, 1],
                                   covariates=pd.DataFrame({"d": when}))
    groups = covariate_bins(pred, "d", n_bins=2, strategy="width")
    first, middle, last = (f"2021-01-0{day}{suffix}" for day in (1, 3, 5))
    assert groups.labels == (f"d ∈ [{first}, {middle})", f"d ∈ [{middle}, {last}]")


def test_review_levels_of_a_datetime_are_dates_and_partition_the_rows():
    pred = _many_times_a_day(n=800)
    levels = runs.scope_levels(pred, "when")
    assert len(levels) == 5
    sizes = 0
    for level in levels:
        assert not NANOSECONDS.search(level), level
        assert re.search(ISO, level), level
        sizes += filter_subpopulation(pred, level).size
    assert sizes == pred.n


def test_cumulative_along_a_date_keeps_dates_and_counts_missing():
    rng = np.random.default_rng(5)
    n = 400
    days = rng.integers(0, 30, n)
    when = pd.Series(pd.Timestamp("2022-05-01") + pd.to_timedelta(days, unit="D"))
    when[:7] = pd.NaT
    day_number = np.where(when.isna(), np.nan, days)
    pred = Predictions.from_arrays(rng.random(n), rng.integers(0, 2, n),
                                   covariates=pd.DataFrame({"when": when, "day": day_number}))
    by_date = cumulative_differences(pred, order_by="when")
    by_number = cumulative_differences(pred, order_by="day")  # the same order, as numbers
    assert by_date.n_missing == 7
    assert by_date.position.dtype == np.dtype("datetime64[ns]")
    expected = pd.Timestamp("2022-05-01") + pd.to_timedelta(by_number.position, unit="D")
    np.testing.assert_array_equal(by_date.position, expected.to_numpy())
    np.testing.assert_allclose(by_date.path, by_number.path)
    figure = cumulative_figure(by_date)
    assert all(re.fullmatch(ISO, t) for t in figure.layout.xaxis.ticktext)


def test_parsing_without_predictions_reads_descriptions_of_dates():
    text = describe_conditions([Condition("when", ">=", pd.Timestamp("2021-03-04 12:00")),
                                Condition("when", "<", pd.Timestamp("2021-04-01"))])
    assert text == "when ≥ 2021-03-04 12:00:00 and when < 2021-04-01"
    assert parse_filter(text, {"when": "ordinal"}) == (
        Condition("when", ">=", pd.Timestamp("2021-03-04 12:00")),
        Condition("when", "<", pd.Timestamp("2021-04-01")))


def test_variable_calibration_along_a_date_writes_dates():
    # the same days as a datetime, a time-zone aware datetime and day numbers: one curve
    rng = np.random.default_rng(3)
    n = 1500
    days = rng.integers(0, 200, n)
    when = pd.Timestamp("2021-01-01") + pd.to_timedelta(days, unit="D")
    score = rng.uniform(0.05, 0.95, n)
    label = (rng.random(n) < np.where(days > 100, 0.5, score)).astype(int)
    pred = Predictions.from_arrays(score, label, covariates=pd.DataFrame(
        {"when": when, "utc": when.tz_localize("UTC"), "day": days.astype(float)}))
    by_date = variable_calibration(pred, "when")
    by_utc = variable_calibration(pred, "utc")  # time-zone aware: no TypeError
    by_day = variable_calibration(pred, "day")
    assert by_date.dates
    assert by_utc.dates
    assert not by_day.dates
    np.testing.assert_allclose(by_date.gap.fit, by_day.gap.fit, atol=1e-9)
    np.testing.assert_allclose(by_utc.gap.fit, by_date.gap.fit)
    record = by_date.record()
    day_at = by_day.vce_at  # v* in days after 2021-01-01, written as that date
    # (to the microsecond: the grid point in nanoseconds is a float of about 1.6e18)
    assert abs(pd.Timestamp(record["vce_at"]) - (pd.Timestamp("2021-01-01") + pd.Timedelta(
        days=day_at))) < pd.Timedelta(microseconds=1)
    for figure in (variable_curves_figure(by_date), gap_figure(by_date)):
        assert all(re.fullmatch(ISO, t) for t in figure.layout.xaxis.ticktext)
    # the title writes v* at the day (#40: never '13:45:22.168' for days 200 apart)
    assert f"at when = {pd.Timestamp(record['vce_at']):%Y-%m-%d} ·" in variable_curves_figure(
        by_date).layout.title.text


def test_a_single_date_is_named_as_a_date():
    when = pd.to_datetime(["2021-01-01", "2021-01-01", None, "2021-01-01"])
    pred = Predictions.from_arrays([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1],
                                   covariates=pd.DataFrame({"when": when, "x": [1, 2, 3, 4]}))
    with pytest.raises(ValidationError, match=r"single value \(2021-01-01 00:00:00\) on the 3"):
        variable_calibration(pred, "when")
