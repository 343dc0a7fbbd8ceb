r"""Held-out statistics of two sets of scores of the same rows, and their changes beyond noise.

:func:`before_after` is the one place where a fix is judged: the same held-out rows, the same
family of subpopulations, the model's scores (before) and the fixed ones (after).

Changes of log loss. :math:`\Delta_i = \ell_i^{after} - \ell_i^{before}` per held-out row; the
change is the weighted mean :math:`\bar\Delta = \sum_i W_i \Delta_i / \sum_i W_i` with the 95%
interval :math:`\bar\Delta \pm 1.96\,\widehat{se}`,
:math:`\widehat{se}^2 = \frac{k}{k-1}\sum_i W_i^2 (\Delta_i - \bar\Delta)^2 / (\sum_i W_i)^2`
(the ratio-estimator variance; the held-out rows are independent of the fit, so the interval is
valid conditionally on the fitted map). A change is *better* when the whole interval lies below
0, *worse* when it lies above 0, and *no meaningful change* otherwise (:class:`Change`).

Bands. For each covariate, its deciles on the held-out rows (ordinal) or its levels (nominal,
the 20 heaviest), and its missing values: a band's calibration-in-the-large
:math:`z = \sum_b W_i (y_i - s_i) / \sqrt{\sum_b W_i^2 s_i (1 - s_i)}` (the mean residual over
its standard deviation under calibration) before and after. A band *moved beyond noise* when
:math:`|z_{after}| > c_K` and :math:`|z_{after}| > |z_{before}|`: it is miscalibrated after the
fix, and more than before. The bound allows for the held-out labels' noise over all
:math:`K` bands (:func:`band_shifts`): for a fix that leaves every band calibrated, each
:math:`z_{after}` is approximately standard normal (the held-out rows are independent of the
fitted map; the central limit theorem over a band's rows), so by Bonferroni
:math:`P(\max_k |z_k| > c_K) \le K \cdot 2(1 - \Phi(c_K)) = \alpha` with
:math:`c_K = \Phi^{-1}(1 - \alpha / (2K))` (:func:`band_bound`; :math:`\alpha` =
:data:`mcviz.settings.FIX_BAND_ALPHA`, 0.05): 3.15 for the 31 bands of four covariates, where
a fixed bound of 2.5 names some band for about 30% of perfect fixes. Measured by simulation
(``tests/recalibration/test_judge.py::test_the_band_bound_holds_its_level_on_calibrated_rows``):
labels drawn from the true probabilities, 31 bands, 2 x 10^4 rows, the true probabilities as
the fix: some band beyond :math:`c_K` in 5.05% of 2,000 draws (101; beyond 2.5: 28.1%). That is
the bound alone; a band is named only when it also got worse than before, which is rarer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcviz.io import Predictions
from mcviz.recalibration._logistic import clip_probability
from mcviz.settings import FIX_BAND_ALPHA
from mcviz.text import format_signed

__all__ = ["BandShift", "Change", "FixSide", "band_bound", "band_shifts", "before_after",
           "judged_as_challenger", "loss_change"]

Z_95 = 1.959963984540054
MAX_LEVELS = 20
DECILES = 10


@dataclass(frozen=True, slots=True)
class Change:
    """A mean change (after minus before; negative is better) and its 95% interval.

    Examples
    --------
    >>> Change(mean=-0.002, low=-0.003, high=-0.001).direction
    'better'
    >>> Change(mean=0.001, low=-0.0001, high=0.002).direction
    'no meaningful change'
    >>> Change(mean=0.002, low=0.0001, high=0.004).direction
    'worse'
    """

    mean: float
    low: float
    high: float

    @property
    def direction(self) -> str:
        """"better" (interval below 0), "worse" (above 0) or "no meaningful change"."""
        if self.high < 0:
            return "better"
        if self.low > 0:
            return "worse"
        return "no meaningful change"

    @property
    def worse(self) -> bool:
        """True when the interval lies above 0 (worse beyond noise)."""
        return self.low > 0

    def as_json(self) -> dict:
        """``{"mean", "low", "high", "direction"}``."""
        return {"mean": self.mean, "low": self.low, "high": self.high,
                "direction": self.direction}

    def sentence(self, what: str) -> str:
        """E.g. "held-out log loss: better (−0.0012 per row, 95% CI −0.002 to −0.0004)"."""
        return (f"{what}: {self.direction} ({format_signed(self.mean)} per row, 95% CI "
                f"{format_signed(self.low)} to {format_signed(self.high)})")


@dataclass(frozen=True, slots=True, eq=False)
class FixSide:
    r"""Held-out statistics of one set of scores (before or after the fix).

    Attributes
    ----------
    metric, metric_z : float
        M (eq. (4)) and :math:`M/\sigma_0` over the judged family.
    metric_p : float or None
        Monte-Carlo p-value of M under perfect calibration (when ``null_draws`` was given).
    ece, smece, log_loss, brier : float
    findings_kuiper_z : tuple of float
        :math:`D/\sigma` of each judged finding on the held-out rows.
    terms_kuiper_z : tuple of float
        :math:`D/\sigma` of each term's finding of the fix (not in M).
    """

    metric: float
    metric_z: float
    metric_p: float | None
    ece: float
    smece: float
    log_loss: float
    brier: float
    findings_kuiper_z: tuple[float, ...]
    terms_kuiper_z: tuple[float, ...]

    def as_json(self, findings: Sequence[str], terms: Sequence[str]) -> dict:
        """Return the ``before`` / ``after`` object of ``mcviz fix --json``."""
        return {"metric": self.metric, "metric_z": self.metric_z, "metric_p": self.metric_p,
                "ece": self.ece, "smece": self.smece, "log_loss": self.log_loss,
                "brier": self.brier,
                "findings": [{"description": d, "holdout_kuiper_z": z}
                             for d, z in zip(findings, self.findings_kuiper_z, strict=True)],
                "terms": [{"description": d, "holdout_kuiper_z": z}
                          for d, z in zip(terms, self.terms_kuiper_z, strict=True)]}


@dataclass(frozen=True, slots=True)
class BandShift:
    """One band of a covariate on the held-out rows: its calibration z before and after.

    Attributes
    ----------
    covariate : str
    band : str
        The band in words (``age in [30, 41)``, ``channel = web``, ``age missing``).
    rows : int
    z_before, z_after : float
        Calibration-in-the-large z (module docstring).
    bound : float
        The |z| beyond noise over all the bands judged (:func:`band_bound`).
    """

    covariate: str
    band: str
    rows: int
    z_before: float
    z_after: float
    bound: float

    @property
    def moved(self) -> bool:
        """Miscalibrated after the fix beyond noise, and more than before."""
        return abs(self.z_after) > self.bound and abs(self.z_after) > abs(self.z_before)

    def as_json(self) -> dict:
        """``{"covariate", "band", "rows", "z_before", "z_after", "bound", "moved"}``."""
        return {"covariate": self.covariate, "band": self.band, "rows": self.rows,
                "z_before": self.z_before, "z_after": self.z_after, "bound": self.bound,
                "moved": self.moved}


def row_log_loss(pred: Predictions) -> np.ndarray:
    """Per-row log loss of ``pred``'s scores (clipped), score order."""
    s = clip_probability(pred.score)
    return -(pred.label * np.log(s) + (1.0 - pred.label) * np.log1p(-s))


