"""Local regression: LOESS curves with pointwise bands, k-NN means, reflected densities, LCS.

The package is split along its seams; every name is importable from ``mcviz.stats.smoothing``:

- :mod:`mcviz.stats.smoothing.loess`: LOESS fits with bands, exact-statistics binning (paper 001);
- :mod:`mcviz.stats.smoothing.neighbours`: nearest-neighbour radii, windows and k-NN means;
- :mod:`mcviz.stats.smoothing.density`: densities of scores reflected at 0 and 1 (R's ``density``);
- :mod:`mcviz.stats.smoothing.lcs`: the Local Calibration Score and its curve (paper 004, eq. (6)).
"""

from typing import TYPE_CHECKING

from mcviz.core.arrays import Z95, sorted_copy
from mcviz.core.arrays import readonly as _readonly
from mcviz.lazy import lazy_exports
from mcviz.stats.smoothing._common import check_span, counted_quantile, sorted_quantile
from mcviz.stats.smoothing._kernel import _moments, _tricube_both
from mcviz.stats.smoothing.curves import (
    _grid,
    loess_curve,
    loess_fit_from_counts,
    spiked_fits,
    spiked_fits_from_sums,
)
from mcviz.stats.smoothing.density import reflected_density
from mcviz.stats.smoothing.loess import LoessCurve, _loess_fits
from mcviz.stats.smoothing.neighbours import knn_mean, neighbour_radius

if TYPE_CHECKING:
    from mcviz.stats.smoothing.lcs import LocalCalibrationScore, local_calibration_score

    LocalCalibration = LocalCalibrationScore

__all__ = [
    "LocalCalibrationScore",
    "LoessCurve",
    "check_span",
    "counted_quantile",
    "knn_mean",
    "local_calibration_score",
    "loess_curve",
    "loess_fit_from_counts",
    "neighbour_radius",
    "reflected_density",
    "sorted_quantile",
    "spiked_fits",
    "spiked_fits_from_sums",
]

# Names the tests import from here (Z95 and sorted_copy live in mcviz.core.arrays).
_PRIVATE = (Z95, check_span, _readonly, _moments, _tricube_both, _grid, _loess_fits, spiked_fits,
            sorted_copy)

# the Local Calibration Score is imported on first use
_lazy_getattr, __dir__ = lazy_exports(__name__, {"LocalCalibrationScore": "lcs",
                                                 "local_calibration_score": "lcs"})


def __getattr__(name: str) -> object:
    """Import the Local Calibration Score's names on first use.

    ``LocalCalibration`` is its result's former name (kept for old imports; not in ``__all__``:
    :class:`mcviz.stats.groupings.LocalCalibration` is a different result).
    """
    return _lazy_getattr("LocalCalibrationScore" if name == "LocalCalibration" else name)
