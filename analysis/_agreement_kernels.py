"""Kernels of Kendall's W, Krippendorff's alpha and its bootstrap, and Skillings-Mack (private).

They take float arrays with NaN for missing; :mod:`~sbir_study.analysis.agreement`
validates and calls them.
"""

from __future__ import annotations

import numpy as np

from ._kernels import average_ranks, tie_group_sizes


def kendall_w(x: np.ndarray) -> float:
    """Kendall's W, tie-corrected, of a complete raters x items array; NaN where all are tied."""
    raters, items = x.shape
    rank_sums = average_ranks(x).sum(axis=0)
    spread = ((rank_sums - raters * (items + 1) / 2.0) ** 2).sum()
    t = tie_group_sizes(x).astype(np.float64)
    ties = (t**3 - t).sum()
    denominator = raters**2 * (items**3 - items) - raters * ties
    if denominator <= 0:
        return float("nan")
    return float(12.0 * spread / denominator)


# --- Krippendorff's alpha --------------------------------------------------------------------

ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")
# Bootstrap weights are drawn in blocks of about this many cells (replicates x units).
_BOOTSTRAP_CELLS = 1 << 22


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Pairable units x values x values: o_uck = (n_uc n_uk - [c = k] n_uc) / (m_u - 1).

    ``counts`` is units x values; units with fewer than two values are left out.
    """
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    pairable = counts[m >= 2]
    m = m[m >= 2]
    products = pairable[:, :, None] * pairable[:, None, :]
    diagonal = np.arange(counts.shape[1])
    products[:, diagonal, diagonal] -= pairable
    return products / (m - 1.0)[:, None, None]


def alpha_distances(values: np.ndarray, marginals: np.ndarray, level: str) -> np.ndarray:
    """Squared distances delta^2_ck of one metric between the sorted values.

    Ordinal: (mid_k - mid_c)^2 with mid = cumsum(n) - n / 2 over the marginals n_c.
    """
    values = np.asarray(values, dtype=np.float64)
    if level == "nominal":
        return np.broadcast_to(
            1.0 - np.eye(values.size), (*marginals.shape[:-1], values.size, values.size)
        )
    if level == "ordinal":
        mid = np.cumsum(marginals, axis=-1) - marginals / 2.0
        return (mid[..., None, :] - mid[..., :, None]) ** 2
    difference = values[None, :] - values[:, None]
    if level == "interval":
        distance = difference**2
    else:  # ratio
        total = values[None, :] + values[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            distance = np.where(total != 0, (difference / total) ** 2, 0.0)
    return np.broadcast_to(distance, (*marginals.shape[:-1], values.size, values.size))


def alpha_from_coincidences(o: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck; NaN with a single value throughout."""
    marginals = o.sum(axis=-1)
    n = marginals.sum(axis=-1)
    distance = alpha_distances(values, marginals, level)
    observed = (o * distance).sum(axis=(-2, -1))
    expected = (marginals[..., :, None] * marginals[..., None, :] * distance).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def bootstrap_alpha(
    units: np.ndarray,
    values: np.ndarray,
    level: str,
    n_resamples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """alpha of ``n_resamples`` resamples of the units: their coincidences weighted by draws."""
    n_units, width = units.shape[0], units.shape[1]
    flat = units.reshape(n_units, width * width)
    alphas = np.empty(n_resamples)
    block = max(1, _BOOTSTRAP_CELLS // max(n_units, 1))
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        drawn = rng.integers(0, n_units, size=(size, n_units))
        cells = (np.arange(size)[:, None] * n_units + drawn).ravel()
        weights = np.bincount(cells, minlength=size * n_units).reshape(size, n_units)
        # einsum's own loop rather than BLAS: BLAS threads left spinning after a call slow
        # the single-threaded work that follows.
        o = np.einsum("ru,uv->rv", weights.astype(np.float64), flat).reshape(size, width, width)
        alphas[start : start + size] = alpha_from_coincidences(o, values, level)
    return alphas


# --- the Skillings-Mack test ------------------------------------------------------------------

# Permuted rank matrices are built in blocks of about this many cells.
_PERMUTATION_CELLS = 1 << 21


def skillings_mack(
    x: np.ndarray, permutations: int, rng: np.random.Generator | None
) -> tuple[float, int, int, float]:
    """``(statistic, df, blocks used, permutation p-value)`` of blocks x treatments (NaN: missing).

    :func:`sbir_study.analysis.agreement.skillings_mack` gives the formula.
    """
    observed = ~np.isnan(x)
    keep = observed.sum(axis=1) >= 2
    x, observed = x[keep], observed[keep]
    blocks, treatments = x.shape
    if blocks == 0 or treatments < 2:
        return float("nan"), 0, blocks, float("nan")
    k = observed.sum(axis=1).astype(np.float64)
    ranks = average_ranks(np.where(observed, x, np.inf))
    weight = np.sqrt(12.0 / (k + 1.0))[:, None]
    centre = ((k + 1.0) / 2.0)[:, None]
    centred = np.where(observed, weight * (ranks - centre), 0.0)
    a = centred.sum(axis=0)
    together = observed.astype(np.float64)
    # A small product (treatments^2 of a blocks-long sum): einsum's own loop, not BLAS,
    # whose threads cost more than the product.
    lam = np.einsum("bi,bj->ij", together, together)
    sigma = -lam
    np.fill_diagonal(sigma, lam.sum(axis=1) - np.diag(lam))
    inverse = np.linalg.pinv(sigma, hermitian=True)
    df = int(np.linalg.matrix_rank(sigma, hermitian=True))
    statistic = float(a @ inverse @ a)
    if permutations <= 0 or rng is None or df == 0:
        return statistic, df, blocks, float("nan")

    # Each block's centred ranks shuffled among the cells it observed (Fisher-Yates on each
    # row, rng.permuted): a complete block over all treatments, a block with gaps over its
    # observed treatments only. The gap blocks' shuffled values, side by side, are summed
    # per treatment by one reduceat over their cells sorted by treatment. A* sums it all.
    complete = observed.all(axis=1)
    full = centred[complete]
    gap_values = [
        row[seen] for row, seen in zip(centred[~complete], observed[~complete], strict=True)
    ]
    gap_cells = np.nonzero(observed[~complete])[1]
    by_cell = np.argsort(gap_cells, kind="stable")
    cells_present, starts = np.unique(gap_cells[by_cell], return_index=True)
    tolerance = 100.0 * np.finfo(np.float64).eps * abs(statistic)
    at_least = 0
    block = max(1, _PERMUTATION_CELLS // (blocks * treatments))
    for start in range(0, permutations, block):
        size = min(block, permutations - start)
        a_star = np.zeros((size, treatments))
        if full.size:
            a_star += rng.permuted(np.broadcast_to(full, (size, *full.shape)), axis=2).sum(axis=1)
        if gap_values:
            shuffled = [
                rng.permuted(np.broadcast_to(v, (size, v.size)), axis=1) for v in gap_values
            ]
            columns = np.concatenate(shuffled, axis=1)[:, by_cell]
            a_star[:, cells_present] += np.add.reduceat(columns, starts, axis=1)
        sm_star = np.einsum("pi,ij,pj->p", a_star, inverse, a_star)
        at_least += int(np.count_nonzero(sm_star >= statistic - tolerance))
    return statistic, df, blocks, (1.0 + at_least) / (1.0 + permutations)
