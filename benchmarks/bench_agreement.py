"""Krippendorff's alpha and the Skillings-Mack test at paper and crowd size.

Side by side, in one run: ``sbir_study.analysis.krippendorff_alpha_overall`` and
``agreement_by_sketch`` against the ``krippendorff`` package (PyPI), the library a user
would otherwise call, on the same ratings; the package has no bootstrap, so its
interval is timed as what a user would write: the package called once per resample
on the resampled units' value counts.

* paper size: 28 participants x 31 sketches x 40 images, 1% missed;
* crowd size: 2,000 and 10,000 participants x 1,240 pairs, 1% missed (the ratings
  table as ``analyze`` holds it after loading: 12.4 million rows at 10,000 participants).

    python benchmarks/bench_agreement.py [--skip-10000]
"""

from __future__ import annotations

import argparse

import krippendorff
import numpy as np
import pandas as pd
from bench_pairwise import best_of  # the script's folder is on the path

from sbir_study.analysis.agreement_tables import agreement_by_sketch, krippendorff_alpha_overall

SKETCHES, IMAGES = 31, 40


def ratings_table(participants: int, seed: int) -> pd.DataFrame:
    """A validated-looking ratings table: participants around a latent rating per pair."""
    rng = np.random.default_rng(seed)
    latent = rng.uniform(1, 7, SKETCHES * IMAGES)
    given = np.clip(np.rint(latent + rng.normal(0, 1.3, (participants, latent.size))), 1, 7)
    missed = rng.random(given.shape) < 0.01
    labels = np.array([f"{p:05d}" for p in range(participants)])
    pairs = np.arange(latent.size)
    frame = pd.DataFrame(
        {
            "participant": pd.Categorical(np.repeat(labels, latent.size)),
            "sketch_id": pd.Categorical(
                np.tile([f"s{p // IMAGES:02d}" for p in pairs], participants)
            ),
            "image_id": pd.Categorical(np.tile([f"i{p:04d}" for p in pairs], participants)),
            "phase": pd.Categorical(np.full(given.size, "main")),
            "rating": pd.array(np.where(missed, np.nan, given).ravel(), dtype="Float64").astype(
                "Int64"
            ),
        }
    )
    return frame, np.where(missed, np.nan, given)


def ratio(theirs: float, ours: float) -> str:
    return f"{theirs / ours:.1f}x slower" if theirs >= ours else f"{ours / theirs:.1f}x faster"


def timed(function, repeat: int = 1) -> tuple[float, object]:
    return best_of(function, repeat)


def package_bootstrap(matrix: np.ndarray, resamples: int, seed: int) -> float:
    """The krippendorff package once per resample of the units (value counts resampled)."""
    domain = np.arange(1, 8)
    counts = np.stack([(matrix == v).sum(axis=0) for v in domain], axis=1)
    counts = counts[counts.sum(axis=1) >= 2]
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        drawn = counts[rng.integers(0, len(counts), len(counts))]
        krippendorff.alpha(
            value_counts=drawn, value_domain=list(domain), level_of_measurement="ordinal"
        )
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-10000", action="store_true")
    args = parser.parse_args()
    lines = [
        "| crowd size | computation | seconds | ratio | alpha (ours / package) |",
        "|---|---|---|---|---|",
    ]
    crowd_sizes = [28, 2000] + ([] if args.skip_10000 else [10_000])
    for participants in crowd_sizes:
        table, matrix = ratings_table(participants, seed=participants)
        name = f"{participants:,} x 1,240"
        ours_point, ours = timed(lambda t=table: krippendorff_alpha_overall(t, n_resamples=0), 3)
        theirs_point, theirs = timed(
            lambda m=matrix: krippendorff.alpha(
                m, level_of_measurement="ordinal", value_domain=list(range(1, 8))
            ),
            1,
        )
        lines.append(
            f"| {name} | alpha, all pairs: ours (from the ratings table) | "
            f"{ours_point:.3f} | 1 | {ours.statistic:.12f} |"
        )
        lines.append(
            f"| {name} | alpha, all pairs: krippendorff.alpha(raters x pairs matrix, "
            f"built beforehand) | {theirs_point:.3f} | {ratio(theirs_point, ours_point)} "
            f"| {theirs:.12f} |"
        )
        ours_boot, _ = timed(lambda t=table: krippendorff_alpha_overall(t, n_resamples=1000))
        theirs_boot, _ = timed(lambda m=matrix: package_bootstrap(m, 100, 1))
        theirs_boot *= 10  # 100 calls timed, 1,000 reported
        lines.append(f"| {name} | alpha + 1,000-resample interval: ours | {ours_boot:.3f} | 1 | |")
        lines.append(
            f"| {name} | the same with the package, once per resample (100 timed, "
            f"x10) | {theirs_boot:.2f} | {theirs_boot / ours_boot:.0f}x slower | |"
        )
        if participants <= 2000:
            seconds, _ = timed(lambda t=table: agreement_by_sketch(t))
            permuted = "with" if participants <= 50 else "without"
            lines.append(
                f"| {name} | agreement_by_sketch (W, 2 alphas with 1,000-resample "
                f"intervals, Skillings-Mack {permuted} 1,000 permutations), 31 "
                f"sketches | {seconds:.2f} | | |"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
