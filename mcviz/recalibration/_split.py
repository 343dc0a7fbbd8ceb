r"""The fit / evaluation split and the predictions of a split or of new scores.

The split is the guided search's (:func:`mcviz.search.split_rows`): stratified by score, the
rows in score order cut into strata of 20 consecutive rows and a random share of every stratum
held out, so both halves cover the score range alike. Within a run of tied scores the rows are
first put in the search's one tie order (:func:`mcviz.search.canonical_order`: a hash of weight
and covariates, never of labels), so the split -- and everything fitted on it -- depends neither
on the input order of tied rows nor on any label.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mcviz.errors import ValidationError
from mcviz.io import Predictions

__all__ = ["holdout_split", "rescored", "subset", "top_label"]


def holdout_split(pred: Predictions, holdout: float = 0.5, seed: int = 0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Return the sorted positions (score order) of the fit rows and of the held-out rows.

    Parameters
    ----------
    pred : Predictions
    holdout : float, default 0.5
        Share of the rows held out, in (0, 1): of every stratum of 20 consecutive rows,
        ``floor(holdout * 20 + U)`` are held out (U uniform on [0, 1)), so the expected share
        is exactly ``holdout``.
    seed : int, default 0

    Returns
    -------
    fit, held_out : ndarray of int64

    Raises
    ------
    ValidationError
        ``holdout`` outside (0, 1), or a split that leaves either side with fewer than 20 rows.

    Examples
    --------
    >>> pred = Predictions.from_arrays(np.linspace(0.01, 0.99, 200), np.arange(200) % 2)
    >>> fit, held = holdout_split(pred, 0.5, seed=1)
    >>> fit.size + held.size, bool(np.intersect1d(fit, held).size)
    (200, False)
    """
    if isinstance(holdout, bool) or not isinstance(holdout, int | float | np.floating) or not (
            0.0 < float(holdout) < 1.0):
        raise ValidationError(f"holdout must be a share in (0, 1), not {holdout!r}.")
    from mcviz.search import split_rows

    rng = np.random.default_rng(int(seed))
    fit_rows, held_rows, _ = split_rows(pred, float(holdout), rng, max_search=pred.n)
    if min(fit_rows.size, held_rows.size) < 20:
        raise ValidationError(
            f"a holdout of {holdout:g} leaves {fit_rows.size:,} rows to fit and "
            f"{held_rows.size:,} to judge on; each side needs 20 at least.")
    return fit_rows, held_rows


def subset(pred: Predictions, index: np.ndarray) -> Predictions:
    """Return the predictions restricted to ``index`` (sorted positions), without re-sorting.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.5, 0.5, 0.9], [0, 1, 0, 1])
    >>> subset(pred, np.array([1, 2, 3])).run_end.tolist()
    [False, True, True]
    """
    index = np.asarray(index)
    return _taken(pred, index, pred.score[index])


def rescored(pred: Predictions, score: np.ndarray) -> tuple[Predictions, np.ndarray]:
    """Return the predictions with new scores (sorted anew) and where each row went.

    Parameters
    ----------
    pred : Predictions
    score : ndarray of shape (n,)
        New scores in ``pred``'s order, in [0, 1].

    Returns
    -------
    Predictions
        The same rows, labels, weights and covariates in ascending order of the new scores;
        ``score_column`` is ``"<old>_recalibrated"``.
    ndarray of int64
        ``position[i]``: the new position of the row at old position ``i`` (to carry
        subpopulations over: ``np.sort(position[index])``).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.1, 0.5, 0.9], [0, 1, 1])
    >>> new, position = rescored(pred, np.array([0.3, 0.2, 0.95]))
    >>> new.score.tolist(), position.tolist()
    ([0.2, 0.3, 0.95], [1, 0, 2])
    """
    score = np.asarray(score, dtype=float)
    order = np.argsort(score, kind="stable")
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)
    new = _taken(pred, order, score[order], score_column=f"{pred.score_column}_recalibrated")
    return new, position


def top_label(pred: Predictions) -> Predictions:
    r"""Return the predictions as the chance of an error: :math:`\min(s, 1 - s)`, 1 on a miss.

    A row with :math:`s > 1/2` predicts the positive class; its error is :math:`1 - y` with
    predicted probability :math:`1 - s`; a row with :math:`s \le 1/2` errs when :math:`y = 1`, with
    probability :math:`s`. So :math:`E[y' \mid x] = s'` exactly when :math:`E[y \mid x] = s`
    (the same Bernoulli variance :math:`s'(1 - s') = s(1 - s)`): a calibrated model stays
    calibrated, and a model too sure of itself in a group (probabilities too far from 1/2 on both
    sides) under-predicts its errors there on both sides of 1/2 -- one sign, not two that cancel
    in the cumulative differences (the "top-label" or confidence calibration of a binary
    classifier). Binary responses only. The rows are sorted by the new score; ``score_column``
    is ``"<old>_error"``.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.2, 0.6, 0.9], [1, 0, 1])
    >>> error = top_label(pred)
    >>> error.score.round(2).tolist(), error.label.tolist()
    ([0.1, 0.2, 0.4], [0.0, 1.0, 1.0])
    """
    high = pred.score > 0.5
    score = np.where(high, 1.0 - pred.score, pred.score)
    label = np.where(high, 1.0 - pred.label, pred.label).astype(pred.label.dtype)
    order = np.argsort(score, kind="stable")
    new = _taken(pred, order, score[order], score_column=f"{pred.score_column}_error")
    return replace(new, label=_readonly(label[order]))


def _taken(pred: Predictions, rows: np.ndarray, score: np.ndarray, **changes) -> Predictions:
    """Return the rows ``rows`` of ``pred`` (in that order) with scores ``score`` (ascending)."""
    run_end = np.ones(rows.size, dtype=bool)
    run_end[:-1] = score[1:] != score[:-1]
    extra: dict = {"covariates": pred.covariates.iloc[rows].reset_index(drop=True)}
    if pred.predicted_class is not None:
        extra["predicted_class"] = pred.predicted_class[rows]
    if pred.true_class is not None:
        extra["true_class"] = pred.true_class[rows]
    return replace(pred, score=_readonly(score), label=_readonly(pred.label[rows]),
                   weight=_readonly(pred.weight[rows]), row=_readonly(pred.row[rows]),
                   run_end=_readonly(run_end), **extra, **changes)


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array
