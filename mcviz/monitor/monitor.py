r"""Calibration over time: a per-period view of every segment, and alarms.

The alarms' family-wise false-alarm rate is at most alpha over all segments and the whole
horizon.

The statistics are the core's: the cumulative path along time (eq. (1) of [1], periods as the
ordered variable), its Kuiper range (eq. (2)) and scale (eq. (5)), the Brownian-range tail for
the p-value of the post-reference stretch; the alarm rule is derived in
:mod:`mcviz.monitor.alarm`.

Cost: one pass over the rows per per-period sum (``np.bincount`` on cell codes), a gather per
segment to find the membership patterns; no sort by time or per segment (a row's period is
computed from its timestamp); the null simulation works on the patterns x periods cells.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eqs. (1), (2), (5).
.. [2] M. Tygert, "Cumulative deviation of a subpopulation from the full population", J. Big
   Data 10, 2023 (cumulative differences along any ordered covariate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from mcviz.budget import Budget, check, monitor_estimate
from mcviz.core import brownian_range_sf, cumulative_path, path_kuiper_ks, safe_ratio
from mcviz.core.sigma import sigma_from_variance
from mcviz.errors import ValidationError
from mcviz.io import Predictions
from mcviz.monitor.alarm import (
    CellSums,
    adjusted_p,
    null_maxima,
    scan,
    threshold,
    window_plan,
)
from mcviz.monitor.periods import Periods, infer_time_column, make_periods
from mcviz.monitor.segments import membership_atoms, monitored_segments
from mcviz.settings import MonitorSettings
from mcviz.subpopulations import Subpopulation, conditions_words, full_population
from mcviz.text import format_interval, format_points, p_phrase

__all__ = ["MonitorResult", "MonitorSettings", "SeriesMonitor", "monitor_calibration",
           "monitor_estimate"]

Z95 = 1.959963984540054
@dataclass(frozen=True, slots=True, eq=False)
class SeriesMonitor:
    r"""The per-period view and the alarm of one series (the full population or a segment).

    Per-period arrays have shape (P,); ``path`` and ``path_x`` have P + 1 points.

    Attributes
    ----------
    subpopulation : Subpopulation
        The segment's conditions, description and members (score order).
    count, weight : ndarray
        Rows and :math:`\sum W` per period.
    mean_score, mean_response : ndarray
        Weighted means per period (NaN for a period without rows of the segment).
    band : ndarray
        Half-width of the 95% interval of the mean response under calibration,
        :math:`1.96\sqrt{\sum W^2 S(1-S)}/\sum W`.
    z : ndarray
        The standardised gap relative to the reference, eq. (1) of :mod:`mcviz.monitor.alarm`
        on the one-period window (the heat map).
    reference_gap : float
        :math:`\hat\delta`: mean response minus mean score over the reference periods.
    path, path_x : ndarray
        The cumulative difference along time (eq. (1) of [1], divided by the series' total
        weight) at the origin and at each period's end, and the cumulative weight share.
    sigma : float
        Eq. (5) of [1] for the whole path: the 1/sqrt(n) triangle's height.
    kuiper_z, kuiper_p : float
        :math:`D/\sigma` of the post-reference stretch of the path and P(Brownian range >
        :math:`D/\sigma`) (calibration of the monitored periods, not a change test).
    statistic : ndarray
        :math:`T(b)` at each period (eq. (2) of :mod:`mcviz.monitor.alarm`; NaN in the
        reference).
    alarm : bool
    first_alarm : int or None
        The first period whose statistic exceeds the threshold.
    change_start, change_end : int
        The first and last period of the window ``shift`` is measured over: with an alarm, the
        window with the largest :math:`|z|` (eq. (1) of :mod:`mcviz.monitor.alarm`) over the
        horizon, where the change shows most; without one, every monitored period.
    shift, ci_low, ci_high : float
        Mean of R - S over that window (without an alarm: over every monitored period) minus
        the reference gap :math:`\hat\delta`, and its 95% interval
        :math:`\pm 1.96\sqrt{\Delta v/\Delta n^2 + V/N^2}` (the interval does not allow for
        the window having been chosen by the scan).
    p_adjusted : float
        Eq. (4) of :mod:`mcviz.monitor.alarm`: adjusted for every series and period.
    sentence : str
    """

    subpopulation: Subpopulation
    count: np.ndarray
    weight: np.ndarray
    mean_score: np.ndarray
    mean_response: np.ndarray
    band: np.ndarray
    z: np.ndarray
    reference_gap: float
    path: np.ndarray
    path_x: np.ndarray
    sigma: float
    kuiper_z: float
    kuiper_p: float
    statistic: np.ndarray
    alarm: bool
    first_alarm: int | None
    change_start: int
    change_end: int
    shift: float
    ci_low: float
    ci_high: float
    p_adjusted: float
    sentence: str

    @property
    def details(self) -> str:
        """The statistics behind :attr:`sentence` (for a details line or hover help)."""
        return (f"adjusted {p_phrase(self.p_adjusted)} (eq. (4): over every segment and "
                f"period); the interval does not allow for the window chosen by the scan")

    @property
    def description(self) -> str:
        """The segment's exact filter expression (``"full population"`` for the full one).

        Links and machines read it; people read :attr:`words`.
        """
        return self.subpopulation.description

    @property
    def words(self) -> str:
        """The segment in plain words, as the findings say a group (no filter operator).

        >>> from mcviz.subpopulations import Condition, Subpopulation
        >>> view = dict.fromkeys(SeriesMonitor.__dataclass_fields__)
        >>> view["subpopulation"] = Subpopulation(1, 1, (Condition("carrier", "==", "9E"),),
        ...                                       'carrier == "9E"', np.arange(3))
        >>> SeriesMonitor(**view).words
        'carrier is 9E'
        """
        conditions = self.subpopulation.conditions
        return conditions_words(conditions) if conditions else "full population"


@dataclass(frozen=True, slots=True, eq=False)
class MonitorResult:
    r"""The monitor of one score over time.

    Attributes
    ----------
    periods : Periods
        The time column, the period labels, the reference.
    series : tuple of SeriesMonitor
        ``series[0]`` is the full population, then the segments.
    alpha : float
    threshold : float
        :math:`c_\alpha` of the alarm rule.
    null_maxima : ndarray
        The simulated maxima :math:`M^*` (read-only).
    null_method : {"bernoulli", "normal"}
    n, seed : int
    seconds : float
    notices : tuple of str
    """

    periods: Periods
    series: tuple[SeriesMonitor, ...]
    alpha: float
    threshold: float
    null_maxima: np.ndarray
    null_method: str
    n: int
    seed: int
    seconds: float
    notices: tuple[str, ...]

    @property
    def full(self) -> SeriesMonitor:
        """The full population's view."""
        return self.series[0]

    @property
    def segments(self) -> tuple[SeriesMonitor, ...]:
        """The segments' views."""
        return self.series[1:]

    @property
    def alarms(self) -> tuple[SeriesMonitor, ...]:
        """The series that alarmed, by first alarm then adjusted p-value."""
        fired = [s for s in self.series if s.alarm]
        return tuple(sorted(fired, key=lambda s: (s.first_alarm, s.p_adjusted)))

    def label(self, period: int | None) -> str | None:
        """Return the label of ``period`` (None for None)."""
        return None if period is None else self.periods.labels[period]


