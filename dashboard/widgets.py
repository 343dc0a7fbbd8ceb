"""The widgets every page shares: escaped text, charts, tables, downloads, the view's mode.

Data-derived text goes through :func:`show_error` and the other wrappers (escaped Markdown,
never rendered), every chart through :func:`show_figure` (escaped plotly text), every table
through :func:`show_table` (one number formatter, no cut cell) and every CSV through
:func:`csv_download` (cells neutralised).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import state as s
from dashboard import tables
from dashboard.text import escape_markdown, file_name_of
from mcviz.io import VOID_P_VALUES
from mcviz.present.figures import escape_figure, format_number


def selectbox_state(key: str, options: Sequence[Any], default: Any) -> None:
    """Make ``st.session_state[key]`` one of ``options`` before its selectbox is drawn."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else (
            options[0] if options else None
        )


def presentation() -> bool:
    """Return True in presentation mode (larger fonts and lines, one chart per row)."""
    return bool(st.session_state.get(s.W_PRESENTATION, False))


def bin_counts() -> tuple[int, ...]:
    """Return the (up to three) reliability-diagram bin counts chosen in the sidebar."""
    return s.parse_bin_counts(st.session_state.get(s.W_BINS, s.DEFAULTS[s.W_BINS]))


def chart_slots(count: int) -> list:
    """``count`` side-by-side columns, or stacked containers in presentation mode."""
    if presentation() or count == 1:
        return [st.container() for _ in range(count)]
    return list(st.columns(count))


def show_figure(figure: Any, *, key: str | None = None, on_select: str = "ignore") -> Any:
    """Draw a plotly figure at full container width (the one place pages draw charts).

    Every data-derived string in it is escaped first (:func:`mcviz.present.figures.escape_figure`).
    """
    return st.plotly_chart(
        escape_figure(figure), width="stretch", key=key, on_select=on_select, theme=None,
        config={"displaylogo": False, "toImageButtonOptions": {"format": "svg"}},
    )


def csv_download(label: str, frame: pd.DataFrame, file_name: str, *,
                 key: str | None = None) -> Any:
    """Draw a button downloading ``frame`` as CSV, cells neutralised (``safe_csv``).

    The CSV is written when the button is clicked, not on every rerun of the page (writing the
    1,000 rows of a subpopulation table took longer than drawing the page's charts).
    """
    from functools import partial

    from mcviz.present.report import safe_csv

    return st.download_button(label, partial(safe_csv, frame), file_name=file_name_of(file_name),
                              mime="text/csv", key=key)


def show_table(frame: pd.DataFrame, *, percent: tuple[str, ...] = (),
               help: dict[str, str] | None = None, **options: Any) -> Any:
    """Draw a table: an interactive grid, or a large static table in presentation mode.

    ``help``: hover text per column header (the grid's tooltips).

    Numbers are written by :func:`mcviz.present.figures.format_number` (the one number formatter;
    :func:`dashboard.tables.formatted`) and every column is as wide as its longest text
    (:func:`dashboard.tables.content_widths`): no cell is cut.
    """
    # ``percent``: fractions shown as %; text through display_text (bidi, line separators)
    shown = tables.displayed(tables.formatted(frame, percent=percent))
    if presentation() and not options.get("on_select"):  # st.table renders Markdown: escape
        shown = shown.rename(columns=escape_markdown)
        for column in shown.columns:
            if not pd.api.types.is_numeric_dtype(shown[column]):
                shown[column] = [escape_markdown(v) for v in shown[column]]
        return st.table(shown.set_index(shown.columns[0]) if len(shown.columns) else shown)
    options.setdefault("hide_index", True)
    config = {name: st.column_config.Column(width=width, help=(help or {}).get(name))
              for name, width in tables.content_widths(shown).items()}
    config.update(options.pop("column_config", None) or {})
    return st.dataframe(shown, column_config=config, **options)


def cumulative_metrics(result: Any, *, per_row: int = 5, p_note: str | None = None) -> None:
    """Show the five headline numbers of a cumulative result: D, G, σ, D/σ and p.

    ``per_row`` below 5 wraps them onto rows (half-width columns would cut the numbers).
    ``p_note``: the rows were chosen for being extreme, so the p-value cell says "not tested"
    and why, never the rows' own p-value.
    """
    items = [
        ("Kuiper D", result.kuiper, None, "range of the cumulative differences (eq. 2)"),
        ("KS G", result.ks, None, "largest absolute cumulative difference"),
        ("σ", result.sigma, None, "standard deviation under perfect calibration (eq. 5)"),
        ("D/σ", result.kuiper_z, None, "Kuiper statistic in units of σ"),
        ("p-value", result.p_value, "p", "asymptotic p-value of D/σ (range of Brownian motion)"),
    ]
    for start in range(0, len(items), per_row):
        row = items[start : start + per_row]
        for cell, (name, value, kind, help_text) in zip(st.columns(per_row), row, strict=False):
            if kind == "p" and p_note:  # chosen for being extreme: its own p is no test
                cell.metric(name, "not tested", help=p_note)
            elif kind == "p" and value != value:  # NaN: weights that depend on the labels
                cell.metric(name, "not valid", help=VOID_P_VALUES)
            else:
                cell.metric(name, format_number(value, kind=kind), help=help_text)


# --------------------------------------------------------------------------------------------
# Data-derived text: shown literally (escaped Markdown), never rendered as Markdown


def _escaped(name: str, element: str, doc: str) -> Callable[[object], Any]:
    """Return ``name``: ``st.<element>`` of data-derived text, escaped first."""
    def show(message: object) -> Any:
        return getattr(st, element)(escape_markdown(message))

    show.__name__ = show.__qualname__ = name
    show.__doc__ = doc
    return show


show_error = _escaped("show_error", "error", "``st.error`` of a message or exception, escaped "
                      "(column names, values, file names).")
show_warning = _escaped("show_warning", "warning", "``st.warning`` of data-derived text, escaped.")
show_info = _escaped("show_info", "info", "``st.info`` of data-derived text, escaped.")
show_success = _escaped("show_success", "success", "``st.success`` of data-derived text, escaped.")
caption = _escaped("caption", "caption", "``st.caption`` of data-derived text, escaped.")
show_text = _escaped("show_text", "markdown", "``st.markdown`` of data-derived text, escaped "
                     "(shown exactly as written).")
