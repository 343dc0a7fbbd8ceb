"""A group bounded by the score alone: judged and drawn by its own calibration, never by a
deviation from the full population that is zero by construction (paper 003, eqs. (5)-(8))."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from mcviz.io import load_predictions

pptx = pytest.importorskip("pptx")

OWN = "Own calibration of the subpopulation"
DEVIATION = "Deviation from the full population"


def _frame(n: int, seed: int) -> pd.DataFrame:
    """Calibrated scores, except 8 points more events than predicted below a score of 0.4."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.05, 0.95, n)
    rate = np.clip(score + 0.08 * (score < 0.4), 0, 1)
    return pd.DataFrame({"score": score, "y": (rng.random(n) < rate).astype(int),
                         "region": rng.choice([f"r{i}" for i in range(10)], n),
                         "age": rng.integers(20, 70, n)})


def _brute_deviation_path(score, label, members):
    """Paper 003 eqs. (5)-(8) by loops: F_k - F~_k at each of the group's (distinct) scores."""
    sub = np.sort(score[members])
    edges = [-np.inf, *((sub[:-1] + sub[1:]) / 2), np.inf]
    path, f, f_tilde = [], 0.0, 0.0
    for k in range(sub.size):
        f += label[members][np.argsort(score[members])][k]
        inside = (score > edges[k]) & (score <= edges[k + 1])
        f_tilde += label[inside].mean()
        path.append((f - f_tilde) / sub.size)
    return np.array(path)


def test_a_group_bounded_by_the_score_alone_deviates_only_in_its_end_bin():
    # why its deviation is not drawn: the bins around its scores hold its own rows alone,
    # but for the last one, which reaches past the group (B_n = +inf)
    rng = np.random.default_rng(3)
    score = rng.uniform(0, 1, 400)
    label = (rng.random(400) < np.clip(score + 0.2 * (score < 0.4), 0, 1)).astype(float)
    members = np.flatnonzero(score < 0.4)
    path = _brute_deviation_path(score, label, members)
    assert np.allclose(path[:-1], 0.0, atol=1e-12)
    assert abs(path[-1]) > 1e-3  # the end bin pools every row above the group
    other = np.flatnonzero((score < 0.4) & (rng.random(400) < 0.5))  # not all rows there
    assert np.abs(_brute_deviation_path(score, label, other)[:-1]).max() > 1e-3


def test_on_score_alone_names_groups_bounded_by_the_score_and_nothing_else():
    from mcviz.subpopulations import Condition, on_score_alone

    pred = load_predictions(_frame(500, 1), score="score", label="y",
                            covariates=["region", "age"], nominal=["region"])
    assert on_score_alone(pred, (Condition("score", ">=", 0.2), Condition("score", "<", 0.4)))
    assert not on_score_alone(pred, (Condition("score", "<", 0.4), Condition("age", ">=", 40)))
    assert not on_score_alone(pred, (Condition("age", ">=", 40),))
    assert not on_score_alone(pred, ())  # the full population


def _texts(slide) -> str:
    return "\n".join(shape.text_frame.text for shape in slide.shapes if shape.has_text_frame)


def _report(cli, source, deck, *engine):
    return cli("report", source, "--score", "score", "--label", "y", "--covariates",
               "region,age", "--max-conditions", "2", "--findings", "3", "--json",
               "--deck", deck, *engine)


@pytest.mark.parametrize("engine", [(), ("--engine", "duckdb", "--sample-rows", "12000")],
                         ids=["in-memory", "duckdb-at-scale"])
def test_a_finding_on_the_score_alone_has_its_own_calibration_on_its_slide(tmp_path, cli,
                                                                           engine):
    if engine:
        pytest.importorskip("duckdb")
    source = tmp_path / "low.parquet"  # at scale: its charts from the engine's runs
    _frame(20_000, 1).to_parquet(source, index=False)
    run = _report(cli, source, tmp_path / "d.pptx", *engine)
    assert run.status == 0, run.err
    finding = run.json["findings"][0]
    assert re.fullmatch(r"score < 0\.\d+", finding["description"]), finding
    assert finding["effect"].startswith("+")
    bound = float(finding["description"].split("< ")[1])
    deck = pptx.Presentation(str(tmp_path / "d.pptx"))
    slides = [slide for slide in deck.slides if _texts(slide).startswith("Finding 1:")]
    title, text = _texts(slides[0]).split("\n", 1)
    # the sentence's words, not the raw bound: "where the model predicts below 40.9%"
    assert title == f"Finding 1: where the model predicts below {100 * bound:.3g}%", title
    assert "zero by construction" in text and "own calibration shows the gap" in text
    charts = [shape.chart for slide in slides for shape in slide.shapes if shape.has_chart]
    titles = [chart.chart_title.text_frame.text for chart in charts]
    assert titles[0] == OWN, titles
    assert not any(t.startswith(DEVIATION) for t in titles), titles
    assert titles.count(OWN) == 1
