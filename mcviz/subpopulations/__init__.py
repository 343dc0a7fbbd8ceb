r"""Subpopulations as predicates: Algorithm 1 of paper 000, user groups, and a filter language.

A subpopulation is a conjunction of :class:`Condition` objects on covariates (its *path*), a
description of that path in words, and the sorted positions of its members in the
:class:`~mcviz.io.Predictions` score order. Because the path alone determines the members
(:func:`select_rows`), other engines (SQL, out of core) can evaluate the same subpopulations.

Random subpopulations (Algorithm 1 with the refinements of Section 2.3)
---------------------------------------------------------------------------
Each path starts at the full population. A step chooses a covariate uniformly at random (with
replacement), takes the median of the *distinct* values the covariate takes among the current
members and, with probability 1/2, keeps the members below it, otherwise those at or above it.
With :math:`u` distinct values :math:`v_0 < \dots < v_{u-1}` the split point is
:math:`v_{\lfloor u/2 \rfloor}`: for odd :math:`u` that is the median itself and for even
:math:`u` the first value above the median (the average of the two middle values), so "below the
median" keeps :math:`v_0, \dots, v_{\lfloor u/2 \rfloor - 1}` in both cases and the threshold is
always a value that occurs in the data. A path stops when the new set has fewer than ``min_size``
members (that set is discarded); every node along the path is kept. Nominal covariates are
split on a random order of their categories, drawn afresh at the start of every path. A split
that does not shrink the set adds nothing; a membership already generated (by this path or
another) is not returned twice, and repeated split paths are replayed from a cache rather than
recomputed. Generation stops with exactly ``n_subpopulations`` distinct proper subpopulations,
or with fewer and a notice when 1,000 consecutive paths (or 50 per requested subpopulation in
all) add nothing new. Nominal covariates with more than 1,000 categories (identifiers, free
text) are left out with a notice: their descriptions would list thousands of categories.

Missing values (one rule for the whole library)
-----------------------------------------------
A missing covariate value is a value of its own that sorts after every observed value (NULLS
LAST). Hence it satisfies ``>``, ``>=``, ``!=``, ``not in`` and ``is missing`` and fails ``<``,
``<=``, ``==``, ``in`` and ``is not missing``. In Algorithm 1 "missing" counts as one more distinct
value (the largest), so the "at or above the median" side keeps the missing rows. SQL
translations: ``x >= v`` becomes ``(x >= v OR x IS NULL)``, ``x != v`` becomes
``(x <> v OR x IS NULL)``, ``x NOT IN (...)`` becomes ``(x NOT IN (...) OR x IS NULL)``; ``<``,
``<=``, ``=`` and ``IN`` need nothing extra (:func:`conditions_sql` writes them).

Filter language
---------------
A conjunction of clauses joined by ``and`` (or ``&``)::

    age >= 40 and sex == "Female"
    occupation in {"Sales", "Tech-support"} and `capital gain` > 0
    hours_per_week < 45 and workclass is not missing

Columns are bare names (letters, digits, ``_``, ``.``, ``-``) or back-quoted; values are numbers
(``inf`` and ``-inf`` included), ``true``/``false``, dates and times in ISO form, bare or
quoted (``date >= 2021-03-04``, ``date < 2021-03-04 12:30:00``, ``2021-03-04T12:30:00+01:00``),
quoted strings or bare words; operators
``< <= > >= == = != <> ≤ ≥ ≠``, ``in``, ``not in``, ``is missing``, ``is not missing``. The
text is tokenised and parsed here; nothing is passed to ``eval`` or ``pandas.query``. Errors
point at the offending token.

References
----------
.. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax, M. Tygert, "Measuring
   multi-calibration", 2025; Section 2.3 and Algorithm 1.
"""

from typing import TYPE_CHECKING

from mcviz.core.conditions import MISSING_RULE, OPERATORS
from mcviz.lazy import lazy_exports

if TYPE_CHECKING:
    from mcviz.subpopulations.algorithm import generate_subpopulations
    from mcviz.subpopulations.describe import conditions_sql, describe_conditions
    from mcviz.subpopulations.filters import filter_subpopulation, parse_filter
    from mcviz.subpopulations.groups import group_subpopulations
    from mcviz.subpopulations.model import (
        Condition,
        Subpopulation,
        SubpopulationSet,
        full_population,
    )
    from mcviz.subpopulations.selection import (
        SCORE_ALONE,
        is_score_column,
        on_score_alone,
        select_rows,
    )
    from mcviz.subpopulations.words import conditions_words, split_words, subpopulation_words

_HOME = {  # name -> the module defining it (imported on first use: the search needs no Algorithm 1)
    "generate_subpopulations": "algorithm",
    "conditions_sql": "describe",
    "describe_conditions": "describe",
    "filter_subpopulation": "filters",
    "parse_filter": "filters",
    "group_subpopulations": "groups",
    "Condition": "model",
    "Subpopulation": "model",
    "SubpopulationSet": "model",
    "full_population": "model",
    "SCORE_ALONE": "selection",
    "is_score_column": "selection",
    "on_score_alone": "selection",
    "select_rows": "selection",
    "conditions_words": "words",
    "subpopulation_words": "words",
    "split_words": "words",
}

__all__ = [
    "MISSING_RULE",
    "OPERATORS",
    "SCORE_ALONE",
    "Condition",
    "Subpopulation",
    "SubpopulationSet",
    "conditions_sql",
    "conditions_words",
    "describe_conditions",
    "filter_subpopulation",
    "full_population",
    "generate_subpopulations",
    "group_subpopulations",
    "is_score_column",
    "on_score_alone",
    "parse_filter",
    "select_rows",
    "split_words",
    "subpopulation_words",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
