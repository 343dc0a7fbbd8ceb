"""The one thin Streamlit helper module of mcviz (the dashboard's shared plumbing).

It holds the session-state keys, the cache wrappers (keyed on the uploaded bytes' SHA-256 and
the column mapping; frames and predictions are passed as underscore-prefixed arguments so
Streamlit never hashes them -- its sampled hashing of large frames can return stale results),
the query-parameter encoding of shareable links, and widgets shared by the pages. Statistics
live in the other modules; this module only wires them to Streamlit.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd
import streamlit as st

from mcviz.binning import calibration_metrics, reliability_diagrams
from mcviz.cumulative import cumulative_differences
from mcviz.errors import ValidationError
from mcviz.figures import (
    categorical_levels_figure,
    cumulative_figure,
    gap_figure,
    lcs_figure,
    reliability_figure,
    variable_curves_figure,
)
from mcviz.io import Predictions, demo_path, infer_roles, load_predictions, read_table
from mcviz.multical import multicalibration
from mcviz.report import ReportSection
from mcviz.smoothing import local_calibration_score
from mcviz.variables import level_calibration, rank_variables, variable_calibration

__all__ = [
    "DEMOS",
    "ColumnMapping",
    "compute",
    "current",
    "init_session",
    "predictions_for",
    "read_upload",
    "sync_query_params",
]

DEMOS = {
    "adult": "Adult (binary, UCI census income)",
    "letter": "Letter recognition (multi-class, 26 letters)",
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
W_SOURCE = "w_source"
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
WIDGET_KEYS = (
    W_SOURCE, W_DEMO, W_PRESENTATION, W_SCORE2, W_VARIABLE, W_BINS, W_L, W_M, W_SEED,
    W_REPEATS, W_SUBCOVS, W_SELECTED, W_FILTER, W_GROUP,
)
DEFAULTS: dict[str, Any] = {
    W_SOURCE: "demo",
    W_DEMO: "adult",
    W_PRESENTATION: False,
    W_SCORE2: "(none)",
    W_BINS: "10, 20, 50",
    W_L: 1000,
    W_M: 10,
    W_SEED: 0,
    W_REPEATS: 1,
    W_SELECTED: 0,
    W_FILTER: "",
}
NO_SCORE = "(none)"


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
    weighting: str | None = None  # a scheme of mcviz.weighting (Appendices A and B)
    rho: float | None = None
    response: str = "binary"  # or "continuous": real-valued labels (paper 000 Appendix C)

    def to_json(self) -> str:
        """Canonical JSON (the cache key and the shareable-link payload)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ColumnMapping:
        """Inverse of :meth:`to_json`; unknown keys are ignored."""
        data = json.loads(text)
        names = set(cls.__dataclass_fields__)
        data = {k: v for k, v in data.items() if k in names}
        for key in ("probabilities", "covariates", "nominal"):
            data[key] = tuple(str(v) for v in data.get(key, ()) or ())
        return cls(**data)

    def with_score(self, score: str) -> ColumnMapping:
        """Return the same mapping with another score column (to compare models)."""
        return replace(self, score=score, probabilities=())

    def load_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`mcviz.load_predictions`."""
        options: dict[str, Any] = {  # the weighting is applied afterwards (see predictions_for)
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


def default_mapping(frame: pd.DataFrame) -> ColumnMapping:
    """Sensible defaults from :func:`mcviz.infer_roles`.

    Per-class probability columns are taken as multi-class only when the label's values are
    among their class names (a file with ``score_a``, ``score_b``, ``score_c`` and a 0/1 label
    holds three binary models, not three classes).
    """
    roles = infer_roles(frame)
    multiclass = False
    if roles.probabilities and roles.label is not None:
        names = _class_names(roles.probabilities)
        values = {str(v).strip() for v in pd.unique(frame[roles.label].dropna())[:1000]}
        multiclass = bool(values) and values <= set(names)
    named = set(roles.score_candidates) | set(roles.probabilities)
    covariates = tuple(c for c in roles.covariates if c not in named or multiclass)
    candidates = score_candidates(frame)
    if multiclass:
        return ColumnMapping(
            probabilities=roles.probabilities, label=roles.label, weight=roles.weight,
            covariates=covariates,
        )
    score = roles.score or (candidates[0] if candidates else None)
    return ColumnMapping(
        score=score, label=roles.label, weight=roles.weight, covariates=covariates,
    )


def score_candidates(frame: pd.DataFrame) -> tuple[str, ...]:
    """Score-like columns: inferred ones first, then other numeric columns within [0, 1]."""
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


def _class_names(columns: Sequence[str]) -> list[str]:
    first, last = min(columns), max(columns)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    names = [c[length:] for c in columns]
    return names if all(names) and len(set(names)) == len(names) else list(columns)


# --------------------------------------------------------------------------------------------
# Caches


def digest(raw: bytes) -> str:
    """SHA-256 of the uploaded bytes (the cache key and the shareable-link file id)."""
    return hashlib.sha256(raw).hexdigest()


@st.cache_resource(max_entries=4, show_spinner=False)
def _read_upload(file_digest: str, name: str, _raw: bytes) -> pd.DataFrame:
    buffer = io.BytesIO(_raw)
    buffer.name = name
    return read_table(buffer)


def read_upload(name: str, raw: bytes) -> tuple[str, pd.DataFrame]:
    """Read an uploaded file once per content hash; returns ``(digest, frame)``."""
    file_digest = digest(raw)
    return file_digest, _read_upload(file_digest, name, raw)


@st.cache_resource(max_entries=2, show_spinner=False)
def read_demo(name: str) -> pd.DataFrame:
    """Return the raw frame of an embedded demo."""
    return read_table(demo_path(name))


@st.cache_resource(max_entries=16, show_spinner=False)
def _predictions(source_key: str, mapping_json: str, _frame: pd.DataFrame) -> Predictions:
    mapping = ColumnMapping.from_json(mapping_json)
    pred = load_predictions(_frame, **mapping.load_options())
    if mapping.weighting:
        from mcviz.weighting import reweight

        pred = reweight(pred, mapping.weighting, rho=mapping.rho)
    return pred


def predictions_for(
    source_key: str, mapping: ColumnMapping, frame: pd.DataFrame
) -> Predictions:
    """Build the predictions once per (source, mapping); raises ValidationError."""
    return _predictions(source_key, mapping.to_json(), frame)


@st.cache_resource(max_entries=256, show_spinner=False)
def _compute(name: str, key: str, params: str, _fn: Callable, _args: tuple, _kwargs: dict):
    return _fn(*_args, **_kwargs)


@st.cache_resource(max_entries=6, show_spinner=False)
def _compute_heavy(name: str, key: str, params: str, _fn: Callable, _args: tuple, _kwargs: dict):
    return _fn(*_args, **_kwargs)


_HEAVY = ("subpopulations", "multicalibration")
"""Results holding one index array per subpopulation: only a few parameter sets are kept."""


def compute(name: str, key: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn(*args, **kwargs)`` once per (name, predictions key, keyword arguments).

    Positional arguments (the predictions, index arrays) are not hashed: ``key`` (or ``name``)
    must identify them. Pass every other choice -- a variable, columns, settings -- as a keyword
    argument: keywords are JSON-serialised into the cache key.
    """
    params = json.dumps(kwargs, sort_keys=True, default=str)
    cache = _compute_heavy if name in _HEAVY else _compute
    return cache(name, key, params, fn, args, kwargs)


