"""Algorithm 1's number columns: codes rank the distinct values (int16 when they fit)."""

import numpy as np
import pytest

from mcviz.subpopulations.algorithm import _number_column


@pytest.mark.parametrize(("distinct", "digits", "missing_share", "dtype"), [
    (50, 0, 0.0, np.int16),          # small integers
    (32_000, 0, 0.1, np.int16),      # the largest int16 range used, with missing values
    (40_000, 0, 0.0, np.int32),      # too many for int16
    (900, 3, 0.05, np.int16),        # short decimals
    (40_000, 2, 0.05, np.int32),
])
def test_codes_rank_the_distinct_values(distinct, digits, missing_share, dtype):
    rng = np.random.default_rng(distinct + digits)
    n = 3 * distinct
    keys = rng.integers(-distinct // 3, distinct - distinct // 3, n) / 10.0**digits
    keys[:distinct] = (np.arange(distinct) - distinct // 3) / 10.0**digits  # every value once
    keys = rng.permutation(keys)
    missing = rng.random(n) < missing_share
    keys[missing] = np.nan
    column = _number_column("x", keys, missing, bool(missing.any()))
    uniques, inverse = np.unique(keys[~missing], return_inverse=True)
    assert column.mode == "codes"
    assert column.data.dtype == dtype
    assert column.levels == uniques.size
    assert np.array_equal(column.values, uniques)
    assert np.array_equal(column.data[~missing], inverse)
    assert (column.data[missing] == uniques.size).all()  # missing: the last code
    # the full population's counts per code (missing last), as bincount gives them
    assert np.array_equal(column.counts, np.bincount(column.data, minlength=uniques.size + 1))
