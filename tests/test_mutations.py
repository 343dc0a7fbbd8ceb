"""scripts/mutate.py: every listed mutation of the statistics and the dashboard is caught."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mutate.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("mutate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_pattern_still_matches_the_code():
    done = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_a_pattern_that_matches_twice_or_never_stops_the_script(tmp_path):
    mutate = _load_script()
    (tmp_path / "m.py").write_text("x = 1\nx = 1\ny = 2\n")
    twice = mutate.Mutation("twice", "m.py", r"^x = 1$", "x = 2", ("t",))
    never = mutate.Mutation("never", "m.py", r"^z = 1$", "z = 2", ("t",))
    for mutation in (twice, never):
        with pytest.raises(mutate.PatternError, match="must be exactly once"):
            mutate.apply(mutation, tmp_path)
    scoped = mutate.Mutation("scoped", "m.py", r"^([ \t]*)x = 1$", r"\1x = 2", ("t",),
                             within=r"^def f\(")
    (tmp_path / "m.py").write_text("x = 1\n\n\ndef f():\n    x = 1\n\n\ndef g():\n    x = 1\n")
    assert mutate.apply(scoped, tmp_path) == "x = 2"
    assert (tmp_path / "m.py").read_text() == (
        "x = 1\n\n\ndef f():\n    x = 2\n\n\ndef g():\n    x = 1\n")


def test_every_mutation_is_caught():
    # About two minutes: each mutation runs only its own tests on a copy of the project.
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SURVIVED" not in done.stdout
