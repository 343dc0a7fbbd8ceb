r"""The guided search: where is the model most miscalibrated, confirmed on held-out rows.

:func:`search_subpopulations` looks for the subpopulations (conjunctions of up to three
conditions on covariates) with the largest cumulative deviation :math:`D/\sigma` (eqs. (2) and
(5) of paper 000) on a random share of the rows (70% by default), and confirms each on the
rows held out (``holdout``, 30%) with a Brownian-range p-value (simulated for small groups
of binary labels) adjusted by Holm's procedure.
The findings form a :class:`~mcviz.subpopulations.SubpopulationSet`, so every view of
subpopulations works on them.
"""

from mcviz.search._confirm import canonical_order, holm, is_confirmed, split_rows
from mcviz.search._find import (
    Finding,
    MinimumDetectableEffect,
    SearchResult,
    search_estimate,
    search_subpopulations,
)
from mcviz.search._union import FindingUnion

__all__ = ["Finding", "FindingUnion", "MinimumDetectableEffect", "SearchResult",
           "canonical_order", "holm", "is_confirmed", "search_estimate", "search_subpopulations",
           "split_rows"]
