"""The Fix page's services: the fix's settings, before/after results of a scope, fixed scores.

Plain Python (no Streamlit): the page calls these through the dashboard's caches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.settings import DecisionSettings, FixSettings
from mcviz.settings import parse_thresholds as read_thresholds

__all__ = ["FULL", "SECTION_HELD", "FixRun", "MethodOption", "ScopeView", "fix_headline",
           "fix_json", "fix_section", "fixed_source", "held_section", "method_options",
           "parse_thresholds", "reviewed_findings", "run_fix", "scope_view", "scores_by_row",
           "summary_table", "term_overlap"]

FULL = "full population"
SECTION_HELD = "fix_section_held"
"""Session-state key: (analysis key, Section) of the last fix judged on the Fix page."""
TWICE_CAVEAT = (
    "The reviewed findings were found and confirmed on all the rows, the held-out rows of this "
    "fix among them: those rows are used twice, so the held-out judgement of this fix is "
    "optimistic (the findings' own held-out evidence is the search's, not this split's).")


@dataclass(frozen=True)
class MethodOption:
    """A recalibration method as the page offers it: its name, title, and why not (or None)."""

    name: str
    title: str
    unavailable: str | None


def method_options(has_covariates: bool) -> tuple[MethodOption, ...]:
    """Return the registered methods (:func:`mcviz.recalibration.methods`) the page lists.

    Methods that need covariates are left out when the data have none; a method that cannot run
    here (a package missing) is listed with the reason, and the page refuses to run it.
    """
    from mcviz.recalibration import methods

    return tuple(MethodOption(m.name, m.title, m.unavailable()) for m in methods()
                 if has_covariates or not m.needs_covariates)


@dataclass(frozen=True)
class FixRun:
    """One fix computation of the page: what :func:`run_fix` is called with (the cache key).

    ``reviewed``: fix exactly these reviewed findings (descriptions) instead of searching.
    """

    method: str = "findings"
    covariates: tuple[str, ...] = ()
    settings: FixSettings = field(default_factory=FixSettings)
    reviewed: tuple[str, ...] = ()

    def options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`run_fix` (JSON-able: they key the cache)."""
        return {"method": self.method, "covariates": list(self.covariates) or None,
                **self.settings.verify_options(), "reviewed": list(self.reviewed)}


def run_fix(pred: Predictions, *, method: str, covariates: Sequence[str] | None,
            holdout: float, seed: int, n_subpopulations: int, reviewed: Sequence[str] = (),
            findings: Sequence[Any] = (), progress: Any = None) -> Any:
    """:func:`mcviz.recalibration.verify_fix` as ``mcviz fix`` calls it with the same options.

    With ``reviewed`` the ``findings`` fix gets one term per reviewed finding (``findings``: the
    reviewed search's :class:`~mcviz.search.Finding` objects) instead of its own searches.
    """
    from mcviz.recalibration import Recalibrator, verify_fix

    recalibrator = None
    if reviewed:
        chosen = [f for f in findings if f.description in set(reviewed)]
        recalibrator = Recalibrator("findings", covariates=covariates, findings=chosen,
                                    seed=seed)
    return verify_fix(pred, method=method, covariates=covariates, holdout=holdout, seed=seed,
                      n_subpopulations=n_subpopulations, recalibrator=recalibrator,
                      progress=progress)


def fix_json(result: Any, decisions: DecisionSettings, seed: int) -> dict:
    """Return the fix's JSON, exactly as ``mcviz fix --json`` prints it for the same options."""
    from mcviz.recalibration import fix_summary

    return fix_summary(result, decisions.thresholds, bootstrap=decisions.bootstrap, seed=seed)


def parse_thresholds(text: str) -> tuple[float, ...]:
    """Return the thresholds typed in the page (the one parser, the command line's).

    >>> parse_thresholds("0.1, 0.3;0.2")
    (0.1, 0.2, 0.3)
    """
    return read_thresholds(str(text))


def reviewed_findings(search: Any) -> tuple[Any, ...]:
    """Return the confirmed findings of the reviewed search (empty: no search reviewed)."""
    if search is None:
        return ()
    return tuple(f for f in search.findings if f.confirmed)


def term_overlap(result: Any, reviewed: Sequence[str]) -> pd.DataFrame:
    """Each term of the fix, the reviewed finding sharing most of its held-out rows, and how much.

    The overlap is the Jaccard index of the held-out rows (shared / either), 0 to 1.
    """
    from mcviz.subpopulations import filter_subpopulation

    pred = result.eval_before
    rows = {d: filter_subpopulation(pred, d).index for d in reviewed}
    table = []
    for term in result.terms:
        own = filter_subpopulation(pred, term).index
        best, share = "", 0.0
        for description, other in rows.items():
            union = np.union1d(own, other).size
            jaccard = np.intersect1d(own, other).size / union if union else 0.0
            if jaccard > share:
                best, share = description, jaccard
        table.append({"term of the fix": term, "closest reviewed finding": best or "none",
                      "overlap (Jaccard, held-out rows)": share})
    return pd.DataFrame(table, columns=["term of the fix", "closest reviewed finding",
                                        "overlap (Jaccard, held-out rows)"])


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
    """Each judged finding's held-out D/σ before and after, and whether it was confirmed.

    The numbers first, the finding's (long) filter last: a column as wide as its text put
    the before/after columns out of sight (#40).
    """
    return pd.DataFrame({
        "held-out D/σ before": list(result.before.findings_kuiper_z),
        "held-out D/σ after": list(result.after.findings_kuiper_z),
        "confirmed (fit rows)": ["yes" if c else "no" for c in result.confirmed],
        "finding": list(result.findings),
    })


