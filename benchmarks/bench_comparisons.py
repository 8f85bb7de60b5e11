"""The paired tests of `evaluate`'s comparisons against SciPy called pair by pair, as a user
would call it, in one process, alternated.

For every pair of systems and every measure, `compare_systems` gives Student's paired t-test
and the Wilcoxon signed-rank test of the per-sketch differences. SciPy's functions are what
a user would otherwise call, once per pair:

* `scipy.stats.ttest_rel(d, 0)` and `scipy.stats.wilcoxon(d)` per pair (the reference),
* `analysis.retrieval.comparison._t_tests` and `_wilcoxon_tests` over all the pairs at
  once (SciPy called once per length and branch; the exact permutation branch of the
  Wilcoxon test, ties or zeros among 13 differences or fewer, as one matrix product).

Two designs: 12 sketches whose values take few levels (P@k, NN: ties and zeros, SciPy's
permutation branch, about a second a pair: 6 systems, 15 pairs, x 2 measures), and 31
sketches (the paper's) with values to three decimals (12 systems, 66 pairs, x 20
measures, as `make run`'s evaluate). Every statistic and p-value must be equal to the bit
(checked).

    python benchmarks/bench_comparisons.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from sbir_study.analysis.retrieval.comparison import _t_tests, _wilcoxon_tests


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


def per_pair(rows: list[np.ndarray]) -> list[tuple]:
    found = []
    for d in rows:
        if not np.any(d != 0):
            found.append(None)
            continue
        w = stats.wilcoxon(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t = stats.ttest_rel(d, np.zeros_like(d)) if np.ptp(d) > 0 else None
        found.append(
            (
                (float(w.statistic), float(w.pvalue)),
                None if t is None else (float(t.statistic), float(t.pvalue)),
            )
        )
    return found


def at_once(rows: list[np.ndarray]) -> list[tuple]:
    wilcoxon, t = _wilcoxon_tests(rows), _t_tests(rows)
    return [
        None if not np.any(d != 0) else (w, tt if np.ptp(d) > 0 else None)
        for d, w, tt in zip(rows, wilcoxon, t, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    designs = {
        "12 sketches, P@10 (ties and zeros)": differences(12, 6, 2, 10, 1),
        "31 sketches, values to 3 decimals": differences(31, 12, 20, None, 2),
    }
    print("| design | pairs x measures | implementation | seconds (runs) | median | ratio |")
    print("|---|---|---|---|---|---|")
    for name, rows in designs.items():
        times = {"SciPy per pair": [], "compare_systems, all at once": []}
        results = {}
        for _ in range(args.repeat):  # alternated
            for label, function in (
                ("SciPy per pair", per_pair),
                ("compare_systems, all at once", at_once),
            ):
                started = time.perf_counter()
                results[label] = function(rows)
                times[label].append(time.perf_counter() - started)
        assert results["SciPy per pair"] == results["compare_systems, all at once"], name
        ours = float(np.median(times["compare_systems, all at once"]))
        for label, runs in times.items():
            median = float(np.median(runs))
            print(
                f"| {name} | {len(rows):,} | {label} | "
                f"{', '.join(f'{r:.2f}' for r in runs)} | {median:.2f} | "
                f"{median / ours:.1f}x |"
            )
    print("\nEvery statistic and p-value equal to the bit.")


if __name__ == "__main__":
    main()
