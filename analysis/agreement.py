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
every rating there is.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import special

from sbir_study.foundation.checks import InputError, check_option, check_whole_number, float_array
from sbir_study.foundation.scale import Scale

from . import _kernels
from .cube import RatingCube, main_phase_cube
from .limits import PERMUTATION_RATERS_LIMIT
from .orientation import ratings_scale

__all__ = [
    "AGREEMENT_COLUMNS",
    "KendallTauResult",
    "KendallWResult",
    "KrippendorffAlphaResult",
    "PairwiseTauResult",
    "SketchPairsResult",
    "SkillingsMackResult",
    "agreement_by_sketch",
    "inter_user_tau",
    "inter_user_tau_pairs",
    "kendall_tau_b",
    "kendall_w",
    "kendall_w_by_sketch",
    "krippendorff_alpha",
    "krippendorff_alpha_overall",
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


class SketchPairsResult(NamedTuple):
    """Inter-user tau_b of one sketch, one entry per pair of participants sharing an image.

    ``participant_a`` and ``participant_b`` index ``participants`` (a < b).
    """

    sketch_id: str
    participants: np.ndarray
    participant_a: np.ndarray
    participant_b: np.ndarray
    statistic: np.ndarray
    pvalue: np.ndarray
    n_items: np.ndarray
    #: Participants who rated the sketch; more than ``participants`` when a sample was drawn.
    n_raters_total: int = 0
    #: Why a pair's tau_b is undefined ("" where it is defined): :func:`undefined_tau_reasons`.
    reason: np.ndarray | None = None


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
    values = float_array(ratings)
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


def krippendorff_alpha(
    ratings,
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
    check_option("level", level, _kernels.ALPHA_LEVELS)
    _check_resampling(n_resamples, confidence_level)
    values = float_array(ratings)
    if values.ndim != 2:
        raise InputError(
            f"ratings: expected a raters x units array, got {values.ndim} dimension(s)"
        )
    domain, counts = _value_counts(values)
    rng = np.random.default_rng(seed)
    statistic, low, high = _alpha_with_interval(
        _kernels.unit_coincidences(counts), domain, level, n_resamples, confidence_level, rng
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


def skillings_mack(ratings, *, permutations: int = 0, seed: int = 0) -> SkillingsMackResult:
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
    statistic, df, blocks, permutation_p = _kernels.skillings_mack(values, permutations, rng)
    if blocks < 2:
        # One rater's ranks agree with themselves: a statistic over one block is no test of
        # agreement among raters, whatever number the formula gives.
        nan = float("nan")
        return SkillingsMackResult(nan, 0, nan, nan, blocks, values.shape[1])
    pvalue = float(special.chdtrc(df, statistic)) if df > 0 else float("nan")
    return SkillingsMackResult(statistic, df, pvalue, permutation_p, blocks, values.shape[1])


def inter_user_tau(ratings: pd.DataFrame, *, alternative: str = "greater") -> pd.DataFrame:
    """Inter-user tau_b for every sketch and every pair of participants.

    Parameters
    ----------
    ratings : DataFrame
        A validated ratings table (:func:`~sbir_study.analysis.load_ratings`); the main
        phase is used.

    Returns
    -------
    DataFrame
        ``sketch_id, participant_a, participant_b, tau_b, p_value, n_items,
        reason``, one row per sketch and unordered pair of participants who
        share at least one rated image of it. A pair whose test is undefined
        (:func:`undefined_tau_reasons`) has no ``tau_b`` and no ``p_value``, and
        its ``reason``; ``reason`` is empty for the others.
    """
    parts = [
        pd.DataFrame(
            {
                "sketch_id": pairs.sketch_id,
                "participant_a": pairs.participants[pairs.participant_a],
                "participant_b": pairs.participants[pairs.participant_b],
                "tau_b": pairs.statistic,
                "p_value": pairs.pvalue,
                "n_items": pairs.n_items.astype(np.int64),
                "reason": pairs.reason,
            }
        )
        for pairs in inter_user_tau_pairs(ratings, alternative=alternative)
    ]
    return pd.concat(parts, ignore_index=True) if parts else _empty_pairwise()


def inter_user_tau_pairs(
    ratings: pd.DataFrame,
    *,
    alternative: str = "greater",
    max_raters: int | None = None,
    seed: int = 0,
    cube: RatingCube | None = None,
):
    """Yield a :class:`SketchPairsResult` for each sketch of the main phase.

    The pairs of participants who share at least one rated image of the
    sketch, a < b in the order of ``participants`` (those who rated at least
    one image of it). No participants x participants matrix is made, so this
    runs at any number of raters in memory proportional to the pairs of one
    sketch.

    With ``max_raters``, a sketch rated by more participants than that gives
    the pairs among ``max_raters`` of them drawn at random without
    replacement (each sketch its own draw, from ``seed`` and the sketch id,
    whatever other sketches the table holds): every pair of raters is equally
    likely to be in the sample, so the distribution of tau_b over the sampled
    pairs estimates the one over all pairs, at a cost that no longer grows with
    the square of the crowd. ``n_raters_total`` says how many there were.

    A pair whose test is undefined has NaN for tau_b and p-value and its
    ``reason`` (:func:`undefined_tau_reasons`); ``reason`` is "" for the others.

    ``cube``: see :func:`~sbir_study.analysis.cube.main_phase_cube`.

    Examples
    --------
    >>> table = pd.DataFrame({"participant": ["1", "1", "1", "2", "2", "2"],
    ...                       "sketch_id": "s", "image_id": list("abcabc"),
    ...                       "rating": [1, 2, 3, 1, 3, 2], "phase": "main"})
    >>> pairs = next(inter_user_tau_pairs(table))
    >>> pairs.participants.tolist(), round(float(pairs.statistic[0]), 4)
    (['1', '2'], 0.3333)
    """
    check_whole_number("max_raters", max_raters, 2, none_ok=True)
    check_option("alternative", alternative, _kernels.ALTERNATIVES)

    def sketches():
        for _, sketch_id, participants, matrix in _sketch_matrices(ratings, cube):
            n_raters_total = participants.size
            if max_raters is not None and n_raters_total > max_raters:
                rng = np.random.default_rng([seed, zlib.crc32(str(sketch_id).encode("utf-8"))])
                chosen = np.sort(rng.choice(n_raters_total, size=max_raters, replace=False))
                participants, matrix = participants[chosen], matrix[chosen]
            yield sketch_id, participants, matrix, n_raters_total

    def pairs_of(sketch_id, participants, matrix, n_raters_total) -> SketchPairsResult:
        blocks = list(_kernels.pairwise_tau_b_blocks(matrix, alternative))
        if not blocks:  # nobody rated any image of the sketch
            blocks = [(np.empty(0, np.int32),) * 2 + (np.empty(0),) * 2 + (np.empty(0, np.int32),)]
        a, b, tau, p, n = (np.concatenate(column) for column in zip(*blocks, strict=True))
        reason = np.full(p.size, "", dtype=object)
        undefined = np.flatnonzero(np.isnan(p))
        if undefined.size:
            # A tau_b of two shared images has no test: not a result either (docs/agreement.md).
            tau[undefined] = np.nan
            ia, ib = a[undefined], b[undefined]
            reason[undefined] = undefined_tau_reasons(
                matrix[ia], matrix[ib], participants[ia], participants[ib]
            )
        return SketchPairsResult(sketch_id, participants, a, b, tau, p, n, n_raters_total, reason)

    yield from _kernels.in_order(
        pairs_of, sketches(), weight=lambda job: job[2].shape[0] ** 2, threshold=2.5e5
    )


#: Fewer shared items than the tau_b test needs (its normal approximation needs three).
FEWER_THAN_3 = "fewer than 3 shared images"


def undefined_tau_reasons(x: np.ndarray, y: np.ndarray, x_labels, y_labels) -> np.ndarray:
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


def _empty_pairwise() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sketch_id": pd.Series(dtype=str),
            "participant_a": pd.Series(dtype=str),
            "participant_b": pd.Series(dtype=str),
            "tau_b": pd.Series(dtype=float),
            "p_value": pd.Series(dtype=float),
            "n_items": pd.Series(dtype=int),
            "reason": pd.Series(dtype=str),
        }
    )


def kendall_w_by_sketch(ratings: pd.DataFrame, *, cube: RatingCube | None = None) -> pd.DataFrame:
    """Kendall's W for every sketch of the main phase.

    ``cube``: see :func:`~sbir_study.analysis.cube.main_phase_cube`.

    Returns
    -------
    DataFrame
        ``sketch_id, w, chi2, df, p_value, f, f_df1, f_df2, f_p_value,
        n_raters, n_items, n_raters_excluded``. For each sketch only the
        participants who rated every one of its images enter W;
        ``n_raters_excluded`` counts those left out. :func:`agreement_by_sketch`
        adds the statistics that use every rating.
    """
    rows = [
        (sketch_id, *kendall_w(matrix))
        for _, sketch_id, _, matrix in _sketch_matrices(ratings, cube)
    ]
    return pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS[:12]))


