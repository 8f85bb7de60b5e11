"""Multiple-testing corrections: every one the toolkit applies, side by side.

* :func:`benjamini_hochberg_count`, how many tests of a family survive a
  false-discovery-rate control at ``alpha`` (``summary.json``'s
  ``n_significant_bh``, by :func:`~sbir_study.analysis.significance.summarize_family`);
* :func:`holm_adjusted`, Holm's step-down adjusted p-values (``evaluate``'s
  comparisons between retrieval systems, by
  :func:`~sbir_study.analysis.retrieval.comparison.compare_systems`).

Both are the corrections of ``statsmodels.stats.multitest.multipletests``
(``method="fdr_bh"`` and ``method="holm"``), written out here and checked against
it (and Holm's against R's ``p.adjust`` and pingouin) by the tests:

* the Benjamini-Hochberg count because importing statsmodels takes about two
  seconds, as long as a whole paper-size analysis is allowed, and because at
  crowd size (62 million inter-user tests) statsmodels keeps several full-size
  copies of the p-values where this counts without sorting them;
* Holm's because ``multipletests(method="holm")`` runs a full garbage collection
  (``gc.collect()``) on every call: 0.1 to 0.2 s in a process holding a study,
  twice per measure in ``evaluate``'s comparisons. Its formula is three lines of
  NumPy, term for term the same, so the adjusted p-values are the same to the last
  bit.

A NaN p-value is a test that could not be made: it is not one of the family's
tests (it counts in no denominator) and its adjusted p-value is NaN.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sbir_study.foundation.threads import threads

__all__ = ["benjamini_hochberg_count", "holm_adjusted"]


def benjamini_hochberg_count(pvalues, alpha: float = 0.05) -> int:
    """Number of hypotheses rejected by the Benjamini-Hochberg step-up procedure.

    The largest k with p_(k) <= k alpha / m, where p_(1) <= ... <= p_(m)
    are the sorted p-values of the m tests (NaN p-values are left out).

    References
    ----------
    Y. Benjamini and Y. Hochberg (1995), "Controlling the false discovery rate",
    Journal of the Royal Statistical Society B 57(1).

    Examples
    --------
    >>> benjamini_hochberg_count([0.01, 0.02, 0.03, 0.04, 0.2], alpha=0.05)
    4
    >>> from statsmodels.stats.multitest import multipletests
    >>> int(multipletests([0.01, 0.02, 0.03, 0.04, 0.2], alpha=0.05, method="fdr_bh")[0].sum())
    4
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    m = p.size - count_true(p, np.isnan)

    # No sort (tens of millions of p-values at crowd size). With N(k) = #{p <= (k / m) alpha}
    # (the threshold as statsmodels' multipletests computes it) the answer is the largest k
    # with N(k) >= k. From k = m, k <- N(k) never rises and never passes below the answer
    # (N is non-decreasing), but it creeps down geometrically; after a few steps a lower
    # bound L (any k with N(k) >= k) is guessed from the step sizes, and only the p-values
    # between the thresholds of L and k are sorted to find the answer between them.
    def count(k: int) -> int:
        threshold = (k / m) * alpha
        return count_true(p, lambda part, out: np.less_equal(part, threshold, out=out))  # NaN: no

    if m == 0:
        return 0
    high, step, ratio = m, m, 1.0
    for _ in range(_BH_STEPS):
        below = count(high)
        if below in (high, 0):
            return below
        ratio = min((high - below) / step, 0.9)
        high, step = below, high - below
    # What is left of a geometric descent, twice over; widened until it is a lower bound.
    gap = max(int(2 * step * ratio / (1.0 - ratio)), 1)
    while True:
        low = max(high - gap, 0)
        base = count(low)
        if base >= low:
            break
        gap *= 4
    window = np.sort(p[(p > (low / m) * alpha) & (p <= (high / m) * alpha)])
    candidates = np.arange(low, high + 1)
    reached = base + np.searchsorted(window, candidates / m * alpha, side="right")
    return int(candidates[reached >= candidates].max())


#: Counting passes of :func:`benjamini_hochberg_count` before it bounds the answer from below.
_BH_STEPS = 6

#: Values a block of :func:`count_true`: a block's booleans stay in the cache (a pass over 62
#: million p-values took 63 ms with one array of booleans, 49 ms in blocks and 33 ms in
#: blocks on two threads).
_COUNT_BLOCK = 1 << 20
#: From this many values :func:`count_true` splits its pass over the threads.
_COUNT_THREADED = 1 << 23


def count_true(
    x: np.ndarray, test, *, block: int | None = None, threaded_from: int | None = None
) -> int:
    """``np.count_nonzero(test(x))`` for a one-dimensional ``x``, in blocks.

    ``test(part, out=booleans)`` writes the test of a block of ``x`` into ``out`` (a ufunc
    such as ``np.isnan``, or a function of two arguments). Blocks of ``block`` values
    (:data:`_COUNT_BLOCK`); from ``threaded_from`` values (:data:`_COUNT_THREADED`) the
    blocks are split between the threads (:func:`~sbir_study.foundation.threads.threads`;
    NumPy releases the interpreter lock over a block). A count is a whole number: the same
    in any order.

    Examples
    --------
    >>> count_true(np.array([0.2, np.nan, 0.01]), np.isnan)
    1
    """
    x = np.ravel(x)
    block = block or _COUNT_BLOCK
    threaded_from = _COUNT_THREADED if threaded_from is None else threaded_from

    def count(start: int, stop: int) -> int:
        booleans = np.empty(min(block, stop - start), dtype=bool)
        total = 0
        for begin in range(start, stop, block):
            part = x[begin : min(begin + block, stop)]
            out = booleans[: part.size]
            test(part, out=out)
            total += int(np.count_nonzero(out))
        return total

    workers = min(threads(), max(x.size // block, 1))
    if x.size < threaded_from or workers < 2:
        return count(0, x.size)
    bounds = np.linspace(0, x.size, workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        parts = [pool.submit(count, int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        return sum(part.result() for part in parts)


def holm_adjusted(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values of a family of tests; NaN where a test is undefined.

    A test is rejected at family-wise error rate ``alpha`` when its adjusted
    p-value is below ``alpha``. The family is the defined (non-NaN) p-values.

    Notes
    -----
    With p_(1) <= ... <= p_(m) the sorted p-values of the m tests, the adjusted
    p_(i) is min(1, max_{j <= i} (m - j + 1) p_(j)): the steps of
    ``statsmodels.stats.multitest.multipletests(method="holm")``, in its order
    (tied p-values get one adjusted value whatever their order).

    References
    ----------
    S. Holm (1979), "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6(2).

    Examples
    --------
    >>> holm_adjusted([0.50, 0.003, 0.32, float("nan"), 0.054, 0.0003]).round(4).tolist()
    [0.64, 0.012, 0.64, nan, 0.162, 0.0015]
    >>> import pingouin  # which leaves NaN out of the family as well
    >>> pvalues = [0.50, 0.003, 0.32, float("nan"), 0.054, 0.0003]
    >>> pingouin.multicomp(pvalues, method="holm")[1].round(4).tolist()
    [0.64, 0.012, 0.64, nan, 0.162, 0.0015]
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    adjusted = np.full(p.shape, np.nan)
    defined = ~np.isnan(p)
    family = p[defined]
    if family.size:
        order = np.argsort(family)
        steps = family[order] * np.arange(family.size, 0, -1)
        stepped = np.empty_like(family)
        stepped[order] = np.minimum(np.maximum.accumulate(steps), 1.0)
        adjusted[defined] = stepped
    return adjusted
