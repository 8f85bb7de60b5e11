"""Sessions that did not finish, flagged beside their participants (participants.csv's
``session_status`` and the report's participants table), read from the sessions' sidecars."""

import json
import re
import shutil

import pandas as pd
import pytest

from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
from tests.helpers import run_main

DESIGN = StudyDesign(participants=4, sketches=2, images_per_sketch=6, anchor_sketches=0)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("status") / "data"
    write_simulated_dataset(root, DESIGN, seed=3)
    return root


def _analyze(data, out):
    result = run_main("analyze", str(data), "--out", str(out), "--no-figures")
    assert result.returncode == 0, result.stderr
    return pd.read_csv(out / "participants.csv", dtype={"participant": str}, keep_default_na=False)


def test_each_participant_carries_the_status_its_sidecar_records(tmp_path, dataset):
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    statuses = {"01": "complete", "02": "incomplete", "03": "timed_out"}  # 04: none recorded
    for label, status in statuses.items():
        (path,) = data.glob(f"sub-{label}/beh/*_beh.json")
        path.write_text(json.dumps({**json.loads(path.read_text()), "SessionStatus": status}))
    participants = _analyze(data, tmp_path / "out")
    # Independently: each sidecar's SessionStatus as json reads it, "" where it has none.
    expected = {}
    for path in sorted(data.glob("sub-*/beh/*_beh.json")):
        label = path.parts[-3].removeprefix("sub-")
        expected[label] = json.loads(path.read_text()).get("SessionStatus", "")
    assert (
        dict(zip(participants["participant"], participants["session_status"], strict=True))
        == expected
    )
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "flagged under <em>session</em>" in page
    rows = {m[1]: m[0] for m in re.finditer(r"<tr><td>(\d\d)</td>.*?</tr>", page)}
    assert "incomplete" in rows["02"] and "timed out" in rows["03"]
    assert "incomplete" not in rows["01"] and "timed out" not in rows["04"]


def test_a_study_whose_sessions_all_finished_has_no_session_column(tmp_path, dataset):
    participants = _analyze(dataset, tmp_path / "out")
    assert participants["session_status"].tolist() == [""] * 4  # simulate records none
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<th>session</th>" not in page and "flagged under" not in page
