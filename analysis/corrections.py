"""Multiple-testing corrections: every one the toolkit applies, side by side.

* :func:`benjamini_hochberg_count`, how many tests of a family survive a
  false-discovery-rate control at ``alpha`` (``summary.json``'s
  ``n_significant_bh``, by :func:`~sbir_study.analysis.significance.summarize_family`);
* :func:`holm_adjusted`, Holm's step-down adjusted p-values (``evaluate``'s
  comparisons between retrieval systems, by
  :func:`~sbir_study.analysis.retrieval.comparison.compare_systems`).

Both are the corrections of ``statsmodels.stats.multitest.multipletests``
(``method="fdr_bh"`` and ``method="holm"``), written out here and checked against it
(and Holm's against R's ``p.adjust`` and pingouin) by the tests. statsmodels is no
dependency of the package, and NumPy and SciPy have no Holm. SciPy's Benjamini-Hochberg
(``scipy.stats.false_discovery_control``) adjusts every p-value, which takes a sort of
them all: at crowd size (tens of millions of inter-user tests) the count without that
sort is a part of ``analyze`` a user waits for less (``benchmarks/RESULTS.md``).

A NaN p-value is a test that could not be made: it is not one of the family's
tests (it counts in no denominator) and its adjusted p-value is NaN.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["benjamini_hochberg_count", "holm_adjusted"]


def benjamini_hochberg_count(pvalues: ArrayLike, alpha: float = 0.05) -> int:
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
    m = p.size - int(np.count_nonzero(np.isnan(p)))

    # No sort (tens of millions of p-values at crowd size). With N(k) = #{p <= (k / m) alpha}
    # (the threshold as statsmodels' multipletests computes it) the answer is the largest k
    # with N(k) >= k. From k = m, k <- N(k) never rises and never passes below the answer
    # (N is non-decreasing), but it creeps down geometrically; after a few steps a lower
    # bound L (any k with N(k) >= k) is guessed from the step sizes, and only the p-values
    # between the thresholds of L and k are sorted to find the answer between them.
    def count(k: int) -> int:
        return int(np.count_nonzero(p <= (k / m) * alpha))  # NaN: not counted

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


def holm_adjusted(pvalues: ArrayLike) -> np.ndarray:
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
