"""The comparison's slides (mcviz.present.comparison, `mcviz compare --deck`), read back."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz import compare_models
from mcviz.compare.words import signed
from mcviz.io import Predictions
from mcviz.present.comparison import comparison_slides, deck_info
from mcviz.present.deck import write_pptx
from mcviz.text import format_fixed

pptx = pytest.importorskip("pptx")
sys.path.insert(0, str(Path(__file__).parent))
from test_deck import SOFFICE, _charts, _check_slide_rules, _texts  # noqa: E402

HOSTILE = "g5\u202e\u2028x"  # a level with a bidi override and a line separator


def _planted(n=12_000, seed=0):
    """A is off by +0.15 in group g2, B by +0.15 in the hostile group; both right elsewhere."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 8, n)
    p = rng.uniform(0.1, 0.85, n)
    label = (rng.random(n) < p).astype(int)
    a = np.clip(p + 0.15 * (group == 2), 0, 1)
    b = np.clip(p + 0.15 * (group == 5), 0, 1)
    names = [HOSTILE if g == 5 else f"g{g}" for g in group]
    return pd.DataFrame({"p_a": a, "p_b": b, "y": label, "group": names,
                         "x": rng.normal(size=n)})


@pytest.fixture(scope="module")
def compared():
    frame = _planted()
    pred = Predictions.from_arrays(frame["p_a"].to_numpy(), frame["y"].to_numpy(),
                                   covariates={"group": frame["group"].tolist(),
                                               "x": frame["x"].to_numpy()})
    return compare_models(pred, frame["p_b"].to_numpy(), name_b="challenger\u202e")


