"""The Makefile's demonstration targets leave each other's outputs alone.

`make run` once began with ``rm -rf build/demo``, which deleted what `make session` and
`make serve-demo` had recorded there. The recipes are read as make itself expands them
(``make -n``, with ``DEMO`` set to a temporary folder and the install stamp taken as
made), and their ``rm`` lines are run on a folder holding every target's outputs.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT

#: The folders each demonstration target writes under DEMO (the Makefile's comments).
WRITES = {
    "run": ("data", "analysis", "retrieval"),
    "session": ("session-stimuli", "session", "session-analysis"),
    "serve-demo": ("online-stimuli", "online"),
}


def dry_run(target: str, demo: Path) -> list[str]:
    """The recipe's commands as ``make -n`` prints them, continued lines joined."""
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-n",
            "-o",
            ".venv/.installed-stamp",
            target,
            f"DEMO={demo}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.replace("\\\n", " ").splitlines()


def outputs(tmp_path: Path) -> Path:
    demo = tmp_path / "demo"
    for folders in WRITES.values():
        for folder in folders:
            (demo / folder).mkdir(parents=True)
            (demo / folder / "kept.txt").write_text("recorded\n", encoding="utf-8")
    return demo


@pytest.mark.parametrize("target", ["run", "session"])
def test_a_target_removes_only_its_own_folders(target, tmp_path):
    demo = outputs(tmp_path)
    removals = [line for line in dry_run(target, demo) if line.startswith("rm ")]
    assert removals, f"make {target}: no rm line (the test would not see what it deletes)"
    for line in removals:
        subprocess.run(line, shell=True, executable="/bin/sh", check=True)
    left = sorted(path.name for path in demo.iterdir())
    others = sorted(f for name, folders in WRITES.items() if name != target for f in folders)
    assert left == others


def test_make_run_writes_only_into_the_folders_it_removes(tmp_path):
    # Every --out of make run lies in a folder it removes first: a second make run starts clean.
    demo = tmp_path / "demo"
    commands = [shlex.split(line) for line in dry_run("run", demo) if "sbir-study" in line]
    targets = [Path(words[words.index("--out") + 1]) for words in commands if "--out" in words]
    assert len(targets) == 7  # the seven commands of make run
    for target in targets:
        assert target.relative_to(demo).parts[0] in WRITES["run"], target
