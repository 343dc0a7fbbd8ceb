"""Shareable links: the session state as query parameters and back, as pure functions.

:func:`encode_state` writes the view into query parameters; :func:`decode_params` reads them back
into session-state entries and answers every malformed part (bad JSON, a mapping of the wrong
shape, unknown keys, out-of-range or non-numeric numbers) with a message instead of an error:
a link is user text and must never produce a traceback.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashboard import state as s
from mcviz.errors import ValidationError
from mcviz.settings import (
    FILTER_MAX_CHARS,
    LINK_MAX_CHARS,
    CompareSettings,
    MonitorSettings,
    NullSettings,
    SearchSettings,
    SubpopulationSettings,
)
from mcviz.text import check_nesting

__all__ = ["JSON_KEYS", "LINK_KEYS", "DecodedLink", "decode_params", "encode_state",
           "mapping_from_json"]

_SIMPLE = {  # query parameter -> widget key
    "l": s.W_L, "m": s.W_M, "seed": s.W_SEED, "reps": s.W_REPEATS, "bins": s.W_BINS,
    "var": s.W_VARIABLE, "score2": s.W_SCORE2, "sub": s.W_SELECTED, "group": s.W_GROUP,
    "filter": s.W_FILTER, "scope": s.W_SCOPE, "ssub": s.W_SCOPE_SUB, "slevel": s.W_SCOPE_LEVEL,
    "smode": s.W_SUB_MODE, SearchSettings.setting("max_conditions").link: s.W_CONDITIONS,
    SearchSettings.setting("n_findings").link: s.W_FINDINGS,
    NullSettings.setting("draws").link: s.W_NULL_DRAWS,
    "mtime": s.W_MON_TIME, "mper": s.W_MON_PERIOD, "mref": s.W_MON_REFERENCE,
    "mfil": s.W_MON_FILTERS, MonitorSettings.setting("alpha").link: s.W_MON_ALPHA,
    MonitorSettings.setting("draws").link: s.W_MON_DRAWS,
    **{CompareSettings.setting(name).link: key for name, key in (  # the Compare page (#43)
        ("n_findings", s.W_CMP_FINDINGS), ("holdout", s.W_CMP_HOLDOUT), ("seed", s.W_CMP_SEED))},
    "cthr": s.W_CMP_THRESHOLDS, "corder": s.W_CMP_ORDER, "rb": s.W_REVIEW_B,
}
_SPECS = {s.W_MON_ALPHA: MonitorSettings.setting("alpha"),
          s.W_MON_DRAWS: MonitorSettings.setting("draws")}  # read by Setting.parse
_SETTINGS = {s.W_L: "n_subpopulations", s.W_M: "min_size", s.W_SEED: "seed",
             s.W_REPEATS: "repeats"}  # widget key -> setting (bounds written once: mcviz.settings)
_INT_RANGES = {  # widget key -> inclusive range accepted from a link
    **{key: (SubpopulationSettings.setting(name).low, SubpopulationSettings.setting(name).high)
       for key, name in _SETTINGS.items()},
    **{key: (SearchSettings.setting(name).low, SearchSettings.setting(name).high)
       for key, name in ((s.W_CONDITIONS, "max_conditions"), (s.W_FINDINGS, "n_findings"))},
    s.W_NULL_DRAWS: (NullSettings.setting("draws").low, NullSettings.setting("draws").high),
    s.W_SELECTED: (0, 10**9), s.W_SCOPE_SUB: (0, 10**9),
}
_CHOICES = {s.W_SCOPE: s.SCOPES, s.W_SUB_MODE: s.SUB_MODES}
JSON_KEYS = ("map", "subcov", "mseg")
"""The link keys whose value is JSON: read by :func:`_json` (size and nesting checked first)."""
LINK_KEYS: dict[str, int] = {  # every key the codec knows -> the most characters it reads
    **dict.fromkeys(_SIMPLE, LINK_MAX_CHARS), "filter": FILTER_MAX_CHARS,
    "mfil": FILTER_MAX_CHARS, **dict.fromkeys(JSON_KEYS, LINK_MAX_CHARS),
    "page": 32, "demo": 64, "sha": 64, **dict.fromkeys(("pm", "sp", "nu", "msrch"), 1),
    "mpick": 13}
"""Every query parameter a link may hold, with its limit: a longer value is refused with a
message (the page keeps its default), never cut into another value."""
_SHA = re.compile(r"[0-9a-f]{64}")
_WEIGHTINGS = (None, "proportional", "proportional-shifted", "low-prevalence")


@dataclass(frozen=True)
class DecodedLink:
    """Session-state entries restored from a link, the page it names, and what was refused."""

    restored: dict[str, Any]
    page: str | None
    messages: tuple[str, ...]


def encode_state(state: Mapping[str, Any], page: str | None = None) -> dict[str, str]:
    """Return the query parameters of a shareable link for this session state."""
    params: dict[str, str] = {}
    if page:
        params["page"] = page
    source = state.get(s.SOURCE)
    if source is not None:
        if source["kind"] == "demo":
            params["demo"] = str(source["name"])
        else:
            params["sha"] = str(source["digest"])
    mapping = state.get(s.MAPPING)
    if mapping is not None:
        params["map"] = mapping.to_json()
    for name, key in _SIMPLE.items():
        value = state.get(key)
        if value is not None and value != "" and value != s.DEFAULTS.get(key):
            params[name] = str(value)
    covariates = state.get(s.W_SUBCOVS)
    if covariates:
        params["subcov"] = json.dumps(list(covariates), separators=(",", ":"))
    if state.get(s.W_MON_SEGMENTS):  # the Monitor page's segment columns (issue 29)
        params["mseg"] = json.dumps(list(state[s.W_MON_SEGMENTS]), separators=(",", ":"))
    if state.get(s.W_MON_SEARCH):
        params["msrch"] = "1"
    pick = _pick(state)
    if pick:
        params["mpick"] = pick
    if state.get(s.W_PRESENTATION):
        params["pm"] = "1"
    if state.get(s.SUBPOP) is not None:
        params["sp"] = "1"
        if state.get(s.NULL_SHOWN):
            params["nu"] = "1"
    return params


def _pick(state: Mapping[str, Any]) -> str | None:
    """``series-count`` when the Review filter is the one Monitor picked (or a link said it was).

    The window was chosen on the heat map for its colour: the link carries that, so a fresh
    server never judges it by its own p-value (:func:`dashboard.monitor.picked_selection`).
    """
    text = str(state.get(s.W_FILTER) or "").strip()
    if state.get(s.W_SCOPE) != "filter" or not text:
        return None
    picked, linked = state.get(s.MON_PICKED), state.get(s.MON_PICKED_LINK)
    for pick in (picked[1:] if picked else None, linked):
        if pick is not None and pick[0] == text:
            return f"{int(pick[1])}-{int(pick[2])}"
    return None


def _sized(params: Mapping[str, Any], messages: list[str]) -> dict[str, str]:
    """The known keys' values as text, each within its limit (one over it is left out, named)."""
    sized = {}
    for name, value in params.items():
        if name not in LINK_KEYS or value is None:
            continue
        text = str(value)
        if len(text) > LINK_KEYS[name]:
            messages.append(f"link parameter {name} has {len(text):,} characters; at most "
                            f"{LINK_KEYS[name]:,} are read, so it is ignored (the page shows "
                            "its default instead).")
            continue
        sized[name] = text
    return sized


