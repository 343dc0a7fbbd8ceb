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
"ci_high", "size", "share", "p_adjusted"}], "unions": [{"parts", "description", "sentence",
"effect", "interval", "effect_value", "ci_low", "ci_high", "share", "p_adjusted"}],
"appendix": [...], "slides", "deck": [paths written]}``. With ``--engine duckdb|spark`` on a
sample smaller than the table the deck is drawn from every row: the full population's charts from
the engine's sums per distinct score (the in-memory charts; above 2^20 distinct scores from fine
score bins, within the bounds the notice states), the curves along the report's variable from its
sums per level or per distinct value (above 2^20 values per fine bin, the notice, ``curves_within``
and the slide stating how far each point can be from the curve from every row), each confirmed
finding's from its own rows read with its
``WHERE`` when they fit in memory (else its slide says why it has none).
``unions``: the confirmed findings of one direction the
search offers as one problem (``mcviz search``'s ``unions``, confirmed ones only: the verdict
states them; ``parts`` are the findings' ranks; none at scale).
The verdict's sentences are words (no statistical symbol); ``details`` holds the statistics. A
finding's ``description`` is its exact filter expression (it re-parses), ``sentence`` the same
group in words; ``effect`` is observed − predicted on its held-out rows (negative: fewer
positives than predicted), written as the deck writes it, ``effect_value``, ``ci_low`` and
``ci_high`` the same numbers as fractions; ``size`` and ``share`` (as the deck writes it) count
its rows among all ``n`` rows -- at scale every row's, as its sentence, the next step and the
deck state them (``mcviz search --engine``'s ``size``; the sample's is that command's
``sample_size``).
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
                         "--engine, confirmed on every row not searched; --deck drawn from "
                         "every row); in memory when the sample holds every row")
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
        engine_files,
        read_whole,
        refuse_before_reading,
        require_engine,
        sample_share,
    )
    from mcviz.cli.search import _budget_rows
    from mcviz.engines.base import rows_in_files

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
    files = engine_files(args)  # a CSV or a text score: one line
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
                      "ci_high": _number(found[f.rank].ci_high),
                      "size": int(found[f.rank].size), "share": f.share,
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
    in-memory keys plus ``calibration``, ``engine``,
    ``held_out`` and ``notice`` (what was measured where). With ``--deck`` the deck is drawn
    as :func:`_deck_at_scale` says (the notice says how); ``curves_within`` then holds the
    bound of the curves along the numeric variable when they come from fine bins
    (:meth:`~mcviz.stats.variable_bound.FineBinBound.record`).
    """
    from mcviz.cli.search import search_at_scale
    from mcviz.engines.calibration import population_calibration
    from mcviz.engines.holdout import SUMS
    from mcviz.present.verdict import review_verdict

    if args.deck and args.engine == "duckdb":  # the deck's GROUP BY beside its runs, after
        # the search loaded its loops (Spark's limit: search_at_scale's check)
        from mcviz.cli.engine_options import refuse_before_reading
        from mcviz.cli.metrics import _runs_reserve
        from mcviz.engines.memory import compiled_loops_reserve

        refuse_before_reading(args, what="this report's deck", reserve=lambda: _runs_reserve(
            args) + compiled_loops_reserve())
    _common.check_decks(args.deck)  # before the search, not after it
    at_scale = search_at_scale(args)
    search, n_held = at_scale.held
    calibration = population_calibration(at_scale.measured)
    sums = dict(zip(SUMS, (float(v) for v in at_scale.population), strict=True))
    rates = (sums["ws"] / sums["w"], sums["wr"] / sums["w"])
    binary = at_scale.pred.response_kind == "binary"
    verdict = review_verdict(calibration, total=calibration.n, search=search, rates=rates,
                             binary=binary)
    sample = at_scale.result
    slides, written, drawn, within = 0, [], "", None
    if args.deck:
        slides, written, drawn, within = _deck_at_scale(args, at_scale, search, verdict,
                                                        calibration.n)
    return {**_verdict_json(calibration.n, verdict, search, binary), "slides": slides,
            "deck": written,
            "calibration": {"kuiper": calibration.kuiper, "sigma": calibration.sigma,
                            "kuiper_z": calibration.kuiper_z, "p_value": calibration.p_value},
            "engine": args.engine, "held_out": {"engine": args.engine, "rows": n_held},
            "notice": (f"measured by {args.engine} on all {calibration.n:,} rows; the search "
                       f"looked at {sample.n_search:,} rows of a random sample of {sample.n:,} "
                       f"and its findings are confirmed on the {n_held:,} rows it did not look "
                       "at. No score band of the largest gap is given at scale." + drawn),
            **({} if within is None else {"curves_within": within})}


def _deck_at_scale(args: argparse.Namespace, at_scale, search, verdict,
                   n: int) -> tuple[int, list[str], str, dict | None]:
    """Write the decks from every row at scale; return the slides, paths, the notice's words
    and the bound of the curves along the variable when drawn from fine bins (JSON).

    The full population's charts come from one ``GROUP BY`` of the score
    (:func:`~mcviz.engines.calibration.score_runs_table`, then
    :func:`mcviz.present.review.review_from_runs`: the in-memory charts when the runs are the
    distinct scores, else within the bounds said). Each confirmed finding's rows are counted
    (its ``WHERE``); when they are no more than the rows the memory budget lets a search hold
    (:func:`mcviz.cli.search._budget_rows`; never ``--sample-rows``, which only sizes the
    search's sample) and ``--memory-limit`` leaves room for them beside DuckDB
    (:func:`~mcviz.search.search_estimate` of that many rows), they are read by the engine,
    one finding at a time, and drawn as the review draws a population of its own; otherwise
    the finding's slide says why it has no charts.
    """
    from mcviz.cli.engine_options import on_table
    from mcviz.cli.metrics import _runs_reserve
    from mcviz.cli.search import _budget_rows
    from mcviz.engines.memory import release_memory
    from mcviz.present.deck import DeckInfo, deck_slides, scope_charts, score_alone_notes
    from mcviz.settings import ENGINE_SCORE_RUNS
    from mcviz.stats.measures.runs import ScoreRuns

    release_memory()  # what the search freed, handed back before DuckDB's share is measured
    rows = _budget_rows(args, _common.split(args.covariates))  # what memory allows at once
    bins = _bins(args.bins)
    subs = {line.rank: {f.rank: f for f in search.findings}[line.rank].subpopulation
            for line in verdict.findings}

    variable = next(iter(at_scale.pred.covariate_kinds), None)

    def count(table, columns):
        from mcviz.engines.calibration import score_runs_table

        runs = score_runs_table(table, columns, limit=ENGINE_SCORE_RUNS)
        levels = _level_curves(table, columns, at_scale.pred, variable)
        curves = (levels, None) if levels is not None else _numeric_curves(
            table, columns, at_scale.pred, variable)
        return columns, runs, curves, _finding_counts(table, columns, subs)

    columns, parts, (curves, along), counted = on_table(
        args, count, reserve=_runs_reserve(args), what="this report's deck")
    counts = {rank: size for rank, (size, _) in counted.items()}
    full_runs = ScoreRuns(**parts)
    del parts
    full, about = _full_review(full_runs, bins, curves, variable,
                               along if curves is None else None)
    why = {rank: (f"its {size:,} rows are more than the {rows:,} this run may hold in memory "
                  "at once") for rank, size in counts.items() if size > rows}
    readable = {rank for rank in subs if rank not in why}
    reserve = 0
    if readable:
        reserve, refused = _finding_reserve(args, max(counts[r] for r in readable),
                                            len(at_scale.pred.covariate_kinds))
        if refused:
            why |= dict.fromkeys(readable, refused.rstrip("."))
            readable = set()
    grouped = _finding_grouping(args, full_runs, counted, reserve, readable, rows=n,
                                intervals={rank for rank, sub in subs.items()
                                           if _score_interval(at_scale.pred, sub)})
    charts, notes, read, refused, exact = _findings_drawn(
        args, at_scale, subs, readable, bins, full_runs, full.reliability, reserve, grouped)
    why |= dict.fromkeys(readable - read, refused)
    alone = score_alone_notes(at_scale.pred, subs)
    notes |= {rank: _finding_note(full_runs, rank in exact, counts[rank], why.get(rank),
                                  alone.get(rank)) for rank in charts}
    model = f"score {columns.score}, label {columns.label}"
    if columns.weight:
        model += f", weight {columns.weight}"
    info = DeckInfo(Path(at_scale.files[0]).name, model, n,
                    datetime.now(UTC).strftime("%Y-%m-%d"))
    slides = deck_slides(verdict, info, charts=charts, notes=notes,
                         scope=("The full population", scope_charts(full)))
    written = _common.write_decks(args.deck, slides)
    how = ("exactly, from the rows summed per distinct score" if about["exact"] else
           f"from the rows summed in {about['bins']:,} fine score bins (the drawn path within "
           f"{about['path_within']:.2g} of every row's, the local calibration curve within "
           f"{about['lcs_fit_within']:.2g})")
    if curves is not None and along is not None:  # a numeric variable's curves: how exactly
        how += f"; the curves along {variable} {along}"
    within = getattr(curves, "within", None)
    return len(slides), written, (
        f" The deck's full-population charts were drawn by {args.engine} {how}; the "
        f"deviation from the full population of {len(charts)} of {len(subs)} findings from "
        f"every row: {len(exact)} {_deviation_words(full_runs, True)}"
        + ("" if len(exact) == len(charts) else
           f", {len(charts) - len(exact)} {_deviation_words(full_runs, False)}")
        + f"; their other charts from their own rows, read by {args.engine}, for {len(read)}"
        " of them."), None if within is None else within.record()


def _finding_counts(table, columns, subs: dict) -> dict:
    """Return each finding's rows and approximate distinct scores (rank -> pair), one scan.

    :func:`~mcviz.engines.calibration.finding_counts_table`: every finding's ``COUNT`` and
    ``approx_count_distinct`` with its ``WHERE`` in one aggregate over the rows.
    """
    from mcviz.engines.calibration import finding_counts_table

    pairs = finding_counts_table(table, columns, tuple(tuple(sub.conditions)
                                                       for sub in subs.values()))
    return dict(zip(subs, pairs, strict=True))


def _score_interval(pred, sub) -> bool:
    """Whether a finding is an interval of the score (its conditions bound the score alone).

    Every row at its scores is then its row: its deviation needs no join
    (:func:`~mcviz.engines.calibration.comparison_sums_table`'s ``interval``).
    """
    from mcviz.subpopulations import on_score_alone

    return on_score_alone(pred, sub) and all(c.op in ("<", "<=", ">", ">=")
                                             for c in sub.conditions)


def _finding_grouping(args, full_runs, counted: dict, reserve: int, readable: set, *,
                      rows: int = 0, intervals: set = frozenset()) -> dict:
    """Return how each finding's runs are grouped: rank -> (binned, bytes its runs take).

    Per distinct score (its deviation exact: every row summed between its scores when the
    full population is in fine bins) when its approximate distinct scores, a few per cent
    more, fit the room :func:`exact_runs_limit` leaves beside the full population's runs and,
    for a finding whose rows are read (``readable``), their ``reserve``; else in the full
    population's fine bins. With DuckDB under ``--memory-limit`` the findings share one
    engine: the largest held beside it (runs, and rows when read) and DuckDB's need for the
    most runs (:data:`~mcviz.engines.memory.FINDING_ENGINE_RUN_BYTES` each) and a
    :data:`~mcviz.engines.memory.COMPARISON_PASSES`-th of the table's ``rows``
    (:data:`~mcviz.engines.memory.FINDING_ENGINE_ROW_BYTES` each: every row joins the edges,
    in passes of score ranges that each fit DuckDB's share,
    :func:`~mcviz.engines.calibration.comparison_passes`) must fit the room together; the exact
    finding of most runs goes to fine bins until they do (its slide and the notice then say
    fine bins); a finding of ``intervals`` (:func:`_score_interval`) joins nothing and needs
    no more than the floor there. A run costs
    :func:`~mcviz.engines.memory.finding_run_bytes` of the rows' kind (weighted or not).
    """
    from mcviz.cli.metrics import _runs_reserve
    from mcviz.engines.memory import (
        COMPARISON_PASSES,
        FINDING_ENGINE_ROW_BYTES,
        FINDING_ENGINE_RUN_BYTES,
        RUN_BYTES,
        duckdb_room,
        finding_run_bytes,
        finding_runs_bytes,
    )

    binned = full_runs.bins is not None
    weighted = bool(full_runs.weighted)
    limits = {held: exact_runs_limit(args, reserve=_runs_reserve(args) + held,
                                     weighted=weighted)
              for held in {reserve if rank in readable else 0 for rank in counted}}
    grouped = {}
    for rank, (size, distinct) in counted.items():
        runs = min(int(distinct * 1.05) + 1, size)
        if binned and runs > limits[reserve if rank in readable else 0]:
            grouped[rank] = (True, RUN_BYTES * full_runs.score.size)
        else:
            grouped[rank] = (False, finding_runs_bytes(runs, weighted=weighted))
    if not binned or args.engine != "duckdb" or args.memory_limit is None:
        return grouped
    room = duckdb_room(args.memory_limit, reserve=_runs_reserve(args))
    while True:
        exact = {rank: size for rank, (fine, size) in grouped.items()
                 if not fine and rank not in intervals}
        held = max((size + (reserve if rank in readable else 0)
                    for rank, (_, size) in grouped.items()), default=0)
        widest = max(exact, key=exact.get, default=None)
        if widest is None or held + FINDING_ENGINE_RUN_BYTES * (
                exact[widest] // finding_run_bytes(weighted)) + FINDING_ENGINE_ROW_BYTES * -(
                -int(rows) // COMPARISON_PASSES) <= room:
            return grouped
        grouped[widest] = (True, RUN_BYTES * full_runs.score.size)


def exact_runs_limit(args: argparse.Namespace, *, reserve: int = 0,
                     weighted: bool = False) -> int:
    """Return the most distinct scores a finding's exact runs may have (the memory budget).

    With DuckDB under ``--memory-limit``: the room left beside the engine
    (:func:`mcviz.engines.memory.duckdb_room`: the limit less this process's resident memory,
    ``reserve``, DuckDB's floor, overshoot and a margin) over what a run costs here
    (:func:`~mcviz.engines.memory.finding_run_bytes`, ``weighted`` rows or not, reserved
    beside DuckDB) and in DuckDB (:data:`~mcviz.engines.memory.FINDING_ENGINE_RUN_BYTES`,
    left in its share); with Spark under ``--memory-limit`` what this process may add beside
    the JVM at its least heap (:func:`mcviz.cli.engine_options.spark_room`) less ``reserve``
    over the former (a quarter of the limit let a finding of 4*10^6 distinct scores go exact
    at 10^7 rows under 2450MB: the process tree peaked at 2,982 MB, issue #44); else half the
    memory budget (:func:`mcviz.budget.memory_budget`) over the former.
    Never below
    :data:`~mcviz.settings.ENGINE_SCORE_RUNS` (the full population's runs, reserved twice).
    """
    from mcviz import settings
    from mcviz.budget import memory_budget
    from mcviz.engines.memory import FINDING_ENGINE_RUN_BYTES, duckdb_room, finding_run_bytes

    per_run = finding_run_bytes(weighted)
    runs = memory_budget(None) // 2 // per_run
    if args.memory_limit is not None and args.engine == "spark":  # the JVM at its least
        from mcviz.cli.engine_options import spark_room

        runs = min(runs, max(spark_room(args) - reserve, 0) // per_run)
    elif args.memory_limit is not None:
        runs = min(runs, duckdb_room(args.memory_limit, reserve=reserve)
                   // (per_run + FINDING_ENGINE_RUN_BYTES) if args.engine == "duckdb"
                   else memory_budget(args.memory_limit) // 4 // per_run)
    return max(settings.ENGINE_SCORE_RUNS, int(runs))


def _finding_reserve(args: argparse.Namespace, rows: int, covariates: int
                     ) -> tuple[int, str]:
    """Bytes a finding's rows and their charts take beside DuckDB; why not, when no room.

    The search's estimate of that many rows (an upper estimate of what the review holds).
    """
    from mcviz.search import search_estimate

    reserve = search_estimate(rows, max(covariates, 1), max_conditions=args.max_conditions,
                              holdout=args.holdout).bytes
    if args.engine != "duckdb" or args.memory_limit is None:
        return reserve, ""
    from mcviz.cli.engine_options import engine_share

    try:
        engine_share(args.memory_limit, reserve=reserve, what="drawing the findings' charts")
    except ValidationError:
        return reserve, (f"--memory-limit {args.memory_limit} leaves no room to read its "
                         f"rows beside the engine (up to {rows:,} rows to hold).")
    return reserve, ""


def _full_review(runs, bins: tuple[int, ...], curves, variable: str | None,
                 why: str | None = None):
    """Return the full population's review results from the engine's runs (and how exact)."""
    from mcviz.present.review import review_from_runs

    note = None
    if curves is None:
        note = ("No covariates in the mapping." if variable is None else
                why or f"The curves along {variable} are not drawn at scale.")
    return review_from_runs(runs, bins=bins, curves=curves, curves_note=note)


def _level_curves(table, columns, pred, variable: str | None):
    """Return the error and predicted error per level of a nominal text variable (GROUP BY)."""
    if variable is None or pred.covariate_kinds.get(variable) != "nominal" or \
            table.kinds.get(variable) != "string":
        return None
    from mcviz.engines.calibration import level_sums_table
    from mcviz.stats.variable_levels import level_calibration_from_sums

    return level_calibration_from_sums(variable, *level_sums_table(table, columns, variable))


def _numeric_curves(table, columns, pred, variable: str | None) -> tuple:
    """Return the curves along a numeric variable from one ``GROUP BY``, and how exact.

    :func:`~mcviz.engines.calibration.value_sums_table` then
    :func:`~mcviz.stats.variable_sums.variable_calibration_from_sums`: the in-memory curves of
    the rows when the groups are the distinct values (the span cross-validated on every row),
    else those of the rows moved to their fine bin's mean value. Returns (curves, words): the
    words say how exact, or why there are no curves (curves None).
    """
    if variable is None:
        return None, None
    kind = table.kinds.get(variable)
    if pred.covariate_kinds.get(variable) != "ordinal" or kind not in (
            "float", "int", "bool", "timestamp"):
        return None, (f"The curves along {variable} are not drawn at scale (not a number or "
                      "time column).")
    from mcviz.engines.calibration import value_sums_table
    from mcviz.settings import ENGINE_SCORE_RUNS
    from mcviz.stats.variable_sums import variable_calibration_from_sums

    sums, missing, width = value_sums_table(table, columns, variable, limit=ENGINE_SCORE_RUNS)
    try:
        curves = variable_calibration_from_sums(variable, sums, missing=missing,
                                                weighted=columns.weight is not None,
                                                dates=kind == "timestamp")
    except ValidationError as error:
        return None, str(error)
    if width is None:
        return curves, ("exactly, from the rows summed per distinct value (the span "
                        "cross-validated on every row)")
    said = "no bound on the difference" if curves.within is None else curves.within.words()
    wide = _duration(width) if kind == "timestamp" else f"{width:.3g}"
    return curves, (f"from the rows summed in {sums['n'].size:,} bins of {variable} "
                    f"{wide} wide: the curves of the rows each moved to its bin's mean "
                    f"value, by less than that width ({said})")


def _duration(nanoseconds: float) -> str:
    """Word a span of time in its largest whole unit ("1.5 days", "40 s")."""
    for unit, size in (("days", 86_400e9), ("h", 3_600e9), ("min", 60e9), ("s", 1e9)):
        if nanoseconds >= size:
            return f"{nanoseconds / size:.3g} {unit}"
    return f"{nanoseconds:.3g} ns"


def _deviation_words(runs, exact: bool) -> str:
    """Return how exactly a finding's deviation from the full population is drawn."""
    if runs.bins is None:
        return "exactly, from the rows summed per distinct score"
    if exact:
        return ("exactly, from its rows summed per distinct score and every row summed "
                "between them")
    return (f"from the rows summed in {runs.bins:,} fine score bins, every score moved to its "
            f"bin's centre (by at most {0.5 / runs.bins:.2g}; the full population's average is "
            "then taken over whole fine bins: D and sigma may differ from the rows', D/sigma "
            "less)")


def _finding_note(full_runs, exact: bool, rows: int, why: str | None,
                  alone: str | None = None) -> str:
    """Return what a finding's charts at scale are drawn from (said on its slide, briefly).

    ``alone``: the finding is bounded by the score alone, its deviation not drawn (why).
    """
    said = (f"{alone} " if alone else
            "Its deviation from the full population: from every row, exactly. " if exact else
            f"Its deviation from the full population: from every row in {full_runs.bins:,} "
            f"fine score bins (scores moved by at most {0.5 / full_runs.bins:.2g}; D and σ "
            "may differ from its rows'). ")
    if why is None:
        return said + f"Its other charts: from its {rows:,} rows."
    return said + (f"No curves: {why}. Its own calibration and local calibration: from its "
                   "rows summed per " + ("distinct score." if exact else "fine score bin."))


def _findings_drawn(args, at_scale, subs: dict, readable: set, bins: tuple[int, ...],
                    full_runs, full_reliability, reserve: int, grouped: dict
                    ) -> tuple[dict, dict, set, str, set]:
    """Return the findings' charts, notes, the findings whose rows were read, and why not.

    Charts: rank -> charts; notes: rank -> why a finding has none; why not: why the findings
    of ``readable`` left out of those read were not read (a ``--memory-limit`` too small);
    last, the findings whose deviation is exact (:func:`_finding_charts`).

    The finding's runs (its ``WHERE``) beside the full population's give its deviation and
    reliability; the findings in ``readable`` are also read row by row (``reserve`` bytes
    beside the engine) for their other charts. A limit too small for that is tried again
    without reading rows; too small for the runs, every finding's slide says why. ``grouped``:
    :func:`_finding_grouping` (the largest finding's runs reserved beside the full
    population's).
    """
    from mcviz.cli.engine_options import on_table
    from mcviz.cli.metrics import _runs_reserve

    refused = ""
    for rows in ((readable, set()) if readable else (set(),)):
        # the largest finding's runs (and rows, when read) beside the full population's
        # (with Spark taken from the JVM's heap: the runs are this process's, issue #44)
        spark = args.engine == "spark" and args.memory_limit is not None
        held = max((size + (reserve if rank in rows else 0) for rank, (_, size)
                    in grouped.items()), default=0) if _runs_reserve(args) or spark else 0
        try:
            charts, exact = on_table(args, lambda table, cols, rows=rows: _finding_charts(
                args, table, cols, at_scale, subs, rows, bins, full_runs, full_reliability,
                grouped),
                reserve=_runs_reserve(args) + held, spark_reserve=held if spark else 0,
                what="drawing the findings' charts")
            return charts, {}, set(rows), refused, exact
        except ValidationError as error:  # the limit, measured once the engine opens
            if not str(error).startswith("--memory-limit"):
                raise
            refused = str(error).rstrip(".")
    return ({}, dict.fromkeys(subs, f"Its charts are not drawn: {refused}."), set(), refused,
            set())


def _finding_charts(args, table, columns, at_scale, subs: dict, readable: set,
                    bins: tuple[int, ...], full_runs, full_reliability,
                    grouped: dict) -> tuple[dict, set]:
    """Return each finding's charts as in memory (one finding at a time), and the exact ones.

    Its runs by a ``GROUP BY`` of the score with its ``WHERE``, per distinct score or in the
    full population's fine bins as ``grouped`` says (:func:`_finding_grouping`; no count
    first); per distinct score with the full population in fine bins, every row is then
    summed between them by :func:`~mcviz.engines.calibration.comparison_sums_table` (DuckDB
    in passes that fit its share, or Spark; a finding on the score alone joins no row, its
    ``interval``): its deviation exact. Then
    :func:`mcviz.present.review.finding_review_from_runs`; a finding in ``readable`` is also
    read with its ``WHERE`` and reviewed as a population of its own for its own calibration,
    curves and LCS.
    """
    from mcviz.engines.calibration import (
        comparison_sums_table,
        finding_runs_table,
        score_runs_table,
    )
    from mcviz.present.deck import finding_variable
    from mcviz.present.review import finding_review_from_runs, review_results
    from mcviz.present.slide_charts import review_charts
    from mcviz.settings import ENGINE_SCORE_RUNS
    from mcviz.stats.deviation import deviation_edges
    from mcviz.stats.measures.runs import ScoreRuns
    from mcviz.subpopulations import on_score_alone
    from mcviz.subpopulations.sql import predicate_sql

    covariates = list(at_scale.pred.covariate_kinds)
    names = [columns.score, columns.label, *([columns.weight] if columns.weight else []),
             *covariates]
    mapped = argparse.Namespace(**{**vars(args), "score": columns.score, "label": columns.label,
                                   "weight": columns.weight or ""})
    charts, exact = {}, set()
    binned = full_runs.bins is not None
    for rank, sub in subs.items():
        runs = ScoreRuns(**(score_runs_table(
            table, columns, limit=ENGINE_SCORE_RUNS, conditions=tuple(sub.conditions),
            binned=True) if grouped[rank][0] else finding_runs_table(
            table, columns, tuple(sub.conditions))))
        if runs.bins is None:
            exact.add(rank)
        rows = None
        if rank in readable:
            q = table.query()
            where = predicate_sql(tuple(sub.conditions), table.kinds, q)
            listed = ", ".join(q.dialect.ident(name) for name in dict.fromkeys(names))
            frame = table.large_frame(q, f"SELECT {listed} FROM {table.source} WHERE {where}")
            pred = _common.load_file(mapped, source=frame, covariates=covariates)
            del frame
            rows = review_results(pred, None, bins=bins, variable=finding_variable(
                sub, covariates, next(iter(covariates), None)))
        # every row summed between its distinct scores (handed over as a list: its sums let
        # go as the deviation reads them)
        results, _ = finding_review_from_runs(
            full_runs, runs, sub, bins=bins, rows=rows, full_reliability=full_reliability,
            comparison=list(comparison_sums_table(
                table, columns, deviation_edges(runs.score), full_runs=full_runs,
                interval=runs if _score_interval(at_scale.pred, sub) else None))
            if binned and runs.bins is None else None)
        charts[rank] = review_charts(results, deviation=not on_score_alone(at_scale.pred, sub))
        # before the next finding's runs: else its runs and results (about 150 bytes a run)
        # are held beside the next one's peak
        del runs, rows, results
    return charts, exact


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
    from mcviz.present.deck import (
        DeckInfo,
        deck_slides,
        finding_charts,
        scope_charts,
        score_alone_notes,
    )
    from mcviz.present.review import review_results

    model = f"score {pred.score_column}, label {pred.label_column}"  # type: ignore[attr-defined]
    if pred.weighted:  # type: ignore[attr-defined]
        model += f", weight {pred.weight_column}"  # type: ignore[attr-defined]
    info = DeckInfo(Path(args.file).name, model, pred.n,  # type: ignore[attr-defined]
                    datetime.now(UTC).strftime("%Y-%m-%d"))
    covariates = list(pred.covariate_kinds)  # type: ignore[attr-defined]
    full = review_results(pred, None, variable=next(iter(covariates), None),  # type: ignore
                          bins=bins)
    subs = {f.rank: f.subpopulation for f in search.findings}  # type: ignore[attr-defined]
    slides = deck_slides(verdict, info,  # type: ignore[arg-type]
                         charts=finding_charts(pred, search, verdict, bins=bins),  # type: ignore
                         scope=("The full population", scope_charts(full)),
                         notes=score_alone_notes(pred, subs))
    return len(slides), _common.write_decks(args.deck, slides)
