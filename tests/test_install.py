"""The installs a user can choose, as pyproject.toml declares them.

The core install (``pip install sbir-study``, no extras) is built into a fresh virtual
environment at the locked versions, from the wheel pip builds of the repository, and runs
the analysis and scoring commands; the commands that need an extra say which install
brings it; the wheel holds ``sbir_study`` alone at its top. The constraints files are
checked against pyproject.toml: the lowest versions CI tests are the declared lower
bounds, and the lock lies inside the declared ranges.
"""

import filecmp
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sbir_study.cli import main
from tests.helpers import ROOT, not_source

LOCK = ROOT / "constraints" / "lock.txt"
LOWEST = ROOT / "constraints" / "lowest.txt"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a constraints file, by canonical name."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_lowest_versions_are_the_declared_lower_bounds():
    """constraints/lowest.txt pins every core dependency to its ``>=`` bound, and only those."""
    declared = {}
    for text in _project()["dependencies"]:
        requirement = Requirement(text)
        bounds = [s.version for s in requirement.specifier if s.operator == ">="]
        assert len(bounds) == 1, f"{text}: expected one lower bound (>=)"
        declared[canonicalize_name(requirement.name)] = bounds[0]
    assert _pins(LOWEST) == declared


def test_lock_lies_inside_the_declared_ranges():
    """Every requirement of the core, [all] and [test] installs is locked, at a version
    pyproject.toml allows (markers as on this Linux Python)."""
    project = _project()
    requirements = [Requirement(t) for t in project["dependencies"]]
    for extra, texts in project["optional-dependencies"].items():
        requirements += [Requirement(t) for t in texts if extra != "all"]
    locked = _pins(LOCK)
    for requirement in requirements:
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not in {LOCK.name}"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"{LOCK.name} has {name}=={locked[name]}, outside {requirement}"
        )


def _copy_source(folder: Path) -> Path:
    """The source alone, for pip to build from: the copy keeps pip's in-tree build out of
    the working tree."""

    def ignore(directory, names):
        return [n for n in names if not_source(n)]

    return shutil.copytree(ROOT, folder, ignore=ignore)


def _run(command: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": ""},
        timeout=600,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from the repository's source, in an isolated environment as it
    builds one for a user (``pip wheel``): what the core install installs and what the
    wheel test opens."""
    root = tmp_path_factory.mktemp("wheel")
    source = _copy_source(root / "source")
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "--wheel-dir",
            root / "dist",
            source,
        ],
        root,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = (root / "dist").glob("sbir_study-*.whl")
    return found


@pytest.fixture(scope="module")
def core_install(tmp_path_factory, wheel):
    """A fresh virtual environment holding the core install alone, at the locked versions.

    Installed from pip's cache where make install filled it: a minute or two.
    """
    root = tmp_path_factory.mktemp("install")
    env = root / "env"
    # Without pip of its own: this environment's pip installs into it (``pip --python``),
    # which spares the venv's ensurepip (most of the venv's making).
    made = _run([sys.executable, "-m", "venv", "--without-pip", env], root)
    assert made.returncode == 0, made.stderr
    python = env / "bin" / "python"
    # No byte-compiling: a third of the time, for modules that run once here.
    installed = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "-c",
            LOCK,
            wheel,
        ],
        root,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return root, env / "bin"


def test_a_wheel_holds_sbir_study_and_nothing_else_at_its_top(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"sbir_study"}
    # Every subpackage and its data went in under it.
    for expected in (
        "sbir_study/foundation/checks.py",
        "sbir_study/analysis/retrieval/runs.py",
        "sbir_study/study/online/web/index.html",
        "sbir_study/foundation/templates/base.html.jinja",
        "sbir_study/foundation/templates/macros.html.jinja",
        "sbir_study/analysis/templates/report.html.jinja",
        "sbir_study/analysis/retrieval/templates/evaluation_report.html.jinja",
        "sbir_study/study/online/templates/status.html.jinja",
        "sbir_study/cli/__init__.py",
        "sbir_study/stimuli/manifest.py",
    ):
        assert expected in names


def test_core_install_has_no_session_or_server_packages(core_install):
    root, bin_ = core_install
    found = _run(
        [
            bin_ / "python",
            "-c",
            "import importlib.util as u; print(*("
            "m for m in ('psychopy', 'fastapi', 'sqlalchemy', 'uvicorn', 'alembic') "
            "if u.find_spec(m)))",
        ],
        root,
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == []


def test_core_install_simulates_analyses_and_scores_as_the_full_install(
    core_install, tmp_path, monkeypatch
):
    """stimuli generate, simulate, analyze, baseline and evaluate in the core install (with
    figures: matplotlib is core), and the same commands in this test's own full install,
    write the same ground truth and the same scores."""
    root, bin_ = core_install
    commands = [
        [
            "stimuli",
            "generate",
            "--out",
            "set",
            "--sketches",
            "3",
            "--images",
            "6",
            "--anchor-sketches",
            "0",
            "--width",
            "96",
            "--height",
            "72",
            "--seed",
            "5",
        ],
        ["simulate", "--stimuli", "set", "--participants", "5", "--out", "data", "--seed", "5"],
        ["analyze", "data", "--out", "analysis", "--pairwise", "summary"],
        ["baseline", "--stimuli", "set", "--distance", "l1", "--out", "l1.run"],
        [
            "evaluate",
            "--ground-truth",
            "analysis/ground_truth.csv",
            "--ratings",
            "data",
            "--bootstrap",
            "200",
            "--permutations",
            "200",
            "--out",
            "evaluation",
            "l1.run",
        ],
    ]
    core = root / "commands"
    core.mkdir()
    monkeypatch.chdir(tmp_path)
    for command in commands:
        done = _run([bin_ / "sbir-study", *command], core)
        assert done.returncode == 0, f"sbir-study {' '.join(command)}: {done.stderr}"
        figures = ["--no-figures"] if command[0] in ("analyze", "evaluate") else []
        assert main([*command, *figures]) == 0
    assert (core / "analysis" / "figures" / "fig5_interuser.png").is_file()
    assert (core / "evaluation" / "report.html").is_file()
    for table in [
        "analysis/ground_truth.csv",
        "analysis/kendall_w.csv",
        "evaluation/summary.csv",
        "evaluation/per_sketch.csv",
    ]:
        assert filecmp.cmp(core / table, tmp_path / table, shallow=False), table


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (
            [
                "run",
                "--protocol",
                "{protocols}/demo.toml",
                "--stimuli",
                "set",
                "--participant",
                "01",
                "--data",
                "session",
            ],
            "lab",
        ),
        (
            [
                "serve",
                "--protocol",
                "{protocols}/demo.toml",
                "--stimuli",
                "set",
                "--data",
                "online",
            ],
            "online",
        ),
        (["export-online", "--db", "online.sqlite", "--out", "exported"], "online"),
    ],
)
def test_commands_of_an_extra_name_its_install(core_install, command, extra):
    """Exit status 2 and one line naming the pip install that brings the command."""
    root, bin_ = core_install
    command = [c.format(protocols=ROOT / "protocols") for c in command]
    done = _run([bin_ / "sbir-study", *command], root)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert re.search(rf"pip install 'sbir-study\[{extra}\]'$", lines[0]), lines[0]
