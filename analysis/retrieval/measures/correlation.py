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
    """Kendall's tau_b(score, -mean_rating) per sketch, the paper's benchmark (Eitz et al.
    2011, Sec. 3.2, Eq. 2), with the tie-corrected normal p-value, as
    ``scipy.stats.kendalltau``; NaN where the system gives all judged images one score.

    Parameters
    ----------
    score
        (sketches, images), higher = more similar; NaN where the run does not return the
        image: those tie after every returned one.
    mean_rating
        The consensus (1 best); NaN for padding.
    alternative
        ``"greater"``, the paper's one-sided test: does the system agree with people more
        than chance?

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
    """The judged images' scores, those not returned (NaN) tied below every returned one;
    NaN for padding."""
    with np.errstate(invalid="ignore"):
        floor = np.nanmin(np.where(judged, score, np.nan), axis=1, initial=np.inf)
    floor = np.where(np.isfinite(floor), floor - 1.0, 0.0)
    return np.where(judged, np.where(np.isnan(score), floor[:, None], score), np.nan)
