"""How far the inter-user tau_b of sampled raters lies from every pair's, and what it saves.

On a flat ratings table (``sbir-study simulate --flat``), for the first ``--sketches``
sketches: the quantiles and the share significant (p < 0.05) of the inter-user tau_b
over every pair of raters, and over the pairs among ``--cap`` raters drawn at random
(``analyze --pairwise-raters``) for ``--draws`` seeds; their largest differences, and
the CPU time of each.

    python benchmarks/bench_pairwise_sample.py TABLE [--cap 2000] [--sketches 3] [--draws 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sbir_study.analysis import inter_user_tau_pairs, load_ratings

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def described(pairs) -> tuple[np.ndarray, float]:
    tau = pairs.statistic[~np.isnan(pairs.statistic)]
    return np.quantile(tau, QUANTILES), float(np.mean(pairs.pvalue < 0.05))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--cap", type=int, default=2000)
    parser.add_argument("--sketches", type=int, default=3)
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args()
    ratings = load_ratings(args.table)
    ratings = ratings[ratings["phase"] == "main"]
    keep = sorted(ratings["sketch_id"].unique())[: args.sketches]
    ratings = ratings[ratings["sketch_id"].isin(keep)]
    start = time.process_time()
    every = {p.sketch_id: (described(p), p.pvalue.size) for p in inter_user_tau_pairs(ratings)}
    every_cpu = time.process_time() - start
    print(
        "| draw | CPU s (all sketches) | pairs a sketch | largest quantile difference "
        "| largest share-significant difference |"
    )
    print("|---|---|---|---|---|")
    n_every = next(iter(every.values()))[1]
    print(f"| every pair | {every_cpu:.1f} | {n_every:,} | 0 | 0 |")
    for seed in range(args.draws):
        start = time.process_time()
        drawn = inter_user_tau_pairs(ratings, max_raters=args.cap, seed=seed)
        sampled = {p.sketch_id: (described(p), p.pvalue.size) for p in drawn}
        cpu = time.process_time() - start
        quantile = max(np.abs(sampled[k][0][0] - every[k][0][0]).max() for k in every)
        share = max(abs(sampled[k][0][1] - every[k][0][1]) for k in every)
        n = next(iter(sampled.values()))[1]
        print(f"| seed {seed} | {cpu:.1f} | {n:,} | {quantile:.4f} | {share:.4f} |", flush=True)
    medians = {k: round(float(v[0][0][2]), 4) for k, v in every.items()}
    print(f"every pair's median tau_b by sketch: {medians}")


if __name__ == "__main__":
    main()
