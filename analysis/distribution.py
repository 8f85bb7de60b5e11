"""How the ratings spread over the scale: binned medians (Eq. 3) and per-phase distributions."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .ratings import PHASES, SCALE, rating_cube

__all__ = ["binned_medians", "rating_distribution"]

_LEVELS = np.arange(SCALE[0], SCALE[1] + 1)


def binned_medians(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings grouped by the median rating of their pair (Eq. 3 of the paper).

    For each pair i, m_i is the median of its ratings over the participants;
    bin k holds every rating r_ij with k <= m_i < k + 1, k = 1..7.

    Parameters
    ----------
    ratings : DataFrame
        A validated ratings table; the main phase is used and missing ratings
        are left out.

    Returns
    -------
    DataFrame
        One row per bin: ``bin, n_ratings, mean, sd`` (sample standard
        deviation, ddof = 1) and the histogram of the ratings in the bin,
        ``n_rating_1`` .. ``n_rating_7``.

    References
    ----------
    Eitz et al. (2011), Sec. 3.3.1, Eq. 3 and Fig. 8: the paper reports the
    largest spread in bin 4, sigma = 1.4692.

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
    main = ratings[ratings["phase"] == "main"]
    rows = []
    if main.empty:
        values = np.empty((0, 0, 0))
        bins = np.empty((0, 0))
    else:
        values = rating_cube(main).values  # sketches x participants x images
        with warnings.catch_warnings():
            # nanmedian warns for pairs nobody rated; they get no bin.
            warnings.simplefilter("ignore", RuntimeWarning)
            bins = np.floor(np.nanmedian(values, axis=1))
    for k in _LEVELS:
        in_bin = np.broadcast_to((bins == k)[:, None, :], values.shape)
        members = values[in_bin & ~np.isnan(values)]
        counts = np.array([(members == level).sum() for level in _LEVELS])
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
        rows, columns=["bin", "n_ratings", "mean", "sd", *(f"n_rating_{k}" for k in _LEVELS)]
    )


def rating_distribution(ratings: pd.DataFrame) -> pd.DataFrame:
    """Counts and shares of each rating per phase, against the uniform share.

    Returns
    -------
    DataFrame
        ``phase, rating, count, share, uniform_share``: one row per phase
        present and scale point; ``share`` is among the given ratings of the
        phase (missing responses excluded; their count is in
        ``n_missing`` of the same phase), ``uniform_share`` is 1/7.

    References
    ----------
    Eitz et al. (2011), Sec. 2.2 and Fig. 7: the pilot's ratings were far from
    uniform, the final study's close to it.
    """
    rows = []
    for phase in [p for p in PHASES if (ratings["phase"] == p).any()]:
        rating = ratings.loc[ratings["phase"] == phase, "rating"]
        given = rating.dropna().astype(int)
        counts = given.value_counts().reindex(_LEVELS, fill_value=0)
        for level, count in counts.items():
            rows.append(
                (
                    phase,
                    int(level),
                    int(count),
                    count / len(given) if len(given) else np.nan,
                    1.0 / len(_LEVELS),
                    int(rating.isna().sum()),
                )
            )
    return pd.DataFrame(
        rows, columns=["phase", "rating", "count", "share", "uniform_share", "n_missing"]
    )
