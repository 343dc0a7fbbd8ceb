"""AppTest: the Subpopulations page tests M against chance and shows the guided search.

Issue #14 items 1-2 (null distribution, adjusted p-values, the worst subpopulation a finding
only when its adjusted p < 0.05, low-prevalence caveat) and #19 item 3 (searched findings).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from wiring_testdata import PLANTED, PLANTED_WORDS, planted_csv

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(at: AppTest, kind: str) -> list[str]:
    # the page escapes data-derived text for Markdown: compare without the backslashes
    return [e.value.replace("\\", "") for e in getattr(at, kind)]


def _number(value: object) -> float:
    if isinstance(value, int | float):
        return float(value)
    text = str(value).replace(",", "").replace("\u2212", "-").strip()
    if text in ("–", ""):
        return float("nan")
    return 0.0 if text.startswith("<") else float(text)


def numeric(frame):
    """The table's numbers back from the text the one formatter wrote."""
    out = frame.copy()
    for column in out.columns:
        with contextlib.suppress(ValueError):
            out[column] = [_number(v) for v in out[column]]
    return out


def subpopulations_page(raw: bytes | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    if raw is not None:
        at.file_uploader(key="w_upload").set_value(("planted.csv", raw, "text/csv")).run()
    at.switch_page("pages/subpopulations.py").run()
    no_exceptions(at)
    return at


def compute_null(at: AppTest, draws: int) -> AppTest:
    at.number_input(key="w_null_draws").set_value(draws)
    next(b for b in at.button if b.label == "Compute the null distribution").click().run()
    no_exceptions(at)
    return at


def test_worst_subpopulation_is_untested_until_the_null_is_computed():
    # perfectly calibrated responses: the null's adjusted p of the argmax must not be < 0.05
    at = subpopulations_page(planted_csv(20_000, shift=0.0, seed=3))
    at.number_input(key="w_l").set_value(100)
    at.button[0].click().run()
    no_exceptions(at)
    assert not at.success  # no green box before the null distribution
    assert any("Largest of 100: not yet tested against chance." in t
               and "compute the null distribution" in t for t in texts(at, "info"))
    table = numeric(at.dataframe[0].value)
    assert list(table.columns) == ["id", "description", "size", "D/σ", "p", "p_adjusted",
                                   "normalised"]
    assert table["p_adjusted"].isna().all()
    assert any(t.startswith("Cost estimate: about") for t in texts(at, "caption"))
    # the drilled-down argmax's charts say so too, never its own p (#40)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"]
              for c in at.get("plotly_chart")]
    drilled = [t for t in titles if t.startswith(("Deviation from the full population",
                                                  "The subpopulation's own calibration"))]
    assert len(drilled) == 2, titles
    for title in drilled:
        assert "not yet tested against chance" in title and "(p " not in title, title
    # the drill-down names the group and its splits in words; the filter is a caption (#40)
    from mcviz.subpopulations.words import FILTER_OPERATORS
    header = next(t for t in (m.value.replace("\\", "") for m in at.markdown)
                  if " rows (" in t and "of the total" in t)
    assert not any(op in header for op in FILTER_OPERATORS), header
    for line in (m.value.replace("\\", "") for m in at.markdown):
        if line.startswith("Splits, in the order taken"):
            assert not any(op in line for op in FILTER_OPERATORS), line
    assert any(t.startswith("Filter: ") for t in texts(at, "caption"))

    compute_null(at, 99)
    shown = {m.label: m.value for m in at.metric}
    assert {"p-value of M (null draws)", "Null median of M/σ₀",
            "Null 95% quantile of M/σ₀"} <= set(shown)
    p_text, se_text = shown["p-value of M (null draws)"].split(" ± ")
    p = float(p_text)
    # Monte-Carlo standard error sqrt(p (1 - p) / B) with B = 99, to the 2 digits shown
    assert abs(float(se_text) - np.sqrt(p * (1 - p) / 99)) < 0.006
    assert float(shown["Null median of M/σ₀"]) <= float(shown["Null 95% quantile of M/σ₀"])
    table = numeric(at.dataframe[0].value)
    adjusted = table["p_adjusted"].to_numpy(dtype=float)
    # (1 + count) / (B + 1) with B = 99: multiples of 1/100 in (0, 1]
    assert np.allclose(adjusted * 100, np.round(adjusted * 100))
    assert ((adjusted > 0) & (adjusted <= 1)).all()
    # adjusted p-values never fall below the unadjusted ones' order: larger D/σ, smaller p_adj
    order = np.argsort(-table["D/σ"].to_numpy())
    assert np.all(np.diff(adjusted[order]) >= -1e-12)
    assert not at.success
    assert any("Tested against all 100, allowing for choosing the largest: within what chance "
               "produces." in t for t in texts(at, "info"))


