r"""The verdict of a review in plain words, with the next step: page, report and deck.

:func:`review_verdict` turns the results of one scope into headline sentences written for the
person in the meeting, a details line per headline for the analyst, and one next step:

1. the scope's calibration in words: what the model predicted against what happened (rates as
   percentages, gaps in percentage points, sizes as rows and shares), "within what chance
   produces" or "beyond chance" by the p-value of :math:`D/\sigma` (eqs. (2) and (5) of paper
   000; a subpopulation: its deviation from the full population, paper 003 eqs. (13), (21));
2. a scope *chosen for being extreme* (the argmax of generated subpopulations, one picked from
   their table, a finding of the search) is never "beyond chance" on its own p-value: it is
   "largest of 1,000: not yet tested against chance" until the null distribution exists, then
   judged by its adjusted p-value (max statistic over every subpopulation; a finding: Holm over
   the findings on held-out rows, :attr:`mcviz.search.Finding.confirmed`);
3. the multi-calibration metric's largest deviation against its null, or untested;
4. the guided search's confirmed findings (their sentences,
   :attr:`mcviz.search.Finding.sentence`), or what it would have found (the minimum detectable
   effect in words).
5. along the chosen numeric variable, in words: whether the miscalibration changes along it
   (the cumulative residuals about their mean ordered by it, Kuiper's :math:`D/\sigma`, its p
   Bonferroni-adjusted over the numeric covariates, in the details), beside VCE(v*) of its
   smoothed curves.

Headlines hold no statistical symbol (no D/σ, p, M/σ₀); those go to ``Verdict.details`` (one
line per headline, shown small and on hover). ``Verdict.next_step`` follows the evidence: the
fix's ship or don't-ship when one was judged, the periods and segments to look at when
monitoring alarms, Fix for confirmed findings (with the effect a fix would remove), testing an
untested largest deviation, recalibrating a model miscalibrated overall, nothing to fix (with
what could still be missed), or more rows when the search could miss what matters
(:data:`mcviz.settings.MATERIAL_GAP`). Every number goes through :mod:`mcviz.text`. Nothing
here computes a statistic.

Extension point
---------------
A :class:`Verdict` carries ``sections``: :class:`Section` objects (a title, sentences,
label/value facts, an optional PNG picture or the figures to draw as one, and optionally its own
next step) that other analyses add with :meth:`Verdict.with_sections` (the decision at a
threshold, a fix, monitoring alarms). The page shows their sentences under the verdict, the
report adds them as sections and the deck gives each one slide before the appendix; a
section's next step replaces the verdict's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mcviz.io import VOID_P_VALUES
from mcviz.settings import MATERIAL_GAP, MATERIAL_SHARE, VERDICT_LEVEL
from mcviz.subpopulations import SCORE_ALONE
from mcviz.text import (
    format_count,
    format_effect,
    format_number,
    format_p,
    format_percent,
    format_points,
    readable_number,
    sentence_text,
)

__all__ = ["SCORE_ALONE", "FindingLine", "Section", "Selection", "Verdict", "calibration_sentence",
           "findings_sentences", "mde_sentence", "multicalibration_sentence", "review_verdict",
           "signed_number", "stated", "stated_direction", "variable_details",
           "variable_sentence"]

LEVEL = VERDICT_LEVEL
"""The level below which a (properly adjusted) p-value is called beyond chance."""


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
        A PNG drawn on the slide (a chart rendered by
        :func:`mcviz.present.report.figure_image`).
    draw : callable or None
        Returns the plotly figures (one or two, unescaped) the deck draws side by side as the
        slide's picture when ``picture`` is None; called only when a deck is written.
    next_step : str or None
        What to do after this analysis (the fix: ship or not; monitoring: where to look); it
        replaces the verdict's next step.
    """

    title: str
    sentences: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    picture: bytes | None = None
    draw: Callable[[], Sequence[Any]] | None = None
    next_step: str | None = None


@dataclass(frozen=True)
class FindingLine:
    """A confirmed finding of the search as the verdict, the report and the deck state it.

    ``expression`` is the finding's filter expression (re-parseable by the filter language): the
    scope a click opens; ``rank`` its rank among the search's findings. ``sentence`` is the
    finding's sentence in words (:attr:`mcviz.search.Finding.sentence`). ``effect`` is observed
    − predicted on the held-out rows, signed ("−3.24 percentage points": fewer positives than
    predicted), ``interval`` its 95% interval with the same sign and digits; ``direction`` the
    sign (+1, −1, 0) the sentence says in words (:func:`stated_direction`). ``details`` the
    statistics (adjusted p and how it was adjusted).
    """

    rank: int
    expression: str
    sentence: str
    effect: str
    interval: str
    share: str
    size: int
    p_adjusted: str
    direction: int = 0
    details: str = ""
    group: str = ""  # the group in the sentence's words (a slide's title)

    @property
    def facts(self) -> tuple[tuple[str, str], ...]:
        """Label and value pairs for a slide."""
        return (("effect", self.effect), ("95% CI", self.interval),
                ("share of rows", f"{self.share} ({self.size:,} rows)"),
                ("adjusted p (Holm, held-out rows)", self.p_adjusted))


