"""AppTest: classical measures and the CORP diagram (issue #17 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from mcviz.stats.measures import MEASURE_GROUPS

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def charts(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def title(figure: dict) -> str:
    return figure["layout"].get("title", {}).get("text", "")


def calibration_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("pages/calibration.py").run()
    no_exceptions(at)
    return at


def classical_tables(at: AppTest) -> dict[str, dict[str, str]]:
    headers = [m.value.strip("*").lower() for m in at.markdown
               if m.value.startswith("*") and not m.value.startswith("**")]
    tables = [d.value for d in at.dataframe if list(d.value.columns) == ["measure", "value",
                                                                          "what it says"]]
    return {h: dict(zip(t["measure"], t["value"], strict=True))
            for h, t in zip(headers, tables, strict=True)}


def test_grouped_classical_measures_for_the_population_and_a_filter():
    at = calibration_page()
    tables = classical_tables(at)
    assert list(tables) == list(MEASURE_GROUPS)
    overall = tables["overall calibration"]
    assert {"calibration intercept", "calibration slope", "O/E ratio",
            "Hosmer-Lemeshow p"} <= set(overall)
    assert {"smECE", "ICI", "E50", "E90"} <= set(tables["calibration-curve summaries"])
    parts = {k: float(v) for k, v in tables["decomposition"].items()}
    # Brier = MCB - DSC + UNC (to the four significant digits shown)
    assert np.isclose(parts["Brier score"], parts["Brier miscalibration (MCB)"]
                      - parts["Brier discrimination (DSC)"] + parts["Brier uncertainty (UNC)"],
                      rtol=2e-3)
    full_slope = overall["calibration slope"]
    at.radio(key="w_classical_scope_a").set_value("filter").run()
    at.text_input(key="w_classical_filter_a").set_value('sex == "Female"').run()
    no_exceptions(at)
    assert any(c.value.startswith("sex \\=\\= Female · ") for c in at.caption)
    female = classical_tables(at)["overall calibration"]
    assert female["calibration slope"] != full_slope  # other rows, another fit
    # the adult demo: women's base rate r is about 0.11, UNC = r(1 - r) about 0.10
    unc = float(classical_tables(at)["decomposition"]["Brier uncertainty (UNC)"])
    assert 0.08 < unc < 0.12


def test_corp_is_the_bin_free_reliability_diagram():
    at = calibration_page()
    at.segmented_control(key="w_binkind_a").set_value("corp").run()
    no_exceptions(at)
    corp = next(f for f in charts(at) if title(f).startswith("CORP reliability diagram"))
    names = [trace.get("name") for trace in corp["data"]]
    assert "CORP (isotonic) curve" in names
    assert any(str(n).startswith("90% consistency band (100 resamples)") for n in names)
    assert any("no bins to choose" in c.value for c in at.caption)


def test_review_shows_corp_in_place_of_the_binned_diagrams():
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("pages/review.py").run()
    assert any(title(f).startswith("Reliability (") for f in charts(at))
    at.toggle(key="w_review_corp").set_value(True).run()
    no_exceptions(at)
    titles = [title(f) for f in charts(at)]
    assert len(titles) == 4
    assert titles[1].startswith("CORP reliability (no bins)")
    assert not any(t.startswith("Reliability (") for t in titles)
