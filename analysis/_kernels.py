"""Vectorised numeric kernels for the rank statistics (private).

The public functions in :mod:`analysis.agreement` validate their input and call
these. Everything here takes plain float arrays in which NaN marks a missing
value, and follows scipy.stats term for term so that the results agree with
``scipy.stats.kendalltau(method="asymptotic")`` and ``scipy.stats.rankdata`` to
rounding error (the tests check it).

Only ``scipy.special`` is imported: importing ``scipy.stats`` costs about a
second, half the time budget of a whole paper-scale analysis.
"""

from __future__ import annotations

import numpy as np
from scipy import special

ALTERNATIVES = ("greater", "two-sided", "less")

# Sign arrays are built in column blocks of about this many bytes, so that the
# O(raters x items^2) intermediate of the pairwise kernel stays bounded.
_BLOCK_BYTES = 64 * 2**20


def normal_pvalue(z: np.ndarray, alternative: str) -> np.ndarray:
    """p-value of a standard-normal statistic, as scipy's ``_get_pvalue``."""
    if alternative == "greater":
        return special.ndtr(-z)
    if alternative == "less":
        return special.ndtr(z)
    return 2.0 * special.ndtr(-np.abs(z))


def tie_sums(counts: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tie terms of Kendall's variance from tie-group sizes along ``axis``.

    Returns ``(sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5))``: the number
    of tied pairs and the two sums of the tie-corrected variance of S.
    """
    t = np.asarray(counts, dtype=np.float64)
    tt = t * (t - 1.0)
    return (tt / 2.0).sum(axis), (tt * (t - 2.0)).sum(axis), (tt * (2.0 * t + 5.0)).sum(axis)


def tau_b_from_counts(
    con_minus_dis: np.ndarray,
    n: np.ndarray,
    x_ties: tuple[np.ndarray, np.ndarray, np.ndarray],
    y_ties: tuple[np.ndarray, np.ndarray, np.ndarray],
    alternative: str,
) -> tuple[np.ndarray, np.ndarray]:
    """tau_b and its normal-approximation p-value from pair counts.

    Term for term the asymptotic branch of ``scipy.stats.kendalltau``;
    undefined (NaN) where fewer than two items are shared or one list is
    constant over them, as scipy returns.
    """
    xtie, x0, x1 = (np.asarray(term, dtype=np.float64) for term in x_ties)
    ytie, y0, y1 = (np.asarray(term, dtype=np.float64) for term in y_ties)
    n = np.asarray(n, dtype=np.float64)
    tot = n * (n - 1.0) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
        tau = np.clip(tau, -1.0, 1.0)
        m = n * (n - 1.0)
        var = (
            (m * (2.0 * n + 5.0) - x1 - y1) / 18.0
            + (2.0 * xtie * ytie) / m
            + x0 * y0 / (9.0 * m * (n - 2.0))
        )
        pvalue = normal_pvalue(con_minus_dis / np.sqrt(var), alternative)
    undefined = (n < 2) | (xtie == tot) | (ytie == tot)
    return np.where(undefined, np.nan, tau), np.where(undefined, np.nan, pvalue)


def dense_ranks(x: np.ndarray) -> np.ndarray:
    """Per-row dense ranks 0, 1, 2, ... of the distinct values; -1 where NaN."""
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    new_value = np.ones(xs.shape, dtype=bool)
    new_value[:, 1:] = xs[:, 1:] != xs[:, :-1]
    ranks_sorted = np.cumsum(new_value, axis=1) - 1
    ranks_sorted[np.isnan(xs)] = -1
    ranks = np.empty_like(ranks_sorted)
    np.put_along_axis(ranks, order, ranks_sorted, axis=1)
    return ranks


def tie_group_sizes(x: np.ndarray) -> np.ndarray:
    """Per-row sizes of the groups of equal values, shape (rows, columns), 0-padded."""
    rows, cols = x.shape
    ranks = dense_ranks(x)
    present = ranks >= 0
    flat = (np.arange(rows)[:, None] * cols + ranks)[present]
    return np.bincount(flat, minlength=rows * cols).reshape(rows, cols)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Per-row ranks 1..n with ties given their average rank; rows without NaN.

    Equal to ``scipy.stats.rankdata(x, axis=1)`` (method ``"average"``).
    """
    rows, cols = x.shape
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    new_value = np.ones(xs.shape, dtype=bool)
    new_value[:, 1:] = xs[:, 1:] != xs[:, :-1]
    position = np.broadcast_to(np.arange(cols), xs.shape)
    group_start = np.maximum.accumulate(np.where(new_value, position, 0), axis=1)
    group_id = np.arange(rows)[:, None] * cols + np.cumsum(new_value, axis=1) - 1
    group_size = np.bincount(group_id.ravel(), minlength=rows * cols)[group_id]
    ranks_sorted = group_start + (group_size + 1) / 2.0
    ranks = np.empty(xs.shape, dtype=np.float64)
    np.put_along_axis(ranks, order, ranks_sorted, axis=1)
    return ranks


