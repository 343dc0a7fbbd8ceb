r"""The multi-calibration metric M of paper 000 over a set of subpopulations, and its table.

For every subpopulation :math:`k` (:math:`k = 0` is the full population) with members
:math:`i^k_1 < \dots < i^k_{n_k}` in score order:

.. math::
    D_k = \max_j C^k_j - \min_j C^k_j, \qquad
    C^k_j = \frac{\sum_{m \le j} (R_{i^k_m} - S_{i^k_m}) W_{i^k_m}}{\sum_{m \le n_k} W_{i^k_m}},
    \quad C^k_0 = 0 \qquad \text{(eqs. (1)-(2))}

.. math::
    \sigma_k = \frac{\sqrt{\sum_j S_{i^k_j}(1 - S_{i^k_j}) W_{i^k_j}^2}}{\sum_j W_{i^k_j}}
    \qquad \text{(eq. (5))}

.. math:: M = \max_{0 \le k \le \ell} D_k \, \sigma_0 / \sigma_k \qquad \text{(eq. (4))}

with :math:`0/0 = 0`. As everywhere in mcviz, :math:`C^k` is evaluated only at the last member
of each run of tied scores within the subpopulation. Appendix G's companions are reported too:
"multi-ablate" :math:`\max_k D_k` and "expectation" :math:`2\sqrt{2/\pi}\,\sigma_{k'}` for the
:math:`k'` attaining the multi-ablate maximum. For real-valued responses :math:`\sigma_k` is
Appendix C's eq. (6) over the subpopulation's tie runs
(:func:`mcviz.core.sigma.sigma_adjacent`).

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5), Appendix C eq. (6), Appendices F and G.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mcviz.core.arrays import readonly as _readonly
from mcviz.core.brownian import BROWNIAN_RANGE_MEAN, brownian_range_sf
from mcviz.core.evaluator import Evaluator
from mcviz.core.metric import multicalibration_metric
from mcviz.core.ratio import safe_ratio
from mcviz.core.sigma import resolve_sigma_method
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.settings import SubpopulationSettings
from mcviz.subpopulations import (
    Subpopulation,
    SubpopulationSet,
    full_population,
    generate_subpopulations,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MulticalRepeats",
    "MulticalResult",
    "multicalibration",
    "multicalibration_repeats",
]

TABLE_COLUMNS = (
    "id", "depth", "description", "size", "weight_total", "kuiper", "sigma", "kuiper_z",
    "p_value", "normalized",
)


@dataclass(frozen=True, slots=True, eq=False)
class MulticalResult:
    r"""The metric M of eq. (4) and the per-subpopulation statistics behind it.

    Attributes
    ----------
    subpopulations : tuple of Subpopulation
        ``subpopulations[0]`` is the full population.
    size, weight_total : ndarray
        :math:`n_k` and :math:`\sum_j W_{i^k_j}`.
    kuiper : ndarray
        :math:`D_k` (eq. (2), tie rule).
    sigma : ndarray
        :math:`\sigma_k` (eq. (5); Appendix C eq. (6) for real-valued responses).
    kuiper_z : ndarray
        :math:`D_k / \sigma_k` (0/0 = 0, d/0 = inf).
    p_value : ndarray
        P(range of standard Brownian motion on [0, 1] > :math:`D_k/\sigma_k`); NaN when the
        weights depend on the labels (Appendix B: use
        :func:`~mcviz.stats.significance.null_distribution`).
    normalized : ndarray
        :math:`D_k \sigma_0 / \sigma_k` (0/0 = 0).
    metric : float
        :math:`M`, eq. (4).
    metric_z : float
        :math:`M / \sigma_0`.
    ablate : float
        "Multi-ablate" :math:`\max_k D_k` (Appendix G).
    expectation : float
        :math:`2\sqrt{2/\pi}\,\sigma_{k'}` for the subpopulation attaining ``ablate``.
    argmax : Subpopulation
        The (first) subpopulation attaining M.
    ablate_argmax : Subpopulation
        The (first) subpopulation attaining the multi-ablate maximum.
    notice : str or None
        Passed on from subpopulation generation.
    """

    subpopulations: tuple[Subpopulation, ...]
    size: np.ndarray
    weight_total: np.ndarray
    kuiper: np.ndarray
    sigma: np.ndarray
    kuiper_z: np.ndarray
    p_value: np.ndarray
    normalized: np.ndarray
    metric: float
    metric_z: float
    ablate: float
    expectation: float
    argmax: Subpopulation
    ablate_argmax: Subpopulation
    notice: str | None = None

    @property
    def n_subpopulations(self) -> int:
        """Number of subpopulations besides the full population."""
        return len(self.subpopulations) - 1

    @property
    def table(self) -> pd.DataFrame:
        """Tabulate every subpopulation, in id order (sort it as you like).

        Columns: id, depth, description, size, weight_total, kuiper, sigma, kuiper_z, p_value,
        normalized.
        """
        import pandas as pd

        return pd.DataFrame({
            "id": np.array([s.id for s in self.subpopulations], dtype=np.int64),
            "depth": np.array([s.depth for s in self.subpopulations], dtype=np.int64),
            "description": [s.description for s in self.subpopulations],
            "size": self.size,
            "weight_total": self.weight_total,
            "kuiper": self.kuiper,
            "sigma": self.sigma,
            "kuiper_z": self.kuiper_z,
            "p_value": self.p_value,
            "normalized": self.normalized,
        }, columns=list(TABLE_COLUMNS))


def multicalibration(
    pred: Predictions,
    subpopulations: SubpopulationSet | Sequence[Subpopulation] | None = None,
    *,
    sigma_method: str = "auto",
) -> MulticalResult:
    r"""Compute the multi-calibration metric M (eq. (4)) over the given subpopulations.

    Parameters
    ----------
    pred : Predictions
    subpopulations : SubpopulationSet or sequence of Subpopulation, optional
        From :func:`~mcviz.subpopulations.generate_subpopulations`,
        :func:`~mcviz.subpopulations.group_subpopulations` or both. The full population is put
        first when it is missing (``None``: the full population alone).
    sigma_method : {"auto", "bernoulli", "adjacent"}
        ``"auto"``: eq. (5) for binary responses, Appendix C eq. (6) otherwise.

    Returns
    -------
    MulticalResult

    Raises
    ------
    ValidationError
        Empty subpopulations, or members outside the predictions.

    Notes
    -----
    :math:`D_k` and :math:`\sigma_k` come from the shared block evaluator
    (:class:`~mcviz.core.evaluator.Evaluator`: eqs. (1), (2), (5) at the ends of runs of tied
    scores, Appendix C eq. (6) over tie runs) and :math:`M` from the one eq. (4)
    (:func:`~mcviz.core.metric.multicalibration_metric`).

    Examples
    --------
    Appendix F with q = 3 and the middle block as a group: eqs. (17) and (23) give
    D_0 = (2q+3)/(8q(q+1)) = 0.09375 and D_1 = (2q+3)/(8(q-2)(q+1)) = 0.28125.

    >>> q = 3; n = q * (q + 1); j = np.arange(1, n + 1)
    >>> score = (2 * j + q) / (2 * (q + 1) ** 2)
    >>> label = np.concatenate([[1] * b + [0] * (q + 1 - b) for b in range(1, q + 1)])
    >>> middle = (j > q + 1) & (j <= n - q - 1)
    >>> pred = Predictions.from_arrays(score, label, covariates={"middle": middle})
    >>> from mcviz.subpopulations import group_subpopulations
    >>> result = multicalibration(pred, group_subpopulations(pred, ["middle"]))
    >>> round(float(result.kuiper[0]), 12), round(float(result.kuiper[1]), 12)
    (0.09375, 0.28125)
    """
    notice = None
    if isinstance(subpopulations, SubpopulationSet):
        notice = subpopulations.notice
        subpopulations = subpopulations.subpopulations
    subpopulations = tuple(subpopulations or ())
    if not subpopulations or subpopulations[0].conditions or subpopulations[0].size != pred.n:
        subpopulations = (full_population(pred), *subpopulations)
    method = resolve_sigma_method(sigma_method, pred.response_kind)
    for sub in subpopulations:
        if sub.size == 0:
            raise ValidationError(f"subpopulation {sub.id} ({sub.description}) has no members.")
        if sub.index[0] < 0 or sub.index[-1] >= pred.n:
            raise ValidationError(
                f"subpopulation {sub.id} ({sub.description}) holds positions outside the "
                f"{pred.n:,} predictions."
            )

    evaluator = Evaluator.from_predictions(pred)
    stats = evaluator.statistics(
        pred.label - pred.score, [sub.index for sub in subpopulations], method)
    value = multicalibration_metric(stats.kuiper, stats.sigma)  # eq. (4), sigma_0 = 0 rule
    kuiper, sigma, kuiper_z = stats.kuiper, stats.sigma, stats.kuiper_z
    best = value.argmax
    metric = value.metric
    ablate_best = int(np.argmax(kuiper))
    return MulticalResult(
        subpopulations=subpopulations,
        size=stats.size,
        weight_total=stats.weight_total,
        kuiper=kuiper,
        sigma=sigma,
        kuiper_z=kuiper_z,
        p_value=_readonly(np.full(kuiper_z.size, np.nan) if pred.weights_depend_on_label
                          else np.asarray(brownian_range_sf(kuiper_z), dtype=float).reshape(-1)),
        normalized=value.normalized,
        metric=metric,
        metric_z=safe_ratio(metric, float(sigma[0])),
        ablate=float(kuiper[ablate_best]),
        expectation=float(BROWNIAN_RANGE_MEAN * sigma[ablate_best]),
        argmax=subpopulations[best],
        ablate_argmax=subpopulations[ablate_best],
        notice=notice,
    )


@dataclass(frozen=True, slots=True, eq=False)
class MulticalRepeats:
    r"""The metrics over several seeds of Algorithm 1, as in the tables of paper 000 (App. G).

    Each ``*_mean`` is the mean over the seeds and each ``*_se`` the standard error of that mean
    with Bessel's correction (sample standard deviation with ``ddof=1`` over
    :math:`\sqrt{r}`); the paper's "±" lines are ``2 * se``. With one seed the errors are NaN.

    Attributes
    ----------
    seeds : tuple of int
    results : tuple of MulticalResult
        One per seed, in order.
    metric, metric_z, ablate, expectation : ndarray
        The per-seed values.
    """

    seeds: tuple[int, ...]
    results: tuple[MulticalResult, ...]
    metric: np.ndarray
    metric_z: np.ndarray
    ablate: np.ndarray
    expectation: np.ndarray

    def mean(self, name: str) -> float:
        """Mean over the seeds of ``metric``, ``metric_z``, ``ablate`` or ``expectation``."""
        return float(np.mean(getattr(self, name)))

    def se(self, name: str) -> float:
        """Return the standard error of the mean (Bessel's correction); NaN with a single seed."""
        values = getattr(self, name)
        if values.size < 2:
            return float("nan")
        return float(np.std(values, ddof=1) / np.sqrt(values.size))

    def summary(self) -> pd.DataFrame:
        """Mean, standard error and the paper's ± (2 SE) of each metric."""
        import pandas as pd

        names = ("metric", "metric_z", "ablate", "expectation")
        return pd.DataFrame({
            "metric": list(names),
            "mean": [self.mean(n) for n in names],
            "se": [self.se(n) for n in names],
            "plus_minus": [2 * self.se(n) for n in names],
        })


def multicalibration_repeats(
    pred: Predictions,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    covariates: Sequence[str] | None = None,
    n_subpopulations: int = SubpopulationSettings.n_subpopulations,
    min_size: int = SubpopulationSettings.min_size,
    groups: Sequence[Subpopulation] = (),
    sigma_method: str = "auto",
) -> MulticalRepeats:
    """Run Algorithm 1 and the metric once per seed (user groups are added to every run).

    Raises
    ------
    ValidationError
        No seeds, or the errors of the functions called.
    """
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValidationError("repeats need at least one seed.")
    results = []
    for seed in seeds:
        generated = generate_subpopulations(
            pred, covariates=covariates, n_subpopulations=n_subpopulations, min_size=min_size,
            seed=seed,
        )
        combined = _combine(generated.subpopulations, groups)
        result = multicalibration(pred, combined, sigma_method=sigma_method)
        results.append(_with_notice(result, generated.notice))
    return MulticalRepeats(
        seeds=seeds,
        results=tuple(results),
        metric=_readonly(np.array([r.metric for r in results])),
        metric_z=_readonly(np.array([r.metric_z for r in results])),
        ablate=_readonly(np.array([r.ablate for r in results])),
        expectation=_readonly(np.array([r.expectation for r in results])),
    )


def _combine(
    generated: Sequence[Subpopulation], groups: Sequence[Subpopulation]
) -> tuple[Subpopulation, ...]:
    """Put the groups after the generated subpopulations, renumbered."""
    first = len(generated)
    renumbered = tuple(
        Subpopulation(first + i, g.depth, g.conditions, g.description, g.index)
        for i, g in enumerate(groups)
    )
    return (*generated, *renumbered)


def _with_notice(result: MulticalResult, notice: str | None) -> MulticalResult:
    if notice is None:
        return result
    fields = {name: getattr(result, name) for name in MulticalResult.__slots__}
    fields["notice"] = notice
    return MulticalResult(**fields)
