"""Saved recalibration maps read as input: bounded, nesting-checked and schema-checked.

A map written by ``mcviz fix --map`` comes back as a file a user hands over, and is treated
like any prediction file: a special file (FIFO, device, directory) is refused before it is
opened, its size is checked before it is read (:data:`~mcviz.settings.MAP_MAX_BYTES`), its
nesting before it is parsed (:func:`mcviz.text.check_nesting`), ``NaN`` and ``Infinity`` are
refused by the parser, and the parameters of each method are checked for their types, finite
values, sorted knots in [0, 1] of equal lengths and counts within the limits
(:data:`~mcviz.settings.MAP_MAX_TERMS`, :data:`~mcviz.settings.MAP_MAX_ROUNDS`). Every failure
is a :class:`~mcviz.errors.ValidationError` naming the map and the field.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from mcviz.errors import ValidationError
from mcviz.settings import MAP_MAX_BYTES, MAP_MAX_ROUNDS, MAP_MAX_TERMS
from mcviz.text import MAX_NESTING, check_nesting

__all__ = ["check_map", "read_map"]


def read_map(path: str | Path, *, max_bytes: int = MAP_MAX_BYTES) -> dict:
    """Read and check a saved recalibration map; return it as a dict.

    Raises
    ------
    ValidationError
        The path is missing or not a regular file, the file is larger than ``max_bytes``,
        not UTF-8, not JSON, nested deeper than :data:`mcviz.text.MAX_NESTING`, holds
        NaN or Infinity, or fails :func:`check_map`.

    Examples
    --------
    >>> read_map("/dev/null")
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: map '/dev/null' is not a regular file (a FIFO, device or \
socket): give the JSON file written by mcviz fix --map.
    """
    where = f"map {str(path)!r}"
    try:
        info = os.stat(path)
    except OSError as error:
        raise ValidationError(f"{where} cannot be read ({error.strerror}).") from None
    if stat.S_ISDIR(info.st_mode):
        raise ValidationError(f"{where} is a directory: give the JSON file written by mcviz "
                              "fix --map.")
    if not stat.S_ISREG(info.st_mode):
        raise ValidationError(f"{where} is not a regular file (a FIFO, device or socket): give "
                              "the JSON file written by mcviz fix --map.")
    if info.st_size > max_bytes:
        raise ValidationError(f"{where} is {info.st_size:,} bytes; a map of more than "
                              f"{max_bytes:,} bytes is refused before it is read.")
    try:
        with Path(path).open("rb") as stream:
            raw = stream.read(max_bytes + 1)  # a file that grew after the stat is still cut
        text = raw.decode("utf-8")
    except OSError as error:
        raise ValidationError(f"{where} cannot be read ({error.strerror}).") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{where} is not UTF-8 text (not a map written by mcviz fix)."
                              ) from None
    if len(raw) > max_bytes:
        raise ValidationError(f"{where}: more than {max_bytes:,} bytes; refused.")
    check_nesting(text, what=where, quotes='"')
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:  # JSONDecodeError; the constant refusal is re-raised below
        if isinstance(error, ValidationError):
            raise ValidationError(f"{where}: {error}") from None
        raise ValidationError(f"{where}: not JSON ({error}).") from None
    check_map(data, where=where)
    return data


def _refuse_constant(name: str) -> float:
    raise ValidationError(f"it holds {name}, which is not a number a map can hold (a map "
                          "written by mcviz fix has finite numbers only).")


def check_map(data: Any, *, where: str = "map") -> None:
    """Check a parsed map's fields: types, finite numbers, knots, counts.

    The built-in methods' parameters are checked field by field; a method this module does
    not know (one registered by a user) gets the generic checks: a dict of parameters holding
    finite numbers only. Whether the method exists and the map's version match is the
    recalibrator's to say.

    Raises
    ------
    ValidationError
        Naming ``where`` and the field.

    Examples
    --------
    >>> check_map({"method": "isotonic", "covariates": {}, "params": {"x": [0.2, 0.1],
    ...            "y": [0.1, 0.2]}})
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: map: params.x: the knots must increase (knot 2 is 0.1 after \
0.2).
    """
    if not isinstance(data, dict):
        raise ValidationError(f"{where}: not a map written by mcviz fix (not a JSON object).")
    _text(data.get("method"), f"{where}: method")
    covariates = data.get("covariates", {})
    if not isinstance(covariates, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in covariates.items()):
        raise ValidationError(f"{where}: covariates must map column names to kinds (text).")
    for key in ("score_column",):
        if data.get(key) is not None:
            _text(data[key], f"{where}: {key}")
    params = data.get("params")
    if not isinstance(params, dict):
        raise ValidationError(f"{where}: params must be a JSON object.")
    checker = _CHECKS.get(data["method"])
    if checker is not None:
        checker(params, f"{where}: params")
    _finite_everywhere(params, f"{where}: params", depth=0)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text, not {_kind(value)}.")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _number(params: dict, key: str, what: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{what}.{key} must be a number, not {_kind(value)}"
                              f"{'' if key in params else ' (missing)'}.")
    if not math.isfinite(value):
        raise ValidationError(f"{what}.{key} must be a finite number, not {value}.")
    return float(value)


def _numbers(params: dict, key: str, what: str, *, low: float, high: float) -> list[float]:
    values = params.get(key)
    if not isinstance(values, list) or not values:
        raise ValidationError(f"{what}.{key} must be a non-empty list of numbers.")
    for k, value in enumerate(values):
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not low <= value <= high):
            raise ValidationError(f"{what}.{key}: value {k + 1:,} ({value!r}) is not a number "
                                  f"in [{low:g}, {high:g}].")
    return values


def _check_linear(params: dict, what: str, keys: tuple[str, ...]) -> None:
    for key in keys:
        _number(params, key, what)


def _check_isotonic(params: dict, what: str) -> None:
    x = _numbers(params, "x", what, low=0.0, high=1.0)
    y = _numbers(params, "y", what, low=0.0, high=1.0)
    if len(x) != len(y):
        raise ValidationError(f"{what}: x has {len(x):,} knots and y {len(y):,}; they must "
                              "be equal.")
    for k in range(1, len(x)):
        if not x[k] > x[k - 1]:
            raise ValidationError(f"{what}.x: the knots must increase (knot {k + 1:,} is "
                                  f"{x[k]!r} after {x[k - 1]!r}).")


def _check_findings(params: dict, what: str) -> None:
    _check_linear(params, what, ("intercept", "slope"))
    terms = params.get("terms")
    if not isinstance(terms, list):
        raise ValidationError(f"{what}.terms must be a list.")
    if len(terms) > MAP_MAX_TERMS:
        raise ValidationError(f"{what}.terms: {len(terms):,} terms; a map may hold at most "
                              f"{MAP_MAX_TERMS:,} (each is evaluated over every row scored).")
    for k, term in enumerate(terms):
        where = f"{what}.terms[{k}]"
        if not isinstance(term, dict):
            raise ValidationError(f"{where} must be a JSON object.")
        _text(term.get("description"), f"{where}.description")
        if term.get("shape") not in ("offset", "slope", "additive"):
            raise ValidationError(f"{where}.shape must be offset, slope or additive, not "
                                  f"{str(term.get('shape'))[:20]!r}.")
        for key in ("a", "b", "p_adjusted"):
            _number(term, key, where)


def _check_boost(params: dict, what: str) -> None:
    init = params.get("init")
    if not isinstance(init, dict):
        raise ValidationError(f"{what}.init must be a JSON object.")
    _check_linear(init, f"{what}.init", ("intercept", "slope"))
    rounds = params.get("rounds")
    if not isinstance(rounds, list) or len(rounds) > MAP_MAX_ROUNDS:
        raise ValidationError(f"{what}.rounds must be a list of at most {MAP_MAX_ROUNDS:,} "
                              "rounds.")
    for k, item in enumerate(rounds):
        where = f"{what}.rounds[{k}]"
        if not isinstance(item, dict):
            raise ValidationError(f"{where} must be a JSON object.")
        _number(item, "alpha", where)
        _text(item.get("model"), f"{where}.model")
    features = params.get("features")
    if not isinstance(features, list):
        raise ValidationError(f"{what}.features must be a list.")
    for k, item in enumerate(features):
        where = f"{what}.features[{k}]"
        if not isinstance(item, dict):
            raise ValidationError(f"{where} must be a JSON object.")
        _text(item.get("name"), f"{where}.name")
        _text(item.get("kind"), f"{where}.kind")
        if item["kind"] == "nominal" and not (
                isinstance(item.get("categories"), list)
                and all(isinstance(c, str) for c in item["categories"])):
            raise ValidationError(f"{where}.categories must be a list of text.")
    trees = params.get("trees")
    if not isinstance(trees, dict):
        raise ValidationError(f"{what}.trees must be a JSON object.")
    _number(trees, "n_trees", f"{what}.trees")


_CHECKS = {
    "platt": lambda p, w: _check_linear(p, w, ("intercept", "slope")),
    "beta": lambda p, w: _check_linear(p, w, ("c", "a", "b")),
    "isotonic": _check_isotonic,
    "findings": _check_findings,
    "boost": _check_boost,
}


def _finite_everywhere(value: Any, what: str, *, depth: int) -> None:
    """Refuse a non-finite number anywhere (a map built in Python, not read from text)."""
    if depth > MAX_NESTING:
        raise ValidationError(f"{what} nests more than {MAX_NESTING} levels deep.")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError(f"{what} holds {value}, not a finite number.")
    if isinstance(value, dict):
        for item in value.values():
            _finite_everywhere(item, what, depth=depth + 1)
    elif isinstance(value, list):
        for item in value:
            _finite_everywhere(item, what, depth=depth + 1)