@dataclass(frozen=True)
class Selection:
    """How a scope was chosen when it was chosen for being extreme.

    Attributes
    ----------
    among : int
        How many groups it was chosen from (1,000 generated subpopulations).
    largest : bool
        The largest of them (the argmax); False: picked from their table.
    p_adjusted : float or None
        Its p-value adjusted for the choice (max statistic over every group); None: not yet.
    draws : int
        Null draws behind ``p_adjusted``.
    what, how, remedy : str
        The groups, plural; how one not the largest was chosen; what gives ``p_adjusted``.
    """

    among: int
    largest: bool = True
    p_adjusted: float | None = None
    draws: int = 0
    what: str = "generated subpopulations"
    how: str = "picked from their table"
    remedy: str = "compute the null distribution to test it"

    @property
    def phrase(self) -> str:
        """"largest of 1,000" or "one of 1,000"."""
        return f"{'largest' if self.largest else 'one'} of {self.among:,}"


@dataclass(frozen=True)
class Verdict:
    """The verdict of one review: headlines, their statistics, the next step, findings, sections.

    ``sentences`` are the headlines in words (no statistical symbol) that the page shows at its
    top and that head the report and the deck (the findings' sentences are among them);
    ``details`` the statistics behind them (D/σ, p-values, the method), one line each;
    ``next_step`` one sentence saying what to do; ``findings`` the confirmed ones (each a
    slide); ``calibrated`` False when the scope is miscalibrated beyond chance (None: cannot
    say); ``appendix`` the method, multiplicity and MDE (the deck's last slide).
    """

    sentences: tuple[str, ...]
    findings: tuple[FindingLine, ...] = ()
    calibrated: bool | None = None
    appendix: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    details: tuple[str, ...] = ()
    next_step: str = ""

    def with_sections(self, *sections: Section) -> Verdict:
        """Return the verdict with ``sections`` appended; a section's next step wins."""
        step = next((s.next_step for s in reversed(sections) if s.next_step), None)
        return replace(self, sections=(*self.sections, *sections),
                       next_step=step or self.next_step)

    @property
    def text(self) -> str:
        """The sentences as one paragraph."""
        return " ".join(self.sentences)


_NO_NUMBER = re.compile(r"(?<![\w.])–(?![\w.])")
"""The formatter's mark for a number that is not one (NaN): "–" standing alone."""


def stated(text: str, why: str) -> str:
    """Return a formatted value, or ``"not valid (why)"`` where it holds no number at all.

    :mod:`mcviz.text` writes NaN as "–"; a slide or a sentence says instead why the statistic
    has no value.

    >>> stated("0.04 → 0.03", "no rows"), stated("–", "σ = 0"), stated("– → 0.5", "no rows")
    ('0.04 → 0.03', 'not valid (σ = 0)', 'not valid (no rows)')
    >>> stated("−9.78 to −8.49 points", "x")
    '−9.78 to −8.49 points'
    """
    return f"not valid ({why})" if _NO_NUMBER.search(text) else text


_DIRECTION = re.compile(r"\b(more|higher|fewer|lower) than predicted\b")


def stated_direction(text: str) -> int:
    """Return the sign of the effect a sentence states in words: +1, −1, or 0 (none said).

    "more/higher than predicted" is +1 (observed above predicted, ``effect`` > 0), "fewer/lower
    than predicted" −1. The deck's text, the page and the report are read back with it.

    >>> stated_direction("… 3.24 percentage points fewer than predicted (95% interval …)")
    -1
    >>> stated_direction("… 0.93 percentage points more than predicted …"), stated_direction("x")
    (1, 0)
    """
    found = {m.group(1) for m in _DIRECTION.finditer(str(text))}
    up, down = bool(found & {"more", "higher"}), bool(found & {"fewer", "lower"})
    return 0 if up == down else (1 if up else -1)


def signed_number(text: str) -> float:
    """Read the first number of a formatted value with its sign ("−3.24 percentage points").

    >>> signed_number("−3.24 percentage points"), signed_number("+0.93 points")
    (-3.24, 0.93)
    >>> signed_number("1,234 rows"), math.isnan(signed_number("–"))
    (1234.0, True)
    """
    found = re.search(r"([+\-\u2212]?)(\d[\d,]*(?:\.\d+)?(?:e[+\-]?\d+)?)", str(text))
    if found is None:
        return float("nan")
    value = float(found.group(2).replace(",", ""))
    return -value if found.group(1) in ("-", "\u2212") else value


def _share(size: int, total: int) -> str:
    return f"{format_count(size, 'row')}, {format_percent(size / total)} of all"