def _pair_signs(x: np.ndarray, first: np.ndarray, second: np.ndarray, dtype) -> np.ndarray:
    """sign(x_i - x_j) for the item pairs (first, second); 0 where either is missing."""
    signs = np.sign(x[:, first] - x[:, second]).astype(dtype, copy=False)
    signs[np.isnan(signs)] = 0.0
    return signs


def pairwise_tau_b(x: np.ndarray, alternative: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tau_b, p-value and shared-item count for every pair of rows of ``x``.

    With S_r the vector of sign(x_ri - x_rj) over item pairs i < j (0 where r
    lacks either item), concordant minus discordant pairs for raters a, b is the
    dot product S_a . S_b, so all pairs come from one matrix product. Tie terms
    restricted to the items both raters gave come from one product per distinct
    value: T[a, b, v] = #{items rated v by a and rated by b}.
    """
    raters, items = x.shape
    valid = (~np.isnan(x)).astype(np.float32)
    n_common = valid @ valid.T

    first, second = np.triu_indices(items, 1)
    n_pairs = first.size
    # The products are sums of +-1 and 0 over the item pairs: exact in float32
    # while the count of item pairs stays below 2**24.
    dtype = np.float32 if n_pairs < 2**24 else np.float64
    block = max(1, _BLOCK_BYTES // (max(raters, 1) * np.dtype(dtype).itemsize))
    con_minus_dis = np.zeros((raters, raters), dtype=np.float64)
    for start in range(0, n_pairs, block):
        signs = _pair_signs(x, first[start : start + block], second[start : start + block], dtype)
        con_minus_dis += signs @ signs.T

    # Tie terms per ordered pair (a, b) over the items both rated; exact in
    # float32 while their largest sum, about 3 items^3, stays below 2**24.
    tie_dtype = np.float32 if 3 * items**3 < 2**24 else np.float64
    ranks = dense_ranks(x)
    valid_t = valid.T.astype(tie_dtype)
    xtie, x0, x1 = (np.zeros((raters, raters), dtype=tie_dtype) for _ in range(3))
    counts, tt, scratch = (np.empty((raters, raters), dtype=tie_dtype) for _ in range(3))
    for value in range(int(ranks.max(initial=-1)) + 1):
        np.matmul((ranks == value).astype(tie_dtype), valid_t, out=counts)
        np.subtract(counts, 1.0, out=tt)
        tt *= counts  # t (t - 1)
        xtie += tt
        np.subtract(counts, 2.0, out=scratch)
        scratch *= tt
        x0 += scratch
        np.multiply(counts, 2.0, out=scratch)
        scratch += 5.0
        scratch *= tt
        x1 += scratch
    xtie /= 2.0
    del counts, tt, scratch

    # tau and p are symmetric: compute them on the upper triangle and mirror.
    a, b = np.triu_indices(raters)
    upper_tau, upper_p = tau_b_from_counts(
        con_minus_dis[a, b],
        n_common[a, b],
        (xtie[a, b], x0[a, b], x1[a, b]),
        (xtie[b, a], x0[b, a], x1[b, a]),
        alternative,
    )
    tau = np.empty((raters, raters))
    pvalue = np.empty((raters, raters))
    tau[a, b] = tau[b, a] = upper_tau
    pvalue[a, b] = pvalue[b, a] = upper_p
    return tau, pvalue, n_common.astype(np.int64)


def paired_rows_tau_b(
    x: np.ndarray, y: np.ndarray, alternative: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tau_b, p-value and item count between row i of ``x`` and row i of ``y``.

    Each row pair uses the items present in both rows.
    """
    rows, items = x.shape
    both = ~np.isnan(x) & ~np.isnan(y)
    x = np.where(both, x, np.nan)
    y = np.where(both, y, np.nan)
    n = both.sum(axis=1)

    first, second = np.triu_indices(items, 1)
    con_minus_dis = np.empty(rows, dtype=np.float64)
    block = max(1, _BLOCK_BYTES // (max(first.size, 1) * 8))
    for start in range(0, rows, block):
        part = slice(start, start + block)
        sx = _pair_signs(x[part], first, second, np.float64)
        sy = _pair_signs(y[part], first, second, np.float64)
        con_minus_dis[part] = np.einsum("ij,ij->i", sx, sy)

    tau, pvalue = tau_b_from_counts(
        con_minus_dis, n, tie_sums(tie_group_sizes(x)), tie_sums(tie_group_sizes(y)), alternative
    )
    return tau, pvalue, n


def kendall_w(x: np.ndarray) -> float:
    """Kendall's W with the tie correction for a complete raters x items array.

    W = 12 S / (m^2 (n^3 - n) - m sum_j T_j), T_j = sum over rater j's tie
    groups of t^3 - t; NaN where every rater gives one value to all items.
    """
    raters, items = x.shape
    rank_sums = average_ranks(x).sum(axis=0)
    spread = ((rank_sums - raters * (items + 1) / 2.0) ** 2).sum()
    t = tie_group_sizes(x).astype(np.float64)
    ties = (t**3 - t).sum()
    denominator = raters**2 * (items**3 - items) - raters * ties
    if denominator <= 0:
        return float("nan")
    return float(12.0 * spread / denominator)
