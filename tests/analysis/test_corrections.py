"""Multiple-testing corrections against statsmodels, pingouin and R."""

import numpy as np
import pingouin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from sbir_study.analysis import benjamini_hochberg_count, holm_adjusted


@pytest.mark.parametrize("seed", range(5))
def test_bh_count_matches_statsmodels(seed):
    # Reference: statsmodels multipletests(method="fdr_bh"); ties and exact
    # threshold hits included by rounding the p-values.
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 5000))
    p = np.round(np.concatenate([rng.uniform(0, 0.01, size // 3), rng.uniform(0, 1, size)]), 3)
    for alpha in (0.01, 0.05, 0.2):
        expected = int(multipletests(p, alpha=alpha, method="fdr_bh")[0].sum())
        assert benjamini_hochberg_count(p, alpha) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=0, max_size=60),
    st.sampled_from([0.01, 0.05, 0.2]),
)
def test_bh_count_matches_statsmodels_any_pvalues(p, alpha):
    # Reference: statsmodels multipletests(method="fdr_bh") over the defined p-values
    # (NaN is an undefined test, not counted).
    p = np.array(p, dtype=np.float64)
    defined = p[~np.isnan(p)]
    expected = (
        int(multipletests(defined, alpha=alpha, method="fdr_bh")[0].sum()) if defined.size else 0
    )
    assert benjamini_hochberg_count(p, alpha) == expected


@pytest.mark.parametrize("m", [30, 200])
def test_bh_count_staircase_matches_statsmodels(m):
    # p-values just above their own thresholds, so the count falls one test at a time and
    # the counting passes give way to the sort; reference statsmodels multipletests.
    alpha = 0.05
    p = np.arange(1, m + 1) / m * alpha + 1e-9
    p[0] = 0.0
    expected = int(multipletests(p, alpha=alpha, method="fdr_bh")[0].sum())
    assert benjamini_hochberg_count(p[::-1], alpha) == expected


@pytest.mark.parametrize(
    "pvalues, expected",
    # Holm (1979) worked by hand: the sorted p-values times m, m - 1, ..., 1, made monotone and
    # capped at 1; what R's p.adjust gives for the call above each case.
    [
        # R: p.adjust(c(0.50, 0.003, 0.32, 0.054, 0.0003), method = "holm")
        ([0.50, 0.003, 0.32, 0.054, 0.0003], [0.64, 0.012, 0.64, 0.162, 0.0015]),
        # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), method = "holm")
        ([0.01, 0.02, 0.03, 0.04, 0.05], [0.05, 0.08, 0.09, 0.09, 0.09]),
        # R: p.adjust(c(0.4, 0.6, 0.9), method = "holm") (capped at 1)
        ([0.4, 0.6, 0.9], [1.0, 1.0, 1.0]),
        # R: p.adjust(c(0.02, NA, 0.04), method = "holm"): NA stays NA, n = 2 defined
        ([0.02, float("nan"), 0.04], [0.04, float("nan"), 0.04]),
        ([float("nan")], [float("nan")]),
        ([], []),
    ],
)
def test_holm_matches_r(pvalues, expected):
    np.testing.assert_allclose(holm_adjusted(pvalues), expected, rtol=1e-12, atol=0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=0, max_size=60))
def test_holm_matches_pingouin_any_pvalues(p):
    # Reference: pingouin.multicomp(method="holm"), which leaves NaN out of the family too.
    p = np.array(p, dtype=np.float64)
    ours = holm_adjusted(p)
    assert ours.shape == p.shape
    assert np.array_equal(np.isnan(ours), np.isnan(p))
    if p.size:
        reference = pingouin.multicomp(p, method="holm")[1]
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=0)


# Fewer examples: statsmodels' Holm runs a full garbage collection on every call.
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.05, 1.0])), min_size=1, max_size=80
    )
)
def test_holm_is_statsmodels_to_the_last_bit(p):
    # Reference: statsmodels multipletests(method="holm"), the steps written out in
    # holm_adjusted; ties (the sampled values) included.
    p = np.array(p, dtype=np.float64)
    np.testing.assert_array_equal(holm_adjusted(p), multipletests(p, method="holm")[1])