def _json(name: str, text: str) -> Any:
    """The one reader of a link's JSON value: nesting checked before the recursive parser.

    Raises ValidationError (too deep) or ValueError (not JSON); never RecursionError.
    """
    check_nesting(text, what=f"link parameter {name}", quotes='"')
    try:
        return json.loads(text)
    except RecursionError:  # unreachable after check_nesting; kept as the last guard
        raise ValueError(f"link parameter {name} nests too deep") from None


def _names(name: str, text: str, messages: list[str]) -> list[str] | None:
    """A JSON list of column names from a link, or None (named in ``messages``)."""
    try:
        names = _json(name, text)
    except ValidationError as error:
        messages.append(f"{error} It is ignored.")
        return None
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(c, str) for c in names):
        messages.append(f"link parameter {name} is not a list of column names; ignored.")
        return None
    return names


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _integer(name: str, value: str, key: str) -> tuple[int | None, str | None]:
    low, high = _INT_RANGES[key]
    text = value.strip()
    if not re.fullmatch(r"-?\d{1,12}", text):
        return None, f"link parameter {name}={_shown(value)} is not a whole number; ignored."
    number = int(text)
    if not low <= number <= high:
        return None, (f"link parameter {name}={number} lies outside [{low:,}, {high:,}]; "
                      "ignored.")
    return number, None