# --------------------------------------------------------------------------------------------
# The current analysis


@dataclass(frozen=True)
class Current:
    """The loaded analysis: predictions, its cache key, the source and the mapping."""

    pred: Predictions
    key: str
    source: Mapping[str, Any]
    mapping: ColumnMapping
    frame: pd.DataFrame = field(repr=False)

    @property
    def source_key(self) -> str:
        """``demo:<name>`` or ``sha256:<digest>``."""
        return source_key(self.source)

    def with_score(self, score: str) -> Current:
        """Return the same analysis for another score column (raises ValidationError)."""
        mapping = self.mapping.with_score(score)
        pred = predictions_for(self.source_key, mapping, self.frame)
        return Current(pred, _key(self.source_key, mapping), self.source, mapping, self.frame)


def source_key(source: Mapping[str, Any]) -> str:
    """Cache key of a data source."""
    if source["kind"] == "demo":
        return f"demo:{source['name']}"
    return f"sha256:{source['digest']}"


def current_key(source: Mapping[str, Any], mapping: ColumnMapping) -> str:
    """Return the cache key of the predictions built from ``source`` with ``mapping``."""
    return _key(source_key(source), mapping)


def _key(source: str, mapping: ColumnMapping) -> str:
    return hashlib.sha256(f"{source}|{mapping.to_json()}".encode()).hexdigest()[:24]


