"""SIGINT, SIGTERM and SIGKILL at random moments: the old output intact, or the new one complete.

Each command first writes an output; then the same command is run again with
``--overwrite`` and sent a signal at a random moment of its run (drawn over the time a
whole run takes, start-up included). Afterwards the target must be either exactly the
old output (every byte) or a complete new one (its record lists every file present,
each with the right SHA-256, and the same files a finished run writes); no temporary
folder may be left, except after SIGKILL, which no program can clean up after: then the
next run removes it and says so.
"""

from __future__ import annotations

import hashlib
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from sbir_study.foundation.outputs import RECORD, TEMP_PREFIX
from tests.helpers import SBIR_STUDY, run_main

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def _run(args, cwd):
    return subprocess.run(
        [*SBIR_STUDY, *args], capture_output=True, text=True, cwd=cwd, check=False
    )


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _state(paths: list[Path]) -> dict[str, str]:
    state = {}
    for path in paths:
        if path.is_dir():
            state |= {f"{path.name}/{k}": v for k, v in _files(path).items()}
        elif path.exists():
            state[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def _complete(record: Path, base: Path, expected_names: set[str]) -> bool:
    """A record that lists exactly the files present, each with its SHA-256."""
    try:
        listed = json.loads(record.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return False
    present = (
        set(_files(base)) - {RECORD}
        if record.parent == base and record.name == RECORD
        else set(listed)
    )
    if set(listed) != present or set(listed) != expected_names:
        return False
    return all(
        hashlib.sha256((base / name).read_bytes()).hexdigest() == digest
        for name, digest in listed.items()
    )


class Scenario:
    """A command, what it writes, and how to tell its complete output."""

    def __init__(self, name, root: Path, args, target: Path, *, group=None):
        self.name, self.root, self.args, self.target = name, root, args, target
        self.group = group  # for a file group: the files, the record beside the first

    def paths(self) -> list[Path]:
        if self.group is None:
            return [self.target]
        return [*self.group, self.group[0].parent / f".{self.group[0].name}{RECORD}"]

    def complete(self, names: set[str]) -> bool:
        if self.group is None:
            return _complete(self.target / RECORD, self.target, names)
        record = self.group[0].parent / f".{self.group[0].name}{RECORD}"
        return _complete(record, self.group[0].parent, names)

    def names(self) -> set[str]:
        if self.group is None:
            return set(_files(self.target)) - {RECORD}
        return {p.name for p in self.group}

    def leftovers(self) -> list[str]:
        parent = (self.target if self.group is None else self.group[0]).parent
        return [p.name for p in parent.iterdir() if p.name.startswith(TEMP_PREFIX)]


def _lab(folder: Path, images: int) -> None:
    for sketch in ("duck", "boat", "tree"):
        (folder / "sketches").mkdir(parents=True, exist_ok=True)
        Image.new("L", (64, 48), 255).save(folder / "sketches" / f"{sketch}.png")
        (folder / "images" / sketch).mkdir(parents=True, exist_ok=True)
        for k in range(images):
            Image.new("RGB", (64, 48), (k * 9 % 255, 40, 90)).save(
                folder / "images" / sketch / f"{sketch}-{k}.png"
            )


#: The inputs each command reads, made in this process (the commands interrupted are real
#: processes), and the command itself.
_INPUTS = {
    "set": [
        "stimuli",
        "generate",
        "--out",
        "set",
        "--sketches",
        "3",
        "--images",
        "6",
        "--width",
        "96",
        "--height",
        "72",
        "--seed",
        "1",
    ],
    "data": ["simulate", "--stimuli", "set", "--participants", "6", "--out", "data", "--seed", "2"],
    "truth": ["analyze", "data", "--out", "truth", "--no-figures"],
    "runs": ["baseline", "--stimuli", "set", "--distance", "l1,chi2", "--out", "runs"],
}
#: Each command: the inputs it reads, its arguments, what it writes, and for a group of
#: files (not a folder) the files. analyze and evaluate draw their figures as PNG alone:
#: every file of the output is staged and moved into place alike, whatever its format, and
#: the PDF writer is tested with the figures (tests/analysis/test_figures_report.py).
_SCENARIOS = {
    "analyze": (
        ("set", "data"),
        ["analyze", "data", "--out", "analysis", "--figure-formats", "png"],
        "analysis",
        None,
    ),
    "evaluate": (
        ("set", "data", "truth", "runs"),
        [
            "evaluate",
            "--ground-truth",
            "truth/ground_truth.csv",
            "runs/l1.run",
            "runs/chi2.run",
            "--ratings",
            "data",
            "--out",
            "evaluation",
            "--bootstrap",
            "2000",
            "--figure-formats",
            "png",
        ],
        "evaluation",
        None,
    ),
    "simulate": ((), ["simulate", "--participants", "12", "--out", "sim"], "sim", None),
    "simulate --flat": (
        (),
        ["simulate", "--participants", "12", "--flat", "--out", "sim.csv"],
        "sim.csv",
        ["sim.csv", "sim.json"],
    ),
    "stimuli generate": (
        (),
        [
            "stimuli",
            "generate",
            "--out",
            "generated",
            "--sketches",
            "6",
            "--images",
            "10",
            "--width",
            "128",
            "--height",
            "96",
        ],
        "generated",
        None,
    ),
    "stimuli import": (
        ("lab",),
        ["stimuli", "import", "lab", "--anchor-sketches", "0"],
        "lab/manifest.csv",
        ["lab/manifest.csv", "lab/SHA256SUMS"],
    ),
}


def _prepared(name: str, root: Path) -> Scenario:
    """The command ``name`` with its inputs in ``root`` and its first, complete output."""
    inputs, args, target, group = _SCENARIOS[name]
    for made in inputs:
        if made == "lab":
            _lab(root / "lab", images=12)
            continue
        result = run_main(*_INPUTS[made], cwd=root)
        assert result.returncode == 0, result.stderr
    scenario = Scenario(
        name, root, args, root / target, group=None if group is None else [root / g for g in group]
    )
    # How long the interpreter takes, on this machine now, to reach the command line's code
    # (sbir_study's package, which the console script imports first): an interrupt before
    # that is Python's own, with its traceback; from there on it is the command's.
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import sbir_study"], check=True)
    startup = time.monotonic() - started
    started = time.monotonic()
    result = _run(scenario.args, root)
    assert result.returncode == 0, result.stderr
    scenario.duration = time.monotonic() - started
    scenario.earliest = max(0.3, 2 * startup)
    scenario.expected = scenario.names()
    assert scenario.complete(scenario.expected)
    return scenario


#: "any": a moment of the whole run, from just after the interpreter has started (before
#: that, Python itself handles a signal; at least 0.3 s, twice the start on a busy machine)
#: to a little after the run would have finished;
#: "writing": a moment after the temporary output has appeared, while it is being written.
MOMENTS = ("any", "writing")


def _signal_at_a_moment(process, scenario, number, when) -> float:
    # One seed per case: random, and the same on every machine whichever worker runs it.
    draw = random.Random(f"20111 {scenario.name} {signal.Signals(number).name} {when}")
    started = time.monotonic()
    if when == "any":
        moment = draw.uniform(scenario.earliest, max(scenario.duration * 1.2, scenario.earliest))
        time.sleep(moment)
    else:
        while process.poll() is None and not scenario.leftovers():
            time.sleep(0.005)
        left = max(scenario.duration - (time.monotonic() - started), 0.05)
        time.sleep(draw.uniform(0.0, left))
        moment = time.monotonic() - started
    if process.poll() is None:
        process.send_signal(number)
    return moment


def pytest_generate_tests(metafunc):
    """Each class below interrupts one command under every signal, at both moments."""
    if metafunc.cls is not None and hasattr(metafunc.cls, "command"):
        cases = [(number, when) for number in SIGNALS for when in MOMENTS]
        metafunc.parametrize("number, when", cases, ids=[f"{n.name}-{w}" for n, w in cases])


class _Interrupted:
    """The test of one command (``command``): a class per command, so that the commands'
    cases run on several workers, each class building only the inputs its command reads."""

    command: str

    @pytest.fixture(scope="class")
    @classmethod
    def scenario(cls, tmp_path_factory):
        return _prepared(cls.command, tmp_path_factory.mktemp("interrupts"))

    def test_an_interrupted_command_leaves_the_old_output_or_the_new(self, scenario, number, when):
        _interrupt(scenario, number, when)


class TestAnalyze(_Interrupted):
    command = "analyze"


class TestEvaluate(_Interrupted):
    command = "evaluate"


class TestSimulate(_Interrupted):
    command = "simulate"


class TestSimulateFlat(_Interrupted):
    command = "simulate --flat"


class TestStimuliGenerate(_Interrupted):
    command = "stimuli generate"


class TestStimuliImport(_Interrupted):
    command = "stimuli import"


def test_every_command_is_interrupted():
    """The classes above, together, cover each command (each class every signal)."""
    assert sorted(cls.command for cls in _Interrupted.__subclasses__()) == sorted(_SCENARIOS)


def _interrupt(scenario: Scenario, number, when) -> None:
    name = scenario.name
    if name == "stimuli import":  # a new image, so that the new output differs from the old
        extra = scenario.root / "lab" / "images" / "duck" / f"duck-new{number}{when}.png"
        Image.new("RGB", (64, 48), (number, 1, 2)).save(extra)
    old = _state(scenario.paths())
    process = subprocess.Popen(
        [*SBIR_STUDY, *scenario.args, "--overwrite"],
        cwd=scenario.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    moment = _signal_at_a_moment(process, scenario, number, when)
    _, stderr = process.communicate(timeout=120)
    now = _state(scenario.paths())
    new = scenario.complete(scenario.expected)
    context = (
        f"{name}, {signal.Signals(number).name} after {moment:.2f} s: exit {process.returncode}"
    )
    assert now == old or new, context + "\n" + stderr
    if process.returncode == 0:
        assert new, context
    elif number != signal.SIGKILL:
        assert "Traceback" not in stderr, context + "\n" + stderr
        if process.returncode > 0:
            assert process.returncode in (130, 143), context + "\n" + stderr
            assert len(stderr.strip().splitlines()) == 1, stderr
        else:  # after the command had returned, while the interpreter shut down
            assert process.returncode == -number and new, context + "\n" + stderr
    if number == signal.SIGKILL:
        # What a killed run leaves, the next run removes (and says so). That run is not
        # interrupted, so it runs in this process: a fresh interpreter adds nothing to it.
        left = scenario.leftovers()
        again = run_main(*scenario.args, "--overwrite", cwd=scenario.root)
        assert again.returncode == 0, again.stderr
        assert scenario.complete(scenario.expected)
        if left:
            assert "removed the unfinished output" in again.stderr, again.stderr
    assert scenario.leftovers() == [], context


@pytest.mark.parametrize(
    "interrupt, status, name", [(KeyboardInterrupt(), 130, "SIGINT"), (None, 143, "SIGTERM")]
)
def test_an_interrupt_while_an_extension_module_loads_is_an_interrupt(
    retrieval_study, tmp_path, monkeypatch, interrupt, status, name
):
    """pybind11 turns an interrupt during a module's initialisation into that module's
    ``ImportError("initialization failed")``, the interrupt as its cause: seen when SIGINT
    reached ``evaluate`` while SciPy loaded its HiGHS module. It is an interrupt, not an
    internal error."""
    from sbir_study.analysis.retrieval import evaluation_inputs as evaluation
    from sbir_study.cli import Interrupted

    def loads_an_extension(*args, **kwargs):
        try:
            raise interrupt or Interrupted(signal.SIGTERM)
        except BaseException as cause:
            raise ImportError("initialization failed") from cause

    monkeypatch.setattr(evaluation, "evaluate_runs", loads_an_extension)
    root = retrieval_study
    truth, run = root / "analysis" / "ground_truth.csv", root / "runs" / "l1.run"
    result = run_main(
        "evaluate", "--ground-truth", str(truth), str(run), "--out", str(tmp_path / "evaluation")
    )
    assert result.returncode == status, result.stderr
    assert result.stderr == f"sbir-study: interrupted ({name}); nothing half-written was kept\n"
    assert not (tmp_path / "evaluation").exists()


@pytest.mark.parametrize("module", ["signal", "threading", "sbir_study.foundation.provenance"])
def test_an_interrupt_while_the_command_line_loads_is_one_line(module):
    """SIGINT while ``sbir_study.cli`` imports what it needs, before ``main`` handles
    interrupts (the console script's first line), here made to happen at the import of
    ``module``: the standard library's modules too, which a fresh interpreter has not
    loaded yet (SIGINT was seen reaching ``import threading`` on a busy machine)."""
    loading = (
        "import sys\n"
        f"assert {module!r} not in sys.modules, 'loaded before the command line'\n"
        "class Interrupting:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "from sbir_study.cli import main\n"
        "sys.exit(main(['--version']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", loading], capture_output=True, text=True, check=False
    )
    assert result.returncode == 130, result.stderr
    assert result.stderr.splitlines() == [
        "sbir-study: interrupted (SIGINT) while starting; nothing was written"
    ]
