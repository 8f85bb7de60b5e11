"""trec_eval's measures per query: nDCG (graded), P@k, AP and R-precision (binary); the
tests check them against pytrec_eval and ranx."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError

from .arrays import (
    checked_arrays,
    cutoff,
    hits_within,
    n_relevant,
    ranks_and_relevance,
    recall_within,
    sorted_relevant_ranks,
    undefined_without_relevant,
)

__all__ = ["average_precision", "ndcg", "precision_at_k", "r_precision"]


def ndcg(rank: ArrayLike, grade: ArrayLike, *, k: int | None = None) -> np.ndarray:
    """nDCG, trec_eval's ``ndcg`` (``ndcg_cut.k`` with ``k``: the first k positions of
    the run and of the ideal): DCG = sum of grade / log2(rank + 1) over the returned
    judged images, over the DCG of all judged images in decreasing grade; NaN where every
    grade is 0. ``grade`` is the qrels grade, NaN for padding.

    Examples
    --------
    >>> ndcg([[1, 2, 3]], [[0, 2, 1]]).round(6)
    array([0.669672])
    """
    rank, grade = checked_arrays(rank, grade, "grade")
    gain = np.nan_to_num(np.asarray(grade, dtype=np.float64), nan=0.0)
    if (gain < 0).any():
        raise InputError("grade: expected grades >= 0")
    depth = np.inf if k is None else cutoff(k)
    with np.errstate(invalid="ignore"):
        counted = ~np.isnan(rank) & (rank <= depth)
    dcg = np.where(counted, gain / np.log2(np.where(counted, rank, 1.0) + 1.0), 0.0).sum(axis=1)
    ideal_gain = -np.sort(-gain, axis=1)
    positions = np.arange(1, gain.shape[1] + 1)
    discount = np.where(positions <= depth, 1.0 / np.log2(positions + 1.0), 0.0)
    ideal = (ideal_gain * discount).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal > 0, dcg / ideal, np.nan)


def precision_at_k(rank: ArrayLike, relevant: ArrayLike, *, k: int) -> np.ndarray:
    """Relevant images among the first k positions, divided by k (trec_eval's ``P.k``).

    Examples
    --------
    >>> precision_at_k([[1, 4, 2]], [[True, True, False]], k=2)
    array([0.5])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    return hits_within(rank, relevant, cutoff(k)) / k


def average_precision(rank: ArrayLike, relevant: ArrayLike) -> np.ndarray:
    """Average precision, trec_eval's ``map`` per query: (1 / C) sum of the precision at
    each returned relevant image, C the relevant judged images (returned or not).

    Examples
    --------
    >>> average_precision([[1, 3, 2, np.nan]], [[True, True, False, True]]).round(6)
    array([0.555556])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    ordered = sorted_relevant_ranks(rank, relevant)
    found = np.isfinite(ordered)
    m = np.arange(1, ordered.shape[1] + 1)
    terms = np.where(found, m / np.where(found, ordered, 1.0), 0.0)
    c = n_relevant(relevant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return undefined_without_relevant(terms.sum(axis=1) / c, c)


def r_precision(rank: ArrayLike, relevant: ArrayLike) -> np.ndarray:
    """R-precision, trec_eval's ``Rprec``: the precision at position C, the number of
    relevant images (SHREC's first tier).

    Examples
    --------
    >>> r_precision([[1, 3, 2]], [[True, True, False]])
    array([0.5])
    """
    return recall_within(rank, relevant, 1)