def _rates(rates: tuple[float, float] | None, *, binary: bool) -> str:
    """Write "the model predicted 24.1% positive and 20.9% were" (empty without rates)."""
    if rates is None or any(math.isnan(float(v)) for v in rates):
        return ""
    predicted, observed = (float(v) for v in rates)
    if binary:
        return f"the model predicted {format_percent(predicted)} positive and " \
               f"{format_percent(observed)} were"
    return (f"the model predicted a mean of {format_number(predicted, digits=3)} and the mean "
            f"response was {format_number(observed, digits=3)}")


def _largest_gap(result: Any, *, binary: bool, deviation: bool = False, own: bool = False) -> str:
    """Where the cumulative differences move most, in words (the full population's D).

    The path's lowest and highest points bound the band over which they add up to D (eq. (2)
    of paper 000): positives more or fewer than predicted (a count when unweighted binary, else
    a share of all rows); with ``deviation`` (paper 003, eqs. (5), (8)), than the full
    population has at the same scores.
    """
    path = getattr(result, "path", None)
    if path is None or getattr(result, "order_by", None) is not None or len(path) < 2:
        return ""
    first, last = sorted((int(path.argmin()), int(path.argmax())))
    gap = float(path[last] - path[first])
    if gap == 0 or last == first:
        return ""
    band = " to ".join(_score_percent(result.position[k]) for k in (first + 1, last))
    word = ("more" if gap > 0 else "fewer") if binary else ("higher" if gap > 0 else "lower")
    against = "the full population has at the same scores" if deviation else "predicted"
    amount = (f"about {format_count(abs(gap) * result.n)} {word} positives than {against}"
              if binary and not result.weighted else f"{format_percent(abs(gap))} of "
              f"{'its' if deviation or own else 'all'} rows {word} than {against}")
    where = f"its scores run from {band}" if deviation else f"the model predicted {band}"
    return f"; the largest gap is where {where}: {amount}{'' if deviation else ' there'}"


def _score_percent(score: Any) -> str:
    """Write a score bound for a sentence: two significant digits, "0%" below 0.01%."""
    percent = 100.0 * float(score)
    return "0%" if percent < 0.01 else f"{readable_number(percent, digits=2)}%"


def calibration_sentence(result: Any, *, description: str = "full population",
                         total: int | None = None, deviation: bool = False,
                         rates: tuple[float, float] | None = None, binary: bool = True,
                         level: float = LEVEL, own: bool = False) -> tuple[str, bool | None]:
    r"""State a scope's calibration in words; returns ``(sentence, ok)``.

    ``result`` has ``kuiper_z`` (:math:`D/\sigma`), ``p_value`` (P(range of Brownian motion on
    [0, 1] > :math:`D/\sigma`)) and ``n``; with ``deviation`` it is the subpopulation's
    deviation from the full population (paper 003) and ``description`` the subpopulation in
    words; with ``own`` the subpopulation's own (:data:`SCORE_ALONE`). ``ok`` is True when
    p ≥ ``level`` (within chance), None when p is void. The numbers: :func:`calibration_details`.

    >>> from types import SimpleNamespace as R
    >>> calibration_sentence(R(kuiper_z=2.08, p_value=0.148, n=48842), rates=(0.239, 0.2393))[0]
    'Over all 48,842 rows the model is calibrated within what chance produces: it predicted 23.9% positive and 23.9% were.'
    >>> calibration_sentence(R(kuiper_z=2.6, p_value=0.049, n=100))[1], calibration_sentence(
    ...     R(kuiper_z=2.5, p_value=0.05, n=100))[1]
    (False, True)
    """  # noqa: E501
    size = int(result.n)
    said = _rates(rates, binary=binary)
    if deviation or own:
        scope = f"The subpopulation {description} ({_share(size, total or size)})"
    else:
        scope = f"Over all {format_count(size, 'row')} the model"
        said = said.replace("the model predicted", "it predicted", 1)
    p = float(result.p_value)
    if math.isnan(p):  # weights that depend on the labels (Appendix B)
        rest = f": {said}" if said else ""
        verb = "" if deviation else " is measured"
        return (f"{scope}{verb}{rest}; whether that is beyond chance cannot be said: p-values "
                f"are {VOID_P_VALUES}."), None
    ok = not p < level
    if deviation:
        judged = ("is calibrated like the full population" if ok else
                  "deviates from the full population's calibration beyond chance")
    else:
        judged = ("is calibrated within what chance produces" if ok else
                  "is miscalibrated beyond chance")
    tail = "" if ok else _largest_gap(result, binary=binary, deviation=deviation, own=own)
    return f"{scope} {judged}{': ' + said if said else ''}{tail}.", ok


