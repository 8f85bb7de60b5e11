"""The times the README quotes, as a user sees them: each command run from the command line.

Every run is a fresh ``sbir-study`` process (interpreter start and imports included),
as typed in a terminal:

* ``evaluate`` of one TREC run of 31 sketches over a 101,240-image collection (3.1
  million lines, the file of ``bench_evaluate.py``) against a 31 x 40 ground truth,
  with the default bootstrap and permutations, without and with figures;
* ``stimuli generate`` of the paper's design (31 x 40 + the anchor block);
* the steps of ``make run`` one after the other (simulate, analyze with figures, and the
  retrieval demonstration: generate, simulate, analyze, baseline, evaluate).

The in-process times of the same work are in ``bench_evaluate.py`` and
``bench_analyze.py``; the ratio between the two is the cost of starting the program.

    python benchmarks/bench_cli.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_evaluate import write_benchmark

CLI = [sys.executable, "-m", "sbir_study"]


def seconds(*arguments: str) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, *arguments], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def repeated(repeat: int, *arguments: str) -> list[float]:
    return [seconds(*arguments, "--overwrite") for _ in range(repeat)]


def make_run(folder: Path) -> float:
    """The commands of ``make run``, in order, timed together."""
    demo, retrieval = folder / "demo", folder / "demo" / "retrieval"
    steps = [
        ("simulate", "--out", demo / "data", "--seed", "2011"),
        ("analyze", demo / "data", "--out", demo / "analysis"),
        ("stimuli", "generate", "--out", retrieval / "stimuli", "--seed", "2011"),
        (
            "simulate",
            "--stimuli",
            retrieval / "stimuli",
            "--out",
            retrieval / "data",
            "--seed",
            "2011",
        ),
        ("analyze", retrieval / "data", "--out", retrieval / "analysis", "--no-figures"),
        (
            "baseline",
            "--stimuli",
            retrieval / "stimuli",
            "--distance",
            "all",
            "--out",
            retrieval / "runs",
        ),
    ]
    total = sum(seconds(*map(str, step)) for step in steps)
    runs = sorted(str(p) for p in (retrieval / "runs").glob("*.run"))
    total += seconds(
        "evaluate",
        "--ground-truth",
        str(retrieval / "analysis" / "ground_truth.csv"),
        "--ratings",
        str(retrieval / "data"),
        "--out",
        str(retrieval / "evaluation"),
        *runs,
    )
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        truth = write_benchmark(folder, sketches=31, images=101_240, judged=40)
        truth.to_csv(folder / "ground_truth.csv", index=False)
        common = (
            "evaluate",
            "--ground-truth",
            str(folder / "ground_truth.csv"),
            str(folder / "run.txt"),
        )
        rows.append(
            (
                "evaluate, 3.1M-line run, --no-figures",
                repeated(args.repeat, *common, "--out", str(folder / "ev1"), "--no-figures"),
            )
        )
        rows.append(
            (
                "evaluate, 3.1M-line run, with figures and report",
                repeated(args.repeat, *common, "--out", str(folder / "ev2")),
            )
        )
        rows.append(
            (
                "stimuli generate (31 x 40 and the anchor block)",
                repeated(
                    args.repeat,
                    "stimuli",
                    "generate",
                    "--out",
                    str(folder / "stimuli"),
                    "--seed",
                    "1",
                ),
            )
        )
        rows.append(("make run (its seven commands)", [make_run(folder)]))
    print("| command line | best s | median s | runs |")
    print("|---|---|---|---|")
    for name, runs in rows:
        print(f"| {name} | {min(runs):.2f} | {statistics.median(runs):.2f} | {len(runs)} |")
    plain, drawn = statistics.median(rows[0][1]), statistics.median(rows[1][1])
    print(f"evaluate with figures / without: {drawn / plain:.2f}x")


if __name__ == "__main__":
    main()
