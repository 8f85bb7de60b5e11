"""Measures of a retrieval run against the ground truth, one function per measure.

Every measure takes the run reduced to the judged images (see
:mod:`sbir_study.analysis.retrieval`): arrays of shape (sketches, judged images) holding
each judged image's ``rank`` (1-based position in the run, NaN where the run
does not return it, and for padding) and its relevance, and returns one value
per sketch. Nothing here loops over the run's other images, so the cost does
not grow with the size of the collection a run ranks.

Families:

* Rank correlation with people (the paper's Sec. 3.2): :func:`system_tau_b`.
* trec_eval's measures: :func:`ndcg` (graded: gain = qrels grade, discount
  log2(rank + 1), ideal DCG over all judged images), :func:`precision_at_k`,
  :func:`average_precision`, :func:`r_precision` (binary relevance).
* SHREC's measures (definitions in the project's source notes):
  :func:`nearest_neighbor`, :func:`first_tier`, :func:`second_tier`,
  :func:`e_measure`, :func:`dcg_shrec`, :func:`precision_at_recall`.
* Zhang (2019) ch. 12.3: :func:`average_rank`, :func:`percentage_weighted_hits`,
  :func:`percentage_similarity_ranking`.

A measure that needs relevant images is NaN for a sketch without any
(recall, AP, the tiers and nDCG are undefined there); precision-like
measures (p@k, NN) are 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from sbir_study.foundation.checks import InputError, check_option

from .. import _kernels

__all__ = [
    "MEASURES",
    "RECALL_LEVELS",
    "Measure",
    "RunView",
    "TauResult",
    "average_precision",
    "average_rank",
    "dcg_shrec",
    "e_measure",
    "first_tier",
    "measure",
    "measure_direction",
    "measure_values",
    "ndcg",
    "nearest_neighbor",
    "percentage_similarity_ranking",
    "percentage_weighted_hits",
    "precision_at_k",
    "precision_at_recall",
    "r_precision",
    "report_columns",
    "second_tier",
    "system_tau_b",
]


class TauResult(NamedTuple):
    """Per-sketch tau_b against the consensus and its p-value."""

    statistic: np.ndarray
    pvalue: np.ndarray


def _arrays(rank, other, name: str) -> tuple[np.ndarray, np.ndarray]:
    rank = np.atleast_2d(np.asarray(rank, dtype=np.float64))
    other = np.atleast_2d(np.asarray(other))
    if rank.shape != other.shape:
        raise InputError(
            f"rank, {name}: expected the same shape, got {rank.shape} and {other.shape}"
        )
    with np.errstate(invalid="ignore"):
        if (rank < 1).any():
            raise InputError("rank: expected positions from 1 (NaN for not returned)")
    return rank, other


def _relevant(relevant) -> np.ndarray:
    relevant = np.asarray(relevant)
    if relevant.dtype != bool:
        raise InputError("relevant: expected a boolean array")
    return relevant


def _cutoff(k) -> int:
    if not (isinstance(k, int | np.integer) and k >= 1):
        raise InputError(f"k: expected a whole number >= 1, got {k!r}")
    return int(k)


def _n_relevant(relevant: np.ndarray) -> np.ndarray:
    return relevant.sum(axis=1).astype(np.float64)


def _hits_within(rank: np.ndarray, relevant: np.ndarray, depth) -> np.ndarray:
    """Relevant images at positions <= depth (per sketch; depth scalar or per sketch)."""
    depth = np.asarray(depth, dtype=np.float64)
    if depth.ndim == 1:
        depth = depth[:, None]
    with np.errstate(invalid="ignore"):
        return (relevant & (rank <= depth)).sum(axis=1).astype(np.float64)


def _undefined_without_relevant(values: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    return np.where(n_relevant > 0, values, np.nan)


def _recall_within(rank, relevant, times: int) -> np.ndarray:
    """Relevant images among the first ``times`` x C positions, divided by C."""
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    c = _n_relevant(relevant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _undefined_without_relevant(_hits_within(rank, relevant, times * c) / c, c)


def _sorted_relevant_ranks(rank: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """Each sketch's relevant ranks in increasing order, inf where not returned or padding."""
    return np.sort(np.where(relevant & ~np.isnan(rank), rank, np.inf), axis=1)


