"""Names of a package imported on first use (PEP 562), so that importing it stays cheap.

``from mcviz.io import Predictions`` then loads :mod:`mcviz.io.predictions` alone, not every
module of the package (and pandas with them): the command line's ``mcviz metrics`` on a Parquet
file runs without pandas.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports", "require_module"]


def lazy_exports(
    package: str, home: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return a package's ``__getattr__`` and ``__dir__`` for the names of ``home``.

    ``home`` maps each exported name to the submodule defining it; the first access imports
    that submodule and keeps the value in the package's namespace. A submodule's own name
    (``mcviz.core.sigma`` after ``import mcviz.core``) imports it, as an eager package would
    have.

    Examples
    --------
    >>> getattr_, dir_ = lazy_exports("mcviz.io", {"LoadReport": "model"})
    >>> getattr_("LoadReport").__module__, "LoadReport" in dir_()
    ('mcviz.io.model', True)
    """
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> object:
        module = home.get(name)
        if module is None:
            if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *home})

    return __getattr__, __dir__


def require_module(name: str, *, needed_for: str, install: str) -> None:
    """Refuse, in one line, work that needs an optional module that cannot be imported.

    Called before the work starts (not when the module is first used, after it), so that a
    missing extra costs the user nothing.

    Raises
    ------
    mcviz.errors.ValidationError
        "<needed_for> needs <name>, which cannot be imported here (...): <install>."

    Examples
    --------
    >>> require_module("json", needed_for="reading", install="nothing")
    >>> require_module("no_such_module_h41", needed_for="--engine x", install="pip install x")
    Traceback (most recent call last):
    ...
    mcviz.errors.ValidationError: --engine x needs no_such_module_h41, which cannot be imported \
here (No module named 'no_such_module_h41'): pip install x.
    """
    from mcviz.errors import ValidationError

    try:
        importlib.import_module(name)
    except ImportError as error:
        raise ValidationError(f"{needed_for} needs {name}, which cannot be imported here "
                              f"({error}): {install}.") from None
