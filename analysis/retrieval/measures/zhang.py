"""Zhang (2019), ch. 12.3: the average rank, and two measures of the participants' own
judgements, the percentage of weighted hits and the percentage of similarity ranking.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError

from .arrays import (
    checked_arrays,
    cutoff,
    n_relevant,
    ranks_and_relevance,
    relevance,
    undefined_without_relevant,
)

__all__ = ["average_rank", "percentage_similarity_ranking", "percentage_weighted_hits"]


def average_rank(
    rank: ArrayLike, relevant: ArrayLike, *, n_returned: ArrayLike, judged: ArrayLike | None = None
) -> np.ndarray:
    """Average rank of the relevant images, lower better (Zhang 2019, Sec. 12.3.5).

    Parameters
    ----------
    n_returned
        Images the run returns per sketch: the judged images it does not return tie
        after them, each taking the average of their positions.
    judged
        Where ``rank`` holds a judged image rather than padding (default: everywhere).

    Examples
    --------
    >>> average_rank([[1, 3, np.nan, np.nan]], [[True, True, True, False]], n_returned=[10])
    array([5.16666667])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    n_returned = np.asarray(n_returned, dtype=np.float64).reshape(-1)
    judged = np.ones(rank.shape, dtype=bool) if judged is None else relevance(judged)
    not_returned = np.isnan(rank) & judged
    tied_block = n_returned[:, None] + (not_returned.sum(axis=1)[:, None] + 1) / 2.0
    position = np.where(not_returned, tied_block, rank)
    c = n_relevant(relevant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return undefined_without_relevant(np.where(relevant, position, 0.0).sum(axis=1) / c, c)


def percentage_weighted_hits(rank: ArrayLike, weight: ArrayLike, *, k: int) -> np.ndarray:
    """PWH@k = sum of w_i in the first k positions / sum_i w_i, w_i the participants who
    judged image i relevant (NaN or 0 for padding): a recall weighted by how many people
    found each image relevant; NaN where all weights are 0 (Zhang 2019, Eq. 12.26).

    Examples
    --------
    >>> percentage_weighted_hits([[1, 2, 3]], [[3, 1, 4]], k=2).round(6)
    array([0.5])
    """
    rank, weight = checked_arrays(rank, weight, "weight")
    weight = np.nan_to_num(np.asarray(weight, dtype=np.float64), nan=0.0)
    if (weight < 0).any():
        raise InputError("weight: expected weights >= 0")
    k = cutoff(k)
    with np.errstate(invalid="ignore", divide="ignore"):
        hit = ~np.isnan(rank) & (rank <= k)
        total = weight.sum(axis=1)
        return np.where(total > 0, np.where(hit, weight, 0.0).sum(axis=1) / total, np.nan)


def percentage_similarity_ranking(system_rank: ArrayLike, ratings: ArrayLike) -> np.ndarray:
    """PSR, the percentage of similarity ranking: per sketch, the mean over its images of
    S(i), the share of the participants' rank mass of image i within sigma(i) / 2 of the
    system's rank P(i) (Zhang 2019, Eq. 12.27; Shirahatti and Barnard 2005, CVPR;
    ``docs/evaluation.md``).

    Parameters
    ----------
    system_rank
        (sketches, images): P(i), the rank among the sketch's judged images (ties share
        their average rank); NaN for padding.
    ratings
        (sketches, participants, images), 1 best; a participant counts for a sketch only
        if they rated every judged image of it.

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
    """PSR of one sketch: ``rank`` (images,), ``ratings`` (participants, images), all given."""
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