def calibration_details(result: Any, *, deviation: bool = False,
                        selected: bool = False, own: bool = False) -> str:
    r"""Write the statistics of :func:`calibration_sentence`: :math:`D/\sigma` and its p.

    ``selected``: the scope was chosen for being extreme, so its own p-value is no test and is
    not given. ``own``: a subpopulation's own cumulative differences (:data:`SCORE_ALONE`).

    >>> from types import SimpleNamespace as R
    >>> calibration_details(R(kuiper_z=2.08, p_value=0.148))
    'Cumulative differences (Tygert): D/σ = 2.08, p = 0.15.'
    >>> calibration_details(R(kuiper_z=4.56, p_value=1e-5), deviation=True, selected=True)
    'Deviation from the full population (paper 003): D/σ = 4.56 on its own rows (no test: it was chosen for being extreme).'
    """  # noqa: E501
    z = format_number(result.kuiper_z, digits=3)
    head = ("Deviation from the full population (paper 003)" if deviation
            else f"Own calibration (Tygert; {SCORE_ALONE})" if own
            else "Cumulative differences (Tygert)")
    if selected:
        return f"{head}: D/σ = {z} on its own rows (no test: it was chosen for being extreme)."
    p = stated(format_p(result.p_value), VOID_P_VALUES)
    return f"{head}: D/σ = {z}, p {_p_phrase(p)}."


def _p_phrase(p: str) -> str:
    return p if p.startswith(("<", "not valid")) else f"= {p}"


def selected_sentence(selection: Selection, *, description: str, size: int, total: int,
                      rates: tuple[float, float] | None = None, binary: bool = True,
                      level: float = LEVEL) -> tuple[str, bool | None]:
    """State a subpopulation chosen for being extreme: size and effect, then tested or not.

    Never from its own p-value: "largest of 1,000: not yet tested against chance" until the
    null distribution exists, then beyond or within chance by its adjusted p-value.

    >>> s = Selection(1000)
    >>> selected_sentence(s, description="age 40 or more", size=120, total=1000)[0]
    'The subpopulation age 40 or more (120 rows, 12% of all) is the largest deviation of 1,000 generated subpopulations. Largest of 1,000: not yet tested against chance.'
    >>> selected_sentence(replace(s, p_adjusted=0.01, draws=200), description="x", size=1,
    ...                   total=2)[0].split(". ")[1]
    'Tested against all 1,000, allowing for choosing the largest: beyond chance.'
    """  # noqa: E501
    said = _rates(rates, binary=binary)
    role = (f"the largest deviation of {selection.among:,} {selection.what}" if selection.largest
            else f"one of {selection.among:,} {selection.what}, {selection.how}")
    scope = (f"The full population ({format_count(size, 'row')})" if size >= total
             else f"The subpopulation {description} ({_share(size, total)})")
    head = f"{scope} is {role}{': ' + said if said else ''}."
    phrase = selection.phrase[0].upper() + selection.phrase[1:]
    if selection.p_adjusted is None or math.isnan(float(selection.p_adjusted)):
        return f"{head} {phrase}: not yet tested against chance.", None
    ok = not float(selection.p_adjusted) < level
    choosing = "choosing the largest" if selection.largest else "choosing among them"
    judged = "within what chance produces" if ok else "beyond chance"
    return (f"{head} Tested against all {selection.among:,}, allowing for {choosing}: "
            f"{judged}."), ok


def selection_details(selection: Selection) -> str:
    """Write the adjusted p-value of a selected scope, or that there is none yet."""
    if selection.p_adjusted is None:
        return (f"{selection.phrase[0].upper() + selection.phrase[1:]}: its own p-value is no "
                f"test; {selection.remedy}.")
    p = format_p(selection.p_adjusted)
    return (f"Adjusted p {_p_phrase(p)} (max statistic over {selection.among:,} "
            f"{selection.what}, {selection.draws:,} null draws).")


def multicalibration_sentence(result: Any, null: Any = None, *, level: float = LEVEL,
                              estimate: str | None = None, words: str | None = None) -> str:
    r"""State the largest deviation of the generated subpopulations, against its null if any.

    ``result`` is a :class:`mcviz.stats.multical.MulticalResult`, ``null`` its
    :class:`mcviz.stats.significance.NullDistribution` or None (then the sentence says it is
    untested and, with ``estimate``, what testing it costs); ``words`` the argmax in words.
    :math:`M/\sigma_0` and the p-value are in :func:`multicalibration_details`.

    >>> from types import SimpleNamespace as R
    >>> argmax = R(description="age >= 40", size=1200)
    >>> m = R(metric_z=4.225, n_subpopulations=1000, argmax=argmax)
    >>> multicalibration_sentence(m, R(p_value=0.31, draws=200), words="age 40 or more")
    'The largest deviation of 1,000 generated subpopulations is in age 40 or more (1,200 rows). Tested against all 1,000, allowing for choosing the largest: within what chance produces.'
    >>> multicalibration_sentence(m, None, words="age 40 or more").split(". ")[1]
    'Largest of 1,000: not yet tested against chance.'
    """  # noqa: E501
    count = f"{int(result.n_subpopulations):,}"
    argmax = result.argmax
    where = words or argmax.description
    head = (f"The largest deviation of {count} generated subpopulations is in {where} "
            f"({format_count(int(argmax.size), 'row')}).")
    if null is None:
        cost = f" (testing takes {estimate})" if estimate else ""
        return f"{head} Largest of {count}: not yet tested against chance{cost}."
    judged = ("beyond chance" if float(null.p_value) < level
              else "within what chance produces")
    return f"{head} Tested against all {count}, allowing for choosing the largest: {judged}."


