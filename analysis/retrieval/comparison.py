"""Comparing retrieval systems over the same sketches: intervals and paired tests.

A bootstrap interval of a mean over sketches; per pair of systems, the mean difference
with its paired bootstrap interval and Cohen's d_z, and three paired tests with Holm's
correction: Student's t, Wilcoxon's signed-rank and a sign-flip permutation test
(``docs/evaluation.md`` says why they can disagree). The permutation test follows
:func:`scipy.stats.permutation_test` term for term (the tests check it), written out so
that one matrix of sign flips serves every pair of systems.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError

from .. import _kernels
from ..corrections import holm_adjusted

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "BootstrapResult",
    "PermutationResult",
    "bootstrap_mean",
    "compare_systems",
    "effect_size_dz",
    "paired_differences_interval",
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
    values: ArrayLike, *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> BootstrapResult:
    """Mean of ``values`` (NaN left out) with the percentile bootstrap interval that
    ``scipy.stats.bootstrap(method="percentile")`` gives with ``seed``; NaN with fewer
    than two values.

    Examples
    --------
    >>> result = bootstrap_mean([0.2, 0.4, 0.5, 0.7, 0.9], n_resamples=2000, seed=1)
    >>> round(result.mean, 2), result.ci_low < result.mean < result.ci_high
    (0.54, True)
    """
    given = np.asarray(values, dtype=np.float64).reshape(-1)
    given = given[~np.isnan(given)]
    n = int(given.size)
    if n == 0:
        return BootstrapResult(float("nan"), float("nan"), float("nan"), 0)
    mean = float(given.mean())
    if n < 2:
        return BootstrapResult(mean, float("nan"), float("nan"), n)
    if np.ptp(given) == 0:
        return BootstrapResult(mean, mean, mean, n)
    low, high = _percentile_intervals(given[None, :], confidence, n_resamples, seed)
    return BootstrapResult(mean, float(low[0]), float(high[0]), n)


def _percentile_intervals(
    values: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The percentile bootstrap interval of the mean of each row of ``values`` (no NaN),
    as ``scipy.stats.bootstrap(method="percentile", rng=default_rng(seed))`` gives it for
    each row alone: SciPy's draws, each resample's mean a product of draw counts and
    values, where SciPy gathers a rows x resamples x n array.
    """
    n = values.shape[1]
    draws = np.random.default_rng(seed).integers(0, n, (n_resamples, n))
    # How often each resample draws each value: a count per (resample, value) cell.
    cells = (draws + n * np.arange(n_resamples)[:, None]).ravel()
    counts = np.bincount(cells, minlength=n_resamples * n).reshape(n_resamples, n)
    means = counts @ values.T / n  # resamples x rows
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
    return low, high


def _sign_patterns(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, bool]:
    """Sign flips for n pairs: all 2^n patterns when that is at most ``n_resamples``
    (an exact test), else ``n_resamples`` random ones."""
    if _enumerates(n, n_resamples):
        # Row k's signs are the bits of k: -1 where a bit is set.
        return 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1), True
    rng = np.random.default_rng(seed)
    return rng.choice((1.0, -1.0), size=(n_resamples, n)), False


def _enumerates(n: int, n_resamples: int) -> bool:
    """Whether the test over n pairs enumerates all 2^n sign patterns (an exact test)."""
    return n < 63 and 2**n <= n_resamples


def permutation_p_value_floor(n: int, n_resamples: int = 10_000) -> float:
    """The smallest p-value of :func:`paired_permutation_test` for ``n`` pairs: 2/2^n when
    it enumerates the 2^n patterns, else 2/(n_resamples + 1). A p-value at the floor says
    only that the exact one is no larger.

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


#: scipy.stats.permutation_test's relative tolerance (1.15 and later) for null values equal
#: to the observed one but for rounding.
_TIES_TOLERANCE = float(np.finfo(np.float64).eps) * 100


def _permutation_pvalue(observed: float, null: np.ndarray, exact: bool) -> float:
    """Two-sided p-value of ``observed`` in ``null``, as scipy.stats.permutation_test."""
    gamma = abs(_TIES_TOLERANCE * observed)
    adjustment = 0 if exact else 1
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / (null.size + adjustment)
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / (null.size + adjustment)
    return float(min(1.0, 2.0 * min(greater, less)))


def paired_permutation_test(
    a: ArrayLike, b: ArrayLike, *, n_resamples: int = 10_000, seed: int = 0
) -> PermutationResult:
    """Two-sided paired permutation test of mean(a - b) = 0 over the sketches with both
    values: the null distribution flips the signs of the differences.

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
    pvalue = _permutation_p_values([d], n_resamples, seed)[0]
    return PermutationResult(float(d.mean()), pvalue, int(d.size))


