"""``mcviz compare``: two models on the same labelled rows — which to ship, and where each is worse.

Prints ``{"n", "models": {"a", "b"} (each: {"score", "calibration", "classical"}), "paired":
{"brier_a", "brier_b", "brier_difference", "ci_low", "ci_high", "log_loss_difference",
"log_loss_ci_low", "log_loss_ci_high", "order_by", "kuiper", "sigma", "kuiper_z", "p_value",
"paths"}, "regressions": [{"description", "sentence", "share", "effect", "ci_low", "ci_high",
"p_adjusted", "confirmed", "calibration_a", "calibration_b", ...}], "improvements": [same],
"net_benefit": {"thresholds", "a", "b", "difference", "ci_low", "ci_high",
"difference_per_1000", ...}, "verdict": [sentences], "next_step", "notice"}`` (plus ``"join"``
with ``--challenger``; ``"slides"`` and ``"deck"``, the paths written, with ``--deck``).
Differences are B - A: a positive Brier difference or regression
effect means B's loss is higher. Without ``--json``: the sentences and a compact table.

``--engine duckdb|spark`` (Parquet; ``--memory-limit``, ``--spark-master``): every sum and path
on every row inside the engine (the classical measures as ``mcviz metrics --engine``), the
groups on a random sample (``--sample-rows``), and ``"engine"`` added
(:mod:`mcviz.cli.engine_compare`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap

from mcviz.cli import _common
from mcviz.errors import ValidationError
from mcviz.text import display_text

__all__ = ["register", "run", "text"]

HELP = "compare two models on the same labelled rows: losses, calibration, groups, decisions"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz compare``."""
    from mcviz.settings import DEFAULT_THRESHOLDS, CompareSettings, format_thresholds

    parser = subparsers.add_parser("compare", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    parser.add_argument("--score-b", required=True, metavar="COLUMN",
                        help="the second model's (B's, the challenger's) score column")
    parser.add_argument("--challenger", metavar="FILE",
                        help="a second file holding B's scores, joined on --id")
    parser.add_argument("--id", metavar="COLUMN", help="the id column joining --challenger")
    parser.add_argument("--covariates", help="comma-separated covariates to order by and search "
                        "(default: every column that is no score, label, weight or id)")
    parser.add_argument("--thresholds", default=format_thresholds(DEFAULT_THRESHOLDS),
                        help="comma-separated decision thresholds in (0, 1) (default "
                        "%(default)s)")
    _common.add_settings_arguments(parser, CompareSettings)
    from mcviz.cli.engine_options import add_engine_arguments

    add_engine_arguments(parser, "duckdb or spark: the paired statistics on every row of the "
                         "Parquet data inside the engine; the groups on a random sample "
                         "(default numpy: all in memory)")
    parser.add_argument("--sample-rows", type=int, metavar="N",
                        help="rows sampled to search the groups with --engine duckdb or spark "
                        "(default: as many as the memory budget allows)")
    parser.add_argument("--deck", action="append", metavar="OUT", default=[],
                        help="write the comparison's slides to OUT.pptx or OUT.pdf (may be "
                        "given twice)")
    parser.set_defaults(run=run, text=text)


def _frame(args: argparse.Namespace):
    """Return the table to load (the join with ``--challenger``) and the join's report."""
    from mcviz.compare import join_challenger
    from mcviz.io import read_table

    frame = read_table(args.file)
    frame.columns = [str(c) for c in frame.columns]
    if args.challenger is None:
        if args.id is not None:
            raise ValidationError("--id joins a --challenger file; give --challenger FILE too.")
        _check_score_b(args, frame)
        return frame, None
    if args.id is None:
        raise ValidationError("--challenger needs --id COLUMN: the id joining the two files.")
    challenger = read_table(args.challenger)
    challenger.columns = [str(c) for c in challenger.columns]
    return join_challenger(frame, challenger, id_column=args.id, score_b=args.score_b)


def _check_score_b(args: argparse.Namespace, frame) -> None:
    """Refuse a ``--score-b`` that is not a column of ``frame`` or is ``--score`` itself."""
    if args.score_b not in frame.columns:
        raise ValidationError(f"--score-b {args.score_b!r}: no such column in "
                              f"{args.file!r}.", column=args.score_b)
    if args.score_b == args.score:
        raise ValidationError(f"--score-b {args.score_b!r} is the same column as --score: "
                              "give two different score columns.", column=args.score_b)


def _covariates(args: argparse.Namespace, frame, score_b: str) -> list[str]:
    """Return the covariates asked for, or every column that plays no other role and is no id."""
    from mcviz.io import infer_roles

    asked = _common.split(args.covariates)
    if asked is not None:
        return [c for c in asked if c != score_b]
    roles = infer_roles(frame)
    taken = {args.score or roles.score, args.label or roles.label, args.weight or roles.weight,
             args.id, score_b, *roles.id_columns, *roles.score_candidates, *roles.probabilities}
    return [c for c in frame.columns if c not in taken]


def run(args: argparse.Namespace) -> dict:
    """Load (and join) the rows, compare the two models, and return the JSON object."""
    from mcviz.settings import CompareSettings, parse_thresholds

    settings = _common.settings_from_arguments(CompareSettings, args)
    thresholds = parse_thresholds(args.thresholds, name="--thresholds")
    if args.engine != "numpy":
        from mcviz.cli.engine_compare import compare_in_engine

        return compare_in_engine(args, settings, thresholds, default_covariates=_covariates,
                                 in_memory=_compare_rows)
    _common.check_decks(args.deck)  # before any work
    frame, join = _frame(args)
    return _compare_frame(args, frame, join, settings, thresholds)


def _compare_rows(args: argparse.Namespace, frame, settings, thresholds) -> dict:
    """The comparison of rows read by ``--engine`` (no join): as without ``--engine``."""
    _check_score_b(args, frame)
    return _compare_frame(args, frame, None, settings, thresholds)


def _compare_frame(args: argparse.Namespace, frame, join, settings, thresholds) -> dict:
    """Compare the two models on the rows of ``frame`` (joined: ``join``); the JSON object."""
    from mcviz.compare import compare_models
    from mcviz.io import load_predictions

    score_b = args.score_b if join is None else join.score_column
    names = _covariates(args, frame, score_b)
    pred = load_predictions(
        frame, score=args.score, probabilities=_common.split(args.probabilities),
        label=args.label, positive=args.positive, weight=args.weight,
        drop_invalid=args.drop_invalid, response=args.response, covariates=[score_b, *names],
        **_common.kind_options(args))
    _common.say_what_loading_did(pred.report)
    pred = _common.apply_weighting(args, pred)
    result = compare_models(pred, score_b, covariates=names, thresholds=thresholds,
                            n_findings=settings.n_findings, holdout=settings.holdout,
                            seed=settings.seed)
    if join is not None:
        print(f"mcviz: {join.sentence()}", file=sys.stderr)
        notice = " ".join(filter(None, (join.sentence(), result.notice)))
        result = dataclasses.replace(result, join=join, notice=notice)
    output = result.as_json()
    if args.deck:
        from datetime import UTC, datetime
        from pathlib import Path

        from mcviz.present.comparison import comparison_slides, deck_info

        source = Path(args.file).name + ("" if join is None else
                                         f" joined with {Path(args.challenger).name}")
        slides = comparison_slides(result, deck_info(source, result,
                                                     datetime.now(UTC).strftime("%Y-%m-%d")))
        output["slides"], output["deck"] = len(slides), _common.write_decks(args.deck, slides)
    return output


def _number(value: object, digits: int = 4) -> str:
    return "n/a" if not isinstance(value, int | float) else f"{value:+.{digits}f}"


def text(output: dict) -> None:
    """Print the comparison for a reader: the sentences, then a compact table."""
    a, b, paired = output["models"]["a"], output["models"]["b"], output["paired"]
    print(f"A = {display_text(a['score'])!s}, B = {display_text(b['score'])!s}; "
          f"{output['n']:,} rows")
    for sentence in [*output["verdict"], f"Next step: {output['next_step']}"]:
        print(textwrap.fill(display_text(sentence), width=100, subsequent_indent="  "))
    print()
    print(f"{'':<28}{'A':>10}{'B':>10}   B - A (95% CI)")
    print(f"{'Brier score':<28}{paired['brier_a']:>10.4f}{paired['brier_b']:>10.4f}   "
          f"{_number(paired['brier_difference'])} ({_number(paired['ci_low'])} to "
          f"{_number(paired['ci_high'])})")
    print(f"{'Log loss':<28}{paired['log_loss_a']:>10.4f}{paired['log_loss_b']:>10.4f}   "
          f"{_number(paired['log_loss_difference'])} ({_number(paired['log_loss_ci_low'])} to "
          f"{_number(paired['log_loss_ci_high'])})")
    calibration = (a["calibration"], b["calibration"])
    print(f"{'Calibration D (points)':<28}{calibration[0]['kuiper'] * 100:>10.2f}"
          f"{calibration[1]['kuiper'] * 100:>10.2f}")
    print(f"{'Calibration D/sigma':<28}{calibration[0]['kuiper_z']:>10.2f}"
          f"{calibration[1]['kuiper_z']:>10.2f}")
    net = output["net_benefit"]
    for k, t in enumerate(net["thresholds"]):
        print(f"{f'Net benefit /1,000 at {t:g}':<28}{net['a'][k] * 1000:>10.1f}"
              f"{net['b'][k] * 1000:>10.1f}   {net['difference_per_1000'][k]:+.1f} "
              f"({net['ci_low_per_1000'][k]:+.1f} to {net['ci_high_per_1000'][k]:+.1f})")
    for name in ("regressions", "improvements"):
        print(f"\n{name.capitalize()} (held-out Brier B - A; Holm-adjusted p):")
        for item in output[name] or [{"description": "none found"}]:
            if "effect" not in item:
                print(f"  {item['description']}")
                continue
            print(f"  {display_text(item['description'])}: {item['share']:.1%} of rows, "
                  f"{item['effect']:+.4f} ({item['ci_low']:+.4f} to {item['ci_high']:+.4f}), "
                  f"p_adj {item['p_adjusted']:.2g}"
                  f"{'' if item['confirmed'] else ' (not confirmed)'}")
    if output.get("notice"):
        print("\n" + textwrap.fill(display_text(f"Note: {output['notice']}"), width=100))
    for path in output.get("deck", ()):
        print(f"\nDeck ({output['slides']} slides): {display_text(path)}")
