"""Comparing retrieval systems over the same sketches: intervals and paired tests.

A benchmark reports each system's mean over the sketches; whether one system
beats another is a question about the paired per-sketch values. This module
gives a percentile bootstrap interval of a mean over sketches
(:func:`scipy.stats.bootstrap`), the Wilcoxon signed-rank test
(:func:`scipy.stats.wilcoxon`) and a paired permutation (sign-flip) test of the
mean difference, with Holm's correction across the pairs of systems
(:func:`~sbir_study.analysis.corrections.holm_adjusted`).

The permutation test is written out here, not called from
:func:`scipy.stats.permutation_test`: one matrix of random sign flips serves
every pair of systems, which makes the hundreds of comparisons of a
benchmark a matter of matrix products. It follows SciPy's conventions term for
term (exact enumeration when the 2^n sign patterns are no more than the
resamples asked for, the +1 correction otherwise, the two-sided p-value as
twice the smaller one-sided one) and the tests check it against SciPy.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError

from ..corrections import holm_adjusted

__all__ = [
    "BootstrapResult",
    "PermutationResult",
    "bootstrap_mean",
    "compare_systems",
    "paired_permutation_test",
    "permutation_p_value_floor",
]


class BootstrapResult(NamedTuple):
    """A mean over sketches with its percentile bootstrap interval."""

    mean: float
    ci_low: float
    ci_high: float
    n: int


class PermutationResult(NamedTuple):
    """The mean paired difference and its two-sided permutation p-value."""

    statistic: float
    pvalue: float
    n: int


def bootstrap_mean(
    values, *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> BootstrapResult:
    """Mean of ``values`` (NaN left out) with a percentile bootstrap interval.

    Notes
    -----
    The sketches are resampled with replacement ``n_resamples`` times; the
    interval is the (1 - confidence)/2 and (1 + confidence)/2 quantiles of the
    resampled means. Computed by ``scipy.stats.bootstrap(method="percentile")``
    with the generator seeded by ``seed``, so the same values give the same
    interval. Fewer than two values give no interval (NaN).

    Examples
    --------
    >>> result = bootstrap_mean([0.2, 0.4, 0.5, 0.7, 0.9], n_resamples=2000, seed=1)
    >>> round(result.mean, 2), result.ci_low < result.mean < result.ci_high
    (0.54, True)
    """
    from scipy import stats

    values = np.asarray(values, dtype=np.float64).reshape(-1)
    values = values[~np.isnan(values)]
    n = int(values.size)
    if n == 0:
        return BootstrapResult(float("nan"), float("nan"), float("nan"), 0)
    mean = float(values.mean())
    if n < 2:
        return BootstrapResult(mean, float("nan"), float("nan"), n)
    if np.ptp(values) == 0:
        return BootstrapResult(mean, mean, mean, n)
    result = stats.bootstrap(
        (values,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
        method="percentile", vectorized=True, rng=np.random.default_rng(seed),
    )  # fmt: skip
    interval = result.confidence_interval
    return BootstrapResult(mean, float(interval.low), float(interval.high), n)


def _sign_patterns(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, bool]:
    """Sign flips for n pairs: all 2^n patterns when that is at most ``n_resamples``
    (an exact test), else ``n_resamples`` random ones."""
    if _enumerates(n, n_resamples):
        patterns = np.array(list(itertools.product((1.0, -1.0), repeat=n))).reshape(-1, n)
        return patterns, True
    rng = np.random.default_rng(seed)
    return rng.choice((1.0, -1.0), size=(n_resamples, n)), False


def _enumerates(n: int, n_resamples: int) -> bool:
    """Whether the test over n pairs enumerates all 2^n sign patterns (an exact test)."""
    return n < 63 and 2**n <= n_resamples


def permutation_p_value_floor(n: int, n_resamples: int = 10_000) -> float:
    """The smallest p-value :func:`paired_permutation_test` can give for ``n`` pairs.

    Two-sided: 2/(n_resamples + 1) with random sign flips (twice the one-sided
    floor 1/(n_resamples + 1)), 2/2^n when all 2^n patterns are enumerated.
    A p-value at the floor says only that the exact p-value is no larger.

    Examples
    --------
    >>> permutation_p_value_floor(31, 10_000) == 2 / 10_001
    True
    >>> permutation_p_value_floor(5, 10_000)
    0.0625
    """
    if _enumerates(int(n), n_resamples):
        return min(1.0, 2.0 / 2 ** int(n))
    return min(1.0, 2.0 / (n_resamples + 1))


def _permutation_pvalue(observed: float, null: np.ndarray, exact: bool) -> float:
    # SciPy's comparison tolerance and +1 adjustment (scipy.stats.permutation_test).
    gamma = abs(1e-14 * observed)
    adjustment = 0 if exact else 1
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / (null.size + adjustment)
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / (null.size + adjustment)
    return float(min(1.0, 2.0 * min(greater, less)))


def paired_permutation_test(a, b, *, n_resamples: int = 10_000, seed: int = 0) -> PermutationResult:
    """Two-sided paired permutation test of mean(a - b) = 0 (sketches with both values).

    Under the null hypothesis each sketch's difference is as likely to have
    either sign; the null distribution of the mean difference comes from
    flipping the signs.

    Examples
    --------
    >>> result = paired_permutation_test([0.9, 0.8, 0.7, 0.9, 0.6], [0.5, 0.6, 0.7, 0.4, 0.5])
    >>> round(result.statistic, 2), result.pvalue, result.n
    (0.24, 0.125, 5)
    >>> from scipy import stats
    >>> d = np.array([0.9, 0.8, 0.7, 0.9, 0.6]) - np.array([0.5, 0.6, 0.7, 0.4, 0.5])
    >>> float(stats.permutation_test((d,), np.mean, permutation_type="samples").pvalue)
    0.125
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        raise InputError(f"a, b: expected paired values of equal length, got {a.size} and {b.size}")
    both = ~np.isnan(a) & ~np.isnan(b)
    d = a[both] - b[both]
    if d.size == 0:
        return PermutationResult(float("nan"), float("nan"), 0)
    patterns, exact = _sign_patterns(d.size, n_resamples, seed)
    observed = float(d.mean())
    return PermutationResult(observed, _permutation_pvalue(observed, patterns @ d / d.size, exact),
                             int(d.size))  # fmt: skip