#: Up to this many differences with ties or zeros, ``scipy.stats.wilcoxon`` ("auto") runs an
#: exact permutation test.
_WILCOXON_PERMUTATION_MAX = 13


def _wilcoxon_tests(differences: list[np.ndarray]) -> list[tuple[float, float]]:
    """``scipy.stats.wilcoxon(d)`` (two-sided, "auto") of each ``d``, bit for bit.

    SciPy's exact permutation branch is computed here (:func:`_wilcoxon_enumerated`);
    otherwise SciPy is called once per length and branch, the branch named as "auto"
    would choose it for each row alone (it decides for a whole array at once).
    """
    results = [(float("nan"), float("nan"))] * len(differences)
    batches: dict[tuple[int, str], list[int]] = {}
    for row, d in enumerate(differences):
        if d.size == 0:
            continue
        nonzero = d != 0
        if not np.any(nonzero):
            results[row] = (0.0, 1.0)  # no difference at all: nothing to test
            continue
        magnitudes = np.abs(d[nonzero])
        if np.unique(magnitudes).size < magnitudes.size or not nonzero.all():
            if d.size <= _WILCOXON_PERMUTATION_MAX:
                results[row] = _wilcoxon_enumerated(d, nonzero)
                continue
            method = "asymptotic"  # ties or zeros among more: the normal approximation
        else:
            method = "auto"  # SciPy's exact distribution up to 50, the approximation beyond
        batches.setdefault((d.size, method), []).append(row)
    from scipy import stats

    return _batched(
        differences,
        batches,
        results,
        lambda block, key: stats.wilcoxon(block, method=key[1], axis=1),
    )


def _batched(
    differences: list[np.ndarray],
    batches: Mapping[Any, list[int]],
    results: list[tuple[float, float]],
    test: Callable[[np.ndarray, Any], Any],
) -> list[tuple[float, float]]:
    """``results`` with each batch's rows set to the statistic and p-value of one call of
    ``test(rows stacked, batch key)``: SciPy's per-call overhead is most of a test's time."""
    for key, rows in batches.items():
        found = test(np.vstack([differences[r] for r in rows]), key)
        for row, statistic, p in zip(rows, found.statistic, found.pvalue, strict=True):
            results[row] = (float(statistic), float(p))
    return results


def _wilcoxon_enumerated(d: np.ndarray, nonzero: np.ndarray) -> tuple[float, float]:
    """SciPy's exact branch of the signed-rank test (zeros dropped): r+ under each of the
    2^n sign patterns, one product, since the ranks of |d| do not change with the signs."""
    ranks = np.zeros(d.size)  # a zero difference has no rank: no sign puts it in r+
    ranks[nonzero] = _kernels.average_ranks(np.abs(d[nonzero])[None, :])[0]
    r_plus, r_minus = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    patterns, exact = _sign_patterns(d.size, 2**d.size, seed=0)
    null = (patterns > 0) @ ranks  # r+ under each sign pattern: sums of half-integers, exact
    return min(r_plus, r_minus), _permutation_pvalue(r_plus, null, exact)


#: How ``compare_systems`` forms Holm's family: the pairs of systems of each measure, or
#: every pair x measure at once.
CORRECTIONS = ("pairs", "across-measures")
#: The paired tests of each comparison, by their column prefix.
TESTS = ("t", "wilcoxon", "permutation")


