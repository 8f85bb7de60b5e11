"""Vectorised kernels of Kendall's tau_b and of ranks (private).

They take float arrays with NaN for missing and follow scipy.stats term for term,
agreeing with ``scipy.stats.kendalltau(method="asymptotic")`` and
``scipy.stats.rankdata`` to rounding error (the tests check it). Only
``scipy.special`` is imported: ``analyze`` does not pay for ``scipy.stats``.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from scipy import special

from sbir_study.foundation.threads import THREADS_VARIABLE, threads

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

ALTERNATIVES = ("greater", "two-sided", "less")
_Result = TypeVar("_Result")
#: Tie terms of one side: sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5).
_Ties = tuple[np.ndarray, np.ndarray, np.ndarray]

# Sign arrays are built in column blocks of about this many bytes, so that the
# O(raters x items^2) intermediate of the pairwise kernel stays bounded.
_BLOCK_BYTES = 64 * 2**20
# Rater pairs per block of the pairwise kernel: its twenty block-sized arrays stay
# bounded at any number of raters, and a block's rectangle has few pairs below its
# diagonal (computed and left).
_PAIR_CELLS = 1 << 18


def normal_pvalue(z: np.ndarray, alternative: str) -> np.ndarray:
    """p-value of a standard-normal statistic, as scipy's ``_get_pvalue``."""
    if alternative == "greater":
        return special.ndtr(-z)
    if alternative == "less":
        return special.ndtr(z)
    return 2.0 * special.ndtr(-np.abs(z))


