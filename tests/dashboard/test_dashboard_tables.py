"""Tables through the one formatter, with widths from content (dashboard.tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.tables import CHAR_PX, content_widths, formatted
from mcviz.present.figures import format_number


def test_numbers_go_through_the_one_formatter():
    frame = pd.DataFrame({"id": [1, 2086], "size": [2086, 48842], "D/σ": [4.1254, np.nan],
                          "p adjusted (Holm)": [0.0002961, 1.5e-06], "share": [0.0427, 0.5],
                          "vece": [0.0028, 0.0194], "description": ["age >= 40", "x"]})
    shown = formatted(frame, percent=("vece",))
    assert shown["size"].tolist() == ["2,086", "48,842"]
    assert shown["D/σ"].tolist() == [format_number(4.1254), "–"]
    assert shown["p adjusted (Holm)"].tolist() == ["0.0002961", "< 0.0001"]
    assert shown["share"].tolist() == ["4.27%", "50%"]
    assert shown["vece"].tolist() == ["0.28%", "1.94%"]  # as the charts write VECE
    assert shown["description"].tolist() == ["age >= 40", "x"]


def test_no_column_is_narrower_than_its_longest_text():
    frame = formatted(pd.DataFrame({"size": [2086, 48_842_000], "95% CI": ["−5.75 to −2.02",
                                                                            "1 to 2"]}))
    widths = content_widths(frame)
    for column in frame.columns:
        longest = max(len(str(v)) for v in [column, *frame[column]])
        assert widths[column] >= CHAR_PX * longest + 20, column


def test_the_variables_ranking_reads_in_words_with_help_on_every_header():
    from dashboard.tables import variable_table

    ranking = pd.DataFrame({
        "name": ["native_country", "region"], "kind": ["ordinal", "nominal"],
        "vece": [0.0123, 0.004], "vce": [0.00657, np.nan],
        "vce_at": ["Asian-Pac-Islander", None], "vce_support": [43956.0, np.nan],
        "vce_significant": [False, False],
        "kuiper_z": [5.2, np.nan], "p_value": [2e-6, np.nan], "p_adjusted": [0.049, np.nan],
        "warnings": [("thin support at 83",), ()]})
    table, header_help = variable_table(ranking)
    raw = {"vece", "vce", "vce_at", "vce_support", "vce_significant", "kuiper_z", "p_value",
           "p_adjusted"}
    assert not raw & set(table.columns)
    assert all(header_help.get(c) for c in table.columns)
    row = dict(zip(table.columns, table.iloc[0], strict=True))
    assert row["rows there"] == "43,956"  # a row count, never "4,395,600%"
    assert row["average gap"] == "1.23%" and row["largest gap"] == "0.657%, within noise"
    significant = variable_table(ranking.assign(vce_significant=[True, False]))[0]
    assert significant["largest gap"].iloc[0] == "0.657%, beyond noise"
    assert row["p adjusted"] == "0.049"
    empty = dict(zip(table.columns, table.iloc[1], strict=True))
    assert empty["largest gap"] == "–" and empty["rows there"] == "–" and empty["where"] == "–"
    # Adult's longest texts still fit the 1440-px page's ~980-px table (no scroll)
    assert sum(content_widths(table).values()) <= 980, content_widths(table)


def test_the_calibration_measures_tables_fit_the_page_without_a_sideways_scroll():
    # the Calibration page shows each group of classical measures as a three-column grid in
    # the main column (978 px at 1440×900 with the sidebar open); the columns are as wide as
    # their longest text, so a long "what it says" cell (Hosmer-Lemeshow's caveat, 230
    # characters) pushed the table past the page's edge (#40: the grid scrolled sideways)
    from mcviz.io import Predictions
    from mcviz.stats.measures import classical_measures

    rng = np.random.default_rng(0)
    score = rng.uniform(0.02, 0.98, 4000)
    pred = Predictions.from_arrays(score, (rng.random(4000) < score).astype(int))
    frame = classical_measures(pred).to_frame()
    for group, rows in frame.groupby("group", sort=False):
        shown = formatted(rows[["name", "value", "help"]].rename(
            columns={"name": "measure", "help": "what it says"}))
        width = sum(content_widths(shown).values())
        assert width <= 978, (group, width, shown["what it says"].str.len().max())


def test_negative_numbers_in_cells_carry_a_true_minus_and_zero_has_no_sign():
    # #40: "-0.0001426" in the Groupings table beside "−0.0001426" in the sentences; and no
    # "−0" for a number that rounds to zero
    shown = formatted(pd.DataFrame({"error": [-0.0001426, -2.5e-06, -0.0, 0.25],
                                    "n": [-3, 0, 1, 2]}))
    assert shown["error"].tolist() == ["−0.0001426", "−2.5e-06", "0", "0.25"]
    assert shown["n"].tolist() == ["−3", "0", "1", "2"]
    assert not any("-" in cell.split("e")[0] for cell in shown["error"])