def multicalibration_details(result: Any, null: Any = None) -> str:
    """Write M/σ₀ and its p-value from the null draws (or untested)."""
    z = format_number(result.metric_z, digits=3)
    head = (f"Multi-calibration (Guy et al., eq. (4)): M/σ₀ = {z} over "
            f"{int(result.n_subpopulations):,} subpopulations")
    if null is None:
        return f"{head}; not yet tested (its own p-value is no test of the largest)."
    p = format_p(null.p_value)
    return f"{head}; p {_p_phrase(p)} from {int(null.draws):,} null draws (max statistic)."


def variable_sentence(curves: Any, n_variables: int, *, level: float = LEVEL) -> str | None:
    r"""State in words whether the miscalibration changes along a numeric variable.

    ``curves`` is a :class:`mcviz.stats.variable_curves.VariableCalibration` (None is returned
    for anything without ``kuiper_z``, such as a nominal variable's levels, or without a p);
    its p is Bonferroni-adjusted over ``n_variables`` numeric covariates (the variable may
    have been picked for its evidence), as the Variables ranking's ``p_adjusted`` is. The
    numbers are in :func:`variable_details`.

    >>> from types import SimpleNamespace as R
    >>> local = R(name="age", kuiper_z=6.3, p_value=1e-9, vce=0.011, vce_significant=False)
    >>> variable_sentence(local, 9)
    'Along age the miscalibration changes beyond chance, even allowing for 9 variables: a local error the smoothed curves average away (their largest gap, 1.1 percentage points, is within noise); read its cumulative view.'
    >>> variable_sentence(R(name="age", kuiper_z=1.2, p_value=0.4, vce=0.01,
    ...                     vce_significant=False), 9)
    'Along age the miscalibration does not change beyond chance.'
    """  # noqa: E501
    adjusted = _variable_p(curves, n_variables)
    if adjusted is None:
        return None
    name = sentence_text(curves.name)
    if adjusted >= level:
        return f"Along {name} the miscalibration does not change beyond chance."
    count = max(int(n_variables), 1)
    said = (f"Along {name} the miscalibration changes beyond chance"
            + (f", even allowing for {count:,} variables" if count > 1 else ""))
    if curves.vce_significant or not math.isfinite(curves.vce):
        return said + "."
    return (f"{said}: a local error the smoothed curves average away (their largest gap, "
            f"{format_points(curves.vce)}, is within noise); read its cumulative view.")


def _variable_p(curves: Any, n_variables: int) -> float | None:
    z, p = getattr(curves, "kuiper_z", math.nan), getattr(curves, "p_value", math.nan)
    if not (math.isfinite(z) and math.isfinite(p)):
        return None
    return min(1.0, max(int(n_variables), 1) * float(p))


def variable_details(curves: Any, n_variables: int) -> str | None:
    """Write the statistics of :func:`variable_sentence`: D/σ, the adjusted p, VCE(v*).

    >>> from types import SimpleNamespace as R
    >>> variable_details(R(name="age", kuiper_z=6.3, p_value=1e-9, vce=0.011), 9)
    'Along age: cumulative D/σ = 6.3, p < 0.0001 after 9 variables (Bonferroni); VCE(v*) 1.1 points.'
    """  # noqa: E501
    adjusted = _variable_p(curves, n_variables)
    if adjusted is None:
        return None
    count = max(int(n_variables), 1)
    vce = (f"; VCE(v*) {format_points(curves.vce, unit='points')}"
           if math.isfinite(getattr(curves, "vce", math.nan)) else "")
    return (f"Along {sentence_text(curves.name)}: cumulative D/σ = "
            f"{format_number(curves.kuiper_z, digits=2)}, p {_p_phrase(format_p(adjusted))} "
            f"after {count:,} variable{'' if count == 1 else 's'} (Bonferroni){vce}.")


GROUP_LEAD = "Among rows "
"""How a finding's sentence starts (:func:`mcviz.search._confirm.sentence`), the group next:
"with region is r7" or, bounded by the score alone, "where the model predicts below 33.3%"."""


