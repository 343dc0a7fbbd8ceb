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
Appendix C's eq. (6) over the subpopulation's members.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1)-(5), Appendix C eq. (6), Appendices F and G.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcviz.cumulative import BROWNIAN_RANGE_MEAN, brownian_range_sf, sigma_adjacent
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.subpopulations import (
    Subpopulation,
    SubpopulationSet,
    full_population,
    generate_subpopulations,
)

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


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


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
        P(range of standard Brownian motion on [0, 1] > :math:`D_k/\sigma_k`).
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


def _quotient(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Divide elementwise with 0/0 = 0 and d/0 = inf (paper 000 after (4))."""
    positive = denominator > 0
    safe = np.where(positive, denominator, 1.0)
    return np.where(
        positive, numerator / safe, np.where(numerator <= 1e-15, 0.0, np.inf)
    )


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
    :math:`D_k` is computed by a cumulative sum over the members (already in score order) and
    read at the ends of runs of tied scores; :math:`\sigma_k` from sums over the members
    (eqs. (1), (2), (4), (5) of [1]).

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
    if sigma_method == "auto":
        sigma_method = "bernoulli" if pred.response_kind == "binary" else "adjacent"
    if sigma_method not in ("bernoulli", "adjacent"):
        raise ValidationError(
            f"sigma_method must be auto, bernoulli or adjacent, not {sigma_method!r}."
        )
    for sub in subpopulations:
        if sub.size == 0:
            raise ValidationError(f"subpopulation {sub.id} ({sub.description}) has no members.")
        if sub.index[0] < 0 or sub.index[-1] >= pred.n:
            raise ValidationError(
                f"subpopulation {sub.id} ({sub.description}) holds positions outside the "
                f"{pred.n:,} predictions."
            )

    count = len(subpopulations)
    kuiper = np.empty(count)
    sigma = np.empty(count)
    weight_total = np.empty(count)
    size = np.array([sub.size for sub in subpopulations], dtype=np.int64)
    weighted = pred.weighted
    residual = pred.label - pred.score
    weighted_residual = residual * pred.weight if weighted else residual
    variance = pred.score * (1.0 - pred.score) * pred.weight**2
    tie_group = None if pred.run_end.all() else np.cumsum(
        np.concatenate(([True], pred.run_end[:-1]))
    )
    buffer = np.empty(max(size.max(), 1))  # work buffers: no fresh pages per subpopulation
    index_buffer = np.empty(buffer.size, dtype=np.intp)  # take() is fastest with intp indices
    group_buffer = None if tie_group is None else np.empty(buffer.size, dtype=tie_group.dtype)
    ends_buffer = None if tie_group is None else np.empty(buffer.size, dtype=bool)
    for k, sub in enumerate(subpopulations):
        m = sub.index.size
        full = m == pred.n  # the full population: nothing to gather
        index = index_buffer[:m]
        np.copyto(index, sub.index, casting="safe")
        total = float(pred.weight[index].sum()) if weighted else float(m)
        if full:
            steps = np.cumsum(weighted_residual, out=buffer[:m])  # eq. (1), times the total
        else:
            steps = np.take(weighted_residual, index, out=buffer[:m], mode="clip")
            np.cumsum(steps, out=steps)  # eq. (1), times the total weight
        if tie_group is not None:
            groups = tie_group if full else np.take(
                tie_group, index, out=group_buffer[:m], mode="clip")
            ends = ends_buffer[:m]
            np.not_equal(groups[1:], groups[:-1], out=ends[:-1])
            ends[-1] = True
            steps = steps[ends]
        kuiper[k] = (max(steps.max(), 0.0) - min(steps.min(), 0.0)) / total  # eq. (2)
        if sigma_method == "bernoulli":
            terms = variance if full else np.take(variance, index, out=buffer[:m], mode="clip")
            sigma[k] = np.sqrt(terms.sum()) / total  # eq. (5)
        else:
            sigma[k] = sigma_adjacent(residual[index], pred.weight[index])  # Appendix C (6)
        weight_total[k] = total
    kuiper_z = _quotient(kuiper, sigma)
    normalized = _quotient(kuiper * sigma[0], sigma)  # eq. (4), 0/0 = 0
    normalized[0] = kuiper[0]  # "the argument to the max for k = 0 is simply D_0" (even if 0/0)
    best = int(np.argmax(normalized))
    metric = float(normalized[best])
    ablate_best = int(np.argmax(kuiper))
    return MulticalResult(
        subpopulations=subpopulations,
        size=_readonly(size),
        weight_total=_readonly(weight_total),
        kuiper=_readonly(kuiper),
        sigma=_readonly(sigma),
        kuiper_z=_readonly(kuiper_z),
        p_value=_readonly(np.asarray(brownian_range_sf(kuiper_z), dtype=float).reshape(-1)),
        normalized=_readonly(normalized),
        metric=metric,
        metric_z=float(_quotient(np.array(metric), np.array(sigma[0]))),
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
    n_subpopulations: int = 1000,
    min_size: int = 10,
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
