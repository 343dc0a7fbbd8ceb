"""Local regression: LOESS curves with pointwise bands, k-NN means, reflected densities, LCS.

The package is split along its seams; every name is importable from ``mcviz.smoothing``:

- :mod:`mcviz.smoothing.loess`: LOESS fits with bands, exact-statistics binning (paper 001);
- :mod:`mcviz.smoothing.neighbours`: nearest-neighbour radii, windows and k-NN means;
- :mod:`mcviz.smoothing.density`: densities of scores reflected at 0 and 1 (R's ``density``);
- :mod:`mcviz.smoothing.lcs`: the Local Calibration Score and its curve (paper 004, eq. (6)).
"""

from mcviz.core._arrays import readonly as _readonly
from mcviz.smoothing._common import Z95, _check_span, sorted_copy, sorted_quantile
from mcviz.smoothing._kernel import _moments, _tricube_both
from mcviz.smoothing.curves import _grid, _spiked_fits, loess_curve
from mcviz.smoothing.density import reflected_density
from mcviz.smoothing.lcs import LocalCalibrationScore, local_calibration_score
from mcviz.smoothing.loess import LoessCurve, _loess_fits
from mcviz.smoothing.neighbours import knn_mean, neighbour_radius

LocalCalibration = LocalCalibrationScore
"""Former name of :class:`LocalCalibrationScore` (kept for old imports; not in ``__all__``:
:class:`mcviz.groupings.LocalCalibration` is a different result)."""

__all__ = [
    "LocalCalibrationScore",
    "LoessCurve",
    "knn_mean",
    "local_calibration_score",
    "loess_curve",
    "neighbour_radius",
    "reflected_density",
    "sorted_quantile",
]

# Private names used by mcviz.variables and the tests.
_PRIVATE = (Z95, _check_span, _readonly, _moments, _tricube_both, _grid, _loess_fits, _spiked_fits,
            sorted_copy)