def _wilcoxon(d: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    if d.size == 0:
        return float("nan"), float("nan")
    if not np.any(d != 0):
        return 0.0, 1.0  # no difference at all: nothing to test
    result = stats.wilcoxon(d)
    return float(result.statistic), float(result.pvalue)


def compare_systems(
    per_sketch: pd.DataFrame,
    *,
    measures=None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Paired tests between every two systems, per measure, Holm-corrected across the pairs.

    Parameters
    ----------
    per_sketch : DataFrame
        ``system, sketch_id, measure, value`` (the long table of ``evaluate``).
    measures : sequence of str, optional
        The measures to compare (default: all in the table).

    Returns
    -------
    DataFrame
        ``measure, system_a, system_b, n_sketches, mean_a, mean_b, mean_difference
        (a - b), wilcoxon_statistic, wilcoxon_p_value, wilcoxon_p_value_holm, permutation_p_value,
        permutation_p_value_holm, significant``; ``significant`` when the
        Holm-corrected permutation p-value is below ``alpha``. Each pair uses
        the sketches where both systems have a value.
    """
    columns = ["measure", "system_a", "system_b", "n_sketches", "mean_a", "mean_b",
               "mean_difference", "wilcoxon_statistic", "wilcoxon_p_value", "wilcoxon_p_value_holm",
               "permutation_p_value", "permutation_p_value_holm", "significant"]  # fmt: skip
    if measures is None:
        measures = list(dict.fromkeys(per_sketch["measure"]))
    rows = []
    patterns_for: dict[int, tuple[np.ndarray, bool]] = {}
    for measure in measures:
        wide = per_sketch[per_sketch["measure"] == measure].pivot(
            index="sketch_id", columns="system", values="value"
        )
        systems = list(dict.fromkeys(per_sketch.loc[per_sketch["measure"] == measure, "system"]))
        found = []
        for first, second in itertools.combinations(systems, 2):
            a = wide[first].to_numpy(dtype=np.float64)
            b = wide[second].to_numpy(dtype=np.float64)
            both = ~np.isnan(a) & ~np.isnan(b)
            d = a[both] - b[both]
            if d.size == 0:
                found.append([measure, first, second, 0] + [np.nan] * 6)
                continue
            if d.size not in patterns_for:
                patterns_for[d.size] = _sign_patterns(d.size, n_resamples, seed)
            patterns, exact = patterns_for[d.size]
            observed = float(d.mean())
            permutation_p_value = _permutation_pvalue(observed, patterns @ d / d.size, exact)
            statistic, wilcoxon_p_value = _wilcoxon(d)
            found.append([measure, first, second, int(d.size), float(a[both].mean()),
                          float(b[both].mean()), observed, statistic, wilcoxon_p_value,
                          permutation_p_value])  # fmt: skip
        table = pd.DataFrame(found, columns=["measure", "system_a", "system_b", "n_sketches",
                                             "mean_a", "mean_b", "mean_difference",
                                             "wilcoxon_statistic", "wilcoxon_p_value",
                                             "permutation_p_value"])  # fmt: skip
        for test in ("wilcoxon_p_value", "permutation_p_value"):
            table[f"{test}_holm"] = holm_adjusted(table[test].to_numpy(dtype=np.float64))
        table["significant"] = table["permutation_p_value_holm"] < alpha
        rows.append(table)
    if not rows:
        return pd.DataFrame(columns=columns)
    return pd.concat(rows, ignore_index=True)[columns]
