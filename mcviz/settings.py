"""Typed settings of the computations a user starts: each default and bound written once.

One frozen dataclass per computation. Each field carries a :class:`Setting` (its bounds, its
command-line flag, its link key and its widget label), and everything else is derived from it:

* the library's defaults (``search_subpopulations(max_conditions=SearchSettings.max_conditions)``);
* the command line's options (:func:`mcviz.cli._common.add_settings_arguments` and
  :func:`~mcviz.cli._common.settings_from_arguments`: flag, type, default and bounds);
* the dashboard's widgets (:meth:`Setting.widget` gives ``min_value``, ``max_value``, ``step``,
  the label and the help);
* the shareable link (:meth:`Settings.link_params`, :meth:`Setting.parse` with a message for a
  malformed or out-of-range value, never an exception);
* the run cache key (:meth:`Settings.key`: the values in field order).

A setting is a number (its type from the default) or, for the decision thresholds, a list of
numbers strictly inside its bounds (a tuple default; read from text by :func:`parse_thresholds`,
the one parser of the command line, the pages and the links).

Construction validates every value (:class:`~mcviz.errors.ValidationError` naming the setting,
its value and its bounds). The module imports nothing heavy: the command line reads it for
``--help``.
"""

from __future__ import annotations

import dataclasses
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcviz.errors import ValidationError

__all__ = ["DEFAULT_THRESHOLDS", "FIX_BAND_ALPHA", "FIX_TERM_SEARCH_HOLDOUT",
           "FIX_TERM_TEST_SHARE", "LOG_LOSS_CLIP", "PERIODS", "CompareSettings",
           "DecisionSettings", "FixSettings", "MonitorSettings", "NullSettings", "SearchSettings",
           "Setting", "Settings", "SubpopulationSettings", "format_thresholds", "parse_thresholds",
           "setting"]

THRESHOLDS_MAX = 100
"""Decision thresholds accepted at once (command line, pages, links): each is a point of the
decision curve and a row of the tables, so more than this is not a reading anyone can use."""

THRESHOLDS_MAX_CHARS = 2_000
"""Characters of typed thresholds read at most (100 thresholds of up to 19 characters each)."""

FILTER_MAX_CHARS = 100_000
"""Characters of one filter expression read at most (a condition listing a few thousand levels
fits; the parser is linear, this bounds what one text box or link can make it do)."""

LINK_MAX_CHARS = 20_000
"""Characters of one shareable-link value read at most (a filter: :data:`FILTER_MAX_CHARS`).
A longer value is refused with a message, never cut into another value."""

#: The decision thresholds every surface starts with (``mcviz decide``/``fix``, the Fix page).
DEFAULT_THRESHOLDS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5)


def parse_thresholds(text: str | Any, *, name: str = "thresholds") -> tuple[float, ...]:
    """Read decision thresholds: text (comma- or semicolon-separated) or numbers, each in (0, 1).

    The one reader of thresholds (command line, pages, links). Returns them sorted, each once.

    Raises
    ------
    ValidationError
        Naming ``name`` and every value that is not a number or lies outside (0, 1), or when
        none is given.

    Examples
    --------
    >>> parse_thresholds("0.3, 0.1;0.3")
    (0.1, 0.3)
    >>> parse_thresholds("0.2,1.5")
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: thresholds must lie in (0, 1); got 1.5.
    """
    if isinstance(text, str):
        if len(text) > THRESHOLDS_MAX_CHARS:  # bounded before it is split or parsed
            raise ValidationError(
                f"{name}: {len(text):,} characters given; at most {THRESHOLDS_MAX_CHARS:,} are "
                f"read (up to {THRESHOLDS_MAX} thresholds). Give fewer thresholds.")
        parts = [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]
    elif isinstance(text, numbers.Real):
        parts = [text]
    else:
        try:
            parts = list(text)
        except TypeError:
            raise ValidationError(f"{name} must be numbers in (0, 1), not {text!r}.") from None
    if len(parts) > THRESHOLDS_MAX:
        raise ValidationError(f"{name}: {len(parts):,} thresholds given; at most "
                              f"{THRESHOLDS_MAX} are accepted. Give fewer thresholds.")
    values, problems, outside = [], [], []
    for part in parts:
        try:
            if isinstance(part, bool):
                raise ValueError
            value = float(part)
        except (TypeError, ValueError):
            problems.append(f"{name}: {str(part)[:20]!r} is not a number")
            continue
        (values if 0.0 < value < 1.0 else outside).append(value)
    if outside:
        problems.append(f"{name} must lie in (0, 1); got "
                        + ", ".join(f"{v:g}" for v in outside))
    if problems:
        raise ValidationError("; ".join(problems) + ".")
    if not values:
        raise ValidationError(f"{name}: give at least one threshold in (0, 1).")
    return tuple(sorted(set(values)))


