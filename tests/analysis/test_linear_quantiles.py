"""``linear_quantiles`` is ``numpy.quantile`` (method "linear") bit for bit.

The reference is numpy itself: the histogram selection must give the very floats
``np.quantile`` gives, on any input (ties, subnormals, huge ranges, NaN), through its
fast path (``histogram_from=0``) and its fallbacks.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sbir_study.analysis.distribution import linear_quantiles


def assert_bits(found, expected):
    found, expected = np.asarray(found, dtype=np.float64), np.asarray(expected, np.float64)
    assert found.shape == expected.shape
    assert np.array_equal(found.view(np.int64), expected.view(np.int64)), (found, expected)


_values = st.one_of(
    hnp.arrays(np.float64, st.integers(2, 400), elements=st.floats(-1, 1)),
    hnp.arrays(np.float64, st.integers(2, 400), elements=st.floats(allow_subnormal=True)),
    hnp.arrays(np.float64, st.integers(2, 400), elements=st.integers(-3, 3).map(float)),
    hnp.arrays(np.float64, st.integers(2, 400)),  # NaN and infinities included
)
_q = st.lists(st.floats(0, 1), min_size=1, max_size=7)


@given(values=_values, q=_q)
@settings(max_examples=400, deadline=None)
def test_any_values_give_numpy_s_quantiles_bit_for_bit(values, q):
    assert_bits(linear_quantiles(values, q, histogram_from=0), np.quantile(values, q))


def test_a_sketch_sized_array_takes_the_histogram_and_gives_numpy_s_floats():
    rng = np.random.default_rng(7)
    q = [0.05, 0.25, 0.5, 0.75, 0.95]
    for values in (
        np.clip(rng.normal(0.3, 0.2, 300_000), -1, 1),
        rng.standard_cauchy(250_001),
        np.round(rng.uniform(-1, 1, 200_000), 3),
    ):
        assert_bits(linear_quantiles(values, q), np.quantile(values, q))
