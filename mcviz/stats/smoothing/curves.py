r"""LOESS curves over the whole observed range: spikes as their own points, the grid, the API.

A *spike* is a value holding at least ``SPIKE_SHARE`` (5%) of the weight (a covariate that is
0 on 96% of rows, hours worked tied at 40). Left among the other rows it would sit on the edge
of the windows around it with kernel weight 0 while counting towards their :math:`q` nearest
rows, so those windows would hold a handful of rows and their fits extrapolate. Instead each
spike :math:`s` is estimated from its own rows, the weighted mean

.. math:: \hat g(s) = \frac{\sum_{x_i = s} W_i y_i}{\sum_{x_i = s} W_i}, \qquad
          \sum_i l_i(s)^2 = \frac{\sum_{x_i = s} W_i^2}{\bigl(\sum_{x_i = s} W_i\bigr)^2},

and the LOESS of the module :mod:`mcviz.stats.smoothing.loess` is fitted to the remaining rows alone
(its :math:`q = \lfloor n' \mathrm{span} + 10^{-5}\rfloor` counts those :math:`n'` rows). The
residual scale pools both: the residual sums of squares add, and each spike adds one parameter
to :math:`\nu_1`. When fewer than two distinct values remain, they are estimated the same way.

The grid holds ``grid_points // 2`` equally spaced values from the smallest to the largest
non-spike value and as many at equally spaced quantiles of those values (so dense regions and
sparse tails are both resolved; duplicates dropped), plus the spikes.
"""

from __future__ import annotations

import numpy as np

from mcviz.errors import ValidationError
from mcviz.stats.smoothing._common import (
    _checked_weight,
    check_span,
    counted_quantile,
    locate,
    sorted_copy,
    sorted_quantile,
)
from mcviz.stats.smoothing.loess import LoessCurve, _Fits, _loess_fits

__all__ = ["loess_curve", "loess_fit_from_counts", "spiked_fits_from_sums"]

SPIKE_SHARE = 0.05
"""A value holding at least this share of the weight is estimated from its own rows."""


