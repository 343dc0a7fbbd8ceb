"""Where is a probabilistic classifier miscalibrated? The public API of mcviz.

Statistics modules take a :class:`Predictions` (or arrays) and return small frozen
result objects; figure builders (``mcviz.figures``) take those results.
"""

from mcviz.cumulative import (
    BROWNIAN_RANGE_MEAN,
    CumulativeResult,
    brownian_range_sf,
    cumulative_differences,
    decimate_path,
)
from mcviz.errors import ValidationError
from mcviz.io import (
    LoadReport,
    Predictions,
    Roles,
    infer_roles,
    load_demo,
    load_predictions,
    read_table,
)

__version__ = "0.1.0"

__all__ = [
    "BROWNIAN_RANGE_MEAN",
    "CumulativeResult",
    "LoadReport",
    "Predictions",
    "Roles",
    "ValidationError",
    "__version__",
    "brownian_range_sf",
    "cumulative_differences",
    "decimate_path",
    "infer_roles",
    "load_demo",
    "load_predictions",
    "read_table",
]
