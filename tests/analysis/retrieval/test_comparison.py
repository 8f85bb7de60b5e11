"""Comparing systems: the paired permutation test against scipy.stats.permutation_test,
the bootstrap interval against the t interval, the Wilcoxon test against SciPy."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sbir_study.analysis.retrieval import comparison
from sbir_study.analysis.retrieval.comparison import (
    bootstrap_mean,
    compare_systems,
    paired_permutation_test,
)


def scipy_paired_p(a, b, **options):
    """SciPy's paired permutation test of the mean difference (two-sided)."""
    d = np.asarray(a) - np.asarray(b)
    return scipy.stats.permutation_test(
        (d,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        **options,
    ).pvalue


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [4, 9, 13])
def test_exact_permutation_p_equals_scipy(seed, n):
    rng = np.random.default_rng(seed)
    a = rng.normal(0.5, 0.1, n)
    b = a - rng.normal(0.03, 0.05, n)
    ours = paired_permutation_test(a, b, n_resamples=10_000)
    assert ours.pvalue == pytest.approx(scipy_paired_p(a, b, n_resamples=10_000), abs=1e-12)
    assert ours.statistic == pytest.approx(np.mean(a - b))


#: Differences as P@k and NN give them: few values, so ties and zeros (the branch of
#: scipy.stats.wilcoxon that enumerates the sign patterns), and any others.
_DIFFERENCES = st.one_of(
    st.sampled_from([0.0, -0.0, 0.1, -0.1, 0.2, -0.2, 0.25, 0.5, -1.0]),
    st.floats(-1, 1, allow_nan=False),
)


def _scipy_wilcoxon(d):
    result = scipy.stats.wilcoxon(d)
    return float(result.statistic), float(result.pvalue)


@settings(max_examples=100, deadline=None)
@given(st.lists(_DIFFERENCES, min_size=1, max_size=6))
def test_wilcoxon_is_scipys_bit_for_bit(values):
    # Reference: scipy.stats.wilcoxon(d) (two-sided, method "auto"), statistic and p-value
    # to the bit, whichever of its branches (exact, permutation) the differences take. Up
    # to 6 differences: SciPy's permutation branch takes about 0.25 ms per sign pattern
    # (the edge, 13 and 14, below).
    d = np.asarray(values)
    assume(np.any(d != 0))
    assert comparison._wilcoxon_tests([d])[0] == _scipy_wilcoxon(d)


@pytest.mark.parametrize("n", [13, 14])
def test_wilcoxon_at_the_edge_of_scipys_permutation_branch(n):
    # Reference: scipy.stats.wilcoxon: at 13 differences with ties and a zero SciPy
    # enumerates the 2^13 sign patterns, at 14 it takes the normal approximation.
    d = np.resize([0.1, -0.2, 0.1, 0.3, 0.0, 0.4, -0.1, 0.2], n) + np.repeat([0, 0.5], [8, n - 8])
    d[4] = 0.0
    assert comparison._wilcoxon_tests([d])[0] == _scipy_wilcoxon(d)


def _scipy_t(d):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = scipy.stats.ttest_rel(d, np.zeros_like(d))
    return float(result.statistic), float(result.pvalue)


#: Lengths of differences: SciPy's permutation branch (with ties, up to 13) costs about
#: 0.25 ms per sign pattern, so its lengths here stop at 6; beyond 13 the exact
#: distribution (no ties), the normal approximation (ties, or more than 50).
_LENGTHS = st.one_of(st.integers(1, 6), st.integers(14, 60))


def _rows_of_length(n: int):
    """Rows of n differences, some with ties or zeros, some all distinct and nonzero."""
    distinct = st.lists(st.floats(0.001, 1), min_size=n, max_size=n, unique=True)
    signed = st.tuples(distinct, st.lists(st.booleans(), min_size=n, max_size=n)).map(
        lambda drawn: [v if up else -v for v, up in zip(*drawn, strict=True)]
    )
    return st.lists(
        st.one_of(st.lists(_DIFFERENCES, min_size=n, max_size=n), signed), min_size=1, max_size=4
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(_LENGTHS.flatmap(_rows_of_length), min_size=1, max_size=4))
def test_the_tests_of_many_pairs_at_once_are_each_pairs_alone(groups):
    # Reference: scipy.stats.wilcoxon(d) and scipy.stats.ttest_rel(d, 0) of each row alone
    # (compare_systems tests all its pairs at once, SciPy called once per length and
    # branch), to the bit; rows of one length with and without ties side by side.
    differences = [np.asarray(row) for group in groups for row in group]
    wilcoxon = comparison._wilcoxon_tests(differences)
    t = comparison._t_tests(differences)
    for d, (statistic, p), (t_statistic, t_p) in zip(differences, wilcoxon, t, strict=True):
        if np.any(d != 0):
            assert (statistic, p) == _scipy_wilcoxon(d), d
        else:
            assert (statistic, p) == (0.0, 1.0)
        if d.size >= 2 and np.ptp(d) > 0:
            np.testing.assert_array_equal((t_statistic, t_p), _scipy_t(d))


