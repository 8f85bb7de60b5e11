"""Fixtures of the command-line tests."""

import pytest

from tests.helpers import run_main


@pytest.fixture(scope="session")
def analysed(tmp_path_factory):
    """A simulated BIDS dataset (6 participants, 4 sketches x 12 images) and its analysis.

    Read-only for the tests that share it: a test writes its own outputs in its tmp_path.
    """
    root = tmp_path_factory.mktemp("study")
    result = run_main(
        "simulate",
        "--out",
        str(root / "data"),
        "--participants",
        "6",
        "--sketches",
        "4",
        "--images",
        "12",
        "--seed",
        "9",
    )
    assert result.returncode == 0, result.stderr
    result = run_main("analyze", str(root / "data"), "--out", str(root / "out"), "--no-figures")
    assert result.returncode == 0, result.stderr
    return root, result.stdout
