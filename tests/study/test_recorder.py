"""The crash-safe session recorder: append and fsync, refuse to overwrite, resume, SIGKILL."""

import json
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from sbir_study.analysis import load_ratings
from sbir_study.foundation.checks import InputError
from sbir_study.study.recorder import SESSION_COLUMNS, SessionRecorder

ORDER = [(k, "main", f"s{k % 3}", f"i{k}") for k in range(1, 41)]
SESSION = {"Protocol": {"name": "demo"}, "StimulusSetDigest": "ab" * 32, "Seed": 5}


def _row(trial, sketch, image, rating=3):
    return {
        "participant": "07",
        "trial": trial,
        "phase": "main",
        "sketch_id": sketch,
        "image_id": image,
        "rating": rating,
        "rt": 0.8123456,
        "anchor_rating": None,
        "onset": 3.0 * trial,
        "onset_monotonic": 1000.0 + 3 * trial,
        "stim_duration": 2.0,
        "blank_duration": 1.0,
        "dropped_frames": 0,
        "n_presses": 1,
        "presses": f"{rating}@0.812346",
        "paused_before": 0.0,
    }


def _open(root, resume=False, session=SESSION, order=ORDER):
    return SessionRecorder.open(
        root, "07", task="sbirdemo", session=session, trial_order=order, resume=resume
    )


def test_a_session_is_a_bids_dataset_the_analysis_reads(tmp_path):
    recorder = _open(tmp_path)
    for trial, _, sketch, image in ORDER[:6]:
        recorder.append(_row(trial, sketch, image, rating=trial % 7 + 1))
    recorder.finish("complete", RefreshRate=60.0)
    tsv = tmp_path / "sub-07" / "beh" / "sub-07_task-sbirdemo_beh.tsv"
    table = pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False)
    assert list(table.columns) == list(SESSION_COLUMNS)
    assert table["anchor_rating"].tolist() == ["n/a"] * 6
    sidecar = json.loads(tsv.with_suffix(".json").read_text())
    assert sidecar["SessionStatus"] == "complete" and sidecar["Seed"] == 5
    assert sidecar["TrialOrder"][0] == [1, "main", "s1", "i1"]
    assert all(column in sidecar for column in SESSION_COLUMNS)  # every column described
    assert (tmp_path / "participants.tsv").read_text() == "participant_id\nsub-07\n"
    assert json.loads((tmp_path / "dataset_description.json").read_text())["BIDSVersion"]
    ratings = load_ratings(tmp_path)
    assert ratings["rating"].tolist() == [k % 7 + 1 for k in range(1, 7)]


def test_an_existing_session_is_never_overwritten(tmp_path):
    recorder = _open(tmp_path)
    recorder.append(_row(1, "s1", "i1"))
    recorder.finish("incomplete")
    before = (tmp_path / "sub-07" / "beh" / "sub-07_task-sbirdemo_beh.tsv").read_bytes()
    with pytest.raises(InputError, match="already recorded; it is never overwritten"):
        _open(tmp_path)
    assert (tmp_path / "sub-07" / "beh" / "sub-07_task-sbirdemo_beh.tsv").read_bytes() == before
    with pytest.raises(InputError, match="no session of participant '08' to resume"):
        SessionRecorder.open(
            tmp_path, "08", task="sbirdemo", session=SESSION, trial_order=ORDER, resume=True
        )


