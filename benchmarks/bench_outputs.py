"""What safety costs: the checked BIDS reader and the output policy, beside the plain way.

* Reading a simulated BIDS dataset of 28 and of 300 participants with
  ``load_ratings`` (every file read by its own header, every participant from its
  file name, every id and value checked) beside what a user would otherwise write:
  ``pandas.concat`` of ``pandas.read_csv`` over the files, with no check at all.
* Writing the paper-size analysis (tables, figures, report) and a simulated
  dataset of 300 participants through the output policy (written aside, flushed,
  hashed into the record, moved into place) beside writing the same files straight
  into a folder.

    python benchmarks/bench_outputs.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from sbir_study.analysis import load_ratings
from sbir_study.analysis.options import AnalysisOptions
from sbir_study.analysis.pipeline import _analyze_into, analyze_ratings
from sbir_study.analysis.simulate import (
    RaterModel,
    StudyDesign,
    _write_simulated,
    write_simulated_dataset,
)
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS
from sbir_study.foundation.scale import PAPER_SCALE


def timed(ours, plain, repeat: int) -> tuple[list[float], list[float]]:
    """Seconds of each run of ``ours`` and ``plain``, alternated so that a busy moment of a
    shared machine falls on both alike."""
    runs: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for call, seconds in ((ours, runs[0]), (plain, runs[1])):
            start = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - start)
    return runs


def plain_read(root: Path) -> pd.DataFrame:
    files = sorted(root.glob("sub-*/beh/*_beh.tsv"))
    return pd.concat([pd.read_csv(f, sep="\t", dtype=str) for f in files], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for participants in (28, 300):
            design = StudyDesign(participants=participants)
            root = write_simulated_dataset(folder / f"d{participants}", design, seed=1)
            runs = timed(
                lambda root=root: load_ratings(root),
                lambda root=root: plain_read(root),
                args.repeat,
            )
            rows.append((f"read BIDS, {participants} participants", *runs))

        ratings = load_ratings(folder / "d28")
        counter = iter(range(10**6))

        def with_policy() -> None:
            analyze_ratings(ratings, folder / f"a{next(counter)}", AnalysisOptions())

        def straight() -> None:
            target = folder / f"b{next(counter)}"
            target.mkdir()
            _analyze_into(
                target,
                ratings,
                AnalysisOptions(),
                figures=DEFAULT_FIGURE_FORMATS,
                pilot=None,
                sketch_images=None,
                exclusions={},
            )

        rows.append(
            ("analyze, paper size, figures and report", *timed(with_policy, straight, args.repeat))
        )
        design = StudyDesign(participants=300)

        def simulate_policy() -> None:
            write_simulated_dataset(folder / f"s{next(counter)}", design, seed=3)

        def simulate_straight() -> None:
            _write_simulated(
                folder / f"t{next(counter)}",
                design,
                RaterModel(),
                3,
                flat=False,
                version="",
                stimuli=None,
                stimulus_digest=None,
                scale=PAPER_SCALE,
            )

        rows.append(
            (
                "simulate, 300 participants (BIDS)",
                *timed(simulate_policy, simulate_straight, args.repeat),
            )
        )

    print("| task | sbir-study best / median s | plain best / median s | ratio of bests |")
    print("|---|---|---|---|")
    for name, ours, plain in rows:
        print(
            f"| {name} | {min(ours):.3f} / {statistics.median(ours):.3f} | "
            f"{min(plain):.3f} / {statistics.median(plain):.3f} | "
            f"{min(ours) / min(plain):.2f}x |"
        )


if __name__ == "__main__":
    main()
