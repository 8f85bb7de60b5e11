"""Multiple-testing corrections: every one the toolkit applies.

:func:`benjamini_hochberg_count` counts the tests surviving FDR control
(``summary.json``'s ``n_significant_bh``); :func:`holm_adjusted` gives Holm's adjusted
p-values (``evaluate``'s system comparisons). Both are
``statsmodels.stats.multitest.multipletests`` (``"fdr_bh"``, ``"holm"``), checked
against it, R's ``p.adjust`` and pingouin in the tests: statsmodels is no dependency,
NumPy and SciPy have no Holm, and ``scipy.stats.false_discovery_control`` sorts every
p-value where a count needs none. A NaN p-value is a test not made: in no
denominator, its adjusted p-value NaN.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["benjamini_hochberg_count", "holm_adjusted"]


def benjamini_hochberg_count(pvalues: ArrayLike, alpha: float = 0.05) -> int:
    """Number of hypotheses the Benjamini-Hochberg step-up procedure rejects.

    The largest k with p_(k) <= k alpha / m over the m sorted non-NaN p-values.
    Benjamini and Hochberg (1995), J. R. Stat. Soc. B 57(1).

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
    """Holm's step-down adjusted p-values over the defined (non-NaN) p-values; NaN elsewhere.

    Adjusted p_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)), in the steps of
    ``multipletests(method="holm")`` (tied p-values get one value). Holm (1979), Scand.
    J. Stat. 6(2).

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