def paired_differences_interval(
    differences: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The paired percentile bootstrap interval of the mean of each row of ``differences``
    (pairs x sketches, no NaN), as ``scipy.stats.bootstrap`` gives it for the row alone
    with ``seed``; a row without spread gets its mean, fewer than two sketches NaN.
    """
    differences = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    rows, n = differences.shape
    low = np.full(rows, np.nan)
    high = np.full(rows, np.nan)
    if n < 2 or rows == 0:
        return low, high
    flat = np.ptp(differences, axis=1) == 0
    low[flat] = high[flat] = differences[flat, 0]
    if (~flat).any():
        low[~flat], high[~flat] = _percentile_intervals(
            differences[~flat], confidence, n_resamples, seed
        )
    return low, high


def _t_tests(differences: list[np.ndarray]) -> list[tuple[float, float]]:
    """``scipy.stats.ttest_rel`` (two-sided) of mean(d) = 0 of each ``d``, bit for bit, one
    call per length."""
    results = [(float("nan"), float("nan"))] * len(differences)
    batches: dict[int, list[int]] = {}
    for row, d in enumerate(differences):
        if d.size < 2 or np.ptp(d) == 0:
            # No spread: t is undefined (SciPy's NaN), and no difference is nothing to test.
            if d.size >= 2 and d[0] == 0:
                results[row] = (0.0, 1.0)
            continue
        batches.setdefault(d.size, []).append(row)
    from scipy import stats

    def test(block: np.ndarray, _: object) -> Any:
        with warnings.catch_warnings():  # near-equal differences: SciPy warns of precision
            warnings.simplefilter("ignore", RuntimeWarning)  # loss
            return stats.ttest_rel(block, np.zeros_like(block), axis=1)

    return _batched(differences, batches, results, test)


def effect_size_dz(d: ArrayLike) -> float:
    """Cohen's d_z = mean(d) / sd(d), sd with n - 1, the paired t over sqrt(n) (Lakens 2013,
    Eq. 6); NaN with fewer than two sketches or no spread.

    Examples
    --------
    >>> round(effect_size_dz([0.1, 0.3, 0.2, 0.4]), 6)
    1.936492
    """
    paired = np.asarray(d, dtype=np.float64)
    paired = paired[~np.isnan(paired)]
    if paired.size < 2:
        return float("nan")
    sd = float(paired.std(ddof=1))
    return float(paired.mean()) / sd if sd > 0 else float("nan")


#: The columns of :func:`compare_systems`' table (``comparisons.csv``), in order.
COMPARISON_COLUMNS = (
    "measure",
    "system_a",
    "system_b",
    "n_sketches",
    "mean_a",
    "mean_b",
    "mean_difference",
    "difference_ci_low",
    "difference_ci_high",
    "effect_size_dz",
    "t_statistic",
    "t_p_value",
    "t_p_value_holm",
    "wilcoxon_statistic",
    "wilcoxon_p_value",
    "wilcoxon_p_value_holm",
    "permutation_p_value",
    "permutation_p_value_holm",
    "significant",
    "rejected_by",
    "tests_disagree",
)


def compare_systems(
    per_sketch: pd.DataFrame,
    *,
    measures: Sequence[str] | None = None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    bootstrap: int = 10_000,
    correct: str = "pairs",
    baseline: str | None = None,
) -> pd.DataFrame:
    """Paired tests between every two systems (or each with ``baseline``), per measure.

    Parameters
    ----------
    per_sketch
        ``system, sketch_id, measure, value`` (the long table of ``evaluate``).
    measures
        The measures to compare (default: all in the table).
    n_resamples, bootstrap
        Sign flips of the permutation test; resamples of the difference's interval.
    correct
        Holm's family: ``"pairs"`` of systems of one measure, or ``"across-measures"``.
    baseline
        Compare every other system (``system_a``) with this one (``system_b``) only.

    Returns
    -------
    DataFrame
        :data:`COMPARISON_COLUMNS`, each pair over the sketches where both have a value:
        ``significant`` when the Holm-corrected permutation p-value is below ``alpha``,
        ``rejected_by`` the tests whose Holm-corrected p-value is (``;``-separated),
        ``tests_disagree`` whether some but not all of them are.
    """
    if correct not in CORRECTIONS:
        raise InputError(f"correct: expected one of {', '.join(CORRECTIONS)}, got {correct!r}")
    systems = list(dict.fromkeys(per_sketch["system"]))
    if baseline is not None and baseline not in systems:
        raise InputError(
            f"--baseline {baseline}: no such system; expected one of {', '.join(systems)}"
        )
    if measures is None:
        measures = list(dict.fromkeys(per_sketch["measure"]))
    pairs, differences = _paired_differences(per_sketch, measures, baseline)
    if not pairs:
        return pd.DataFrame(columns=list(COMPARISON_COLUMNS))
    table = pd.DataFrame(pairs, columns=list(COMPARISON_COLUMNS[:7]))
    table["difference_ci_low"], table["difference_ci_high"] = _difference_intervals(
        differences, bootstrap, seed
    )
    table["effect_size_dz"] = [effect_size_dz(d) for d in differences]
    table[["t_statistic", "t_p_value"]] = np.array(_t_tests(differences)).reshape(-1, 2)
    table[["wilcoxon_statistic", "wilcoxon_p_value"]] = np.array(
        _wilcoxon_tests(differences)
    ).reshape(-1, 2)
    table["permutation_p_value"] = _permutation_p_values(differences, n_resamples, seed)
    family = table["measure"] if correct == "pairs" else pd.Series(0, index=table.index)
    for test in TESTS:
        column = f"{test}_p_value"
        table[f"{column}_holm"] = table.groupby(family, sort=False)[column].transform(
            lambda p: holm_adjusted(p.to_numpy(dtype=np.float64))
        )
    table["significant"] = table["permutation_p_value_holm"] < alpha
    adjusted = table[[f"{test}_p_value_holm" for test in TESTS]].to_numpy(dtype=np.float64)
    rejects = adjusted < alpha
    table["rejected_by"] = [
        ";".join(t for t, r in zip(TESTS, row, strict=True) if r) for row in rejects
    ]
    # A test that is undefined (no spread, no sketch) neither rejects nor disagrees.
    table["tests_disagree"] = rejects.any(axis=1) & (~rejects & ~np.isnan(adjusted)).any(axis=1)
    return table[list(COMPARISON_COLUMNS)]


def _paired_differences(
    per_sketch: pd.DataFrame, measures: Sequence[str], baseline: str | None
) -> tuple[list[tuple], list[np.ndarray]]:
    """Per measure and pair of systems, the first seven :data:`COMPARISON_COLUMNS` and the
    differences a - b on the sketches where both have a value."""
    pairs, differences = [], []
    for measure in measures:
        rows = per_sketch[per_sketch["measure"] == measure]
        wide = rows.pivot(index="sketch_id", columns="system", values="value")
        systems = list(dict.fromkeys(rows["system"]))
        if baseline is None:
            compared = list(itertools.combinations(systems, 2))
        else:
            compared = [(system, baseline) for system in systems if system != baseline]
        for first, second in compared:
            a = wide[first].to_numpy(dtype=np.float64)
            b = wide[second].to_numpy(dtype=np.float64)
            both = ~np.isnan(a) & ~np.isnan(b)
            d = a[both] - b[both]
            means = (a[both].mean(), b[both].mean(), d.mean()) if d.size else (np.nan,) * 3
            pairs.append((measure, first, second, int(d.size), *map(float, means)))
            differences.append(d)
    return pairs, differences


def _difference_intervals(
    differences: list[np.ndarray], bootstrap: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The paired bootstrap interval of each mean difference, one call per number of
    sketches; NaN with fewer than two."""
    low = np.full(len(differences), np.nan)
    high = np.full(len(differences), np.nan)
    sizes = np.array([d.size for d in differences])
    for size in np.unique(sizes[sizes >= 2]):
        rows = np.flatnonzero(sizes == size)
        low[rows], high[rows] = paired_differences_interval(
            np.vstack([differences[r] for r in rows]), n_resamples=bootstrap, seed=seed
        )
    return low, high


def _permutation_p_values(
    differences: list[np.ndarray], n_resamples: int, seed: int
) -> list[float]:
    """The permutation p-value of each mean difference, one matrix of sign flips per
    number of sketches; NaN without sketches."""
    patterns_for: dict[int, tuple[np.ndarray, bool]] = {}
    found = []
    for d in differences:
        if d.size == 0:
            found.append(float("nan"))
            continue
        if d.size not in patterns_for:
            patterns_for[d.size] = _sign_patterns(d.size, n_resamples, seed)
        patterns, exact = patterns_for[d.size]
        found.append(_permutation_pvalue(float(d.mean()), patterns @ d / d.size, exact))
    return found
