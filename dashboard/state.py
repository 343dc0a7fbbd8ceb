"""Session-state keys, defaults and the column mapping of the dashboard (no Streamlit here)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import pandas as pd

from mcviz.io import infer_roles
from mcviz.settings import (
    DEFAULT_THRESHOLDS,
    CompareSettings,
    MonitorSettings,
    NullSettings,
    SearchSettings,
    SubpopulationSettings,
    format_thresholds,
)

__all__ = ["DEFAULTS", "DEMOS", "ColumnMapping", "default_mapping", "parse_bin_counts",
           "subpopulation_params"]

DEMOS = {
    "adult": "Adult (binary, UCI census income)",
    "letter": "Letter recognition (multi-class, 26 letters)",
    "flights": "NYC flights 2013 (binary, dated: arrival delays)",
}

# Session-state keys. Keys starting with "w_" belong to widgets and are re-assigned on every
# run (init_session) so Streamlit keeps their values while another page is shown.
SOURCE = "source"  # {"kind": "demo"|"upload", "name": str, "digest": str|None}
FRAME = "frame"  # the raw DataFrame of the current source
MAPPING = "mapping"  # ColumnMapping of the current analysis
PENDING = "pending"  # mapping/settings from a shared link waiting for its file
RESTORED = "restored"  # query parameters were read once for this session
PAGE = "page"  # url path of the page shown by this run (set by the page itself)
SUBPOP = "subpop_result"  # settings of the computed subpopulations (results are cached)
AUTO_SUBPOP = "auto_subpop"  # a shared link asks for the subpopulations to be computed
APP_RAN = "app_ran"  # app.py ran before the page in this script run
RUN_IN_PLACE = "run_in_place"  # a page script ran first: app.py runs that page in place
LINK_MESSAGES = "link_messages"  # what a malformed shared link could not restore
W_DEMO = "w_demo"
W_PRESENTATION = "w_presentation"
W_SCORE2 = "w_score2"
W_VARIABLE = "w_variable"
W_BINS = "w_bins"
W_L = "w_l"
W_M = "w_m"
W_SEED = "w_seed"
W_REPEATS = "w_repeats"
W_SUBCOVS = "w_subcovs"
W_SELECTED = "w_selected"
W_FILTER = "w_filter"
W_GROUP = "w_group"
W_SCOPE = "w_scope"  # review view: "full", "argmax", "sub", "filter", "level"
W_SCOPE_SUB = "w_scope_sub"
W_SCOPE_LEVEL = "w_scope_level"
W_SUB_MODE = "w_sub_mode"  # Subpopulations page: "generated" or "searched"
W_CONDITIONS = "w_sub_conditions"  # searched: conditions per finding at most
W_FINDINGS = "w_sub_findings"  # searched: findings reported
W_NULL_DRAWS = "w_null_draws"  # generated: draws of the null distribution of M
AUTO_NULL = "auto_null"  # a shared link asks for the null distribution of M
NULL_SHOWN = "null_shown"  # the null distribution of the current subpopulations is held
W_MON_TIME, W_MON_PERIOD, W_MON_REFERENCE = "w_mon_time", "w_mon_period", "w_mon_reference"
W_MON_SEGMENTS, W_MON_FILTERS, W_MON_SEARCH = "w_mon_segments", "w_mon_filters", "w_mon_search"
W_MON_SERIES, W_MON_FROM, W_MON_TO = "w_mon_series", "w_mon_from", "w_mon_to"
W_MON_ALPHA, W_MON_DRAWS = "w_mon_alpha", "w_mon_draws"  # mcviz.settings.MonitorSettings
W_CMP_FINDINGS, W_CMP_HOLDOUT = "w_cmp_findings", "w_cmp_holdout"  # the Compare page (issue 43)
W_CMP_SEED, W_CMP_THRESHOLDS, W_CMP_ORDER = "w_cmp_seed", "w_cmp_thresholds", "w_cmp_order"
W_REVIEW_B = "w_review_b"  # Review: the second model (B's score column) shown beside A (#43)
MON_PICKED = "monitor_picked"  # (analysis key, filter, series, series count): Monitor opened it
MON_PICKED_LINK = "monitor_picked_link"  # (filter, series, series count): a link says Monitor did
COMPARE_KEYS = (W_CMP_FINDINGS, W_CMP_HOLDOUT, W_CMP_SEED, W_CMP_THRESHOLDS, W_CMP_ORDER,
                W_REVIEW_B)
MONITOR_KEYS = (W_MON_TIME, W_MON_PERIOD, W_MON_REFERENCE, W_MON_SEGMENTS, W_MON_FILTERS,
                W_MON_SEARCH, W_MON_SERIES, W_MON_FROM, W_MON_TO, W_MON_ALPHA,
                W_MON_DRAWS)  # the Monitor page (issue 29)
WIDGET_KEYS = (
    W_DEMO, W_PRESENTATION, W_SCORE2, W_VARIABLE, W_BINS, W_L, W_M, W_SEED, W_REPEATS,
    W_SUBCOVS, W_SELECTED, W_FILTER, W_GROUP, W_SCOPE, W_SCOPE_SUB, W_SCOPE_LEVEL,
    W_SUB_MODE, W_CONDITIONS, W_FINDINGS, W_NULL_DRAWS, *MONITOR_KEYS, *COMPARE_KEYS,
)
DEFAULTS: dict[str, Any] = {
    W_DEMO: "adult",
    W_PRESENTATION: False,
    W_SCORE2: "(none)",
    W_BINS: "10, 20, 50",
    W_L: SubpopulationSettings.n_subpopulations,
    W_M: SubpopulationSettings.min_size,
    W_SEED: SubpopulationSettings.seed,
    W_REPEATS: SubpopulationSettings.repeats,
    W_SELECTED: 0,
    W_FILTER: "",
    W_SCOPE: "full",
    W_SUB_MODE: "generated",
    W_CONDITIONS: SearchSettings.setting("max_conditions").default,
    W_FINDINGS: SearchSettings.setting("n_findings").default,
    W_NULL_DRAWS: NullSettings.setting("draws").default,
    W_MON_PERIOD: MonitorSettings.period,
    W_MON_ALPHA: MonitorSettings.alpha,
    W_MON_DRAWS: MonitorSettings.draws,
    W_MON_REFERENCE: "",
    W_MON_FILTERS: "",
    W_MON_SEARCH: False,
    W_CMP_FINDINGS: CompareSettings.n_findings,
    W_CMP_HOLDOUT: CompareSettings.holdout,
    W_CMP_SEED: CompareSettings.seed,
    W_CMP_THRESHOLDS: format_thresholds(DEFAULT_THRESHOLDS),
    W_REVIEW_B: "",
}
NO_SCORE = "(none)"
SCOPES = ("full", "argmax", "sub", "filter", "level")
SUB_MODES = ("generated", "searched")
DEFAULT_BINS = (10, 20, 50)


def parse_bin_counts(text: Any) -> tuple[int, ...]:
    """Return up to three bin counts in [2, 1000] from text such as ``"10, 20, 50"``.

    >>> parse_bin_counts("5; 500000, x, 20")
    (5, 20)
    >>> parse_bin_counts("")
    (10, 20, 50)
    """
    counts = []
    for part in str(text).replace(";", ",").split(","):
        part = part.strip()
        if part.isdigit() and len(part) <= 4 and 2 <= int(part) <= 1000:
            counts.append(int(part))
    return tuple(counts[:3]) or DEFAULT_BINS


@dataclass(frozen=True)
class ColumnMapping:
    """Which column plays which role (the arguments of :func:`mcviz.load_predictions`)."""

    score: str | None = None
    probabilities: tuple[str, ...] = ()
    label: str | None = None
    positive: str | None = None
    weight: str | None = None
    covariates: tuple[str, ...] = ()
    nominal: tuple[str, ...] = ()
    drop_invalid: bool = False
    weighting: str | None = None  # a scheme of mcviz.stats.weighting (Appendices A and B)
    rho: float | None = None
    response: str = "binary"  # or "continuous": real-valued labels (paper 000 Appendix C)

    def to_json(self) -> str:
        """Canonical JSON (the cache key and the shareable-link payload)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    def with_score(self, score: str) -> ColumnMapping:
        """Return the same mapping with another score column (to compare models)."""
        return replace(self, score=score, probabilities=())

    def load_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`mcviz.load_predictions`."""
        options: dict[str, Any] = {  # the weighting is applied afterwards (ui.predictions_for)
            "label": self.label,
            "weight": self.weight or False,
            "covariates": list(self.covariates),
            "nominal": [c for c in self.nominal if c in self.covariates],
            "ordinal": [],
            "drop_invalid": self.drop_invalid,
            "response": self.response,
        }
        if self.probabilities:
            options["probabilities"] = list(self.probabilities)
        else:
            options["score"] = self.score
        if self.positive not in (None, ""):
            options["positive"] = self.positive
        return options


MAPPING_FIELDS = {f.name: f.type for f in fields(ColumnMapping)}


def default_mapping(frame: pd.DataFrame) -> ColumnMapping:
    """Return the roles :func:`mcviz.infer_roles` gives, with the loader's class-name rule.

    Per-class probability columns are taken as multi-class when the label's values are class
    names by the rule :func:`mcviz.load_predictions` applies (``prob_a1`` ... with labels
    ``a1`` ...); a file with ``score_gbm``, ``score_logistic``, ``score_uncalibrated`` and a 0/1
    label holds three binary models, not three classes.
    """
    roles = infer_roles(frame)
    if roles.score is None and roles.probabilities and _labels_are_classes(frame, roles):
        return ColumnMapping(probabilities=roles.probabilities, label=roles.label,
                             weight=roles.weight, covariates=roles.covariates)
    candidates = score_candidates(frame)
    score = roles.score or (candidates[0] if candidates else None)
    covariates = tuple(c for c in roles.covariates if c != score)
    return ColumnMapping(score=score, label=roles.label, weight=roles.weight,
                         covariates=covariates)


def _labels_are_classes(frame: pd.DataFrame, roles: Any) -> bool:
    # The loader's own rule (mcviz.io.labels_are_classes), not a second copy of it.
    from mcviz.io import labels_are_classes

    if roles.label is None:
        return False
    # every distinct label, as the loader sees them: a cut-off list could disagree with it
    return labels_are_classes(roles.probabilities, pd.unique(frame[roles.label].dropna()))


def score_candidates(frame: pd.DataFrame) -> tuple[str, ...]:
    """Score-like columns: inferred ones first, then other float columns within [0, 1]."""
    roles = infer_roles(frame)
    named = [*roles.score_candidates, *roles.probabilities]
    others = []
    for column in frame.columns:
        series = frame[column]
        if column in named or column == roles.label or column == roles.weight:
            continue
        if pd.api.types.is_float_dtype(series):
            sample = series.iloc[:10_000].dropna()
            if len(sample) and sample.min() >= 0 and sample.max() <= 1:
                others.append(str(column))
    return tuple(dict.fromkeys([*named, *others]))


def source_key(source: Mapping[str, Any]) -> str:
    """Cache key of a data source: ``demo:<name>`` or ``sha256:<digest>``."""
    if source["kind"] == "demo":
        return f"demo:{source['name']}"
    return f"sha256:{source['digest']}"


def analysis_key(source: Mapping[str, Any], mapping: ColumnMapping) -> str:
    """Return the cache key of the predictions built from ``source`` with ``mapping``."""
    text = f"{source_key(source)}|{mapping.to_json()}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def digest(raw: bytes) -> str:
    """SHA-256 of uploaded bytes (the cache key and the shareable-link file id)."""
    return hashlib.sha256(raw).hexdigest()


def subpopulation_params(state: Mapping[str, Any], covariates: Any) -> dict[str, Any]:
    """Return the Subpopulations page's settings from the session's widgets (what Compute runs).

    ``covariates`` are the mapping's covariates: the chosen ones that are among them, or all.
    """
    mode = state.get(W_SUB_MODE) if state.get(W_SUB_MODE) in SUB_MODES else "generated"
    chosen = [c for c in state.get(W_SUBCOVS) or [] if c in covariates] or list(covariates)

    def value(key: str) -> Any:
        return state.get(key) if state.get(key) is not None else DEFAULTS[key]

    # checked and typed once, by mcviz.settings (bounds and defaults written there)
    generated = SubpopulationSettings.from_mapping({
        "n_subpopulations": value(W_L), "min_size": value(W_M), "seed": value(W_SEED),
        "repeats": value(W_REPEATS) if mode == "generated" else 1})
    searched = SearchSettings.from_mapping({"max_conditions": value(W_CONDITIONS),
                                            "n_findings": value(W_FINDINGS)})
    return {
        "covariates": chosen, "n_subpopulations": generated.n_subpopulations,
        "min_size": generated.min_size, "seed": generated.seed, "repeats": generated.repeats,
        "mode": mode, "max_conditions": searched.max_conditions,
        "n_findings": searched.n_findings,
    }
