"""Plain arrays to :class:`~mcviz.io.Predictions`: the library's entry point without a file.

Users call it as ``Predictions.from_arrays(score, label, ...)``: the package (:mod:`mcviz.io`)
binds :func:`from_arrays` to the class when it is first imported, which happens before any of
its modules (or ``mcviz``) can be used. It lives here, above both the class
(:mod:`mcviz.io.predictions`) and the loader it calls (:mod:`mcviz.io.assembly`, which builds
the class), so that the class's module never imports its loader: no import circle, and
``from mcviz.io import Predictions`` still imports no pandas (the loader is imported on the
first call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from mcviz.io.predictions import Predictions

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["from_arrays"]


def from_arrays(
    score: np.ndarray | Sequence[float],
    label: np.ndarray | Sequence[float],
    weight: np.ndarray | Sequence[float] | None = None,
    covariates: pd.DataFrame | Mapping[str, Sequence] | None = None,
    *,
    response: Literal["binary", "continuous"] = "binary",
) -> Predictions:
    """Validate and sort plain arrays: the library's entry point without a file.

    Every statistic of mcviz takes the result, ``(pred, *, index=None, ...)``.

    Parameters
    ----------
    score : array of shape (n,)
        Predicted probability of the positive class, in [0, 1].
    label : array of shape (n,)
        0/1 (or booleans) for a binary response; real values with
        ``response="continuous"``.
    weight : array of shape (n,), optional
        Positive weights (all ones when omitted).
    covariates : DataFrame or mapping of name to array of shape (n,), optional
        Columns to split, filter and order by (subpopulations, variables, LCS curves).
    response : {"binary", "continuous"}, default "binary"

    Returns
    -------
    Predictions
        Sorted once by ascending score; ``row`` gives each observation's input position.

    Raises
    ------
    ValidationError
        Invalid values, named by column with counts and rows (as for a file).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.9, 0.1, 0.5], [1, 0, 0])
    >>> pred.score.tolist(), pred.row.tolist()
    ([0.1, 0.5, 0.9], [1, 2, 0])
    >>> Predictions.from_arrays is from_arrays
    True
    """
    import pandas as pd

    from mcviz.io.assembly import load_predictions  # pandas: imported on the first call

    frame = pd.DataFrame({"score": np.asarray(score), "label": np.asarray(label)})
    if weight is not None:
        frame["weight"] = np.asarray(weight)
    if covariates is not None:
        covariate_frame = pd.DataFrame(covariates).reset_index(drop=True)
        for name in covariate_frame.columns:
            frame[name] = covariate_frame[name].to_numpy()
        names: Sequence[str] | None = list(covariate_frame.columns)
    else:
        names = []
    return load_predictions(
        frame,
        score="score",
        label="label",
        weight="weight" if weight is not None else False,
        covariates=names,
        response=response,
    )