def format_thresholds(values: Any) -> str:
    """Write thresholds as :func:`parse_thresholds` reads them.

    >>> format_thresholds((0.1, 0.25))
    '0.1,0.25'
    """
    return ",".join(f"{float(v):g}" for v in values)


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: its name, default and inclusive bounds, and how each surface shows it.

    Attributes
    ----------
    name : str
        The library's parameter name (``n_subpopulations``).
    default : int or float
    low, high : int or float
        Inclusive bounds.
    flag : str
        The command-line option (``--subpopulations``).
    link : str
        The query parameter of a shareable link (``l``).
    label : str
        The widget's label, with the papers' symbol (``ℓ (subpopulations)``).
    help : str
        One sentence for ``--help`` and the widget's tooltip.
    step : int or float
        The widget's step.
    metavar : str
        The value's name in ``--help`` (the papers' letter where there is one).
    """

    name: str
    default: int | float | tuple[float, ...]
    low: int | float
    high: int | float
    flag: str
    link: str
    label: str
    help: str
    step: int | float = 1
    metavar: str = "N"

    @property
    def kind(self) -> type:
        """``int`` or ``float``, from the default (``str`` for a list: read as text)."""
        if isinstance(self.default, tuple):
            return str
        return int if isinstance(self.default, int) else float

    def text(self, value: Any) -> str:
        """Return the value as a link, a text widget or ``--help`` shows it."""
        return format_thresholds(value) if isinstance(self.default, tuple) else str(value)

    def check(self, value: Any) -> int | float | tuple[float, ...]:
        """Return ``value`` as the setting's type, or raise a :class:`ValidationError`.

        Examples
        --------
        >>> SearchSettings.setting("max_conditions").check(6)
        Traceback (most recent call last):
        ...
        mcviz.errors.ValidationError: max_conditions must be an integer from 1 to 5, not 6.
        """
        if isinstance(self.default, tuple):
            return parse_thresholds(value, name=self.name)
        kind = self.kind
        valid = (isinstance(value, numbers.Real) and not isinstance(value, bool)
                 and (kind is float or float(value).is_integer()))
        if valid:
            number = kind(value)
            if self.low <= number <= self.high:
                return number
        what = "an integer" if kind is int else "a number"
        raise ValidationError(f"{self.name} must be {what} from {self.low:,} to {self.high:,}, "
                              f"not {value!r}.")

    def parse(self, text: str) -> tuple[int | float | None, str | None]:
        """Read a link's value: ``(value, None)`` or ``(None, message)``; never raises.

        Examples
        --------
        >>> spec = SubpopulationSettings.setting("n_subpopulations")
        >>> spec.parse("50")
        (50, None)
        >>> print(spec.parse("9" * 40)[1])
        link parameter l='99999999999999999...' is not a number within [1, 20,000]; ignored.
        """
        shown = text if len(text) <= 20 else text[:17] + "..."
        if isinstance(self.default, tuple):
            try:
                return parse_thresholds(text, name=self.name), None
            except ValidationError:
                return None, (f"link parameter {self.link}={shown!r} is not a list of numbers "
                              f"in ({self.low:g}, {self.high:g}); ignored.")
        pattern = r"-?\d{1,12}" if self.kind is int else r"-?\d{1,12}(\.\d{1,12})?"
        if re.fullmatch(pattern, text.strip()):
            number = self.kind(text.strip())
            if self.low <= number <= self.high:
                return number, None
        return None, (f"link parameter {self.link}={shown!r} is not a number within "
                      f"[{self.low:,}, {self.high:,}]; ignored.")

    def widget(self) -> dict[str, Any]:
        """Keyword arguments of ``st.number_input`` for this setting (label first).

        A list setting gives those of ``st.text_input`` (its default written as text).
        """
        if isinstance(self.default, tuple):
            return {"label": self.label, "value": self.text(self.default), "help": self.help}
        return {"label": self.label, "min_value": self.low, "max_value": self.high,
                "step": self.step, "help": self.help}


def setting(default: int | float | tuple[float, ...], low: int | float, high: int | float, *,
            flag: str, link: str, label: str, help: str, step: int | float = 1,
            metavar: str = "N") -> Any:
    """Declare a settings field (its :class:`Setting` is completed with the field's name)."""
    spec = {"low": low, "high": high, "flag": flag, "link": link, "label": label, "help": help,
            "step": step, "metavar": metavar}
    return field(default=default, metadata={"setting": spec})


class Settings:
    """Behaviour shared by the settings dataclasses (mixed into each)."""

    def __post_init__(self) -> None:
        for spec in self.settings():
            object.__setattr__(self, spec.name, spec.check(getattr(self, spec.name)))

    @classmethod
    def settings(cls) -> tuple[Setting, ...]:
        """Every :class:`Setting` of the class, in field order."""
        return tuple(Setting(name=f.name, default=f.default, **f.metadata["setting"])
                     for f in dataclasses.fields(cls) if "setting" in f.metadata)

    @classmethod
    def setting(cls, name: str) -> Setting:
        """Return the :class:`Setting` called ``name``."""
        return next(spec for spec in cls.settings() if spec.name == name)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Settings:
        """Build from a mapping by setting name (missing names take their defaults).

        Text values (a widget's or a link's) are read as :meth:`Setting.parse` reads them.
        """
        values = {}
        for spec in cls.settings():
            if spec.name not in data:
                continue
            value = data[spec.name]
            if isinstance(value, str):
                value, message = spec.parse(value)
                if message is not None:
                    raise ValidationError(f"{spec.name}: {message}")
            values[spec.name] = value
        return cls(**values)

    def link_params(self) -> dict[str, str]:
        """Query parameters of the settings that differ from their defaults."""
        return {spec.link: spec.text(getattr(self, spec.name)) for spec in self.settings()
                if getattr(self, spec.name) != spec.default}

    def key(self) -> tuple:
        """Return the values in field order: the part of a run's cache key they give."""
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))


