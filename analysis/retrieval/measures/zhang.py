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
    rank: ArrayLike,
    relevant: ArrayLike,
    *,
    n_returned: ArrayLike,
    judged: ArrayLike | None = None,
) -> np.ndarray:
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
