r"""Decisions: net benefit at the user's thresholds and what miscalibration costs there.

:func:`net_benefit` gives NB(t) of the model, treat-all and treat-none (weighted);
:func:`decision_impact` compares the model with recalibrated scores on held-out rows: the loss
per 1,000 decisions with a bootstrap interval and a sentence per threshold.
"""

from mcviz.decision.impact import (
    CURVE_THRESHOLDS,
    DecisionImpact,
    decision_impact,
    impact_sentence,
)
from mcviz.decision.net_benefit import (
    NetBenefit,
    check_thresholds,
    net_benefit,
    threshold_from_costs,
)

__all__ = ["CURVE_THRESHOLDS", "DecisionImpact", "NetBenefit", "check_thresholds",
           "decision_impact", "impact_sentence", "net_benefit", "threshold_from_costs"]