@dataclass(frozen=True)
class SubpopulationSettings(Settings):
    """Algorithm 1 of paper 000 (random subpopulations) and its repeats.

    Examples
    --------
    >>> SubpopulationSettings().key()
    (1000, 10, 0, 1)
    >>> SubpopulationSettings(n_subpopulations=50).link_params()
    {'l': '50'}
    """

    n_subpopulations: int = setting(
        1000, 1, 20_000, flag="--subpopulations", link="l", label="ℓ (subpopulations)",
        help="number of random subpopulations of Algorithm 1", step=100, metavar="L")
    min_size: int = setting(
        10, 2, 10**9, flag="--min-size", link="m", label="m (minimum size)",
        help="minimum members of a subpopulation", metavar="M")
    seed: int = setting(
        0, 0, 2**31 - 1, flag="--seed", link="seed", label="Seed",
        help="seed of Algorithm 1 (repeats use seed, seed+1, ...)")
    repeats: int = setting(
        1, 1, 20, flag="--repeats", link="reps", label="Repeats (seeds)",
        help="seeds s, s+1, ..., s+R-1; the metrics as means with standard errors", metavar="R")


@dataclass(frozen=True)
class SearchSettings(Settings):
    """The guided search (:func:`mcviz.search_subpopulations`).

    Examples
    --------
    >>> SearchSettings(max_conditions=2).key()
    (2, 5, 0.005, 0.3, 0)
    """

    max_conditions: int = setting(
        3, 1, 5, flag="--max-conditions", link="cond", label="Conditions per finding (at most)",
        help="conditions per finding at most (a band a <= x < b counts as one)", metavar="K")
    n_findings: int = setting(
        5, 1, 50, flag="--findings", link="find", label="Findings",
        help="findings to report at most", metavar="F")
    min_share: float = setting(
        0.005, 1e-6, 0.5, flag="--min-share", link="share", label="Smallest share",
        help="the smallest subpopulation searched, as a share of the weight", step=0.001,
        metavar="S")
    holdout: float = setting(
        0.3, 0.1, 0.9, flag="--holdout", link="hold", label="Held-out share",
        help="share of the rows held out to confirm the findings", step=0.05, metavar="H")
    seed: int = setting(
        0, 0, 2**31 - 1, flag="--seed", link="seed", label="Seed",
        help="seed of the split into search and held-out rows")


