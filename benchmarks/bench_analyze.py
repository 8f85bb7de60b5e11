"""Wall time and peak memory of ``sbir-study analyze --no-figures``, as a user runs it.

* paper size: 28 participants x 1,240 pairs + anchoring, a BIDS dataset of 28 files;
  goal under 2 s in all (interpreter start and imports included);
* crowd size: 2,000 participants x 1,240 pairs + anchoring (2.5 million rows), one
  flat table; goal under 60 s and under 4 GiB peak memory. Past
  ``limits.PAIRWISE_FULL_ROWS`` pairs (about 800 raters of the paper's 31 sketches) the
  inter-user table is left to its per-sketch summary (``--pairwise auto``, the default).

Each run is a fresh process; peak memory is the child's maximum resident set size.
Alongside, the import of pandas and scipy.special alone, the floor any Python
analysis of this table pays.

    python benchmarks/bench_analyze.py [--repeat 5] [--skip-crowd]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset


def run(command: list[str]) -> tuple[float, float]:
    """Seconds and peak resident memory (MiB) of one child process."""
    seconds, peak, _ = run_usage(command)
    return seconds, peak


def run_usage(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak resident memory (MiB) and CPU seconds (user + system) of one child.

    CPU time is steadier than wall time on a shared machine; on 2 cores the wall time of a
    quiet machine lies between CPU / 2 (all threaded) and CPU (all single-threaded).
    """
    seconds, peak, user, system = run_split(command)
    return seconds, peak, user + system


def run_split(command: list[str]) -> tuple[float, float, float, float]:
    """Wall seconds, peak MiB, user and system CPU seconds of one child process."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), 1)
        os.execv(command[0], command)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime, usage.ru_stime


def measure(command: list[str], repeat: int) -> dict:
    runs = [run(command) for _ in range(repeat)]
    seconds = [s for s, _ in runs]
    return {
        "best": min(seconds),
        "median": statistics.median(seconds),
        "worst": max(seconds),
        "peak_mib": max(m for _, m in runs),
    }


def row(name: str, result: dict, goal: str) -> str:
    return (
        f"| {name} | {result['best']:.2f} | {result['median']:.2f} | {result['worst']:.2f} | "
        f"{result['peak_mib']:.0f} | {goal} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-crowd", action="store_true")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "sbir_study"]

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        paper = write_simulated_dataset(folder / "paper", StudyDesign(), seed=2011)
        floor = measure([sys.executable, "-c", "import pandas, scipy.special"], args.repeat)
        # The same output each time: --overwrite replaces the previous run's.
        analyze_paper = [*cli, "analyze", str(paper), "--out", str(folder / "out1")]
        paper_result = measure([*analyze_paper, "--no-figures", "--overwrite"], args.repeat)
        lines = [
            "| run | best s | median s | worst s | peak MiB | goal |",
            "|---|---|---|---|---|---|",
            row("python -c 'import pandas, scipy.special' (floor)", floor, "-"),
            row("analyze, paper size (28 x 1,240 + anchors, BIDS)", paper_result, "< 2 s"),
        ]
        if not args.skip_crowd:
            crowd = folder / "crowd.csv"
            start = time.perf_counter()
            write_simulated_dataset(crowd, StudyDesign(participants=2000), seed=7, flat=True)
            print(
                f"(crowd table simulated in {time.perf_counter() - start:.0f} s, "
                f"{crowd.stat().st_size / 2**20:.0f} MiB)"
            )
            crowd_result = measure(
                [*cli, "analyze", str(crowd), "--out", str(folder / "out2"), "--no-figures"], 1
            )
            lines.append(
                row(
                    "analyze, crowd size (2,000 x 1,240 + anchors, flat CSV)",
                    crowd_result,
                    "< 60 s, < 4096 MiB",
                )
            )
        print("\n".join(lines))
        print(
            f"paper size, median run / import floor: "
            f"{paper_result['median'] / floor['median']:.1f}x"
        )


if __name__ == "__main__":
    main()