def terms_table(result: Any) -> pd.DataFrame:
    """Each term of the fix: what it does, its held-out D/σ before and after, its log loss."""
    changes = dict(result.finding_changes)
    words = {t.description: t for t in result.recalibrator.terms}
    return pd.DataFrame({  # the numbers first, the long filter last (findings_table)
        "held-out D/σ before": list(result.before.terms_kuiper_z),
        "held-out D/σ after": list(result.after.terms_kuiper_z),
        "held-out log loss within": [changes[d].direction for d in result.terms],
        "shape": [words[d].shape for d in result.terms],
        "term (finding)": list(result.terms),
    })


def bands_table(result: Any) -> pd.DataFrame:
    """Return the bands the fix made miscalibrated beyond noise (held-out z before and after)."""
    moved = result.bands_moved
    return pd.DataFrame({"band": [b.band for b in moved], "rows": [b.rows for b in moved],
                         "z before": [b.z_before for b in moved],
                         "z after": [b.z_after for b in moved]})


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
                 n_bootstrap: int = DecisionSettings.bootstrap) -> Any:
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
    :class:`~mcviz.decision.DecisionImpact`). Its facts say "better", "worse" or "no meaningful
    change" after the held-out log loss (by its interval), and "not valid (why)" for a statistic
    without a value. Its slide draws the held-out rows' cumulative differences before and after
    the fix.
    """
    from mcviz.present.figures import format_number
    from mcviz.present.verdict import Section, stated

    sentences = [fix_headline(result), f"In numbers: {result.verdict}.",
                 f"Fitted on {result.n_fit:,} rows, judged on {result.n_eval:,} held-out rows; "
                 f"map: {result.recalibrator.describe()}."]
    sentences += [s[0].upper() + s[1:] + "." for s in impact.sentences(thresholds[:4])]
    noise = f" ({result.log_loss_change.direction})"
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

    Ship only a fix that is recommended (nothing got worse beyond noise) and that improved
    something beyond noise: the held-out log loss (``meaningful``), or a confirmed finding's
    own held-out rows (``finding_changes``). A fix whose every change is within noise is not
    worth shipping yet (#40: the walk showed "Ship the findings fix" for a fix that moved
    nothing); a rejected one never.
    """
    recommended = getattr(result, "recommended", None)  # the fix's rule: nothing got worse
    accepted = result.accepted if recommended is None else bool(recommended)
    repaired = [d for d, c in getattr(result, "finding_changes", ()) if c.direction == "better"]
    if accepted and (result.meaningful or repaired):
        helped = (f"; it predicts better on the held-out rows of {len(repaired)} confirmed "
                  f"finding{'s' if len(repaired) != 1 else ''}" if repaired else "")
        return (f"Ship the {result.method} fix: on {result.n_eval:,} held-out rows it "
                f"{_fix_words(result)}{helped}; download its map and apply it.")
    if accepted:
        return (f"Don't ship the {result.method} fix yet: on {result.n_eval:,} held-out rows it "
                f"{_fix_words(result)}, and no confirmed finding improved beyond noise; collect "
                "more rows or try another method.")
    return (f"Don't ship the {result.method} fix: it made the held-out predictions worse; "
            "keep the model as it is or try another method.")


def fix_headline(result: Any) -> str:
    """The fix's judgement in words, for the Fix page's headline and the Review verdict (#40).

    ``result.verdict`` (held-out M and log loss in numbers, as ``mcviz fix --json`` says) is
    the details line under it.
    """
    head = "Recommended" if result.recommended else "Not recommended"
    return f"{head}: the {result.method} fix {_fix_words(result)}."


def _fix_words(result: Any) -> str:
    """What the fix did on the held-out rows, in words: no M, no log-loss number (#40).

    The numbers (held-out M and log loss before and after, the change's interval) are the fix
    section's facts, shown beside it.
    """
    from mcviz.present.figures import format_percent

    m = float(result.metric_reduction)
    worst = (f"removes {format_percent(m)} of the worst subpopulation's miscalibration"
             if m >= 0 else
             f"adds {format_percent(-m)} to the worst subpopulation's miscalibration")
    quality = {"better": "its probabilities score better (lower log loss, beyond noise)",
               "worse": "its probabilities score worse (higher log loss, beyond noise)"}.get(
        result.log_loss_change.direction,
        "its probabilities score neither better nor worse beyond noise (log loss)")
    return f"{worst}, and {quality}"


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