VERDICT_LEVEL = 0.05
"""The verdict calls a (properly adjusted) p-value below this "beyond chance"."""
MATERIAL_GAP = 0.02
"""What matters to the verdict's next step: a gap of 2 percentage points between what happened
and what was predicted, in :data:`MATERIAL_SHARE` of the rows. When the search's minimum
detectable effect at that share is larger, the next step is to collect more rows."""
MATERIAL_SHARE = 0.05
"""The share of the rows :data:`MATERIAL_GAP` is judged at (one of the search's MDE shares)."""


@dataclass(frozen=True)
class NullSettings(Settings):
    """The null distribution of M (:func:`mcviz.stats.significance.null_distribution`).

    Examples
    --------
    >>> NullSettings(draws=500).link_params()
    {'nd': '500'}
    """

    draws: int = setting(
        200, 19, 5_000, flag="--null-draws", link="nd", label="Null draws",
        help="sets of responses drawn from the scores (perfect calibration) to learn how large "
             "M/σ₀ gets by chance", step=50, metavar="B")


@dataclass(frozen=True)
class DecisionSettings(Settings):
    """Decisions at thresholds (``mcviz decide``, ``mcviz fix``, the Fix page).

    ``thresholds`` are where a row is treated (score at least t); ``bootstrap`` the replicates
    of the interval of the loss per 1,000 decisions (:func:`mcviz.decision.decision_impact`).

    Examples
    --------
    >>> DecisionSettings(thresholds="0.3,0.1").link_params()
    {'thr': '0.1,0.3'}
    >>> DecisionSettings().key()
    ((0.1, 0.2, 0.3, 0.5), 1000)
    """

    thresholds: tuple[float, ...] = setting(
        DEFAULT_THRESHOLDS, 0, 1, flag="--thresholds", link="thr", label="Decision thresholds",
        help="comma-separated decision thresholds in (0, 1): treat a row when its score is at "
             "least t; t = c_FP / (c_FP + c_TP)", metavar="T,T")
    bootstrap: int = setting(
        1000, 20, 100_000, flag="--bootstrap", link="boot", label="Bootstrap replicates",
        help="bootstrap replicates of the interval of the loss per 1,000 decisions", step=100,
        metavar="B")


#: The periods of a monitor: calendar periods, or a count of equal-width periods (digits).
PERIODS: tuple[str, ...] = ("day", "week", "month", "quarter")


@dataclass(frozen=True)
class MonitorSettings(Settings):
    """What a monitor watches and how (:func:`mcviz.monitor.monitor_calibration`).

    The numbers (α, null draws, seed) are :class:`Setting` fields (flags, widgets, links);
    the rest say what is watched: the time column (None: inferred), the periods (one of
    :data:`PERIODS` or a count of equal periods), the reference (the periods ending by it;
    None: the first quarter of the time range), the segments (covariates whose every level is
    watched), filter expressions, whether the confirmed findings of a search on the reference
    are watched too (over ``covariates``; None: all but the time column), and how the null is
    simulated (``"auto"``, ``"bernoulli"`` or ``"normal"``).

    Examples
    --------
    >>> MonitorSettings(period="month", draws=499).key()
    (None, 'month', None, (), (), False, None, 'auto', 0.05, 499, 0)
    >>> MonitorSettings(alpha=0.5)
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: alpha must be a number from 0.0001 to 0.49, not 0.5.
    """

    time: str | None = None
    period: str | int = "week"
    reference: Any = None
    segments: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    search_reference: bool = False
    covariates: tuple[str, ...] | None = None
    null: str = "auto"
    alpha: float = setting(
        0.05, 0.0001, 0.49, flag="--alpha", link="malpha", label="α (family-wise)",
        help="family-wise false-alarm rate over every segment and period", step=0.01,
        metavar="A")
    draws: int = setting(
        999, 19, 100_000, flag="--draws", link="mdraws", label="Null draws",
        help="null draws of the alarm threshold (α(B + 1) must be at least 1)", step=100,
        metavar="B")
    seed: int = setting(
        0, 0, 2**31 - 1, flag="--seed", link="seed", label="Seed",
        help="seed of the null draws and of the reference search")

    def __post_init__(self) -> None:
        Settings.__post_init__(self)
        for name in ("segments", "filters", "covariates"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(str(v) for v in value))


