"""The mechanisms replaced by library calls, timed beside the code they replaced, in one run.

Two checkouts, each with its own virtual environment (``--before DIR`` and ``--after
DIR``, each holding ``.venv``), run the same tasks in fresh processes, alternated round by
round so that a busy moment of a shared machine falls on both alike; the figures are
ratios, after / before, of medians:

* **F distribution** (``scipy.special.fdtrc``/``fdtri`` in place of ``_kernels.f_sf`` and
  ``f_ppf``): importing ``analysis.reliability`` and ``analysis.agreement``,
  ``sbir-study analyze --help``, the ICCs of the paper's 31 sketches in process, and
  ``analyze --no-figures`` of a small study (the demo's, ``simulate --seed 2011``; every
  change between the trees counts there), whose tables are compared too.
* **argparse's public API** in ``cli/common.py``: every subcommand's ``--help`` (at 100
  columns) compared text for text, and ``sbir-study --help`` timed.
* **one atomic_write**: the seconds of recording a session (``SessionRecorder``: open,
  ``--trials`` trials, finish) and of ``simulate`` (a BIDS dataset of 300 participants,
  through the output folder policy), with the ``fsync``/``syncfs``/``rename`` calls each
  makes (``strace -f -c``), which is what the durability costs.
* **Jinja2 templates**: the seconds of ``write_report`` for the demo's analysis (figures
  included, embedded in the page) and the import of the report module, with Jinja2's
  share of it (``-X importtime``).

    python benchmarks/bench_replaced.py --before ../before --after . [--repeat 5]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Both checkouts' sbir_study has the same public names for every task below.
IMPORT_STATISTICS = "import sbir_study.analysis.reliability, sbir_study.analysis.agreement"

ICC_CALLS = """
import json, time
import numpy as np
from sbir_study.analysis.reliability import _icc_from_matrix
matrices = [np.random.default_rng(k).integers(1, 8, (40, 28)).astype(float) for k in range(31)]
start = time.perf_counter()
for _ in range(20):
    for y in matrices:
        _icc_from_matrix(y)
print(json.dumps({"seconds": (time.perf_counter() - start) / 20}))
"""

LIST_COMMANDS = """
import argparse, json
from sbir_study.cli import build_parser
def walk(parser, path):
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += walk(sub, path + [name])
    return found
print(json.dumps(walk(build_parser(), [])))
"""

RECORD_SESSION = """
import json, sys, time, tempfile
from pathlib import Path
from sbir_study.study.recorder import SessionRecorder
trials = int(sys.argv[1])
folder = Path(tempfile.mkdtemp(dir=sys.argv[2]))
order = [(k, "main", "s1", f"i{k}") for k in range(1, trials + 1)]
start = time.perf_counter()
recorder = SessionRecorder.open(folder / "bids", "01", task="bench",
    session={"Protocol": {}, "StimulusSetDigest": "", "Seed": 0}, trial_order=order,
    details={"age": "30"})
opened = time.perf_counter()
for k in range(1, trials + 1):
    recorder.append({"participant": "01", "trial": k, "phase": "main", "sketch_id": "s1",
        "image_id": f"i{k}", "rating": k % 7 + 1, "rt": 0.8, "onset": 3.0 * k,
        "onset_monotonic": 100.0 + 3 * k, "stim_duration": 2.0, "blank_duration": 1.0,
        "n_presses": 1, "presses": "3@0.8", "paused_before": 0.0})
appended = time.perf_counter()
recorder.finish("complete")
done = time.perf_counter()
print(json.dumps({"open": opened - start, "append": appended - opened,
    "finish": done - appended, "seconds": done - start}))
"""

WRITE_REPORT = """
import json, sys, time
from pathlib import Path
import sbir_study.analysis.pipeline as pipeline
from sbir_study.analysis import load_ratings
from sbir_study.analysis import AnalysisOptions, analyze_ratings
real = pipeline.write_report
seconds = []
def timed(path, *args, **kwargs):
    for k in range(int(sys.argv[3])):
        start = time.perf_counter()
        result = real(path, *args, **kwargs)
        seconds.append(time.perf_counter() - start)
    return result