def tie_sums(counts: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kendall's tie terms of tie-group sizes: sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5)."""
    t = np.asarray(counts, dtype=np.float64)
    tt = t * (t - 1.0)
    return (tt / 2.0).sum(axis), (tt * (t - 2.0)).sum(axis), (tt * (2.0 * t + 5.0)).sum(axis)


def tau_b_from_counts(
    con_minus_dis: np.ndarray,
    n: np.ndarray,
    x_ties: _Ties,
    y_ties: _Ties,
    alternative: str,
) -> tuple[np.ndarray, np.ndarray]:
    """tau_b and its normal-approximation p-value from pair counts, as ``scipy.stats.kendalltau``.

    NaN where fewer than two items are shared or one list is constant over them.
    """
    x_terms = tuple(np.asarray(term, dtype=np.float64) for term in x_ties)
    y_terms = tuple(np.asarray(term, dtype=np.float64) for term in y_ties)
    return _tau_b(con_minus_dis, np.asarray(n, dtype=np.float64), x_terms, y_terms, alternative)


def _tau_b(
    con_minus_dis: np.ndarray, n: np.ndarray, x_ties, y_ties, alternative: str
) -> tuple[np.ndarray, np.ndarray]:
    """tau_b and its p-value from ``n``, concordant minus discordant pairs and tie terms.

    Whole-number terms stay in ``n``'s precision (chosen exact by the callers); every
    rounding division, root and sum is scipy's, in double and in scipy's order, so the
    results are scipy's bits (tested bit for bit).
    """
    xtie, x0, x1 = x_ties
    ytie, y0, y1 = y_ties
    m = np.subtract(n, 1)
    m *= n
    tot = m * 0.5
    # tot - xtie and tot - ytie, the pairs of each side not tied: tau_b's denominators.
    x_rest = np.subtract(tot, xtie)
    y_rest = np.subtract(tot, ytie, out=tot)
    undefined = (n < 2) | (x_rest == 0) | (y_rest == 0)
    # var = (m (2n + 5) - x1 - y1) / 18 + (2 xtie ytie) / m + x0 y0 / (9 m (n - 2))
    first = 2 * n
    first += 5
    first *= m
    first -= x1
    first -= y1
    second = 2 * xtie
    second *= ytie
    third = 9 * m
    third *= n - 2
    double = np.float64
    with np.errstate(divide="ignore", invalid="ignore"):
        scratch = np.sqrt(x_rest, dtype=double)
        tau = np.divide(con_minus_dis, scratch, dtype=double)
        np.sqrt(y_rest, out=scratch, dtype=double)
        np.clip(np.divide(tau, scratch, out=tau), -1.0, 1.0, out=tau)
        var = np.divide(first, 18.0, dtype=double)
        var += np.divide(second, m, out=scratch, dtype=double)
        np.multiply(x0, y0, out=scratch, dtype=double)  # up to items**6: in double
        scratch /= third
        var += scratch
        np.sqrt(var, out=var)
        pvalue = normal_pvalue(np.divide(con_minus_dis, var, out=var, dtype=double), alternative)
    tau[undefined] = np.nan
    pvalue[undefined] = np.nan
    return tau, pvalue


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
    """Per-row sizes of the groups of equal values, 0-padded (column r: :func:`dense_ranks`' r)."""
    rows, cols = x.shape
    xs = np.sort(x, axis=1)
    new_value = np.ones(xs.shape, dtype=bool)
    new_value[:, 1:] = xs[:, 1:] != xs[:, :-1]
    group = np.cumsum(new_value, axis=1)
    group += (np.arange(rows) * cols - 1)[:, None]  # rank r of row i -> i * cols + r
    return np.bincount(group[~np.isnan(xs)], minlength=rows * cols).reshape(rows, cols)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Per-row average ranks among a row's values, NaN where ``x`` is NaN.

    Equal to ``scipy.stats.rankdata(x, axis=1, nan_policy="omit")``.
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
    # NaN sorts last and equals nothing, so the values' groups ahead of it are whole.
    ranks[np.isnan(x)] = np.nan
    return ranks


def _exact_float32(x: np.ndarray) -> np.ndarray:
    """``x`` in single precision where that is exact (small whole numbers), else as it is."""
    if x.dtype == np.float32 or x.size == 0:
        return x
    single = x.astype(np.float32)
    same = (single == x) | np.isnan(x)
    return single if same.all() else x


def _pair_signs(x: np.ndarray, dtype) -> np.ndarray:
    """sign(x_i - x_j) for every item pair i < j of each row; 0 where either is missing.

    Pairs go by distance j - i, each distance one comparison of two shifted views; only
    dot products of these rows are taken, so any order the same for every row serves.
    """
    x = _exact_float32(x)
    rows, items = x.shape
    signs = np.empty((rows, items * (items - 1) // 2), dtype=np.int8)
    start = 0
    for distance in range(1, items):
        earlier, later = x[:, :-distance], x[:, distance:]
        stop = start + items - distance
        # A comparison with NaN is false both ways: a missing item gives 0.
        np.subtract(
            np.greater(earlier, later).view(np.int8),
            np.less(earlier, later).view(np.int8),
            out=signs[:, start:stop],
        )
        start = stop
    return signs.astype(dtype, copy=False)


def pairwise_tau_b_blocks(
    x: np.ndarray, alternative: str, *, cells: int = _PAIR_CELLS
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield ``(a, b, tau, p, n)`` for pairs a < b of rows of ``x`` sharing an item, in blocks.

    A block holds about ``cells`` pairs: no raters x raters matrix is made. With S_r the
    signs of x_ri - x_rj over item pairs (0 where r lacks one), n_c - n_d = S_a . S_b,
    so a block is one matrix product. The tie terms over the shared items come from the
    power sums P_k = sum_v t_v^k of the tie-group sizes, one product per distinct value:
    sum t(t-1)/2 = (P_2 - n)/2, sum t(t-1)(t-2) = P_3 - 3 P_2 + 2n,
    sum t(t-1)(2t+5) = 2 P_3 + 3 P_2 - 5n.
    """
    raters, items = x.shape
    valid = (~np.isnan(x)).astype(np.float32)
    # Sums of +-1 and 0 over the item pairs, and power sums up to items^3: exact in
    # float32 while they stay below 2**24.
    dtype = np.float32 if max(items * (items - 1) // 2, items**3) < 2**24 else np.float64
    signs = _pair_signs(x, dtype)
    valid = valid.astype(dtype, copy=False)
    ranks = dense_ranks(x)
    by_value = [(ranks == v).astype(dtype) for v in range(int(ranks.max(initial=-1)) + 1)]
    # Over a pair whose other rater gave every item, a rater's tie groups are its own:
    # products only for the raters with gaps.
    own = [
        sum((onehot.sum(axis=1, dtype=np.float64) ** k for onehot in by_value), np.zeros(raters))
        for k in (2, 3)
    ]
    gaps = ~(valid > 0).all(axis=1)
    # The tie terms are whole numbers: computed in single precision while every one of
    # them stays below 2**24 (up to 76 items), only the divisions and roots in double.
    work = np.float32 if _largest_tie_integer(items) < 2**24 else np.float64
    own = [term.astype(work) for term in own]
    rows_per_block = max(1, cells // max(raters, 1))
    for start in range(0, raters, rows_per_block):
        stop = min(start + rows_per_block, raters)
        rows, later = slice(start, stop), slice(start, raters)
        con_minus_dis = signs[rows] @ signs[later].T
        block_cells = (stop - start) * (raters - start)
        with _one_blas_thread(block_cells):
            n = valid[rows] @ valid[later].T
        # x: the row rater's ties over the items the column rater also gave; y: the reverse.
        # The block's whole rectangle is computed (the pairs below its diagonal too): one
        # pass over contiguous arrays costs less than gathering the pairs first.
        x_p2, x_p3, y_p2, y_p3 = (np.empty(n.shape, work) for _ in range(4))
        x_p2[...], x_p3[...] = own[0][rows, None], own[1][rows, None]
        y_p2[...], y_p3[...] = own[0][later], own[1][later]
        column_gaps = np.flatnonzero(gaps[later])
        row_gaps = np.flatnonzero(gaps[rows])
        with _one_blas_thread(block_cells):
            if column_gaps.size:
                x_p2[:, column_gaps], x_p3[:, column_gaps] = _power_sums(
                    by_value, valid, rows, start + column_gaps, columns=True
                )
            if row_gaps.size:
                y_p2[row_gaps], y_p3[row_gaps] = _power_sums(
                    by_value, valid, start + row_gaps, later, columns=False
                )
        tau, p = _block_tau_b(
            con_minus_dis, n.astype(work, copy=False), (x_p2, x_p3), (y_p2, y_p3), alternative
        )
        a, b, flat = _upper_pairs(stop - start, raters - start)
        n = n.ravel()[flat]
        shared = n > 0
        if not shared.all():
            a, b, flat, n = a[shared], b[shared], flat[shared], n[shared]
        yield (
            (a + start).astype(np.int32),
            (b + start).astype(np.int32),
            tau.ravel()[flat],
            p.ravel()[flat],
            n.astype(np.int32),
        )


def _largest_tie_integer(items: int) -> int:
    """A bound on every whole number :func:`_block_tau_b` forms over ``items`` items."""
    square, cube = items**2, items**3
    return max(square**2 // 2, (2 * items + 5) * square + 2 * (3 * square + 2 * cube), 9 * cube)


def _block_tau_b(
    con_minus_dis: np.ndarray, n: np.ndarray, x_sums, y_sums, alternative: str
) -> tuple[np.ndarray, np.ndarray]:
    """tau_b and p-value of a block of rater pairs from their power sums (overwritten)."""
    two_n = 2 * n
    five_n = 5 * n

    def tie_terms(p2, p3):
        # sum t(t-1)/2 = (P_2 - n)/2, sum t(t-1)(t-2) = P_3 - 3 P_2 + 2n and
        # sum t(t-1)(2t+5) = 2 P_3 + 3 P_2 - 5n, with P_k = sum t^k.
        three_p2 = np.multiply(3, p2)
        third = np.multiply(2, p3)
        third += three_p2
        third -= five_n
        second = np.subtract(p3, three_p2, out=three_p2)
        second += two_n
        first = np.subtract(p2, n, out=p2)
        first *= 0.5
        return first, second, third

    return _tau_b(con_minus_dis, n, tie_terms(*x_sums), tie_terms(*y_sums), alternative)


def in_order(
    work: Callable[..., _Result],
    jobs: Iterable[tuple],
    *,
    weight: Callable[[tuple], float],
    threshold: float = 2e6,
) -> Iterator[_Result]:
    """``work(*job)`` for each of ``jobs``, yielded in order, on every core once it pays.

    NumPy and BLAS release the interpreter lock, so the jobs of a crowd-size study run on
    threads, one per core, each with one job ahead (results are large). Below
    ``threshold`` for the first job, on one core or with ``$SBIR_STUDY_THREADS=1``
    (:func:`~sbir_study.foundation.threads.threads`) they run in turn, with the same
    results. While threads run, BLAS gets one thread each, not more threads than cores.
    """
    workers = threads()
    jobs = iter(jobs)
    first = next(jobs, None)
    if first is None:
        return
    if workers < 2 or weight(first) < threshold:
        # Held to one thread (``$SBIR_STUDY_THREADS=1``), a crowd-size study's BLAS
        # products are too.
        one = workers < 2 and weight(first) >= threshold and THREADS_VARIABLE in os.environ
        with _blas_threads().limit(limits=1, user_api="blas") if one else contextlib.nullcontext():
            yield work(*first)
            for job in jobs:
                yield work(*job)
        return
    ahead: collections.deque[Future[_Result]] = collections.deque()
    with _blas_threads().limit(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        try:
            ahead.append(pool.submit(work, *first))
            for job in jobs:
                ahead.append(pool.submit(work, *job))
                if len(ahead) > workers:
                    yield ahead.popleft().result()
            while ahead:
                yield ahead.popleft().result()
        finally:
            for future in ahead:  # the consumer stopped early: start nothing more
                future.cancel()


def _one_blas_thread(cells: int) -> contextlib.AbstractContextManager[object]:
    """One BLAS thread for a block of ``cells`` pairs, whose small products threads do not pay for.

    Small blocks go as they are: finding the BLAS libraries costs more than their products.
    """
    if cells < _THREAD_LIMIT_CELLS:
        return contextlib.nullcontext()
    return _blas_threads().limit(limits=1, user_api="blas")


_THREAD_LIMIT_CELLS = 1 << 17


@functools.cache
def _blas_threads() -> ThreadpoolController:
    from threadpoolctl import ThreadpoolController  # found once: finding the libraries costs

    return ThreadpoolController()


def _upper_pairs(rows: int, columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row, column and flat index of the cells j > i of a rows x columns block, row by row.

    Built from counts, not from ``np.nonzero`` of a block-sized mask, which costs more.
    """
    per_row = np.maximum(columns - 1 - np.arange(rows), 0)
    a = np.repeat(np.arange(rows), per_row)
    first = np.cumsum(per_row) - per_row  # each row's first entry in the output
    b = np.arange(a.size) - np.repeat(first - np.arange(rows) - 1, per_row)
    return a, b, a * columns + b


def _power_sums(by_value, valid, first, second, *, columns: bool):
    """P_2 and P_3 of ``first``'s tie groups over the items ``second`` gave (or the reverse)."""
    p2 = p3 = np.zeros((valid[first].shape[0], valid[second].shape[0]), dtype=valid.dtype)
    for onehot in by_value:
        if columns:
            counts = onehot[first] @ valid[second].T
        else:
            counts = valid[first] @ onehot[second].T
        power = counts * counts
        p2 = p2 + power
        power *= counts
        p3 = p3 + power
    return p2, p3


def pairwise_tau_b(x: np.ndarray, alternative: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pairwise_tau_b_blocks` as symmetric matrices; the diagonal is each row with itself."""
    raters = x.shape[0]
    tau = np.full((raters, raters), np.nan)
    pvalue = np.full((raters, raters), np.nan)
    n_common = np.zeros((raters, raters), dtype=np.int64)
    for a, b, block_tau, block_p, n in pairwise_tau_b_blocks(x, alternative):
        tau[a, b] = tau[b, a] = block_tau
        pvalue[a, b] = pvalue[b, a] = block_p
        n_common[a, b] = n_common[b, a] = n
    # A rater against itself: every item it gave, tau 1 unless all its ratings are tied.
    own = (~np.isnan(x)).sum(axis=1)
    diagonal = np.arange(raters)
    n_common[diagonal, diagonal] = own
    self_tau, self_p = tau_b_from_counts(*_self_counts(x, own), alternative)
    tau[diagonal, diagonal] = self_tau
    pvalue[diagonal, diagonal] = self_p
    return tau, pvalue, n_common


def _self_counts(x: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray, _Ties, _Ties]:
    """Pair counts of each row against itself, for the diagonal of :func:`pairwise_tau_b`."""
    ties = tie_sums(tie_group_sizes(x))
    n = own.astype(np.float64)
    return n * (n - 1.0) / 2.0 - ties[0], n, ties, ties


def paired_rows_tau_b(
    x: np.ndarray, y: np.ndarray, alternative: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tau_b, p-value and shared-item count between row i of ``x`` and row i of ``y``."""
    return paired_rows_tau_b_each(x, [y], alternative)[0]


def paired_rows_tau_b_each(
    x: np.ndarray, ys: Sequence[np.ndarray], alternative: str
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`paired_rows_tau_b` of ``x`` with each of ``ys``, in order.

    Where every ``y`` leaves out the same items (a participant against both consensuses),
    ``x``'s signs and tie terms are computed once; the numbers are those of one call each.
    """
    x_present = ~np.isnan(x)
    masks = [x_present & ~np.isnan(y) for y in ys]
    if any(not np.array_equal(mask, masks[0]) for mask in masks[1:]):
        return [paired_rows_tau_b_each(x, [y], alternative)[0] for y in ys]
    both = masks[0]
    rows, items = x.shape
    x = np.where(both, x, np.nan)
    ys = [np.where(both, y, np.nan) for y in ys]
    n = both.sum(axis=1)

    n_pairs = items * (items - 1) // 2
    con_minus_dis = np.empty((len(ys), rows), dtype=np.float64)
    block = max(1, _BLOCK_BYTES // (max(n_pairs, 1) * 8))
    for start in range(0, rows, block):
        part = slice(start, start + block)
        sx = _pair_signs(x[part], np.int8)
        for k, y in enumerate(ys):
            sy = _pair_signs(y[part], np.int8)
            # Products of signs are -1, 0 or 1 and their sums whole numbers, exact in int8
            # and int64: no conversion to floats for a product of row with row.
            con_minus_dis[k, part] = np.multiply(sx, sy, out=sy).sum(axis=1, dtype=np.int64)

    x_ties = tie_sums(tie_group_sizes(x))
    results = []
    for k, y in enumerate(ys):
        tau, pvalue = tau_b_from_counts(
            con_minus_dis[k], n, x_ties, tie_sums(tie_group_sizes(y)), alternative
        )
        results.append((tau, pvalue, n))
    return results