# --- people ----------------------------------------------------------------------------------


def system_tau_b(score, mean_rating, *, alternative: str = "greater") -> TauResult:
    """Kendall's tau_b between a system's scores and the consensus, per sketch.

    Parameters
    ----------
    score : array_like, (sketches, images)
        The system's score of each judged image (higher = more similar); NaN
        where the run does not return it: those images rank after every
        returned one, tied with each other.
    mean_rating : array_like, same shape
        The consensus (mean rating, 1 best); NaN for padding.
    alternative : {"greater", "two-sided", "less"}
        "greater" (the paper's one-sided test) asks whether the system agrees
        with people more than chance.

    Returns
    -------
    TauResult
        ``statistic`` positive when the system ranks the images as people do;
        NaN where the system gives all judged images one score.

    Notes
    -----
    tau_b(score, -mean_rating) with the tie correction (Eq. 2), p-value from
    the normal approximation with the tie-corrected variance, as
    ``scipy.stats.kendalltau``. Ties in score are ties, not broken by id.

    References
    ----------
    Eitz et al. (2011), Sec. 3.2: the benchmark of a system is its tau_b per
    sketch, averaged over the sketches.

    Examples
    --------
    >>> result = system_tau_b([[0.9, 0.5, 0.1, np.nan]], [[1.0, 2.5, 6.0, 7.0]])
    >>> round(float(result.statistic[0]), 6)
    1.0
    """
    check_option("alternative", alternative, _kernels.ALTERNATIVES)
    score = np.atleast_2d(np.asarray(score, dtype=np.float64))
    mean_rating = np.atleast_2d(np.asarray(mean_rating, dtype=np.float64))
    if score.shape != mean_rating.shape:
        raise InputError(
            f"score, mean_rating: expected the same shape, got {score.shape} and "
            f"{mean_rating.shape}"
        )
    judged = ~np.isnan(mean_rating)
    with np.errstate(invalid="ignore"):
        floor = np.nanmin(np.where(judged, score, np.nan), axis=1, initial=np.inf)
    floor = np.where(np.isfinite(floor), floor - 1.0, 0.0)
    filled = np.where(judged & np.isnan(score), floor[:, None], score)
    filled = np.where(judged, filled, np.nan)
    tau, p, _ = _kernels.paired_rows_tau_b(filled, -mean_rating, alternative)
    return TauResult(tau, p)


# --- trec_eval -------------------------------------------------------------------------------


def ndcg(rank, grade, *, k: int | None = None) -> np.ndarray:
    """Normalised discounted cumulative gain (trec_eval's ``ndcg`` and ``ndcg_cut.k``).

    Parameters
    ----------
    rank : array_like, (sketches, images)
    grade : array_like, same shape
        The graded relevance (the qrels grade, 0..6); NaN for padding.
    k : int, optional
        Cut-off: only the first k positions count, in the run and in the ideal.

    Notes
    -----
    DCG = sum over returned judged images of grade / log2(rank + 1); the ideal
    DCG puts all judged images in decreasing grade. NaN where every grade is 0.

    Examples
    --------
    >>> ndcg([[1, 2, 3]], [[0, 2, 1]]).round(6)
    array([0.669672])
    """
    rank, grade = _arrays(rank, grade, "grade")
    gain = np.nan_to_num(np.asarray(grade, dtype=np.float64), nan=0.0)
    if (gain < 0).any():
        raise InputError("grade: expected grades >= 0")
    depth = np.inf if k is None else _cutoff(k)
    with np.errstate(invalid="ignore"):
        counted = ~np.isnan(rank) & (rank <= depth)
    dcg = np.where(counted, gain / np.log2(np.where(counted, rank, 1.0) + 1.0), 0.0).sum(axis=1)
    ideal_gain = -np.sort(-gain, axis=1)
    positions = np.arange(1, gain.shape[1] + 1)
    discount = np.where(positions <= depth, 1.0 / np.log2(positions + 1.0), 0.0)
    ideal = (ideal_gain * discount).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal > 0, dcg / ideal, np.nan)


