"""A system's rank correlation with people: Kendall's tau_b against the consensus
(Eitz et al. 2011, Sec. 3.2)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError, check_option

from ... import _kernels

__all__ = ["TauResult", "system_tau_b", "unreturned_tied_last"]


class TauResult(NamedTuple):
    """Per-sketch tau_b against the consensus and its p-value."""

    statistic: np.ndarray
    pvalue: np.ndarray


def system_tau_b(
    score: ArrayLike, mean_rating: ArrayLike, *, alternative: str = "greater"
) -> TauResult:
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
    filled = unreturned_tied_last(score, ~np.isnan(mean_rating))
    tau, p, _ = _kernels.paired_rows_tau_b(filled, -mean_rating, alternative)
    return TauResult(tau, p)


def unreturned_tied_last(score: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """The scores of the judged images, those the run does not return (NaN) tied below
    every returned one (the lowest returned score minus 1); NaN for padding."""
    with np.errstate(invalid="ignore"):
        floor = np.nanmin(np.where(judged, score, np.nan), axis=1, initial=np.inf)
    floor = np.where(np.isfinite(floor), floor - 1.0, 0.0)
    return np.where(judged, np.where(np.isnan(score), floor[:, None], score), np.nan)
