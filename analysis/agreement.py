"""Rank agreement: Kendall's tau_b between raters, and agreement among all of them.

The statistics of Eitz et al. (2011), Sec. 3.1 and 3.3.2. Significance follows the
paper: one-sided, P(tau >= tau_observed) under no correlation, from the normal
approximation with the tie-corrected variance (as ``scipy.stats.kendalltau`` and R's
``cor.test(method = "kendall", exact = FALSE)``). Kendall's W needs raters who rated
every image; Krippendorff's alpha and the Skillings-Mack test use every rating. The
tables over a whole ratings table are in :mod:`~sbir_study.analysis.agreement_tables`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from sbir_study.foundation.checks import InputError, check_option, float_array

from . import _agreement_kernels, _kernels

__all__ = [
    "FEWER_THAN_3",
    "KendallTauResult",
    "KendallWResult",
    "KrippendorffAlphaResult",
    "PairwiseTauResult",
    "SkillingsMackResult",
    "kendall_tau_b",
    "kendall_w",
    "krippendorff_alpha",
    "pairwise_kendall_tau",
    "skillings_mack",
    "undefined_tau_reasons",
]


class KendallTauResult(NamedTuple):
    """tau_b of two rating lists, its p-value and the number of items used."""

    statistic: float
    pvalue: float
    n_items: int


class PairwiseTauResult(NamedTuple):
    """tau_b, p-values and shared-item counts for every pair of raters (raters x raters)."""

    statistic: np.ndarray
    pvalue: np.ndarray
    n_items: np.ndarray


class KendallWResult(NamedTuple):
    """Kendall's W with its chi-square and F tests."""

    statistic: float
    chi2: float
    df: float
    pvalue: float
    f: float
    f_df1: float
    f_df2: float
    f_pvalue: float
    n_raters: int
    n_items: int
    n_raters_excluded: int


class KrippendorffAlphaResult(NamedTuple):
    """Krippendorff's alpha with its percentile bootstrap interval.

    ``n_values`` counts the pairable values (of units rated by at least two raters).
    """

    statistic: float
    ci_low: float
    ci_high: float
    level: str
    n_raters: int
    n_units: int
    n_values: int


class SkillingsMackResult(NamedTuple):
    """The Skillings-Mack test; ``n_raters`` counts the blocks with at least two ratings."""

    statistic: float
    df: int
    pvalue: float
    permutation_pvalue: float
    n_raters: int
    n_items: int


def kendall_tau_b(x: ArrayLike, y: ArrayLike, *, alternative: str = "greater") -> KendallTauResult:
    """Kendall's tau_b between two rating lists (NaN: not rated), over the items both rated.

    Parameters
    ----------
    alternative : {"greater", "two-sided", "less"}
        The paper's test is ``"greater"``.

    Returns
    -------
    KendallTauResult
        NaN statistic and p-value with fewer than two shared items or a constant list;
        NaN p-value also with two items (the normal approximation needs three).

    Notes
    -----
    tau_b = (n_c - n_d) / sqrt((N - U)(N - V)), N = n(n-1)/2, U and V the tied pairs in
    x and y (Eq. 2); z = (n_c - n_d) / sqrt(Var S) with the Kendall & Gibbons
    tie-corrected variance, by ``scipy.stats.kendalltau(method="asymptotic")``.
    Eitz et al. (2011), Sec. 3.1.1 Eq. 2 and Sec. 3.1.2.

    Examples
    --------
    >>> result = kendall_tau_b([1, 2, 3, 4, 5], [1, 3, 2, 4, 5])
    >>> round(result.statistic, 6), round(result.pvalue, 6), result.n_items
    (0.8, 0.025022, 5)
    >>> import scipy.stats
    >>> reference = scipy.stats.kendalltau([1, 2, 3, 4, 5], [1, 3, 2, 4, 5],
    ...                                    method="asymptotic", alternative="greater")
    >>> round(float(reference.pvalue), 6)
    0.025022
    """
    from scipy import stats

    check_option("alternative", alternative, _kernels.ALTERNATIVES)
    x = float_array(x, "x")
    y = float_array(y, "y")
    if x.ndim != 1 or x.shape != y.shape:
        raise InputError(
            f"x, y: expected two 1-D lists of the same length, got shapes {x.shape} and {y.shape}"
        )
    both = ~np.isnan(x) & ~np.isnan(y)
    n = int(both.sum())
    if n < 3:
        # The normal approximation needs n >= 3 (scipy divides by n - 2 there).
        tau, _, _ = _kernels.paired_rows_tau_b(x[None, both], y[None, both], alternative)
        return KendallTauResult(float(tau[0]), float("nan"), n)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = stats.kendalltau(x[both], y[both], method="asymptotic", alternative=alternative)
    return KendallTauResult(float(result.statistic), float(result.pvalue), n)


