"""The comparison of two models as deck slides: native charts, the verdict, each group in words.

:func:`comparison_slides` lays out a :class:`~mcviz.compare.ModelComparison` (from
:func:`mcviz.compare_models`) with the deck's own parts (:mod:`mcviz.present.deck`,
:mod:`mcviz.present.slides`): a title slide (file, the two score columns, rows, date), the
verdict (its sentences and the next step), the paired cumulative differences of the two models'
losses with the ±2σ triangle beside each model's own residual path in the same order, the net
benefit of A and B by threshold beside the paired difference with its 95% band, one slide per
regression and per improvement (its sentence above its numbers), and an appendix (method,
every ordering's D/σ and p, the search's multiplicity). ``mcviz compare --deck`` and the
Compare page's download write these slides.

Nothing is recomputed: every number is read from the comparison, written as the page and
``mcviz compare`` write it (Brier differences to four decimals, calibration gaps in
percentage points, p as :func:`mcviz.text.p_phrase`). User text (column names,
category values in a group's description) goes through the deck's :func:`clean_text`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mcviz.compare.words import points, signed
from mcviz.present.deck import filter_words
from mcviz.present.slide_charts import (
    BLUE,
    GRAY,
    VERMILION,
    Series,
    SlideChart,
    band,
    cumulative_chart,
    nice_range,
    pieces,
    thinned,
)
from mcviz.present.slides import DeckInfo, Slide, short_title
from mcviz.text import format_fixed, format_p, p_phrase

__all__ = ["comparison_slides", "deck_info", "format_interval", "group_chart", "net_benefit_charts",
           "paired_charts"]

PER = 1000.0
"""Net benefit is said per this many decisions."""


def paired_charts(path: Any) -> tuple[SlideChart, SlideChart]:
    """Return the paired cumulative loss difference (±2σ triangle) and each model's residuals.

    Both read one :class:`~mcviz.compare.PairedPath`: its drawn points (``plot_index`` keeps
    every extreme, so the drawn range is D), σ and the ordering variable's quantiles.
    """
    loss = "Brier" if path.loss == "brier" else "log"
    difference = cumulative_chart(
        path, title="B's loss minus A's, summed",
        name=f"B − A {loss} loss, summed (up: B worse)", y_title=f"B − A {loss} loss, summed",
        slope="rising: B's loss is higher there")
    series: list[Series] = []
    for name, values, color in (("A", path.path_a, BLUE), ("B", path.path_b, VERMILION)):
        xs, ys = thinned(path.x, values)  # each path's own extremes kept: its range drawn
        series += pieces(f"{name}: observed − predicted, summed", xs, ys, color, "line")
    residuals = SlideChart(
        title="Each model's calibration in the same order", kind="xy", series=tuple(series),
        x_title=difference.x_title, y_title="observed − predicted, summed",
        note="slope = miscalibration; flat: calibrated there", x_range=(0.0, 1.0))
    return difference, residuals


def net_benefit_charts(net: Any) -> tuple[SlideChart, SlideChart]:
    """Return the net benefit of A and B by threshold, and B − A with its 95% band.

    Per 1,000 decisions, read from a :class:`~mcviz.compare.paired.NetBenefitComparison`.
    """
    t = np.asarray(net.thresholds, dtype=float)
    low, high = float(t.min()), float(t.max())
    x_range = (low, high) if high > low else None
    labels = tuple(f"{v:g}" for v in t)  # columns side by side: equal values both show
    values = {name: tuple(float(v) * PER for v in np.nan_to_num(getattr(net, name)))
              for name in ("a", "b")}
    levels = SlideChart(
        title="Net benefit of A and B by threshold", kind="columns",
        series=(Series("A", labels, values["a"], BLUE), Series("B", labels, values["b"],
                                                              VERMILION)),
        x_title="decision threshold", y_title="net true positives per 1,000 decisions",
        categories=labels, y_range=nice_range(min(0.0, *values["a"], *values["b"]),
                                               max(0.0, *values["a"], *values["b"])),
        note="higher is better; a row is treated when its score is at least the threshold")
    difference = [*band("B − A", t, np.asarray(net.ci_low) * PER, np.asarray(net.ci_high) * PER,
                         VERMILION),
                  *pieces("B − A", t, np.asarray(net.difference) * PER, VERMILION, "markers"),
                  *pieces("no difference", t, np.zeros_like(t), GRAY, "dotted")]
    change = SlideChart(
        title="What switching to B changes", kind="xy", series=tuple(difference),
        x_title="decision threshold", y_title="B − A, net true positives per 1,000",
        note="dashed: paired 95% interval; above 0: switching gains", x_range=x_range)
    return levels, change


def group_chart(found: Any) -> SlideChart:
    """Chart each model's observed − predicted on a group's held-out rows (columns, points).

    Read from a :class:`~mcviz.compare.models.ComparisonFinding`; the axis spans 0 and both
    95% intervals (named in the note).
    """
    values = (found.calibration_a * 100, found.calibration_b * 100)
    bounds = [v * 100 for v in (*found.calibration_a_ci, *found.calibration_b_ci, 0.0)]
    low, high = nice_range(min(bounds), max(bounds))
    note = "; ".join(f"{name} {format_interval(ci)}" for name, ci in (
        ("A", found.calibration_a_ci), ("B", found.calibration_b_ci)))
    return SlideChart(
        title="Observed − predicted in the group, held-out rows", kind="columns",
        series=(Series("observed − predicted (percentage points)", ("A", "B"), values,
                       VERMILION, colors=(BLUE, VERMILION)),),  # A and B as on every chart
        x_title="model", y_title="percentage points", categories=("A", "B"),
        note=f"95% intervals: {note}; below 0: the model over-predicts there",
        y_range=(low, high))


def format_interval(ci: tuple[float, float]) -> str:
    """Write a 95% interval of a probability difference in percentage points.

    >>> format_interval((-0.012, 0.008))
    '−1.2 to +0.8 percentage points'
    """
    low = points(ci[0]).removesuffix(" percentage points")
    return f"{low} to {points(ci[1])}"


def _group(found: Any) -> str:
    """Return a group in words: its own (``group``), else its filter's operators in words."""
    return getattr(found, "group", "") or filter_words(found.description)