def loss_change(before: Predictions, after: Predictions, position: np.ndarray,
                index: np.ndarray | None = None) -> Change:
    """Return the change of mean log loss over ``before``'s rows (or ``index``), with its CI.

    ``position[i]`` is where ``before``'s row ``i`` sits in ``after`` (module docstring).
    """
    delta = row_log_loss(after)[position] - row_log_loss(before)
    w = before.weight
    if index is not None:
        delta, w = delta[index], w[index]
    total = float(w.sum())
    mean = float(w @ delta) / total
    k = delta.size
    se = float(np.sqrt(np.sum(w**2 * (delta - mean) ** 2) / total**2 * k / max(k - 1, 1)))
    return Change(mean=mean, low=mean - Z_95 * se, high=mean + Z_95 * se)


def _side(pred: Predictions, family: list, ids: Sequence[int], terms: list, null_draws: int,
          seed: int) -> FixSide:
    from mcviz.stats.binning import calibration_metrics
    from mcviz.stats.measures import smooth_ece
    from mcviz.stats.multical import multicalibration

    result = multicalibration(pred, family)
    metric_p = None
    if null_draws:
        from mcviz.stats.significance import null_distribution

        metric_p = float(null_distribution(pred, family, draws=null_draws, seed=seed).p_value)
    metrics = calibration_metrics(pred)
    terms_z: tuple[float, ...] = ()
    if terms:
        terms_z = tuple(float(z) for z in multicalibration(pred, terms).kuiper_z[1:])
    return FixSide(metric=float(result.metric), metric_z=float(result.metric_z),
                   metric_p=metric_p, ece=float(metrics.ece_equal_width),
                   smece=float(smooth_ece(pred).smece), log_loss=float(metrics.log_loss),
                   brier=float(metrics.brier),
                   findings_kuiper_z=tuple(float(result.kuiper_z[k]) for k in ids),
                   terms_kuiper_z=terms_z)


