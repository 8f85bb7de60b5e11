"""Rank agreement: Kendall's tau_b between raters and Kendall's W among them.

The statistics of Sec. 3.1 and 3.3.2 of Eitz et al. (2011). Significance
follows the paper: one-sided, P(tau >= tau_observed) under no correlation, from
the normal approximation with the tie-corrected variance (the variance that
``scipy.stats.kendalltau`` and R's ``cor.test(method = "kendall", exact =
FALSE)`` use). ``alternative="two-sided"`` and ``"less"`` are available.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import special

from . import _kernels
from ._moved import renamed
from .checks import InputError, check_option
from .ratings import rating_cube

__all__ = [
    "KendallTauResult",
    "KendallWResult",
    "PairwiseTauResult",
    "inter_user_tau",
    "inter_user_tau_by_sketch",
    "kendall_tau_b",
    "kendall_w",
    "kendall_w_by_sketch",
    "pairwise_kendall_tau",
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


def kendall_tau_b(x, y, *, alternative: str = "greater") -> KendallTauResult:
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
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
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


def pairwise_kendall_tau(ratings, *, alternative: str = "greater") -> PairwiseTauResult:
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
    values = np.asarray(ratings, dtype=np.float64)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x items array, got {values.ndim} dimension(s)"
        )
    return PairwiseTauResult(*_kernels.pairwise_tau_b(values, alternative))


def kendall_w(ratings) -> KendallWResult:
    """Kendall's coefficient of concordance W among raters, with tie correction.

    Parameters
    ----------
    ratings : array_like, raters x items
        A rater with any missing item (NaN) is left out; how many were left
        out is reported in ``n_raters_excluded``.

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
    values = np.asarray(ratings, dtype=np.float64)
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
    w = _kernels.kendall_w(complete)
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


def inter_user_tau(ratings: pd.DataFrame, *, alternative: str = "greater") -> pd.DataFrame:
    """Inter-user tau_b for every sketch and every pair of participants.

    Parameters
    ----------
    ratings : DataFrame
        A validated ratings table (:func:`~analysis.load_ratings`); the main
        phase is used.

    Returns
    -------
    DataFrame
        ``sketch_id, participant_a, participant_b, tau_b, p_value, n_items``,
        one row per sketch and unordered pair of participants who share at
        least one rated image of it.
    """
    parts = []
    for sketch_id, participants, result in inter_user_tau_by_sketch(
        ratings, alternative=alternative
    ):
        a, b = np.triu_indices(len(participants), 1)
        shared = result.n_items[a, b] > 0
        a, b = a[shared], b[shared]
        parts.append(
            pd.DataFrame(
                {
                    "sketch_id": sketch_id,
                    "participant_a": participants[a],
                    "participant_b": participants[b],
                    "tau_b": result.statistic[a, b],
                    "p_value": result.pvalue[a, b],
                    "n_items": result.n_items[a, b],
                }
            )
        )
    return pd.concat(parts, ignore_index=True) if parts else _empty_pairwise()


def inter_user_tau_by_sketch(ratings: pd.DataFrame, *, alternative: str = "greater"):
    """Yield ``(sketch_id, participants, PairwiseTauResult)`` for each sketch of the main phase.

    ``participants`` are those who rated at least one image of the sketch, in
    the order of the result's rows and columns. The matrices of one sketch at a
    time: at crowd scale the full table would not fit in memory.
    """
    check_option("alternative", alternative, _kernels.ALTERNATIVES)
    main = ratings[ratings["phase"] == "main"]
    if main.empty:
        return
    cube = rating_cube(main)
    for index, sketch_id in enumerate(cube.sketches):
        matrix = cube.sketch(index)
        rated = ~np.isnan(matrix).all(axis=1)
        yield (
            sketch_id,
            cube.participants[rated],
            PairwiseTauResult(*_kernels.pairwise_tau_b(matrix[rated], alternative)),
        )


def _empty_pairwise() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sketch_id": pd.Series(dtype=str),
            "participant_a": pd.Series(dtype=str),
            "participant_b": pd.Series(dtype=str),
            "tau_b": pd.Series(dtype=float),
            "p_value": pd.Series(dtype=float),
            "n_items": pd.Series(dtype=int),
        }
    )


def kendall_w_by_sketch(ratings: pd.DataFrame) -> pd.DataFrame:
    """Kendall's W for every sketch of the main phase.

    Returns
    -------
    DataFrame
        ``sketch_id, w, chi2, df, p_value, f, f_df1, f_df2, f_p_value,
        n_raters, n_items, n_raters_excluded``. For each sketch only the
        participants who rated every one of its images enter W;
        ``n_raters_excluded`` counts those left out.
    """
    main = ratings[ratings["phase"] == "main"]
    rows = []
    if not main.empty:
        cube = rating_cube(main)
        for index, sketch_id in enumerate(cube.sketches):
            matrix = cube.sketch(index)
            # A participant who never saw the sketch is not a rater of it.
            matrix = matrix[~np.isnan(matrix).all(axis=1)]
            rows.append((sketch_id, *kendall_w(matrix)))
    columns = [
        "sketch_id", "w", "chi2", "df", "p_value", "f", "f_df1", "f_df2", "f_p_value",
        "n_raters", "n_items", "n_raters_excluded",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


# Old names, still answering with a DeprecationWarning.
__getattr__ = renamed(
    "analysis.agreement",
    {"inter_rater_tau": "inter_user_tau", "inter_rater_tau_by_sketch": "inter_user_tau_by_sketch"},
    globals(),
)
