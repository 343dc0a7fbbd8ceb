"""README keeps exactly two set-up commands, and CI runs the test command verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)


def test_exactly_two_setup_commands():
    commands = setup_commands()
    assert len(commands) == 2
    assert "streamlit run app.py" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert setup_commands()[1] in ci_lines


def test_readme_notebook_example_runs():
    # The notebook helpers shown in the README run as written (figures built, not shown).
    import plotly.graph_objects as go

    readme = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)\n```", readme, flags=re.DOTALL)
              if "from mcviz import plot" in b]
    assert len(blocks) == 1
    shown = []
    namespace = {}
    original = go.Figure.show
    go.Figure.show = lambda self, *a, **k: shown.append(self)
    try:
        exec(compile(blocks[0], "README.md", "exec"), namespace)
    finally:
        go.Figure.show = original
    assert len(shown) == 8
    assert all(isinstance(figure, go.Figure) for figure in shown)
