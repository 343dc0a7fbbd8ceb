"""``mcviz report``: the review's verdict, and the deck to take away (``--deck OUT.pptx``).

Loads the file, measures the full population's calibration (cumulative differences, D/σ and
its p-value), runs the guided search (findings confirmed on held-out rows, Holm-adjusted) and
states the verdict in sentences (:mod:`mcviz.present.verdict`). With ``--deck`` (once or more; the
suffix chooses .pptx or .pdf) it writes the 16:9 deck of :mod:`mcviz.present.deck`: title, verdict,
the full population's charts, each confirmed finding's slides with native charts, appendix. A PDF
needs LibreOffice or kaleido; without either the PPTX is written and one line on stderr says why
the PDF was not (exit 2 only when no deck could be written).

Prints ``{"n", "verdict": [sentences], "next_step": sentence, "details": [lines],
"findings": [{"rank", "description", "sentence", "effect", "interval", "effect_value", "ci_low",
"ci_high", "share", "p_adjusted"}], "unions": [{"parts", "description", "sentence", "effect",
"interval", "effect_value", "ci_low", "ci_high", "share", "p_adjusted"}], "appendix": [...],
"slides", "deck": [paths written]}``. ``unions``: the confirmed findings of one direction the
search offers as one problem (``mcviz search``'s ``unions``, confirmed ones only: the verdict
states them; ``parts`` are the findings' ranks; none at scale).
The verdict's sentences are words (no statistical symbol); ``details`` holds the statistics. A
finding's ``description`` is its exact filter expression (it re-parses), ``sentence`` the same
group in words; ``effect`` is observed − predicted on its held-out rows (negative: fewer
positives than predicted), written as the deck writes it, ``effect_value``, ``ci_low`` and
``ci_high`` the same numbers as fractions.
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from mcviz.cli import _common
from mcviz.cli.engine_options import add_engine_arguments
from mcviz.errors import ValidationError
from mcviz.text import format_effect, format_p, format_percent

__all__ = ["register", "run"]

HELP = "state the verdict of a review and write the deck (PPTX or PDF)"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcviz report``."""
    parser = subparsers.add_parser("report", help=HELP, description=HELP)
    _common.add_input_arguments(parser)
    _common.add_search_arguments(parser)
    parser.add_argument("--bins", default="10,20,50",
                        help="reliability bin counts of the grids (default %(default)s)")
    parser.add_argument("--deck", action="append", metavar="OUT", default=[],
                        help="write the deck to OUT.pptx or OUT.pdf (may be given twice)")
    add_engine_arguments(parser, "duckdb or spark: the verdict from every row of Parquet data "
                         "(the calibration measured by the engine; the search of mcviz search "
                         "--engine, confirmed on every row not searched); in memory, "
                         "--deck included, when the sample holds every row")
    parser.add_argument("--sample-rows", type=int, metavar="N",
                        help="with --engine duckdb or spark: rows sampled for the search (as "
                        "mcviz search --engine; default from the memory budget)")
    parser.set_defaults(run=run)


IN_MEMORY_WHEN_SAMPLED_WHOLE = True
"""With ``--engine``, report in memory when the sample would hold every row (the tests set
False to check the engine's numbers on such a table)."""


def run(args: argparse.Namespace) -> dict:
    """Load, measure, search, state the verdict and write the decks; return the JSON object."""
    if args.engine != "numpy":
        return _with_engine(args)
    if args.sample_rows is not None:
        raise ValidationError("--sample-rows samples the search at scale: give it with "
                              "--engine duckdb or spark (without --engine every row is loaded).")
    return _in_memory(args)


