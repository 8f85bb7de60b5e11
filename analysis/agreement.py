"""Rank agreement: Kendall's tau_b between raters, and agreement among all of them.

The statistics of Sec. 3.1 and 3.3.2 of Eitz et al. (2011). Significance
follows the paper: one-sided, P(tau >= tau_observed) under no correlation, from
the normal approximation with the tie-corrected variance (the variance that
``scipy.stats.kendalltau`` and R's ``cor.test(method = "kendall", exact =
FALSE)`` use). ``alternative="two-sided"`` and ``"less"`` are available.

Agreement among all raters of a sketch comes three ways (``docs/formats.md``,
``kendall_w.csv``): Kendall's W, as in the paper, needs raters who rated every
image, so a rater who missed one response window of a sketch leaves it;
Krippendorff's alpha (ordinal and interval) and the Skillings-Mack test use
every rating there is. Each statistic here takes one array of ratings; the tables of
a whole ratings table (per sketch, over the study) are in
:mod:`~sbir_study.analysis.agreement_tables`.
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

    ``n_raters`` raters gave the ``n_values`` pairable values (values of units
    that at least two raters rated) to ``n_units`` units.
    """

    statistic: float
    ci_low: float
    ci_high: float
    level: str
    n_raters: int
    n_units: int
    n_values: int


class SkillingsMackResult(NamedTuple):
    """The Skillings-Mack test: its statistic, chi-square and permutation p-values.

    ``n_raters`` counts the raters (blocks) with at least two ratings, the ones
    the test uses; ``permutation_pvalue`` is NaN when not computed.
    """

    statistic: float
    df: int
    pvalue: float
    permutation_pvalue: float
    n_raters: int
    n_items: int


def kendall_tau_b(x: ArrayLike, y: ArrayLike, *, alternative: str = "greater") -> KendallTauResult:
    """Kendall's tau_b between two rating lists, over the items both rated.

    Parameters
    ----------
    x, y : array_like, 1-D, same length
        Ratings (or scores) of the same items; NaN marks an item not rated.
    alternative : {"greater", "two-sided", "less"}
        The paper tests P(tau >= tau_observed) under no correlation
        (``"greater"``, the default).

    Returns
    -------
    KendallTauResult
        ``statistic`` (tau_b), ``pvalue`` and ``n_items``; statistic and
        p-value are NaN with fewer than two shared items or a constant list,
        the p-value also with two items (the normal approximation needs three).

    Notes
    -----
    tau_b = (n_c - n_d) / sqrt((N - U)(N - V)), N = n(n-1)/2, U and V the
    numbers of tied pairs in x and y (Eq. 2). The p-value uses
    z = (n_c - n_d) / sqrt(Var S) with the Kendall & Gibbons tie-corrected
    variance. Computed by ``scipy.stats.kendalltau(method="asymptotic")``.

    References
    ----------
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
    """Kendall's tau_b and its p-value for every pair of raters at once.

    Parameters
    ----------
    ratings : array_like, raters x items
        NaN marks an item a rater did not rate; each pair of raters uses the
        items both rated.
    alternative : {"greater", "two-sided", "less"}

    Returns
    -------
    PairwiseTauResult
        ``statistic``, ``pvalue`` and ``n_items``, each raters x raters and
        symmetric. Entries are equal to ``scipy.stats.kendalltau(a, b,
        method="asymptotic", alternative=...)`` on the shared items, within
        rounding; NaN where that is undefined (fewer than two shared items or
        a constant list; the p-value also with two shared items, where scipy
        divides by zero and R's ``cor.test`` refuses).

    Notes
    -----
    All pairs come from matrix products: with S_r the signs of
    x_ri - x_rj over the item pairs i < j (0 where r lacks an item),
    n_c - n_d = S_a . S_b; the tie terms restricted to the shared items come
    from one product per distinct rating value. The cost is
    O(raters^2 x items^2) in BLAS instead of raters^2 calls.

    References
    ----------
    Eitz et al. (2011), Sec. 3.3.2: inter-user correlation, 378 values per sketch.

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
    values = float_array(ratings)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x items array, got {values.ndim} dimension(s)"
        )
    return PairwiseTauResult(*_kernels.pairwise_tau_b(values, alternative))


