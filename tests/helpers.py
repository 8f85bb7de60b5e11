"""What many test modules use: the fixture data, the R reference tables, the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

#: Small fixture files (tests/data/).
DATA = Path(__file__).parent / "data"
#: Tables written by tests/r/reference.R.
R_REFERENCE = DATA / "r_reference"
#: The checkout's root (protocols/, scripts/).
ROOT = Path(__file__).parents[1]


def r_reference(name: str) -> pd.DataFrame:
    """A table written by tests/r/reference.R (R 4.2, base packages)."""
    return pd.read_csv(
        R_REFERENCE / name, dtype={"participant": str, "participant_a": str, "participant_b": str}
    )


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``sbir-study ARGS`` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "study.cli", *args], capture_output=True, text=True, check=False
    )


def assert_input_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2 and exactly one line on stderr, naming what it should."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _small_set_design():
    from stimuli import SetDesign

    return SetDesign(sketches=3, images_per_sketch=6, width=96, height=72)


#: A small generated set: 3 sketches x 6 images and the paper's anchor block.
SMALL_SET = _small_set_design()

#: One HPatches task of three queries, checked by hand (tests/analysis/retrieval/test_hpatches.py).
HPATCHES = DATA / "hpatches"
