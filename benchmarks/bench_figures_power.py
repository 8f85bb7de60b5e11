"""Wall time of ``analyze`` with figures and report, and of ``power``, as a user runs them.

* ``sbir-study analyze`` at the paper's size (28 participants x 1,240 pairs + anchoring,
  BIDS) with Figs. 4-8 and report.html: goal under 15 s in all; beside it the same
  run with ``--no-figures``, so the cost of drawing shows as a ratio;
* ``sbir-study power`` with 6 participant counts x 100 replications, ``--jobs 2``:
  goal under 2 minutes; beside it ``--jobs 1``.

Each run is a fresh process, interpreter start and imports included.

    python benchmarks/bench_figures_power.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "sbir_study"]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        data = write_simulated_dataset(folder / "paper", StudyDesign(), seed=2011)
        rows = []
        for name, extra in (
            ("analyze, tables only (--no-figures)", ["--no-figures"]),
            ("analyze with figures and report", []),
        ):
            runs = [
                seconds(
                    [
                        *cli,
                        "analyze",
                        str(data),
                        "--out",
                        str(folder / "out"),
                        *extra,
                        "--overwrite",
                    ]
                )
                for _ in range(args.repeat)
            ]
            rows.append((name, runs))
        for jobs in (1, 2):
            run = seconds(
                [
                    *cli,
                    "power",
                    "--out",
                    str(folder / f"power{jobs}"),
                    "--replications",
                    "100",
                    "--jobs",
                    str(jobs),
                ]
            )
            rows.append((f"power, 6 counts x 100 replications, --jobs {jobs}", [run]))
    print("| run | best s | median s | worst s | goal |")
    print("|---|---|---|---|---|")
    goals = {1: "< 15 s", 3: "< 120 s"}
    for index, (name, runs) in enumerate(rows):
        print(
            f"| {name} | {min(runs):.2f} | {statistics.median(runs):.2f} | {max(runs):.2f} "
            f"| {goals.get(index, '-')} |"
        )
    tables, figures = statistics.median(rows[0][1]), statistics.median(rows[1][1])
    print(
        f"figures and report / tables only: {figures / tables:.1f}x; "
        f"power --jobs 1 / --jobs 2: {rows[2][1][0] / rows[3][1][0]:.2f}x"
    )


if __name__ == "__main__":
    main()