def current() -> Current | None:
    """Return the current analysis, or None when no data is loaded or the mapping fails."""
    source = st.session_state.get(SOURCE)
    frame = st.session_state.get(FRAME)
    mapping = st.session_state.get(MAPPING)
    if source is None or frame is None or mapping is None:
        return None
    try:
        pred = predictions_for(source_key(source), mapping, frame)
    except ValidationError:
        return None
    return Current(pred, _key(source_key(source), mapping), source, mapping, frame)


def page(url_path: str, title: str) -> None:
    """Start a page: record it for the shareable link and draw its header.

    ``app.py`` normally runs first; AppTest's ``switch_page`` runs a page script on its own, so
    the shared set-up is repeated here (it is idempotent). The page scripts live in ``views/``,
    not ``pages/``: Streamlit runs a script of a ``pages/`` folder directly when its address is
    opened (a copied link), skipping ``app.py``, its navigation and its sidebar.
    """
    if not st.session_state.get(APP_RAN):
        init_session()
    st.session_state[PAGE] = url_path
    sync_query_params(url_path)
    st.header(title)


def sync() -> None:
    """Write the current view into the URL (call after a page changed the state)."""
    sync_query_params(st.session_state.get(PAGE, "data"))


def use_demo(name: str) -> None:
    """Make an embedded demo the current data (a no-op when it already is)."""
    source = {"kind": "demo", "name": name, "digest": None}
    if st.session_state.get(SOURCE) != source:
        frame = read_demo(name)
        set_source(source, frame, default_mapping(frame))


def require_current() -> Current:
    """Return the current analysis, or point to the Data page and ``st.stop()``.

    With the demo chosen as the source (the default) and nothing loaded yet, as when a page's
    address is opened directly, the demo is loaded here, as the Data page would.
    """
    if st.session_state.get(SOURCE) is None and st.session_state.get(W_SOURCE) == "demo":
        use_demo(st.session_state.get(W_DEMO) or DEFAULTS[W_DEMO])
    analysis = current()
    if analysis is None:
        st.info("Load a file or a demo on the **Data** page first.")
        st.page_link("views/data.py", label="Go to Data", icon=":material/upload_file:")
        st.stop()
    return analysis


def set_source(source: dict[str, Any], frame: pd.DataFrame, mapping: ColumnMapping) -> None:
    """Make ``frame`` the current data; a new source resets the computed subpopulations."""
    previous = st.session_state.get(SOURCE)
    if previous is not None and previous != source:
        st.session_state.pop(SUBPOP, None)
        st.session_state[W_SELECTED] = 0
    st.session_state[SOURCE] = source
    st.session_state[FRAME] = frame
    st.session_state[MAPPING] = mapping


def presentation() -> bool:
    """Return True in presentation mode (larger fonts and lines, one chart per row)."""
    return bool(st.session_state.get(W_PRESENTATION, False))


def chart_slots(count: int) -> list:
    """``count`` side-by-side columns, or stacked containers in presentation mode."""
    if presentation() or count == 1:
        return [st.container() for _ in range(count)]
    return list(st.columns(count))


def bin_counts() -> tuple[int, ...]:
    """Return the three reliability-diagram bin counts chosen in the sidebar."""
    text = str(st.session_state.get(W_BINS, DEFAULTS[W_BINS]))
    counts = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part.isdigit() and 2 <= int(part) <= 1000:
            counts.append(int(part))
    return tuple(counts[:3]) or (10, 20, 50)


# --------------------------------------------------------------------------------------------
# Shareable links


