"""The Fix page's services: the fix's settings, before/after results of a scope, fixed scores.

Plain Python (no Streamlit): the page calls these through the dashboard's caches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io import Predictions

__all__ = ["FULL", "SECTION_HELD", "FixSettings", "ScopeView", "fix_section", "fixed_source",
           "held_section", "parse_thresholds", "scope_view", "scores_by_row", "summary_table"]

FULL = "full population"
SECTION_HELD = "fix_section_held"
"""Session-state key: (analysis key, Section) of the last fix judged on the Fix page."""
METHOD_TITLES = {
    "findings": "findings: logit s plus one term per confirmed finding",
    "platt": "Platt: logistic on logit s",
    "beta": "beta calibration (Kull et al.)",
    "isotonic": "isotonic regression",
    "boost": "multicalibration boosting (MCGrad's scheme, LightGBM)",
}


@dataclass(frozen=True)
class FixSettings:
    """One fix computation: what :func:`mcviz.recalibration.verify_fix` is called with."""

    method: str = "findings"
    holdout: float = 0.5
    seed: int = 0
    covariates: tuple[str, ...] = ()

    def options(self) -> dict[str, Any]:
        """Keyword arguments of ``verify_fix`` (JSON-able: they key the cache)."""
        return {"method": self.method, "holdout": self.holdout, "seed": self.seed,
                "covariates": list(self.covariates) or None, "n_subpopulations": 300}


def parse_thresholds(text: str) -> tuple[float, ...]:
    """Return the thresholds typed in the page (raises ValidationError naming the bad ones).

    The one reader of thresholds, :func:`mcviz.settings.parse_thresholds`.

    >>> parse_thresholds("0.1, 0.3;0.2")
    (0.1, 0.2, 0.3)
    """
    from mcviz.settings import parse_thresholds as read_thresholds

    return read_thresholds(str(text))


def summary_table(result: Any) -> pd.DataFrame:
    """Held-out statistics before and after the fix, one row per statistic."""
    names = [("M (multi-calibration metric)", "metric"), ("M/σ₀", "metric_z"),
             ("ECE (10 bins)", "ece"), ("smECE", "smece"), ("log loss", "log_loss"),
             ("Brier score", "brier")]
    return pd.DataFrame({
        "held-out statistic": [n for n, _ in names],
        "before": [float(getattr(result.before, k)) for _, k in names],
        "after": [float(getattr(result.after, k)) for _, k in names],
    })


def findings_table(result: Any) -> pd.DataFrame:
    """Each finding's held-out D/σ before and after, and whether it was confirmed."""
    return pd.DataFrame({
        "finding": list(result.findings),
        "confirmed on the fit rows": ["yes" if c else "no" for c in result.confirmed],
        "held-out D/σ before": list(result.before.findings_kuiper_z),
        "held-out D/σ after": list(result.after.findings_kuiper_z),
    })


@dataclass(frozen=True)
class ScopeView:
    """A scope's held-out rows before and after the fix, and the fixed scores of those rows."""

    description: str
    before: Predictions
    after: Predictions
    index: np.ndarray | None  # positions in result.eval_before (None: every held-out row)


def scope_view(result: Any, description: str) -> ScopeView:
    """Return the held-out rows of ``description`` (a finding, or the full population)."""
    from mcviz.recalibration import subset
    from mcviz.subpopulations import filter_subpopulation

    if description == FULL:
        return ScopeView(FULL, result.eval_before, result.eval_after, None)
    index = filter_subpopulation(result.eval_before, description).index
    moved = np.sort(result.eval_position[index])
    return ScopeView(description, subset(result.eval_before, index),
                     subset(result.eval_after, moved), np.asarray(index))


def scope_impact(result: Any, view: ScopeView, thresholds: Sequence[float] = (), *,
                 n_bootstrap: int = 500) -> Any:
    """Decision impact of the fix on the scope's held-out rows (the curve's and ``thresholds``)."""
    from mcviz.decision import CURVE_THRESHOLDS, decision_impact

    fixed = result.eval_after.score[result.eval_position]
    return decision_impact(result.eval_before, fixed, index=view.index, scope=view.description,
                           thresholds=np.union1d(CURVE_THRESHOLDS, thresholds),
                           n_bootstrap=n_bootstrap)


def scores_by_row(pred: Predictions, recalibrator: Any, n_rows: int) -> np.ndarray:
    """Return the fixed score of every row of the input frame (NaN for rows the loader dropped)."""
    scores = np.full(n_rows, np.nan)
    scores[pred.row] = recalibrator.transform(pred)
    return scores