def _with_engine(args: argparse.Namespace) -> dict:
    """``--engine duckdb|spark``: in memory when the sample would hold every row, else at scale.

    When the Parquet footers count no more rows than the search's sample (``--sample-rows``,
    by default what the memory budget allows), every row would be read into memory anyway:
    the report is then the in-memory one (the same verdict, findings and ``--deck`` as without
    ``--engine``, read by the same reader for one file) plus ``engine`` and a ``notice``
    saying so. Otherwise the verdict is measured on every row by the engine (:func:`_at_scale`).
    """
    import tempfile

    from mcviz.cli.engine_options import (
        read_whole,
        refuse_before_reading,
        require_engine,
        sample_share,
    )
    from mcviz.cli.search import _budget_rows
    from mcviz.engines.base import expand_paths, rows_in_files

    require_engine(args.engine)
    for option in ("probabilities", "weighting", "rho"):  # as the search at scale refuses them
        if getattr(args, option, None) is not None:
            raise ValidationError(f"--{option} is not supported when the search runs on a "
                                  f"sample (--engine {args.engine}); use one score column.")
    rows = args.sample_rows
    if rows is None:
        rows = _budget_rows(args, _common.split(args.covariates))
    if rows < 1:
        raise ValidationError(f"--sample-rows must be positive, not {rows}.")
    files = expand_paths(args.file)
    total = rows_in_files(files)
    if not (IN_MEMORY_WHEN_SAMPLED_WHOLE and total is not None and total <= rows):
        return _at_scale(args, rows, total)
    _common.check_decks(args.deck)  # before the read, not after it
    if args.engine == "duckdb":  # DuckDB reads every row (no Spark: nothing for its limit)
        refuse_before_reading(args, what="this report")
    with tempfile.TemporaryDirectory(prefix="mcviz-report-", ignore_cleanup_errors=True) as spill:
        frame = read_whole(files, spill, seed=args.seed, memory_limit=sample_share(
            args.memory_limit) if args.engine == "duckdb" else None)
    output = _in_memory(args, frame)
    output["engine"] = args.engine
    output["notice"] = (f"All {output['n']:,} rows fit in the sample (up to {rows:,} rows), so "
                        "they were read into memory and every number was computed there, as "
                        "without --engine.")
    return output


def _in_memory(args: argparse.Namespace, source: object = None) -> dict:
    """The report of rows loaded in memory: ``args.file`` or the frame ``source``."""
    from mcviz.present.verdict import review_verdict
    from mcviz.search import search_subpopulations
    from mcviz.settings import SearchSettings
    from mcviz.stats.cumulative import cumulative_differences, mean_rates

    _common.check_decks(args.deck)  # the deck's parts, before the search (not after it)
    bins = _bins(args.bins)
    covariates = _common.split(args.covariates)
    pred = _common.load_from_arguments(args, covariates=covariates, source=source)
    settings = _common.settings_from_arguments(SearchSettings, args)
    search = search_subpopulations(pred, covariates=covariates, **dataclasses.asdict(settings))
    verdict = review_verdict(cumulative_differences(pred), total=pred.n, search=search,
                             rates=mean_rates(pred), binary=pred.response_kind == "binary")
    slides, written = 0, []
    if args.deck:
        slides, written = _write_decks(args, pred, search, verdict, bins)
    binary = pred.response_kind == "binary"
    return {**_verdict_json(pred.n, verdict, search, binary), "slides": slides,
            "deck": written}


def _verdict_json(n: int, verdict, search, binary: bool) -> dict:
    """The keys of the report's JSON up to ``appendix`` (in memory and at scale)."""
    found = {f.rank: f for f in search.findings}
    return {
        "n": n,
        "verdict": list(verdict.sentences),
        "next_step": verdict.next_step,
        "details": list(verdict.details),
        "findings": [{"rank": f.rank, "description": f.expression, "sentence": f.sentence,
                      "effect": f.effect, "interval": f.interval,
                      "effect_value": _number(found[f.rank].mean_residual),
                      "ci_low": _number(found[f.rank].ci_low),
                      "ci_high": _number(found[f.rank].ci_high), "share": f.share,
                      "p_adjusted": f.p_adjusted} for f in verdict.findings],
        "unions": _unions_json(search, binary),
        "appendix": list(verdict.appendix),
    }


def _unions_json(search, binary: bool) -> list[dict]:
    """The confirmed unions the verdict states (:attr:`mcviz.search.SearchResult.unions`), as
    ``mcviz search`` gives them, with the effect written as a finding's (none at scale)."""
    unions = [u for u in getattr(search, "unions", ()) if u.confirmed]
    return [{"parts": [int(r) for r in u.parts], "description": u.description,
             "sentence": u.sentence,
             **dict(zip(("effect", "interval"), format_effect(
                 u.mean_residual, u.ci_low, u.ci_high, binary=binary), strict=True)),
             "effect_value": _number(u.mean_residual), "ci_low": _number(u.ci_low),
             "ci_high": _number(u.ci_high), "share": format_percent(u.share),
             "p_adjusted": format_p(u.p_adjusted)} for u in unions]


