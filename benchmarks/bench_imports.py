"""What starting the program costs: whole-process times and what each start imports.

Each command is a fresh process, as typed in a terminal, timed from start to exit
(interpreter start and imports included), alternating between the two trees when a
checkout of an earlier commit is given (``--before DIR``: its folders are put first on
the import path, and its command line is run as its console script ran it; the
libraries are the same):

* ``sbir-study --version``;
* ``sbir-study analyze --help``;
* ``python -c "import sbir_study.study.recorder"`` (what a recording needs) and
  ``python -c "from sbir_study.analysis import load_ratings"``.

For each command it also lists the heaviest imports (``python -X importtime``, the
cumulative microseconds of the top-level packages) and the project's modules loaded.

    python benchmarks/bench_imports.py [--before ../sbir-study-before] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "sbir-study --version": ["-m", "sbir_study", "--version"],
    "sbir-study analyze --help": ["-m", "sbir_study", "analyze", "--help"],
    "import the recorder": ["-c", "import sbir_study.study.recorder"],
    "import load_ratings": ["-c", "from sbir_study.analysis import load_ratings"],
}


def run(arguments: list[str], tree: Path | None, *extra: str) -> subprocess.CompletedProcess:
    """Run ``arguments`` with ``tree``'s Python (this one's when None), outside any checkout
    (whose folders would come before the installed package)."""
    python = sys.executable if tree is None else str(tree / ".venv" / "bin" / "python")
    return subprocess.run(
        [python, *extra, *arguments],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )


def wall(arguments: list[str], tree: Path | None) -> float:
    start = time.perf_counter()
    run(arguments, tree)
    return time.perf_counter() - start


#: Imported by every interpreter start, or the project itself (which contains the rest).
_SETUP = {
    "site",
    "encodings",
    "io",
    "zipimport",
    "_frozen_importlib_external",
    "sbir_study",
    "study",
    "analysis",
    "stimuli",
    "codecs",
    "abc",
    "_io",
    "marshal",
    "posix",
}


def heaviest(arguments: list[str], tree: Path | None, top: int = 6) -> str:
    """The packages that cost most to import, cumulative milliseconds."""
    stderr = run(arguments, tree, "-X", "importtime").stderr
    costs: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split("|"))
        # A package's own line (no dot) counts what importing it imported, wherever it
        # was first imported from.
        if cumulative.isdigit() and "." not in name and name not in _SETUP:
            costs[name] = max(costs.get(name, 0), int(cumulative))
    ranked = sorted(costs.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name} {us / 1000:.0f}" for name, us in ranked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="a checkout of an earlier commit to time beside this one",
    )
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    before = args.before.resolve() if args.before else None
    print("| command | before median s | after median s | after best s | after / before |")
    print("|---|---|---|---|---|")
    details = []
    for name, arguments in COMMANDS.items():
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.repeat):  # alternated, so that a busy moment hits both
            times["after"].append(wall(arguments, None))
            if before is not None:
                times["before"].append(wall(arguments, before))
        after = statistics.median(times["after"])
        if before is not None:
            earlier = statistics.median(times["before"])
            print(
                f"| `{name}` | {earlier:.3f} | {after:.3f} | {min(times['after']):.3f} | "
                f"{after / earlier:.2f} |"
            )
            details.append((name, "before", heaviest(arguments, before)))
        else:
            print(f"| `{name}` | - | {after:.3f} | {min(times['after']):.3f} | - |")
        details.append((name, "after", heaviest(arguments, None)))
    print()
    print("| command | tree | heaviest imports (cumulative ms, -X importtime) |")
    print("|---|---|---|")
    for name, tree, text in details:
        print(f"| `{name}` | {tree} | {text} |")


if __name__ == "__main__":
    main()
