r"""Groupings: which observations are compared when calibration is measured.

Höltgen & Williamson [1] split every calibration score into a *grouping* (a family of groups
:math:`\{I_j\}_{j \in J}`) and an *agglomeration* of the groups' errors (see
:mod:`mcviz.stats.agglomeration`). This module builds groupings as explicit objects and returns, for
every group, the signed calibration error, weighted when the predictions are:

.. math:: e(I) = \frac{\sum_{i \in I} W_i (R_i - S_i)}{\sum_{i \in I} W_i} = -c(I),

positive where the scores under-predict: one sign convention, response minus score, as in
every cumulative plot of :mod:`mcviz.stats.cumulative`. Eq. (6) of [1] defines
:math:`c(I) = \text{mean}(S - R)`, the opposite sign; the paper's sign is kept only where the
paper's own definition depends on it (the superquantile deviation of
:mod:`mcviz.stats.agglomeration`, labelled there). Absolute errors, the range and the standard
deviation do not depend on the sign.

Groupings
---------
* :func:`score_bins` - prediction-based bins, equal width on [0, 1] or equal count (the ECE
  family, Appendix A eqs. (14)-(16) of [1]). Tied scores are never split across bins.
* :func:`covariate_bins` - input-based partitions: bins of one or two covariates (nominal
  covariates give one group per level; a missing value is one more group, "missing").
* :func:`index_groups` - any list of index arrays (or objects with ``.index`` and
  ``.description``, such as the subpopulations of :mod:`mcviz.subpopulations`).
* :func:`local_calibration` - overlapping k-nearest-neighbour groups around every point in input
  space (Section 3.3; Proposition 5: the k-NN errors estimate each point's individual calibration
  error :math:`\hat p(x) - \mathbb{E}[Y \mid X = x]` consistently when :math:`k \to \infty` and
  :math:`k/N \to 0`). A group holds every observation within the distance of the k-th nearest
  one, so observations tied there (and all those sharing an input) are in or out together and
  results never depend on the order of the rows.
* :func:`kernel_calibration` - kernel groups with a bandwidth (eq. (9), Proposition 6).
* :func:`neighbourhood_tradeoff` - how the k-NN errors change with k: larger groups have
  smaller variance (Proposition 3, eq. (8): variance :math:`\propto 1/k`) but reach further in
  input space and so average away local miscalibration (Proposition 2).

The input space (documented rule)
---------------------------------
Distances are Euclidean in a standardised copy of the chosen covariates (:func:`input_space`):

* numeric (ordinal) covariates - booleans as 0/1, datetimes as nanoseconds - are centred at the
  median and divided by a robust standard deviation, IQR/1.349 (``scaling="robust"``, the
  default; for normal data this equals the standard deviation), or centred at the mean and
  divided by the standard deviation (``scaling="standard"``). A scale of 0 falls back to the
  standard deviation, then to 1. Missing values are set to the centre (0) and flagged by an
  extra 0/1 column "<name> missing", so missing and observed values lie 1 apart;
* nominal covariates contribute 0 to the squared distance where two observations share the
  level and 1 where they differ (a missing value is one more level): the distance of a one-hot
  encoding scaled by :math:`1/\sqrt 2`, so two different levels lie exactly 1 apart - one
  standard deviation of a numeric covariate. The encoding is never built: each nominal
  covariate is one integer code per row, so memory is O(n) whatever the number of levels.

Standard errors (documented rule)
---------------------------------
For binary responses a group's standard error is its spread under perfect calibration, the
group version of eq. (5) of [2] and of eq. (8) of [1] with :math:`p = S`:
:math:`\sqrt{\sum_I W_i^2 S_i (1 - S_i)} / \sum_I W_i`. For real-valued responses it is the
empirical :math:`\sqrt{m/(m-1)}\,\sqrt{\sum_I W_i^2 (d_i - c)^2} / \sum_I W_i` with
:math:`d_i = R_i - S_i` (NaN for a single observation).

References
----------
.. [1] B. Höltgen, R. C. Williamson, "On the Richness of Calibration", FAccT 2023; Sections 2-5,
   eqs. (6), (8)-(10), Propositions 2-6, Appendix A eqs. (14)-(16).
.. [2] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; eq. (5).
"""

from mcviz.stats.groupings.input_space import input_space
from mcviz.stats.groupings.local import kernel_calibration, local_calibration
from mcviz.stats.groupings.local_views import local_calibration_map, local_error_distribution
from mcviz.stats.groupings.partitions import covariate_bins, group_errors, index_groups, score_bins
from mcviz.stats.groupings.results import (
    GroupErrors,
    InputSpace,
    LocalCalibration,
    LocalErrorDistribution,
    LocalMap,
    NeighbourhoodTradeoff,
)
from mcviz.stats.groupings.tradeoff import neighbourhood_tradeoff

__all__ = [
    "GroupErrors",
    "InputSpace",
    "LocalCalibration",
    "LocalErrorDistribution",
    "LocalMap",
    "NeighbourhoodTradeoff",
    "covariate_bins",
    "group_errors",
    "index_groups",
    "input_space",
    "kernel_calibration",
    "local_calibration",
    "local_calibration_map",
    "local_error_distribution",
    "neighbourhood_tradeoff",
    "score_bins",
]