def monitor_calibration(
    pred: Predictions,
    *,
    settings: MonitorSettings | None = None,
    index: np.ndarray | None = None,
    progress: Callable[[float, str], None] | None = None,
    budget: Budget | int | str | None = None,
) -> MonitorResult:
    r"""Watch calibration over time in the full population and in every segment.

    Parameters
    ----------
    pred : Predictions
        Binary (or top-label) responses; the time column is one of its covariates.
    settings : MonitorSettings, optional
        What is watched and how (:class:`mcviz.settings.MonitorSettings`; None: its defaults):
        ``time`` (the time column: dates, datetimes, text that parses as dates, or numbers;
        inferred when None, :func:`~mcviz.monitor.periods.infer_time_column`); ``period``
        (``"day"``, ``"week"``, ``"month"``, ``"quarter"`` or a count of equal-width periods);
        ``reference`` (the reference periods are those ending by it; None: the first quarter
        of the time range); ``segments`` (covariates whose every level is monitored);
        ``filters`` (filter expressions, one monitored segment each); ``search_reference``
        (also monitor the confirmed findings of :func:`~mcviz.search_subpopulations` run on
        the reference periods, over ``covariates``; None: all but the time column);
        ``alpha`` (family-wise false-alarm rate over every series and every monitored
        period); ``draws`` (null draws :math:`B`; :math:`\alpha(B+1) \ge 1` is needed);
        ``null`` (how the null is simulated, ``"auto"``, ``"bernoulli"`` or ``"normal"``:
        :mod:`mcviz.monitor.alarm`); ``seed``.
    index : ndarray of int, optional
        Monitor only these positions (score order).
    progress : callable(fraction, text), optional
        Called as the work advances; raising from it cancels.
    budget : Budget, int, str or None
        Refused when :func:`monitor_estimate` exceeds it (None: the default budget).

    Returns
    -------
    MonitorResult

    Raises
    ------
    ValidationError
        Bad time column or periods (:func:`~mcviz.monitor.periods.make_periods`), bad segments,
        non-binary responses, bad parameters.

    Examples
    --------
    >>> import pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> n = 6000
    >>> day = rng.integers(0, 120, n)
    >>> group = rng.choice(["a", "b", "c"], n)
    >>> score = rng.uniform(0.1, 0.9, n)
    >>> drift = (group == "b") & (day >= 80)
    >>> label = rng.random(n) < np.clip(score + 0.25 * drift, 0, 1)
    >>> when = pd.Timestamp("2024-01-01") + pd.to_timedelta(day, unit="D")
    >>> pred = Predictions.from_arrays(score, label, covariates={
    ...     "when": when, "group": pd.Categorical(group)})
    >>> watch = MonitorSettings(period="month", segments=("group",), draws=199)
    >>> result = monitor_calibration(pred, settings=watch)
    >>> [(s.description, result.label(s.first_alarm)) for s in result.alarms]
    [('group == b', '2024-03-01')]
    """
    started = perf_counter()
    chosen = MonitorSettings() if settings is None else settings
    _check(pred, chosen)
    alpha, n_draws, seed = chosen.alpha, chosen.draws, chosen.seed
    say = progress or (lambda fraction, text: None)
    rows = np.arange(pred.n) if index is None else _positions(pred, index)
    say(0.0, "periods")
    column, periods = _time_periods(pred, rows, chosen.time, chosen.period, chosen.reference)
    cost = {"periods": periods.n_periods - periods.n_reference, "n_draws": n_draws}
    found, notice = _segments(pred, rows, periods, column, chosen, whole=index is None,
                              cost=cost, budget=budget)
    say(0.1, "cells")
    cells, sums = _cells(pred, rows, periods, found)
    plan = window_plan(periods.n_periods - periods.n_reference)
    check(monitor_estimate(rows.size, segment_rows=sum(sub.size for sub in found),
                           series=1 + len(found), atoms=cells.n.shape[0],
                           windows=plan.start.size, all_periods=periods.n_periods, **cost),
          budget)  # the null draws' batches sized as they will be
    observed = scan(sums["x"], sums["n"], sums["v"], periods.n_reference, plan)
    rng = np.random.default_rng(seed)
    draws = null_maxima(cells, periods.n_reference, plan, n_draws=n_draws, method=chosen.null,
                        rng=rng,
                        progress=lambda f: say(0.15 + 0.8 * f, "null draws"))
    c = threshold(draws.maxima, alpha)
    everyone = (full_population(pred) if index is None else Subpopulation(
        0, 0, (), "full population", rows), *found)
    series = tuple(
        _series(sub, k, sums, observed[k], periods, plan, c, draws.maxima)
        for k, sub in enumerate(everyone))
    draws.maxima.flags.writeable = False
    return MonitorResult(periods=periods, series=series, alpha=float(alpha), threshold=c,
                         null_maxima=draws.maxima, null_method=draws.method, n=int(rows.size),
                         seed=int(seed), seconds=perf_counter() - started,
                         notices=(*periods.notes, *((notice,) if notice else ())))


