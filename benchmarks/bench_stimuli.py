"""Wall time of ``stimuli generate`` and ``stimuli validate`` on the paper-sized set.

* ``sbir-study stimuli generate`` with the defaults (31 sketches x 40 images and
  3 x 7 anchors, 320 x 240): goal under 30 s;
* ``sbir-study stimuli validate`` on that set, opening every image and with
  ``--no-open``, beside ``sha256sum -c SHA256SUMS`` (GNU coreutils), which is
  what a user would otherwise run to check a set.

Each run is a fresh process, interpreter start and imports included.

    python benchmarks/bench_stimuli.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def seconds(command: list[str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "sbir_study", "stimuli"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        runs = []
        for k in range(args.repeat):
            target = folder / f"set{k}"
            runs.append(seconds([*cli, "generate", "--out", str(target), "--seed", "2011"]))
            if k:
                shutil.rmtree(target)
        rows.append(("generate, paper design (1,261 pairs)", runs))
        the_set = folder / "set0"
        for name, command, cwd in (
            (
                "sha256sum -c SHA256SUMS (coreutils)",
                ["sha256sum", "-c", "--quiet", "SHA256SUMS"],
                the_set,
            ),
            ("validate --no-open", [*cli, "validate", "--no-open", str(the_set)], None),
            ("validate (opens every image)", [*cli, "validate", str(the_set)], None),
        ):
            rows.append((name, [seconds(command, cwd) for _ in range(args.repeat)]))
    print("| run | best s | median s | worst s |")
    print("|---|---|---|---|")
    for name, runs in rows:
        print(f"| {name} | {min(runs):.2f} | {statistics.median(runs):.2f} | {max(runs):.2f} |")
    base = statistics.median(rows[1][1])
    print(
        f"validate --no-open / sha256sum: {statistics.median(rows[2][1]) / base:.1f}x; "
        f"validate / sha256sum: {statistics.median(rows[3][1]) / base:.1f}x"
    )


if __name__ == "__main__":
    main()
