"""The registry of recalibration methods: each registered once, read by every surface.

``mcviz fix --method`` offers :func:`method_names`, the Fix page :func:`methods` (an
unavailable one disabled with :meth:`~mcviz.recalibration.RecalibrationMethod.unavailable`),
:class:`~mcviz.recalibration.Recalibrator` and ``mcviz apply`` find a map's method with
:func:`get_method`, and :func:`~mcviz.recalibration.fix_estimate` reads its cost.

Examples
--------
>>> method_names()
('findings', 'platt', 'isotonic', 'beta', 'boost')
>>> get_method("platt").title
'Platt: logistic on logit s'
"""

from __future__ import annotations

from mcviz.errors import ValidationError
from mcviz.recalibration._builtin import BetaMethod, BoostMethod, IsotonicMethod, PlattMethod
from mcviz.recalibration._findings import FindingsMethod
from mcviz.recalibration.method import RecalibrationMethod

__all__ = ["get_method", "method_names", "methods", "register_method", "unregister_method"]

_METHODS: dict[str, RecalibrationMethod] = {}


def register_method(method: RecalibrationMethod) -> RecalibrationMethod:
    """Register ``method`` (an instance) under its name; return it.

    Raises
    ------
    ValueError
        Not a :class:`RecalibrationMethod`, no name, or the name is taken.
    """
    if not isinstance(method, RecalibrationMethod) or not method.name:
        raise ValueError("register a RecalibrationMethod instance with a name")
    if method.name in _METHODS:
        raise ValueError(f"a recalibration method {method.name!r} is already registered")
    _METHODS[method.name] = method
    return method


def unregister_method(name: str) -> None:
    """Remove a registered method (a test's toy method)."""
    _METHODS.pop(name, None)


def methods() -> tuple[RecalibrationMethod, ...]:
    """Return the registered methods, in the order they were registered."""
    return tuple(_METHODS.values())


def method_names() -> tuple[str, ...]:
    """Return the registered methods' names."""
    return tuple(_METHODS)


def get_method(name: str) -> RecalibrationMethod:
    """Return the method called ``name``.

    Raises
    ------
    ValidationError
        No method has that name (the message lists them).
    """
    method = _METHODS.get(name) if isinstance(name, str) else None
    if method is None:
        raise ValidationError(f"method must be one of {', '.join(_METHODS)}, not {name!r}.")
    return method


for _method in (FindingsMethod(), PlattMethod(), IsotonicMethod(), BetaMethod(), BoostMethod()):
    register_method(_method)
