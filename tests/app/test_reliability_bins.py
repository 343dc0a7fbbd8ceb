"""The Calibration page draws the reliability diagram at the three bin counts of the sidebar.

(scripts/mutate.py's "one-bin-count" mutation must fail here.)
"""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _reliability_figure(at: AppTest) -> dict:
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if "Reliability diagram" in json.dumps(spec["layout"].get("title", "")):
            return spec
    raise AssertionError("no reliability diagram on the page")


def test_three_bin_counts_by_default():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/calibration.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "**Reliability diagrams** at bins 10, 20, 50" in [m.value for m in at.markdown]
    spec = _reliability_figure(at)
    # one panel per bin count, each with its own diagonal of perfect calibration
    names = [trace.get("name") for trace in spec["data"]]
    assert names.count("perfect calibration") == 3