def _finding_line(finding: Any, binary: bool, search: Any) -> FindingLine:
    effect, interval = format_effect(finding.mean_residual, finding.ci_low, finding.ci_high,
                                     binary=binary)
    p = stated(format_p(finding.p_adjusted), VOID_P_VALUES)
    direction = (0 if not finding.mean_residual or math.isnan(finding.mean_residual)
                 else (1 if finding.mean_residual > 0 else -1))
    kind = {"simulated": "simulated p-value", "brownian": "Brownian-range p-value"}.get(
        getattr(finding, "p_kind", ""), "no valid p-value")
    count = len(search.findings)
    held = f"{int(search.n_holdout):,} held-out rows"
    details = (f"Finding {int(finding.rank)}: adjusted p {_p_phrase(p)} (Holm over "
               f"{count:,} finding{'' if count == 1 else 's'} on {held}; {kind}); D/σ on "
               f"held-out rows {format_number(finding.holdout_kuiper_z, digits=3)}."
               if hasattr(finding, "holdout_kuiper_z") else f"Adjusted p {_p_phrase(p)}.")
    said = str(finding.sentence)  # "Among rows with <group> (<n> rows, …": its words
    cut = said.rfind(" (", 0, max(said.find(" rows, "), 0))
    group = said[len(GROUP_LEAD):cut] if said.startswith(GROUP_LEAD) and cut > 0 else ""
    group = group[len("with "):] if group.startswith("with ") else group
    return FindingLine(rank=int(finding.rank), expression=str(finding.description), group=group,
                       sentence=said, effect=effect, interval=interval,
                       share=format_percent(finding.share), size=int(finding.size),
                       p_adjusted=p, direction=direction, details=details)


def findings_sentences(search: Any, *, binary: bool = True,
                       level: float = LEVEL) -> tuple[tuple[str, ...], tuple[FindingLine, ...]]:
    """State the search's confirmed findings, or what it would have found without any.

    A finding is confirmed when the search says so (:attr:`mcviz.search.Finding.confirmed`:
    a valid held-out p-value, Holm-adjusted, below 0.05): the one rule, read here.
    """
    confirmed = tuple(_finding_line(f, binary, search) for f in search.findings if f.confirmed)
    head = "The guided search"
    if search.findings and all(getattr(f, "p_kind", "") == "void"
                               or math.isnan(float(f.p_adjusted)) for f in search.findings):
        count = len(search.findings)
        return ((f"{head} cannot confirm any of its {count:,} finding"
                 f"{'' if count == 1 else 's'}: their held-out p-values are "
                 f"{VOID_P_VALUES}.",), ())
    if confirmed:
        word = "finding" if len(confirmed) == 1 else "findings"
        return ((f"{head} confirmed {len(confirmed)} {word} on rows it did not search:",
                 *(line.sentence for line in confirmed),  # then confirmed unions of them
                 *(u.sentence for u in getattr(search, "unions", ()) if u.confirmed)), confirmed)
    return ((f"{head} confirmed no group on rows it did not search: nothing it found is more "
             "than chance.", mde_sentence(search.mde, binary=binary)), ())


def search_details(search: Any) -> str:
    """Write how the search worked, with its numbers: candidates, rows searched and held out."""
    return (f"Guided search: {int(search.candidates_scored):,} candidate groups scored on "
            f"{int(search.n_search):,} rows; the {len(search.findings):,} best tested on "
            f"{int(search.n_holdout):,} held-out rows (Brownian-range or simulated p-values, "
            f"Holm-adjusted; confirmed when below {LEVEL:g}).")


def mde_sentence(mde: Any, *, binary: bool = True) -> str:
    """State what the search would not have missed: the minimum detectable effect in words.

    >>> import numpy as np
    >>> from types import SimpleNamespace as R
    >>> mde_sentence(R(shares=(0.01, 0.1), shift=np.array([0.083, 0.026]), power=0.8,
    ...                alpha=0.05, n_tests=12))
    'It would have found, 4 times in 5, a group of 1% of the rows off by 8.3 percentage points, or of 10% off by 2.6 points.'
    """  # noqa: E501
    parts = []
    for i, (share, shift) in enumerate(zip(mde.shares, mde.shift, strict=True)):
        if binary:
            size = format_points(float(shift), unit="percentage points" if i == 0 else "points")
        else:
            size = format_number(float(shift), digits=3)
        parts.append(f"{'a group of ' if i == 0 else 'of '}{format_percent(share)}"
                     f"{' of the rows' if i == 0 else ''} off by {size}")
    times = _power_words(float(mde.power))
    return f"It would have found, {times}, " + ", or ".join(parts) + "."


def _power_words(power: float) -> str:
    """80% power as "4 times in 5" (else "with 90% power")."""
    for k in (2, 3, 4, 5, 10, 20):
        hits = power * k
        if abs(hits - round(hits)) < 1e-9 and 0 < round(hits) < k:
            return f"{round(hits)} times in {k}"
    return f"with {format_percent(power)} power"


def _mde_at(mde: Any, share: float) -> float | None:
    for s, shift in zip(mde.shares, mde.shift, strict=True):
        if abs(float(s) - share) < 1e-12:
            return float(shift)
    return None