def decode_params(params: Mapping[str, Any]) -> DecodedLink:
    """Return the session-state entries restored from query parameters.

    Every value is checked; what cannot be used is left out and named in ``messages``.

    >>> link = decode_params({"demo": "adult", "map": "[1,2]", "l": "9" * 40})
    >>> link.restored["w_demo"], len(link.messages)
    ('adult', 2)
    """
    restored: dict[str, Any] = {}
    messages: list[str] = []
    unknown = sorted(k for k in map(str, params) if k not in LINK_KEYS)
    if unknown:
        messages.append("unknown link parameters ignored: "
                        + ", ".join(_shown(k, 24) for k in unknown[:10]) + ".")
    params = _sized(params, messages)
    for name, key in _SIMPLE.items():
        if name not in params:
            continue
        value: Any = params[name]
        if key in _SPECS:
            value, message = _SPECS[key].parse(value)
            if message:
                messages.append(message)
                continue
        elif key in _INT_RANGES:
            value, message = _integer(name, value, key)
            if message:
                messages.append(message)
                continue
        elif key in _CHOICES and value not in _CHOICES[key]:
            messages.append(f"link parameter {name}={_shown(value)} is not one of "
                            f"{', '.join(_CHOICES[key])}; ignored.")
            continue
        restored[key] = value
    for name, key in (("subcov", s.W_SUBCOVS), ("mseg", s.W_MON_SEGMENTS)):
        names = _names(name, params[name], messages) if name in params else None
        if names is not None:
            restored[key] = names
    if params.get("msrch") == "1":
        restored[s.W_MON_SEARCH] = True
    if "mpick" in params:
        pick = re.fullmatch(r"(\d{1,6})-(\d{1,6})", params["mpick"])
        if pick is None or int(pick[1]) >= int(pick[2]) or s.W_FILTER not in restored:
            messages.append(f"link parameter mpick={_shown(params['mpick'])} is not a series "
                            "of the monitored series with a filter; ignored.")
        else:
            restored[s.MON_PICKED_LINK] = (str(restored[s.W_FILTER]).strip(), int(pick[1]),
                                           int(pick[2]))
    if params.get("pm") == "1":
        restored[s.W_PRESENTATION] = True
    if params.get("sp") == "1":
        restored[s.AUTO_SUBPOP] = True
        if params.get("nu") == "1":
            restored[s.AUTO_NULL] = True
    mapping = None
    if "map" in params:
        mapping, problems = mapping_from_json(params["map"])
        messages.extend(problems)
    if "demo" in params:
        if params["demo"] in s.DEMOS:
            restored[s.W_DEMO] = params["demo"]
            restored[s.PENDING] = {"demo": params["demo"], "mapping": mapping}
        else:
            messages.append(f"link names an unknown demo {_shown(params['demo'])} (known: "
                            f"{', '.join(s.DEMOS)}); the default demo is shown.")
    elif "sha" in params:
        digest = str(params["sha"]).strip().lower()
        if _SHA.fullmatch(digest):
            restored[s.PENDING] = {"sha": digest, "mapping": mapping}
        else:
            messages.append(f"link parameter sha={_shown(params['sha'])} is not a SHA-256 "
                            "digest (64 hexadecimal digits); ignored.")
    page = params.get("page")
    page = str(page) if page is not None and re.fullmatch(r"[a-z_]{1,32}", str(page)) else None
    return DecodedLink(restored, page, tuple(messages))


def mapping_from_json(text: str) -> tuple[s.ColumnMapping | None, list[str]]:
    """Parse a column mapping from a link: ``(mapping or None, messages)``.

    A value of the wrong type is dropped (the field keeps its default) and named; unknown keys
    are named; text that is not a JSON object gives ``None`` (the inferred mapping is used).
    """
    if len(text) > LINK_MAX_CHARS:
        return None, [f"link parameter map has {len(text):,} characters; at most "
                      f"{LINK_MAX_CHARS:,} are read. The inferred mapping is used."]
    try:
        data = _json("map", text)
    except ValidationError as error:
        return None, [f"{error} The inferred mapping is used."]
    except ValueError:
        return None, ["link parameter map is not valid JSON; the inferred mapping is used."]
    if not isinstance(data, dict):
        return None, ["link parameter map is not a JSON object of column roles; the inferred "
                      "mapping is used."]
    messages: list[str] = []
    unknown = sorted(str(k) for k in data if k not in s.MAPPING_FIELDS)
    if unknown:
        messages.append("unknown keys in link parameter map ignored: "
                        + ", ".join(_shown(k, 24) for k in unknown[:10]) + ".")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in s.MAPPING_FIELDS:
            continue
        checked, ok = _mapping_value(key, value)
        if ok:
            values[key] = checked
        else:
            messages.append(f"link parameter map: {key} = {_shown(json.dumps(value))} is not "
                            "valid; the default is used.")
    return s.ColumnMapping(**values), messages


def _mapping_value(key: str, value: Any) -> tuple[Any, bool]:
    if key in ("probabilities", "covariates", "nominal"):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return (tuple(value) if ok else None), ok
    if key == "drop_invalid":
        return value, isinstance(value, bool)
    if key == "rho":
        if value is None:
            return None, True
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              and math.isfinite(value) and 0 <= value <= 1)
        return (float(value) if ok else None), ok
    if key == "response":
        return value, value in ("binary", "continuous")
    if key == "weighting":
        return value, value in _WEIGHTINGS
    return value, value is None or (isinstance(value, str) and len(value) <= 1_000)