def _sketch_matrices(ratings: pd.DataFrame, cube: RatingCube | None = None):
    """Yield ``(index, sketch_id, raters, raters x images)`` for each sketch of the main phase.

    The raters of a sketch are the participants who rated at least one of its
    images: one who never saw it is not a rater of it. ``cube``, when given, is the
    rating cube of the main phase of ``ratings``.
    """
    cube = main_phase_cube(ratings, cube)
    if cube is None:
        return
    for index, sketch_id in enumerate(cube.sketches):
        matrix = cube.sketch(index)
        rated = ~np.isnan(matrix).all(axis=1)
        yield index, sketch_id, cube.participants[rated], matrix[rated]


#: The columns of :func:`agreement_by_sketch` (``kendall_w.csv``), in order.
AGREEMENT_COLUMNS = (
    "sketch_id",
    "w",
    "chi2",
    "df",
    "p_value",
    "f",
    "f_df1",
    "f_df2",
    "f_p_value",
    "n_raters",
    "n_items",
    "n_raters_excluded",
    "n_raters_all",
    "n_ratings",
    "alpha_ordinal",
    "alpha_ordinal_ci_low",
    "alpha_ordinal_ci_high",
    "alpha_interval",
    "alpha_interval_ci_low",
    "alpha_interval_ci_high",
    "skillings_mack",
    "skillings_mack_df",
    "skillings_mack_p_value",
    "skillings_mack_permutation_p_value",
    "skillings_mack_n_raters",
    "w_reason",
    "alpha_reason",
    "skillings_mack_reason",
)
_ALPHA_TABLE_LEVELS = ("ordinal", "interval")


