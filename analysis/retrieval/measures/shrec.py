"""SHREC's measures: the nearest neighbour, the first and second tier, the E-measure,
SHREC's DCG and the precision-recall curve (G and Gs as the SHREC 2018 definitions).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError

from .arrays import (
    cutoff,
    hits_within,
    n_relevant,
    ranks_and_relevance,
    recall_within,
    sorted_relevant_ranks,
    undefined_without_relevant,
)
from .trec import r_precision

__all__ = [
    "RECALL_LEVELS",
    "dcg_shrec",
    "e_measure",
    "first_tier",
    "nearest_neighbor",
    "precision_at_recall",
    "second_tier",
]


def nearest_neighbor(rank: ArrayLike, relevant: ArrayLike) -> np.ndarray:
    """NN = G(1): 1 if the first image of the run is relevant, else 0.

    Examples
    --------
    >>> nearest_neighbor([[2, 1], [1, 2]], [[True, False], [True, False]])
    array([0., 1.])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    return hits_within(rank, relevant, 1)


#: FT = Gs(C) / C, the share of the relevant images among the first C positions:
#: trec_eval's R-precision under SHREC's name.
first_tier = r_precision


def second_tier(rank: ArrayLike, relevant: ArrayLike) -> np.ndarray:
    """ST = Gs(2C) / C: relevant images among the first 2C positions, divided by C.

    Examples
    --------
    >>> second_tier([[1, 4, 5]], [[True, True, False]])
    array([1.])
    """
    return recall_within(rank, relevant, 2)


def e_measure(rank: ArrayLike, relevant: ArrayLike, *, k: int = 32) -> np.ndarray:
    """SHREC's E-measure 2 P R / (P + R) over the first k positions, P = Gs(k) / k,
    R = Gs(k) / C (a harmonic mean, higher better); 0 without a relevant image there.

    Examples
    --------
    >>> e_measure([[1, 2, 40]], [[True, True, True]], k=32).round(6)
    array([0.114286])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    k = cutoff(k)
    c = n_relevant(relevant)
    hits = hits_within(rank, relevant, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = hits / k, hits / c
        e = np.where(hits > 0, 2.0 * precision * recall / (precision + recall), 0.0)
    return undefined_without_relevant(e, c)


def dcg_shrec(rank: ArrayLike, relevant: ArrayLike) -> np.ndarray:
    """SHREC's normalised DCG [G_1 + sum_{i >= 2} G_i / log2(i)] / [1 + sum_{i=2..C}
    1 / log2(i)] over the whole run, G_i = 1 where position i is relevant.

    Examples
    --------
    >>> dcg_shrec([[1, 4]], [[True, True]]).round(6)
    array([0.75])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    found = relevant & ~np.isnan(rank)
    position = np.where(found, rank, 2.0)
    gain = np.where(
        found, np.where(position == 1, 1.0, 1.0 / np.log2(np.maximum(position, 2.0))), 0.0
    )
    c = n_relevant(relevant)
    i = np.arange(2, relevant.shape[1] + 1)
    ideal = 1.0 + np.where(i[None, :] <= c[:, None], 1.0 / np.log2(i)[None, :], 0.0).sum(axis=1)
    return undefined_without_relevant(gain.sum(axis=1) / ideal, c)


#: Recall levels of the precision-recall curve: 0.05, 0.10, ..., 1.0.
RECALL_LEVELS = np.round(np.arange(1, 21) / 20, 2)


def precision_at_recall(
    rank: ArrayLike, relevant: ArrayLike, levels: ArrayLike = RECALL_LEVELS
) -> np.ndarray:
    """The precision-recall curve, not interpolated: (sketches, levels) of Gs(k_r) / k_r
    at the first position k_r where Gs(k_r) / C >= r; 0 where the run never reaches
    recall r, NaN for a sketch without relevant images.

    Examples
    --------
    >>> precision_at_recall([[1, 4, np.nan]], [[True, True, True]], [0.3, 0.6, 1.0]).round(3)
    array([[1. , 0.5, 0. ]])
    """
    rank, relevant = ranks_and_relevance(rank, relevant)
    levels = np.asarray(levels, dtype=np.float64)
    if levels.ndim != 1 or ((levels <= 0) | (levels > 1)).any():
        raise InputError("levels: expected recall levels in (0, 1]")
    ordered = sorted_relevant_ranks(rank, relevant)
    c = n_relevant(relevant)
    needed = np.ceil(levels[None, :] * c[:, None] - 1e-9).astype(np.int64)  # hits to reach r
    index = np.clip(needed - 1, 0, max(ordered.shape[1] - 1, 0))
    at = np.take_along_axis(ordered, index, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(np.isfinite(at), needed / at, 0.0)
    return np.where((c > 0)[:, None], precision, np.nan)
