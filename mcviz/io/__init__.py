r"""Read and validate prediction files into one immutable, score-sorted :class:`Predictions`.

A prediction file holds one row per observation: a score (the predicted probability of the
positive class) or several per-class probability columns, a label, an optional weight, and any
number of covariates. :func:`load_predictions` reads CSV/TSV (optionally gzip- or zip-compressed)
and Parquet from a path, a file-like object (a browser upload) or a DataFrame, checks every
column once, sorts by score once (the order inside a run of tied scores is arbitrary), and
returns a :class:`Predictions` whose arrays every other module reuses in that order.

Rules that every module relies on
---------------------------------
* **Sort order.** Arrays are in ascending score order; ``row`` holds each observation's 0-based
  row number in the input, so results can always point back at the file.
* **Ties.** ``run_end[i]`` is True when observation ``i`` is the last of a run of tied scores.
  Cumulative statistics are evaluated only there, which makes them independent of the order of
  tied rows (with no ties this is exactly the papers' definition).
* **Multi-class (top label).** With per-class probability columns the score is the largest
  probability, the predicted class is its argmax, and the response is 1 when the label equals
  the predicted class (Kelly & Smyth, Section 6; Guy et al. use the same reduction).
* **Missing covariate values** are kept, never dropped: ordinal covariates hold NaN (or NaT) and
  nominal ones a missing category. Downstream code treats "missing" as one more value that sorts
  after every observed value (see :mod:`mcviz.subpopulations`).
* **Invalid rows** (NaN or infinite scores, labels or weights; scores outside [0, 1]; unknown
  labels; non-positive weights) raise :class:`~mcviz.errors.ValidationError` unless the caller
  passes ``drop_invalid=True``; then they are dropped and :class:`LoadReport` says how many and why.
* **Covariates** are chosen, typed and checked at load time, but put in score order only when
  ``Predictions.covariates`` is first read (``mcviz metrics`` never reads them).
* **Unreadable input** (corrupt, truncated or hostile files of any supported format) raises
  :class:`~mcviz.errors.ValidationError` naming the file and the problem, never another error.
  Input over the budget (1 GiB, or a quarter of ``MCVIZ_MEMORY_BUDGET``), before or after
  decompression, is refused before it is materialised.

The package is split along the seams of that work: :mod:`~mcviz.io.readers` (bytes to a
DataFrame), :mod:`~mcviz.io.roles` (which column plays which role), :mod:`~mcviz.io.validation`
(score, label and weight checks), :mod:`~mcviz.io.covariates` (kinds and score order) and
:mod:`~mcviz.io.assembly` (all of it to one :class:`Predictions`, defined in
:mod:`~mcviz.io.predictions`); :mod:`~mcviz.io.arrow_path` reads a Parquet file to the same
:class:`Predictions` without pandas when it can. Names are imported on first use, so that
``from mcviz.io import Predictions`` does not import pandas. ``Predictions.from_arrays`` is
:func:`mcviz.io.arrays.from_arrays`, bound to the class here (the package is imported before
any of its modules), so that the class's module does not import the loader that builds it.
"""

from typing import TYPE_CHECKING

from mcviz.io.arrays import from_arrays as _from_arrays
from mcviz.io.predictions import Predictions as _Predictions
from mcviz.lazy import lazy_exports

_Predictions.from_arrays = staticmethod(_from_arrays)  # type: ignore[misc]

if TYPE_CHECKING:
    from mcviz.io.assembly import demo_path, load_demo, load_predictions
    from mcviz.io.maps import check_map, read_map
    from mcviz.io.model import VOID_P_VALUES, LoadReport, Roles
    from mcviz.io.predictions import Predictions, roles_sentence, validate_index
    from mcviz.io.readers import (
        DEFAULT_MAX_BYTES,
        Source,
        default_max_bytes,
        read_parquet_table,
        read_table,
    )
    from mcviz.io.roles import class_names, infer_roles, labels_are_classes
    from mcviz.io.validation import PROBABILITY_SUM_TOLERANCE

_HOME = {  # name -> the module defining it (imported on first use: pandas only where needed)
    "DEFAULT_MAX_BYTES": "readers",
    "PROBABILITY_SUM_TOLERANCE": "validation",
    "VOID_P_VALUES": "model",
    "LoadReport": "model",
    "Predictions": "predictions",
    "Roles": "model",
    "Source": "readers",
    "check_map": "maps",
    "class_names": "roles",
    "default_max_bytes": "readers",
    "demo_path": "assembly",
    "infer_roles": "roles",
    "labels_are_classes": "roles",
    "load_demo": "assembly",
    "load_predictions": "assembly",
    "read_map": "maps",
    "read_parquet_table": "readers",
    "read_table": "readers",
    "roles_sentence": "predictions",
    "validate_index": "predictions",
}

__all__ = [
    "DEFAULT_MAX_BYTES",
    "PROBABILITY_SUM_TOLERANCE",
    "VOID_P_VALUES",
    "LoadReport",
    "Predictions",
    "Roles",
    "Source",
    "check_map",
    "class_names",
    "default_max_bytes",
    "demo_path",
    "infer_roles",
    "labels_are_classes",
    "load_demo",
    "load_predictions",
    "read_map",
    "read_parquet_table",
    "read_table",
    "roles_sentence",
    "validate_index",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