pipeline.write_report = timed
analyze_ratings(load_ratings(sys.argv[1]), Path(sys.argv[2]), AnalysisOptions())
size = Path(sys.argv[2], "report.html").stat().st_size
print(json.dumps({"first": seconds[0], "seconds": min(seconds[1:]), "size": size}))
"""

STRACE = ["strace", "-f", "-c", "-o"]
SYSCALLS = "fsync,fdatasync,syncfs,rename,renameat,renameat2"


class Tree:
    """A checkout and its virtual environment."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root.resolve()
        self.python = str(self.root / ".venv" / "bin" / "python")

    def run(self, *arguments: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.python, *arguments],
            capture_output=True,
            text=True,
            check=True,
            cwd=tempfile.gettempdir(),  # not a checkout: its folders would shadow the install
            env={**os.environ, "COLUMNS": "100", **(env or {})},
        )

    def cli(self, *arguments: str) -> subprocess.CompletedProcess:
        return self.run("-m", "sbir_study", *arguments)

    def wall(self, *arguments: str) -> float:
        start = time.perf_counter()
        self.run(*arguments)
        return time.perf_counter() - start

    def child(self, code: str, *arguments: str) -> dict:
        return json.loads(self.run("-c", code, *arguments).stdout.strip().splitlines()[-1])

    def syscalls(self, *arguments: str) -> dict[str, int]:
        """How many of each of :data:`SYSCALLS` the process (and its children) made."""
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
            subprocess.run(
                [*STRACE, log.name, "-e", f"trace={SYSCALLS}", self.python, *arguments],
                capture_output=True,
                check=True,
                cwd=tempfile.gettempdir(),
            )
            counts = {}
            for line in log.read().splitlines():
                fields = line.split()  # % time, seconds, usecs/call, calls, [errors,] syscall
                if len(fields) >= 5 and fields[-1] in SYSCALLS.split(","):
                    counts[fields[-1]] = int(fields[3])
            return counts


def alternated(
    trees: list[Tree], task: Callable[[Tree], float], repeat: int
) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {tree.name: [] for tree in trees}
    for round_ in range(repeat):
        for tree in trees if round_ % 2 == 0 else trees[::-1]:
            seconds[tree.name].append(task(tree))
    return seconds


def row(name: str, seconds: dict[str, list[float]], unit: float = 1.0, digits: int = 3) -> str:
    before, after = (statistics.median(seconds[n]) for n in ("before", "after"))
    return (
        f"| {name} | {before * unit:.{digits}f} | {after * unit:.{digits}f} | "
        f"{after / before:.2f} |"
    )


def header(title: str) -> None:
    print(f"\n### {title}\n")
    print("| task | before median | after median | after / before |")
    print("|---|---|---|---|")


