r"""The core: each statistic of mcviz exactly once.

========================================  ==================================================
what                                      where
========================================  ==================================================
tie-aware cumulative path, D and G        :mod:`mcviz.core.path`
(eqs. (1)-(2) of paper 000)
sigma family, one enum of methods         :mod:`mcviz.core.sigma`
(eq. (5); Appendix C eq. (6); paper 003
eqs. (21)-(23))
safe ratio (0/0 = 0, d/0 = inf)           :mod:`mcviz.core.ratio`
Brownian-range tail (p-values)            :mod:`mcviz.core.brownian`
eq. (4), the metric M (sigma_0 = 0 rule)  :mod:`mcviz.core.metric`
block evaluator, chunk summaries          :mod:`mcviz.core.evaluator`
membership on integer codes (engines)     :mod:`mcviz.core.membership`
score-sorted batches -> summaries         :mod:`mcviz.core.batches`
========================================  ==================================================

Everything else (cumulative differences, deviation, multi-calibration, the screening engines,
null draws, the guided search) calls these. See ``CORE_API.md`` of the branch for usage.
Names are imported on first use (``from mcviz.core.path import ...`` loads that module
alone; the membership plan needs pandas, the paths and sigma do not).
"""

from typing import TYPE_CHECKING

from mcviz.lazy import lazy_exports

if TYPE_CHECKING:
    from mcviz.core.batches import BatchAccumulator, summarise_rows
    from mcviz.core.brownian import BROWNIAN_RANGE_MEAN, brownian_range_sf
    from mcviz.core.evaluator import (
        ChunkSummaries,
        Evaluator,
        Statistics,
        combine,
        combine_all,
        finish,
    )
    from mcviz.core.membership import MembershipPlan, last_run_start
    from mcviz.core.metric import MetricValue, multicalibration_metric, normalized_kuiper
    from mcviz.core.path import cumulative_path, path_axes, path_kuiper_ks, run_ends, value_order
    from mcviz.core.ratio import safe_ratio
    from mcviz.core.sigma import (
        SIGMA_METHODS,
        SigmaMethod,
        resolve_sigma_method,
        sigma_adjacent,
        sigma_bernoulli,
        sigma_from_variance,
    )

_HOME = {  # name -> the module defining it (imported on first use)
    "BROWNIAN_RANGE_MEAN": "brownian",
    "BatchAccumulator": "batches",
    "ChunkSummaries": "evaluator",
    "Evaluator": "evaluator",
    "MembershipPlan": "membership",
    "MetricValue": "metric",
    "SIGMA_METHODS": "sigma",
    "SigmaMethod": "sigma",
    "Statistics": "evaluator",
    "brownian_range_sf": "brownian",
    "combine": "evaluator",
    "combine_all": "evaluator",
    "cumulative_path": "path",
    "finish": "evaluator",
    "last_run_start": "membership",
    "multicalibration_metric": "metric",
    "normalized_kuiper": "metric",
    "path_axes": "path",
    "path_kuiper_ks": "path",
    "resolve_sigma_method": "sigma",
    "run_ends": "path",
    "safe_ratio": "ratio",
    "sigma_adjacent": "sigma",
    "sigma_bernoulli": "sigma",
    "sigma_from_variance": "sigma",
    "summarise_rows": "batches",
    "value_order": "path",
}

__all__ = [
    "BROWNIAN_RANGE_MEAN",
    "SIGMA_METHODS",
    "BatchAccumulator",
    "ChunkSummaries",
    "Evaluator",
    "MembershipPlan",
    "MetricValue",
    "SigmaMethod",
    "Statistics",
    "brownian_range_sf",
    "combine",
    "combine_all",
    "cumulative_path",
    "finish",
    "last_run_start",
    "multicalibration_metric",
    "normalized_kuiper",
    "path_axes",
    "path_kuiper_ks",
    "resolve_sigma_method",
    "run_ends",
    "safe_ratio",
    "sigma_adjacent",
    "sigma_bernoulli",
    "sigma_from_variance",
    "summarise_rows",
    "value_order",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
