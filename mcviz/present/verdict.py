r"""The verdict of a review in plain words: the sentences that head the page, report and deck.

:func:`review_verdict` turns the results of one scope into two to four sentences:

1. overall calibration of the scope: :math:`D/\sigma` (eqs. (2) and (5) of paper 000; for a
   subpopulation, its deviation from the full population, paper 003 eqs. (13), (21)) with its
   Brownian-range p-value and what it means (within or beyond what chance produces at 0.05);
2. the multi-calibration metric :math:`M/\sigma_0` (paper 001 eq. (4)) against its null
   distribution when computed (its Monte-Carlo p-value), or saying that it is untested;
3. the findings of the guided search confirmed on held-out rows (Holm-adjusted p below the
   level), each with its effect, 95% interval, share and adjusted p;
4. when nothing was confirmed: the minimum detectable effect (what the search would not
   have missed);
5. along the chosen numeric variable: whether the miscalibration changes along it (the
   cumulative residuals about their mean ordered by it, Kuiper's :math:`D/\sigma`, its p
   Bonferroni-adjusted over the numeric covariates), beside VCE(v*) of its smoothed curves.

Every number goes through :mod:`mcviz.present.figures.format`. Nothing here computes a statistic.

Extension point
---------------
A :class:`Verdict` carries ``sections``: :class:`Section` objects (a title, sentences,
label/value facts, an optional PNG picture or the figures to draw as one) that other analyses
add with
:meth:`Verdict.with_sections` (the decision at a threshold, a fix, monitoring alarms). The page
shows their sentences under the verdict, the report adds them as sections and the deck gives
each one slide before the appendix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mcviz.present.figures.format import format_interval, format_number, format_p, format_percent
from mcviz.io import VOID_P_VALUES

__all__ = ["FindingLine", "Section", "Verdict", "calibration_sentence", "findings_sentences",
           "multicalibration_sentence", "review_verdict", "stated", "variable_sentence"]

LEVEL = 0.05
"""The level below which a (adjusted) p-value is called beyond chance."""


@dataclass(frozen=True)
class Section:
    """One extra part of the verdict, the report and the deck (one slide).

    Attributes
    ----------
    title : str
    sentences : tuple of str
        Plain text (escaped wherever it is shown).
    facts : tuple of (str, str)
        Label and formatted value pairs.
    picture : bytes or None
        A PNG drawn on the slide (e.g. a chart rendered by :func:`mcviz.present.report.figure_image`).
    draw : callable or None
        Returns the plotly figures (one or two, unescaped) the deck draws side by side as the
        slide's picture when ``picture`` is None; called only when a deck is written.
    """

    title: str
    sentences: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    picture: bytes | None = None
    draw: Callable[[], Sequence[Any]] | None = None


@dataclass(frozen=True)
class FindingLine:
    """A confirmed finding of the search as the verdict states it.

    ``expression`` is the finding's filter expression (re-parseable by the filter language): the
    scope a click opens; ``rank`` its rank among the search's findings.
    """

    rank: int
    expression: str
    sentence: str
    effect: str
    interval: str
    share: str
    size: int
    p_adjusted: str

    @property
    def facts(self) -> tuple[tuple[str, str], ...]:
        """Label and value pairs for a slide."""
        return (("effect", self.effect), ("95% CI", self.interval),
                ("share of rows", f"{self.share} ({self.size:,} rows)"),
                ("adjusted p (Holm, held-out rows)", self.p_adjusted))


@dataclass(frozen=True)
class Verdict:
    """The verdict of one review: sentences in order, the confirmed findings, extra sections.

    ``sentences`` are what the page shows at its top and what heads the report and the deck
    (the findings' sentences are among them); ``findings`` the confirmed ones (each a slide);
    ``calibrated`` is False when the scope's D/σ is beyond chance; ``appendix`` the method,
    multiplicity and MDE in words (the deck's last slide).
    """

    sentences: tuple[str, ...]
    findings: tuple[FindingLine, ...] = ()
    calibrated: bool | None = None
    appendix: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()

    def with_sections(self, *sections: Section) -> Verdict:
        """Return the verdict with ``sections`` appended (the extension point)."""
        return replace(self, sections=(*self.sections, *sections))

    @property
    def text(self) -> str:
        """The sentences as one paragraph."""
        return " ".join(self.sentences)


_NO_NUMBER = re.compile(r"(?<![\w.])–(?![\w.])")
"""The formatter's mark for a number that is not one (NaN): "–" standing alone."""


def stated(text: str, why: str) -> str:
    """Return a formatted value, or ``"not valid (why)"`` where it holds no number at all.

    :mod:`mcviz.present.figures.format` writes NaN as "–"; a slide or a sentence says instead why the
    statistic has no value.

    >>> stated("0.04 → 0.03", "no rows"), stated("–", "σ = 0"), stated("– → 0.5", "no rows")
    ('0.04 → 0.03', 'not valid (σ = 0)', 'not valid (no rows)')
    >>> stated("−9.78 to −8.49 points", "x")
    '−9.78 to −8.49 points'
    """
    return f"not valid ({why})" if _NO_NUMBER.search(text) else text


def _scope_words(description: str, size: int, total: int) -> str:
    if size >= total:
        return f"The full population ({size:,} rows)"
    return f"The subpopulation {description} ({size:,} rows, {format_percent(size / total)})"


def calibration_sentence(result: Any, *, description: str = "full population",
                         total: int | None = None, deviation: bool = False,
                         level: float = LEVEL) -> tuple[str, bool]:
    r"""State a scope's calibration from its cumulative result; returns ``(sentence, ok)``.

    ``result`` has ``kuiper_z`` (:math:`D/\sigma`) and ``p_value`` (P(range of Brownian motion
    on [0, 1] > :math:`D/\sigma`)) and ``n``; with ``deviation`` it is the subpopulation's
    deviation from the full population (paper 003) and the sentence says so. ``ok`` is True
    when p ≥ ``level``.

    >>> from types import SimpleNamespace as R
    >>> calibration_sentence(R(kuiper_z=2.08, p_value=0.148, n=48842))[0]
    'The full population (48,842 rows) is calibrated within what chance produces: its cumulative differences reach D/σ = 2.08 (p = 0.15).'
    >>> calibration_sentence(R(kuiper_z=59.4, p_value=float("nan"), n=5000))
    ('The full population (5,000 rows): its cumulative differences reach D/σ = 59.4; the p-value is not valid with label-dependent weights — use the null draws.', False)
    """  # noqa: E501
    size = int(result.n)
    scope = _scope_words(description, size, total or size)
    z, p = format_number(result.kuiper_z, digits=3), format_p(result.p_value)
    if math.isnan(float(result.p_value)):  # weights that depend on the labels (Appendix B)
        return (f"{scope}: its cumulative differences reach D/σ = {z}; the p-value is "
                f"{VOID_P_VALUES}."), False
    ok = not float(result.p_value) < level
    if deviation:
        if ok:
            return (f"{scope} is calibrated like the full population: its deviation from it is "
                    f"D/σ = {z} (p {_p_phrase(p)}), within what chance produces."), ok
        return (f"{scope} deviates from the full population's calibration beyond chance: "
                f"D/σ = {z} (p {_p_phrase(p)})."), ok
    if ok:
        return (f"{scope} is calibrated within what chance produces: its cumulative "
                f"differences reach D/σ = {z} (p {_p_phrase(p)})."), ok
    return (f"{scope} is miscalibrated beyond chance: its cumulative differences reach "
            f"D/σ = {z} (p {_p_phrase(p)})."), ok


def _p_phrase(p: str) -> str:
    return p if p.startswith("<") else f"= {p}"


def multicalibration_sentence(result: Any, null: Any = None, *, level: float = LEVEL,
                              estimate: str | None = None) -> str:
    r"""State :math:`M/\sigma_0` over the subpopulations, against its null when computed.

    ``result`` is a :class:`mcviz.stats.multical.MulticalResult`, ``null`` its
    :class:`mcviz.stats.significance.NullDistribution` or None (then the sentence says M is untested
    and, with ``estimate``, what testing it costs).

    >>> from types import SimpleNamespace as R
    >>> argmax = R(description="age >= 40", size=1200)
    >>> m = R(metric_z=4.225, n_subpopulations=1000, argmax=argmax)
    >>> multicalibration_sentence(m, R(p_value=0.31, draws=200))
    'Over 1,000 generated subpopulations, the largest deviation (M/σ₀ = 4.22, in age >= 40) is within what chance produces: p = 0.31 from 200 null draws.'
    """  # noqa: E501
    count = f"{int(result.n_subpopulations):,}"
    z = format_number(result.metric_z, digits=3)
    head = (f"Over {count} generated subpopulations, the largest deviation (M/σ₀ = {z}, in "
            f"{result.argmax.description})")
    if null is None:
        cost = f" ({estimate})" if estimate else ""
        return f"{head} is not yet tested against chance{cost}."
    p = format_p(null.p_value)
    if float(null.p_value) < level:
        return (f"{head} is beyond chance: p {_p_phrase(p)} from {int(null.draws):,} null "
                "draws (adjusted for every subpopulation).")
    return f"{head} is within what chance produces: p {_p_phrase(p)} from {int(null.draws):,} " \
           "null draws."


def variable_sentence(curves: Any, n_variables: int, *, level: float = LEVEL) -> str | None:
    r"""State whether the miscalibration changes along a numeric variable, beside VCE(v*).

    ``curves`` is a :class:`mcviz.stats.variable_curves.VariableCalibration` (None is returned
    for anything without ``kuiper_z``, such as a nominal variable's levels, or without a p);
    its p is Bonferroni-adjusted over ``n_variables`` numeric covariates (the variable may
    have been picked for its evidence), as the Variables ranking's ``p_adjusted`` is.

    >>> from types import SimpleNamespace as R
    >>> local = R(name="age", kuiper_z=6.3, p_value=1e-9, vce=0.011, vce_significant=False)
    >>> variable_sentence(local, 9)
    'Along age the miscalibration changes beyond chance (cumulative D/σ = 6.3, p < 0.001 after 9 variables): a local error the smoothed curves average away (VCE(v*) 1.1 points, within noise); read its cumulative view.'
    >>> variable_sentence(R(name="age", kuiper_z=1.2, p_value=0.4, vce=0.01,
    ...                     vce_significant=False), 9)
    'Along age the miscalibration does not change beyond chance (cumulative D/σ = 1.2, p = 1 after 9 variables).'
    """  # noqa: E501
    z, p = getattr(curves, "kuiper_z", math.nan), getattr(curves, "p_value", math.nan)
    if not (math.isfinite(z) and math.isfinite(p)):
        return None
    adjusted = min(1.0, max(int(n_variables), 1) * float(p))
    after = (f"cumulative D/σ = {format_number(z, digits=2)}, p "
             f"{_p_phrase(format_p(adjusted))} after {max(int(n_variables), 1):,} variable"
             f"{'' if n_variables == 1 else 's'}")
    if adjusted >= level:
        return f"Along {curves.name} the miscalibration does not change beyond chance ({after})."
    said = f"Along {curves.name} the miscalibration changes beyond chance ({after})"
    if curves.vce_significant or not math.isfinite(curves.vce):
        return said + "."
    vce = format_percent(curves.vce).replace("%", " points")
    return (f"{said}: a local error the smoothed curves average away (VCE(v*) {vce}, within "
            "noise); read its cumulative view.")


def _finding_line(finding: Any, binary: bool) -> FindingLine:
    if binary:
        effect = format_percent(finding.mean_residual, signed=True).replace("%", " points")
        interval = format_interval(finding.ci_low, finding.ci_high,
                                   percent=True).replace("%", "") + " points"
    else:
        effect = format_number(finding.mean_residual, digits=3)
        interval = format_interval(finding.ci_low, finding.ci_high)
    return FindingLine(rank=int(finding.rank), expression=str(finding.description),
                       sentence=str(finding.sentence), effect=effect, interval=interval,
                       share=format_percent(finding.share), size=int(finding.size),
                       p_adjusted=stated(format_p(finding.p_adjusted), VOID_P_VALUES))


def findings_sentences(search: Any, *, binary: bool = True,
                       level: float = LEVEL) -> tuple[tuple[str, ...], tuple[FindingLine, ...]]:
    """State the search's confirmed findings, or its minimum detectable effect without any.

    A finding is confirmed when the search says so (:attr:`mcviz.search.Finding.confirmed`:
    a valid held-out p-value, Holm-adjusted, below 0.05): the one rule, read here.
    """
    confirmed = tuple(_finding_line(f, binary) for f in search.findings if f.confirmed)
    searched = (f"The guided search ({int(search.candidates_scored):,} candidates scored on "
                f"{int(search.n_search):,} rows, confirmed on {int(search.n_holdout):,} held-out "
                "rows)")
    if search.findings and all(math.isnan(float(f.p_adjusted)) for f in search.findings):
        count = len(search.findings)
        return ((f"{searched} confirmed no subpopulation: the held-out p-values of its {count:,} "
                 f"finding{'' if count == 1 else 's'} are {VOID_P_VALUES}.",), ())
    if confirmed:
        word = "finding" if len(confirmed) == 1 else "findings"
        return ((f"{searched} confirmed {len(confirmed)} {word}:",
                 *(line.sentence for line in confirmed)), confirmed)
    return ((f"{searched} confirmed no subpopulation (every Holm-adjusted p ≥ {level:g}).",
             mde_sentence(search.mde, binary=binary)), ())


def mde_sentence(mde: Any, *, binary: bool = True) -> str:
    """State what the search would not have missed: the minimum detectable effect.

    >>> import numpy as np
    >>> from types import SimpleNamespace as R
    >>> mde_sentence(R(shares=(0.01, 0.1), shift=np.array([0.083, 0.026]), power=0.8,
    ...                alpha=0.05, n_tests=12))
    'With 80% power at α = 0.05 after 12 tests, it would have found a gap of 8.3 points in 1% of the rows, or 2.6 points in 10%.'
    """  # noqa: E501
    parts = []
    for i, (share, shift) in enumerate(zip(mde.shares, mde.shift, strict=True)):
        size = (format_percent(shift).replace("%", " points") if binary
                else format_number(float(shift), digits=3))
        tail = " of the rows" if i == 0 else ""
        parts.append(f"{size} in {format_percent(share)}{tail}")
    return (f"With {format_percent(mde.power)} power at α = {format_number(mde.alpha)} after "
            f"{int(mde.n_tests):,} tests, it would have found a gap of "
            + ", or ".join(parts) + ".")


def review_verdict(
    cumulative: Any,
    *,
    description: str = "full population",
    total: int | None = None,
    deviation: bool = False,
    multicalibration: Any = None,
    null: Any = None,
    null_estimate: str | None = None,
    search: Any = None,
    binary: bool = True,
    sections: Sequence[Section] = (),
    level: float = LEVEL,
    curves: Any = None,
    n_variables: int = 1,
) -> Verdict:
    """Return the verdict of one scope: two to four sentences, the confirmed findings.

    Parameters
    ----------
    cumulative : CumulativeResult or DeviationResult
        The scope's cumulative differences (a subpopulation: ``deviation=True``, its deviation
        from the full population).
    description, total : str, int
        The scope in words and the full population's size.
    multicalibration, null : optional
        Generated subpopulations' :class:`~mcviz.stats.multical.MulticalResult` and its
        null distribution (None: untested; ``null_estimate`` says what testing costs).
    search : SearchResult, optional
        The guided search (its confirmed findings, or its MDE).
    binary : bool
        0/1 responses: effects in percentage points.
    sections : sequence of Section
        Extra parts (see the module's extension point).
    curves, n_variables : optional
        The chosen numeric variable's :class:`~mcviz.stats.variable_curves.VariableCalibration`
        and the number of numeric covariates its p is adjusted over (:func:`variable_sentence`).
    """
    first, ok = calibration_sentence(cumulative, description=description, total=total,
                                     deviation=deviation, level=level)
    sentences = [first]
    findings: tuple[FindingLine, ...] = ()
    appendix = ["Calibration: cumulative differences of response − score (Tygert); D/σ is "
                "their range in standard deviations under perfect calibration, p the chance "
                "that Brownian motion's range exceeds it."]
    if search is not None:
        said, findings = findings_sentences(search, binary=binary, level=level)
        sentences.extend(said)
        appendix.append(
            f"Search: up to {int(search.max_conditions)} conditions on "
            f"{len(search.covariates):,} covariates, ranked by D/σ on {int(search.n_search):,} "
            f"rows; each finding confirmed on {int(search.n_holdout):,} held-out rows with a "
            f"Brownian p-value, Holm-adjusted over the {len(search.findings):,} finding"
            f"{'' if len(search.findings) == 1 else 's'} reported (confirmed when < {level:g}).")
        appendix.append("Minimum detectable effect: " + mde_sentence(search.mde, binary=binary))
    elif multicalibration is not None:
        sentences.append(multicalibration_sentence(multicalibration, null, level=level,
                                                   estimate=null_estimate))
        appendix.append(
            f"Multi-calibration: M/σ₀ over {int(multicalibration.n_subpopulations):,} random "
            "median splits (Algorithm 1 of Guy et al., eq. (4)); its p-value from a "
            "parametric bootstrap of perfectly calibrated responses, max-statistic adjusted "
            "over every subpopulation.")
    else:
        sentences.append("Subpopulations are not examined yet: run the guided search (or "
                         "generate subpopulations) to learn where the model is miscalibrated.")
    along = variable_sentence(curves, n_variables, level=level) if curves is not None else None
    if along is not None:
        sentences.append(along)
        appendix.append("Along a variable: cumulative differences of response − score about "
                        "their mean, ordered by it (no span); D/σ is their range in standard "
                        "deviations, p the chance a Brownian bridge's range exceeds it, "
                        "Bonferroni-adjusted over the numeric covariates.")
    return Verdict(tuple(sentences), findings, ok, tuple(appendix), tuple(sections))