def _xy(shape, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The x and y values of the XY series called ``name`` (its first piece), read back."""
    from pptx.oxml.ns import qn

    for series in shape.chart.plots[0].series:
        if series.name == name:
            element = series._element
            x = [float(v.text) for v in element.find(qn("c:xVal")).iter(qn("c:v"))]
            return np.array(x), np.array(series.values, dtype=float)
    raise AssertionError(f"no series {name!r} in {[s.name for s in shape.chart.plots[0].series]}")


def test_comparison_slides_read_back_with_the_comparison_numbers(tmp_path, compared):
    assert compared.regressions
    assert compared.improvements
    slides = comparison_slides(compared, deck_info("f.csv", compared, "2026-11-29"))
    path = tmp_path / "compare.pptx"
    write_pptx(slides, path)
    deck = pptx.Presentation(str(path))
    _check_slide_rules(deck)  # >= 12 pt, inside, <= 2 charts, no control character
    texts = [_texts(slide) for slide in deck.slides]
    assert len(deck.slides) == len(slides) == 4 + len(compared.regressions) + len(
        compared.improvements) + 1
    # the verdict in words, a group's sentence shortened to its words and share
    assert compared.verdict[0] in texts[1]
    assert compared.next_step in texts[1]
    assert "B is worse among rows with group is g5[U+202E]" in texts[1]  # the group in words
    assert "B is better among rows with group is g2" in texts[1]
    # the paired path: its drawn range is D, its triangle ±2σ
    difference, residuals = _charts(deck.slides[2])
    _, path_y = _xy(difference, "B − A Brier loss, summed (up: B worse)")
    head = compared.headline
    assert path_y.max() - path_y.min() == pytest.approx(head.kuiper, rel=1e-9)
    _, triangle = _xy(difference, "±2σ: what noise alone reaches")
    assert triangle.max() == pytest.approx(2 * head.sigma, rel=1e-9)
    _, a_path = _xy(residuals, "A: observed − predicted, summed")
    assert a_path.max() - a_path.min() == pytest.approx(head.kuiper_a, rel=1e-9)
    assert signed(compared.brier.difference) in texts[2]
    # net benefit: A, B and B − A per 1,000 decisions at each threshold, and the interval
    levels, change = _charts(deck.slides[3])
    net = compared.net_benefit
    by_name = {s.name: list(s.values) for s in levels.chart.plots[0].series}
    np.testing.assert_allclose(by_name["A"], net.a * 1000)
    np.testing.assert_allclose(by_name["B"], net.b * 1000)
    assert list(levels.chart.plots[0].categories) == [f"{t:g}" for t in net.thresholds]
    _, gain = _xy(change, "B − A")
    np.testing.assert_allclose(gain, net.difference * 1000)
    assert (f"{format_fixed(net.difference[0] * 1000, signed=True)} "
            f"({format_fixed(net.ci_low[0] * 1000, signed=True)} to") in texts[3]
    assert not re.search(r"(?<![\w.])-\d", texts[3])  # a true minus, never a hyphen (#40)
    # each group: its sentence, its held-out effect and each model's gap, as the JSON says
    groups = [*compared.regressions, *compared.improvements]
    for found, slide, text in zip(groups, list(deck.slides)[4:-1], texts[4:-1], strict=True):
        where = "worse" if found in compared.regressions else "better"
        assert text.startswith(f"Where B is {where}")
        assert "==" not in text.splitlines()[0]  # the title in words
        assert (f"{found.effect:+.4f} ({found.ci_low:+.4f} to {found.ci_high:+.4f})"
                .replace("-", "−") in text)  # a true minus (#40)
        (chart,) = _charts(slide)
        values = list(chart.chart.plots[0].series[0].values)
        np.testing.assert_allclose(values, [found.calibration_a * 100,
                                            found.calibration_b * 100])
        fills = [str(point.format.fill.fore_color.rgb)
                 for point in chart.chart.plots[0].series[0].points]
        lines = {str(s.format.line.color.rgb) for s in residuals.chart.plots[0].series
                 if s.name.startswith(("A:", "B:"))}
        assert fills[0] != fills[1] and set(fills) == lines  # A and B in their own colours
        assert not chart.chart.has_legend  # no one-colour legend entry for both
    assert texts[-1].startswith("Appendix")
    # user text: the bidi override and the line separator are shown, never acted on
    assert "[U+202E]" in "\n".join(texts)


def test_swapping_a_and_b_swaps_the_group_slides(compared):
    info = deck_info("f.csv", compared, "2026-11-29")
    titles = [s.title for s in comparison_slides(compared, info)]
    worse = [t for t in titles if t.startswith("Where B is worse")]
    better = [t for t in titles if t.startswith("Where B is better")]
    assert len(worse) == len(compared.regressions)
    assert len(better) == len(compared.improvements)
    assert "g2" in better[0]
    assert "g5" in worse[0]


@pytest.fixture(scope="module")
def planted_csv(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("compare_deck") / "two_models.csv"
    frame = _planted(8_000, 1)
    frame["group"] = frame["group"].str.replace(HOSTILE, "g5", regex=False)
    frame.to_csv(source, index=False)
    return source


def test_compare_cli_writes_the_deck_and_its_pdf(tmp_path, cli, planted_csv):
    decks = [tmp_path / "c.pptx"] + ([tmp_path / "c.pdf"] if SOFFICE else [])
    args = ["compare", planted_csv, "--score", "p_a", "--score-b", "p_b", "--label", "y",
            "--covariates", "group,x", "--json"]
    for deck in decks:
        args += ["--deck", deck]
    run = cli(*args)
    assert run.status == 0, run.err
    out = run.json
    assert out["deck"] == [str(d) for d in decks]
    deck = pptx.Presentation(str(decks[0]))
    assert len(deck.slides) == out["slides"]
    _check_slide_rules(deck)
    texts = [_texts(slide) for slide in deck.slides]
    assert out["verdict"][0] in texts[1]
    for found in out["regressions"]:
        assert any(found["sentence"] in text for text in texts)
    if SOFFICE:
        pdf = decks[1].read_bytes()
        assert len(re.findall(rb"/Type\s*/Page(?!s)", pdf)) == len(deck.slides)


def test_compare_cli_refuses_a_bad_deck_before_any_work(tmp_path, cli, planted_csv):
    run = cli("compare", planted_csv, "--score", "p_a", "--score-b", "p_b", "--label", "y",
              "--deck", tmp_path / "x.key")
    assert run.status == 2
    assert "--deck" in run.err
    assert "must end in .pptx or .pdf" in run.err
    assert "Traceback" not in run.err