def next_step(*, ok: bool | None, findings: Sequence[FindingLine] = (), search: Any = None,
              selection: Selection | None = None, multicalibration: Any = None,
              null: Any = None, n: int = 0, binary: bool = True, full: bool = True,
              material: float = MATERIAL_GAP, material_share: float = MATERIAL_SHARE) -> str:
    """Say what to do next, from the evidence (one sentence).

    In order: confirmed findings → open Fix (the gap a fix would remove); an untested largest
    deviation → test it; a scope or model miscalibrated beyond chance → recalibrate on the Fix
    page; a search that could miss ``material`` in ``material_share`` of the rows → collect
    more rows (how many: the MDE shrinks as one over the square root of the rows); else
    nothing to fix, with what could still be missed. ``full``: the scope is the full population
    (``ok`` is the whole model's). A fix or a monitor's :class:`Section` replaces this step.

    >>> next_step(ok=True)
    'Nothing to fix: the model is calibrated within what chance produces; run the guided search to look for groups where it is not.'
    """  # noqa: E501
    if findings:
        first = findings[0]
        more = f"; {len(findings) - 1:,} more confirmed" if len(findings) > 1 else ""
        direction = "down" if first.direction < 0 else "up"
        overall = "recalibrates the whole model and " if ok is False and full else ""
        return (f"Open Fix, where the findings fix {overall}adds a term for each confirmed "
                f"finding (the first moves predictions {direction} by about "
                f"{first.effect.lstrip('+−')} for its {format_count(first.size, 'row')}, "
                f"{first.share}{more}); judge it on held-out rows before shipping.")
    untested = (selection is not None and selection.p_adjusted is None) or (
        search is None and multicalibration is not None and null is None)
    if untested:
        own = selection is not None and selection.remedy != Selection.remedy  # not the button
        what = f"it against chance ({selection.remedy})" if own else (
            "the largest deviation against chance (the button above)")
        return f"Test {what} before acting on it: chosen for being extreme, it is not yet evidence."
    if ok is False:
        return ("Open Fix to recalibrate the model (Platt or isotonic), judged on held-out "
                "rows; then run the guided search to see whether any group needs more.")
    if search is not None and search.mde is not None:
        gap = _mde_at(search.mde, material_share)
        if gap is not None and gap > material and n > 0:
            factor = (gap / material) ** 2
            return (f"Collect more rows: with {format_count(n, 'row')} a gap of "
                    f"{format_points(gap)} in {format_percent(material_share)} of the rows "
                    f"could be missed; to see {format_points(material, unit='points')}, about "
                    f"{format_number(factor, digits=2)} times as many rows "
                    f"(about {format_count(round(n * factor, -3), 'row')}).")
        said = mde_sentence(search.mde, binary=binary)
        return ("Nothing to fix: no group is confirmed, and " + said.replace(
            "It would", "the search would", 1))
    if search is None and multicalibration is None and ok:
        return ("Nothing to fix: the model is calibrated within what chance produces; run the "
                "guided search to look for groups where it is not.")
    return "Nothing to fix: what was measured is within what chance produces."


def _search_appendix(search: Any, *, binary: bool, level: float) -> tuple[str, str]:
    """Write the search's method and its minimum detectable effect for the appendix."""
    count = len(search.findings)
    return (f"Search: up to {int(search.max_conditions)} conditions on "
            f"{format_count(len(search.covariates), 'covariate')} and the score's own bands, "
            f"ranked by D/σ on {int(search.n_search):,} "
            f"rows; each finding tested on {int(search.n_holdout):,} held-out rows (a "
            "Brownian-range p-value, or a simulated one for small groups of 0/1 responses), "
            f"Holm-adjusted over the {count:,} finding{'' if count == 1 else 's'} reported "
            f"(confirmed when < {level:g}).",
            "Minimum detectable effect: " + mde_sentence(
                search.mde, binary=binary).replace("It would", "the search would", 1))


def _scope_headline(cumulative: Any, *, description: str, total: int, deviation: bool,
                    rates: tuple[float, float] | None, selection: Selection | None,
                    finding: Any, search: Any, binary: bool,
                    level: float, own: bool = False) -> tuple[str, bool | None, list[str]]:
    """Return the scope's headline, whether it is calibrated, and its details line.

    A finding: its sentence, judged by ``Finding.confirmed``; a selected group: by its
    adjusted p-value (:func:`selected_sentence`); any other scope: by its own p-value.
    """
    if finding is not None:
        ok = None if finding.p_kind == "void" else not finding.confirmed
        return str(finding.sentence), ok, [
            _finding_line(finding, binary, search).details if search is not None
            else f"Adjusted p {_p_phrase(format_p(finding.p_adjusted))}.",
            calibration_details(cumulative, deviation=deviation, selected=True, own=own)]
    if selection is not None:
        first, ok = selected_sentence(selection, description=description,
                                      size=int(cumulative.n), total=total, rates=rates,
                                      binary=binary, level=level)
        return first, ok, [calibration_details(cumulative, deviation=deviation, selected=True,
                                               own=own),
                           selection_details(selection)]
    first, ok = calibration_sentence(cumulative, description=description, total=total,
                                     deviation=deviation, rates=rates, binary=binary,
                                     level=level, own=own)
    return first, ok, [calibration_details(cumulative, deviation=deviation, own=own)]