def agreement_by_sketch(
    ratings: pd.DataFrame,
    *,
    n_resamples: int = 1000,
    permutations: int = 1000,
    seed: int = 0,
    confidence_level: float = 0.95,
    cube: RatingCube | None = None,
    scale: Scale | None = None,
) -> pd.DataFrame:
    """Kendall's W, Krippendorff's alpha and the Skillings-Mack test for every sketch.

    Parameters
    ----------
    ratings : DataFrame
        A validated ratings table (:func:`~sbir_study.analysis.load_ratings`); the main
        phase is used.
    n_resamples : int
        Bootstrap resamples of each alpha's interval (0: none).
    permutations : int
        Permutations of the Skillings-Mack permutation p-value, computed for
        sketches with at most :data:`~.limits.PERMUTATION_RATERS_LIMIT` raters (0: none).
    seed : int
        Seed of the resampling and the permutations; the same input and seed
        give the same table.
    confidence_level : float
        Confidence level of each alpha's interval.
    cube : RatingCube, optional
        See :func:`~sbir_study.analysis.cube.main_phase_cube`.
    scale : Scale, optional
        The ratings' scale (default: :func:`~sbir_study.analysis.orientation.ratings_scale`
        of ``ratings``): its points are the values alpha's metric is over.

    Returns
    -------
    DataFrame
        The columns :data:`AGREEMENT_COLUMNS`, one row per sketch. The raters of
        a sketch are the m = ``n_raters_all`` participants who rated at least
        one of its images. ``w`` and its tests stand on the k = ``n_raters``
        of them who rated every image (``n_raters_excluded`` = m - k), as in
        the paper; ``alpha_*`` on all m and every one of their
        ``n_ratings`` ratings; ``skillings_mack*`` on the
        ``skillings_mack_n_raters`` who rated at least two images. Each of the
        three needs at least two participants: where one is undefined, its
        ``w_reason``, ``alpha_reason`` or ``skillings_mack_reason`` says why
        (:func:`_sketch_reasons`), empty where it is defined.

    References
    ----------
    Eitz et al. (2011), Sec. 3.3.2; Krippendorff (2011); Skillings and Mack (1981).

    Examples
    --------
    Three participants rate four images of one sketch; the third misses one:

    >>> table = pd.DataFrame({"participant": np.repeat(["01", "02", "03"], 4),
    ...                       "sketch_id": "s", "image_id": list("abcd") * 3, "phase": "main",
    ...                       "rating": [1, 3, 5, 7, 2, 3, 6, 7, 1, np.nan, 4, 6]})
    >>> row = agreement_by_sketch(table, n_resamples=0, permutations=0).iloc[0]
    >>> int(row.n_raters), int(row.n_raters_all), int(row.n_ratings)  # W over 2 of 3
    (2, 3, 11)
    >>> [round(float(row[c]), 4) for c in ("w", "alpha_ordinal", "skillings_mack")]
    [1.0, 0.9074, 7.9454]
    >>> import krippendorff  # the ordinal alpha over all three, as the package computes it
    >>> round(float(krippendorff.alpha([[1, 3, 5, 7], [2, 3, 6, 7], [1, np.nan, 4, 6]],
    ...                                level_of_measurement="ordinal",
    ...                                value_domain=list(range(1, 8)))), 4)
    0.9074
    """
    _check_resampling(n_resamples, confidence_level)
    if not (isinstance(permutations, int | np.integer) and permutations >= 0):
        raise InputError(f"permutations: expected a whole number >= 0, got {permutations!r}")
    domain = np.array((scale or ratings_scale(ratings)).points, dtype=np.float64)
    rows = []
    for index, sketch_id, _, matrix in _sketch_matrices(ratings, cube):
        # One stream per sketch: a sketch's intervals do not depend on the others.
        rng = np.random.default_rng([seed, index])
        units = _kernels.unit_coincidences(_value_counts(matrix, domain)[1])
        alphas = [
            _alpha_with_interval(units, domain, level, n_resamples, confidence_level, rng)
            for level in _ALPHA_TABLE_LEVELS
        ]
        test = skillings_mack(
            matrix,
            permutations=permutations if len(matrix) <= PERMUTATION_RATERS_LIMIT else 0,
            seed=int(rng.integers(2**63)),
        )
        w = kendall_w(matrix)
        rows.append(
            (
                sketch_id,
                *w,
                len(matrix),
                int((~np.isnan(matrix)).sum()),
                *alphas[0],
                *alphas[1],
                test.statistic,
                test.df,
                test.pvalue,
                test.permutation_pvalue,
                test.n_raters,
                *_sketch_reasons(matrix, w, alphas[0][0], test),
            )
        )
    return pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))


