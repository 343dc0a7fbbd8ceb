"""AppTest + CLI: no bidi control or line separator from the data reaches a reader raw (#25).

A file whose column names and category levels hold U+202E (right-to-left override), U+2066
(left-to-right isolate), a bare CR, U+2028 (line separator) and Markdown/HTML is uploaded; every
page is visited (subpopulations computed and searched, each grouping, the monitor on the file's
own date column, a fix fitted, the report built) and every element's every text is walked: the
protobuf message Streamlit sends to the browser -- labels, options, values, help, captions,
metrics, expander labels, download names, the plotly spec (decoded) and the Arrow bytes of each
table (column names, index and cells). Any raw control fails the test, naming the page, the
element and the text. The same file through the CLI: no raw control on stdout or stderr.

The data used for computing keep their characters: the hostile level still selects its rows
(the subpopulations page finds the planted one), only what is shown is neutralised, once (a
name shown as ``[U+202E]`` never as ``[[U+202E]]`` or ``&lt;b&gt;``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import state as s
from mcviz.text import BIDI_CONTROLS

APP = str(Path(__file__).resolve().parents[2] / "app.py")
ROOT = Path(__file__).resolve().parents[2]
RAW = BIDI_CONTROLS | frozenset("\r\u2028\u2029\x85\x0b\x0c")
"""What must never reach a reader: bidi controls and every line separator but the line feed."""
GROUP = "re\u202egion\r<b>g</b>"
KIND = "ki\u2066nd\u2069\u2028**k**"
DATE = "date\u2028\u202ex"
LEVELS = ["n\u202eorth", "s\u2066ou\u2069th", "e\rast", "w\u2028est", "<i>mid</i>", "**x**"]
FILE_NAME = "pre\u202edictions\u2028.csv"


def hostile_frame(n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    score = np.clip(rng.beta(2, 3, n), 0.01, 0.99)
    group = rng.choice(LEVELS, n)
    truth = np.where(group == LEVELS[0], np.minimum(score + 0.35, 1), score)
    day = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 120, n), unit="D")
    return pd.DataFrame({
        "score": score.round(4), "label": (rng.random(n) < truth).astype(int),
        GROUP: group, KIND: rng.choice(["a\u202eb", "c\rd", "e"], n),
        "x\u2028y": rng.normal(size=n).round(3), DATE: day.strftime("%Y-%m-%d"),
    })


def hostile_csv() -> bytes:
    # rows end in CRLF: a cell holding a bare CR is then quoted (with LF endings it is not)
    return hostile_frame().to_csv(index=False, lineterminator="\r\n").encode()


def _strings_of_message(message, found: list[str]) -> None:
    """Every string a protobuf message holds; JSON strings decoded, Arrow tables read."""
    for field, value in message.ListFields():
        if field.name == "id":  # an element's id (keys hold names) is never shown
            continue
        repeated = not isinstance(value, (str, bytes)) and not hasattr(value, "ListFields") \
            and hasattr(value, "__len__")
        values = value if repeated else [value]
        for item in values:
            if hasattr(item, "ListFields"):
                _strings_of_message(item, found)
            elif isinstance(item, str):
                found.append(item)
                if item[:1] in "{[":
                    with contextlib.suppress(ValueError):
                        _strings_of_json(json.loads(item), found)
            elif isinstance(item, bytes) and item[:4] == b"\xff\xff\xff\xff":
                _strings_of_arrow(item, found)  # an Arrow IPC stream: a table's data


def _strings_of_json(value, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            found.append(str(key))
            if key != "template":
                _strings_of_json(item, found)
    elif isinstance(value, list):
        for item in value:
            _strings_of_json(item, found)


def _strings_of_arrow(raw: bytes, found: list[str]) -> None:
    table = pa.ipc.open_stream(io.BytesIO(raw)).read_all()
    found.extend(table.schema.names)
    found.append((table.schema.metadata or {}).get(b"pandas", b"").decode())
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            found.extend(v for v in column.to_pylist() if v is not None)
        elif pa.types.is_dictionary(column.type):
            found.extend(str(v) for v in column.to_pylist() if v is not None)


def element_texts(at: AppTest) -> list[tuple[str, str]]:
    """(element type, text) for every string of every element on the page."""
    out: list[tuple[str, str]] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ListFields"):
            found: list[str] = []
            _strings_of_message(proto, found)
            out.extend((getattr(node, "type", type(node).__name__), t) for t in found)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


def raw_controls(at: AppTest, where: str) -> None:
    assert not at.exception, (where, [e.value for e in at.exception])
    texts = element_texts(at)
    assert len(texts) > 20, (where, "the walk found almost nothing", texts)
    bad = [(kind, text[:120]) for kind, text in texts if RAW.intersection(text)]
    assert not bad, (where, len(bad), bad[:6])
    # escaped once: plotly text holds entities (&lt;), Markdown backslashes, the rest neither
    doubled = [(kind, text[:120]) for kind, text in texts
               if "[[U+" in text or "[U+005B]" in text or "&amp;lt;" in text
               or "\\\\\\[U" in text
               or (kind != "plotly_chart" and "&lt;b&gt;g" in text)]
    assert not doubled, (where, doubled[:6])


@pytest.fixture(scope="module")
def uploaded():
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.file_uploader(key="w_upload").set_value((FILE_NAME, hostile_csv(), "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_walk_sees_a_raw_control_where_one_is_shown():
    # the check itself can fail: a page that shows a name raw is caught
    at = AppTest.from_string(
        "import streamlit as st\n"
        f"st.selectbox('pick', [{GROUP!r}])\n"
        f"import pandas as pd\nst.dataframe(pd.DataFrame({{'a': [{LEVELS[0]!r}]}}))\n"
        + "st.caption('x' * 30)\n" * 21
    ).run()
    texts = element_texts(at)
    assert any(GROUP in t for _, t in texts)  # the option
    assert any(LEVELS[0] in t for _, t in texts)  # the table cell, read from its Arrow bytes
    with pytest.raises(AssertionError):
        raw_controls(at, "probe")


def test_the_data_page_shows_names_and_levels_neutralised(uploaded):
    raw_controls(uploaded, "data")
    texts = [t for _, t in element_texts(uploaded)]
    # shown once, readable: the neutralised name, not an escaped copy of it
    assert any(t == "re[U+202E]gion[U+000D]<b>g</b>" for t in texts), [
        t for t in texts if "gion" in t][:5]
    assert any("n[U+202E]orth" in t for t in texts)


def test_every_page_shows_no_raw_control(uploaded):
    for page in ("review", "calibration", "variables", "report"):
        uploaded.switch_page(f"pages/{page}.py").run()
        raw_controls(uploaded, page)


def test_subpopulations_computed_and_searched(uploaded):
    at = uploaded
    at.switch_page("pages/subpopulations.py").run()
    for mode in ("generated", "searched"):  # the searched run stays: Review shows its findings
        at.radio(key=s.W_SUB_MODE).set_value(mode).run()
        raw_controls(at, f"subpopulations {mode}")
        next(b for b in at.button if b.label == "Compute").click().run()
        raw_controls(at, f"subpopulations {mode} computed")
    # the planted level is found under its real name: the data were not rewritten
    # (the selector names groups by id and size; their descriptions are in the table and drill-down)
    texts = [t for _, t in element_texts(at)]
    assert any("n[U+202E]orth" in t for t in texts), [t for t in texts if "orth" in t][:5]
    at.switch_page("pages/review.py").run()
    raw_controls(at, "review after the search")


def test_every_grouping(uploaded):
    uploaded.switch_page("pages/groupings.py").run()
    for grouping in ("score", "covariate", "local"):
        uploaded.radio(key="grouping_kind").set_value(grouping).run()
        raw_controls(uploaded, f"groupings {grouping}")


def test_monitor_on_the_files_date_column(uploaded):
    at = uploaded
    at.switch_page("pages/monitor.py").run()
    raw_controls(at, "monitor")
    assert at.selectbox(key="w_mon_time").value == DATE  # the real name is what is used
    at.multiselect(key="w_mon_segments").set_value([GROUP]).run()
    raw_controls(at, "monitor segments")
    assert len(at.selectbox(key="w_mon_series").options) == 1 + len(LEVELS)


def test_fix(uploaded):
    at = uploaded
    at.switch_page("pages/fix.py").run()
    raw_controls(at, "fix")
    at.button(key="fix_run").click().run()
    raw_controls(at, "fix fitted")


def test_review_and_report_with_every_section(uploaded):
    # after the search, the fix and the monitor: the verdict's sections, the report's tables
    for page in ("review", "report"):
        uploaded.switch_page(f"pages/{page}.py").run()
        raw_controls(uploaded, f"{page} with every section")


def test_screening_table_and_its_drill_down(tmp_path, monkeypatch):
    # a table written by `mcviz screen` on the same data (as Parquet, under a hostile file
    # name): its descriptions, files, picker and the drilled-down subpopulation's charts
    monkeypatch.setenv("MCVIZ_DATA_ROOTS", str(tmp_path))  # the server reads only its roots
    data = tmp_path / "pre\u202edictions\u2028.parquet"
    hostile_frame().to_parquet(data, row_group_size=1000)
    out = tmp_path / "screen.parquet"
    run = subprocess.run(
        [sys.executable, "-m", "mcviz", "screen", str(data), "--engine", "duckdb",
         "--score", "score", "--label", "label", "--covariates", f"{GROUP},{KIND}",
         "--subpopulations", "40", "--seed", "3", "--out", str(out)],
        capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=240,
        check=False)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.switch_page("pages/screening.py").run()
    at.file_uploader(key="screen_upload").set_value(
        ("scr\u202eeen.parquet", out.read_bytes(), "application/octet-stream")).run()
    raw_controls(at, "screening")
    picker = next(b for b in at.selectbox if str(b.key).startswith("screen_row|"))
    shown = list(picker.options)  # as the browser gets them
    hostile = [i for i, text in enumerate(shown) if "[U+" in text]
    assert hostile, shown  # a description naming a hostile column or level is offered
    assert "[U+" in " ".join(t for _, t in element_texts(at))  # shown neutralised, not dropped
    picker.select_index(hostile[-1]).run()  # a drill-down into it
    raw_controls(at, "screening drill-down")
    assert any(m.label == "Kuiper D" for m in at.metric)


def test_cli_text_output(tmp_path):
    path = tmp_path / FILE_NAME
    path.write_bytes(hostile_csv())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (["metrics", str(path), "--score", "score", "--label", "label"],
                 ["metrics", str(path), "--score", "score", "--label", "label",
                  "--covariates", f"{GROUP},{KIND}", "--subpopulations", "200"],
                 ["search", str(path), "--score", "score", "--label", "label",
                  "--covariates", f"{GROUP},{KIND}"],
                 ["report", str(path), "--score", "score", "--label", "label",
                  "--covariates", f"{GROUP},{KIND}"],
                 ["metrics", str(path), "--score", "score", "--label", "label",
                  "--covariates", "no\u202esuch\r"]):
        run = subprocess.run([sys.executable, "-m", "mcviz", *args], capture_output=True,
                             env=env, timeout=240, check=False)
        out, err = run.stdout.decode(), run.stderr.decode()
        assert "Traceback" not in err, err
        assert run.returncode == (2 if "no\u202esuch\r" in args[-1] else 0), (args, err)
        bad = sorted(RAW.intersection(out + err))
        assert not bad, (args, bad, (out + err)[:2000])