def _at_scale(args: argparse.Namespace, rows: int, total: int | None) -> dict:
    """The verdict from every row: the engine's calibration and the search at scale.

    The full population's D/σ and p are the screen's row 0 of the one sorted pass that also
    measures the findings on every row (:func:`mcviz.cli.search.search_at_scale`): the numbers
    of ``mcviz metrics --engine``'s calibration block; the rates are that pass's sums; the
    findings are ``mcviz search --engine``'s, confirmed on every row not searched. JSON: the
    in-memory keys (no deck: ``slides`` 0, ``deck`` []) plus ``calibration``, ``engine``,
    ``held_out`` and ``notice`` (what was measured where).
    """
    from mcviz.cli.search import search_at_scale
    from mcviz.engines.calibration import population_calibration
    from mcviz.engines.holdout import SUMS
    from mcviz.present.verdict import review_verdict

    if args.deck:
        held = "" if total is None else f" ({rows:,} of {total:,})"
        raise ValidationError(
            f"--deck is not drawn with --engine {args.engine} when the sample holds only some "
            f"of the rows{held}: the deck's charts (cumulative differences, reliability "
            "diagrams, each finding's curves) need every row in memory. Give --sample-rows at "
            "least the row count if memory allows, leave out --deck for the verdict and its "
            "numbers from every row, or write the deck without --engine.")
    at_scale = search_at_scale(args)
    search, n_held = at_scale.held
    calibration = population_calibration(at_scale.measured)
    sums = dict(zip(SUMS, (float(v) for v in at_scale.population), strict=True))
    rates = (sums["ws"] / sums["w"], sums["wr"] / sums["w"])
    binary = at_scale.pred.response_kind == "binary"
    verdict = review_verdict(calibration, total=calibration.n, search=search, rates=rates,
                             binary=binary)
    sample = at_scale.result
    return {**_verdict_json(calibration.n, verdict, search, binary), "slides": 0, "deck": [],
            "calibration": {"kuiper": calibration.kuiper, "sigma": calibration.sigma,
                            "kuiper_z": calibration.kuiper_z, "p_value": calibration.p_value},
            "engine": args.engine, "held_out": {"engine": args.engine, "rows": n_held},
            "notice": (f"measured by {args.engine} on all {calibration.n:,} rows; the search "
                       f"looked at {sample.n_search:,} rows of a random sample of {sample.n:,} "
                       f"and its findings are confirmed on the {n_held:,} rows it did not look "
                       "at. No score band of the largest gap is given at scale.")}


def _number(value: float) -> float | None:
    """Return a JSON number (None for NaN)."""
    return None if value != value else float(value)


def _bins(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in str(text).split(",") if part.strip())
    except ValueError:
        counts = ()
    if not counts or len(counts) > 3 or not all(2 <= k <= 1000 for k in counts):
        raise ValidationError(f"--bins {text!r}: give one to three bin counts in [2, 1000], "
                              "e.g. 10,20,50.")
    return counts


def _write_decks(args: argparse.Namespace, pred: object, search: object, verdict: object,
                 bins: tuple[int, ...]) -> tuple[int, list[str]]:
    """Write every ``--deck``; return the slide count and the paths written.

    A PDF that cannot be made here is said in one line and left out
    (:func:`mcviz.cli._common.write_decks`).
    """
    from mcviz.present.deck import DeckInfo, deck_slides, finding_charts, scope_charts
    from mcviz.present.review import review_results

    model = f"score {pred.score_column}, label {pred.label_column}"  # type: ignore[attr-defined]
    if pred.weighted:  # type: ignore[attr-defined]
        model += f", weight {pred.weight_column}"  # type: ignore[attr-defined]
    info = DeckInfo(Path(args.file).name, model, pred.n,  # type: ignore[attr-defined]
                    datetime.now(UTC).strftime("%Y-%m-%d"))
    covariates = list(pred.covariate_kinds)  # type: ignore[attr-defined]
    full = review_results(pred, None, variable=next(iter(covariates), None),  # type: ignore
                          bins=bins)
    slides = deck_slides(verdict, info,  # type: ignore[arg-type]
                         charts=finding_charts(pred, search, verdict, bins=bins),  # type: ignore
                         scope=("The full population", scope_charts(full)))
    return len(slides), _common.write_decks(args.deck, slides)
