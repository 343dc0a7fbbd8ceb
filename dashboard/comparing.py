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
from mcviz.compare.words import signed, verdict_parts
from mcviz.errors import ValidationError
from mcviz.settings import CompareSettings, parse_thresholds
from mcviz.text import display_text, format_fixed, format_p

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
    """Return the verdict in plain words, statistics in each line's tooltip.

    The words are the comparison's own verdict (``result.verdict``: the report, the JSON and
    the deck say the same sentences, #40); the tooltip says the statistics behind each.
    """
    fields = {name: getattr(result, name) for name in (
        "brier", "log_loss", "calibration_a", "calibration_b", "paths", "regressions",
        "improvements", "net_benefit")}
    return [Line(text, kind, details) for text, kind, details in verdict_parts(**fields)]


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

    gap: held-out observed − predicted in percentage points under each model (:data:`GAP_NOTE`);
    each header's help is :data:`GROUP_HELP`.
    """
    return pd.DataFrame([{  # the group in words (its filter is on the button to Review)
        "group": f.group or f.description, "share": f.share,
        "loss B − A (95% CI)": f"{signed(f.effect)} ({signed(f.ci_low)} to {signed(f.ci_high)})",
        "A: gap": f.calibration_a * 100, "B: gap": f.calibration_b * 100,
        "adjusted p": f"{format_p(f.p_adjusted)}, {'confirmed' if f.confirmed else 'a lead'}",
    } for f in found], columns=["group", "share", "loss B − A (95% CI)", "A: gap", "B: gap",
                                "adjusted p"])


GROUP_HELP = {
    "group": "The group in words; its exact filter opens in Review (the buttons below).",
    "share": "The group's share of all rows.",
    "loss B − A (95% CI)": "Held-out Brier loss of B minus A's, per row, with its 95% interval: "
                           "above 0, B's loss is higher there.",
    "A: gap": "A's observed − predicted on the group's held-out rows, in percentage points "
              "(negative: A over-predicts there).",
    "B: gap": "B's observed − predicted on the group's held-out rows, in percentage points.",
    "adjusted p": "Holm-adjusted held-out p-value; confirmed when below 0.05 and the interval "
                  "excludes 0, else a lead.",
}
"""Hover help of :func:`groups_table`'s headers (the narrow headers keep the table on the page,
#40: it ran 1,108 px wide in a 978-px column)."""


def net_benefit_table(result: Any) -> pd.DataFrame:
    """Net benefit per 1,000 decisions of A and B at each threshold, and B − A."""
    net = result.net_benefit
    return pd.DataFrame({
        "threshold": net.thresholds, "A per 1,000": net.a * 1000, "B per 1,000": net.b * 1000,
        "B − A per 1,000": net.difference * 1000,
        "95% CI (paired)": [f"{format_fixed(lo * 1000, signed=True)} to "
                            f"{format_fixed(hi * 1000, signed=True)}"
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
