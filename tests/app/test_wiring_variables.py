"""AppTest: the Variables page shows what the data cannot say (issue #14 items 3 and 5)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def charts(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def values(array) -> np.ndarray:
    """A plotly array from its JSON: a list, or base64 typed data (``{"dtype", "bdata"}``)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array, dtype=float)


def unescaped(values) -> list[str]:
    return [v.replace("\\", "") for v in values]


def variables_page(variable: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("pages/variables.py").run()
    at.selectbox(key="w_variable").set_value(variable).run()
    no_exceptions(at)
    return at


def test_thin_support_is_drawn_lighter_and_its_warning_listed():
    # adult's capital_gain: 92% zeros and a long sparse tail
    at = variables_page("capital_gain")
    ranking = at.dataframe[0].value
    assert {"rows there", "average gap", "largest gap", "p adjusted"} <= set(ranking.columns)
    assert not {"vce_support", "vece", "vce_at", "kuiper_z"} & set(ranking.columns)
    config = json.loads(at.dataframe[0].proto.columns)  # hover help on the headers
    assert config["rows there"]["help"].startswith("The rows (weight) within")
    support = ranking.loc[ranking["variable"] == "capital_gain", "rows there"].iloc[0]
    assert len(ranking.columns) == 7  # fits the page without a horizontal scroll
    assert "%" not in support and float(support.replace(",", "")) <= 48_842  # rows, not %
    warnings = unescaped(w.value for w in at.warning)
    assert any(w.startswith("capital_gain: thin support at") and "left out of VCE(v*)" in w
               for w in warnings)
    names = [trace.get("name") for figure in charts(at) for trace in figure["data"]]
    assert any(str(n).endswith("(thin support)") for n in names)
    shapes = [s for figure in charts(at) for s in figure["layout"].get("shapes", [])]
    assert shapes  # the thin stretches are shaded
    rates = [values(trace["y"]) for trace in charts(at)[0]["data"]
             if str(trace.get("name", "")).startswith(("error rate", "predicted error"))]
    assert len(rates) >= 4
    for rate in rates:  # rates in percent, bands included, never leave [0, 100]
        assert np.nanmin(rate) >= 0
        assert np.nanmax(rate) <= 100
    assert any("Grey stretches: thin support" in c for c in unescaped(c.value for c in at.caption))


def test_nominal_levels_show_their_size_and_intervals():
    at = variables_page("native_country")
    table = next(d.value for d in at.dataframe if "gap 95% CI" in d.value.columns)
    assert list(table.columns) == ["level", "rows", "effective rows", "share of weight",
                                   "error %", "error 95% CI", "predicted error %", "gap %",
                                   "gap 95% CI", "in VCE(v*)"]
    assert len(table) == 42  # adult's native countries (with "(missing)")
    small = table[table["in VCE(v*)"] != "yes"]
    assert len(small) > 0
    assert (table[table["level"] == "United-States"]["in VCE(v*)"] == "yes").all()
    warnings = unescaped(w.value for w in at.warning)
    assert any(w.startswith(f"native_country: {len(small)} of 42 levels") for w in warnings)


def test_lcs_boundary_is_explained_on_the_calibration_page():
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    captions = unescaped(c.value for c in at.caption)
    assert any(c.startswith("Shaded ends (scores up to") and "not as over- or under-prediction"
               in c for c in captions)
