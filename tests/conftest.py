from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).parent / "data"
R_REFERENCE = DATA / "r_reference"


@pytest.fixture(scope="session")
def small_ratings():
    """The fixture table that tests/r/reference.R analyses."""
    from analysis import load_ratings

    return load_ratings(DATA / "ratings_small.csv")


def r_reference(name: str) -> pd.DataFrame:
    """A table written by tests/r/reference.R (R 4.2, base packages)."""
    return pd.read_csv(
        R_REFERENCE / name, dtype={"participant": str, "participant_a": str, "participant_b": str}
    )
