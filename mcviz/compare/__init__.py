r"""Compare two models scored on the same labelled rows: which to ship, and where each is worse.

:func:`compare_models` puts each model's calibration side by side, the paired differences of
their losses with intervals that respect the pairing, the paired cumulative differences of the
losses (Kloumann, Korevaar, McConnell, Tygert and Zhao, arXiv:2305.11323) with the Kuiper
statistic, its :math:`\sigma` and p, the guided search on the paired loss difference
(``regressions``: B worse; ``improvements``: B better; confirmed on held-out rows), and the net
benefit of both at decision thresholds with the paired difference. :func:`join_challenger`
joins a challenger's file on an id column and counts the rows that do not match.
"""

from mcviz.compare.join import JoinReport, join_challenger
from mcviz.compare.models import (
    AVERAGE_SCORE,
    ComparisonFinding,
    ModelComparison,
    compare_models,
)
from mcviz.compare.paired import (
    NetBenefitComparison,
    PairedDifference,
    PairedPath,
    mean_interval,
    net_benefit_comparison,
    paired_cumulative_differences,
)

__all__ = ["AVERAGE_SCORE", "ComparisonFinding", "JoinReport", "ModelComparison",
           "NetBenefitComparison", "PairedDifference", "PairedPath", "compare_models",
           "join_challenger", "mean_interval", "net_benefit_comparison",
           "paired_cumulative_differences"]