def _segments(pred: Predictions, rows: np.ndarray, periods: Periods, column: str,
              chosen: MonitorSettings, *, whole: bool, cost: dict[str, int],
              budget: Budget | int | str | None) -> tuple[tuple[Subpopulation, ...], str | None]:
    """The monitored segments (levels, filters, the reference's findings) restricted to ``rows``.

    The budget is checked before (with an upper bound on the segments' rows) and after they are
    found (with their actual rows).
    """
    guess = (len(list(chosen.segments)), len(list(chosen.filters)),
             5 * bool(chosen.search_reference))  # upper bound
    check(monitor_estimate(rows.size, segment_rows=rows.size * sum(guess), series=1 + sum(guess),
                           **cost), budget)
    found, notice = monitored_segments(
        pred, levels=chosen.segments, filters=chosen.filters,
        search_covariates=chosen.covariates, exclude=(column,),
        search_rows=rows[periods.code < periods.n_reference] if chosen.search_reference else None,
        alpha=chosen.alpha, seed=chosen.seed)
    found = found if whole else tuple(_restricted(sub, rows, pred.n) for sub in found)
    check(monitor_estimate(rows.size, segment_rows=sum(sub.size for sub in found),
                           series=1 + len(found), **cost), budget)
    return found, notice


def _time_periods(pred: Predictions, rows: np.ndarray, time: str | None, period: str | int,
                  reference: object) -> tuple[str, Periods]:
    if rows.size < 2:
        raise ValidationError(f"monitoring needs at least 2 rows, not {rows.size}.")
    column = time if time is not None else infer_time_column(pred.covariates)
    if column is None:
        raise ValidationError("no time column: name one (time=...; the covariates hold no "
                              "dates, and no text or integer column named like a time).")
    pred.require_covariate(column, " as the time column")
    return column, make_periods(pred.covariates[column].iloc[rows], column=column, period=period,
                                reference=reference, rows=pred.row[rows])


