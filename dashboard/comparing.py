"""The Compare page's services: which columns can be B, the comparison, its words and tables.

Plain Python (no Streamlit): the page calls these through the dashboard's caches. Every number
shown is read from :class:`mcviz.compare.ModelComparison`; nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dashboard import state as s
from mcviz.compare.words import points, relative, signed
from mcviz.text import format_p, p_phrase
from mcviz.errors import ValidationError
from mcviz.settings import CompareSettings, parse_thresholds
from mcviz.text import display_text

__all__ = ["CHALLENGER", "MARKS", "CompareRequest", "Line", "challenger_scores", "command_line",
           "deck_key", "deck_slides", "groups_table", "net_benefit_table", "request_from_state",
           "review_b_column", "review_state", "run_comparison", "score_b_options",
           "summary_table", "verdict_lines", "widget_values"]

GAP_NOTE = ("gap: observed − predicted on the group's held-out rows, in percentage points "
            "(negative: the model over-predicts there). Brier B − A > 0: B's loss is higher.")
MARKS = {"good": ":green[●]", "bad": ":red[●]", "neutral": ":gray[○]"}
"""Markdown mark of a verdict line's kind (colour dots: headless browsers lack emoji fonts)."""
CHALLENGER = "challenger_upload"
"""Session-state key: the challenger's uploaded file ``{"name", "digest", "frame"}``."""


@dataclass(frozen=True)
class CompareRequest:
    """One comparison: B's column and the settings (JSON-able options key the cache)."""

    score_b: str
    thresholds: tuple[float, ...]
    settings: CompareSettings

    def options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`run_comparison` besides the arrays."""
        return {"name_b": self.score_b, "thresholds": list(self.thresholds),
                "n_findings": self.settings.n_findings, "holdout": self.settings.holdout,
                "seed": self.settings.seed}


def request_from_state(state: Mapping[str, Any], score_b: str) -> CompareRequest:
    """Read the page's settings (widget values or a link's text); raises ValidationError."""
    settings = CompareSettings.from_mapping({
        "n_findings": state.get(s.W_CMP_FINDINGS, CompareSettings.n_findings),
        "holdout": state.get(s.W_CMP_HOLDOUT, CompareSettings.holdout),
        "seed": state.get(s.W_CMP_SEED, CompareSettings.seed)})
    thresholds = parse_thresholds(str(state.get(s.W_CMP_THRESHOLDS) or s.DEFAULTS[
        s.W_CMP_THRESHOLDS]), name="Decision thresholds")
    return CompareRequest(score_b=score_b, thresholds=thresholds, settings=settings)


_WIDGETS = ((s.W_CMP_FINDINGS, "n_findings"), (s.W_CMP_HOLDOUT, "holdout"),
            (s.W_CMP_SEED, "seed"))


def widget_values(state: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Typed values of the page's number widgets, from widgets or a link's text.

    A value a link gave as text is read by :meth:`mcviz.settings.Setting.parse`; one that is
    malformed or out of bounds falls back to the default and is named in the messages.

    >>> widget_values({s.W_CMP_FINDINGS: "4", s.W_CMP_HOLDOUT: "7"})[0][s.W_CMP_HOLDOUT]
    0.3
    """
    values, messages = {}, []
    for key, name in _WIDGETS:
        spec = CompareSettings.setting(name)
        value = state.get(key, spec.default)
        if isinstance(value, str):
            value, message = spec.parse(value)
            if message:
                messages.append(message)
        try:
            values[key] = spec.check(value)
        except ValidationError:
            values[key] = spec.default
    return values, messages


def score_b_options(frame: pd.DataFrame, used: tuple[str | None, ...]) -> list[str]:
    """Columns that can hold B's scores: numeric, every value in [0, 1], not already used.

    >>> frame = pd.DataFrame({"p": [0.1, 0.9], "q": [0.2, 0.4], "age": [30, 40]})
    >>> score_b_options(frame, ("p", "y"))
    ['q']
    """
    options = []
    for column in frame.columns:
        if column in used or not pd.api.types.is_numeric_dtype(frame[column]):
            continue
        if pd.api.types.is_bool_dtype(frame[column]):
            continue
        values = frame[column].to_numpy(dtype=float)
        probabilities = (values.size and np.all(np.isfinite(values)) and values.min() >= 0
                         and values.max() <= 1)
        if probabilities and not np.all((values == 0) | (values == 1)):  # not a 0/1 label
            options.append(str(column))
    return options


def run_comparison(pred: Any, scores_b: np.ndarray, **options: Any) -> Any:
    """Return :func:`mcviz.compare_models` of ``pred`` and B's scores (input row order)."""
    from mcviz.compare import compare_models

    return compare_models(pred, np.asarray(scores_b, dtype=float), **options)


