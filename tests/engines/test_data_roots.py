"""Data roots: a screening table makes the server read only files under its roots (issue #20, 1).

A table is an upload from anyone: the files it names are read only under the configured roots
(the working directory, MCVIZ_DATA_ROOTS, the ``roots`` option), with symlinks and ``..``
resolved first, and the refusal is worded the same whether or not the file exists. Its context
is checked field by field: a wrong field is a ValidationError, never a TypeError.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pyarrow.parquet as pq
import pytest
from test_engines import make_frame

from mcviz.cli import main
from mcviz.engines.results import DATA_ROOTS_VARIABLE, load_subpopulation, read_screen
from mcviz.errors import ValidationError


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """``root/data.parquet`` screened into ``root/screen.parquet``; ``outside/`` beside root."""
    base = tmp_path_factory.mktemp("roots")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    data = root / "data.parquet"
    make_frame(2000, seed=3).to_parquet(data, row_group_size=500)
    (outside / "secret.parquet").write_bytes(data.read_bytes())
    out = root / "screen.parquet"
    with contextlib.redirect_stdout(io.StringIO()):
        status = main(["screen", str(data), "--score", "score", "--label", "label", "--weight",
                       "weight", "--engine", "duckdb", "--subpopulations", "20", "--seed", "1",
                       "--out", str(out), "--json"])
    assert status == 0
    return root, outside, out


def naming(screen, *files):
    """The same table naming other files (what a crafted upload would carry)."""
    fields = {f: getattr(screen, f) for f in screen.__slots__}
    return type(screen)(**{**fields, "files": tuple(str(f) for f in files)})


def refusal(screen, roots) -> str:
    with pytest.raises(ValidationError) as caught:
        load_subpopulation(screen, 0, roots=roots)
    return str(caught.value)


def test_files_under_the_roots_are_read(layout, monkeypatch):
    root, _, out = layout
    screen = read_screen(out)
    assert load_subpopulation(screen, 0, roots=[root]).n == 2000
    monkeypatch.chdir(root)  # the default root: the directory the server started in
    assert load_subpopulation(screen, 0).n == 2000


def test_the_environment_variable_adds_roots(layout, monkeypatch, tmp_path):
    _, outside, out = layout
    screen = naming(read_screen(out), outside / "secret.parquet")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(DATA_ROOTS_VARIABLE, raising=False)
    with pytest.raises(ValidationError, match=DATA_ROOTS_VARIABLE):
        load_subpopulation(screen, 0)
    monkeypatch.setenv(DATA_ROOTS_VARIABLE, os.pathsep.join([str(tmp_path), str(outside)]))
    assert load_subpopulation(screen, 0).n == 2000


def test_existing_and_missing_files_outside_get_the_same_refusal(layout):
    root, outside, out = layout
    screen = read_screen(out)
    existing = refusal(naming(screen, outside / "secret.parquet"), [root])
    missing = refusal(naming(screen, outside / "nothing.parquet"), [root])
    assert "outside the directories" in existing
    assert DATA_ROOTS_VARIABLE in existing
    # identical once the file name itself is taken out: nothing tells whether it exists
    assert existing.replace("secret", "X") == missing.replace("nothing", "X")
    assert "not on this machine" not in existing + missing


@pytest.mark.parametrize("trick", ["dotdot", "symlink", "symlinked_dir", "relative", "glob",
                                   "url", "directory"])
def test_paths_that_leave_the_root_are_refused(layout, trick, tmp_path):
    root, outside, out = layout
    screen = read_screen(out)
    jail = tmp_path / "jail"
    jail.mkdir()
    (jail / "own.parquet").write_bytes((root / "data.parquet").read_bytes())
    name = {
        "dotdot": jail / ".." / ".." / outside.parent.name / "outside" / "secret.parquet",
        "symlink": jail / "link.parquet",
        "symlinked_dir": jail / "dir" / "secret.parquet",
        "relative": "../outside/secret.parquet",
        "glob": jail / "*.parquet",
        "url": "https://127.0.0.9/secret.parquet",
        "directory": jail,
    }[trick]
    (jail / "link.parquet").symlink_to(outside / "secret.parquet")
    (jail / "dir").symlink_to(outside)
    text = refusal(naming(screen, name), [jail])
    if trick == "directory":  # inside the root, but not a file: nothing is globbed from it
        assert "not on this machine" in text
    else:
        assert "outside the directories" in text


def test_the_row_oracle_does_not_answer_for_files_outside(layout):
    # Before: "rows found" versus "no rows match" answered a hidden value of any readable file.
    # Now both a matching and a non-matching description get the one refusal: nothing is read.
    root, outside, out = layout
    screen = naming(read_screen(out), outside / "secret.parquet")
    table = screen.table.copy()
    answers = set()
    for guess in ("x2 <= 0.5", "x2 > 1000000"):
        table.loc[1, "description"] = guess
        fields = {f: getattr(screen, f) for f in screen.__slots__}
        probe = type(screen)(**{**fields, "table": table.copy()})
        with pytest.raises(ValidationError) as caught:
            load_subpopulation(probe, 1, roots=[root])
        answers.add(str(caught.value))
    assert len(answers) == 1


def rewritten(out, tmp_path, change) -> bytes:
    """The table's bytes with its stored context changed by ``change(context)``."""
    table = pq.read_table(out)
    context = json.loads(table.schema.metadata[b"mcviz"])
    change(context)
    metadata = {**table.schema.metadata, b"mcviz": json.dumps(context).encode()}
    path = tmp_path / "crafted.parquet"
    pq.write_table(table.replace_schema_metadata(metadata), path)
    return path.read_bytes()


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c["columns"].update(evil="x"), r"'columns' has 1 unexpected entry \('evil'\)"),
    (lambda c: c.update(columns=["score"]), "'columns' is not a mapping"),
    (lambda c: c["columns"].pop("label"), "names no label column"),
    (lambda c: c["columns"].update(weight=7), "role 'weight' is not a text"),
    (lambda c: c.update(files="data.parquet"), "'files' is not a list"),
    (lambda c: c.update(files=[]), "'files' is not a list"),
    (lambda c: c.update(kinds={"x2": "weird"}), "'kinds' is not a mapping"),
    (lambda c: c.update(engine={"a": 1}), "'engine' is not a text"),
    (lambda c: c.update(exact="yes"), "'exact' is not true or false"),
    (lambda c: c.update(metric="NaN"), "'metric' is not a number"),
    (lambda c: c.update(metric_bound="x"), "'metric_bound' is not a number"),
    (lambda c: c.pop("n"), r"'n' is not an integer \(it is missing\)"),
    (lambda c: c.update(argmax=10**6), "'argmax' .* is not one of"),
])
def test_every_context_field_is_checked(layout, tmp_path, change, message):
    _, _, out = layout
    with pytest.raises(ValidationError, match=message):
        read_screen(rewritten(out, tmp_path, change))


def test_a_context_that_is_not_an_object_or_a_table_without_columns(layout, tmp_path):
    _, _, out = layout
    table = pq.read_table(out)
    path = tmp_path / "list.parquet"
    pq.write_table(table.replace_schema_metadata({b"mcviz": b"[1, 2]"}), path)
    with pytest.raises(ValidationError, match="not a JSON object"):
        read_screen(path)
    pq.write_table(table.drop(["sigma"]).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(ValidationError, match="lacks the column"):
        read_screen(path)
