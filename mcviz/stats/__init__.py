"""Statistics: what calls the core to answer a calibration question (layer 3).

The cumulative differences and the triangle (:mod:`~mcviz.stats.cumulative`, papers 000 and
003), the deviation of a subpopulation (:mod:`~mcviz.stats.deviation`), reliability diagrams
and ECE (:mod:`~mcviz.stats.binning`), the multi-calibration metric
(:mod:`~mcviz.stats.multical`) and its null (:mod:`~mcviz.stats.significance`), variable-based
calibration (:mod:`~mcviz.stats.variables`, paper 001), weighting schemes
(:mod:`~mcviz.stats.weighting`), groupings and agglomerations (:mod:`~mcviz.stats.groupings`,
:mod:`~mcviz.stats.agglomeration`, paper 002), the LOESS curves and the Local Calibration Score
(:mod:`~mcviz.stats.smoothing`, paper 004) and the classical measures
(:mod:`~mcviz.stats.measures`). Nothing here draws: figures live in :mod:`mcviz.present`.
"""