def before_after(before: Predictions, new_scores: np.ndarray, family: list, ids: Sequence[int],
                 terms: list, *, null_draws: int = 0, seed: int = 0,
                 compare: Mapping[str, Any] | None = None):
    """Judge new scores of the same rows against the model's: the one before/after computation.

    Parameters
    ----------
    before : Predictions
        The held-out rows with the model's scores.
    new_scores : ndarray
        The fixed scores of those rows (``before``'s order).
    family : list of Subpopulation
        The judged family on ``before``'s rows (full population first or not: M adds it);
        ``ids`` the positions in it of the findings whose D/sigma is reported.
    terms : list of Subpopulation
        Further subpopulations (a fix's terms) whose D/sigma is reported, not in M.
    compare : mapping, optional
        When given, the options of :func:`mcviz.compare_models` (``covariates``,
        ``thresholds``, ``seed``, ``progress``): the fix is also judged as a challenger is,
        model A the scores before and model B the fixed scores of the same held-out rows
        (:func:`judged_as_challenger`).

    Returns
    -------
    after : Predictions
        The same rows, sorted by the new scores.
    position : ndarray
        Where each row of ``before`` sits in ``after``.
    sides : tuple of FixSide
        Before and after.
    change : Change
        The change of held-out log loss.
    comparison : ModelComparison or None
        The comparison of before (A) and after (B) when ``compare`` was given.
    """
    from mcviz.recalibration._split import rescored
    from mcviz.subpopulations import Subpopulation

    after, position = rescored(before, new_scores)

    def moved(subs: list) -> list:
        return [Subpopulation(s.id, s.depth, s.conditions, s.description,
                              np.sort(position[s.index])) for s in subs]

    first = _side(before, family, ids, terms, null_draws, seed)
    second = _side(after, moved(family), ids, moved(terms), null_draws, seed)
    comparison = (None if compare is None
                  else judged_as_challenger(before, new_scores, **dict(compare)))
    return after, position, (first, second), loss_change(before, after, position), comparison


def judged_as_challenger(before: Predictions, new_scores: np.ndarray, **options: Any):
    """Compare the fixed scores with the model's on the same rows, as a challenger is compared.

    :func:`mcviz.compare_models` with model A the model's scores of ``before`` (the held-out
    rows) and model B ``new_scores`` (``before``'s order), named ``"<score>_recalibrated"``:
    the paired Brier and log-loss differences with their intervals, the paired cumulative
    differences, the groups where the fix is worse (``regressions``) or better
    (``improvements``), confirmed on the comparison's own held-out share of these rows and
    Holm-adjusted, and the net benefit of A and B. ``options``: compare_models' keywords.
    """
    from mcviz.compare import compare_models

    n_input = before.report.n_read if before.report.n_read else before.n
    scores = np.full(n_input, np.nan)  # compare_models reads B per input row: before.row
    scores[before.row] = np.asarray(new_scores, dtype=float)
    return compare_models(before, scores, name_b=f"{before.score_column}_recalibrated",
                          **options)


