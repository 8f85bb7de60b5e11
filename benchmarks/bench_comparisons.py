"""The paired tests of `evaluate`'s comparisons against SciPy called pair by pair, as a user
would call it, in one process, alternated.

For every pair of systems and every measure, `compare_systems` gives Student's paired t-test
and the Wilcoxon signed-rank test of the per-sketch differences. SciPy's functions are what
a user would otherwise call, once per pair:

* `scipy.stats.ttest_rel(d, 0)` and `scipy.stats.wilcoxon(d)` per pair (the reference),
* `analysis.retrieval.comparison._t_tests` and `_wilcoxon_tests` over all the pairs at
  once (SciPy called once per length and branch; the exact permutation branch of the
  Wilcoxon test, ties or zeros among 13 differences or fewer, as one matrix product),
  each test timed on its own.

Two designs: 12 sketches whose values take few levels (P@k, NN: ties and zeros, SciPy's
permutation branch: 6 systems, 15 pairs, x 2 measures), and 31 sketches (the paper's)
with values to three decimals (12 systems, 66 pairs, x 20 measures, as `make run`'s
evaluate). Every statistic and p-value must be equal to the bit (checked).

On the second design, also the interval of each pair's mean difference and the
permutation test:

* `scipy.stats.bootstrap(d, np.mean, method="percentile")` per pair against
  `paired_differences_interval` over all the pairs at once (the same draws, each resample's
  mean a product of counts; equal to a relative 1e-12, checked);
* `scipy.stats.permutation_test` per pair against `compare_systems`' one matrix of sign
  flips for every pair (other random flips: the p-values agree within Monte Carlo error,
  the largest difference shown).

    python benchmarks/bench_comparisons.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from sbir_study.analysis.retrieval.comparison import (
    _permutation_pvalue,
    _sign_patterns,
    _t_tests,
    _wilcoxon_tests,
    paired_differences_interval,
)


def differences(
    sketches: int, systems: int, measures: int, levels: int | None, seed: int
) -> list[np.ndarray]:
    """The per-sketch differences of every pair of the systems on each measure."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(measures):
        quality = rng.normal(0.6, 0.1, (systems, 1)) + rng.normal(0, 0.15, (systems, sketches))
        if levels is not None:  # P@k with k = levels: multiples of 1/levels
            quality = np.round(np.clip(quality, 0, 1) * levels) / levels
        else:
            quality = np.round(quality, 3)  # some ties
        for a in range(systems):
            for b in range(a + 1, systems):
                rows.append(quality[a] - quality[b])
    return rows


def t_per_pair(rows: list[np.ndarray]) -> list[tuple | None]:
    found: list[tuple | None] = []
    for d in rows:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t = stats.ttest_rel(d, np.zeros_like(d)) if np.ptp(d) > 0 else None
        found.append(None if t is None else (float(t.statistic), float(t.pvalue)))
    return found


def t_at_once(rows: list[np.ndarray]) -> list[tuple | None]:
    return [t if np.ptp(d) > 0 else None for d, t in zip(rows, _t_tests(rows), strict=True)]


def wilcoxon_per_pair(rows: list[np.ndarray]) -> list[tuple | None]:
    found: list[tuple | None] = []
    for d in rows:
        w = stats.wilcoxon(d) if np.any(d != 0) else None
        found.append(None if w is None else (float(w.statistic), float(w.pvalue)))
    return found


def wilcoxon_at_once(rows: list[np.ndarray]) -> list[tuple | None]:
    tests = _wilcoxon_tests(rows)
    return [w if np.any(d != 0) else None for d, w in zip(rows, tests, strict=True)]


def intervals_per_pair(rows: list[np.ndarray], n_resamples: int, seed: int) -> np.ndarray:
    found = []
    for d in rows:
        interval = stats.bootstrap(
            (d,),
            np.mean,
            method="percentile",
            n_resamples=n_resamples,
            vectorized=True,
            rng=np.random.default_rng(seed),
        ).confidence_interval
        found.append((interval.low, interval.high))
    return np.array(found)


