"""Fixtures shared by the whole test suite (helpers to import are in tests/helpers.py)."""

import gc
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

# ranx, an oracle of the retrieval measures, runs its kernels through numba, which compiles
# them on first use: one to three minutes on a fresh machine for a test on a few sketches.
# Run as the plain Python they are written in, they give the same numbers in seconds. Set
# before anything imports numba; the benchmarks time ranx compiled, as a user runs it.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

import pytest
from hypothesis import settings

from tests.helpers import DATA, SMALL_SET

# No deadline by default for the property tests: on a loaded machine one example of a
# 13 ms test took 385 ms against hypothesis' default 200 ms and failed as flaky. The tests
# check what the code gives; its speed is measured in benchmarks/ (a test that sets its
# own deadline keeps it).
settings.register_profile("sbir-study", deadline=None)
settings.load_profile("sbir-study")

#: The markers (pyproject.toml) that the fixtures a test uses give it.
_MARKER_OF_FIXTURE = {"display": "realtime", "browser": "browser", "postgres": "postgresql"}
#: The modules that `make test` runs the window and browser tests from (tests/timed.txt).
TIMED_MODULES = frozenset(
    line.strip()
    for line in (Path(__file__).parent / "timed.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)


def pytest_collection_finish(session):
    """Move what collection loaded (the libraries, the test modules) out of the garbage
    collector's sight: it lives as long as the run, and statsmodels' ``multipletests``, an
    oracle of the corrections, calls ``gc.collect()`` on every call, which then walks only
    what the tests made since."""
    gc.freeze()


#: The modules that take longest (a minute or more of one core each: `make test` prints the
#: slowest tests), longest first, as measured in make test's two passes: they start first so
#: that make test's workers, which take a module (or a class) at a time, end together rather
#: than three waiting for the fourth's last long module. The other modules follow, those with
#: more tests first. make test passes ``--no-loadscope-reorder``: pytest-xdist would otherwise
#: order the modules by their number of tests alone, which puts make run's (one long
#: fixture, 35 short tests) in the middle of the run.
LONGEST_FIRST = (
    "tests/study/online/test_online_browser.py",
    "tests/study/test_session.py",
    "tests/test_docs.py",
    "tests/cli/test_bad_inputs.py",
    "tests/study/test_protocol_robust.py",
    "tests/test_layout.py",
    "tests/analysis/test_report_reads.py",
    "tests/test_install.py",
    "tests/study/online/test_online_server.py",
    "tests/analysis/test_analyze_crowd.py",
    "tests/cli/test_interrupts.py",
    "tests/study/online/test_online_load.py",
    "tests/cli/test_evaluate.py",
    "tests/analysis/test_figures_report.py",
    "tests/analysis/test_report_print.py",
    "tests/study/test_session_scale.py",
    "tests/study/test_practice.py",
    "tests/study/online/test_any_lab.py",
)


def _scope(nodeid: str) -> str:
    """The unit pytest-xdist's ``--dist loadscope`` gives one worker: a test's module, or
    its class."""
    return nodeid.rsplit("::", 1)[0]


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture, marker in _MARKER_OF_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
        module = item.nodeid.split("::")[0]
        if module not in TIMED_MODULES and any(
            item.get_closest_marker(m) for m in ("realtime", "browser")
        ):
            raise pytest.UsageError(
                f"{item.nodeid}: a window or browser test in a module that tests/timed.txt "
                "does not list; make test would not run it (add the module there)"
            )
    # A stable sort: the order within a module stays.
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    sizes = Counter(_scope(item.nodeid) for item in items)
    items.sort(
        key=lambda item: (
            rank.get(item.nodeid.split("::")[0], len(rank)),
            -sizes[_scope(item.nodeid)],
        )
    )


@pytest.fixture(scope="session")
def small_ratings():
    """The fixture table that tests/r/reference.R analyses."""
    from sbir_study.analysis import load_ratings

    return load_ratings(DATA / "ratings_small.csv")


@pytest.fixture(scope="session")
def small_set(tmp_path_factory):
    """A small generated stimulus set (tests.helpers.SMALL_SET, seed 7); never modified."""
    from sbir_study.stimuli import generate_set

    return generate_set(tmp_path_factory.mktemp("generated") / "set", SMALL_SET, seed=7)


@pytest.fixture
def set_copy(small_set, tmp_path):
    """A copy of the small set that a test may damage."""
    return shutil.copytree(small_set, tmp_path / "set")


@pytest.fixture(scope="session")
def retrieval_study(tmp_path_factory):
    """A generated set, six simulated participants on it, its analysis and three baseline runs.

    The folder holds ``set/``, ``data/`` (BIDS), ``analysis/`` (with ground_truth.csv) and
    ``runs/`` (``l1.run``, ``chi2.run``, ``linf.run``).
    """
    from sbir_study.cli import main
    from sbir_study.stimuli import SetDesign, generate_set

    root = tmp_path_factory.mktemp("evaluate")
    design = SetDesign(sketches=4, images_per_sketch=8, anchor_sketches=0, width=96, height=72)
    stimuli = generate_set(root / "set", design, seed=3)
    assert (
        main(
            [
                "simulate",
                "--stimuli",
                str(stimuli),
                "--participants",
                "6",
                "--out",
                str(root / "data"),
                "--seed",
                "3",
            ]
        )
        == 0
    )
    assert (
        main(["analyze", str(root / "data"), "--out", str(root / "analysis"), "--no-figures"]) == 0
    )
    assert (
        main(
            [
                "baseline",
                "--stimuli",
                str(stimuli),
                "--distance",
                "l1,chi2,linf",
                "--out",
                str(root / "runs"),
            ]
        )
        == 0
    )
    return root


@pytest.fixture
def mounted(tmp_path):
    """A 1 MB tmpfs at tmp_path/mnt: a file system that fills up, or is made read-only.

    Mounting needs the privilege to; where the tests run without it, the tests that
    need a real full or read-only file system are skipped, and say why (those with
    ``RLIMIT_FSIZE`` in tests/foundation/test_outputs.py still make writes fail).
    """
    mount = tmp_path / "mnt"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip("mounting a tmpfs needs privileges this machine does not give")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)