def review_verdict(
    cumulative: Any,
    *,
    description: str = "full population",
    total: int | None = None,
    deviation: bool = False, own: bool = False,
    rates: tuple[float, float] | None = None,
    selection: Selection | None = None,
    finding: Any = None,
    multicalibration: Any = None,
    null: Any = None,
    null_estimate: str | None = None,
    argmax_words: str | None = None,
    search: Any = None,
    binary: bool = True,
    sections: Sequence[Section] = (),
    level: float = LEVEL,
    curves: Any = None,
    n_variables: int = 1,
) -> Verdict:
    """Return the verdict of one scope: headlines, details, the next step, confirmed findings.

    Parameters
    ----------
    cumulative : CumulativeResult or DeviationResult
        The scope's cumulative differences (a subpopulation: ``deviation=True``, its deviation
        from the full population; ``own=True``, its own: :data:`SCORE_ALONE`).
    description, total : str, int
        The scope in words (:func:`mcviz.subpopulations.subpopulation_words`) and the full
        population's size.
    rates : (float, float), optional
        What the model predicted and what happened (:func:`mcviz.stats.cumulative.mean_rates`).
    selection : Selection, optional
        The scope was chosen for being extreme among generated subpopulations: judged by its
        adjusted p-value, never by its own.
    finding : Finding, optional
        The scope is a finding of the search: its sentence, judged by ``Finding.confirmed``.
    multicalibration, null : optional
        Generated subpopulations' :class:`~mcviz.stats.multical.MulticalResult` and its
        null distribution (None: untested; ``null_estimate`` says what testing costs);
        ``argmax_words`` the largest deviation's group in words.
    search : SearchResult, optional
        The guided search (its confirmed findings, or its MDE).
    binary : bool
        0/1 responses: rates in percentages, effects in percentage points.
    sections : sequence of Section
        Extra parts (see the module's extension point).
    curves, n_variables : optional
        The chosen numeric variable's :class:`~mcviz.stats.variable_curves.VariableCalibration`
        and the number of numeric covariates its p is adjusted over (:func:`variable_sentence`).
    """
    size = int(cumulative.n)
    first, ok, details = _scope_headline(
        cumulative, description=description, total=total or size, deviation=deviation,
        rates=rates, selection=selection, finding=finding, search=search, binary=binary,
        level=level, own=own)
    sentences = [first]
    findings: tuple[FindingLine, ...] = ()
    appendix = ["Calibration: cumulative differences of response − score (Tygert); D/σ is "
                "their range in standard deviations under perfect calibration, p the chance "
                "that Brownian motion's range exceeds it. A group chosen for being extreme is "
                "judged by a p-value adjusted for the choice, never by its own."]
    if search is not None:
        said, findings = findings_sentences(search, binary=binary, level=level)
        said = tuple(s for s in said if s != first)  # a finding as the scope: said once
        if finding is not None and len(said) == 1 and said[0].endswith(":"):
            said = ()  # its header alone, with nothing under it
        sentences.extend(said)
        details.append(search_details(search))
        details.extend(line.details for line in findings)
        appendix.extend(_search_appendix(search, binary=binary, level=level))
    elif multicalibration is not None:
        if selection is None or not selection.largest:  # the argmax as scope: said once
            sentences.append(multicalibration_sentence(
                multicalibration, null, level=level, estimate=null_estimate, words=argmax_words))
        details.append(multicalibration_details(multicalibration, null))
        appendix.append(
            f"Multi-calibration: M/σ₀ over {int(multicalibration.n_subpopulations):,} random "
            "median splits (Algorithm 1 of Guy et al., eq. (4)); its p-value from a "
            "parametric bootstrap of perfectly calibrated responses, max-statistic adjusted "
            "over every subpopulation.")
    else:
        sentences.append("Groups are not examined yet: run the guided search (or generate "
                         "subpopulations) to learn where the model is miscalibrated.")
    along = variable_sentence(curves, n_variables, level=level) if curves is not None else None
    if along is not None:
        sentences.append(along)
        details.append(variable_details(curves, n_variables) or "")
        appendix.append("Along a variable: cumulative differences of response − score about "
                        "their mean, ordered by it (no span); D/σ is their range in standard "
                        "deviations, p the chance a Brownian bridge's range exceeds it, "
                        "Bonferroni-adjusted over the numeric covariates.")
    step = next_step(ok=ok, findings=findings, search=search, selection=selection,
                     multicalibration=multicalibration, null=null, n=total or size,
                     binary=binary, full=not (deviation or own) and finding is None)
    verdict = Verdict(sentences=tuple(sentences), findings=findings, calibrated=ok,
                      appendix=tuple(appendix), details=tuple(dict.fromkeys(details)),
                      next_step=step)
    return verdict.with_sections(*sections) if sections else verdict
