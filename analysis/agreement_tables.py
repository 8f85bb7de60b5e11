"""Agreement over a ratings table: per sketch, and over the whole study.

The tables ``analyze`` writes from :mod:`~sbir_study.analysis.agreement`: inter-user
tau_b of each sketch (Eitz et al. 2011, Sec. 3.3.2; ``pairwise_tau.parquet``), W,
alpha and Skillings-Mack per sketch (``kendall_w.csv``), and the study-wide alpha.
Each reads the main phase of a validated ratings table as a
:class:`~sbir_study.analysis.cube.RatingCube` (``cube``: see
:func:`~sbir_study.analysis.cube.main_phase_cube`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import check_option, check_whole_number
from sbir_study.foundation.scale import Scale

from . import _agreement_kernels, _kernels
from .agreement import (
    KendallWResult,
    KrippendorffAlphaResult,
    SkillingsMackResult,
    _alpha_with_interval,
    _check_count,
    _check_resampling,
    _value_counts,
    kendall_w,
    skillings_mack,
    undefined_tau_reasons,
)
from .cube import RatingCube, main_phase_cube
from .limits import PERMUTATION_RATERS_LIMIT
from .orientation import ratings_scale

__all__ = [
    "AGREEMENT_COLUMNS",
    "SketchPairsResult",
    "agreement_by_sketch",
    "alpha_at_levels",
    "inter_user_tau",
    "inter_user_tau_pairs",
    "kendall_w_by_sketch",
    "krippendorff_alpha_overall",
]


class SketchPairsResult(NamedTuple):
    """Inter-user tau_b of one sketch, one entry per pair of participants (indices a < b)."""

    sketch_id: str
    participants: np.ndarray
    participant_a: np.ndarray
    participant_b: np.ndarray
    statistic: np.ndarray
    pvalue: np.ndarray
    n_items: np.ndarray
    #: Participants who rated the sketch; more than ``participants`` when a sample was drawn.
    n_raters_total: int
    #: Why a pair's tau_b is undefined ("" where it is defined): :func:`undefined_tau_reasons`.
    reason: np.ndarray


def inter_user_tau(ratings: pd.DataFrame, *, alternative: str = "greater") -> pd.DataFrame:
    """Inter-user tau_b for every sketch and pair of participants sharing a rated image.

    Returns ``sketch_id, participant_a, participant_b, tau_b, p_value, n_items, reason``;
    an undefined test has no ``tau_b`` and ``p_value`` and says why in ``reason``
    (:func:`undefined_tau_reasons`), which is empty elsewhere.
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
) -> Iterator[SketchPairsResult]:
    """Yield a :class:`SketchPairsResult` for each sketch of the main phase.

    No participants x participants matrix is made: memory follows one sketch's pairs.
    With ``max_raters``, a sketch rated by more participants gives the pairs among
    ``max_raters`` of them drawn without replacement (from ``seed`` and the sketch id,
    whatever else the table holds): every pair is equally likely to be drawn, so the
    sampled tau_b estimate the distribution over all pairs at a cost that does not grow
    with the square of the crowd.

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


def _empty_pairwise() -> pd.DataFrame:
    types = {"sketch_id": str, "participant_a": str, "participant_b": str, "tau_b": float}
    types |= {"p_value": float, "n_items": int, "reason": str}
    return pd.DataFrame({name: pd.Series(dtype=kind) for name, kind in types.items()})


def kendall_w_by_sketch(ratings: pd.DataFrame, *, cube: RatingCube | None = None) -> pd.DataFrame:
    """Kendall's W for every sketch of the main phase: the first 12 :data:`AGREEMENT_COLUMNS`.

    Only the participants who rated every image of a sketch enter its W.
    """
    rows = [
        (sketch_id, *kendall_w(matrix))
        for _, sketch_id, _, matrix in _sketch_matrices(ratings, cube)
    ]
    return pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS[:12]))


def _sketch_matrices(ratings: pd.DataFrame, cube: RatingCube | None = None):
    """Yield ``(index, sketch_id, raters, raters x images)`` per sketch of the main phase.

    A sketch's raters are the participants who rated at least one of its images.
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
    *("sketch_id", "w", "chi2", "df", "p_value", "f", "f_df1", "f_df2", "f_p_value"),
    *("n_raters", "n_items", "n_raters_excluded", "n_raters_all", "n_ratings"),
    *("alpha_ordinal", "alpha_ordinal_ci_low", "alpha_ordinal_ci_high"),
    *("alpha_interval", "alpha_interval_ci_low", "alpha_interval_ci_high"),
    *("skillings_mack", "skillings_mack_df", "skillings_mack_p_value"),
    *("skillings_mack_permutation_p_value", "skillings_mack_n_raters"),
    *("w_reason", "alpha_reason", "skillings_mack_reason"),
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
    n_resamples : int
        Bootstrap resamples of each alpha's interval (0: none).
    permutations : int
        Permutations of the Skillings-Mack p-value, for sketches with at most
        :data:`~.limits.PERMUTATION_RATERS_LIMIT` raters (0: none).
    seed : int
        Seed of the resampling and permutations.
    scale : Scale, optional
        The ratings' scale, whose points alpha's metric is over (default:
        :func:`~sbir_study.analysis.orientation.ratings_scale`).

    Returns
    -------
    DataFrame
        :data:`AGREEMENT_COLUMNS`, one row per sketch. Of the m = ``n_raters_all`` raters,
        W stands on the k = ``n_raters`` who rated every image (as in the paper;
        ``n_raters_excluded`` = m - k), alpha on all m and their ``n_ratings`` ratings,
        Skillings-Mack on the ``skillings_mack_n_raters`` who rated two images or more.
        ``w_reason``, ``alpha_reason`` and ``skillings_mack_reason`` say why a statistic is
        undefined, empty where it is defined.

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
    _check_count("permutations", permutations)
    domain = np.array((scale or ratings_scale(ratings)).points, dtype=np.float64)
    rows = []
    for index, sketch_id, _, matrix in _sketch_matrices(ratings, cube):
        # One stream per sketch: a sketch's intervals do not depend on the others.
        rng = np.random.default_rng([seed, index])
        units = _agreement_kernels.unit_coincidences(_value_counts(matrix, domain)[1])
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
    """Why W, alpha and Skillings-Mack of one sketch are undefined ("" where defined).

    The reasons name the design, not a number: a W over one participant is no W.
    """
    m = len(matrix)
    few = "no rater" if m == 0 else "one rater" if m == 1 else ""

    def why(raters: int, rated: str, items: int, otherwise: str) -> str:
        return few or (
            f"{raters} of {m} {rated}" if raters < 2 else "one image" if items < 2 else otherwise
        )

    w_reason = alpha_reason = sm_reason = ""
    if np.isnan(w.statistic):
        w_reason = why(w.n_raters, "rated every image", w.n_items, "every rater constant")
    if np.isnan(alpha):
        twice = ((~np.isnan(matrix)).sum(axis=0) >= 2).any()
        alpha_reason = few or ("every rating the same" if twice else "no image rated twice")
    if np.isnan(test.pvalue):
        sm_reason = why(test.n_raters, "rated 2 images", test.n_items, "undefined")
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

    From each pair's count of every rating, with no participants x pairs matrix; the
    interval is a bootstrap over the pairs (:func:`krippendorff_alpha`), the values the
    points of ``scale`` (default: :func:`~sbir_study.analysis.orientation.ratings_scale`).

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
    """:func:`krippendorff_alpha_overall` at each of ``levels`` from one count of the ratings.

    The same results as one call per level (each bootstrap from ``seed``).
    """
    for level in levels:
        check_option("level", level, _agreement_kernels.ALPHA_LEVELS)
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
    units = _agreement_kernels.unit_coincidences(counts)
    in_pairable = pairable[pair_code]
    raters = len(pd.unique(participant[in_pairable]))
    results = {}
    for level in levels:
        statistic, low, high = _alpha_with_interval(
            units, domain, level, n_resamples, confidence_level, np.random.default_rng(seed)
        )
        results[level] = KrippendorffAlphaResult(
            statistic, low, high, level, raters, int(pairable.sum()), int(in_pairable.sum())
        )
    return results


def _pair_codes(ratings: pd.DataFrame, used: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """The used rows' pair codes (as ``pd.factorize`` numbers), pair count, participant codes."""
    sketch, _ = pd.factorize(ratings["sketch_id"][used])
    image, images = pd.factorize(ratings["image_id"][used])
    participant, _ = pd.factorize(ratings["participant"][used])
    pair_code, pairs = pd.factorize(sketch.astype(np.int64) * max(len(images), 1) + image)
    return pair_code, len(pairs), participant
