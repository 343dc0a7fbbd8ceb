"""What the Screening page shows for each kind of engine table (plain Python, no Streamlit).

``mcviz screen --out`` writes every screened subpopulation, ``mcviz search --engine ... --out``
the findings with their held-out numbers, ``mcviz monitor --engine ... --out`` each monitored
series (:data:`mcviz.engines.results.KIND_COLUMNS`). :func:`table_view` turns one into the
page's headline, its table (words and units first), the rows offered for the drill-down (the
worst first) and the sentence that says how the drilled rows' own p-value may be read.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mcviz.engines.results import ScreenTable
from mcviz.text import format_interval, format_number, format_points, p_phrase

__all__ = ["TableView", "table_view"]


@dataclass(frozen=True, slots=True, eq=False)
class TableView:
    """The Screening page's view of one table.

    Attributes
    ----------
    metrics : tuple of (label, value, help)
    headline : str
        Markdown: what the table says, in words.
    shown : DataFrame
        The table as displayed (at most 50 rows).
    rows : tuple of int
        Rows of ``screen.table`` offered for the drill-down, the default first.
    p_note : str
        How the drilled rows' own p-value may be read (it is no test of a picked group).
    """

    metrics: tuple[tuple[str, str, str | None], ...]
    headline: str
    shown: pd.DataFrame
    rows: tuple[int, ...]
    p_note: str


def table_view(screen: ScreenTable) -> TableView:
    """Return the page's view of ``screen`` (any kind)."""
    return {"screen": _screen_view, "search": _search_view,
            "monitor": _monitor_view}[screen.kind](screen)


def _screen_view(screen: ScreenTable) -> TableView:
    table = screen.table
    count = len(table) - 1
    argmax = table.iloc[screen.argmax]
    top = table.sort_values("normalized", ascending=False).head(50)
    return TableView(
        metrics=(("M", format_number(screen.metric),
                  "max over subpopulations of Dₖ σ₀ / σₖ (eq. (4))"),
                 ("Mode", "exact" if screen.exact else "histogram",
                  None if screen.exact else f"M may be up to {screen.metric_bound:.3g} higher"),
                 ("Rows screened", f"{screen.n:,}", None),
                 ("Subpopulations", f"{count:,}", None)),
        headline=(f"Worst subpopulation (argmax, #{argmax['id']}): "
                  f"**{_md(argmax['description'])}** — {argmax['size']:,} rows. "
                  f"Largest of {count:,}: not yet tested against chance."),
        shown=top[["id", "description", "size", "kuiper", "sigma", "kuiper_z", "normalized"]],
        rows=(screen.argmax, *(int(r) for r in top.index if r != screen.argmax)),
        p_note=(f"chosen from {count:,} screened subpopulations for its value: not yet tested "
                "against chance (a screen computes no null distribution, and the rows' own "
                "p-value is no test of a group picked for being extreme)"),
    )


def _search_view(screen: ScreenTable) -> TableView:
    table = screen.table
    findings = table.iloc[1:]
    confirmed = int(findings["confirmed"].fillna(False).astype(bool).sum()) if (
        "confirmed" in findings) else 0
    shown = pd.DataFrame({
        "rank": findings["id"],
        "group": findings["sentence"] if "sentence" in findings else findings["description"],
        "rows": findings["size"],
        "observed − predicted (held out)": [format_points(v, signed=True, unit="points")
                                            for v in findings["mean_residual"]],
        "95% interval (points)": [format_interval(100 * a, 100 * b) for a, b in
                                  zip(findings["ci_low"], findings["ci_high"], strict=True)],
        "adjusted p (held out)": [p_phrase(p) for p in findings["p_adjusted"]],
        "D/σ (held out)": findings["holdout_kuiper_z"],
        "filter": findings["description"],
    })
    if findings.empty:
        headline = (f"The search found no subpopulation to report among {screen.n:,} rows: "
                    "drill into the full population below.")
    else:
        best = findings.iloc[0]
        headline = (f"{len(findings):,} finding{'s' if len(findings) != 1 else ''}, "
                    f"{confirmed:,} confirmed on the rows the search "
                    f"never saw (Holm-adjusted). First: **{_md(best['description'])}** — "
                    f"{int(best['size']):,} rows, held-out adjusted {p_phrase(best['p_adjusted'])}.")
    return TableView(
        metrics=(("Rows", f"{screen.n:,}", None), ("Findings", f"{len(findings):,}", None),
                 ("Confirmed", f"{confirmed:,}",
                  "held-out p below 0.05 after Holm's adjustment over the findings"),
                 ("Engine", screen.engine, None)),
        headline=headline, shown=shown.head(50),
        rows=(*range(1, min(len(table), 51)), 0),
        p_note=("a finding of the search: these rows include those it searched, so their own "
                "p-value is no test; the test is the held-out adjusted p in the table"),
    )


def _monitor_view(screen: ScreenTable) -> TableView:
    table = screen.table
    # alarmed segments first (the full population, row 0, after them: a segment says where)
    alarmed = sorted(table.index[table["alarm"].astype(bool)], key=lambda i: (i == 0, i))
    shown = pd.DataFrame({
        "series": table["sentence"] if "sentence" in table else table["description"],
        "rows": table["size"],
        "alarm": ["yes" if a else "no" for a in table["alarm"]],
        "first alarm": table.get("first_alarm", pd.Series([None] * len(table))),
        "change from": table.get("change_start", pd.Series([None] * len(table))),
        "change to": table.get("change_end", pd.Series([None] * len(table))),
        "shift": [format_points(v, signed=True, unit="points") for v in table["shift"]],
        "adjusted p": [p_phrase(p) for p in table["p_adjusted"]],
        "filter": table["description"],
    })
    order = [*alarmed, *(i for i in table.index if i not in alarmed)]
    first = table.loc[alarmed[0]] if len(alarmed) else None
    headline = (f"{len(alarmed):,} of {len(table):,} series raised an alarm"
                + (f"; first: **{_md(first['description'])}**." if first is not None else "."))
    return TableView(
        metrics=(("Rows", f"{screen.n:,}", None), ("Series", f"{len(table):,}", None),
                 ("Alarms", f"{len(alarmed):,}",
                  "alarms are controlled over the whole horizon and every series"),
                 ("Engine", screen.engine, None)),
        headline=headline, shown=shown.head(50), rows=tuple(int(i) for i in order[:50]),
        p_note=("a monitored series over every period: its own p-value is no test of a change "
                "over time; the alarm's test is the adjusted p in the table"),
    )


def _md(text: object) -> str:
    from dashboard.text import escape_markdown

    return escape_markdown(str(text))
