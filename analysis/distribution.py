"""How the ratings spread over the scale: binned medians (Eq. 3) and per-phase distributions."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from sbir_study.foundation.scale import Scale

from .cube import RatingCube, main_phase_cube
from .orientation import ratings_scale
from .validation import PHASES

__all__ = ["binned_medians", "box_summary", "rating_distribution"]


def binned_medians(
    ratings: pd.DataFrame, *, cube: RatingCube | None = None, scale: Scale | None = None
) -> pd.DataFrame:
    """Ratings grouped by the median rating of their pair (Eq. 3 of the paper).

    With m_i the median rating of pair i, bin k holds every rating r_ij with
    k <= m_i < k + 1, one bin per point k of ``scale`` (default:
    :func:`~sbir_study.analysis.orientation.ratings_scale`). Main phase, missing left out,
    ratings read as they are (in the paper's orientation after
    :func:`~sbir_study.analysis.orientation.in_paper_orientation`). Returns a row per bin:
    ``bin, n_ratings, mean, sd`` (ddof 1) and ``n_rating_<point>`` for each point.
    Eitz et al. (2011), Sec. 3.3.1, Eq. 3, Fig. 8: the largest spread is bin 4's,
    sigma = 1.4692.

    Examples
    --------
    >>> table = pd.DataFrame({"participant": ["1", "2", "3"] * 2, "sketch_id": "s",
    ...                       "image_id": ["a"] * 3 + ["b"] * 3, "phase": "main",
    ...                       "rating": [1, 2, 2, 6, 7, 5]})
    >>> binned_medians(table)[["bin", "n_ratings", "mean", "n_rating_1", "n_rating_2"]].head(2)
       bin  n_ratings      mean  n_rating_1  n_rating_2
    0    1          0       NaN           0           0
    1    2          3  1.666667           1           2
    """
    levels = np.array((scale or ratings_scale(ratings)).points)
    cube = main_phase_cube(ratings, cube)
    rows = []
    if cube is None or cube.values.size == 0:
        values = np.empty((0, 0, 0))
        bins = np.empty((0, 0))
    else:
        values = cube.values  # sketches x participants x images
        with warnings.catch_warnings():
            # nanmedian warns for pairs nobody rated; they get no bin.
            warnings.simplefilter("ignore", RuntimeWarning)
            bins = np.floor(np.nanmedian(values, axis=1))
    for k in levels:
        in_bin = np.broadcast_to((bins == k)[:, None, :], values.shape)
        members = values[in_bin & ~np.isnan(values)]
        counts = np.array([(members == level).sum() for level in levels])
        rows.append(
            (
                int(k),
                int(members.size),
                float(members.mean()) if members.size else np.nan,
                float(members.std(ddof=1)) if members.size > 1 else np.nan,
                *counts.tolist(),
            )
        )
    return pd.DataFrame(
        rows, columns=["bin", "n_ratings", "mean", "sd", *(f"n_rating_{k}" for k in levels)]
    )


def rating_distribution(ratings: pd.DataFrame, *, scale: Scale | None = None) -> pd.DataFrame:
    """Counts and shares of each rating per phase, against the uniform share.

    Returns ``phase, rating, count, share, uniform_share``, a row per phase (but
    ``practice``) and point of ``scale``; ``share`` is among the given ratings (the
    missing are ``n_missing``), ``uniform_share`` 1/k. Eitz et al. (2011), Sec. 2.2 and
    Fig. 7: the pilot's ratings were far from uniform, the final study's close to it.
    """
    levels = np.array((scale or ratings_scale(ratings)).points)
    rows = []
    # Practice trials are not the study's ratings: no statistic counts them.
    for phase in [p for p in PHASES if p != "practice" and (ratings["phase"] == p).any()]:
        rating = ratings.loc[ratings["phase"] == phase, "rating"]
        given = rating.dropna().astype(int)
        counts = given.value_counts().reindex(levels, fill_value=0)
        for level, count in counts.items():
            rows.append(
                (
                    phase,
                    int(level),
                    int(count),
                    count / len(given) if len(given) else np.nan,
                    1.0 / len(levels),
                    int(rating.isna().sum()),
                )
            )
    return pd.DataFrame(
        rows, columns=["phase", "rating", "count", "share", "uniform_share", "n_missing"]
    )


def box_summary(
    values: ArrayLike,
    *,
    whis: float = 1.5,
    max_fliers: int | None = None,
    quartiles: Sequence[float] | None = None,
) -> dict:
    """The numbers a Tukey box plot draws, for the finite entries of ``values``.

    Linear quartiles (or ``quartiles`` given), whiskers at the most extreme data within
    ``whis`` IQRs, the rest fliers (at most ``max_fliers``, the most extreme half from
    each side). The keys are :meth:`matplotlib.axes.Axes.bxp`'s plus ``mean`` and ``n``,
    so a box is drawn from a summary of data too many to keep.

    Examples
    --------
    >>> box = box_summary([1, 2, 3, 4, 100])
    >>> box["q1"], box["med"], box["q3"], box["whishi"], box["fliers"].tolist()
    (2.0, 3.0, 4.0, 4.0, [100.0])
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    finite = np.isfinite(data)
    if not finite.all():  # else no copy: millions of inter-user tau_b a sketch at crowd size
        data = data[finite]
    if data.size == 0:
        empty = dict.fromkeys(("med", "q1", "q3", "whislo", "whishi"), float("nan"))
        return {**empty, "fliers": np.empty(0), "mean": float("nan"), "n": 0}
    q1, med, q3 = np.percentile(data, [25, 50, 75]) if quartiles is None else quartiles
    reach = whis * (q3 - q1)
    inside = (data >= q1 - reach) & (data <= q3 + reach)
    # The extremes within reach without gathering them into a copy first.
    whislo = float(np.min(data, where=inside, initial=np.inf)) if inside.any() else float(q1)
    whishi = float(np.max(data, where=inside, initial=-np.inf)) if inside.any() else float(q3)
    fliers = np.sort(data[(data < whislo) | (data > whishi)])
    if max_fliers is not None and fliers.size > max_fliers:
        low = fliers[fliers < whislo]
        high = fliers[fliers > whishi]
        keep_low = min(low.size, max(max_fliers // 2, max_fliers - high.size))
        keep_high = min(high.size, max_fliers - keep_low)
        fliers = np.concatenate([low[:keep_low], high[high.size - keep_high :]])
    return {
        "med": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "whislo": whislo,
        "whishi": whishi,
        "fliers": fliers,
        "mean": float(data.mean()),
        "n": int(data.size),
    }


#: From this many values on, :func:`linear_quantiles` selects through a histogram.
_HISTOGRAM_FROM = 100_000
_HISTOGRAM_BINS = 1 << 16


def linear_quantiles(
    values: ArrayLike, q: ArrayLike, *, histogram_from: int = _HISTOGRAM_FROM
) -> np.ndarray:
    """``np.quantile(values, q)`` (method ``"linear"``) bit for bit, in one pass over many values.

    The values are counted into 65,536 equal bins between least and greatest (the
    binning keeps their order); only the bins holding the needed order statistics are
    sorted, and each quantile interpolates between its two by ``np.quantile`` of those
    two. Fewer than ``histogram_from`` values, NaN or infinities, ``q`` at 1, or values
    piled into few bins go to ``np.quantile`` itself.

    Examples
    --------
    >>> values = np.random.default_rng(0).normal(size=200_000)
    >>> q = [0.05, 0.25, 0.5, 0.75, 0.95]
    >>> bool((linear_quantiles(values, q) == np.quantile(values, q)).all())
    True
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64)
    n = values.size
    if n < max(histogram_from, 2) or q.ndim != 1 or not ((q >= 0) & (q < 1)).all():
        return np.quantile(values, q)
    least, greatest = values.min(), values.max()
    bins = _HISTOGRAM_BINS
    with np.errstate(all="ignore"):
        spread = greatest - least
        scale = bins / spread
    # NaN or infinities, one value, or a spread too small to divide by: numpy's own way.
    if not (np.isfinite(spread) and np.isfinite(scale) and spread > 0):
        return np.quantile(values, q)
    scaled = np.subtract(values, least)
    scaled *= scale
    index = scaled.astype(np.intp)
    del scaled
    np.minimum(index, bins - 1, out=index)  # the greatest value: the last bin
    counts = np.bincount(index, minlength=bins)
    ends = np.cumsum(counts)
    virtual = (n - 1) * q
    below = np.floor(virtual)
    ranks = np.stack([below.astype(np.intp), below.astype(np.intp) + 1])
    if (ranks[1] > n - 1).any():
        return np.quantile(values, q)
    needed = np.searchsorted(ends, ranks, side="right")
    wanted = np.zeros(bins, dtype=bool)
    wanted[needed.ravel()] = True
    chosen_counts = np.where(wanted, counts, 0)
    if chosen_counts.sum() > n // 8:
        return np.quantile(values, q)
    chosen = np.sort(values[wanted[index]])
    before = np.cumsum(chosen_counts) - chosen_counts  # chosen values in earlier bins
    position = ranks - (ends - counts)[needed] + before[needed]
    lower, upper = chosen[position[0]], chosen[position[1]]
    if ((lower == 0) | (upper == 0)).any():
        # 0.0 and -0.0 are equal but not the same bits, and which of them a partition puts
        # at a rank is its own affair.
        return np.quantile(values, q)
    gamma = virtual - below
    pairs = zip(lower, upper, gamma, strict=True)
    return np.array([np.quantile(np.array([a, b]), g) for a, b, g in pairs])
