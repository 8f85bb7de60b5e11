"""How many tests of a family are significant, with an interval and a multiple-testing count.

The paper reports each family's share significant at alpha = 0.05 (77.4% anchoring,
86% inter-user, 99% against the benchmark). Here the share gets a Wilson interval
and the Benjamini-Hochberg count of :mod:`~sbir_study.analysis.corrections`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .corrections import benjamini_hochberg_count

__all__ = ["FamilySummary", "summarize_family", "wilson_interval"]


@dataclass(frozen=True)
class FamilySummary:
    """Significance of one family of tests."""

    n_tests: int
    n_significant: int
    share_significant: float
    wilson_low: float
    wilson_high: float
    n_significant_bh: int
    n_undefined: int

    def to_dict(self) -> dict:
        return asdict(self)


def wilson_interval(count: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``count / n``; NaN for n <= 0.

    With p = count / n and z the two-sided normal quantile: centre = (p + z^2 / 2n) /
    (1 + z^2 / n), half-width = z sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n),
    clipped to [0, 1], in the terms and order of statsmodels'
    ``proportion_confint(method="wilson")`` (no dependency of the package), so they agree
    to the last bit. Wilson (1927), JASA 22(158).

    Examples
    --------
    >>> [round(v, 6) for v in wilson_interval(86, 100)]
    [0.778628, 0.914737]
    >>> from scipy.stats import binomtest
    >>> interval = binomtest(86, 100).proportion_ci(confidence_level=0.95, method="wilson")
    >>> [round(float(v), 6) for v in interval]
    [0.778628, 0.914737]
    """
    if n <= 0:
        return float("nan"), float("nan")
    count_a = np.asarray(count, dtype=np.float64)
    nobs_a = np.asarray(n, dtype=np.float64)
    q_ = count_a / nobs_a
    crit = -special.ndtri(np.float64((1.0 - confidence) / 2.0))
    crit2 = crit**2
    denom = 1 + crit2 / nobs_a
    center = (q_ + crit2 / (2 * nobs_a)) / denom
    dist = crit * np.sqrt(q_ * (1.0 - q_) / nobs_a + crit2 / (4.0 * nobs_a**2))
    dist /= denom
    return float(np.clip(center - dist, 0, 1)), float(np.clip(center + dist, 0, 1))


def summarize_family(pvalues: ArrayLike, alpha: float = 0.05) -> FamilySummary:
    """Share of a family of tests significant at ``alpha``, with its Wilson 95% interval.

    NaN p-values (undefined tests) are no tests; ``n_undefined`` counts them.

    Examples
    --------
    >>> family = summarize_family([0.001, 0.01, 0.2, float("nan")], alpha=0.05)
    >>> family.n_tests, family.n_significant, family.n_significant_bh, family.n_undefined
    (3, 2, 2, 1)
    >>> round(family.wilson_low, 4), round(family.wilson_high, 4)
    (0.2077, 0.9385)
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    n_tests = p.size - int(np.count_nonzero(np.isnan(p)))
    n_significant = int(np.count_nonzero(p < alpha))  # NaN compares False
    low, high = wilson_interval(n_significant, n_tests)
    return FamilySummary(
        n_tests=n_tests,
        n_significant=n_significant,
        share_significant=n_significant / n_tests if n_tests else float("nan"),
        wilson_low=low,
        wilson_high=high,
        n_significant_bh=benjamini_hochberg_count(p, alpha),
        n_undefined=int(p.size - n_tests),
    )