def kendall_w(ratings: ArrayLike) -> KendallWResult:
    """Kendall's coefficient of concordance W among raters, with tie correction.

    Parameters
    ----------
    ratings : array_like, raters x items
        A rater with any missing item (NaN) is left out; how many were left
        out is reported in ``n_raters_excluded``. Any integer or float dtype,
        pandas' nullable ones (``Int64``, ...) included; ``pd.NA`` is missing.

    Returns
    -------
    KendallWResult
        ``statistic`` (W in [0, 1]); ``chi2`` = m (n - 1) W with ``df`` = n - 1
        and its ``pvalue``; the F variant ``f`` = (m - 1) W / (1 - W) with
        ``f_df1`` = n - 1 - 2/m, ``f_df2`` = (m - 1) f_df1 and ``f_pvalue``.
        NaN where fewer than two raters remain or all ratings are tied.

    Notes
    -----
    With R_i the sum of the ranks given to item i (ties share their average
    rank), S = sum_i (R_i - m (n + 1) / 2)^2 and T_j = sum over rater j's tie
    groups of t^3 - t:

        W = 12 S / (m^2 (n^3 - n) - m sum_j T_j).

    The chi-square statistic is Friedman's, corrected for ties, as R's
    ``friedman.test`` computes it.

    References
    ----------
    Eitz et al. (2011), Sec. 3.3.2; Kendall & Gibbons (1990), Rank Correlation
    Methods, ch. 6.

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
    values = float_array(ratings)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x items array, got {values.ndim} dimension(s)"
        )
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
    """Krippendorff's alpha over every rating, missing cells and all.

    Parameters
    ----------
    ratings : array_like, raters x units
        NaN (or ``pd.NA``) where a rater did not rate a unit; any integer or
        float dtype. A unit rated by fewer than two raters is not pairable and
        does not count.
    level : {"ordinal", "interval", "nominal", "ratio"}
        The metric: ``"ordinal"`` for the rating scale read as ranks,
        ``"interval"`` for it read as equally spaced numbers.
    n_resamples : int
        Bootstrap resamples of the interval (0: no interval).
    confidence_level : float
    seed : int
        Seed of the resampling: the same input gives the same interval.

    Returns
    -------
    KrippendorffAlphaResult
        ``statistic`` (1 = perfect agreement, 0 = agreement at chance level),
        ``ci_low`` and ``ci_high``, and the raters, units and values it rests on.
        NaN where every pairable value is the same.

    Notes
    -----
    With o_ck the coincidences of values c and k within units (each unit of
    m_u ratings adds n_uc n_uk / (m_u - 1), minus n_uc / (m_u - 1) on the
    diagonal), n_c their marginals, n = sum n_c and delta^2_ck the metric's
    squared distance,

        alpha = 1 - (n - 1) sum_ck o_ck delta^2_ck / sum_ck n_c n_k delta^2_ck.

    interval: delta^2 = (c - k)^2; ordinal: delta^2 = (sum_{g=c..k} n_g -
    (n_c + n_k) / 2)^2; nominal: 1 for c != k; ratio: ((c - k) / (c + k))^2.

    The interval is a percentile bootstrap over the units: units are drawn
    with replacement (the unit, here a sketch/image pair, is what a
    replication would draw anew), and each resample's alpha is computed from
    the drawn units' coincidences. Krippendorff's own bootstrap resamples
    pairable values as if they were independent, which ratings of one unit
    are not.

    References
    ----------
    K. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability",
    Sec. C-F; A. F. Hayes and K. Krippendorff (2007), Communication Methods
    and Measures 1(1).

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
    values = float_array(ratings)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x units array, got {values.ndim} dimension(s)"
        )
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

    Parameters
    ----------
    ratings : array_like, raters x items
        Raters are the blocks, items (a sketch's images) the treatments; NaN
        (or ``pd.NA``) where a rater did not rate an item. Raters with fewer
        than two ratings carry no ranking and are left out.
    permutations : int
        Random permutations for the permutation p-value (0: none).
    seed : int
        Seed of the permutations.

    Returns
    -------
    SkillingsMackResult
        ``statistic`` (SM), ``df`` (the rank of its covariance matrix, n - 1 for
        a connected design), ``pvalue`` from the chi-square distribution,
        ``permutation_pvalue`` and the raters and items it rests on. NaN with
        fewer than two raters of at least two ratings: one rater is no agreement.

    Notes
    -----
    Each rater's ratings are ranked 1..k_i (ties share their average rank) and
    a missing item gets the middle rank (k_i + 1) / 2. With
    A_j = sum_i sqrt(12 / (k_i + 1)) (r_ij - (k_i + 1) / 2), lambda_st the
    number of raters who rated both s and t, and Sigma the matrix with
    Sigma_st = -lambda_st and Sigma_tt = sum_{s != t} lambda_st,
    SM = A' Sigma^- A (a generalised inverse), approximately chi-square with
    rank(Sigma) degrees of freedom. Without missing ratings and without ties
    it is Friedman's statistic. Sigma is the covariance without ties, as in
    the published test and its R implementations: with the many ties of a
    rating scale (7 points in the paper) the chi-square p-value is conservative. The permutation
    p-value is not: it shuffles each rater's ranks among the items that
    rater rated (keeping the missing pattern and the ties), and is
    (1 + #{SM* >= SM}) / (1 + permutations), a valid p-value for any number
    of permutations.

    References
    ----------
    J. H. Skillings and G. A. Mack (1981), "On the use of a Friedman-type
    statistic in balanced and unbalanced block designs", Technometrics 23(2),
    171-177; M. Chatfield and A. Mander (2009), Stata Journal 9(2), 299-305.

    Examples
    --------
    Skillings and Mack (1981), Table 1: four methods of assembling a product
    (columns) in nine blocks, four values missing:

    >>> y = np.array([[3.2, 4.1, 3.8, 4.2], [3.1, 3.9, 3.4, 4.0], [4.3, 3.5, 4.6, 4.8],
    ...               [3.5, 3.6, 3.9, 4.0], [3.6, 4.2, 3.7, 3.9], [4.5, 4.7, 3.7, np.nan],
    ...               [np.nan, 4.2, 3.4, np.nan], [4.3, 4.6, 4.4, 4.9],
    ...               [3.5, np.nan, 3.7, 3.9]])
    >>> result = skillings_mack(y)
    >>> round(result.statistic, 3), result.df, round(result.pvalue, 4)
    (15.493, 3, 0.0014)
    """
    if not (isinstance(permutations, int | np.integer) and permutations >= 0):
        raise InputError(f"permutations: expected a whole number >= 0, got {permutations!r}")
    values = float_array(ratings)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x items array, got {values.ndim} dimension(s)"
        )
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

    Over the items both rows rated (NaN: not rated): ``"fewer than 3 shared
    images"`` (the test needs three), else ``"constant: <label>"`` for the side
    (or ``"constant: <a>, <b>"`` for both sides) that gave every shared item one
    rating, since a constant list has no ranking to agree with. A row that is
    neither gets ``"undefined"``, which none should. Reasons are text, so a table
    says them where the value is empty, and a count of them says why a share's
    denominator is what it is.

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


def _check_resampling(n_resamples, confidence_level) -> None:
    if not (isinstance(n_resamples, int | np.integer) and n_resamples >= 0):
        raise InputError(f"n_resamples: expected a whole number >= 0, got {n_resamples!r}")
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