def _sketch_reasons(
    matrix: np.ndarray, w: KendallWResult, alpha: float, test: SkillingsMackResult
) -> tuple[str, str, str]:
    """Why W, alpha and the Skillings-Mack test of one sketch are undefined ("" where defined).

    ``matrix`` holds the sketch's m raters (each rated at least one image). The
    reasons name the design, not a number: a W over one participant is no W.
    """
    m = len(matrix)
    few = "no rater" if m == 0 else "one rater" if m == 1 else ""
    w_reason = alpha_reason = sm_reason = ""
    if np.isnan(w.statistic):
        w_reason = few or (
            f"{w.n_raters} of {m} rated every image"
            if w.n_raters < 2
            else "one image"
            if w.n_items < 2
            else "every rater constant"
        )
    if np.isnan(alpha):
        twice = ((~np.isnan(matrix)).sum(axis=0) >= 2).any()
        alpha_reason = few or ("every rating the same" if twice else "no image rated twice")
    if np.isnan(test.pvalue):
        sm_reason = few or (
            f"{test.n_raters} of {m} rated 2 images"
            if test.n_raters < 2
            else "one image"
            if test.n_items < 2
            else "undefined"
        )
    return w_reason, alpha_reason, sm_reason


def krippendorff_alpha_overall(
    ratings: pd.DataFrame,
    *,
    level: str = "ordinal",
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    scale: Scale | None = None,
) -> KrippendorffAlphaResult:
    """Krippendorff's alpha of a whole study: every sketch/image pair of the main phase a unit.

    Computed from each pair's count of every rating (no participants x
    pairs matrix is built, so it costs the same for 28 participants as for 10,000);
    the interval is a percentile bootstrap over the pairs (see
    :func:`krippendorff_alpha`). The values are the points of ``scale`` (default:
    :func:`~sbir_study.analysis.orientation.ratings_scale` of ``ratings``).

    Examples
    --------
    >>> table = pd.DataFrame({"participant": ["1", "2", "3"] * 2, "phase": "main",
    ...                       "sketch_id": "s", "image_id": ["a"] * 3 + ["b"] * 3,
    ...                       "rating": [1, 1, 2, 6, 7, 7]})
    >>> result = krippendorff_alpha_overall(table, level="interval", n_resamples=0)
    >>> round(result.statistic, 4), result.n_units, result.n_values
    (0.9621, 2, 6)
    >>> import krippendorff  # the same study as a raters x pairs matrix
    >>> round(float(krippendorff.alpha([[1, 6], [1, 7], [2, 7]],
    ...                                level_of_measurement="interval")), 4)
    0.9621
    """
    return alpha_at_levels(
        ratings,
        (level,),
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
        scale=scale,
    )[level]


