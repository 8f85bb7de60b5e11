"""The lab's participants' ids: any id a platform sends, recorded under one label, kept as given.

``run --participant`` takes the id as a recruitment platform sends it (or the lab's own
label); the session is recorded under the label ``participant_label`` makes of it with the
dataset's labels taken (the online server's rule), and ``participants.tsv`` keeps the id in
its ``source_id`` column, so that the same id finds its label again on ``--resume``.
(In a PsychoPy window: tests/study/test_session.py, the SIGKILL and resume test.)
"""

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError, participant_label
from sbir_study.study.recorder import SessionRecorder, label_of

ORDER = [(1, "main", "s1", "i1")]
SESSION = {"Protocol": {"name": "demo"}, "StimulusSetDigest": "ab" * 32, "Seed": 5}

# Ids as platforms send them, and short ids over few characters, so that letters and
# digits often coincide (0-1, 01, 0.1) and a hash must part them.
PLATFORM_IDS = st.sampled_from(
    [
        "5f8d0e2a9b1c3d4e5f6a7b8c",  # Prolific
        "A1B2C3D4E5F6G7",  # MTurk worker
        "12345",  # SONA
        "R_3kVq9xP2abcDEF",  # Qualtrics
        "R-3kVq9xP2abcDEF",
        "NA",
        "n.a.",
        "null",
        "---",
        "01",
        "1",
        "ü1",
    ]
)
SHORT_IDS = st.text(alphabet="01aA-_. ", min_size=1, max_size=4).filter(str.strip)


def record(root: Path, source_id: str, label: str) -> None:
    SessionRecorder.open(
        root, label, task="sbirdemo", session=SESSION, trial_order=ORDER, source_id=source_id
    ).finish("incomplete")


def participants(root: Path) -> pd.DataFrame:
    return pd.read_csv(root / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.one_of(PLATFORM_IDS, SHORT_IDS), min_size=1, max_size=6))
def test_each_id_gets_one_label_and_finds_it_again(ids):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        given_labels: dict[str, str] = {}
        for source_id in ids:
            label = label_of(root, source_id)
            if source_id in given_labels:  # the same id again (a resumed session)
                assert label == given_labels[source_id]
                continue
            # A new id: the rule, with every label already in the dataset taken.
            assert label == participant_label(source_id, set(given_labels.values()))
            assert bids.check_label(label) == label
            record(root, source_id, label)
            given_labels[source_id] = label
        table = participants(root)
        # Distinct ids, distinct labels; the id kept exactly as given, beside its label.
        assert table["participant_id"].is_unique
        assert dict(zip(table["source_id"], table["participant_id"], strict=True)) == {
            source_id: f"sub-{label}" for source_id, label in given_labels.items()
        }
        # Each id finds its label again once all are recorded.
        assert {s: label_of(root, s) for s in given_labels} == given_labels


def test_the_id_is_described_in_participants_json(tmp_path):
    record(tmp_path, "R_3kVq9x-P.2", label_of(tmp_path, "R_3kVq9x-P.2"))
    assert (tmp_path / "participants.tsv").read_text() == (
        "participant_id\tsource_id\nsub-R3kVq9xP2\tR_3kVq9x-P.2\n"
    )
    described = json.loads((tmp_path / "participants.json").read_text())
    assert list(described) == ["participant_id", "source_id"]
    assert "--participant" in described["source_id"]["Description"]


def test_a_dataset_recorded_before_ids_were_kept(tmp_path):
    # sub-07 was recorded with --participant 07 before source_id existed; a column of the
    # lab's own and the details stay, the new column goes beside the label.
    (tmp_path / "dataset_description.json").write_text('{"Name": "x", "BIDSVersion": "1.9.0"}')
    (tmp_path / "participants.tsv").write_text("participant_id\tgroup\tage\nsub-07\tpilot\t31\n")
    (tmp_path / "participants.json").write_text('{"group": {"Description": "Lab group."}}')
    (tmp_path / "sub-07" / "beh").mkdir(parents=True)
    assert label_of(tmp_path, "07") == "07"  # the same participant: its session resumes
    # Another id with the same letters and digits is another participant.
    other = label_of(tmp_path, "0-7")
    assert other == participant_label("0-7", {"07"}) != "07"
    SessionRecorder.open(
        tmp_path,
        other,
        task="sbirdemo",
        session=SESSION,
        trial_order=ORDER,
        source_id="0-7",
        details={"age": "25"},
    ).finish("complete")
    assert participants(tmp_path).to_dict("list") == {
        "participant_id": ["sub-07", f"sub-{other}"],
        "source_id": ["n/a", "0-7"],
        "group": ["pilot", "n/a"],
        "age": ["31", "25"],
    }
    described = json.loads((tmp_path / "participants.json").read_text())
    assert described["group"] == {"Description": "Lab group."} and "source_id" in described
    assert label_of(tmp_path, "0-7") == other and label_of(tmp_path, "07") == "07"


def test_a_folder_without_a_row_is_a_taken_label(tmp_path):
    # A session copied in without its participants.tsv row: its label is not given again
    # to another id, but the id that is that label is that participant.
    (tmp_path / "sub-R1" / "beh").mkdir(parents=True)
    assert label_of(tmp_path, "R-1") == participant_label("R-1", {"R1"})
    assert label_of(tmp_path, "R1") == "R1"


def test_an_id_that_reads_as_missing_in_participants_tsv_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"^participant id: 'n/a' is how participants.tsv "):
        label_of(tmp_path, "n/a")