def intervals_at_once(rows: list[np.ndarray], n_resamples: int, seed: int) -> np.ndarray:
    low, high = paired_differences_interval(np.vstack(rows), n_resamples=n_resamples, seed=seed)
    return np.column_stack([low, high])


def permutation_per_pair(rows: list[np.ndarray], n_resamples: int, seed: int) -> np.ndarray:
    return np.array(
        [
            stats.permutation_test(
                (d,),
                np.mean,
                permutation_type="samples",
                n_resamples=n_resamples,
                vectorized=True,
                rng=np.random.default_rng(seed),
            ).pvalue
            for d in rows
        ]
    )


def permutation_at_once(rows: list[np.ndarray], n_resamples: int, seed: int) -> np.ndarray:
    patterns, exact = _sign_patterns(rows[0].size, n_resamples, seed)
    return np.array([_permutation_pvalue(d.mean(), patterns @ d / d.size, exact) for d in rows])


def resampled(rows: list[np.ndarray], repeat: int) -> None:
    """The bootstrap intervals and permutation p-values of every pair, per pair and at once."""
    # Rows without spread have no interval to resample (compare_systems gives their mean).
    rows = [d for d in rows if np.ptp(d) > 0]
    print()
    print("| 31 sketches, 1,320 pairs x measures | implementation | seconds (runs) | median |")
    print("|---|---|---|---|")
    for name, per_pair, at_once in (
        ("bootstrap interval (10,000)", intervals_per_pair, intervals_at_once),
        ("permutation test (10,000)", permutation_per_pair, permutation_at_once),
    ):
        times: dict[str, list[float]] = {"SciPy per pair": [], "all at once": []}
        results = {}
        for _ in range(repeat):
            for label, function in (("SciPy per pair", per_pair), ("all at once", at_once)):
                started = time.perf_counter()
                results[label] = function(rows, 10_000, 0)
                times[label].append(time.perf_counter() - started)
        for label, runs in times.items():
            print(
                f"| {name} | {label} | {', '.join(f'{r:.2f}' for r in runs)} | "
                f"{float(np.median(runs)):.2f} |"
            )
        ours, theirs = results["all at once"], results["SciPy per pair"]
        if at_once is intervals_at_once:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
            print("| | intervals equal to a relative 1e-12 | | |")
        else:
            print(f"| | largest difference of the p-values {np.abs(ours - theirs).max():.4f} | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    designs = {
        "12 sketches, P@10 (ties and zeros)": differences(12, 6, 2, 10, 1),
        "31 sketches, values to 3 decimals": differences(31, 12, 20, None, 2),
    }
    print("| design | pairs x measures | test | implementation | seconds (runs) | median | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in designs.items():
        for test, per_pair, at_once in (
            ("t", t_per_pair, t_at_once),
            ("Wilcoxon", wilcoxon_per_pair, wilcoxon_at_once),
        ):
            times: dict[str, list[float]] = {"SciPy per pair": [], "all at once": []}
            results = {}
            for _ in range(args.repeat):  # alternated
                for label, function in (("SciPy per pair", per_pair), ("all at once", at_once)):
                    started = time.perf_counter()
                    results[label] = function(rows)
                    times[label].append(time.perf_counter() - started)
            assert results["SciPy per pair"] == results["all at once"], (name, test)
            ours = float(np.median(times["all at once"]))
            for label, runs in times.items():
                median = float(np.median(runs))
                print(
                    f"| {name} | {len(rows):,} | {test} | {label} | "
                    f"{', '.join(f'{r:.2f}' for r in runs)} | {median:.2f} | "
                    f"{median / ours:.1f}x |"
                )
    print("\nEvery statistic and p-value equal to the bit.")
    resampled(designs["31 sketches, values to 3 decimals"], args.repeat)


if __name__ == "__main__":
    main()