def _check(pred: Predictions, settings: MonitorSettings) -> None:
    if not isinstance(settings, MonitorSettings):
        raise ValidationError(f"settings must be MonitorSettings, not "
                              f"{type(settings).__name__}.")
    if not isinstance(pred, Predictions):
        raise ValidationError(f"monitor needs Predictions, not {type(pred).__name__}.")
    if getattr(pred, "weights_depend_on_label", False):
        raise ValidationError("monitoring redraws the responses from the scores, which weights "
                              "that depend on the label (low-prevalence weighting) do not "
                              "allow: monitor without that weighting.")
    if pred.response_kind != "binary":
        raise ValidationError("monitoring needs 0/1 responses (the null redraws them from the "
                              "scores); these predictions have real-valued responses.")
    alpha, n_draws = settings.alpha, settings.draws  # their bounds: MonitorSettings
    if alpha * (n_draws + 1) < 1:
        raise ValidationError(f"alpha = {alpha:g} needs at least {int(np.ceil(1 / alpha)) - 1} "
                              f"null draws, not {n_draws}.")
    if settings.null not in ("auto", "bernoulli", "normal"):
        raise ValidationError(f"null must be 'auto', 'bernoulli' or 'normal', not "
                              f"{settings.null!r}.")


def _positions(pred: Predictions, index: np.ndarray) -> np.ndarray:
    index = np.asarray(index)
    if index.ndim != 1 or index.dtype.kind not in "iu" or (index.size and (
            index.min() < 0 or index.max() >= pred.n)) or np.any(np.diff(index) <= 0):
        raise ValidationError(f"index must hold increasing positions from 0 to {pred.n - 1}.")
    return index.astype(np.int64)