def test_random_permutation_p_agrees_with_scipy_within_monte_carlo_error():
    rng = np.random.default_rng(12)
    a = rng.normal(0.6, 0.1, 31)
    b = a - rng.normal(0.0, 0.05, 31)
    ours = paired_permutation_test(a, b, n_resamples=20_000, seed=1).pvalue
    reference = scipy_paired_p(a, b, n_resamples=20_000, rng=np.random.default_rng(2))
    assert 0.05 < reference < 0.5  # a p-value where Monte Carlo error matters
    # Each estimate has a standard error below sqrt(0.25 / 20000) = 0.0035.
    assert ours == pytest.approx(reference, abs=0.015)


def test_nan_pairs_are_left_out():
    result = paired_permutation_test([0.5, np.nan, 0.7, 0.9], [0.4, 0.1, np.nan, 0.8])
    assert result.n == 2
    assert result.statistic == pytest.approx(0.1)


def test_bootstrap_interval_is_close_to_the_t_interval_for_normal_data():
    rng = np.random.default_rng(3)
    values = rng.normal(0.6, 0.1, 200)
    result = bootstrap_mean(values, n_resamples=20_000, seed=4)
    low, high = scipy.stats.t.interval(
        0.95, df=199, loc=values.mean(), scale=scipy.stats.sem(values)
    )
    assert result.mean == pytest.approx(values.mean())
    assert result.ci_low == pytest.approx(low, abs=0.003)
    assert result.ci_high == pytest.approx(high, abs=0.003)
    # Reproducible: the same seed, the same interval.
    assert bootstrap_mean(values, n_resamples=20_000, seed=4) == result


def test_bootstrap_degenerate_cases():
    assert np.isnan(bootstrap_mean([np.nan]).mean)
    single = bootstrap_mean([0.3])
    assert single.mean == 0.3 and np.isnan(single.ci_low)
    constant = bootstrap_mean([0.5, 0.5, 0.5])
    assert (constant.ci_low, constant.ci_high) == (0.5, 0.5)


def test_compare_systems_holm_and_wilcoxon():
    rng = np.random.default_rng(8)
    base = rng.normal(0.5, 0.1, 20)
    systems = {"a": base + 0.2, "b": base + rng.normal(0, 0.01, 20), "c": base}
    per_sketch = pd.concat(
        pd.DataFrame(
            {
                "system": name,
                "sketch_id": [f"s{i}" for i in range(20)],
                "measure": "tau_b",
                "value": values,
            }
        )
        for name, values in systems.items()
    )
    table = compare_systems(per_sketch, n_resamples=5_000, seed=0)
    assert table[["system_a", "system_b"]].values.tolist() == [["a", "b"], ["a", "c"], ["b", "c"]]
    ab = table.iloc[0]
    # scipy.stats.wilcoxon on the same differences.
    reference = scipy.stats.wilcoxon(systems["a"] - systems["b"])
    assert ab["wilcoxon_statistic"] == reference.statistic
    assert ab["wilcoxon_p_value"] == pytest.approx(reference.pvalue)
    # Holm over three pairs: the smallest p times 3, then monotone.
    p = table["permutation_p_value"].to_numpy()
    order = np.argsort(p)
    holm = np.maximum.accumulate(np.minimum(1, p[order] * np.array([3, 2, 1])))
    np.testing.assert_allclose(table["permutation_p_value_holm"].to_numpy()[order], holm)
    assert table["significant"].tolist() == [True, True, False]
    # A system identical on every sketch: nothing to test, p = 1.
    same = per_sketch.replace({"system": {"c": "d"}})
    same = pd.concat([per_sketch, same[same["system"] == "d"]])
    cd = compare_systems(same, n_resamples=1_000).query("system_a == 'c' and system_b == 'd'")
    assert cd["wilcoxon_p_value"].iloc[0] == 1.0 and cd["permutation_p_value"].iloc[0] == 1.0


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=40),
    seed=st.integers(0, 2**32 - 1),
    n_resamples=st.integers(50, 3000),
    confidence=st.sampled_from([0.9, 0.95, 0.99]),
)
def test_bootstrap_interval_is_scipys(values, seed, n_resamples, confidence):
    """bootstrap_mean's percentile interval is scipy.stats.bootstrap's with the same seed
    (the same draws; the means summed in another order)."""
    values = np.asarray(values)
    assume(np.ptp(values) > 0)
    result = bootstrap_mean(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
    interval = scipy.stats.bootstrap(
        (values,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    assert (result.ci_low, result.ci_high) == pytest.approx(
        (interval.low, interval.high), rel=1e-12, abs=1e-14
    )