def _group_slide(found: Any, worse: bool) -> Slide:
    where = "worse" if worse else "better"
    lead = "" if found.confirmed else " (a lead, not confirmed)"
    title = short_title(f"Where B is {where}{lead}: {_group(found)}")
    facts = (
        ("rows", f"{found.size:,} ({found.share:.1%})"),
        ("Brier B − A, held-out", f"{signed(found.effect)} ({signed(found.ci_low)} to "
                                  f"{signed(found.ci_high)})"),
        ("adjusted p (Holm)", format_p(found.p_adjusted)),
    )
    return Slide(title, (found.sentence,), facts, kind="finding", charts=(group_chart(found),))


def _appendix(result: Any) -> tuple[str, ...]:
    settings = result.settings
    searched = result.search
    groups = len(searched.findings) if searched is not None else 0
    lines = [
        "Paired differences: per row, B's loss minus A's on the same labelled row (Brier "
        "(s − r)², log loss); the mean and its 95% interval respect the pairing.",
        "Cumulative differences between paired samples (Kloumann, Korevaar, McConnell, Tygert, "
        "Zhao, arXiv:2305.11323): D = the path's range, σ from the paired differences, p from "
        "the range of Brownian motion.",
        "Orderings (each p on its own, not adjusted across orderings; the verdict reads the "
        "first): " + "; ".join(
            f"{p.order_by}: D/σ {p.kuiper_z:.2f} ({p_phrase(p.p_value)})" for p in result.paths)
        + ".",
        f"Groups: the guided search on the paired Brier difference, {settings.holdout:.0%} of "
        f"the rows held out (seed {settings.seed}); p-values from the held-out rows, "
        f"Holm-adjusted over the {groups} group{'' if groups == 1 else 's'} it reported.",
    ]
    if result.notice:
        lines.append(f"Note: {result.notice}")
    return tuple(lines)


def comparison_slides(result: Any, info: DeckInfo) -> list[Slide]:
    """Return the slides of a comparison: title, verdict, paths, net benefit, groups, appendix.

    ``info``: the title slide (:func:`deck_info`). Charts go two to a slide; every number is
    read from ``result``.
    """
    net = result.net_benefit
    short = {f.sentence: f"B is {where} among rows with {_group(found=f)} "
                         f"({f.share:.1%} of rows): its slide below says how."
             for where, found in (("worse", result.regressions),
                                  ("better", result.improvements)) for f in found}
    said = [short.get(s, s) for s in result.verdict]
    head = result.headline
    facts = (("Brier B − A", signed(result.brier.difference)),
             ("95% interval (paired)", f"{signed(result.brier.ci_low)} to "
                                       f"{signed(result.brier.ci_high)}"),
             ("log loss B − A", signed(result.log_loss.difference)),
             (f"D/σ in {head.order_by} order", f"{head.kuiper_z:.2f} ({p_phrase(head.p_value)})"))
    slides = [
        Slide(short_title(info.title), (f"File: {info.source}", info.model,
                                        f"Rows: {info.rows:,}", f"Date: {info.date}"),
              kind="title"),
        Slide("Verdict: which model to ship", (*said, f"Next step: {result.next_step}"),
              kind="verdict"),
        Slide("Where B's loss differs from A's", (), facts, kind="scope",
              charts=paired_charts(head)),
        Slide("What switching changes at the decision thresholds", (), tuple(
            (f"B − A at {t:g}, per 1,000", f"{format_fixed(d * PER, signed=True)} "
             f"({format_fixed(lo * PER, signed=True)} to {format_fixed(hi * PER, signed=True)})")
            for t, d, lo, hi in zip(net.thresholds, net.difference, net.ci_low, net.ci_high,
                                    strict=True))[:6],
              kind="scope", charts=net_benefit_charts(net)),
    ]
    for found, worse in [*((f, True) for f in result.regressions),
                         *((f, False) for f in result.improvements)]:
        slides.append(_group_slide(found, worse))
    slides.append(Slide("Appendix: method and multiplicity", _appendix(result),
                        kind="appendix"))
    return slides


def deck_info(source: str, result: Any, date: str) -> DeckInfo:
    """Return the title slide's facts of a comparison (file, both score columns, rows, date)."""
    return DeckInfo(source, f"A: {result.score_a} · B: {result.score_b}", result.n, date,
                    title=f"Comparing two models: {result.score_a} (A) and {result.score_b} (B)")