def _restricted(sub: Subpopulation, rows: np.ndarray, n: int) -> Subpopulation:
    local = np.full(n, -1, dtype=np.int64)
    local[rows] = np.arange(rows.size)
    kept = local[sub.index]
    kept = kept[kept >= 0]
    return Subpopulation(sub.id, sub.depth, sub.conditions, sub.description, rows[kept])


def _cells(pred: Predictions, rows: np.ndarray, periods: Periods,
           found: Sequence[Subpopulation]) -> tuple[CellSums, dict[str, np.ndarray]]:
    """Per-cell sums (one bincount each over the rows) and the series' sums (incidence @ cells)."""
    n_rows, n_periods = rows.size, periods.n_periods
    if rows.size == pred.n:
        members = [sub.index for sub in found]
    else:  # positions among the monitored rows
        local = np.full(pred.n, -1, dtype=np.int64)
        local[rows] = np.arange(rows.size)
        members = [local[sub.index] for sub in found]
    atom, incidence = membership_atoms(n_rows, members, n_periods)
    score, label, weight = pred.score[rows], pred.label[rows], pred.weight[rows]
    code = atom.astype(np.int64) * n_periods + periods.code
    size = incidence.shape[1] * n_periods

    def cell(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(code, weights=values, minlength=size).reshape(-1, n_periods)

    n = cell(weight)
    ws, wr = cell(weight * score), cell(weight * label)
    variance = score * (1.0 - score)
    v = cell(weight**2 * variance)  # eq. (5), per cell
    k3 = cell(weight**3 * variance * (1.0 - 2.0 * score))  # third cumulant of W(R - S)
    x = wr - ws
    cells = CellSums(n=n, x=x, v=v, incidence=incidence, atom=atom, period=periods.code,
                     score=score, weight=weight, k3=k3)
    sums = {"count": incidence @ cell(None), "n": incidence @ n, "x": incidence @ x,
            "v": incidence @ v, "ws": incidence @ ws, "wr": incidence @ wr}
    return cells, sums


def _series(sub: Subpopulation, k: int, sums: dict[str, np.ndarray], statistic: np.ndarray,
            periods: Periods, plan, c: float, maxima: np.ndarray) -> SeriesMonitor:
    r = periods.n_reference
    n, x, v = sums["n"][k], sums["x"][k], sums["v"][k]
    n_ref, x_ref, v_ref = n[:r].sum(), x[:r].sum(), v[:r].sum()
    delta = float(safe_ratio(x_ref, n_ref))
    ref_var = float(safe_ratio(v_ref, n_ref**2))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.where(n > 0, sums["ws"][k] / n, np.nan)
        mean_response = np.where(n > 0, sums["wr"][k] / n, np.nan)
        band = np.where(n > 0, Z95 * np.sqrt(v) / n, np.nan)
    scale = np.sqrt(v + n**2 * ref_var)
    z = np.where(scale > 0, (x - delta * n) / np.where(scale > 0, scale, 1.0), 0.0)
    path, _ = cumulative_path(x, n.sum(), np.ones(n.size, dtype=bool))  # eq. (1) along time
    path_x = np.concatenate(([0.0], safe_ratio(np.cumsum(n), n.sum())))
    sigma = float(sigma_from_variance(v.sum(), n.sum()))  # eq. (5)
    post_path, _ = cumulative_path(x[r:], n[r:].sum(), np.ones(n.size - r, dtype=bool))
    post_sigma = float(sigma_from_variance(v[r:].sum(), n[r:].sum()))
    kuiper, _ = path_kuiper_ks(post_path)  # eq. (2)
    kuiper_z = float(safe_ratio(kuiper, post_sigma)) if post_sigma > 0 else 0.0
    fired = np.flatnonzero(statistic > c)
    first = int(r + fired[0]) if fired.size else None
    start, end = (_strongest_window(x, n, v, delta, ref_var, r, plan) if first is not None
                  else (r, n.size - 1))
    dn, dx, dv = n[start:end + 1].sum(), x[start:end + 1].sum(), v[start:end + 1].sum()
    shift = float(safe_ratio(dx - delta * dn, dn)) if dn > 0 else float("nan")
    half = Z95 * np.sqrt(float(safe_ratio(dv, dn**2)) + ref_var) if dn > 0 else float("nan")
    p_adjusted = float(adjusted_p(np.array([statistic.max()]), maxima)[0])
    full_statistic = np.full(n.size, np.nan)
    full_statistic[r:] = statistic
    for array in (mean_score, mean_response, band, z, path, path_x, full_statistic):
        array.flags.writeable = False
    view = {"subpopulation": sub, "count": sums["count"][k].round().astype(np.int64),
            "weight": n, "mean_score": mean_score, "mean_response": mean_response, "band": band,
            "z": z, "reference_gap": delta, "path": path, "path_x": path_x, "sigma": sigma,
            "kuiper_z": kuiper_z, "kuiper_p": float(brownian_range_sf(kuiper_z)),
            "statistic": full_statistic, "alarm": first is not None, "first_alarm": first,
            "change_start": start, "change_end": end, "shift": shift,
            "ci_low": shift - half, "ci_high": shift + half, "p_adjusted": p_adjusted}
    return SeriesMonitor(**view, sentence=_sentence(view, periods))


def _strongest_window(x, n, v, delta, ref_var, r, plan) -> tuple[int, int]:
    """First and last period of the scanned window with the largest |z| (eq. (1))."""
    cx, cn, cv = (np.concatenate(([0.0], np.cumsum(a[r:]))) for a in (x, n, v))
    dn = cn[plan.end] - cn[plan.start]
    scale = np.sqrt(cv[plan.end] - cv[plan.start] + dn**2 * ref_var)
    z = np.abs(cx[plan.end] - cx[plan.start] - delta * dn) / np.where(scale > 0, scale, np.inf)
    best = int(np.argmax(z))
    return r + int(plan.start[best]), r + int(plan.end[best]) - 1


def _sentence(view: dict, periods: Periods) -> str:
    """Say in words when, which way and how far outcomes moved from the scores.

    No statistical symbols (#40): the adjusted p is in :attr:`SeriesMonitor.details`.
    """
    sub = view["subpopulation"]
    who = ("The full population" if not sub.conditions
           else f"Segment {conditions_words(sub.conditions)}")
    shift, low, high = view["shift"], view["ci_low"], view["ci_high"]
    noun = periods.period if periods.period in ("day", "week", "month", "quarter") else "period"
    if not np.isfinite(shift):
        return f"{who} has no rows after the reference."
    direction = "above" if shift > 0 else "below"
    interval = f"95% interval {format_interval(100 * low, 100 * high)} points"
    if view["alarm"]:
        span = (f"in the {noun} of {periods.labels[view['change_start']]}"
                if view["change_start"] == view["change_end"] else
                f"from the {noun} of {periods.labels[view['change_start']]} to that of "
                f"{periods.labels[view['change_end']]}")
        return (f"{who}: {span} outcomes ran {format_points(abs(shift))} {direction} the "
                f"scores, relative to the reference ({interval}); first alarm in the {noun} of "
                f"{periods.labels[view['first_alarm']]}, beyond chance over every segment and "
                f"period.")
    return (f"{who}: no alarm; after the reference, outcomes minus scores changed by "
            f"{format_points(shift, signed=True)} relative to the reference ({interval}).")
