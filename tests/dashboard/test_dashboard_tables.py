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
