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

__all__ = ["FIX_BAND_Z", "FIX_THRESHOLDS", "FixSettings", "NullSettings", "SearchSettings",
           "Setting", "Settings", "SubpopulationSettings", "parse_thresholds", "setting"]


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
    default: int | float
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
        """``int`` or ``float``, from the default."""
        return int if isinstance(self.default, int) else float

    def check(self, value: Any) -> int | float:
        """Return ``value`` as the setting's type, or raise a :class:`ValidationError`.

        Examples
        --------
        >>> SearchSettings.setting("max_conditions").check(6)
        Traceback (most recent call last):
        ...
        mcviz.errors.ValidationError: max_conditions must be an integer from 1 to 5, not 6.
        """
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
        pattern = r"-?\d{1,12}" if self.kind is int else r"-?\d{1,12}(\.\d{1,12})?"
        if re.fullmatch(pattern, text.strip()):
            number = self.kind(text.strip())
            if self.low <= number <= self.high:
                return number, None
        return None, (f"link parameter {self.link}={shown!r} is not a number within "
                      f"[{self.low:,}, {self.high:,}]; ignored.")

    def widget(self) -> dict[str, Any]:
        """Keyword arguments of ``st.number_input`` for this setting (label first)."""
        return {"label": self.label, "min_value": self.low, "max_value": self.high,
                "step": self.step, "help": self.help}


def setting(default: int | float, low: int | float, high: int | float, *, flag: str,
            link: str, label: str, help: str, step: int | float = 1, metavar: str = "N") -> Any:
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
        return {spec.link: str(getattr(self, spec.name)) for spec in self.settings()
                if getattr(self, spec.name) != spec.default}

    def key(self) -> tuple:
        """Return the values in field order: the part of a run's cache key they give."""
        return tuple(getattr(self, spec.name) for spec in self.settings())


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


FIX_THRESHOLDS = (0.1, 0.2, 0.3, 0.5)
"""Default decision thresholds of the fix's net benefit (``mcviz fix``, the Fix page)."""
FIX_BAND_Z = 2.5
"""A band of a covariate the fix made miscalibrated beyond this |z| on held-out rows is named."""


@dataclass(frozen=True)
class FixSettings(Settings):
    """A fix judged on held-out rows (:func:`mcviz.recalibration.verify_fix`).

    The decision thresholds are a list (:data:`FIX_THRESHOLDS`, read by
    :func:`parse_thresholds`).

    Examples
    --------
    >>> FixSettings().key()
    (0.5, 0, 1000, 1000)
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
    bootstrap: int = setting(
        1000, 20, 100_000, flag="--bootstrap", link="fboot", label="Bootstrap replicates",
        help="bootstrap replicates of the decision-loss interval", step=100, metavar="B")

    def verify_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`mcviz.recalibration.verify_fix` these settings give."""
        return {"holdout": self.holdout, "seed": self.seed,
                "n_subpopulations": self.n_subpopulations}


def parse_thresholds(text: str | None, *, what: str = "thresholds") -> tuple[float, ...]:
    """Read comma- (or semicolon-) separated thresholds; None or blank: :data:`FIX_THRESHOLDS`.

    The one parser of the command line's ``--thresholds`` and the Fix page's box. Only the
    text is read here; the bounds (0, 1) are checked by
    :func:`mcviz.decision.check_thresholds`.

    Examples
    --------
    >>> parse_thresholds("0.3, 0.1;0.2")
    (0.3, 0.1, 0.2)
    >>> parse_thresholds(None)
    (0.1, 0.2, 0.3, 0.5)
    >>> parse_thresholds("0.1, x")
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: thresholds: 'x' is not a number.
    """
    if text is None or not str(text).strip():
        return FIX_THRESHOLDS
    values = []
    for part in str(text).replace(";", ",").split(","):
        if part.strip():
            try:
                values.append(float(part))
            except ValueError:
                raise ValidationError(f"{what}: {part.strip()!r} is not a number.") from None
    return tuple(values)