@dataclass(frozen=True)
class Line:
    """A sentence of the verdict, its kind (``"good"``, ``"bad"``, ``"neutral"``) and a tooltip."""

    text: str
    kind: str
    help: str


def verdict_lines(result: Any) -> list[Line]:
    """Return the verdict in plain words, statistics in each line's tooltip."""
    b = result.brier
    kind = "good" if b.ci_high < 0 else ("bad" if b.ci_low > 0 else "neutral")
    if kind == "good":
        text = f"B predicts better than A overall: its Brier score is {relative(b.relative)} lower."
    elif kind == "bad":
        text = f"B predicts worse than A overall: its Brier score is {relative(b.relative)} higher."
    else:
        text = "Overall, A and B predict equally well: the difference is within chance."
    lines = [Line(text, kind, f"Brier B {b.b:.4f}, A {b.a:.4f}; B − A {signed(b.difference)} "
                              f"(95% CI {signed(b.ci_low)} to {signed(b.ci_high)}, paired); log "
                              f"loss B − A {signed(result.log_loss.difference)}.")]
    ca, cb = result.calibration_a, result.calibration_b
    lines.append(Line(
        f"Largest cumulative calibration gap: A {ca.kuiper * 100:.1f} percentage points, "
        f"B {cb.kuiper * 100:.1f} percentage points.",
        "neutral", f"A: D/σ {ca.kuiper_z:.2f}, {p_phrase(ca.p_value)}; B: D/σ "
                   f"{cb.kuiper_z:.2f}, {p_phrase(cb.p_value)} (Kuiper, paper 000 eqs. 2, 5)."))
    for name, found, bad in (("worse", result.regressions, True),
                             ("better", result.improvements, False)):
        confirmed = [f for f in found if f.confirmed]
        if not confirmed:
            lines.append(Line(f"No group where B is {name} than A was confirmed on held-out rows.",
                              "neutral", "Guided search on the paired Brier difference; "
                                         "Holm-adjusted held-out p-values."))
        for f in confirmed:
            lines.append(Line(
                f"B is {name} for {f.group or f.description} ({f.share:.1%} of rows): there A's "
                f"observed − predicted is {points(f.calibration_a)}, B's "
                f"{points(f.calibration_b)}.", "bad" if bad else "good",
                f"Held-out Brier B − A {f.effect:+.4f} (95% CI {f.ci_low:+.4f} to "
                f"{f.ci_high:+.4f}); adjusted {p_phrase(f.p_adjusted)}; "
                f"{f.holdout_size:,} held-out rows."))
    net = result.net_benefit
    for k, t in enumerate(net.thresholds):
        gain = float(net.difference[k]) * 1000
        low, high = float(net.ci_low[k]) * 1000, float(net.ci_high[k]) * 1000
        if net.changed[k] == 0:
            text, kind = f"At a threshold of {t:g}, switching changes no decision.", "neutral"
        elif low > 0 or high < 0:
            verb = "gains" if gain > 0 else "loses"
            text = (f"At a threshold of {t:g}, switching to B {verb} {abs(gain):.1f} net true "
                    "positives per 1,000 decisions.")
            kind = "good" if gain > 0 else "bad"
        else:
            text = (f"At a threshold of {t:g}, switching to B changes the net benefit within "
                    "chance.")
            kind = "neutral"
        lines.append(Line(text, kind, f"B − A {gain:+.1f} per 1,000 decisions (95% CI "
                                      f"{low:+.1f} to {high:+.1f}); {net.changed[k]:.1%} of "
                                      "decisions change."))
    return lines


def summary_table(result: Any) -> pd.DataFrame:
    """Return A and B side by side, with B − A and its paired interval where there is one."""
    b, lg, ca, cb = result.brier, result.log_loss, result.calibration_a, result.calibration_b
    rows = [
        ("Brier score", b.a, b.b, b.difference, f"{signed(b.ci_low)} to {signed(b.ci_high)}"),
        ("Log loss", lg.a, lg.b, lg.difference, f"{signed(lg.ci_low)} to {signed(lg.ci_high)}"),
        ("Calibration gap D (percentage points)", ca.kuiper * 100, cb.kuiper * 100,
         (cb.kuiper - ca.kuiper) * 100, ""),
        ("Calibration D/σ", ca.kuiper_z, cb.kuiper_z, np.nan, ""),
        ("ECE (equal width)", result.classical_a.metrics.ece_equal_width,
         result.classical_b.metrics.ece_equal_width, np.nan, ""),
    ]
    return pd.DataFrame(rows, columns=["statistic", "A", "B", "B − A", "95% CI (paired)"])


