"""``python -m mcviz``: the command-line interface."""

from mcviz.cli import main

raise SystemExit(main())
