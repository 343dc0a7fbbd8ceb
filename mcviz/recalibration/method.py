r"""What a recalibration method is: one object that fits, applies and describes its map.

A method (:class:`RecalibrationMethod`) is registered once
(:func:`mcviz.recalibration.register_method`) and every surface reads it from the registry:
:class:`~mcviz.recalibration.Recalibrator` (fit, transform, describe), ``mcviz fix --method``
(the choices), the Fix page (the options, an unavailable one disabled with its reason),
``mcviz apply`` (a saved map names its method) and the budget (:meth:`cost`).

A new method subclasses :class:`RecalibrationMethod`, sets :attr:`name` and :attr:`title`, and
implements :meth:`fit`, :meth:`transform` and :meth:`describe`; its map's parameters are a
JSON-able dict.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

__all__ = ["RecalibrationMethod"]


class RecalibrationMethod:
    """One recalibration method (subclass it; one instance is registered).

    Attributes
    ----------
    name : str
        The name on every surface (``--method NAME``, the map's ``"method"``).
    title : str
        One line for the page's options.
    needs_covariates : bool
        The method fits terms on covariates (offered only when the data have some).
    packages : tuple of str
        Importable modules it needs (an optional extra); missing ones make it unavailable.
    seconds_per_row, bytes_per_row_covariate : float
        Its cost besides the judgement's (:meth:`cost`), measured by ``benchmarks/bench_fix.py``.
    searches : bool
        Its fit runs the guided search on the fit rows (the budget counts the search).
    """

    name: str = ""
    title: str = ""
    needs_covariates: bool = False
    packages: tuple[str, ...] = ()
    seconds_per_row: float = 2.5e-6
    bytes_per_row_covariate: float = 0.0
    searches: bool = False

    def unavailable(self) -> str | None:
        """Why the method cannot run here (a package is missing), or None.

        Examples
        --------
        >>> class Needy(RecalibrationMethod):
        ...     name, packages = "needy", ("no_such_module_xyz",)
        >>> Needy().unavailable()
        "needs the package 'no_such_module_xyz' (pip install no_such_module_xyz)"
        """
        for package in self.packages:
            if importlib.util.find_spec(package) is None:
                return f"needs the package {package!r} (pip install {package})"
        return None

    def fit(self, fix: Any, pred: Any, w: Any,
            progress: Callable[[float, str], None] | None) -> dict:
        """Fit the map on ``pred`` with weights ``w`` (mean 1); return its JSON-able parameters.

        ``fix`` is the :class:`~mcviz.recalibration.Recalibrator` (its options; the method may
        add to ``fix.notes`` and set ``fix.covariate_kinds``, the covariates the map reads).
        """
        raise NotImplementedError

    def transform(self, fix: Any, params: dict, pred: Any) -> Any:
        """Return the fixed scores of ``pred``'s rows (score order)."""
        raise NotImplementedError

    def describe(self, params: dict) -> str:
        """Say in one line what the map does to a score."""
        raise NotImplementedError

    def coefficients(self, params: dict) -> list[float]:
        """Return the map's coefficients, when it has a few (else empty)."""
        return []

    def cost(self, rows: int, covariates: int) -> tuple[float, float]:
        """Return (bytes, seconds) of the fit beyond the judgement's own cost."""
        return (float(rows) * max(int(covariates), 1) * self.bytes_per_row_covariate,
                float(rows) * self.seconds_per_row)