def test_resume_checks_set_protocol_and_order(tmp_path):
    recorder = _open(tmp_path)
    for trial, _, sketch, image in ORDER[:3]:
        recorder.append(_row(trial, sketch, image))
    recorder.finish("incomplete")
    other_set = {**SESSION, "StimulusSetDigest": "cd" * 32}
    with pytest.raises(
        InputError, match="StimulusSetDigest: the session was recorded with another stimulus set"
    ):
        _open(tmp_path, resume=True, session=other_set)
    with pytest.raises(
        InputError,
        match=r"Protocol.name: the session was recorded with another "
        r"protocol; resume with the same protocol \(recorded demo, given x\)",
    ):
        _open(tmp_path, resume=True, session={**SESSION, "Protocol": {"name": "x"}})
    with pytest.raises(InputError, match="TrialOrder: the order re-derived from seed 5 differs"):
        _open(tmp_path, resume=True, order=ORDER[::-1])
    resumed = _open(tmp_path, resume=True)
    assert resumed.recorded == 3
    assert resumed.sidecar["Resumed"][0]["FromTrial"] == 4


def test_a_session_recorded_before_a_protocol_setting_existed_resumes_at_its_default(tmp_path):
    # A lab upgrades between two sittings of one participant: the recorded protocol lacks
    # the sections added since ([online], [dataset], ...). They took their defaults then.
    from sbir_study.study.protocol import Protocol, protocol_dict

    now = json.loads(json.dumps(protocol_dict(Protocol())))
    old = {key: value for key, value in now.items() if key not in ("online", "dataset")}
    old["timing"] = {k: v for k, v in now["timing"].items() if k != "refresh_range_hz"}
    recorder = _open(tmp_path, session={**SESSION, "Protocol": old})
    recorder.append(_row(1, "s1", "i1"))
    recorder.finish("incomplete")
    assert _open(tmp_path, resume=True, session={**SESSION, "Protocol": now}).recorded == 1
    # ... but not when the given value of a missing setting is not its default.
    changed = {**now, "online": {**now["online"], "lists": now["online"]["lists"] + 1}}
    with pytest.raises(InputError, match=r"Protocol.online.lists: .*another protocol"):
        _open(tmp_path, resume=True, session={**SESSION, "Protocol": changed})
    moved = {**now, "timing": {**now["timing"], "refresh_range_hz": [40.0, 250.0]}}
    with pytest.raises(InputError, match=r"Protocol.timing.refresh_range_hz: "):
        _open(tmp_path, resume=True, session={**SESSION, "Protocol": moved})


def test_a_session_recorded_with_the_earlier_default_instructions_resumes(tmp_path):
    # Recorded before instruction texts left out of a protocol were written from its
    # settings: the sidecar holds the default texts of then, the protocol now leaves them
    # out (None). Still the default: the participant's session resumes.
    from sbir_study.study.protocol import Protocol, protocol_dict

    now = json.loads(json.dumps(protocol_dict(Protocol())))
    assert all(text is None for text in now["instructions"].values())
    earlier = {  # the defaults of study/protocol.py before the change, as released
        "anchoring": "You will first see example pairs of a sketch and an image, each with "
        "the rating it deserves, from 1 (best match) to 7 (worst match).\n\nPress space to "
        "begin.",
        "main": "Now rate each pair yourself: how well does the image match the sketch?\n\n"
        "Press a number key from 1 (best match) to 7 (worst match) while the pair is shown "
        "or during the black screen after it. You may change your rating until the next "
        "pair appears.\n\nPress P to pause at any time. Press space to begin.",
        "pause": "Paused. Press space to continue.",
        "end": "Thank you! The session is complete.\n\nPress space to close.",
    }
    old = {**now, "instructions": earlier}
    old.pop("texts", None)
    recorder = _open(tmp_path, session={**SESSION, "Protocol": old})
    recorder.append(_row(1, "s1", "i1"))
    recorder.finish("incomplete")
    assert _open(tmp_path, resume=True, session={**SESSION, "Protocol": now}).recorded == 1
    # A text of the lab's own is not a default: leaving it out now is another protocol.
    own = {**old, "instructions": {**earlier, "end": "Danke!"}}
    other = tmp_path / "other"
    recorder = _open(other, session={**SESSION, "Protocol": own})
    recorder.append(_row(1, "s1", "i1"))
    recorder.finish("incomplete")
    with pytest.raises(InputError, match=r"Protocol.instructions.end: .*another protocol"):
        _open(other, resume=True, session={**SESSION, "Protocol": now})