_SIMPLE = {  # query parameter -> widget key
    "l": W_L, "m": W_M, "seed": W_SEED, "reps": W_REPEATS, "bins": W_BINS, "var": W_VARIABLE,
    "score2": W_SCORE2, "sub": W_SELECTED, "group": W_GROUP, "filter": W_FILTER,
}
_INTS = {W_L, W_M, W_SEED, W_REPEATS, W_SELECTED}


def encode_state(state: Mapping[str, Any], page: str | None = None) -> dict[str, str]:
    """Return the query parameters of a shareable link for this session state."""
    params: dict[str, str] = {}
    if page:
        params["page"] = page
    source = state.get(SOURCE)
    if source is not None:
        if source["kind"] == "demo":
            params["demo"] = str(source["name"])
        else:
            params["sha"] = str(source["digest"])
    mapping = state.get(MAPPING)
    if mapping is not None:
        params["map"] = mapping.to_json()
    for name, key in _SIMPLE.items():
        value = state.get(key)
        if value is not None and value != "" and value != DEFAULTS.get(key):
            params[name] = str(value)
    covariates = state.get(W_SUBCOVS)
    if covariates:
        params["subcov"] = json.dumps(list(covariates), separators=(",", ":"))
    if state.get(W_PRESENTATION):
        params["pm"] = "1"
    if state.get(SUBPOP) is not None:
        params["sp"] = "1"
    return params


def decode_params(params: Mapping[str, str]) -> dict[str, Any]:
    """Session-state entries restored from query parameters (invalid values are skipped)."""
    restored: dict[str, Any] = {}
    for name, key in _SIMPLE.items():
        if name in params:
            value: Any = str(params[name])
            if key in _INTS:
                if not value.lstrip("-").isdigit():
                    continue
                value = int(value)
            restored[key] = value
    if "subcov" in params:
        with contextlib.suppress(ValueError, TypeError):
            restored[W_SUBCOVS] = [str(v) for v in json.loads(params["subcov"])]
    if params.get("pm") == "1":
        restored[W_PRESENTATION] = True
    if params.get("sp") == "1":
        restored[AUTO_SUBPOP] = True
    mapping = None
    if "map" in params:
        try:
            mapping = ColumnMapping.from_json(str(params["map"]))
        except (ValueError, TypeError):
            mapping = None
    if "demo" in params and params["demo"] in DEMOS:
        restored[W_SOURCE] = "demo"
        restored[W_DEMO] = params["demo"]
        restored[PENDING] = {"demo": params["demo"], "mapping": mapping}
    elif "sha" in params:
        restored[W_SOURCE] = "upload"
        restored[PENDING] = {"sha": str(params["sha"]), "mapping": mapping}
    return restored


def init_session() -> None:
    """Restore a shared link once per session and keep widget values across pages."""
    state = st.session_state
    if not state.get(RESTORED):
        state[RESTORED] = True
        params = {k: st.query_params.get(k) for k in st.query_params}
        for key, value in decode_params(params).items():
            state[key] = value
        if "page" in params:
            state["requested_page"] = str(params["page"])
    for key in WIDGET_KEYS:
        if key in state:
            state[key] = state[key]  # interrupt the widget clean-up between pages
        elif key in DEFAULTS:
            state[key] = DEFAULTS[key]


def sync_query_params(page: str) -> None:
    """Write the current view into the URL (the shareable link)."""
    wanted = encode_state(st.session_state, page)
    existing = {k: st.query_params.get(k) for k in st.query_params}
    if existing != wanted:
        st.query_params.from_dict(wanted)



def selectbox_state(key: str, options: Sequence[Any], default: Any) -> None:
    """Make ``st.session_state[key]`` one of ``options`` before its selectbox is drawn."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else (
            options[0] if options else None
        )


def apply_pending() -> str | None:
    """Apply a shared link's data source; returns a message when the link needs an upload."""
    pending = st.session_state.get(PENDING)
    if not pending:
        return None
    if "demo" in pending:
        frame = read_demo(pending["demo"])
        mapping = pending.get("mapping") or default_mapping(frame)
        set_source({"kind": "demo", "name": pending["demo"], "digest": None}, frame, mapping)
        st.session_state.pop(PENDING, None)
        return None
    source = st.session_state.get(SOURCE)
    if source is not None and source.get("digest") == pending["sha"]:
        st.session_state.pop(PENDING, None)
        return None
    return (
        f"This link refers to an uploaded file (SHA-256 {pending['sha'][:12]}…). Upload the same "
        "file on the Data page to restore the view; files are never stored on the server."
    )


