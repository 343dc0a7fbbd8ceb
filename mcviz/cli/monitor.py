"""``mcviz monitor``: calibration over time, per segment, with family-wise controlled alarms.

Prints ``{"n", "time", "period", "periods": [...], "reference_end", "alpha", "draws", "full":
{...}, "segments": [{"description", "alarm", "first_alarm", "change_start", "change_end",
"shift", "ci_low", "ci_high", "p_adjusted", "sentence"}], "notices"}``. ``periods`` are the
period labels (each period's start); ``reference_end`` the start of the first monitored period;
``first_alarm`` the label of the first period whose alarm statistic crossed the threshold, or
null; ``change_start`` and ``change_end`` the first and last period of the window ``shift`` is
measured over (with an alarm: the window where the change shows most; without one: every
monitored period); ``shift`` the mean of observed - predicted over that window minus the
reference's, with its 95% interval; ``p_adjusted`` is adjusted for every segment and every
period (single-step max-T over the horizon); ``sentence`` says it in words. ``full`` has the
same keys for the full population and, per period, ``count``, ``mean_score``,
``mean_response`` and ``z`` (the standardised gap relative to the reference). ``alpha``,
``draws`` and the seed come from :class:`mcviz.settings.MonitorSettings` (``--alpha``,
``--draws``, ``--seed``). The alarm rule is derived in :mod:`mcviz.monitor.alarm`. Without
``--json``: a sentence per series (alarms first), then a compact table.

``--engine duckdb|spark`` (Parquet): the engine sums the periods x segments cells in one grouped
pass and the scan runs on those sums (:mod:`mcviz.monitor.at_scale`; the null draws are the
cell-level normal ones, which memory uses too above 10^5 rows at 199 draws).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from typing import TYPE_CHECKING

from mcviz.cli import _common
from mcviz.cli.engine_options import add_engine_arguments, require_engine
from mcviz.errors import ValidationError
from mcviz.settings import PERIODS, MonitorSettings

if TYPE_CHECKING:  # pandas only when a table is written
    import pandas as pd

__all__ = ["SEGMENT_KEYS", "register", "result_json", "run", "text"]

HELP = "watch calibration over time per segment, with alarms controlled over the whole horizon"
SEGMENT_KEYS = ("description", "alarm", "first_alarm", "change_start", "change_end", "shift",
                "ci_low", "ci_high", "p_adjusted", "sentence")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz monitor``."""
    parser = subparsers.add_parser("monitor", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument("--time", metavar="COLUMN", help="the time column (dates, datetimes or "
                        "numbers; default: inferred)")
    parser.add_argument("--period", default=MonitorSettings.period,
                        help=", ".join(PERIODS) + ", or a count of equal periods (default "
                        "%(default)s)")
    parser.add_argument("--reference", metavar="DATE", help="the reference is every whole "
                        "period that ends by DATE (a date without a time counts through its "
                        "last moment: 2013-01-31 takes in January; a period DATE cuts in two is "
                        "monitored, and a note says so); default: the first quarter of the time "
                        "range")
    parser.add_argument("--segments", metavar="COL,COL", help="comma-separated covariates whose "
                        "every level is monitored")
    parser.add_argument("--filter", action="append", default=[], metavar="EXPR",
                        help="a monitored segment as a filter expression (repeatable)")
    parser.add_argument("--search-reference", action="store_true", help="also monitor the "
                        "confirmed findings of a search on the reference periods")
    parser.add_argument("--covariates", help="comma-separated covariates the search may use "
                        "(default: all but the time column)")
    _common.add_settings_arguments(parser, MonitorSettings)  # alpha, draws, seed: settings
    add_engine_arguments(parser, "duckdb or spark: sum the periods x segments cells in the "
                         "engine (Parquet; one grouped pass), then scan them in memory "
                         "(default numpy: all in memory)")
    parser.add_argument("--out", metavar="FILE.parquet",
                        help="with --engine duckdb or spark: write one row per monitored series "
                        "(alarm, change window, shift, adjusted p) with the run's context, for "
                        "the dashboard's Screening page (it drills into a series' rows)")
    parser.set_defaults(run=run, text=text)


def run(args: argparse.Namespace) -> dict:
    """Load the file, monitor it, and return the JSON object."""
    from mcviz.monitor import monitor_calibration

    engine = getattr(args, "engine", "numpy")
    if engine != "numpy":
        require_engine(engine)  # one line naming what to install, before any work
    out = getattr(args, "out", None)
    if out is not None:
        if engine == "numpy":
            raise ValidationError("--out is written by --engine duckdb or spark (the dashboard's "
                                  "Monitor page shows an in-memory monitor itself).")
        _common.check_output(out, flag="--out", suffixes=(".parquet",))
    _check_segment_levels(args)  # from the segment columns alone, before the file is read
    numbers = _common.settings_from_arguments(MonitorSettings, args)
    period = args.period.strip()
    settings = dataclasses.replace(
        numbers, time=args.time, period=int(period) if period.isdigit() else period,
        reference=args.reference, segments=tuple(_common.split(args.segments) or ()),
        filters=tuple(args.filter), search_reference=args.search_reference,
        covariates=_common.split(args.covariates))
    if engine != "numpy":
        from mcviz.cli.engine_monitor import monitor_in_engine

        result, where = monitor_in_engine(args, settings)
    else:
        result = monitor_calibration(_common.load_from_arguments(args), settings=settings)
    for notice in result.notices:
        print(f"mcviz: note: {notice}", file=sys.stderr)
    output = result_json(result)
    if out is not None:
        from mcviz.engines.results import write_results

        with _common.atomic_output(out) as temporary:
            write_results(series_frame(output, result), temporary, kind="monitor", n=result.n,
                          **where)
    return output


def series_frame(output: dict, result) -> pd.DataFrame:
    """One row per series of the monitor's JSON (row 0: the full population), with its rows."""
    import pandas as pd

    series = [result.full, *result.segments]
    frame = pd.DataFrame([output["full"], *output["segments"]])
    frame.insert(0, "id", range(len(frame)))
    frame.insert(2, "size", [int(s.count.sum()) for s in series])
    return frame


def _check_segment_levels(args: argparse.Namespace) -> None:
    """Refuse ``--segments`` with more levels than can be monitored, counted column by column."""
    from mcviz.io.levels import count_levels
    from mcviz.monitor.segments import MAX_SEGMENTS

    columns = _common.split(args.segments) or []
    if not columns:
        return
    room = MAX_SEGMENTS - len(args.filter)
    counts = count_levels(args.file, columns, stop_above=max(room, 0))
    if sum(counts.values()) > room:
        levels = ", ".join(f"{name!r} {count:,}{'+' if count > room else ''}"
                           for name, count in counts.items())
        raise ValidationError(
            f"--segments: the columns have at least {sum(counts.values()):,} levels ({levels}), "
            f"counted before the file was read; at most {MAX_SEGMENTS} segments (levels and "
            "--filter expressions) can be monitored at once: choose columns with fewer levels, "
            "or name the segments you want with --filter.")


def result_json(result) -> dict:
    """Return the JSON object of a monitor (the contract of ``mcviz monitor --json``)."""
    full = _series_json(result, result.full)
    full.update({
        "count": result.full.count.tolist(),
        "mean_score": result.full.mean_score.tolist(),
        "mean_response": result.full.mean_response.tolist(),
        "z": result.full.z.tolist(),
    })
    periods = result.periods
    return {
        "n": result.n,
        "time": periods.column,
        "period": periods.period,
        "periods": list(periods.labels),
        "reference_end": periods.reference_end,
        "alpha": result.alpha,
        "draws": int(result.null_maxima.size),
        "full": full,
        "segments": [_series_json(result, s) for s in result.segments],
        "notices": list(result.notices),
    }


def _series_json(result, series) -> dict:
    return {
        "description": series.description,
        "alarm": bool(series.alarm),
        "first_alarm": result.label(series.first_alarm),
        "change_start": result.label(series.change_start),
        "change_end": result.label(series.change_end),
        "shift": float(series.shift),
        "ci_low": float(series.ci_low),
        "ci_high": float(series.ci_high),
        "p_adjusted": float(series.p_adjusted),
        "sentence": series.sentence,
    }


def text(output: dict) -> None:
    """Print the monitor for a reader: what was watched, one sentence per series, a table."""
    import textwrap

    from mcviz.text import display_text

    noun = output["period"] if output["period"] in PERIODS else "period"
    series = [output["full"], *output["segments"]]
    alarms = sum(s["alarm"] for s in series)
    print(textwrap.fill(display_text(
        f"Monitored {output['n']:,} rows over {len(output['periods'])} {noun}s of "
        f"{output['time']}; the reference ends at {output['reference_end']}. "
        f"{alarms} of {len(series)} series alarmed (false alarms at most "
        f"{output['alpha']:g} over every series and {noun}, {output['draws']:,} null draws)."),
        width=100))
    for item in sorted(series, key=lambda s: not s["alarm"]):  # alarms first
        print(textwrap.fill(display_text(item["sentence"]), width=100, initial_indent="- ",
                            subsequent_indent="  "))
    for notice in output["notices"]:
        print(textwrap.fill(display_text(notice), width=100))
    print()
    rows = [[s["description"], "yes" if s["alarm"] else "no", s["first_alarm"],
             s["change_start"] if s["change_start"] == s["change_end"]
             else f"{s['change_start']} to {s['change_end']}",
             f"{s['shift']:+.3f}", f"{s['ci_low']:+.3f} to {s['ci_high']:+.3f}",
             f"{s['p_adjusted']:.3g}"] for s in series]
    print(_common.text_table(["series", "alarm", "first alarm", "window of the shift",
                              "shift", "95% CI", "p adjusted"], rows))
