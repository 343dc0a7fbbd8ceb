"""``mcviz monitor``: calibration over time, per segment, with family-wise controlled alarms.

Prints ``{"periods": [...], "reference_end": "...", "full": {...}, "segments": [{"description",
"alarm", "first_alarm", "shift", "ci_low", "ci_high", "p_adjusted"}]}``. ``periods`` are the
period labels (each period's start); ``reference_end`` the start of the first monitored period;
``first_alarm`` the label of the first period whose alarm statistic crossed the threshold, or
null; ``shift`` the mean of observed - predicted since the change (without an alarm: since the
reference) minus the reference's, with its 95% interval; ``p_adjusted`` is adjusted for every
segment and every period (single-step max-T over the horizon). ``full`` has the same keys for
the full population and, per period, ``count``, ``mean_score``, ``mean_response`` and ``z`` (the
standardised gap relative to the reference). The alarm rule is derived in
:mod:`mcviz.monitor.alarm`.
"""

from __future__ import annotations

import argparse
import sys

from mcviz.cli import _common

__all__ = ["SEGMENT_KEYS", "register", "result_json", "run"]

HELP = "watch calibration over time per segment, with alarms controlled over the whole horizon"
SEGMENT_KEYS = ("description", "alarm", "first_alarm", "shift", "ci_low", "ci_high",
                "p_adjusted")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz monitor``."""
    parser = subparsers.add_parser("monitor", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument("--time", metavar="COLUMN", help="the time column (dates, datetimes or "
                        "numbers; default: inferred)")
    parser.add_argument("--period", default="week", help="day, week, month, quarter, or a "
                        "count of equal periods (default %(default)s)")
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
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="family-wise false-alarm rate over every segment and period "
                        "(default %(default)s)")
    parser.add_argument("--draws", type=int, default=999,
                        help="null draws of the alarm threshold (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default %(default)s)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> dict:
    """Load the file, monitor it, and return the JSON object."""
    from mcviz.monitor import monitor_calibration

    _check_segment_levels(args)  # from the segment columns alone, before the file is read
    pred = _common.load_from_arguments(args)
    period = args.period.strip()
    result = monitor_calibration(
        pred, time=args.time, period=int(period) if period.isdigit() else period,
        reference=args.reference, segments=_common.split(args.segments) or (),
        filters=args.filter, search_reference=args.search_reference,
        covariates=_common.split(args.covariates), alpha=args.alpha, n_draws=args.draws,
        seed=args.seed)
    for notice in result.notices:
        print(f"mcviz: note: {notice}", file=sys.stderr)
    return result_json(result)


def _check_segment_levels(args: argparse.Namespace) -> None:
    """Refuse ``--segments`` with more levels than can be monitored, counted column by column."""
    from mcviz.errors import ValidationError
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
    return {
        "periods": list(result.periods.labels),
        "reference_end": result.periods.reference_end,
        "full": full,
        "segments": [_series_json(result, s) for s in result.segments],
    }


def _series_json(result, series) -> dict:
    return {
        "description": series.description,
        "alarm": bool(series.alarm),
        "first_alarm": result.label(series.first_alarm),
        "shift": float(series.shift),
        "ci_low": float(series.ci_low),
        "ci_high": float(series.ci_high),
        "p_adjusted": float(series.p_adjusted),
    }