def fixed_column(score_column: str) -> str:
    """Name of the added column of fixed scores."""
    return f"{score_column}_recalibrated"


def fixed_source(source: Mapping[str, Any], frame: pd.DataFrame, pred: Predictions,
                 recalibrator: Any) -> tuple[dict[str, Any], pd.DataFrame, str]:
    """Return a new data source: the frame plus a column of fixed scores (a second score column).

    Returns the source (an "upload" whose digest hashes the original source and the map), the
    frame and the new column's name.
    """
    column = fixed_column(pred.score_column)
    if column in frame.columns:
        raise ValidationError(f"column {column!r} is already in the data.", column=column)
    text = recalibrator.to_json()
    digest = hashlib.sha256(f"{source.get('digest') or source['name']}|{text}".encode())
    extended = frame.copy()
    extended[column] = scores_by_row(pred, recalibrator, len(frame))
    new_source = {"kind": "upload", "name": f"{source['name']} + {recalibrator.method} fix",
                  "digest": digest.hexdigest()}
    return new_source, extended, column


def scope_options(result: Any) -> Sequence[str]:
    """Return the scopes the page offers: the full population, then each finding judged."""
    return [FULL, *result.findings]


def fix_section(result: Any, impact: Any, thresholds: Sequence[float]) -> Any:
    """Return the fix as a :class:`mcviz.present.verdict.Section` (Review page, report, deck).

    Its sentences: the verdict line, the rows and the map, then what miscalibration costs at
    each threshold (the first four) on the held-out rows (``impact``: the full population's
    :class:`~mcviz.decision.DecisionImpact`). Its facts say "within noise" when the held-out
    log loss did not move beyond its interval, and "not valid (why)" for a statistic without a
    value. Its slide draws the held-out rows' cumulative differences before and after the fix.
    """
    from mcviz.present.figures import format_number
    from mcviz.present.verdict import Section, stated

    sentences = [result.verdict[0].upper() + result.verdict[1:] + ".",
                 f"Fitted on {result.n_fit:,} rows, judged on {result.n_eval:,} held-out rows; "
                 f"map: {result.recalibrator.describe()}."]
    sentences += [s[0].upper() + s[1:] + "." for s in impact.sentences(thresholds[:4])]
    noise = "" if result.meaningful else " (within noise)"
    facts = (
        ("held-out M", stated(f"{format_number(result.before.metric)} → "
                              f"{format_number(result.after.metric)}",
                              "not computable on the held-out rows")),
        ("held-out log loss", stated(f"{format_number(result.before.log_loss)} → "
                                     f"{format_number(result.after.log_loss)}{noise}",
                                     "not computable on the held-out rows")),
    )
    return Section(f"Fix ({result.method})", tuple(sentences), facts,
                   draw=lambda: before_after_figures(result), next_step=fix_next_step(result))


def fix_next_step(result: Any) -> str:
    """Say ship or don't ship, from the fix's judgement on held-out rows (one sentence).

    Ship only when the held-out log loss improved beyond its 95% interval (``meaningful``);
    a fix whose change is within noise is not worth shipping yet; a rejected one never.
    """
    recommended = getattr(result, "recommended", None)  # a stricter rule, when the fix has one
    ship = result.accepted and result.meaningful if recommended is None else bool(recommended)
    if ship:
        return (f"Ship the {result.method} fix: on {result.n_eval:,} held-out rows it "
                f"{result.verdict.split(' fix ', 1)[-1]}; download its map and apply it.")
    if result.accepted:
        return (f"Don't ship the {result.method} fix yet: on {result.n_eval:,} held-out rows its "
                "effect is within noise; collect more rows or try another method.")
    return (f"Don't ship the {result.method} fix: it made the held-out predictions worse; "
            "keep the model as it is or try another method.")


def before_after_figures(result: Any) -> tuple:
    """Draw the held-out rows' cumulative differences before and after the fix (for a slide)."""
    from mcviz.present.figures import cumulative_figure
    from mcviz.stats.cumulative import cumulative_differences

    return tuple(cumulative_figure(cumulative_differences(side), presentation=True,
                                   title=f"{name} the fix (held-out rows)")
                 for name, side in (("Before", result.eval_before), ("After", result.eval_after)))


def held_section(state: Mapping[str, Any], analysis_key: str) -> Any:
    """Return the Section of the fix judged for this analysis, or None."""
    held = state.get(SECTION_HELD)
    return held[1] if held is not None and held[0] == analysis_key else None