def alpha_at_levels(
    ratings: pd.DataFrame,
    levels: Sequence[str],
    *,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    scale: Scale | None = None,
) -> dict[str, KrippendorffAlphaResult]:
    """:func:`krippendorff_alpha_overall` at each of ``levels``, the same results as one
    call per level (each bootstrap from ``seed``), from one count of the ratings.

    Counting each pair's ratings is most of the work at crowd size (12 million rows at
    10,000 participants); ``analyze`` reports the ordinal and the interval alpha.
    """
    for level in levels:
        check_option("level", level, _kernels.ALPHA_LEVELS)
    _check_resampling(n_resamples, confidence_level)
    rating = ratings["rating"].to_numpy(dtype=np.float64, na_value=np.nan)
    used = (ratings["phase"] == "main").to_numpy() & ~np.isnan(rating)
    # Each sketch/image pair numbered by its first row, as pd.factorize numbers them (the
    # bootstrap draws the pairs by these numbers), and each row's participant.
    pair_code, n_pairs, participant = _pair_codes(ratings, used)
    scale = scale or ratings_scale(ratings)
    domain = np.array(scale.points, dtype=np.float64)
    value = rating[used].astype(np.int64) - scale.low
    cells = np.bincount(pair_code * domain.size + value, minlength=n_pairs * domain.size)
    counts = cells.reshape(n_pairs, domain.size)
    pairable = counts.sum(axis=1) >= 2
    units = _kernels.unit_coincidences(counts)
    in_pairable = pairable[pair_code]
    raters = _distinct_count(participant[in_pairable])
    results = {}
    for level in levels:
        statistic, low, high = _alpha_with_interval(
            units, domain, level, n_resamples, confidence_level, np.random.default_rng(seed)
        )
        results[level] = KrippendorffAlphaResult(
            statistic, low, high, level, raters, int(pairable.sum()), int(in_pairable.sum())
        )
    return results


def _pair_codes(ratings: pd.DataFrame, used: np.ndarray):
    """For the ``used`` rows: each row's sketch/image pair as ``pd.factorize`` numbers the
    pairs (in the order of their first rows), the number of pairs, and each row's
    participant as an integer code.

    From the categoricals' codes when the three columns are categoricals (as validated
    ratings are) without a missing label among the rows: a pair's first row by one
    ``np.minimum.at`` over a table of every sketch x image, not a hash of 12 million rows
    (0.3 s at 10,000 participants, and as much again for each column factorized).
    """
    columns = [ratings[name] for name in ("sketch_id", "image_id", "participant")]
    if all(isinstance(c.dtype, pd.CategoricalDtype) for c in columns):
        sketch, image, participant = (c.cat.codes.to_numpy()[used] for c in columns)
        if not ((sketch < 0).any() or (image < 0).any() or (participant < 0).any()):
            size = len(columns[1].cat.categories)
            key = sketch.astype(np.intp) * size + image
            pair_code, n_pairs = _first_row_codes(key, len(columns[0].cat.categories) * size)
            return pair_code, n_pairs, participant
    sketch, _ = pd.factorize(columns[0][used])
    image, images = pd.factorize(columns[1][used])
    participant, _ = pd.factorize(columns[2][used])
    pair_code, pairs = pd.factorize(sketch.astype(np.int64) * max(len(images), 1) + image)
    return pair_code, len(pairs), participant


def _first_row_codes(keys: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """``pd.factorize(keys)``'s codes and number of distinct keys, for keys in
    ``range(size)``: each key numbered by the rank of its first row."""
    first = np.full(size, keys.size, dtype=np.intp)
    np.minimum.at(first, keys, np.arange(keys.size))
    present = np.flatnonzero(first < keys.size)
    order = present[np.argsort(first[present])]  # first rows are distinct: no ties
    code = np.empty(size, dtype=np.intp)
    code[order] = np.arange(order.size)
    return code[keys], int(order.size)


def _distinct_count(codes: np.ndarray) -> int:
    """How many distinct values ``codes`` (integer codes; factorize's -1 for a missing
    label counts as one) holds, as ``np.unique(codes).size``."""
    if codes.size == 0:
        return 0
    if codes.min() < 0:
        return int(np.unique(codes).size)
    return int(np.count_nonzero(np.bincount(codes)))


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
    statistic = float(_kernels.alpha_from_coincidences(units.sum(axis=0), domain, level))
    if n_resamples == 0 or np.isnan(statistic):
        return statistic, nan, nan
    resampled = _kernels.bootstrap_alpha(units, domain, level, n_resamples, rng)
    resampled = resampled[~np.isnan(resampled)]
    if resampled.size == 0:
        return statistic, nan, nan
    tail = (1.0 - confidence_level) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail])
    return statistic, float(low), float(high)
