"""Presentation: results turned into figures, words, decks and reports (layer 5).

:mod:`~mcviz.present.figures` builds one plotly figure per result, :mod:`~mcviz.present.plot`
draws a chart in one call, :mod:`~mcviz.present.verdict` says it in words,
:mod:`~mcviz.present.review` assembles the review's four charts,
:mod:`~mcviz.present.deck` writes the slides and :mod:`~mcviz.present.report` the HTML report.
Nothing here computes a statistic: it reads results built below.
"""