def test_a_cut_line_is_kept_aside_and_the_whole_lines_are_resumed(tmp_path):
    recorder = _open(tmp_path)
    for trial, _, sketch, image in ORDER[:4]:
        recorder.append(_row(trial, sketch, image))
    recorder.finish("incomplete")
    tsv = tmp_path / "sub-07" / "beh" / "sub-07_task-sbirdemo_beh.tsv"
    with open(tsv, "a") as handle:
        handle.write("07\t5\tmain\ts2\ti5\t4\t0.9")  # a crash in the middle of a line
    resumed = _open(tmp_path, resume=True)
    assert resumed.recorded == 4
    assert tsv.read_text().endswith("\t0.000000\n")
    kept = list((tmp_path / "sourcedata" / "sub-07").iterdir())
    assert len(kept) == 1 and kept[0].read_text() == "07\t5\tmain\ts2\ti5\t4\t0.9"


WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from test_recorder import ORDER, _open, _row
    recorder = _open({root!r}, resume={resume})
    for trial, _, sketch, image in ORDER[recorder.recorded:]:
        recorder.append(_row(trial, sketch, image, rating=trial % 7 + 1))
        print(trial, flush=True)
        time.sleep(0.002)
    recorder.finish("complete")
    """
)


def test_sigkill_keeps_every_written_trial_and_resume_completes_the_session(tmp_path):
    tests = str(__import__("pathlib").Path(__file__).parent)
    script = WRITER.format(tests=tests, root=str(tmp_path), resume=False)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    acknowledged = 0
    for line in writer.stdout:
        acknowledged = int(line)
        if acknowledged >= 17:
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    tsv = tmp_path / "sub-07" / "beh" / "sub-07_task-sbirdemo_beh.tsv"
    on_disk = pd.read_csv(tsv, sep="\t", dtype=str)
    # Every trial the writer reported as written is on disk, whole.
    assert len(on_disk) >= acknowledged
    before = on_disk.copy()
    time.sleep(0.01)
    finished = subprocess.run(
        [sys.executable, "-c", WRITER.format(tests=tests, root=str(tmp_path), resume=True)],
        capture_output=True,
        text=True,
    )
    assert finished.returncode == 0, finished.stderr
    after = pd.read_csv(tsv, sep="\t", dtype=str)
    assert after["trial"].astype(int).tolist() == list(range(1, 41))  # each pair exactly once
    pd.testing.assert_frame_equal(after.iloc[: len(before)], before)  # nothing recorded changed
    sidecar = json.loads(tsv.with_suffix(".json").read_text())
    assert sidecar["SessionStatus"] == "complete"
    assert sidecar["Resumed"][0]["FromTrial"] == len(before) + 1


# --- Participants, dataset description, and folders that hold someone's data ---------------

from sbir_study.study.recorder import check_dataset_folder, recorded_details  # noqa: E402


def _open_as(root, label, details=None, dataset=None):
    return SessionRecorder.open(
        root,
        label,
        task="sbirdemo",
        session=SESSION,
        trial_order=ORDER,
        details=details,
        dataset=dataset,
    )


def test_participant_details_and_their_description(tmp_path):
    dataset = {"Name": "Lab X replication", "Authors": ["A. Tester", "B. Tester"]}
    _open_as(tmp_path, "01", {"age": "25", "sex": "F", "handedness": "n/a"}, dataset).finish(
        "complete"
    )
    _open_as(tmp_path, "002", {"age": "n/a", "sex": "M"}).finish("complete")
    table = pd.read_csv(tmp_path / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert table.to_dict("list") == {
        "participant_id": ["sub-01", "sub-002"],  # labels stay text: 01 is not 1
        "age": ["25", "n/a"],
        "sex": ["F", "M"],
        "handedness": ["n/a", "n/a"],
    }
    described = json.loads((tmp_path / "participants.json").read_text())
    assert described["age"]["Units"] == "year"
    assert described["sex"]["Levels"] == {"F": "female", "M": "male", "O": "other"}
    assert described["handedness"]["Levels"] == {"R": "right", "L": "left", "A": "ambidextrous"}
    description = json.loads((tmp_path / "dataset_description.json").read_text())
    assert description["Name"] == "Lab X replication"
    assert description["Authors"] == ["A. Tester", "B. Tester"]
    assert recorded_details(tmp_path, "01") == {"age": "25", "sex": "F", "handedness": "n/a"}
    assert recorded_details(tmp_path, "03") == {}


def test_existing_participants_file_is_kept_whole(tmp_path):
    # Written elsewhere, with Windows line endings and a column of its own.
    (tmp_path / "dataset_description.json").write_text('{"Name": "x", "BIDSVersion": "1.9.0"}')
    (tmp_path / "participants.tsv").write_bytes(b"participant_id\tgroup\r\nsub-07x\tpilot\r\n")
    (tmp_path / "participants.json").write_text('{"group": {"Description": "Lab group."}}')
    _open_as(tmp_path, "08", {"age": "31"}).finish("complete")
    table = pd.read_csv(tmp_path / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert table.to_dict("list") == {
        "participant_id": ["sub-07x", "sub-08"],
        "group": ["pilot", "n/a"],
        "age": ["n/a", "31"],
    }
    described = json.loads((tmp_path / "participants.json").read_text())
    assert described["group"] == {"Description": "Lab group."} and "age" in described
    assert json.loads((tmp_path / "dataset_description.json").read_text())["Name"] == "x"


def test_data_folders_that_cannot_hold_a_session_are_refused_untouched(tmp_path):
    check_dataset_folder(tmp_path / "new" / "deeper")  # a new folder: fine
    check_dataset_folder(tmp_path)  # an empty one: fine
    someone = tmp_path / "someone"
    someone.mkdir()
    (someone / "thesis.docx").write_bytes(b"precious")
    with pytest.raises(InputError, match=r"holds files but no dataset_description\.json"):
        check_dataset_folder(someone)
    assert [p.name for p in someone.iterdir()] == ["thesis.docx"]
    a_file = tmp_path / "data.tsv"
    a_file.write_text("x")
    with pytest.raises(InputError, match="exists and is a file; expected a BIDS dataset folder"):
        check_dataset_folder(a_file)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "dataset_description.json").write_text("{not json")
    with pytest.raises(InputError, match=r"dataset_description.json: cannot be read as JSON"):
        check_dataset_folder(broken)
    (broken / "dataset_description.json").write_text("{}")
    (broken / "participants.tsv").write_text("subject\n01\n")
    with pytest.raises(InputError, match=r"participants.tsv: line 1: expected a participant_id"):
        check_dataset_folder(broken)


def test_key_log_goes_on_after_a_cut_line(tmp_path):
    recorder = _open(tmp_path)
    recorder.append(_row(1, "s1", "i1"), [("3", 1000.5, 0.5), ("p", 1000.9, 0.9)])
    recorder.finish("incomplete")
    log = recorder.key_log
    assert log == tmp_path / "sourcedata" / "sub-07" / "sub-07_task-sbirdemo_keys.tsv"
    with open(log, "a") as handle:
        handle.write("4\t1001.2")  # a crash in the middle of a line
    resumed = _open(tmp_path, resume=True)
    resumed.append(_row(2, "s2", "i2"), [("5", 1003.1, 3.1)])
    resumed.finish("complete")
    table = pd.read_csv(log, sep="\t", dtype={"key": str})
    assert table["key"].tolist() == ["3", "p", "5"]
    assert [p.name for p in log.parent.glob("*_cut-*.txt")] != []
