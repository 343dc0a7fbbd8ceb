r"""Weighted logistic regression by Newton's method, with an offset (the fits of the fixes).

Minimises the weighted negative log-likelihood (cross-entropy, also for responses in [0, 1])

.. math::
    \ell(\beta) = \sum_i w_i \left[\log(1 + e^{\eta_i}) - y_i \eta_i\right],
    \qquad \eta_i = o_i + x_i^\top \beta,

whose gradient is :math:`X^\top w (\mu - y)` and Hessian :math:`X^\top \mathrm{diag}(w\mu(1-\mu))
X` with :math:`\mu = \sigma(\eta)`. Newton steps are halved until the loss does not increase; a
ridge of :math:`10^{-10} \sum_i w_i` on the Hessian's diagonal keeps separable designs finite.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["clip_probability", "fit_logistic", "logit", "mean_log_loss"]

EPSILON = 1e-12
"""Scores are clipped to [EPSILON, 1 - EPSILON] before taking logits."""


def clip_probability(p: np.ndarray) -> np.ndarray:
    """Return ``p`` clipped to [EPSILON, 1 - EPSILON]."""
    return np.clip(np.asarray(p, dtype=float), EPSILON, 1.0 - EPSILON)


def logit(p: np.ndarray) -> np.ndarray:
    """Return log(p / (1 - p)) of the clipped probabilities."""
    p = clip_probability(p)
    return np.log(p) - np.log1p(-p)


def _loss(eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(w @ (np.logaddexp(0.0, eta) - y * eta))


def mean_log_loss(eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Return the weighted mean cross-entropy of logits ``eta`` against responses ``y``."""
    return _loss(eta, y, w) / float(w.sum())


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, *,
                 offset: np.ndarray | None = None, max_iter: int = 100,
                 tol: float = 1e-10) -> np.ndarray:
    """Return the coefficients of a weighted logistic regression (no intercept added).

    Parameters
    ----------
    x : ndarray of shape (n, p)
        The design (add a column of ones for an intercept).
    y : ndarray of shape (n,)
        Responses in [0, 1].
    w : ndarray of shape (n,)
        Positive weights.
    offset : ndarray of shape (n,), optional
        A fixed term of the linear predictor.

    Returns
    -------
    ndarray of shape (p,)

    Examples
    --------
    Two groups with 1 of 4 and 3 of 4 positives: the fit is the group log-odds, ±log 3.

    >>> x = np.array([[1.0, 0], [1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0, 1]])
    >>> y = np.array([1.0, 0, 0, 0, 1, 1, 1, 0])
    >>> np.round(fit_logistic(x, y, np.ones(8)), 8).tolist() == [round(-np.log(3), 8),
    ...                                                           round(np.log(3), 8)]
    True
    """
    x = np.asarray(x, dtype=float)
    base = np.zeros(x.shape[0]) if offset is None else np.asarray(offset, dtype=float)
    beta = np.zeros(x.shape[1])
    ridge = 1e-10 * float(w.sum())
    eta = base + x @ beta
    loss = _loss(eta, y, w)
    for _ in range(max_iter):
        mu = expit(eta)
        gradient = x.T @ (w * (mu - y))
        hessian = (x * (w * mu * (1.0 - mu))[:, None]).T @ x
        hessian[np.diag_indices_from(hessian)] += ridge
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        scale = 1.0
        while True:
            candidate = beta - scale * step
            candidate_eta = base + x @ candidate
            candidate_loss = _loss(candidate_eta, y, w)
            if candidate_loss <= loss + 1e-12 * abs(loss) or scale < 1e-8:
                break
            scale /= 2.0
        done = abs(loss - candidate_loss) <= tol * max(1.0, abs(loss))
        beta, eta, loss = candidate, candidate_eta, candidate_loss
        if done and np.max(np.abs(scale * step)) < 1e-7:
            break
    return beta
