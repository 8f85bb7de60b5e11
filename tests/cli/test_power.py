"""sbir-study power: the files it writes and the counts it refuses."""

import pandas as pd
import pytest

from tests.helpers import run_main


def test_power_command(tmp_path):
    result = run_main(
        "power",
        "--out",
        str(tmp_path),
        "--participants",
        "3,6",
        "--replications",
        "2",
        "--reference",
        "10",
        "--sketches",
        "3",
        "--images",
        "8",
    )
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "power.csv")
    assert table["participants"].tolist() == [3, 6]
    assert (tmp_path / "power.png").exists() and (tmp_path / "power.pdf").exists()


@pytest.mark.parametrize("value", ["1,5", "five", ""])
def test_power_rejects_bad_counts(tmp_path, value):
    result = run_main("power", "--out", str(tmp_path), "--participants", value)
    assert result.returncode == 2
    assert "--participants" in result.stderr
