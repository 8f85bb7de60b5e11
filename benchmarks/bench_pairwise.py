"""Inter-user tau_b for every pair of raters: sbir_study.analysis.pairwise_kendall_tau against
the libraries a user would otherwise reach for, in one run.

* a loop of scipy.stats.kendalltau(method="asymptotic") over the pairs (tau and p),
* pandas.DataFrame.corr(method="kendall") (tau only; it loops over scipy too).

Goal (issue: analysis core): 200 raters x 40 items at least 100x faster than the
scipy loop, equal within 1e-12 in tau and p.

With ``--crowd N``, the kernel's threads beside the plain version, alternating, at N
raters: ``pairwise_kendall_tau`` with its products' BLAS held to one thread and without
(``_one_blas_thread``), and the inter-user pairs of four sketches on the threads of
``$SBIR_STUDY_THREADS`` (``in_order``) and on one.

    python benchmarks/bench_pairwise.py [--raters 200] [--items 40] [--repeat 5] [--crowd 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import numpy as np
import pandas as pd
import scipy.stats

from sbir_study.analysis import _kernels, inter_user_tau_pairs, pairwise_kendall_tau


def best_of(function, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def scipy_loop(ratings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    raters = ratings.shape[0]
    tau = np.full((raters, raters), np.nan)
    p = np.full((raters, raters), np.nan)
    for a in range(raters):
        for b in range(a + 1, raters):
            both = ~np.isnan(ratings[a]) & ~np.isnan(ratings[b])
            result = scipy.stats.kendalltau(
                ratings[a, both], ratings[b, both], method="asymptotic", alternative="greater"
            )
            tau[a, b] = tau[b, a] = result.statistic
            p[a, b] = p[b, a] = result.pvalue
    return tau, p


def simulated(raters: int, items: int, seed: int = 2011) -> np.ndarray:
    """Raters around a latent rating per item, 1% of the ratings missed."""
    rng = np.random.default_rng(seed)
    latent = rng.uniform(1, 7, items)
    ratings = np.clip(np.rint(latent + rng.normal(0, 1.3, (raters, items))), 1, 7)
    ratings[rng.random(ratings.shape) < 0.01] = np.nan
    return ratings


def alternating(variants: dict, repeat: int) -> dict[str, tuple[float, float]]:
    """Each variant's median wall and CPU seconds, the variants run in turn ``repeat`` times."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, function in variants.items():
            wall, cpu = time.perf_counter(), time.process_time()
            function()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {
        name: (statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows))
        for name, rows in times.items()
    }


def crowd_rows(raters: int, items: int, repeat: int) -> None:
    """The kernel's thread machinery beside the plain version (see the module's text)."""
    ratings = simulated(raters, items)
    held = _kernels._one_blas_thread

    def blas(limit: bool):
        def run():
            _kernels._one_blas_thread = held if limit else lambda cells: contextlib.nullcontext()
            try:
                pairwise_kendall_tau(ratings)
            finally:
                _kernels._one_blas_thread = held

        return run

    sketches = [simulated(raters, items, seed) for seed in range(4)]
    table = pd.concat(
        [
            pd.DataFrame(
                {
                    "participant": np.repeat([f"{p:05d}" for p in range(raters)], items),
                    "sketch_id": f"s{k}",
                    "image_id": np.tile([f"s{k}i{i}" for i in range(items)], raters),
                    "phase": "main",
                    "rating": values.ravel(),
                }
            )
            for k, values in enumerate(sketches)
        ],
        ignore_index=True,
    )
    threads = os.environ.get(_kernels.THREADS_VARIABLE)

    def pairs(variable: str | None):
        def run():
            if variable is None:
                os.environ.pop(_kernels.THREADS_VARIABLE, None)
            else:
                os.environ[_kernels.THREADS_VARIABLE] = variable
            try:
                for _ in inter_user_tau_pairs(table):
                    pass
            finally:
                if threads is None:
                    os.environ.pop(_kernels.THREADS_VARIABLE, None)
                else:
                    os.environ[_kernels.THREADS_VARIABLE] = threads

        return run

    rows = {
        f"pairwise_kendall_tau, {raters:,} raters: BLAS held to one thread": blas(True),
        f"pairwise_kendall_tau, {raters:,} raters: BLAS as it comes (plain)": blas(False),
        f"inter-user pairs, 4 sketches x {raters:,} raters: on the threads": pairs(threads),
        f"inter-user pairs, 4 sketches x {raters:,} raters: on one (plain)": pairs("1"),
    }
    print("| machinery beside the plain version | wall s (median) | CPU s (median) |")
    print("|---|---|---|")
    for name, (wall, cpu) in alternating(rows, repeat).items():
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=200)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--crowd", type=int, default=0, help="raters of the threads' rows")
    args = parser.parse_args()

    ratings = simulated(args.raters, args.items)
    pairs = args.raters * (args.raters - 1) // 2

    ours_s, ours = best_of(lambda: pairwise_kendall_tau(ratings), args.repeat)
    loop_s, (tau, p) = best_of(lambda: scipy_loop(ratings), 1)
    frame = pd.DataFrame(ratings.T)
    pandas_s, pandas_tau = best_of(lambda: frame.corr(method="kendall").to_numpy(), 1)

    upper = np.triu_indices(args.raters, 1)
    tau_error = np.nanmax(np.abs(ours.statistic[upper] - tau[upper]))
    p_error = np.nanmax(np.abs(ours.pvalue[upper] - p[upper]))
    pandas_error = np.nanmax(np.abs(ours.statistic[upper] - pandas_tau[upper]))

    print(f"pairwise tau_b, {args.raters} raters x {args.items} items ({pairs} pairs, 1% missing)")
    print("| implementation | seconds | ratio to pairwise_kendall_tau | max abs difference |")
    print("|---|---|---|---|")
    print(f"| sbir_study.analysis.pairwise_kendall_tau (tau and p) | {ours_s:.4f} | 1 | - |")
    print(
        f"| loop of scipy.stats.kendalltau (tau and p) | {loop_s:.2f} | "
        f"{loop_s / ours_s:.0f}x slower | tau {tau_error:.1e}, p {p_error:.1e} |"
    )
    print(
        f"| pandas DataFrame.corr(method='kendall') (tau only) | {pandas_s:.2f} | "
        f"{pandas_s / ours_s:.0f}x slower | tau {pandas_error:.1e} |"
    )
    if args.crowd:
        crowd_rows(args.crowd, args.items, 3)


if __name__ == "__main__":
    main()