def test_a_planted_miscalibration_is_a_finding_after_the_null():
    at = subpopulations_page(planted_csv(20_000, shift=0.1, seed=1, group="old"))
    at.number_input(key="w_l").set_value(100)
    at.button[0].click().run()
    compute_null(at, 39)
    # 39 draws: the smallest possible adjusted p is 1/40 = 0.025 < 0.05
    assert next(m.value for m in at.metric if m.label == "p-value of M (null draws)").startswith(
        "0.025")
    success = texts(at, "success")
    assert len(success) == 1
    assert "Worst subpopulation (argmax" in success[0]
    assert "Adjusted p = 0.025" in success[0]
    assert "allowing for choosing the largest: beyond chance" in success[0]


def test_low_prevalence_weighting_voids_the_brownian_p_values():
    at = subpopulations_page(planted_csv(20_000, shift=0.0, seed=3))
    at.selectbox(key="sub_weighting").set_value("low-prevalence").run()
    at.number_input(key="w_l").set_value(50)
    at.button[0].click().run()
    no_exceptions(at)
    warning = " ".join(texts(at, "warning"))
    assert "weights depend on the labels" in warning
    assert "void" in warning
    assert "p (void)" in at.dataframe[0].value.columns
    compute_null(at, 39)
    assert any("low-prevalence weights recomputed per draw" in t for t in texts(at, "caption"))


def test_searched_findings_read_as_sentences_with_held_out_p_values():
    at = subpopulations_page(planted_csv(100_000, shift=0.1))
    at.radio(key="w_sub_mode").set_value("searched").run()
    at.button[0].click().run()
    no_exceptions(at)
    markdown = texts(at, "markdown")
    first = next(t for t in markdown if t.startswith("1. "))
    assert first.startswith(f"1. Among rows with {PLANTED_WORDS} (")
    assert "more than predicted" in first
    assert any(t.startswith("Minimum detectable effect (80% power") and "nothing larger than"
               in t for t in markdown)
    assert any("Holm-adjusted over the findings reported" in t for t in texts(at, "caption"))
    findings = numeric(at.dataframe[0].value)
    assert list(findings.columns) == ["rank", "description", "share", "size", "held-out D/σ",
                                      "p (held-out)", "p adjusted (Holm)", "confirmed",
                                      "effect points",
                                      "95% CI", "O/E"]
    assert findings["description"].iloc[0] == PLANTED
    success = texts(at, "success")
    assert len(success) == 1
    assert success[0].startswith(f"Among rows with {PLANTED_WORDS}")
    table = numeric(at.dataframe[1].value)  # every view's table: Holm p of finding (id = rank)
    assert "p (all rows, unadjusted)" in table.columns
    first_row = table[table["id"] == 1].iloc[0]
    # the findings table shows 4 significant digits (the one number formatter)
    assert first_row["p_adjusted"] == pytest.approx(float(findings["p adjusted (Holm)"].iloc[0]),
                                                    rel=1e-3)
    assert np.isnan(table[table["id"] == 0]["p_adjusted"].iloc[0])  # the full population
    # the findings feed the same table, drill-down and review: id 1 is the first finding
    assert at.selectbox(key="w_selected").value == 1
    next(b for b in at.button if b.label.startswith("Open in Review")).click().run()
    no_exceptions(at)


def test_a_union_of_two_findings_is_said_below_them():
    """Two arms of one error (kind == k1 or 0.6 <= u < 0.8, as tests/search/
    test_search_union_offer.py plants them): the page lists the two findings, then one sentence
    saying they are one problem, with the rows of either."""
    import io

    import pandas as pd

    rng = np.random.default_rng(0)
    n = 20_000
    kind, u = rng.integers(0, 5, n), rng.uniform(size=n)
    score = rng.uniform(0.2, 0.8, n)
    label = rng.random(n) < np.clip(score + 0.12 * (kind == 1) + 0.12 * ((u >= 0.6) & (u < 0.8)),
                                    0, 1)
    buffer = io.StringIO()
    pd.DataFrame({"score": score, "label": label.astype(int), "kind": [f"k{k}" for k in kind],
                  "u": u}).to_csv(buffer, index=False)
    at = subpopulations_page(buffer.getvalue().encode())
    at.radio(key="w_sub_mode").set_value("searched").run()
    at.button[0].click().run()
    no_exceptions(at)
    markdown = texts(at, "markdown")
    union = [t for t in markdown if " are one problem: among rows with " in t]
    assert len(union) == 1, [(k, t[:60]) for k, t in enumerate(markdown)]
    assert "kind is k1" in union[0]
    assert "u between 0.6" in union[0] or "u between 0.59" in union[0]
    assert union[0].endswith("confirmed on held-out rows.")
    assert markdown.index(union[0]) > max(markdown.index(t) for t in markdown
                                          if t.startswith(("1. ", "2. ")))