def groups_table(found: tuple) -> pd.DataFrame:
    """Return regressions or improvements: one row per group, in plain units.

    gap: held-out observed − predicted in percentage points under each model (:data:`GAP_NOTE`).
    """
    return pd.DataFrame([{
        "group": f.description, "share": f.share,
        "Brier B − A, held-out (95% CI)": f"{f.effect:+.4f} ({f.ci_low:+.4f} to {f.ci_high:+.4f})",
        "A: gap (points)": f.calibration_a * 100, "B: gap (points)": f.calibration_b * 100,
        "adjusted p": format_p(f.p_adjusted),
        "confirmed": "yes" if f.confirmed else "no",
    } for f in found], columns=["group", "share", "Brier B − A, held-out (95% CI)",
                                "A: gap (points)", "B: gap (points)", "adjusted p",
                                "confirmed"])


def net_benefit_table(result: Any) -> pd.DataFrame:
    """Net benefit per 1,000 decisions of A and B at each threshold, and B − A."""
    net = result.net_benefit
    return pd.DataFrame({
        "threshold": net.thresholds, "A per 1,000": net.a * 1000, "B per 1,000": net.b * 1000,
        "B − A per 1,000": net.difference * 1000,
        "95% CI (paired)": [f"{lo * 1000:+.1f} to {hi * 1000:+.1f}"
                            for lo, hi in zip(net.ci_low, net.ci_high, strict=True)],
        "decisions changed": net.changed,
    })


def deck_slides(result: Any, source: str) -> list:
    """Return the comparison's slides (:func:`mcviz.present.comparison.comparison_slides`)."""
    from datetime import UTC, datetime

    from mcviz.present.comparison import comparison_slides, deck_info

    return comparison_slides(result, deck_info(source, result,
                                               datetime.now(UTC).strftime("%Y-%m-%d")))


def deck_key(request: CompareRequest, source: str) -> str:
    """Return a short key of one comparison (B, its source, the settings) for its deck's widgets.

    >>> deck_key(CompareRequest("q", (0.2,), CompareSettings()), "") == deck_key(
    ...     CompareRequest("q", (0.2,), CompareSettings()), "")
    True
    """
    import hashlib

    text = repr((request.score_b, request.thresholds, request.settings, source))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def review_state(finding: Any, score_b: str | None = None) -> dict[str, Any]:
    """Session-state entries that open the Review page on a group's rows, with B beside A.

    ``score_b``: B's score column when it is a column of the data (a challenger's joined
    file is not: Review then shows A alone).

    >>> review_state(type("F", (), {"description": "age ≥ 65"})(), "q")[s.W_REVIEW_B]
    'q'
    """
    return {s.W_SCOPE: "filter", s.W_FILTER: finding.description, s.W_REVIEW_B: score_b or ""}


def review_b_column(state: Mapping[str, Any], columns: Any, score: str) -> tuple[str | None,
                                                                                   str | None]:
    """Return the second model Review shows beside A (or None), and why not when it cannot.

    A link is user text: a name that is no column of the data is refused with a message.

    >>> review_b_column({s.W_REVIEW_B: "q"}, ["p", "q"], "p")
    ('q', None)
    >>> review_b_column({s.W_REVIEW_B: "z"}, ["p", "q"], "p")[1]
    "Model B 'z' is not a column of this data: Review shows A only."
    """
    name = state.get(s.W_REVIEW_B) or ""
    if not name or name == score:
        return None, None
    if name not in {str(c) for c in columns}:
        shown = display_text(str(name)[:60])
        return None, f"Model B '{shown}' is not a column of this data: Review shows A only."
    return str(name), None


def challenger_scores(frame: pd.DataFrame, upload: pd.DataFrame, *, id_column: str,
                      score_b: str) -> tuple[pd.DataFrame, Any]:
    """Join the challenger's upload to the current frame on ``id_column`` (see join_challenger).

    Raises
    ------
    ValidationError
        Missing columns, repeated ids, or no id in common.
    """
    from mcviz.compare import join_challenger

    if id_column not in frame.columns:
        raise ValidationError(f"id column {id_column!r} is not in the current data.")
    return join_challenger(frame, upload, id_column=id_column, score_b=score_b)


def command_line(mapping: Any, request: CompareRequest, *, file: str = "FILE") -> str:
    """Return the ``mcviz compare`` command that gives the same numbers.

    >>> from dashboard.state import ColumnMapping
    >>> request = CompareRequest("q", (0.2,), CompareSettings())
    >>> command_line(ColumnMapping(score="p", label="y"), request)
    'mcviz compare FILE --score p --label y --score-b q --thresholds 0.2 --json'
    """
    import shlex

    from mcviz.settings import format_thresholds

    parts = ["mcviz", "compare", file, "--score", str(mapping.score), "--label",
             str(mapping.label), "--score-b", request.score_b, "--thresholds",
             format_thresholds(request.thresholds)]
    for name, spec in ((n, CompareSettings.setting(n)) for n in ("n_findings", "holdout", "seed")):
        value = getattr(request.settings, name)
        if value != spec.default:
            parts += [spec.flag, str(value)]
    return " ".join(shlex.quote(p) if p != file else p for p in parts) + " --json"
