"""The shortcuts that keep crowd-scale analysis fast give what the plain call gives.

Each is checked against the pandas or NumPy call it stands for (the oracle named in
each test), over generated inputs: missing cells, categories no row uses, blanks around
labels, ties, NaN and infinities, numbers past int64.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import _kernels

ROW_VALUES = st.sampled_from([0.0, -0.0, 1.0, 1.5, 2.0, 7.0, float("nan"), float("inf"),
                              float("-inf"), 1e-300, 3.0])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 6), st.integers(0, 9), st.data())
def test_tie_group_sizes_are_the_counts_of_each_distinct_value(rows, columns, data):
    x = np.array(
        data.draw(st.lists(ROW_VALUES, min_size=rows * columns, max_size=rows * columns)),
        dtype=np.float64,
    ).reshape(rows, columns)
    got = _kernels.tie_group_sizes(x)
    assert got.shape == (rows, columns)
    for row, sizes in zip(x, got, strict=True):
        # Oracle: np.unique's counts of the row's values, smallest first, NaN left out.
        _, counts = np.unique(row[~np.isnan(row)], return_counts=True)
        np.testing.assert_array_equal(sizes, np.pad(counts, (0, columns - counts.size)))