def _band_codes(values, kind: str) -> tuple[np.ndarray, list[str]]:
    """Band of each row (-1: none) and the bands' words, for one covariate."""
    import pandas as pd

    series = pd.Series(values).reset_index(drop=True)
    missing = series.isna().to_numpy()
    if kind == "nominal":
        counts = series.value_counts()
        levels = list(counts.index[:MAX_LEVELS])
        lookup = {level: k for k, level in enumerate(levels)}
        codes = series.map(lookup).to_numpy(dtype=float, na_value=-1.0).astype(np.int64)
        words = [f"= {level}" for level in levels]
    else:
        if pd.api.types.is_datetime64_any_dtype(series):
            numbers = np.array(pd.DatetimeIndex(series).asi8, dtype=float)
        else:
            numbers = np.array(series.to_numpy(dtype=float, na_value=np.nan), dtype=float)
        numbers[missing] = np.nan
        present = numbers[~missing]
        codes, words = np.zeros(series.size, dtype=np.int64), []
        if present.size:  # deciles of the finite values; an infinite one widens an end band
            finite = present[np.isfinite(present)]
            inner = (np.quantile(finite, np.linspace(0, 1, DECILES + 1)) if finite.size
                     else np.empty(0))
            edges = np.unique(np.concatenate(([present.min()], inner, [present.max()])))
            codes = np.searchsorted(edges[1:-1], np.nan_to_num(numbers, nan=edges[0]),
                                    side="right")
            b = [f"{v:.4g}" for v in edges]
            words = [f"in [{b[k]}, {b[k + 1]}{']' if k == edges.size - 2 else ')'}"
                     for k in range(edges.size - 1)] or [f"= {b[0]}"]
    codes = np.where(missing, len(words), codes)
    if missing.any():
        words = [*words, "missing"]
    return codes, words


def band_shifts(before: Predictions, after: Predictions, position: np.ndarray,
                covariates: Sequence[str]) -> tuple[BandShift, ...]:
    """Return the bands of each covariate on the held-out rows, before and after (module doc)."""
    y, w = before.label, before.weight
    s0 = before.score
    s1 = after.score[position]
    out = []  # (covariate, band, rows, z before, z after); the bound needs their number
    for name in covariates:
        codes, words = _band_codes(before.covariates[name], before.covariate_kinds[name])
        keep = codes >= 0
        c = codes[keep]
        size = len(words)

        def z(score, c=c, keep=keep, size=size):
            residual = np.bincount(c, (w * (y - score))[keep], size)
            variance = np.bincount(c, (w**2 * score * (1 - score))[keep], size)
            return residual / np.sqrt(np.maximum(variance, 1e-300))

        rows = np.bincount(c, minlength=size)
        z0, z1 = z(s0), z(s1)
        out += [(name, f"{name} {words[k]}", int(rows[k]), float(z0[k]), float(z1[k]))
                for k in range(size) if rows[k]]
    bound = band_bound(len(out))
    return tuple(BandShift(covariate=c, band=b, rows=n, z_before=z0, z_after=z1, bound=bound)
                 for c, b, n, z0, z1 in out)


def band_bound(bands: int, alpha: float = FIX_BAND_ALPHA) -> float:
    r"""Return :math:`c_K = \Phi^{-1}(1 - \alpha / (2K))` for ``bands`` = K (module docstring).

    Examples
    --------
    >>> round(band_bound(1), 2), round(band_bound(31), 2)
    (1.96, 3.15)
    """
    from scipy.stats import norm

    return float(norm.isf(alpha / (2 * max(int(bands), 1))))