def adopt_upload(name: str, file_digest: str, frame: pd.DataFrame) -> None:
    """Make an uploaded file current, applying a shared link's mapping when the hash matches."""
    source = {"kind": "upload", "name": name, "digest": file_digest}
    pending = st.session_state.get(PENDING) or {}
    if st.session_state.get(SOURCE) == source:
        return
    mapping = None
    if pending.get("sha") == file_digest:
        mapping = pending.get("mapping")
        st.session_state.pop(PENDING, None)
    set_source(source, frame, mapping or default_mapping(frame))


# --------------------------------------------------------------------------------------------
# Shared widgets


def show_figure(figure: Any, *, key: str | None = None, on_select: str = "ignore") -> Any:
    """Draw a plotly figure at full container width (the one place pages draw charts)."""
    return st.plotly_chart(
        figure, width="stretch", key=key, on_select=on_select, theme=None,
        config={"displaylogo": False, "toImageButtonOptions": {"format": "svg"}},
    )


def cumulative_metrics(result: Any, *, container: Any = None) -> None:
    """Show the five headline numbers of a cumulative result: D, G, σ, D/σ and p."""
    target = container or st
    cells = target.columns(5)
    for cell, (name, value, help_text) in zip(cells, [
        ("Kuiper D", result.kuiper, "range of the cumulative differences (eq. 2)"),
        ("KS G", result.ks, "largest absolute cumulative difference"),
        ("σ", result.sigma, "standard deviation under perfect calibration (eq. 5)"),
        ("D/σ", result.kuiper_z, "Kuiper statistic in units of σ"),
        ("p-value", result.p_value, "asymptotic p-value of D/σ (range of Brownian motion)"),
    ], strict=True):
        cell.metric(name, f"{value:.4g}", help=help_text)


def figure(build: Callable, result: Any, cache: str | None, **options: Any) -> Any:
    """Build ``build(result, presentation=..., **options)``, once per ``cache`` key when given.

    Building a plotly figure can take a second (validation of every trace), so figures of
    cached results are cached too; ``cache`` must identify the result (its compute key).
    """
    if cache is None:
        return build(result, presentation=presentation(), **options)
    return compute(f"figure:{cache}", "", build, result, presentation=presentation(), **options)


def cumulative_fig(result: Any, *, title: str | None = None, cache: str | None = None) -> Any:
    """Return the cumulative calibration plot of a result (via :mod:`mcviz.figures`)."""
    return figure(cumulative_figure, result, cache, title=title)


def subset_predictions(pred: Predictions, index: Any, *, covariates: bool = True) -> Predictions:
    """Restrict the predictions to ``index`` (sorted positions), without re-sorting."""
    import numpy as np

    index = np.asarray(index)
    score = pred.score[index]
    run_end = np.ones(index.size, dtype=bool)
    run_end[:-1] = score[1:] != score[:-1]
    extra: dict[str, Any] = {}
    if covariates:
        extra["covariates"] = pred.covariates.iloc[index].reset_index(drop=True)
    else:  # the score-ordered statistics never look at the covariates
        extra["covariates"] = pd.DataFrame(index=pd.RangeIndex(index.size))
        extra["covariate_kinds"] = {}
    if pred.predicted_class is not None:
        extra["predicted_class"] = pred.predicted_class[index]
    if pred.true_class is not None:
        extra["true_class"] = pred.true_class[index]
    return replace(
        pred, score=score, label=pred.label[index], weight=pred.weight[index],
        row=pred.row[index], run_end=run_end, **extra,
    )


def measure_subpopulations(pred: Predictions, subsets: Any, **_params: Any) -> Any:
    """Measure M over generated subpopulations (``_params`` only key the cache)."""
    return multicalibration(pred, subsets.subpopulations)


def own_cumulative(pred: Predictions, index: Any) -> Any:
    """Return a subpopulation's own cumulative calibration result."""
    return cumulative_differences(subset_predictions(pred, index, covariates=False))


