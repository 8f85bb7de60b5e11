"""Fixtures of the command-line tests."""

import pytest

from tests.helpers import run_cli


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """A simulated BIDS dataset (6 participants, 4 sketches x 12 images) and its analysis."""
    root = tmp_path_factory.mktemp("study")
    result = run_cli("simulate", "--out", str(root / "data"), "--participants", "6",
                     "--sketches", "4", "--images", "12", "--seed", "9")  # fmt: skip
    assert result.returncode == 0, result.stderr
    result = run_cli("analyze", str(root / "data"), "--out", str(root / "out"), "--no-figures")
    assert result.returncode == 0, result.stderr
    return root, result.stdout