def precision_at_k(rank, relevant, *, k: int) -> np.ndarray:
    """Relevant images among the first k positions, divided by k (trec_eval's ``P.k``).

    Examples
    --------
    >>> precision_at_k([[1, 4, 2]], [[True, True, False]], k=2)
    array([0.5])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    return _hits_within(rank, relevant, _cutoff(k)) / k


def average_precision(rank, relevant) -> np.ndarray:
    """Average precision (trec_eval's ``map`` per query).

    Notes
    -----
    AP = (1 / C) sum over the returned relevant images of the precision at
    their position, C = the number of relevant judged images (returned or not).

    Examples
    --------
    >>> average_precision([[1, 3, 2, np.nan]], [[True, True, False, True]]).round(6)
    array([0.555556])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    ordered = _sorted_relevant_ranks(rank, relevant)
    found = np.isfinite(ordered)
    m = np.arange(1, ordered.shape[1] + 1)
    terms = np.where(found, m / np.where(found, ordered, 1.0), 0.0)
    c = _n_relevant(relevant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _undefined_without_relevant(terms.sum(axis=1) / c, c)


def r_precision(rank, relevant) -> np.ndarray:
    """Precision at position C, the number of relevant images (trec_eval's ``Rprec``).

    Examples
    --------
    >>> r_precision([[1, 3, 2]], [[True, True, False]])
    array([0.5])
    """
    return _recall_within(rank, relevant, 1)


# --- SHREC -----------------------------------------------------------------------------------


def nearest_neighbor(rank, relevant) -> np.ndarray:
    """NN = G(1): 1 if the first image of the run is relevant, else 0.

    Examples
    --------
    >>> nearest_neighbor([[2, 1], [1, 2]], [[True, False], [True, False]])
    array([0., 1.])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    return _hits_within(rank, relevant, 1)


def first_tier(rank, relevant) -> np.ndarray:
    """FT = Gs(C) / C: the share of the relevant images among the first C positions.

    (The same number as trec_eval's R-precision, under SHREC's name.)
    """
    return r_precision(rank, relevant)


def second_tier(rank, relevant) -> np.ndarray:
    """ST = Gs(2C) / C: relevant images among the first 2C positions, divided by C.

    Examples
    --------
    >>> second_tier([[1, 4, 5]], [[True, True, False]])
    array([1.])
    """
    return _recall_within(rank, relevant, 2)


def e_measure(rank, relevant, *, k: int = 32) -> np.ndarray:
    """SHREC's E-measure over the first k (32) positions: E = 2 P R / (P + R).

    Notes
    -----
    P = Gs(k) / k, R = Gs(k) / C; 0 when no relevant image is among the
    first k. (SHREC calls this harmonic mean of precision and recall E; higher
    is better.)

    Examples
    --------
    >>> e_measure([[1, 2, 40]], [[True, True, True]], k=32).round(6)
    array([0.114286])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    k = _cutoff(k)
    c = _n_relevant(relevant)
    hits = _hits_within(rank, relevant, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = hits / k, hits / c
        e = np.where(hits > 0, 2.0 * precision * recall / (precision + recall), 0.0)
    return _undefined_without_relevant(e, c)


def dcg_shrec(rank, relevant) -> np.ndarray:
    """SHREC's normalised DCG with binary gains, rank 1 undiscounted.

    Notes
    -----
    DCG = [G_1 + sum_{i >= 2} G_i / log2(i)] / [1 + sum_{i=2..C} 1 / log2(i)]
    over the whole run, G_i = 1 where the image at position i is relevant.

    Examples
    --------
    >>> dcg_shrec([[1, 4]], [[True, True]]).round(6)
    array([0.75])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    found = relevant & ~np.isnan(rank)
    position = np.where(found, rank, 2.0)
    gain = np.where(
        found, np.where(position == 1, 1.0, 1.0 / np.log2(np.maximum(position, 2.0))), 0.0
    )
    c = _n_relevant(relevant)
    i = np.arange(2, relevant.shape[1] + 1)
    ideal = 1.0 + np.where(i[None, :] <= c[:, None], 1.0 / np.log2(i)[None, :], 0.0).sum(axis=1)
    return _undefined_without_relevant(gain.sum(axis=1) / ideal, c)


#: Recall levels of the precision-recall curve: 0.05, 0.10, ..., 1.0.
RECALL_LEVELS = np.round(np.arange(1, 21) / 20, 2)


def precision_at_recall(rank, relevant, levels=RECALL_LEVELS) -> np.ndarray:
    """The precision-recall curve: precision where recall first reaches each level.

    Returns
    -------
    ndarray, (sketches, levels)
        P(k_r) = Gs(k_r) / k_r at the first position k_r with
        R(k_r) = Gs(k_r) / C >= r; 0 where the run never reaches recall r
        (relevant images not returned); NaN for sketches without relevant images.

    Notes
    -----
    Not interpolated: the value at each level is the precision of the run at
    the position where it reaches that recall, from the G and Gs vectors of
    the SHREC definitions.

    Examples
    --------
    >>> precision_at_recall([[1, 4, np.nan]], [[True, True, True]], [0.3, 0.6, 1.0]).round(3)
    array([[1. , 0.5, 0. ]])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    levels = np.asarray(levels, dtype=np.float64)
    if levels.ndim != 1 or ((levels <= 0) | (levels > 1)).any():
        raise InputError("levels: expected recall levels in (0, 1]")
    ordered = _sorted_relevant_ranks(rank, relevant)
    c = _n_relevant(relevant)
    needed = np.ceil(levels[None, :] * c[:, None] - 1e-9).astype(np.int64)  # hits to reach r
    index = np.clip(needed - 1, 0, max(ordered.shape[1] - 1, 0))
    at = np.take_along_axis(ordered, index, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(np.isfinite(at), needed / at, 0.0)
    return np.where((c > 0)[:, None], precision, np.nan)


# --- Zhang, ch. 12.3 -------------------------------------------------------------------------


def average_rank(rank, relevant, *, n_returned, judged=None) -> np.ndarray:
    """Average rank (AR) of the relevant images in the run; lower is better.

    Parameters
    ----------
    n_returned : array_like, (sketches,)
        Images the run returns per sketch: relevant images it does not return
        take the average of the positions after them (they rank after every
        returned image, tied with the other judged images not returned).
    judged : array_like of bool, optional
        Where ``rank`` holds a judged image rather than padding (default: everywhere).

    References
    ----------
    Zhang (2019), Sec. 12.3.5 (the Bullseye score as an average rank).

    Examples
    --------
    >>> average_rank([[1, 3, np.nan, np.nan]], [[True, True, True, False]], n_returned=[10])
    array([5.16666667])
    """
    rank, relevant = _arrays(rank, _relevant(relevant), "relevant")
    n_returned = np.asarray(n_returned, dtype=np.float64).reshape(-1)
    judged = np.ones(rank.shape, dtype=bool) if judged is None else _relevant(judged)
    not_returned = np.isnan(rank) & judged
    tied_block = n_returned[:, None] + (not_returned.sum(axis=1)[:, None] + 1) / 2.0
    position = np.where(not_returned, tied_block, rank)
    c = _n_relevant(relevant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _undefined_without_relevant(np.where(relevant, position, 0.0).sum(axis=1) / c, c)


def percentage_weighted_hits(rank, weight, *, k: int) -> np.ndarray:
    """PWH@k: the weights of the images in the first k positions over all weights.

    Parameters
    ----------
    weight : array_like, (sketches, images)
        w_i, the number of participants who judged image i relevant (rated
        it better than the relevance threshold); NaN or 0 for padding.

    Notes
    -----
    PWH = sum_{i retrieved} w_i / sum_i w_i, a recall weighted by how many
    people found each image relevant; NaN where all weights are 0.

    References
    ----------
    Zhang (2019), Sec. 12.3.3, Eq. 12.26.

    Examples
    --------
    >>> percentage_weighted_hits([[1, 2, 3]], [[3, 1, 4]], k=2).round(6)
    array([0.5])
    """
    rank, weight = _arrays(rank, weight, "weight")
    weight = np.nan_to_num(np.asarray(weight, dtype=np.float64), nan=0.0)
    if (weight < 0).any():
        raise InputError("weight: expected weights >= 0")
    k = _cutoff(k)
    with np.errstate(invalid="ignore", divide="ignore"):
        hit = ~np.isnan(rank) & (rank <= k)
        total = weight.sum(axis=1)
        return np.where(total > 0, np.where(hit, weight, 0.0).sum(axis=1) / total, np.nan)


def percentage_similarity_ranking(system_rank, ratings) -> np.ndarray:
    """PSR: how often people put each image near where the system puts it (Shirahatti and
    Barnard's percentage of similarity ranking), per sketch.

    Parameters
    ----------
    system_rank : array_like, (sketches, images)
        P(i), the system's rank of each judged image among the sketch's judged
        images (1 = most similar; ties share their average rank); NaN for padding.
    ratings : array_like, (sketches, participants, images)
        Each participant's ratings (1 best); a participant counts for a sketch
        only if they rated every judged image of it.

    Returns
    -------
    ndarray, (sketches,)
        The mean over the sketch's images of S(i), in [0, 1].

    Notes
    -----
    Each participant's ratings of a sketch's images rank them; a group of
    equal ratings occupies a run of positions, each of its images 1/size of
    each. Q(i, k) sums over participants the share of image i at position k;
    p(i) and sigma(i) are the mean and standard deviation of position k under
    Q(i, .). S(i) = sum of Q(i, k) / n over the positions k within sigma(i)/2
    of the system's rank P(i), the share of the participants' rank mass that
    agrees with the system to within half a standard deviation.

    References
    ----------
    Zhang (2019), Sec. 12.3.4, Eq. 12.27; Shirahatti and Barnard (2005),
    "Evaluating image retrieval", CVPR.

    Examples
    --------
    Two participants agree on three images; the system swaps the last two:

    >>> psr = percentage_similarity_ranking([[1, 3, 2]], [[[1, 2, 3], [1, 2, 3]]])
    >>> psr.round(6)
    array([0.333333])
    """
    system_rank = np.atleast_2d(np.asarray(system_rank, dtype=np.float64))
    ratings = np.asarray(ratings, dtype=np.float64)
    if (
        ratings.ndim != 3
        or ratings.shape[0] != system_rank.shape[0]
        or (ratings.shape[2] != system_rank.shape[1])
    ):
        raise InputError(
            f"ratings: expected shape (sketches, participants, images) matching system_rank "
            f"{system_rank.shape}, got {ratings.shape}"
        )
    psr = np.full(system_rank.shape[0], np.nan)
    for s, (rank, given) in enumerate(zip(system_rank, ratings, strict=True)):
        judged = ~np.isnan(rank)
        complete = ~np.isnan(given[:, judged]).any(axis=1)
        if not judged.any() or not complete.any():
            continue
        psr[s] = _similarity_ranking(rank[judged], given[np.ix_(complete, judged)])
    return psr


def _similarity_ranking(rank: np.ndarray, ratings: np.ndarray) -> float:
    """PSR of one sketch: ``rank`` (images,), ``ratings`` (participants, images), all present."""
    participants, images = ratings.shape
    # Each participant's tie group of image i takes positions below + 1 .. below + size.
    below = (ratings[:, None, :] < ratings[:, :, None]).sum(axis=2)  # (participants, images)
    size = (ratings[:, None, :] == ratings[:, :, None]).sum(axis=2)
    positions = np.arange(1, images + 1)
    inside = (positions > below[..., None]) & (positions <= (below + size)[..., None])
    q = np.where(inside, 1.0 / size[..., None], 0.0).sum(axis=0)  # (images, positions)
    mean = (q * positions).sum(axis=1) / participants
    spread = np.sqrt(np.maximum((q * positions**2).sum(axis=1) / participants - mean**2, 0.0))
    window = np.abs(positions[None, :] - rank[:, None]) <= spread[:, None] / 2.0 + 1e-9
    return float((np.where(window, q, 0.0).sum(axis=1) / participants).mean())


# --- the table of measures -------------------------------------------------------------------


@dataclass(frozen=True)
class RunView:
    """One run seen by the measures: arrays of shape (sketches, judged images).

    ``rank`` and ``score`` come from the run; ``mean_rating``, ``grade``,
    ``relevant`` and ``judged`` from the ground truth; ``weight`` (participants
    judging each image relevant) and ``ratings`` (sketches x participants x images)
    from the participants' ratings, when given.
    """

    rank: np.ndarray
    score: np.ndarray
    n_returned: np.ndarray
    mean_rating: np.ndarray
    grade: np.ndarray
    relevant: np.ndarray
    judged: np.ndarray
    alternative: str = "greater"
    weight: np.ndarray | None = None
    ratings: np.ndarray | None = None

    @cached_property
    def tau(self) -> TauResult:
        return system_tau_b(self.score, self.mean_rating, alternative=self.alternative)

    @cached_property
    def judged_ranks(self) -> np.ndarray:
        """Each judged image's rank among its sketch's judged images (1 = highest score;
        ties share their average rank; images not returned tie after every returned one)."""
        with np.errstate(invalid="ignore"):
            floor = np.nanmin(np.where(self.judged, self.score, np.nan), axis=1, initial=np.inf)
        floor = np.where(np.isfinite(floor), floor - 1.0, 0.0)
        filled = np.where(np.isnan(self.score), floor[:, None], self.score)
        ranks = _kernels.average_ranks(np.where(self.judged, -filled, np.inf))
        return np.where(self.judged, ranks, np.nan)


@dataclass(frozen=True)
class Measure:
    """One measure of a retrieval run, as ``sbir-study evaluate`` reports it.

    ``name`` is the column value in ``per_sketch.csv`` (with ``@k`` for each
    cut-off when ``at_k``); ``needs`` says what it uses beyond the ranks:
    ``"scores"``, ``"grades"`` (graded qrels), ``"relevance"`` (binary, mean
    rating below the threshold), ``"weight"`` or ``"ratings"`` (the
    participants' ratings: only with ``--ratings``), or ``"systems"``
    (derived from other measures in the summary, not per sketch).
    """

    name: str
    label: str
    better: str
    needs: str
    compute: Callable[[RunView, int | None], np.ndarray] | None
    reference: str
    at_k: bool = False
    #: Averaged over the sketches in the summary (a mean p-value would mean nothing).
    summarised: bool = True
    #: A column of the report's comparison table (cut-off measures at k = 10).
    in_report: bool = True
    #: A headline number in ``evaluation.json``.
    headline: bool = False


#: Every measure, in the order of ``per_sketch.csv``. Adding a measure is adding a row.
MEASURES: tuple[Measure, ...] = (
    Measure(
        "tau_b",
        "tau_b",
        "higher",
        "scores",
        lambda v, k: v.tau.statistic,
        "Eitz et al. 2011, Sec. 3.2",
        headline=True,
    ),
    Measure(
        "tau_b_p_value",
        "p of tau_b",
        "lower",
        "scores",
        lambda v, k: v.tau.pvalue,
        "Eitz et al. 2011, Sec. 3.1.2",
        summarised=False,
        in_report=False,
    ),
    Measure(
        "tau_b_human_fraction",
        "of human",
        "higher",
        "systems",
        None,
        "Eitz et al. 2011, Sec. 3.2 (an ideal system performs like people)",
        headline=True,
    ),
    Measure(
        "ndcg",
        "nDCG",
        "higher",
        "grades",
        lambda v, k: ndcg(v.rank, v.grade),
        "trec_eval ndcg",
        headline=True,
    ),
    Measure(
        "ndcg",
        "nDCG",
        "higher",
        "grades",
        lambda v, k: ndcg(v.rank, v.grade, k=k),
        "trec_eval ndcg_cut",
        at_k=True,
    ),
    Measure(
        "p",
        "P",
        "higher",
        "relevance",
        lambda v, k: precision_at_k(v.rank, v.relevant, k=k),
        "trec_eval P",
        at_k=True,
    ),
    Measure(
        "ap",
        "AP",
        "higher",
        "relevance",
        lambda v, k: average_precision(v.rank, v.relevant),
        "trec_eval map",
        headline=True,
    ),
    Measure(
        "r_precision",
        "R-prec",
        "higher",
        "relevance",
        lambda v, k: r_precision(v.rank, v.relevant),
        "trec_eval Rprec",
        in_report=False,
    ),
    Measure(
        "nn",
        "NN",
        "higher",
        "relevance",
        lambda v, k: nearest_neighbor(v.rank, v.relevant),
        "SHREC 2018",
    ),
    Measure(
        "ft",
        "FT",
        "higher",
        "relevance",
        lambda v, k: first_tier(v.rank, v.relevant),
        "SHREC 2018",
        headline=True,
    ),
    Measure(
        "st",
        "ST",
        "higher",
        "relevance",
        lambda v, k: second_tier(v.rank, v.relevant),
        "SHREC 2018",
    ),
    Measure(
        "e@32",
        "E@32",
        "higher",
        "relevance",
        lambda v, k: e_measure(v.rank, v.relevant, k=32),
        "SHREC 2018",
    ),
    Measure(
        "dcg_shrec",
        "DCG (SHREC)",
        "higher",
        "relevance",
        lambda v, k: dcg_shrec(v.rank, v.relevant),
        "SHREC 2018",
    ),
    Measure(
        "avg_rank",
        "avg rank",
        "lower",
        "relevance",
        lambda v, k: average_rank(v.rank, v.relevant, n_returned=v.n_returned, judged=v.judged),
        "Zhang 2019, Sec. 12.3.5",
    ),
    Measure(
        "pwh",
        "PWH",
        "higher",
        "weight",
        lambda v, k: percentage_weighted_hits(v.rank, v.weight, k=k),
        "Zhang 2019, Sec. 12.3",
        at_k=True,
    ),
    Measure(
        "psr",
        "PSR",
        "higher",
        "ratings",
        lambda v, k: percentage_similarity_ranking(v.judged_ranks, v.ratings),
        "Zhang 2019, Sec. 12.3",
    ),
)

_REPORT_CUTOFF = 10


def measure(name: str) -> Measure:
    """The :data:`MEASURES` row of a measure name (``"p@10"`` finds ``p``).

    Examples
    --------
    >>> measure("avg_rank").better, measure("ndcg@5").at_k, measure("ndcg").at_k
    ('lower', True, False)
    """
    base, _, k = name.partition("@")
    for row in MEASURES:
        if row.name == name and not row.at_k:
            return row
        if row.at_k and row.name == base and k.isdigit():
            return row
    check_option("measure", name, [m.name + ("@k" if m.at_k else "") for m in MEASURES])
    raise AssertionError("unreachable")  # check_option raised


def measure_direction(name: str) -> str:
    """``"higher"`` or ``"lower"``: which values of the measure ``name`` are better."""
    return measure(name).better


def measure_values(view: RunView, cutoffs: Sequence[int]) -> dict[str, np.ndarray]:
    """Every per-sketch measure of one run that its inputs allow, in :data:`MEASURES` order."""
    available = {"scores", "grades", "relevance"}
    if view.weight is not None:
        available.add("weight")
    if view.ratings is not None:
        available.add("ratings")
    values = {}
    for row in MEASURES:
        if row.compute is None or row.needs not in available:
            continue
        if row.at_k:
            for k in cutoffs:
                values[f"{row.name}@{k}"] = row.compute(view, k)
        else:
            values[row.name] = row.compute(view, None)
    return values


def report_columns(cutoffs: Sequence[int]) -> list[tuple[str, str]]:
    """(measure, heading) of the report's comparison table: cut-off measures at k = 10
    (or the first cut-off when 10 is not among them)."""
    k = _REPORT_CUTOFF if _REPORT_CUTOFF in cutoffs else (cutoffs[0] if cutoffs else None)
    columns = []
    for row in MEASURES:
        if not row.in_report:
            continue
        if row.at_k:
            if k is not None:
                columns.append((f"{row.name}@{k}", f"{row.label}@{k}"))
        else:
            columns.append((row.name, row.label))
    return columns