def pairwise_kendall_tau(ratings: ArrayLike, *, alternative: str = "greater") -> PairwiseTauResult:
    """Kendall's tau_b and its p-value for every pair of raters (``ratings``: raters x items).

    Each entry equals ``scipy.stats.kendalltau(a, b, method="asymptotic")`` on the items
    both rated, within rounding, NaN where :func:`kendall_tau_b` is. All pairs come from
    matrix products: with S_r the signs of x_ri - x_rj over item pairs i < j (0 where r
    lacks an item), n_c - n_d = S_a . S_b; the tie terms come from one product per
    distinct rating. Eitz et al. (2011), Sec. 3.3.2 (378 values per sketch).

    Examples
    --------
    >>> ratings = np.array([[1, 2, 3, 4], [1, 3, 2, 4], [4, 3, 2, np.nan]])
    >>> result = pairwise_kendall_tau(ratings, alternative="two-sided")
    >>> result.statistic.round(3)
    array([[ 1.   ,  0.667, -1.   ],
           [ 0.667,  1.   , -0.333],
           [-1.   , -0.333,  1.   ]])
    >>> result.n_items
    array([[4, 4, 3],
           [4, 4, 3],
           [3, 3, 3]])
    """
    check_option("alternative", alternative, _kernels.ALTERNATIVES)
    values = _matrix(ratings)
    return PairwiseTauResult(*_kernels.pairwise_tau_b(values, alternative))


def kendall_w(ratings: ArrayLike) -> KendallWResult:
    """Kendall's coefficient of concordance W, tie-corrected (``ratings``: raters x items).

    A rater with a missing item (NaN or ``pd.NA``) is left out and counted in
    ``n_raters_excluded``. ``chi2`` = m (n - 1) W on n - 1 df (Friedman's statistic,
    tie-corrected, as R's ``friedman.test``); ``f`` = (m - 1) W / (1 - W) on
    n - 1 - 2/m and (m - 1)(n - 1 - 2/m) df. NaN with fewer than two raters or all tied.

    With R_i the rank sum of item i (ties at their average rank), S = sum_i (R_i -
    m (n + 1) / 2)^2 and T_j = sum over rater j's tie groups of t^3 - t:
    W = 12 S / (m^2 (n^3 - n) - m sum_j T_j). Eitz et al. (2011), Sec. 3.3.2; Kendall &
    Gibbons (1990), Rank Correlation Methods, ch. 6.

    Examples
    --------
    >>> ratings = [[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]]
    >>> result = kendall_w(ratings)
    >>> round(result.statistic, 4), round(result.chi2, 4), result.df
    (0.7778, 7.0, 3.0)
    >>> import scipy.stats
    >>> round(float(scipy.stats.friedmanchisquare(*np.array(ratings).T).statistic), 4)
    7.0
    """
    values = _matrix(ratings)
    complete = values[~np.isnan(values).any(axis=1)]
    m, n = complete.shape
    excluded = values.shape[0] - m
    nan = float("nan")
    if m < 2 or n < 2:
        return KendallWResult(nan, nan, float(n - 1), nan, nan, nan, nan, nan, m, n, excluded)
    w = _agreement_kernels.kendall_w(complete)
    df = float(n - 1)
    chi2 = m * df * w
    f_df1 = df - 2.0 / m
    f_df2 = (m - 1) * f_df1
    # Perfect agreement: F is infinite and its p-value 0.
    f = (m - 1) * w / (1.0 - w) if w < 1.0 else float("inf")
    return KendallWResult(
        statistic=w,
        chi2=chi2,
        df=df,
        pvalue=float(special.chdtrc(df, chi2)),
        f=float(f),
        f_df1=f_df1,
        f_df2=f_df2,
        f_pvalue=float(special.fdtrc(f_df1, f_df2, f)),
        n_raters=m,
        n_items=n,
        n_raters_excluded=excluded,
    )


