r"""Weightings from the appendices of "Measuring multi-calibration": proportional, low prevalence.

Every scheme multiplies the existing weights (all ones when unweighted) by a factor, so user
weights such as survey weights are kept:

* ``"proportional"`` (Appendix A, after La Cava et al.): :math:`W_j = 1/S_j`, or with a
  regularisation :math:`\rho > 0` the variant :math:`W_j = 1/\max(S_j, \rho)`;
* ``"proportional-shifted"`` (Appendix A): :math:`W_j = 1/(S_j + \rho)`;
* ``"low-prevalence"`` (Appendix B): :math:`W_j = 1/A` when :math:`R_j = 1` and 1 when
  :math:`R_j = 0`, with :math:`A` the prevalence - the weighted mean response
  :math:`\sum_j W_j R_j / \sum_j W_j` under the existing weights (the paper's
  :math:`\sum_j R_j / n` when unweighted).

:func:`reweight` returns a new :class:`~mcviz.io.Predictions` whose ``weight_column`` names the
combination (e.g. ``"fnlwgt × proportional(ρ=0.01)"``), so every downstream statistic is
weighted (``pred.weighted`` is True) and says so.

Appendix C (responses other than 0/1) needs no weights: the variance estimate of its eq. (6) is
:func:`mcviz.core.sigma.sigma_adjacent` (over runs of tied scores), chosen automatically by
:func:`mcviz.stats.cumulative.cumulative_differences` when ``pred.response_kind == "continuous"``.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; Appendices A, B and C.
.. [2] W. La Cava, E. Lett, G. Wan, "Fair admission risk prediction with proportional
   multicalibration", CHIL 2023.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from mcviz.errors import ValidationError, describe_rows
from mcviz.io import Predictions

__all__ = ["SCHEMES", "Scheme", "prevalence", "reweight", "reweighted_magnitudes", "scheme_factors"]

Scheme = Literal["proportional", "proportional-shifted", "low-prevalence"]
SCHEMES: tuple[str, ...] = ("proportional", "proportional-shifted", "low-prevalence")
"""The weighting schemes :func:`reweight` accepts."""


def scheme_factors(pred: Predictions, scheme: Scheme, *, rho: float | None = None) -> np.ndarray:
    r"""Return the factor each observation's weight is multiplied by (score order).

    Parameters
    ----------
    pred : Predictions
    scheme : {"proportional", "proportional-shifted", "low-prevalence"}
    rho : float, optional
        Regularisation :math:`\rho > 0`: ``"proportional"`` uses :math:`1/\max(S, \rho)` when
        given (else :math:`1/S`, which needs every score positive); ``"proportional-shifted"``
        needs it; ``"low-prevalence"`` takes none.

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValidationError
        Unknown scheme; a bad or missing ``rho``; zero scores without ``rho``; low-prevalence
        weights for real-valued responses or without any positive response.

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.25, 0.5], [0, 1])
    >>> scheme_factors(pred, "proportional").tolist()
    [4.0, 2.0]
    >>> scheme_factors(pred, "proportional", rho=0.4).tolist()
    [2.5, 2.0]
    >>> scheme_factors(pred, "proportional-shifted", rho=0.5).tolist()
    [1.3333333333333333, 1.0]
    >>> scheme_factors(pred, "low-prevalence").tolist()
    [1.0, 2.0]
    """
    if scheme not in SCHEMES:
        raise ValidationError(
            f"weighting must be one of {', '.join(SCHEMES)}, not {scheme!r}."
        )
    if rho is not None and (not np.isfinite(rho) or rho <= 0):
        raise ValidationError(f"rho must be a positive number, not {rho!r}.")
    score = pred.score
    if scheme == "proportional":
        if rho is not None:
            return 1.0 / np.maximum(score, rho)  # Appendix A, regularised
        zero = np.flatnonzero(score <= 0)
        if zero.size:
            raise ValidationError(
                f"column {pred.score_column!r}: {describe_rows(np.sort(pred.row[zero]), pred.n)}"
                " have score 0, so the proportional weight 1/S is infinite; give a "
                "regularisation rho (1/max(S, rho)).",
                column=pred.score_column,
            )
        return 1.0 / score  # Appendix A
    if scheme == "proportional-shifted":
        if rho is None:
            raise ValidationError("the proportional-shifted weighting 1/(S + rho) needs rho.")
        return 1.0 / (score + rho)  # Appendix A, shifted
    if rho is not None:
        raise ValidationError("the low-prevalence weighting takes no rho.")
    if pred.response_kind != "binary":
        raise ValidationError(
            f"column {pred.label_column!r}: low-prevalence weights need 0/1 responses, and the "
            "responses are real-valued.",
            column=pred.label_column,
        )
    positive = pred.label == 1
    if not positive.any():
        raise ValidationError(
            f"column {pred.label_column!r}: no positive responses, so the prevalence is 0 and "
            "the low-prevalence weight 1/A is undefined.",
            column=pred.label_column,
        )
    return np.where(positive, 1.0 / prevalence(pred), 1.0)  # Appendix B


def _describe(scheme: str, rho: float | None) -> str:
    return f"{scheme}(ρ={rho:g})" if rho is not None else scheme


def reweight(pred: Predictions, scheme: Scheme, *, rho: float | None = None) -> Predictions:
    r"""Return new predictions with a weighting of Appendix A or B of [1] applied.

    The new weight is the old weight (all ones when unweighted) times :func:`scheme_factors`.

    Parameters
    ----------
    pred : Predictions
    scheme : {"proportional", "proportional-shifted", "low-prevalence"}
    rho : float, optional
        See :func:`scheme_factors`.

    Returns
    -------
    Predictions
        Same order and arrays except ``weight`` (read-only) and ``weight_column``, which names
        the combination, e.g. ``"fnlwgt × proportional(ρ=0.01)"``; ``"low-prevalence"`` also
        sets ``weights_depend_on_label`` (its Brownian and classical p-values are then NaN).

    Examples
    --------
    >>> pred = Predictions.from_arrays([0.25, 0.5], [0, 1], weight=[2.0, 1.0])
    >>> new = reweight(pred, "proportional")
    >>> new.weight.tolist(), new.weight_column, new.weighted
    ([8.0, 2.0], 'weight × proportional', True)
    """
    factors = scheme_factors(pred, scheme, rho=rho)
    weight = pred.weight * factors
    weight.flags.writeable = False
    name = _describe(scheme, rho)
    column = f"{pred.weight_column} × {name}" if pred.weighted else name
    depends = pred.weights_depend_on_label or scheme == "low-prevalence"  # Appendix B: 1/A on R=1
    return dataclasses.replace(pred, weight=weight, weight_column=column,
                               weights_depend_on_label=depends)


def reweighted_magnitudes(weighted_z: float, unweighted_z: float, prevalence: float) -> str:
    r"""Say that the magnitudes of a low-prevalence run come from its reweighting.

    Under the weights of Appendix B every positive counts :math:`1/A` times (:math:`A` the
    prevalence), so :math:`D/\sigma`, ECE and observed/expected describe the reweighted
    problem (positives and negatives as if equally common), not the scores as probabilities;
    the unweighted :math:`D/\sigma` is put beside them. The command line and the pages say this
    sentence.

    Examples
    --------
    >>> print(reweighted_magnitudes(88.2, 1.88, 0.24))
    Magnitudes come from the low-prevalence reweighting (Appendix B): every positive counts 4.17 times, so D/σ (88.2), ECE and O/E describe the reweighted problem, not the scores as probabilities; unweighted, D/σ is 1.88.
    """  # noqa: E501
    return (f"Magnitudes come from the low-prevalence reweighting (Appendix B): every positive "
            f"counts {1.0 / prevalence:.3g} times, so D/σ ({weighted_z:.3g}), ECE and O/E "
            f"describe the reweighted problem, not the scores as probabilities; unweighted, "
            f"D/σ is {unweighted_z:.3g}.")


def prevalence(pred: Predictions) -> float:
    """Return the weighted mean response :math:`A` (the prevalence of Appendix B)."""
    return float(np.sum(pred.weight * pred.label) / np.sum(pred.weight))