def jinja_import_ms(tree: Tree, module: str) -> tuple[float, float]:
    """The cumulative import milliseconds of ``module`` and of jinja2 inside it."""
    stderr = tree.run("-X", "importtime", "-c", f"import {module}").stderr
    cost = {"module": 0.0, "jinja2": 0.0}
    for line in stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[1].isdigit():
            if parts[2] == module:
                cost["module"] = int(parts[1]) / 1000
            if parts[2] == "jinja2":
                cost["jinja2"] = int(parts[1]) / 1000
    return cost["module"], cost["jinja2"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trials", type=int, default=1282)
    parser.add_argument("--only", default="fdist,help,atomic,report")
    args = parser.parse_args()
    trees = [Tree("before", args.before), Tree("after", args.after)]
    after = trees[1]
    only = set(args.only.split(","))
    scratch = Path(tempfile.mkdtemp(prefix="bench-replaced-"))
    try:
        demo = scratch / "demo"
        after.cli("simulate", "--out", str(demo), "--seed", "2011")
        if "fdist" in only:
            fdist(trees, demo, scratch, args.repeat)
        if "help" in only:
            helps(trees, args.repeat)
        if "atomic" in only:
            atomic(trees, demo, scratch, args.repeat, args.trials)
        if "report" in only:
            report(trees, demo, scratch, args.repeat)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def fdist(trees: list[Tree], demo: Path, scratch: Path, repeat: int) -> None:
    header("F distribution: scipy.special in place of _kernels.f_sf / f_ppf (s)")
    print(
        row(
            "import reliability, agreement",
            alternated(trees, lambda t: t.wall("-c", IMPORT_STATISTICS), repeat),
        )
    )
    print(
        row(
            "sbir-study analyze --help",
            alternated(trees, lambda t: t.wall("-m", "sbir_study", "analyze", "--help"), repeat),
        )
    )
    print(
        row(
            "the ICCs of 31 sketches (40 images x 28 raters), in process",
            alternated(trees, lambda t: t.child(ICC_CALLS)["seconds"], repeat),
        )
    )
    counter = iter(range(10**6))
    print(
        row(
            "sbir-study analyze --no-figures (28 participants)",
            alternated(
                trees,
                lambda t: t.wall(
                    "-m",
                    "sbir_study",
                    "analyze",
                    str(demo),
                    "--out",
                    str(scratch / f"a{t.name}{next(counter)}"),
                    "--no-figures",
                ),
                repeat,
            ),
        )
    )
    # The tables of one analysis by each, compared cell for cell (read back as numbers).
    import pandas as pd

    outs = {}
    for tree in trees:
        outs[tree.name] = scratch / f"compare-{tree.name}"
        tree.cli("analyze", str(demo), "--out", str(outs[tree.name]), "--no-figures")
    different = []
    for table in sorted(p.name for p in outs["before"].glob("*.csv")):
        theirs, ours = (pd.read_csv(outs[n] / table) for n in ("before", "after"))
        try:
            pd.testing.assert_frame_equal(theirs, ours, check_exact=False, rtol=1e-12)
        except AssertionError:
            different.append(table)
    print(
        f"\nTables of the analysis: {len(list(outs['before'].glob('*.csv')))} compared, "
        f"different: {', '.join(different) or 'none'}"
    )


def helps(trees: list[Tree], repeat: int) -> None:
    header("argparse: public API in cli/common.py (s)")
    print(
        row(
            "sbir-study --help",
            alternated(trees, lambda t: t.wall("-m", "sbir_study", "--help"), repeat),
        )
    )
    commands = {t.name: json.loads(t.run("-c", LIST_COMMANDS).stdout) for t in trees}
    paths = [p for p in commands["after"] if p in commands["before"]]
    only = [(n, p) for n in commands for p in commands[n] if p not in paths]
    print(f"\n--help of {len(paths)} (sub)commands compared at COLUMNS=100", end="")
    print(f"; in one tree only: {only}" if only else "")
    same = 0
    for path in paths:
        texts = [t.cli(*path, "--help").stdout for t in trees]
        if texts[0] == texts[1]:
            same += 1
            continue
        name = " ".join(["sbir-study", *path])
        print(f"\n`{name} --help` differs:\n```diff")
        diff = difflib.unified_diff(
            texts[0].splitlines(), texts[1].splitlines(), "before", "after", lineterm="", n=0
        )
        print("\n".join(line for line in diff if not line.startswith("@@")))
        print("```")
    print(f"\nidentical: {same} of {len(paths)}")


def atomic(trees: list[Tree], demo: Path, scratch: Path, repeat: int, trials: int) -> None:
    header("one atomic_write (s)")
    records: dict[str, list[dict]] = {t.name: [] for t in trees}

    def session(tree: Tree) -> float:
        result = tree.child(RECORD_SESSION, str(trials), str(scratch))
        records[tree.name].append(result)
        return result["seconds"]

    sessions = alternated(trees, session, repeat)
    for part in ("open", "finish"):
        print(
            row(
                f"record a session: {part} (sidecar, participants.tsv)",
                {n: [r[part] for r in records[n]] for n in records},
            )
        )
    print(row(f"record a session: open, {trials} trials, finish", sessions))
    counter = iter(range(10**6))
    print(
        row(
            "simulate, 300 participants (BIDS, output policy)",
            alternated(
                trees,
                lambda t: t.wall(
                    "-m",
                    "sbir_study",
                    "simulate",
                    "--participants",
                    "300",
                    "--out",
                    str(scratch / f"s{t.name}{next(counter)}"),
                ),
                repeat,
            ),
        )
    )
    print("\n| task | tree | " + " | ".join(SYSCALLS.split(",")) + " |")
    print("|---|---|" + "---|" * len(SYSCALLS.split(",")))
    for name, arguments in (
        (f"record a session ({trials} trials)", ["-c", RECORD_SESSION, str(trials), str(scratch)]),
        (
            "analyze --no-figures, 28 participants",
            [
                "-m",
                "sbir_study",
                "analyze",
                "{demo}",
                "--no-figures",
                "--out",
                str(scratch / "strace-a-{tree}"),
            ],
        ),
        (
            "simulate, 300 participants",
            [
                "-m",
                "sbir_study",
                "simulate",
                "--participants",
                "300",
                "--out",
                str(scratch / "strace-{tree}"),
            ],
        ),
    ):
        for tree in trees:
            counts = tree.syscalls(
                *(a.replace("{tree}", tree.name).replace("{demo}", str(demo)) for a in arguments)
            )
            cells = " | ".join(str(counts.get(c, 0)) for c in SYSCALLS.split(","))
            print(f"| {name} | {tree.name} | {cells} |")


def report(trees: list[Tree], demo: Path, scratch: Path, repeat: int) -> None:
    header("Jinja2 templates for report.html (s)")
    counter = iter(range(10**6))
    sizes = {}

    firsts: dict[str, list[float]] = {tree.name: [] for tree in trees}

    def write(tree: Tree) -> float:
        out = scratch / f"r{tree.name}{next(counter)}"
        result = tree.child(WRITE_REPORT, str(demo), str(out), "3")
        sizes[tree.name] = result["size"]
        firsts[tree.name].append(result["first"])
        shutil.rmtree(out, ignore_errors=True)
        return result["seconds"]

    again = alternated(trees, write, max(repeat // 2, 2))
    print(row("write_report, demo study, first in its process (Jinja2 loaded, compiled)", firsts))
    print(row("write_report, demo study, again in the same process", again))
    # Jinja2 is not installed beside the code before: its cost, in the tree after, is a start
    # of Python that imports it against one that does not, alternated.
    after = trees[1]
    bare: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(repeat):
        bare["before"].append(after.wall("-c", "pass"))
        bare["after"].append(after.wall("-c", "import jinja2"))
    print(row("python -c 'import jinja2' against python -c 'pass' (after's environment)", bare))
    print(
        row(
            "import sbir_study.analysis.report (s)",
            alternated(trees, lambda t: t.wall("-c", "import sbir_study.analysis.report"), repeat),
        )
    )
    print(f"\nreport.html bytes: before {sizes['before']:,}, after {sizes['after']:,}")
    print("\n| tree | import analysis.report, cumulative ms | of which jinja2 ms |")
    print("|---|---|---|")
    for tree in trees:
        costs = [jinja_import_ms(tree, "sbir_study.analysis.report") for _ in range(repeat)]
        module = statistics.median(c[0] for c in costs)
        jinja = statistics.median(c[1] for c in costs)
        print(f"| {tree.name} | {module:.0f} | {jinja:.0f} |")


if __name__ == "__main__":
    main()
