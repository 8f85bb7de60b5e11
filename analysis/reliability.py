"""How reliable the consensus ground truth is: split-half, Spearman-Brown, ICC, raters needed.

Would another group of participants give the same ranking, and how many raters does
it take? Per sketch the participants are split at random into halves, each half's
consensus (images by mean rating) is compared with the other's (tau_b, Spearman's
rho), and Spearman-Brown (Spearman 1910; Brown 1910) carries that to the whole group,
to one rater and to any number of raters. The intraclass correlations of Shrout &
Fleiss (1979) come with their F tests and intervals. Everything reads the main phase
as a :class:`~sbir_study.analysis.cube.RatingCube` in the paper's orientation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import special

from sbir_study.foundation.checks import InputError, check_whole_number

from . import _kernels
from .cube import RatingCube

__all__ = [
    "ICC_TYPES",
    "RELIABILITY_TARGET",
    "intraclass_correlations",
    "predicted_reliability",
    "raters_needed",
    "reliability_summary",
    "shortfall",
    "single_rater_reliability",
    "spearman_brown",
    "split_half_reliability",
    "split_halves",
]

#: The intraclass correlations of :func:`intraclass_correlations`, in Shrout & Fleiss'
#: notation: two-way random (2) and two-way mixed (3), of one rater (1) and of the mean
#: of the k raters (k). pingouin calls them ICC2, ICC2k, ICC3, ICC3k.
ICC_TYPES = ("ICC(2,1)", "ICC(2,k)", "ICC(3,1)", "ICC(3,k)")

#: The reliability a consensus is asked to reach by default: 0.8, the level Nunnally (1978)
#: asks of a measurement in basic research.
RELIABILITY_TARGET = 0.8

_ALL = "all"


def spearman_brown(r: float | np.ndarray, factor: float | np.ndarray) -> float | np.ndarray:
    """The reliability of a test ``factor`` times as long: factor r / (1 + (factor - 1) r).

    Spearman (1910), Br. J. Psychol. 3, 271-295; Brown (1910), Br. J. Psychol. 3, 296-322.

    Examples
    --------
    >>> round(spearman_brown(0.5, 2), 4)
    0.6667
    """
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = factor * r / (1.0 + (factor - 1.0) * r)
    return float(out) if out.ndim == 0 else out


def single_rater_reliability(
    r: float | np.ndarray, raters: float | np.ndarray
) -> float | np.ndarray:
    """One rater's reliability from that of the mean of ``raters``: r / (raters - (raters - 1) r).

    Examples
    --------
    >>> round(single_rater_reliability(spearman_brown(0.3, 14), 14), 12)
    0.3
    """
    with np.errstate(divide="ignore"):
        factor = 1.0 / np.asarray(raters, dtype=np.float64)
    return spearman_brown(r, factor)


def raters_needed(target: float, r1: float | np.ndarray) -> int | float | np.ndarray:
    """Raters whose mean reaches ``target``: target (1 - r1) / (r1 (1 - target)), rounded up.

    NaN where ``r1`` is not positive or not known.

    Examples
    --------
    >>> raters_needed(0.8, 0.2)
    16
    """
    if not 0.0 < target < 1.0:
        raise InputError(f"reliability: expected a target between 0 and 1, got {target!r}")
    r1 = np.asarray(r1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = target * (1.0 - r1) / (r1 * (1.0 - target))
    # 1e-9: the formula at an exact whole number of raters must not round up to the next.
    m = np.where((r1 > 0) & (r1 < 1), np.ceil(m - 1e-9), np.where(r1 >= 1, 1.0, np.nan))
    if m.ndim == 0:
        return int(m) if np.isfinite(m) else float(m)
    return m


def split_halves(n_participants: int, n_splits: int, seed: int) -> np.ndarray:
    """Random keys that split the participants, splits x participants.

    In each sketch the raters with the lower half of the keys (``n // 2`` of ``n``) form
    the first half, so one split divides the participants the same way in every sketch.
    """
    return np.random.default_rng(seed).random((n_splits, n_participants))


def _first_half(keys: np.ndarray, raters: np.ndarray) -> np.ndarray:
    """Splits x participants: True for the ``raters.sum() // 2`` raters of smallest key.

    Ties go to the earlier participant, as a stable sort would; found by a partition.
    """
    half = int(raters.sum()) // 2
    if half == 0:
        return np.zeros(keys.shape, dtype=bool)
    masked = np.where(raters, keys, np.inf)
    kth = np.partition(masked, half - 1, axis=1)[:, half - 1 : half]
    below = masked < kth
    tied = masked == kth
    # Of the keys equal to the k-th, as many as the half still needs, earliest first.
    needed = half - below.sum(axis=1, keepdims=True)
    return below | (tied & (np.cumsum(tied, axis=1) <= needed))


def _half_means(values: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Splits x images: each image's mean rating over the participants of ``half``.

    Whole-number sums below 2**24 are exact in single precision, which is then used.
    """
    rated = ~np.isnan(values)
    given = np.where(rated, values, 0.0)
    largest = float(np.abs(given).max(initial=0.0))
    exact = largest * half.shape[1] < 2**24 and bool((given == np.floor(given)).all())
    dtype = np.float32 if exact else np.float64
    weights = half.astype(dtype)
    total = (weights @ given.astype(dtype)).astype(np.float64)
    count = (weights @ rated.astype(dtype)).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _row_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho between row i of ``x`` and row i of ``y`` over the items both have."""
    both = ~np.isnan(x) & ~np.isnan(y)
    x, y = np.where(both, x, np.nan), np.where(both, y, np.nan)
    rx, ry = _kernels.average_ranks(x), _kernels.average_ranks(y)  # among the items present
    n = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = rx - np.nansum(rx, axis=1, keepdims=True) / n[:, None]
        dy = ry - np.nansum(ry, axis=1, keepdims=True) / n[:, None]
        rho = np.nansum(dx * dy, axis=1) / np.sqrt(
            np.nansum(dx * dx, axis=1) * np.nansum(dy * dy, axis=1)
        )
    rho[n < 3] = np.nan
    return np.clip(rho, -1.0, 1.0)


def _split_correlations(cube: RatingCube, keys: np.ndarray):
    """Per sketch: the raters, and the per-split tau_b and rho between the halves' consensus.

    Sketches with the same raters share their halves, so their means come from one product.
    """
    values = cube.values  # sketches x participants x images, NaN-padded
    n_sketches, _, n_images = values.shape
    raters = ~np.isnan(values).all(axis=2)  # sketches x participants
    first_means = np.full((n_sketches, len(keys), n_images), np.nan)
    second_means = np.full_like(first_means, np.nan)
    groups: dict[bytes, list[int]] = {}
    for index in range(n_sketches):
        # Fewer than 2 raters in a half: no consensus to compare, undefined (never 0).
        if raters[index].sum() >= 4 and len(cube.images[index]) >= 2:
            groups.setdefault(raters[index].tobytes(), []).append(index)
    for members in groups.values():
        chosen = raters[members[0]]
        first = _first_half(keys, chosen)
        second = chosen[None, :] & ~first
        block = values[members].transpose(1, 0, 2).reshape(values.shape[1], -1)
        shape = (len(keys), len(members), n_images)
        first_means[members] = _half_means(block, first).reshape(shape).transpose(1, 0, 2)
        second_means[members] = _half_means(block, second).reshape(shape).transpose(1, 0, 2)
    a = first_means.reshape(-1, n_images)
    b = second_means.reshape(-1, n_images)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau, _, _ = _kernels.paired_rows_tau_b(a, b, "greater")
        rho = _row_spearman(a, b)
    grid = (n_sketches, len(keys))
    return raters.sum(axis=1), tau.reshape(grid), rho.reshape(grid)


def split_half_reliability(
    cube: RatingCube, *, n_splits: int = 1000, seed: int = 0, confidence: float = 0.95
) -> pd.DataFrame:
    """Split-half reliability of the consensus ranking, per sketch and over all sketches.

    Parameters
    ----------
    n_splits : int
        Random splits of the participants (:func:`split_halves`).
    confidence : float
        Coverage of the percentile interval over the splits.

    Returns
    -------
    DataFrame
        One row per sketch and a last row ``sketch_id == "all"``: ``n_raters``,
        ``n_splits``, ``n_undefined`` (splits with fewer than 2 raters in a half or a
        consensus that ties every image), then for ``tau_b`` and ``rho``: ``{m}_half`` (the
        mean over defined splits), ``{m}_half_low``/``_high`` (percentile interval),
        ``{m}_sb``, ``{m}_sb_low``, ``{m}_sb_high`` (Spearman-Brown, 2r / (1 + r); empty
        where r < 0), and ``r1`` (one rater, from ``rho_half`` with n_raters / 2 per half).
        The ``all`` row averages each split over its defined sketches; its ``n_raters``
        counts every participant, its ``r1`` halves the median sketch's raters.

    Notes
    -----
    A participant who rated none of a sketch is in neither half; an image nobody in a
    half rated is left out of that split. Odd rater counts make the correction the usual
    approximation. Spearman (1910); Brown (1910); Eitz et al. (2011), Sec. 3.2.
    """
    check_whole_number("reliability_splits", n_splits, 1)
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence: expected a level between 0 and 1, got {confidence!r}")
    keys = split_halves(len(cube.participants), n_splits, seed)
    n_raters, taus, rhos = _split_correlations(cube, keys)
    with np.errstate(invalid="ignore"):
        tau_all = _mean_over_defined(taus)
        rho_all = _mean_over_defined(rhos)
    labels = [str(s) for s in cube.sketches] + [_ALL]
    raters = np.append(n_raters, len(cube.participants))
    rows = []
    for label, n, tau, rho in zip(labels, raters, [*taus, tau_all], [*rhos, rho_all], strict=True):
        row = {
            "sketch_id": label,
            "n_raters": int(n),
            "n_splits": n_splits,
            "n_undefined": int(np.isnan(rho).sum()),
        }
        row.update(_interval("tau_b", tau, confidence))
        rho_values = _interval("rho", rho, confidence)
        row.update(rho_values)
        half_raters = (n if label != _ALL else np.median(n_raters)) / 2.0
        row["r1"] = float(single_rater_reliability(rho_values["rho_half"], half_raters))
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_over_defined(values: np.ndarray) -> np.ndarray:
    """Per split, the mean over the sketches defined in it (NaN where none is)."""
    defined = ~np.isnan(values)
    count = defined.sum(axis=0)
    return np.where(
        count > 0, np.where(defined, values, 0.0).sum(axis=0) / np.maximum(count, 1), np.nan
    )


def _interval(name: str, values: np.ndarray, confidence: float) -> dict[str, float]:
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        half = low = high = np.nan
    else:
        half = float(defined.mean())
        low, high = np.quantile(defined, [(1 - confidence) / 2, (1 + confidence) / 2])
    # Spearman-Brown is increasing in r, so the percentiles carry over.
    return {
        f"{name}_half": half,
        f"{name}_half_low": float(low),
        f"{name}_half_high": float(high),
        f"{name}_sb": _corrected(half),
        f"{name}_sb_low": _corrected(low),
        f"{name}_sb_high": _corrected(high),
    }


def _corrected(r: float) -> float:
    """Spearman-Brown to the full group; NaN for r < 0, where 2r / (1 + r) runs below -1."""
    return float(spearman_brown(r, 2)) if r >= 0 else math.nan


def predicted_reliability(
    reliability: pd.DataFrame, raters: Sequence[int] | np.ndarray
) -> pd.DataFrame:
    """Spearman-Brown prophecy r_m = m r1 / (1 + (m - 1) r1) of each row for every m of ``raters``.

    Returns ``sketch_id, n_raters, predicted``.
    """
    m = np.asarray(raters, dtype=np.float64)
    r1 = reliability["r1"].to_numpy(dtype=np.float64)
    predicted = spearman_brown(r1[:, None], m[None, :])
    return pd.DataFrame(
        {
            "sketch_id": np.repeat(reliability["sketch_id"].to_numpy(), m.size),
            "n_raters": np.tile(m.astype(np.int64), len(r1)),
            "predicted": np.ravel(predicted),
        }
    )


def _icc_from_matrix(y: np.ndarray, confidence: float = 0.95) -> list[dict]:
    """The four ICCs of a complete targets x raters matrix (two-way ANOVA, no replication)."""
    n, k = y.shape
    grand = y.mean()
    ss_targets = k * ((y.mean(axis=1) - grand) ** 2).sum()
    ss_raters = n * ((y.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((y - grand) ** 2).sum() - ss_targets - ss_raters
    df1, df_raters, df2 = n - 1, k - 1, (n - 1) * (k - 1)
    msr, msc, mse = ss_targets / df1, ss_raters / df_raters, ss_error / df2
    with np.errstate(divide="ignore", invalid="ignore"):
        icc21 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        icc2k = (msr - mse) / (msr + (msc - mse) / n)
        icc31 = (msr - mse) / (msr + (k - 1) * mse)
        icc3k = (msr - mse) / msr
        f = msr / mse
        # The F distribution's survival function (scipy.stats.f.sf), which is 1 below 0
        # where fdtrc is NaN: an MSE that rounds below 0 (a perfectly additive matrix).
        p = special.fdtrc(df1, df2, np.maximum(f, 0.0))
        tail = (1 + confidence) / 2
        # ICC(3,.): Shrout & Fleiss (1979), Table 4 (McGraw & Wong 1996, case 3).
        f_low = f / special.fdtri(df1, df2, tail)
        f_high = f * special.fdtri(df2, df1, tail)
        ci31 = ((f_low - 1) / (f_low + k - 1), (f_high - 1) / (f_high + k - 1))
        ci3k = (1 - 1 / f_low, 1 - 1 / f_high)
        # ICC(2,1): an F with Satterthwaite's approximate df v (McGraw & Wong 1996, case 2A;
        # the form of psych::ICC and pingouin).
        fj = msc / mse
        spread = n * (1 + (k - 1) * icc21) - k * icc21
        v = df2 * (k * icc21 * fj + spread) ** 2 / (df1 * k**2 * icc21**2 * fj**2 + spread**2)
        fu = special.fdtri(df1, v, tail)
        fl = special.fdtri(v, df1, tail)
        low21 = n * (msr - fu * mse) / (fu * (k * msc + (k * n - k - n) * mse) + n * msr)
        high21 = n * (fl * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fl * msr)
        ci2k = (k * low21 / (1 + (k - 1) * low21), k * high21 / (1 + (k - 1) * high21))
    values = zip(
        ICC_TYPES, (icc21, icc2k, icc31, icc3k), ((low21, high21), ci2k, ci31, ci3k), strict=True
    )
    return [
        {
            "type": t,
            "icc": float(icc),
            "f": float(f),
            "df1": int(df1),
            "df2": int(df2),
            "p_value": float(p),
            "ci_low": float(lo),
            "ci_high": float(hi),
        }
        for t, icc, (lo, hi) in values
    ]


def intraclass_correlations(cube: RatingCube, *, confidence: float = 0.95) -> pd.DataFrame:
    """ICC(2,1), ICC(2,k), ICC(3,1), ICC(3,k) with their F tests, per sketch and over all.

    Raters are the participants who rated at least one image of a sketch, targets the
    images every one of them rated (complete cases, as pingouin's ``intraclass_corr(...,
    nan_policy="omit")`` and R's ``psych::ICC``). The ``all`` rows take every pair of every
    sketch as a target; fewer than 2 targets or raters leave a row undefined.

    Returns
    -------
    DataFrame
        ``sketch_id, type, icc, f, df1, df2, p_value, ci_low, ci_high, n_images,
        n_images_excluded, n_raters``, four rows (:data:`ICC_TYPES`) per sketch and for
        ``all``. The F test of H0 ICC = 0 is MSR / MSE on n - 1 and (n - 1)(k - 1) df.

    Notes
    -----
    ICC(2,1) = (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n);
    ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n);
    ICC(3,1) = (MSR - MSE) / (MSR + (k - 1) MSE); ICC(3,k) = (MSR - MSE) / MSR.
    Intervals of Shrout & Fleiss (1979), Psychol. Bull. 86(2), and McGraw & Wong (1996).
    """
    blocks = [(str(s), cube.sketch(i)) for i, s in enumerate(cube.sketches)]
    if blocks:
        blocks.append((_ALL, np.concatenate([v for _, v in blocks], axis=1)))
    rows = []
    for label, values in blocks:
        raters = ~np.isnan(values).all(axis=1)
        complete = ~np.isnan(values[raters]).any(axis=0)
        y = values[raters][:, complete].T  # targets x raters
        base = {
            "n_images": int(complete.sum()),
            "n_images_excluded": int((~complete).sum()),
            "n_raters": int(raters.sum()),
        }
        if y.shape[0] >= 2 and y.shape[1] >= 2:
            results = _icc_from_matrix(y, confidence)
        else:
            undefined = dict.fromkeys(("icc", "f", "p_value", "ci_low", "ci_high"), np.nan)
            results = [{"type": t, **undefined, "df1": 0, "df2": 0} for t in ICC_TYPES]
        rows += [{"sketch_id": label, **r, **base} for r in results]
    columns = ["sketch_id", "type", "icc", "f", "df1", "df2", "p_value", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=[*columns, "n_images", "n_images_excluded", "n_raters"])


def reliability_summary(
    split_half: pd.DataFrame, icc: pd.DataFrame, target: float = RELIABILITY_TARGET
) -> dict:
    """The ``reliability`` object of ``summary.json`` (``docs/outputs.md``)."""
    overall = split_half.set_index("sketch_id").loc[_ALL]
    icc_all = icc[(icc["sketch_id"] == _ALL) & (icc["type"] == "ICC(2,k)")]
    needed = raters_needed(target, overall["r1"])
    return {
        "n_splits": int(overall["n_splits"]),
        "tau_b_half": _number(overall["tau_b_half"]),
        "tau_b_sb": _number(overall["tau_b_sb"]),
        "tau_b_sb_interval": [_number(overall["tau_b_sb_low"]), _number(overall["tau_b_sb_high"])],
        "rho_half": _number(overall["rho_half"]),
        "rho_sb": _number(overall["rho_sb"]),
        "rho_sb_interval": [_number(overall["rho_sb_low"]), _number(overall["rho_sb_high"])],
        "icc2k": _number(icc_all["icc"].iloc[0]) if len(icc_all) else None,
        "target": target,
        "raters_needed": int(needed) if isinstance(needed, int) else None,
        "below_target": [
            {
                "sketch_id": str(row.sketch_id),
                "rho_sb": _number(row.rho_sb),
                "raters_needed": int(row.raters_needed) if np.isfinite(row.raters_needed) else None,
            }
            for row in shortfall(split_half, target).itertuples()
        ],
    }


def shortfall(split_half: pd.DataFrame, target: float = RELIABILITY_TARGET) -> pd.DataFrame:
    """The sketches whose ``rho_sb`` is below ``target``: ``sketch_id, rho_sb, raters_needed``."""
    sketches = split_half[split_half["sketch_id"] != _ALL]
    below = sketches[~(sketches["rho_sb"] >= target)]
    return pd.DataFrame(
        {
            "sketch_id": below["sketch_id"].to_numpy(),
            "rho_sb": below["rho_sb"].to_numpy(),
            "raters_needed": np.atleast_1d(raters_needed(target, below["r1"].to_numpy())),
        }
    )


def _number(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None
