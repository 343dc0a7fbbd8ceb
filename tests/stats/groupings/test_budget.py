import numpy as np
import pytest

from mcviz import budget
from mcviz.budget import (
    DEFAULT_TIME_BUDGET,
    Budget,
    Estimate,
    check,
    format_bytes,
    knn_estimate,
    memory_budget,
    parse_bytes,
    partition_estimate,
    report_progress,
    time_budget,
)
from mcviz.errors import ValidationError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4GB", 4 * 10**9),
        ("4 gb", 4 * 10**9),
        ("512MiB", 512 * 2**20),
        ("1.5GiB", int(1.5 * 2**30)),
        ("2e9", 2 * 10**9),
        ("100kB", 100_000),
        (3_000, 3_000),
    ],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "four GB", "4 parsecs", "-1GB", "0", "GB"])
def test_parse_bytes_refuses_nonsense(text):
    with pytest.raises(ValidationError, match="memory budget"):
        parse_bytes(text)


def test_memory_budget_argument_then_environment_then_share(monkeypatch):
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "3GB")
    assert memory_budget("1GB") == 10**9
    assert memory_budget() == 3 * 10**9
    monkeypatch.delenv("MCVIZ_MEMORY_BUDGET")
    monkeypatch.setattr(budget, "_physical_memory", lambda: 16 * 10**9)
    assert memory_budget() == int(budget.DEFAULT_SHARE * 16 * 10**9)


def test_time_budget(monkeypatch):
    monkeypatch.delenv("MCVIZ_TIME_BUDGET", raising=False)
    assert time_budget() == DEFAULT_TIME_BUDGET == 3600.0  # one hour unless told otherwise
    for lifted in ("none", "Off", " unlimited "):
        monkeypatch.setenv("MCVIZ_TIME_BUDGET", lifted)
        assert time_budget() is None
    monkeypatch.setenv("MCVIZ_TIME_BUDGET", "30")
    assert time_budget() == 30.0
    monkeypatch.setenv("MCVIZ_TIME_BUDGET", "soon")
    with pytest.raises(ValidationError, match="MCVIZ_TIME_BUDGET"):
        time_budget()


def test_check_states_cost_budget_and_what_to_change():
    estimate = Estimate("k-NN local calibration: 3,000,000 rows", 3 * 10**9, 40.0,
                        "choose fewer centres (max_centres)")
    assert check(estimate, "4GB") is estimate
    with pytest.raises(ValidationError) as caught:
        check(estimate, "2GB")
    message = str(caught.value)
    assert "refused before starting: k-NN local calibration: 3,000,000 rows" in message
    assert "about 3.0 GB and 40 s" in message
    assert "memory 3.0 GB > budget 2.0 GB" in message
    assert "choose fewer centres (max_centres)" in message
    assert "MCVIZ_MEMORY_BUDGET" in message
    with pytest.raises(ValidationError, match=r"time 40 s > budget 10 s"):
        check(estimate, Budget(bytes=10**10, seconds=10.0))


def test_format_bytes():
    assert [format_bytes(x) for x in (999, 12_300, 340e6, 1.234e9, 25e9)] == [
        "999 B", "12 kB", "340 MB", "1.2 GB", "25 GB",
    ]


def test_estimates_grow_with_rows_and_centres_but_not_with_levels():
    base = {"numeric": 4, "nominal": 1, "centres": 2_000, "k": 100}
    few = knn_estimate(10**6, levels=5, **base)
    many = knn_estimate(10**6, levels=500, **base)
    # Levels are integer codes: 495 more levels cost at most 100 B each and one k-d tree kept
    # per level searched (3 kB), not 10^6 x 8 B each.
    assert many.bytes - few.bytes <= (100 + 3_000) * 495
    assert knn_estimate(2 * 10**6, levels=5, **base).bytes > 1.9 * few.bytes - 1e8
    more_centres = knn_estimate(10**6, numeric=4, nominal=1, levels=5, centres=20_000, k=100)
    assert more_centres.seconds > few.seconds
    assert "max_centres" in few.advice
    assert "1,000,000 rows" in few.what
    assert partition_estimate(10**6, 10).bytes < partition_estimate(10**7, 10).bytes


def test_report_progress_clips_and_skips_none():
    seen = []
    report_progress(None, 0.5, "nothing happens")
    report_progress(lambda f, t: seen.append((f, t)), 1.7, "done")
    report_progress(lambda f, t: seen.append((f, t)), -1, "start")
    assert seen == [(1.0, "done"), (0.0, "start")]
    assert np.isfinite(seen[0][0])