FIX_TERM_TEST_SHARE = 0.5
"""The findings fix holds out this share of its fit rows, anew in every pass, to test the terms
its searches propose on the other rows (:mod:`mcviz.recalibration._findings`)."""

FIX_TERM_SEARCH_HOLDOUT = 0.1
"""The findings fix's searches hold out this share of the rows they are given (the least the
search takes): the fix tests their candidates on rows of its own, not on these."""

FIX_BAND_ALPHA = 0.05
"""A band of a covariate the fix made miscalibrated on held-out rows is named when its |z| exceeds
the bound that all the bands of a calibrated fix stay within with probability 1 - this
(Bonferroni over the bands: :func:`mcviz.recalibration.judge.band_bound`)."""


@dataclass(frozen=True)
class FixSettings(Settings):
    """A fix judged on held-out rows (:func:`mcviz.recalibration.verify_fix`).

    Its decisions (thresholds, bootstrap) are :class:`DecisionSettings`.

    Examples
    --------
    >>> FixSettings().key()
    (0.5, 0, 1000)
    >>> FixSettings(holdout=0.3).link_params()
    {'fhold': '0.3'}
    """

    holdout: float = setting(
        0.5, 0.1, 0.9, flag="--holdout", link="fhold", label="Held-out share",
        help="share of the rows held out to judge the fix (stratified by score; neither the "
             "search nor the fit sees them)", step=0.05, metavar="H")
    seed: int = setting(
        0, 0, 2**31 - 1, flag="--seed", link="fseed", label="Seed",
        help="seed of the split, the search and Algorithm 1")
    n_subpopulations: int = setting(
        1000, 1, 20_000, flag="--subpopulations", link="fl", label="ℓ (subpopulations judged)",
        help="Algorithm-1 subpopulations of the held-out rows in M, besides the findings",
        step=100, metavar="L")

    def verify_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`mcviz.recalibration.verify_fix` these settings give."""
        return {"holdout": self.holdout, "seed": self.seed,
                "n_subpopulations": self.n_subpopulations}


LOG_LOSS_CLIP = 1e-15
"""Scores are clipped to [c, 1 - c] in the log loss of a comparison (a score of 0 or 1 on the
wrong label would otherwise cost an infinite loss)."""


@dataclass(frozen=True)
class CompareSettings(Settings):
    """The comparison of two models (:func:`mcviz.compare_models`).

    Examples
    --------
    >>> CompareSettings(n_findings=4).link_params()
    {'cf': '4'}
    """

    n_findings: int = setting(
        3, 1, 20, flag="--findings", link="cf", label="Groups per direction",
        help="regressions and improvements to report at most (each)", metavar="F")
    holdout: float = setting(
        0.3, 0.1, 0.9, flag="--holdout", link="chold", label="Held-out share",
        help="share of the rows held out to confirm the regressions and improvements",
        step=0.05, metavar="H")
    seed: int = setting(
        0, 0, 2**31 - 1, flag="--seed", link="cseed", label="Seed",
        help="seed of the split into search and held-out rows")


MAP_MAX_BYTES = 64 << 20
"""A saved recalibration map larger than this (64 MiB) is refused before it is read: a boosted
map of 100 rounds of MCGrad's default trees is ~2 MB; a parsed JSON value takes ~10x its text."""

MAP_MAX_TERMS = 1_000
"""Finding terms a saved map may hold (each is a filter evaluated over every row it scores;
the findings fix writes at most a few dozen)."""

MAP_MAX_ROUNDS = 1_000
"""Boosting rounds a saved map may hold."""

ENGINE_SCORE_RUNS = 1 << 20
"""``mcviz metrics --engine``: at most this many runs come back from the engine -- one per
distinct score when there are no more (the classical measures are then exact), else one per
fine equal-width score bin: 10 × 104,850 = 1,048,500 bins nested in the ECE's 10 (and in 20 and
50), so scores move by less than 1e-6 (mcviz.stats.measures.runs). About 60 MB in memory."""