def krippendorff_alpha(
    ratings: ArrayLike,
    *,
    level: str = "ordinal",
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> KrippendorffAlphaResult:
    """Krippendorff's alpha over every rating (``ratings``: raters x units, NaN: not rated).

    Parameters
    ----------
    level : {"ordinal", "interval", "nominal", "ratio"}
    n_resamples : int
        Bootstrap resamples of the interval (0: no interval).
    seed : int
        Seed of the resampling.

    Returns
    -------
    KrippendorffAlphaResult
        1 is perfect agreement, 0 chance level; NaN where every pairable value is equal.

    Notes
    -----
    With o_ck the coincidences of values c and k within units (a unit of m_u ratings
    adds n_uc n_uk / (m_u - 1), minus n_uc / (m_u - 1) on the diagonal), n_c their
    marginals, n = sum n_c and delta^2_ck the metric's squared distance:
    alpha = 1 - (n - 1) sum o_ck delta^2_ck / sum n_c n_k delta^2_ck. interval:
    (c - k)^2; ordinal: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2; nominal: 1 for c != k;
    ratio: ((c - k) / (c + k))^2. The interval is a percentile bootstrap over units (a
    replication draws new sketch/image pairs), not Krippendorff's bootstrap of values,
    which takes one unit's ratings as independent. Krippendorff (2011), "Computing
    Krippendorff's Alpha-Reliability", Sec. C-F; Hayes and Krippendorff (2007).

    Examples
    --------
    Krippendorff's (2011) reliability data (4 observers, 12 units, missing values):

    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    ...         [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan]]
    >>> round(krippendorff_alpha(data, level="ordinal", n_resamples=0).statistic, 3)
    0.815
    >>> round(krippendorff_alpha(data, level="interval", n_resamples=0).statistic, 3)
    0.849
    >>> import krippendorff
    >>> round(float(krippendorff.alpha(data, level_of_measurement="interval")), 3)
    0.849
    """
    check_option("level", level, _agreement_kernels.ALPHA_LEVELS)
    _check_resampling(n_resamples, confidence_level)
    values = _matrix(ratings, "units")
    domain, counts = _value_counts(values)
    rng = np.random.default_rng(seed)
    statistic, low, high = _alpha_with_interval(
        _agreement_kernels.unit_coincidences(counts),
        domain,
        level,
        n_resamples,
        confidence_level,
        rng,
    )
    pairable = (~np.isnan(values)).sum(axis=0) >= 2
    given = ~np.isnan(values[:, pairable])
    return KrippendorffAlphaResult(
        statistic,
        low,
        high,
        level,
        int(given.any(axis=1).sum()),
        int(pairable.sum()),
        int(given.sum()),
    )


def skillings_mack(
    ratings: ArrayLike, *, permutations: int = 0, seed: int = 0
) -> SkillingsMackResult:
    """The Skillings-Mack test: Friedman's test generalised to missing ratings.

    ``ratings`` is raters (blocks) x items (treatments), NaN where not rated; raters with
    fewer than two ratings are left out. ``permutations`` random permutations give the
    permutation p-value (0: none). NaN with fewer than two such raters.

    Notes
    -----
    Each rater's ratings are ranked 1..k_i (ties at their average rank), a missing item
    at (k_i + 1) / 2. With A_j = sum_i sqrt(12 / (k_i + 1)) (r_ij - (k_i + 1) / 2) and
    Sigma_st = -lambda_st (raters who rated both s and t), Sigma_tt = sum_{s != t}
    lambda_st: SM = A' Sigma^- A, about chi-square on rank(Sigma) df. Sigma is the
    covariance without ties, as in the published test and its R packages, so with a
    rating scale's ties the chi-square p-value is conservative; the permutation p-value,
    (1 + #{SM* >= SM}) / (1 + permutations) over each rater's ranks shuffled among the
    items it rated, is valid for any number of permutations. Skillings and Mack (1981),
    Technometrics 23(2); Chatfield and Mander (2009), Stata Journal 9(2).

    Examples
    --------
    Skillings and Mack (1981), Table 1: four methods of assembly in nine blocks:

    >>> y = np.array([[3.2, 4.1, 3.8, 4.2], [3.1, 3.9, 3.4, 4.0], [4.3, 3.5, 4.6, 4.8],
    ...               [3.5, 3.6, 3.9, 4.0], [3.6, 4.2, 3.7, 3.9], [4.5, 4.7, 3.7, np.nan],
    ...               [np.nan, 4.2, 3.4, np.nan], [4.3, 4.6, 4.4, 4.9],
    ...               [3.5, np.nan, 3.7, 3.9]])
    >>> result = skillings_mack(y)
    >>> round(result.statistic, 3), result.df, round(result.pvalue, 4)
    (15.493, 3, 0.0014)
    """
    _check_count("permutations", permutations)
    values = _matrix(ratings)
    rng = np.random.default_rng(seed) if permutations else None
    statistic, df, blocks, permutation_p = _agreement_kernels.skillings_mack(
        values, permutations, rng
    )
    if blocks < 2:
        # One rater's ranks agree with themselves: a statistic over one block is no test of
        # agreement among raters, whatever number the formula gives.
        nan = float("nan")
        return SkillingsMackResult(nan, 0, nan, nan, blocks, values.shape[1])
    pvalue = float(special.chdtrc(df, statistic)) if df > 0 else float("nan")
    return SkillingsMackResult(statistic, df, pvalue, permutation_p, blocks, values.shape[1])


#: Fewer shared items than the tau_b test needs (its normal approximation needs three).
FEWER_THAN_3 = "fewer than 3 shared images"


def undefined_tau_reasons(
    x: np.ndarray, y: np.ndarray, x_labels: Iterable[object], y_labels: Iterable[object]
) -> np.ndarray:
    """Why the tau_b test between row i of ``x`` and row i of ``y`` is undefined.

    Over the items both rated: ``"fewer than 3 shared images"``, else ``"constant:
    <label>"`` for each side that gave every shared item one rating, else
    ``"undefined"``. Text, so a table says why a value is empty.

    Examples
    --------
    >>> x = np.array([[1, 2, 3], [4, 4, 4], [1, 2, np.nan]])
    >>> undefined_tau_reasons(x, np.array([[5, 5, 5]] * 3), ["a", "b", "c"], ["z"] * 3).tolist()
    ['constant: z', 'constant: b, z', 'fewer than 3 shared images']
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    both = ~np.isnan(x) & ~np.isnan(y)

    def constant(values):
        shared = np.where(both, values, np.nan)
        with np.errstate(invalid="ignore"):
            return np.fmax.reduce(shared, axis=1) == np.fmin.reduce(shared, axis=1)

    reasons = []
    for n, cx, cy, lx, ly in zip(
        both.sum(axis=1), constant(x), constant(y), x_labels, y_labels, strict=True
    ):
        if n < 3:
            reasons.append(FEWER_THAN_3)
        elif cx or cy:
            reasons.append("constant: " + ", ".join(str(v) for v, c in ((lx, cx), (ly, cy)) if c))
        else:
            reasons.append("undefined")
    return np.array(reasons, dtype=object)


def _matrix(ratings: ArrayLike, what: str = "items") -> np.ndarray:
    values = float_array(ratings)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x {what} array, got {values.ndim} dimension(s)"
        )
    return values


def _check_count(name: str, value: object) -> None:
    if not (isinstance(value, int | np.integer) and value >= 0):
        raise InputError(f"{name}: expected a whole number >= 0, got {value!r}")


def _check_resampling(n_resamples, confidence_level) -> None:
    _check_count("n_resamples", n_resamples)
    if not 0.0 < confidence_level < 1.0:
        raise InputError(
            f"confidence_level: expected a number between 0 and 1, got {confidence_level!r}"
        )


def _value_counts(values: np.ndarray, domain: np.ndarray | None = None):
    """The value domain (sorted) and each column's count of every value: units x values."""
    given = values[~np.isnan(values)]
    if domain is None:
        domain = np.unique(given)
    index = np.searchsorted(domain, values)
    if given.size:
        found = domain[np.clip(index, 0, domain.size - 1)]
        if (found != values)[~np.isnan(values)].any():
            raise InputError(f"ratings: expected values among {domain.tolist()}")
    rows, columns = np.nonzero(~np.isnan(values))
    cells = np.bincount(
        columns * domain.size + index[rows, columns], minlength=values.shape[1] * domain.size
    )
    return domain, cells.reshape(values.shape[1], domain.size)


def _alpha_with_interval(units, domain, level, n_resamples, confidence_level, rng):
    """alpha of the units' summed coincidences and its percentile bootstrap interval."""
    nan = float("nan")
    if units.shape[0] == 0:
        return nan, nan, nan
    statistic = float(_agreement_kernels.alpha_from_coincidences(units.sum(axis=0), domain, level))
    if n_resamples == 0 or np.isnan(statistic):
        return statistic, nan, nan
    resampled = _agreement_kernels.bootstrap_alpha(units, domain, level, n_resamples, rng)
    resampled = resampled[~np.isnan(resampled)]
    if resampled.size == 0:
        return statistic, nan, nan
    tail = (1.0 - confidence_level) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail])
    return statistic, float(low), float(high)
