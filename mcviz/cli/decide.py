"""``mcviz decide``: net benefit at the thresholds, and what miscalibration costs there.

Prints ``{"thresholds", "n", "net_benefit": {"model", "treat_all", "treat_none"}}`` over every
row (a row is treated when its score is at least the threshold; weighted), then -- unless
``--no-fix`` -- the fix fitted on one score-stratified split (``--method``, default ``findings``
with covariates, else ``platt``) and, on the held-out rows: ``"holdout": {"method", "n_fit",
"n_eval", "accepted", "verdict", "metric_before", "metric_after"}`` (M over the family and
split ``mcviz fix`` judges: :func:`mcviz.cli.fix.judged_fix`), ``"held_out": {"net_benefit":
{"model", "recalibrated", "treat_all", "treat_none"}, "loss_per_1000", "ci_low", "ci_high",
"changed_share", "sentences"}`` and ``"findings": [...]`` with the same keys for each confirmed
finding of the search on the fit rows (and each ``--scope``). The loss per 1,000 decisions is
NB(recalibrated) - NB(model) times 1,000, with a 95% bootstrap interval
(:mod:`mcviz.decision.impact`). Without ``--json``: sentences (the model against treating
everyone and no one at each threshold, the fix's verdict, what miscalibration costs on the
held-out rows and in each finding), then a compact table per block.

``--engine duckdb|spark --no-fix`` computes the net benefit block over every row of Parquet
files by the engine (one aggregate pass: :mod:`mcviz.decision.at_scale`), with ``"engine"``
added; the fix's held-out judgement needs the rows in memory and is refused there.
"""

from __future__ import annotations

import argparse
import textwrap

from mcviz.cli import _common
from mcviz.cli.engine_options import add_engine_arguments

__all__ = ["register", "run", "text"]

HELP = "net benefit at decision thresholds and what miscalibration costs there"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz decide``."""
    from mcviz.cli.fix import add_fix_arguments

    parser = subparsers.add_parser("decide", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    add_fix_arguments(parser, method=None)
    parser.add_argument("--no-fix", action="store_true",
                        help="only the net benefit of the model, treat-all and treat-none")
    add_engine_arguments(parser, "duckdb or spark: the net benefit's sums by the engine over "
                         "every row of Parquet files (with --no-fix; default numpy: in memory)")
    parser.set_defaults(run=run, text=text)


def run(args: argparse.Namespace) -> dict:
    """Compute the net benefits (and the fix's held-out gain); return the JSON object."""
    from mcviz.cli.fix import held_out_decisions, judged_fix, prepare
    from mcviz.decision import net_benefit

    if getattr(args, "engine", "numpy") != "numpy":
        return _in_engine(args)
    pred, covariates, thresholds, method = prepare(args)
    output: dict = {"thresholds": thresholds, "n": pred.n,
                    "net_benefit": net_benefit(pred, thresholds=thresholds).as_json()}
    if args.no_fix:
        return output
    settings, result = judged_fix(args, pred, covariates, method)
    confirmed = [d for d, ok in zip(result.findings, result.confirmed, strict=True) if ok]
    scopes = list(dict.fromkeys([*confirmed, *args.scope]))
    full, per_scope = held_out_decisions(result, thresholds, bootstrap=args.bootstrap,
                                         seed=settings.seed, scopes=scopes)
    output["holdout"] = {"method": result.method, "n_fit": result.n_fit,
                         "n_eval": result.n_eval, "accepted": result.accepted,
                         "verdict": result.verdict, "metric_before": result.before.metric,
                         "metric_after": result.after.metric}
    full.pop("scope")
    output["held_out"] = full
    output["findings"] = [{"description": item.pop("scope"), **item} for item in per_scope]
    return output


def _in_engine(args: argparse.Namespace) -> dict:
    """Return the net benefit block, its sums computed by the engine (decision.at_scale)."""
    from mcviz.cli.engine_options import on_table, require_engine
    from mcviz.cli.fix import parse_thresholds
    from mcviz.decision.at_scale import net_benefit_table
    from mcviz.errors import ValidationError

    require_engine(args.engine)
    if not args.no_fix:
        raise ValidationError(f"--engine {args.engine} computes the net benefit of every row; "
                              "the fix's held-out judgement needs the rows in memory: add "
                              "--no-fix (and judge a fix with mcviz fix on a sample).")
    thresholds = parse_thresholds(args)
    result = on_table(args, lambda table, columns: net_benefit_table(
        table, columns, thresholds=thresholds), what="this decision")
    return {"thresholds": thresholds, "n": result.n, "net_benefit": result.as_json(),
            "engine": args.engine}


def text(output: dict) -> None:
    """Print the decisions for a reader: sentences first, then a compact table per block."""
    from mcviz.text import display_text

    def say(sentence: str, indent: str = "") -> None:
        print(textwrap.fill(display_text(sentence), width=100, initial_indent=indent,
                            subsequent_indent=" " * len(indent) if indent else "  "))

    thresholds, net = output["thresholds"], output["net_benefit"]
    say(f"Net benefit on all {output['n']:,} rows (a row is treated when its score is at least "
        f"the threshold t; true positives minus false positives weighted by t/(1 - t), per "
        f"row):")
    for k, t in enumerate(thresholds):
        model, everyone = net["model"][k], net["treat_all"][k]
        best = max(everyone, 0.0)
        side = "above" if model > best else "not above"
        say(f"at t = {t:g} the model's net benefit is {model:.4f}, {side} the better of treating "
            f"everyone ({everyone:.4f}) and no one (0).", "- ")
    print(_common.text_table(["threshold", "model", "treat all", "treat none"],
                             [[t, net["model"][k], net["treat_all"][k], net["treat_none"][k]]
                              for k, t in enumerate(thresholds)]))
    if "holdout" not in output:
        return
    holdout, held = output["holdout"], output["held_out"]
    print()
    say(f"The {holdout['method']} fix, fitted on {holdout['n_fit']:,} rows and judged on the "
        f"other {holdout['n_eval']:,}: {holdout['verdict'].rstrip('.')}.")
    for sentence in held["sentences"]:
        say(sentence[0].upper() + sentence[1:] + ".", "- ")
    print(_common.text_table(
        ["threshold", "model", "fixed", "loss per 1,000", "95% CI", "rows changed"],
        [[t, held["net_benefit"]["model"][k], held["net_benefit"]["recalibrated"][k],
          f"{held['loss_per_1000'][k]:+.1f}",
          f"{held['ci_low'][k]:+.1f} to {held['ci_high'][k]:+.1f}",
          f"{held['changed_share'][k]:.1%}"] for k, t in enumerate(thresholds)]))
    for finding in output["findings"]:
        print()
        say(f"In {finding['description']} (held-out rows):")
        for sentence in finding["sentences"]:
            say(sentence[0].upper() + sentence[1:] + ".", "- ")