def _grid(sorted_x: np.ndarray, points: int, counts: np.ndarray | None = None) -> np.ndarray:
    """Return the evaluation grid over the whole range of ``sorted_x`` (module notes).

    ``counts``: ``sorted_x`` holds distinct values, each standing for that many rows.
    """
    half = max(points // 2, 2)
    equal = np.linspace(sorted_x[0], sorted_x[-1], max(points - half, 2))
    probabilities = np.linspace(0.0, 1.0, half)
    quantiles = (sorted_quantile(sorted_x, probabilities) if counts is None
                 else counted_quantile(sorted_x, counts, probabilities))
    return np.unique(np.concatenate((equal, quantiles)))


def _find_spikes(
    x: np.ndarray, weight: np.ndarray | None, sorted_x: np.ndarray, share: float
) -> np.ndarray:
    """Values holding at least ``share`` of the weight (ascending)."""
    n = sorted_x.size
    if weight is None:
        # A run of at least m rows holds two consecutive multiples of step <= m / 2: only
        # those sampled values are candidates (O(n / m) work instead of a pass over the rows).
        m = int(np.ceil(share * n * (1 - 1e-12)))
        step = max(m // 2, 1)
        sample = np.arange(0, n, step)
        pairs = sample[:-1][sorted_x[sample[:-1]] == sorted_x[sample[1:]]]
        candidates = np.unique(sorted_x[pairs])
        runs = (np.searchsorted(sorted_x, candidates, side="right")
                - np.searchsorted(sorted_x, candidates, side="left"))
        return candidates[runs >= m]
    starts = np.flatnonzero(np.concatenate(([True], sorted_x[1:] != sorted_x[:-1])))
    runs = np.diff(np.append(starts, n))
    total = float(weight.sum())
    # A value needs at least share * total / max weight rows to hold the share.
    candidates = sorted_x[starts[runs >= share * total / float(weight.max()) * (1 - 1e-12)]]
    if not candidates.size:
        return candidates
    slot = np.clip(np.searchsorted(candidates, x), 0, candidates.size - 1)
    match = candidates[slot] == x
    mass = np.bincount(slot[match], weights=weight[match], minlength=candidates.size)
    return candidates[mass >= share * total * (1 - 1e-12)]


def _member(values: np.ndarray, sorted_set: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each value is in ``sorted_set``, and its position there (the set's size if not).

    Spikes are at most 1 / ``SPIKE_SHARE`` values: one comparison pass per value is cheaper
    than a binary search per row.
    """
    if sorted_set.size > 1 / SPIKE_SHARE:
        slot = locate(sorted_set, values, sorted_set.size - 1)
        inside = sorted_set[slot] == values
        return inside, np.where(inside, slot, sorted_set.size)
    inside = np.zeros(values.size, dtype=bool)
    above = np.zeros(values.size, dtype=np.int8)  # set values below each value
    for value in sorted_set:
        inside |= values == value
        np.add(above, values > value, out=above, casting="unsafe")
    return inside, np.where(inside, above, sorted_set.size)


def _without(sorted_x: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``sorted_x`` without the values of ``sorted_set`` (runs cut out by binary search)."""
    cut = np.column_stack((np.searchsorted(sorted_x, sorted_set, side="left"),
                           np.searchsorted(sorted_x, sorted_set, side="right"))).ravel()
    bounds = np.concatenate(([0], cut, [sorted_x.size])).reshape(-1, 2)
    return np.concatenate([sorted_x[a:b] for a, b in bounds])


def _point_estimates(
    ys: list[np.ndarray], weight: np.ndarray | None, inside: np.ndarray, slot: np.ndarray,
    count: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted means of the rows at each value, sum of l_i^2 and residual cross-products.

    ``inside`` and ``slot`` are from :func:`_member` (rows off the values have slot ``count``).
    """

    def per_value(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(slot, weights=values, minlength=count + 1)[:count].astype(float)

    mass = per_value(weight)
    l2 = (per_value(weight * weight) if weight is not None else mass) / mass**2
    m = len(ys)
    wys = ys if weight is None else [weight * y for y in ys]
    fit = np.column_stack([per_value(wy) / mass for wy in wys])
    residuals = [np.where(inside, y - np.append(fit[:, a], 0.0)[slot], 0.0)
                 for a, y in enumerate(ys)]
    weighted = residuals if weight is None else [weight * r for r in residuals]
    rss = np.zeros((m, m))
    for a in range(m):
        for b in range(a, m):
            rss[a, b] = rss[b, a] = float(np.dot(weighted[a], residuals[b]))
    return fit, l2, rss


def spiked_fits(
    x: np.ndarray,
    ys: list[np.ndarray],
    weight: np.ndarray | None,
    at: np.ndarray | None,
    *,
    span: float,
    degree: int,
    exact: bool | None,
    sorted_x: np.ndarray,
    grid_points: int = 500,
    spike_share: float | None = SPIKE_SHARE,
) -> _Fits:
    """LOESS fits with spikes estimated from their own rows (module notes).

    ``at`` None: the grid of the module notes. Points of ``at`` equal to a spike get the
    spike's estimate; the others the LOESS of the non-spike rows.
    """
    spikes = (np.empty(0) if spike_share is None
              else _find_spikes(x, weight, sorted_x, spike_share))
    if not spikes.size:
        points = _grid(sorted_x, grid_points) if at is None else at
        return _loess_fits(x, ys, weight, points, span=span, degree=degree, exact=exact,
                           sorted_x=sorted_x)
    rest_sorted = _without(sorted_x, spikes)
    if rest_sorted.size and rest_sorted[0] == rest_sorted[-1]:
        spikes = np.union1d(spikes, rest_sorted[:1])  # one value left: its own point too
        rest_sorted = rest_sorted[:0]
    spike_row, slot = _member(x, spikes)
    if at is None:
        smooth_at = _grid(rest_sorted, grid_points) if rest_sorted.size else np.empty(0)
        smooth_at = smooth_at[~_member(smooth_at, spikes)[0]]
        spike_at = spikes
    else:
        on_spike = _member(at, spikes)[0]
        smooth_at, spike_at = at[~on_spike], at[on_spike]
    fit_s, l2_s, rss_s = _point_estimates(ys, weight, spike_row, slot, spikes.size)
    index = np.searchsorted(spikes, spike_at)
    parts = [(spike_at, fit_s[index], l2_s[index])]
    rss, trace = rss_s, float(spikes.size)
    smooth = None
    if rest_sorted.size:
        rest = ~spike_row
        smooth = _loess_fits(x[rest], [y[rest] for y in ys],
                             None if weight is None else weight[rest], smooth_at,
                             span=span, degree=degree, exact=exact, sorted_x=rest_sorted)
        rss, trace = rss + smooth.rss, trace + smooth.trace
    total = float(x.size if weight is None else weight.sum())
    return _merge(parts, smooth, rss, trace, x.size, total)


def spiked_fits_from_sums(
    values: np.ndarray,
    counts: np.ndarray,
    weight: np.ndarray,
    squares: np.ndarray,
    means: np.ndarray,
    cross: np.ndarray,
    at: np.ndarray | None,
    *,
    span: float,
    degree: int,
    exact: bool | None = None,
    grid_points: int = 500,
    spike_share: float | None = SPIKE_SHARE,
) -> _Fits:
    r""":func:`spiked_fits` of rows given by their sums per distinct value (a ``GROUP BY``).

    ``values`` ascending and distinct; per value its rows (``counts``), :math:`\sum W`,
    :math:`\sum W^2`, the weighted means of the m responses (shape (V, m)) and
    :math:`\sum W y_a y_b` (shape (V, m, m)). Every step of :func:`spiked_fits` depends on the
    rows only through these: spikes by their weight, the grid's quantiles by row positions
    (:func:`counted_quantile`), a spike's estimate, :math:`\sum l_i^2` and residual sums from
    its sums, the LOESS of the other values by :func:`_loess_fits` with ``counts`` (its
    neighbourhoods count rows; its kernel sums run over values, whose rows share a kernel
    weight). So the fits are those of the rows themselves, up to the order of additions.
    """
    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    total = float(weight.sum())
    spikes = (np.empty(0) if spike_share is None
              else values[weight >= spike_share * total * (1 - 1e-12)])
    rest = ~np.isin(values, spikes)
    if np.count_nonzero(rest) == 1:  # one value left: its own point too
        spikes, rest = np.union1d(spikes, values[rest]), np.zeros(values.size, dtype=bool)

    def loess(keep: np.ndarray, points: np.ndarray) -> _Fits:
        return _loess_fits(values[keep], list(means[keep].T), weight[keep], points, span=span,
                           degree=degree, exact=exact, sorted_x=values[keep],
                           counts=counts[keep], squares=squares[keep],
                           cross=cross[keep].sum(axis=0))

    if not spikes.size:
        return loess(rest, _grid(values, grid_points, counts) if at is None else at)
    if at is None:
        smooth_at = (_grid(values[rest], grid_points, counts[rest]) if rest.any()
                     else np.empty(0))
        smooth_at, spike_at = smooth_at[~np.isin(smooth_at, spikes)], spikes
    else:
        on_spike = np.isin(at, spikes)
        smooth_at, spike_at = at[~on_spike], at[on_spike]
    index = np.searchsorted(values, spike_at)
    parts = [(spike_at, means[index], squares[index] / weight[index] ** 2)]
    spiked = ~rest & np.isin(values, spikes)
    rss = (cross[spiked] - weight[spiked, None, None] * np.einsum(
        "va,vb->vab", means[spiked], means[spiked])).sum(axis=0)  # sum W (y_a - m_a)(y_b - m_b)
    trace, smooth = float(spikes.size), None
    if rest.any():
        smooth = loess(rest, smooth_at)
        rss, trace = rss + smooth.rss, trace + smooth.trace
    return _merge(parts, smooth, rss, trace, int(counts.sum()), total)


def _merge(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], smooth: _Fits | None,
    rss: np.ndarray, trace: float, n: int, weight_total: float,
) -> _Fits:
    """One :class:`_Fits` from the spike estimates and the LOESS points, sorted by value."""
    at, fit, l2 = parts[0]
    count = at.size
    fields = {
        "at": [at], "fit": [fit], "l2": [l2], "degree": [np.zeros(count, dtype=np.int64)],
        "radius": [np.zeros(count)], "degenerate": [np.zeros(count, dtype=bool)],
        "sparse": [np.zeros(count, dtype=bool)],
        "spike": [np.ones(count, dtype=bool)],
    }
    if smooth is not None:
        for name in fields:
            fields[name].append(getattr(smooth, name))
    merged = {name: np.concatenate(values) for name, values in fields.items()}
    order = np.argsort(merged["at"], kind="stable")
    return _Fits(
        **{name: values[order] for name, values in merged.items()},
        rss=rss, trace=trace, n=n, weight_total=weight_total,
        binned=bool(smooth is not None and smooth.binned),
    )


def loess_curve(
    x: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    span: float = 0.9,
    degree: int = 2,
    at: np.ndarray | None = None,
    grid_points: int = 500,
    exact: bool | None = None,
    spike_share: float | None = None,
    name: str = "x",
) -> LoessCurve:
    r"""LOESS curve of ``y`` against ``x`` with its pointwise 95% band.

    Parameters
    ----------
    x, y : ndarray of shape (n,)
        Finite values.
    weight : ndarray of shape (n,), optional
        Positive observation weights; they multiply the tricube weights.
    span : float, default 0.9
        Fraction of observations in each neighbourhood, :math:`q = \lfloor n\,\mathrm{span} +
        10^{-5}\rfloor`.
    degree : {0, 1, 2}, default 2
        Local polynomial degree (lowered where fewer distinct values are available).
    at : ndarray, optional
        Evaluation points; default about ``grid_points`` points over the whole range of x
        (half equally spaced, half at equally spaced quantiles; module notes).
    grid_points : int, default 500
    exact : bool or None
        True: sum over distinct values (exact, O(grid × distinct values)); False: force the
        Taylor-binned evaluation; None: binned only when x has more than 2,048 distinct values.
    spike_share : float, optional
        When given, a value holding at least this share of the weight is estimated from its
        own rows and left out of the other windows (module notes; variable-based calibration
        uses 0.05). None: plain LOESS over all rows.
    name : str
        Name of x for messages.

    Returns
    -------
    LoessCurve

    Raises
    ------
    ValidationError
        When x is constant, values are not finite, or the span is out of range.

    Notes
    -----
    See the module notes: fit, band (eq. (B.1)), degrees of freedom, binning and its bound.

    Examples
    --------
    A straight line is returned unchanged:

    >>> x = np.linspace(0, 1, 50)
    >>> curve = loess_curve(x, 2 * x + 1, at=np.array([0.25, 0.5]))
    >>> np.round(curve.fit, 10).tolist()
    [1.5, 2.0]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    check_span(span)
    if degree not in (0, 1, 2):
        raise ValidationError(f"degree must be 0, 1 or 2, not {degree!r}.")
    if x.shape != y.shape or x.ndim != 1:
        raise ValidationError(f"x and y must be 1-d of equal length ({x.shape} and {y.shape}).")
    bad = ~(np.isfinite(x) & np.isfinite(y))
    if bad.any():
        raise ValidationError(
            f"{name!r}: {int(bad.sum()):,} of {x.size:,} values are NaN or infinite.",
            column=name,
        )
    weight = _checked_weight(weight, x.shape)
    xs = sorted_copy(x)
    if xs.size == 0 or xs[0] == xs[-1]:
        raise ValidationError(
            f"{name!r} is constant; a curve against it cannot be drawn.", column=name
        )
    if spike_share is not None and not 0 < spike_share < 1:
        raise ValidationError(f"spike_share must lie in (0, 1), not {spike_share!r}.")
    fits = spiked_fits(
        x, [y], weight, None if at is None else np.asarray(at, dtype=float), span=span,
        degree=degree, exact=exact, sorted_x=xs, grid_points=grid_points,
        spike_share=spike_share,
    )
    return fits.curve(np.ones(1), span=span, degree=int(fits.degree.max(initial=0)))


def loess_fit_from_counts(
    values: np.ndarray,
    counts: np.ndarray,
    weight: np.ndarray,
    mean: np.ndarray,
    at: np.ndarray,
    *,
    span: float,
    degree: int = 2,
) -> np.ndarray:
    r"""The plain LOESS fit at ``at`` of rows given by their sufficient statistics per value.

    For data too large to hold (an engine's ``GROUP BY`` of the column): ``values`` are the
    distinct values in ascending order, ``counts`` their rows, ``weight`` the rows' sums of
    :math:`W` and ``mean`` their weighted mean responses :math:`\sum W y / \sum W`. The
    neighbourhoods count rows (:math:`q = \lfloor n\,\mathrm{span}\rfloor` over the
    :math:`n = \sum` counts rows, radii to the :math:`q`-th nearest row) and the kernel sums run
    over the values, so the fit is the one :func:`loess_curve` (``spike_share`` None) gives on
    the rows themselves, up to the order of floating-point additions
    (``tests/stats/smoothing/test_loess_counts.py``). Only the fit: its band needs
    :math:`\sum W y^2` and :math:`\sum W^2` per value, which are not taken here.

    Examples
    --------
    >>> fit = loess_fit_from_counts(np.array([0.0, 1.0, 2.0]), np.array([2, 1, 2]),
    ...                             np.array([2.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]),
    ...                             np.array([0.5, 1.5]), span=1.0, degree=1)
    >>> np.round(fit, 10).tolist()
    [2.0, 4.0]
    """
    xs = np.asarray(values, dtype=float)
    if xs.size < 2 or (np.diff(xs) <= 0).any():
        raise ValidationError("values must be at least two distinct values in ascending order.")
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape != xs.shape or (counts <= 0).any():
        raise ValidationError("counts must be positive, one per value.")
    check_span(span)
    fits = _loess_fits(xs, [np.asarray(mean, dtype=float)], np.asarray(weight, dtype=float),
                       np.asarray(at, dtype=float), span=span, degree=degree, sorted_x=xs,
                       counts=counts)
    return fits.fit[:, 0]