BIN_KIND_TITLES = {"equal_width": "Equal-width bins", "equal_count": "Equal-count bins"}


def reliability_result(item: Current, kind: str, index: Any = None,
                       description: str | None = None) -> Any:
    """Reliability diagrams at the sidebar's three bin counts (cached).

    With ``index`` (a subpopulation, identified in the cache by ``description``) the diagrams
    compare it with the full population.
    """
    n_bootstrap = 20 if item.pred.n <= 200_000 else 0
    return compute(
        f"reliability:{description or ''}", item.key, _reliability, item.pred, index,
        n_bins=list(bin_counts()), kind=kind, n_bootstrap=n_bootstrap, description=description,
    )


def _reliability(pred: Predictions, index: Any, **options: Any) -> Any:
    return reliability_diagrams(pred, index=index, **options)


def reliability_fig(result: Any, cache: str | None = None) -> Any:
    """Return the reliability figure of a result."""
    return figure(reliability_figure, result, cache and f"{cache}:{bin_counts()}")


def lcs_result(item: Current) -> Any:
    """Return the Local Calibration Score (cached), or None for real-valued responses."""
    if item.pred.response_kind != "binary":
        return None
    pred = item.pred
    return compute("lcs", item.key, local_calibration_score, pred.score, pred.label,
                   pred.weight if pred.weighted else None)


def lcs_fig(result: Any, cache: str | None = None) -> Any:
    """Return the LCS figure."""
    return figure(lcs_figure, result, cache)


def metrics_table(item: Current, index: Any = None, name: str = "") -> pd.DataFrame:
    """Return the classical metrics table (cached)."""
    result = compute(f"metrics:{name}", item.key, _metrics, item.pred, index,
                     n_bins=bin_counts()[0])
    return result.to_frame()


def _metrics(pred: Predictions, index: Any, *, n_bins: int) -> Any:
    return calibration_metrics(pred, n_bins=n_bins, index=index)


def extra_calibration_figures(item: Current) -> list[tuple[str, Any]]:
    """Reliability diagrams and (for 0/1 responses) the LCS curve of one model."""
    figures = [(title, reliability_fig(reliability_result(item, kind), f"rel:{kind}:{item.key}"))
               for kind, title in BIN_KIND_TITLES.items()]
    result = lcs_result(item)
    if result is not None:
        figures.append(("Local Calibration Score", lcs_fig(result, f"lcs:{item.key}")))
    return figures


def extra_calibration_tables(item: Current) -> list[tuple[str, pd.DataFrame]]:
    """Return the classical metrics table of one model."""
    return [("Classical calibration metrics", metrics_table(item))]


def extra_report_sections(item: Current) -> list[Any]:
    """Return the Variables section of the report (ranking and the chosen variable's charts)."""
    try:
        ranking = variable_ranking(item)
    except ValidationError:
        return []
    variable = st.session_state.get(W_VARIABLE)
    if variable not in item.pred.covariate_kinds:
        variable = str(ranking["name"].iloc[0]) if len(ranking) else None
    figures = [] if variable is None else [f for _, f in variable_figures(item, variable)]
    return [ReportSection(
        "Variables",
        text=(f"Variables ranked by VECE; curves for {variable}." if variable else "",),
        figures=tuple(figures),
        tables=(("Variables ranked by variable-based calibration error (VECE)", ranking),),
    )]


def variable_ranking(item: Current) -> pd.DataFrame:
    """Return the VECE ranking of the covariates (cached)."""
    return compute("rank_variables", item.key, rank_variables, item.pred)


def variable_figures(item: Current, variable: str) -> list[tuple[str, Any]]:
    """Return the LOESS and gap figures of a numeric variable, or the per-level figure."""
    pred = item.pred
    if pred.covariate_kinds.get(variable) == "nominal":
        result = compute("levels", item.key, level_calibration, pred, variable=variable)
        return [("levels", figure(categorical_levels_figure, result,
                                  f"levels:{item.key}:{variable}"))]
    result = compute("variable", item.key, variable_calibration, pred, variable=variable)
    return [(build.__name__, figure(build, result, f"{build.__name__}:{item.key}:{variable}"))
            for build in (variable_curves_figure, gap_figure)]
