"""export-online: the BIDS dataset `analyze` reads, alone and mixed with lab sessions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sbir_study.analysis import load_ratings
from sbir_study.study.recorder import SESSION_COLUMNS
from tests.study.online.support import END_S, make_client, report, start, write_protocol

VALIDATOR = Path(__file__).parents[3] / ".node" / "node_modules" / ".bin" / "bids-validator"


def assert_valid_bids(root: Path) -> None:
    """No errors from the BIDS validator (npm bids-validator, installed by make install)."""
    assert VALIDATOR.exists(), f"{VALIDATOR} is missing; make install installs it"
    result = subprocess.run([str(VALIDATOR), str(root), "--json"], capture_output=True, text=True)
    found = json.loads(result.stdout)
    errors = [
        (e["key"], e["reason"], [f["file"]["relativePath"] for f in e["files"]][:3])
        for e in found["issues"]["errors"]
    ]
    assert not errors, errors


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sbir_study", *args], capture_output=True, text=True, timeout=300
    )


def fill(
    client,
    label: str,
    *,
    stop_after: int | None = None,
    finish: str | None = "complete",
    details=None,
):
    """A participant over HTTP: rates every trial (or the first ``stop_after``)."""
    answer, token = start(client, label, details=details or {})
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}"}
    for number, trial in enumerate(state["trials"], start=1):
        if stop_after is not None and number > stop_after:
            break
        presses = [] if number % 5 == 0 else [(str(1 + (number * 3 + len(label)) % 7), 0.3)]
        put = client.put(
            f"/api/sessions/{state['session_id']}/trials/{number}",
            json=report(trial, number, presses),
            headers=headers,
        )
        assert put.status_code == 201, put.text
    if finish:
        client.post(
            f"/api/sessions/{state['session_id']}/finish", json={"status": finish}, headers=headers
        )
    return state


def test_an_incomplete_design_exports_valid_bids_that_analyze_reads(tmp_path, online_set):
    client = make_client(tmp_path, online_set, online={"subset": "pairs", "lists": 2})
    for label, details in (
        ("a1", {"age": 30, "sex": "male"}),
        ("a2", {"handedness": "right"}),
        ("a3", {}),
        ("a4", {"age": 71}),
    ):
        fill(client, label, details=details)
    fill(client, "quit5", stop_after=6, finish="incomplete")
    start(client, "nothing6")  # consented, never rated: no files
    out = tmp_path / "bids"
    done = cli("export-online", "--db", f"sqlite:///{client.db}", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        "5 participants (4 complete)" in done.stdout and "1 sessions without a trial" in done.stdout
    )
    assert_valid_bids(out)
    for tsv in sorted(out.glob("sub-*/beh/*_beh.tsv")):
        table = pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False)
        assert tuple(table.columns) == SESSION_COLUMNS
        assert (table["onset_monotonic"] == "n/a").all()
        sidecar = json.loads(tsv.with_suffix(".json").read_text())
        assert sidecar["Mode"] == "online" and sidecar["Origin"] == "online"
        assert sidecar["TrialOrder"][: len(table)] == [
            [int(r.trial), r.phase, r.sketch_id, r.image_id] for r in table.itertuples()
        ]
        assert set(SESSION_COLUMNS) <= set(sidecar)
    people = pd.read_csv(out / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    # Spelled as the lab session records them (M for "male"), described by the same levels.
    assert people.to_dict("records")[0] == {
        "participant_id": "sub-a1",
        "source_id": "a1",
        "age": "30",
        "sex": "M",
        "handedness": "n/a",
    }
    assert people.loc[1, "handedness"] == "R"
    described = json.loads((out / "participants.json").read_text())
    assert described["sex"]["Levels"] == {"F": "female", "M": "male", "O": "other"}
    ratings = load_ratings(out)
    main = ratings[ratings["phase"] == "main"]
    # Each participant rated half of every sketch's images: missing cells, by design.
    per_person = main.groupby("participant")["image_id"].nunique()
    assert per_person.drop("quit5").eq(4).all()
    analysis = tmp_path / "analysis"
    analyzed = cli("analyze", str(out), "--out", str(analysis), "--no-figures")
    assert analyzed.returncode == 0, analyzed.stderr
    summary = json.loads((analysis / "summary.json").read_text())
    assert summary["n_participants"] == 5 and summary["n_pairs"] == 8


def test_the_target_is_refused_or_replaced_only_when_it_is_an_earlier_export(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    fill(client, "b1")
    db = f"sqlite:///{client.db}"
    out = tmp_path / "bids"
    assert cli("export-online", "--db", db, "--out", str(out)).returncode == 0
    again = cli("export-online", "--db", db, "--out", str(out))
    assert again.returncode == 2 and "pass --overwrite" in again.stderr
    fill(client, "b2")
    assert cli("export-online", "--db", db, "--out", str(out), "--overwrite").returncode == 0
    assert sorted(p.name for p in out.glob("sub-*")) == ["sub-b1", "sub-b2"]
    # A file someone else put there: the folder is no longer only ours, never replaced.
    notes = out / "notes.txt"
    notes.write_text("my notes\n")
    refused = cli("export-online", "--db", db, "--out", str(out), "--overwrite")
    assert refused.returncode == 2 and "notes.txt" in refused.stderr
    assert notes.read_text() == "my notes\n"
    notes.unlink()
    # An edited file of the export: refused too.
    beh = next(out.glob("sub-b1/beh/*.tsv"))
    beh.write_text(beh.read_text() + "")
    with open(beh, "a") as handle:
        handle.write("\n")
    assert cli("export-online", "--db", db, "--out", str(out), "--overwrite").returncode == 2
    # Somebody's own dataset: never replaced.
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "data.tsv").write_text("x\n")
    refused = cli("export-online", "--db", db, "--out", str(theirs), "--overwrite")
    assert refused.returncode == 2 and "did not write" in refused.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_export_names_bad_input(tmp_path, online_set):
    missing = cli(
        "export-online", "--db", f"sqlite:///{tmp_path}/none.sqlite3", "--out", str(tmp_path / "x")
    )
    assert missing.returncode == 2 and "holds no online study" in missing.stderr
    wrong = cli("export-online", "--db", "mysql://x@y/z", "--out", str(tmp_path / "x"))
    assert wrong.returncode == 2 and "not supported" in wrong.stderr
    client = make_client(tmp_path, online_set)
    fill(client, "c1")
    # A second protocol served from the same database: the export asks which study.
    second = tmp_path / "second"
    second.mkdir()
    other = make_client(second, online_set, timing={"stimulus_s": 1.0})
    other.study.engine.dispose()
    shutil.copy(client.db, second / "unused.sqlite3")
    from sbir_study.study.online.service import OnlineStudy

    OnlineStudy.open(other.study.protocol, other.study.stimulus_set, client.study.engine)
    ambiguous = cli("export-online", "--db", f"sqlite:///{client.db}", "--out", str(tmp_path / "y"))
    assert ambiguous.returncode == 2 and "choose one" in ambiguous.stderr
    chosen = cli(
        "export-online",
        "--db",
        f"sqlite:///{client.db}",
        "--out",
        str(tmp_path / "y"),
        "--study",
        "1",
    )
    assert chosen.returncode == 0, chosen.stderr
    absent = cli(
        "export-online",
        "--db",
        f"sqlite:///{client.db}",
        "--out",
        str(tmp_path / "z"),
        "--study",
        "7",
    )
    assert absent.returncode == 2 and "no study 7" in absent.stderr


@pytest.mark.realtime
def test_a_browser_and_a_lab_participant_give_the_same_columns_analyzed_alike(
    online_set, tmp_path, start_server, browser
):
    """One study online and in the lab: one protocol and set, a participant in headless
    Chromium and one in the PsychoPy session (`run --simulate` under Xvfb), one dataset."""
    from tests.study.online.browser_participant import Participant

    protocol = write_protocol(
        tmp_path, timing={"stimulus_s": 0.4, "blank_s": 0.3, "anchor_demo_s": 0.4}
    )
    lab = tmp_path / "lab"
    xvfb = shutil.which("xvfb-run")
    assert xvfb, "xvfb-run is missing (Debian xvfb); make install installs it"
    recorded = subprocess.Popen(
        [
            xvfb,
            "-a",
            "-s",
            "-screen 0 1280x1024x24",
            sys.executable,
            "-m",
            "sbir_study",
            "run",
            "--protocol",
            str(protocol),
            "--stimuli",
            str(online_set),
            "--participant",
            "lab01",
            "--data",
            str(lab),
            "--windowed",
            "--simulate",
            "--seed",
            "5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    data = tmp_path / "data"
    server = start_server(protocol, online_set, data)
    participant = Participant(browser(), server.url)
    participant.open("?participant=web01")
    participant.intake({"age": 25})
    participant.rate_every_trial(lambda trial: str(1 + trial % 7), after_s=0.2)
    try:
        participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    except AssertionError as failure:  # what the server said about each request, to see why
        raise AssertionError(f"{failure}\nserve's log:\n{server.log.read_text()[-4000:]}") from None
    _out, err = recorded.communicate(timeout=180)
    assert recorded.returncode == 0, err
    mixed = tmp_path / "mixed"
    done = cli(
        "export-online",
        "--db",
        f"sqlite:///{data / 'online.sqlite3'}",
        "--out",
        str(mixed),
        "--with-lab",
        str(lab),
    )
    assert done.returncode == 0, done.stderr
    assert_valid_bids(mixed)
    # As written: "n/a" stays text, so that the counts below count real ratings only (a
    # trial the simulated lab participant missed on a busy machine is "n/a", not a rating).
    web, lab_table = (
        pd.read_csv(next(mixed.glob(f"sub-{label}/beh/*.tsv")), sep="\t", dtype=str,
                    keep_default_na=False)
        for label in ("web01", "lab01")
    )  # fmt: skip
    assert list(web.columns) == list(lab_table.columns) == list(SESSION_COLUMNS)
    # The same protocol, set and the lab's trial-list rule: the same pairs in each phase.
    for phase in ("anchor_demo", "main", "anchor_repeat"):
        pairs = [
            set(map(tuple, t.loc[t["phase"] == phase, ["sketch_id", "image_id"]].values))
            for t in (web, lab_table)
        ]
        assert pairs[0] == pairs[1], phase
    ratings = load_ratings(mixed)
    by_person = ratings.groupby("participant")
    assert set(by_person.groups) == {"web01", "lab01"}
    assert by_person["rating"].count().to_dict() == {
        "lab01": int(lab_table.loc[lab_table["phase"] != "anchor_demo", "rating"].ne("n/a").sum()),
        "web01": int(web.loc[web["phase"] != "anchor_demo", "rating"].ne("n/a").sum()),
    }
    kinds = [
        {c: str(t) if t != "category" else "category" for c, t in table.dtypes.items()}
        for table in (ratings, load_ratings(lab))
    ]
    assert kinds[0] == kinds[1]
    analysis = tmp_path / "analysis"
    analyzed = cli("analyze", str(mixed), "--out", str(analysis), "--no-figures")
    assert analyzed.returncode == 0, analyzed.stderr
    summary = json.loads((analysis / "summary.json").read_text())
    assert summary["n_participants"] == 2
    pairwise = pd.read_parquet(analysis / "pairwise_tau.parquet")
    assert set(pairwise[["participant_a", "participant_b"]].itertuples(index=False, name=None)) == {
        ("lab01", "web01")
    }
    sidecars = {
        p.parent.parent.name: json.loads(p.read_text()) for p in mixed.glob("sub-*/beh/*.json")
    }
    assert sidecars["sub-web01"]["Mode"] == "online"
    assert sidecars["sub-web01"]["Protocol"] == sidecars["sub-lab01"]["Protocol"]
    assert sidecars["sub-web01"]["StimulusSetDigest"] == sidecars["sub-lab01"]["StimulusSetDigest"]
    assert pytest.approx(60, abs=30) == sidecars["sub-web01"]["MeasuredRefreshRate"]


def test_an_interrupted_export_leaves_the_previous_one_whole(tmp_path, online_set, monkeypatch):
    from sbir_study.study.online import export

    client = make_client(tmp_path, online_set)
    fill(client, "d1")
    db = f"sqlite:///{client.db}"
    out = tmp_path / "bids"
    export.export_online(db, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    fill(client, "d2")
    calls = {"n": 0}
    original = export._write_text

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as Ctrl-C half-way through
        return original(*args, **kwargs)

    monkeypatch.setattr(export, "_write_text", failing)
    with pytest.raises(KeyboardInterrupt):
        export.export_online(db, out, overwrite=True)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_ids_as_platforms_send_them_are_kept_beside_their_labels(tmp_path, online_set):
    """participants.tsv's source_id is the id the page was given; the label is the rule's."""
    from sbir_study.foundation.checks import participant_label

    client = make_client(tmp_path, online_set)
    fill(client, "R_7-x")
    fill(client, "R 7 x")  # the same letters and digits: the rule's hashed label
    out = tmp_path / "bids"
    done = cli("export-online", "--db", f"sqlite:///{client.db}", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert_valid_bids(out)
    people = pd.read_csv(out / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    second = participant_label("R 7 x", {"R7x"})
    assert dict(zip(people["source_id"], people["participant_id"], strict=True)) == {
        "R_7-x": "sub-R7x",
        "R 7 x": f"sub-{second}",
    }
    assert set(load_ratings(out)["participant"]) == {"R7x", second}
    assert "source_id" in json.loads((out / "participants.json").read_text())


def test_the_export_records_the_protocols_scale_as_the_lab_does(tmp_path, online_set):
    # A scale whose high end is best: the sidecar said nothing of it, so analyze read the
    # online sessions as 1 = best while the lab's sessions of the same protocol said 7 = best.
    from sbir_study.foundation.scale import Scale

    keys = [str(d) for d in range(1, 8)]
    client = make_client(tmp_path, online_set, response={"keys": keys, "best": "high"})
    fill(client, "e1")
    out = tmp_path / "bids"
    done = cli("export-online", "--db", f"sqlite:///{client.db}", "--out", str(out))
    assert done.returncode == 0, done.stderr
    sidecar = json.loads(next(out.glob("sub-e1/beh/*_beh.json")).read_text())
    assert sidecar["RatingScale"] == {"Low": 1, "High": 7, "Best": "high"}
    assert sidecar["rating"]["Levels"]["7"] == "best match"
    assert load_ratings(out).attrs["scale"] == Scale(1, 7, "high")
