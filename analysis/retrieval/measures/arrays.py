"""The arrays every measure takes, checked, and the counts several measures share.

A run reduced to the judged images is a ``rank`` array of shape (sketches, judged
images): each judged image's 1-based position in the run, NaN where the run does not
return it, and for padding; beside it, an array of the same shape of the images'
relevance, grade or weight.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError

__all__ = [
    "checked_arrays",
    "cutoff",
    "hits_within",
    "n_relevant",
    "ranks_and_relevance",
    "recall_within",
    "relevance",
    "sorted_relevant_ranks",
    "undefined_without_relevant",
]


def checked_arrays(rank: ArrayLike, other: ArrayLike, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``rank`` (positions from 1, NaN) and ``other`` (the parameter ``name``) as 2-D
    arrays of one shape."""
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


def relevance(relevant: ArrayLike) -> np.ndarray:
    """A boolean array of binary relevance (or of judged images), checked."""
    relevant = np.asarray(relevant)
    if relevant.dtype != bool:
        raise InputError("relevant: expected a boolean array")
    return relevant


def ranks_and_relevance(rank: ArrayLike, relevant: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """:func:`checked_arrays` of ``rank`` and a boolean ``relevant``."""
    return checked_arrays(rank, relevance(relevant), "relevant")


def cutoff(k: object) -> int:
    """A cut-off k, a whole number >= 1."""
    if not (isinstance(k, int | np.integer) and k >= 1):
        raise InputError(f"k: expected a whole number >= 1, got {k!r}")
    return int(k)


def n_relevant(relevant: np.ndarray) -> np.ndarray:
    """C, the relevant judged images of each sketch (returned or not)."""
    return relevant.sum(axis=1).astype(np.float64)


def hits_within(rank: np.ndarray, relevant: np.ndarray, depth: ArrayLike) -> np.ndarray:
    """Relevant images at positions <= depth (per sketch; depth scalar or per sketch)."""
    depth = np.asarray(depth, dtype=np.float64)
    if depth.ndim == 1:
        depth = depth[:, None]
    with np.errstate(invalid="ignore"):
        return (relevant & (rank <= depth)).sum(axis=1).astype(np.float64)


def undefined_without_relevant(values: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    """``values``, NaN for the sketches without a relevant image."""
    return np.where(n_relevant > 0, values, np.nan)


def recall_within(rank: ArrayLike, relevant: ArrayLike, times: int) -> np.ndarray:
    """Relevant images among the first ``times`` x C positions, divided by C."""
    rank, relevant = ranks_and_relevance(rank, relevant)
    c = n_relevant(relevant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return undefined_without_relevant(hits_within(rank, relevant, times * c) / c, c)


def sorted_relevant_ranks(rank: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """Each sketch's relevant ranks in increasing order, inf where not returned or padding."""
    return np.sort(np.where(relevant & ~np.isnan(rank), rank, np.inf), axis=1)
