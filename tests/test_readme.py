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
