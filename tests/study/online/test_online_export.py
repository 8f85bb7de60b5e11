"""export-online: the BIDS dataset `analyze` reads, alone and mixed with lab sessions."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import load_ratings
from sbir_study.study.recorder import SESSION_COLUMNS
from tests.helpers import assert_valid_bids, run_main
from tests.study.online.support import END_S, make_client, report, start, write_protocol

#: A protocol's [dataset]: what dataset_description.json names.
DATASET = {"name": "Sketch ratings online (pilot)", "authors": ["Ada Lovelace", "Alan Turing"]}


def cli(*args: str) -> subprocess.CompletedProcess:
    """``sbir-study ARGS`` in this process (:func:`tests.helpers.run_main`): what the commands
    write is tested here, not the process they run in."""
    return run_main(*args)


def fill(
    client,
    label: str,
    *,
    stop_after: int | None = None,
    finish: str | None = "complete",
    details=None,
    clock: list[float] | None = None,
):
    """A participant over HTTP: rates every trial (or the first ``stop_after``); each trial
    sent 1 s after the one before on the server's ``clock`` (conftest's ``server_clock``)
    when given, as support.report times them."""
    answer, token = start(client, label, details=details or {})
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}"}
    for number, trial in enumerate(state["trials"], start=1):
        if stop_after is not None and number > stop_after:
            break
        if clock is not None:
            clock[0] += 1.0
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


def exported_labels(out: Path) -> dict[str, str]:
    """Each platform id's label in the export ``out``, as the linkage file beside it gives it."""
    table = pd.read_csv(
        out.with_name(f"{out.name}.linkage.tsv"), sep="\t", dtype=str, keep_default_na=False
    )
    return dict(
        zip(table["source_id"], table["participant_id"].str.removeprefix("sub-"), strict=True)
    )


def test_an_incomplete_design_exports_valid_bids_that_analyze_reads(
    tmp_path, online_set, server_clock
):
    client = make_client(
        tmp_path, online_set, online={"subset": "pairs", "lists": 2}, dataset=DATASET
    )
    for label, details in (
        ("a1", {"age": 30, "sex": "male"}),
        ("a2", {"handedness": "right"}),
        ("a3", {}),
        ("a4", {"age": 71}),
    ):
        fill(client, label, details=details, clock=server_clock)
    fill(client, "quit5", stop_after=6, finish="incomplete", clock=server_clock)
    start(client, "nothing6")  # consented, never rated: in participants.tsv, no files
    out = tmp_path / "bids"
    done = cli("export-online", "--db", f"sqlite:///{client.db}", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        "5 participants (4 complete)" in done.stdout and "1 sessions without a trial" in done.stdout
    )
    assert "names no authors" not in done.stderr
    # The protocol's [dataset] names the authors: no NO_AUTHORS warning.
    assert "NO_AUTHORS" not in assert_valid_bids(out)
    # assert_valid_bids runs the schema validator too: one participant listed twice in
    # participants.tsv passes the legacy validator, and the schema one refuses it.
    broken = shutil.copytree(out, tmp_path / "broken")
    listed = (broken / "participants.tsv").read_text(encoding="utf-8").splitlines()
    (broken / "participants.tsv").write_text(
        "\n".join([*listed, listed[1]]) + "\n", encoding="utf-8"
    )
    with pytest.raises(AssertionError, match="TSV_INDEX_VALUE_NOT_UNIQUE"):
        assert_valid_bids(broken)
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
    labels = exported_labels(out)
    people = pd.read_csv(out / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    people = people.set_index("participant_id")
    # Spelled as the lab session records them (M for "male"), described by the same levels.
    assert people.loc[f"sub-{labels['a1']}"].to_dict() == {
        "status": "complete",
        "age": "30",
        "sex": "M",
        "handedness": "n/a",
    }
    quit5, nothing6 = f"sub-{labels['quit5']}", f"sub-{labels['nothing6']}"
    assert people["status"][[quit5, nothing6]].tolist() == ["incomplete", "running"]
    assert not (out / nothing6).exists()
    assert people.loc[f"sub-{labels['a2']}", "handedness"] == "R"
    described = json.loads((out / "participants.json").read_text())
    assert described["sex"]["Levels"] == {"F": "female", "M": "male", "O": "other"}
    ratings = load_ratings(out)
    main = ratings[ratings["phase"] == "main"]
    # Each participant rated half of every sketch's images: missing cells, by design.
    per_person = main.groupby("participant")["image_id"].nunique()
    assert per_person.drop(labels["quit5"]).eq(4).all()
    # Kept in the lab: the server's labels, each with the id the platform sent.
    kept = tmp_path / "kept"
    done = cli(
        "export-online", "--db", f"sqlite:///{client.db}", "--out", str(kept), "--keep-platform-ids"
    )
    assert done.returncode == 0, done.stderr
    assert_valid_bids(kept)
    people = pd.read_csv(kept / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert people.to_dict("records")[0] == {
        "participant_id": "sub-a1",
        "source_id": "a1",
        "status": "complete",
        "age": "30",
        "sex": "M",
        "handedness": "n/a",
    }
    assert not kept.with_name("kept.linkage.tsv").exists()
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
    first = cli("export-online", "--db", db, "--out", str(out))
    assert first.returncode == 0
    # As run warns: the protocol names no authors, so the dataset names none.
    assert "names no authors ([dataset] authors)" in first.stderr
    again = cli("export-online", "--db", db, "--out", str(out))
    assert again.returncode == 2 and "pass --overwrite" in again.stderr
    fill(client, "b2")
    assert cli("export-online", "--db", db, "--out", str(out), "--overwrite").returncode == 0
    labels = exported_labels(out)
    assert sorted(p.name for p in out.glob("sub-*")) == sorted(f"sub-{labels[i]}" for i in labels)
    assert sorted(labels) == ["b1", "b2"]
    # The linkage file beside it is kept as the dataset is: an edited one is never replaced.
    linkage = tmp_path / "bids.linkage.tsv"
    written = linkage.read_bytes()
    linkage.write_bytes(written + b"sub-x\tx\tx\tn/a\tn/a\tn/a\n")
    refused = cli("export-online", "--db", db, "--out", str(out), "--overwrite")
    assert refused.returncode == 2 and "bids.linkage.tsv was changed" in refused.stderr
    linkage.write_bytes(written)
    # A file someone else put there: the folder is no longer only ours, never replaced.
    notes = out / "notes.txt"
    notes.write_text("my notes\n")
    refused = cli("export-online", "--db", db, "--out", str(out), "--overwrite")
    assert refused.returncode == 2 and "notes.txt" in refused.stderr
    assert notes.read_text() == "my notes\n"
    notes.unlink()
    # An edited file of the export: refused too.
    beh = next(out.glob(f"sub-{labels['b1']}/beh/*.tsv"))
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
    # No temporary folder left: the only hidden file is the linkage file's record.
    hidden = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert hidden == [".bids.linkage.tsv.sbir-study-output.json"]


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
    # What the lab session had written when it ended (a PsychoPy window under Xvfb once
    # ended in a segmentation fault, exit 139, with nothing on stderr but that).
    written = {
        str(f.relative_to(lab)): len(f.read_bytes().splitlines())
        for f in sorted(lab.rglob("*"))
        if f.is_file()
    }
    assert recorded.returncode == 0, f"{err}\nthe lab session's files (lines): {written}"
    mixed = tmp_path / "mixed"
    done = cli(
        "export-online",
        "--db",
        f"sqlite:///{data / 'online.sqlite3'}",
        "--out",
        str(mixed),
        "--with-lab",
        str(lab),
        "--keep-platform-ids",  # the labels the participants were given: web01 and lab01
    )
    assert done.returncode == 0, done.stderr
    assert_valid_bids(mixed)
    # As written: "n/a" stays text, so that the counts below count real ratings only (a
    # trial the simulated lab participant missed on a busy machine is "n/a", not a rating).
    web, lab_table = (
        pd.read_csv(
            next(mixed.glob(f"sub-{label}/beh/*.tsv")), sep="\t", dtype=str, keep_default_na=False
        )
        for label in ("web01", "lab01")
    )
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
    linkage = (tmp_path / "bids.linkage.tsv").read_bytes()
    fill(client, "d2")
    calls = {"n": 0}
    original = export.bids.write_text

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as Ctrl-C half-way through
        return original(*args, **kwargs)

    monkeypatch.setattr(export.bids, "write_text", failing)
    with pytest.raises(KeyboardInterrupt):
        export.export_online(db, out, overwrite=True)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert (tmp_path / "bids.linkage.tsv").read_bytes() == linkage
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [
        ".bids.linkage.tsv.sbir-study-output.json"  # the linkage file's record, no leftover
    ]


def test_ids_as_platforms_send_them_are_kept_beside_their_labels(tmp_path, online_set):
    """Kept in the lab (--keep-platform-ids), participants.tsv's source_id is the id the page
    was given and the label the rule's; shared, the linkage file beside the dataset gives both
    beside the dataset's label."""
    from sbir_study.foundation.checks import participant_label

    client = make_client(tmp_path, online_set)
    fill(client, "R_7-x")
    fill(client, "R 7 x")  # the same letters and digits: the rule's hashed label
    out = tmp_path / "bids"
    db = f"sqlite:///{client.db}"
    done = cli("export-online", "--db", db, "--out", str(out), "--keep-platform-ids")
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
    shared = tmp_path / "shared"
    assert cli("export-online", "--db", db, "--out", str(shared)).returncode == 0
    linkage = pd.read_csv(
        tmp_path / "shared.linkage.tsv", sep="\t", dtype=str, keep_default_na=False
    )
    assert dict(zip(linkage["source_id"], linkage["participant"], strict=True)) == {
        "R_7-x": "R7x",
        "R 7 x": second,
    }
    assert set(load_ratings(shared)["participant"]) == set(exported_labels(shared).values())
    assert "source_id" not in json.loads((shared / "participants.json").read_text())


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
    sidecar = json.loads(next(out.glob("sub-*/beh/*_beh.json")).read_text())
    assert sidecar["RatingScale"] == {"Low": 1, "High": 7, "Best": "high"}
    assert sidecar["rating"]["Levels"]["7"] == "best match"
    assert load_ratings(out).attrs["scale"] == Scale(1, 7, "high")


# --- what the server knows, filled in; who stored nothing, listed ---------------------------

BLANK_S, STIMULUS_S, ANCHOR_DEMO_S = 0.4, 0.6, 0.8


class Page:
    """One participant's page as the tests drive it: its own clock (performance.now(), s),
    late frames and pauses, and every key-down it made, kept in order."""

    def __init__(self, client, label: str, clock: list[float], session_start: float) -> None:
        self.client, self.clock, self.start = client, clock, session_start
        self.created = clock[0]
        answer, token = start(client, label, environment={"refresh_hz": 60.0})
        assert answer.status_code == 201, answer.text
        self.state = answer.json()
        self.headers = {"Authorization": f"Bearer {token}"}
        self.keys: list[dict] = []  # every key-down made, in order, once

    def rate(self, plan: list[dict]) -> None:
        """The first ``len(plan)`` trials, each ``{paused, late, press, extra}``: its pair
        ``late`` s after the previous blank's end (and ``paused`` s more: a pause screen came
        between), a rating key ``press = (key, s after onset)``, ``extra`` keys ``(code, key,
        s after the window's end)``; every third pair is taken down a frame late. As the page
        does, a trial's report carries the keys from its onset to 50 ms after its window."""
        trials, onsets, blanks = self.state["trials"], [], []
        due = self.start + BLANK_S  # one blank after the key that began the session
        for number, step in enumerate(plan, start=1):
            phase = trials[number - 1]["phase"]
            shown = ANCHOR_DEMO_S if phase == "anchor_demo" else STIMULUS_S
            onsets.append(due + step.get("paused", 0.0) + step.get("late", 0.0))
            blanks.append(onsets[-1] + shown + (1 / 60 if number % 3 == 0 else 0.0))
            due = blanks[-1] + BLANK_S
        for number, step in enumerate(plan, start=1):
            trial, onset, blank_onset = trials[number - 1], onsets[number - 1], blanks[number - 1]
            following = plan[number] if number < len(plan) else {"paused": 1.0}
            # The next screen: the next pair, or (before a pause, after the last) a message.
            next_onset = onsets[number] if not following.get("paused") else blank_onset + BLANK_S
            events = []
            if step.get("press"):
                key, after = step["press"]
                events.append({"code": f"Digit{key}", "key": key, "t": onset + after})
            events += [
                {"code": c, "key": k, "t": next_onset + dt} for c, k, dt in step.get("extra", ())
            ]
            carried = [e for e in self.keys if e["t"] >= onset]
            self.keys += events
            rated = trial["phase"] != "anchor_demo" and step.get("press")
            body = {
                "sketch_id": trial["sketch_id"],
                "image_id": trial["image_id"],
                "onset": onset,
                "blank_onset": blank_onset,
                "next_onset": next_onset,
                "session_start": self.start,
                "frames": [onset, blank_onset, next_onset],
                "events": carried + events,
                "paused_before": step.get("paused", 0.0),
                "rating": int(step["press"][0]) if rated else None,
            }
            self.clock[0] = self.created + (next_onset - self.start) + 0.2  # as it is sent
            put = self.client.put(
                f"/api/sessions/{self.state['session_id']}/trials/{number}",
                json=body,
                headers=self.headers,
            )
            assert put.status_code == 201, put.text

    def finish(self, status: str) -> None:
        done = self.client.post(
            f"/api/sessions/{self.state['session_id']}/finish",
            json={"status": status},
            headers=self.headers,
        )
        assert done.status_code == 200, done.text


def stored_trials(db: Path) -> pd.DataFrame:
    """The trials as the database holds them, with their session's label and trial order,
    read with sqlite3 (not the server's code)."""
    import sqlite3

    with sqlite3.connect(db) as connection:
        return pd.read_sql_query(
            "SELECT s.participant, o.trial_order, t.* FROM trials t "
            "JOIN sessions s ON s.id = t.session_id "
            "JOIN session_orders o ON o.session_id = s.id ORDER BY s.participant, t.trial",
            connection,
        )


def lab_timeline(trials: pd.DataFrame) -> list[float]:
    """onset_planned as the lab's session plans it: its Timeline, driven as the lab's loop
    drives it (one blank after the key that began the session; a waiting screen answered
    moves the timeline by the trial's paused_before)."""
    from sbir_study.study.schedule import Timeline

    timeline = Timeline(planned=BLANK_S)
    planned = []
    for row in trials.itertuples():
        if row.paused_before:  # a pause answered so that the pair comes paused_before late
            timeline.resume(timeline.planned + row.paused_before - BLANK_S, BLANK_S)
        shown = ANCHOR_DEMO_S if row.phase == "anchor_demo" else STIMULUS_S
        onset, paused = timeline.begin_pair(shown, BLANK_S)
        assert paused == pytest.approx(row.paused_before)
        planned.append(onset)
    return planned


def test_the_export_fills_what_the_server_knows_and_lists_who_stored_nothing(
    tmp_path, online_set, server_clock
):
    from sbir_study.study.online import export
    from sbir_study.study.recorder import KEY_LOG_COLUMNS, SessionRecorder
    from tests.study.online.support import ADMIN_TOKEN

    client = make_client(
        tmp_path,
        online_set,
        timing={"stimulus_s": STIMULUS_S, "blank_s": BLANK_S, "anchor_demo_s": ANCHOR_DEMO_S},
        online={"dropout_after_s": 60.0},
        dataset=DATASET,
    )
    clock = server_clock
    Page(client, "silent1", clock, 3.0)  # started, never rated: drops out
    Page(client, "gone2", clock, 3.0).rate([{}])  # one trial, then silent: drops out
    clock[0] += 61.0
    page = Page(client, "full3", clock, 812.25)
    # A key without a PsychoPy name (no code) in the blank, and one just after the window:
    # sent with its trial and again with the next one.
    extra = {2: [("", "é", -0.1)], 7: [("KeyX", "x", 0.04)]}
    page.rate(
        [
            {
                "paused": 2.5 if number == 5 else 0.0,  # a pause before trial 5
                "late": 0.004,  # each pair 4 ms after the blank's end: the page falls behind
                "press": None if number == 6 else (str(1 + number % 7), 0.3),
                "extra": extra.get(number, ()),
            }
            for number in range(1, len(page.state["trials"]) + 1)
        ]
    )
    page.finish("complete")
    quit4 = Page(client, "quit4", clock, 0.5)
    quit4.rate([{"press": ("3", 0.2)}, {"press": ("4", 0.9)}])
    quit4.finish("incomplete")
    Page(client, "new5", clock, 1.0)  # just started: running, nothing stored yet

    out = tmp_path / "bids"
    # The server's labels, to be compared with the status page's and the stored trials.
    summary = export.export_online(f"sqlite:///{client.db}", out, keep_platform_ids=True)
    assert (summary.participants, summary.skipped_empty) == (3, 2)
    stored = stored_trials(client.db)

    # participants.tsv: everyone who started, with the status page's status.
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    listed = client.get("/admin/participants.csv", headers=admin)
    status_table = pd.read_csv(io.StringIO(listed.text), dtype=str, keep_default_na=False)
    people = pd.read_csv(out / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert dict(zip(people["participant_id"], people["status"], strict=True)) == {
        f"sub-{p}": s
        for p, s in zip(status_table["participant"], status_table["status"], strict=True)
    }
    counts = client.get("/api/admin/status", headers=admin).json()["participants"]
    assert counts["started"] == len(people)
    assert {k: v for k, v in counts.items() if k != "started"} == {
        k: int((people["status"] == k).sum()) for k in counts if k != "started"
    }
    assert set(people["status"]) == {"dropped_out", "complete", "incomplete", "running"}
    # Files only for those who stored a trial; the others are in participants.tsv only.
    assert sorted(p.name for p in out.glob("sub-*")) == sorted(
        f"sub-{p}" for p in set(stored["participant"])
    )
    assert "status" in json.loads((out / "participants.json").read_text())

    # Each row: the files of its pair from the session's trial order, the stored values,
    # onset_planned on the lab's timeline; onset_monotonic n/a.
    for label, expected in stored.groupby("participant"):
        path = out / f"sub-{label}" / "beh" / f"sub-{label}_task-sbirtest_beh.tsv"
        table = pd.read_csv(path, sep="\t")
        order = pd.DataFrame(
            json.loads(expected["trial_order"].iloc[0]),
            columns=[
                "trial",
                "phase",
                "sketch_id",
                "image_id",
                "anchor_rating",
                "sketch_file",
                "image_file",
            ],
        ).set_index("trial")
        assert table["sketch_file"].tolist() == order.loc[table["trial"], "sketch_file"].tolist()
        assert table["image_file"].tolist() == order.loc[table["trial"], "image_file"].tolist()
        assert (table["sketch_file"].map(lambda f: (online_set / f).is_file())).all()
        for column in ("onset", "stim_duration", "blank_duration", "paused_before", "rt"):
            assert np.allclose(table[column], expected[column], atol=5e-7, equal_nan=True), column
        assert table["rating"].equals(expected["rating"].reset_index(drop=True))
        assert table["onset_monotonic"].isna().all()
        assert np.allclose(table["onset_planned"], lab_timeline(expected), atol=5e-7)
    full = pd.read_csv(next(out.glob("sub-full3/beh/*.tsv")), sep="\t")
    # The page fell 4 ms further behind each trial, and a frame at every third blank.
    lag = (full["onset"] - full["onset_planned"]).to_numpy()
    frames = np.array([(k - 1) // 3 for k in full["trial"]]) / 60
    assert np.allclose(lag, 0.004 * full["trial"] + frames, atol=5e-6)

    # The key log: every key-down the page made, once, in order, on the session's clock.
    log = pd.read_csv(
        out / "sourcedata" / "sub-full3" / "sub-full3_task-sbirtest_keys.tsv",
        sep="\t",
        keep_default_na=False,
        na_values=["n/a"],
    )
    assert tuple(log.columns[:3]) == KEY_LOG_COLUMNS
    assert list(zip(log["code"].replace({np.nan: ""}), log["browser_key"], strict=True)) == [
        (e["code"], e["key"]) for e in page.keys
    ]
    assert np.allclose(log["page_time"], [e["t"] for e in page.keys], atol=5e-7)
    assert np.allclose(log["session_time"], log["page_time"] - 812.25, atol=5e-6)
    assert log["onset_monotonic"].isna().all()
    # PsychoPy's name of each key; a key without one (é, sent with no code) is n/a.
    assert log["key"].fillna("n/a").tolist() == [
        "n/a" if e["key"] == "é" else e["key"] for e in page.keys
    ]
    sent = {
        (e["code"], e["key"], e["t"])
        for events in stored.loc[stored["participant"] == "full3", "events"]
        for e in json.loads(events)
    }
    assert sent == {(e["code"], e["key"], e["t"]) for e in page.keys}

    # The lab's files of the same design read with the same columns and dtypes.
    lab = tmp_path / "lab"
    rows = full.astype(object).where(full.notna(), None).to_dict("records")
    recorder = SessionRecorder.open(
        lab,
        "lab1",
        task="sbirtest",
        session={},
        trial_order=full[["trial", "phase", "sketch_id", "image_id"]].values.tolist(),
    )
    for number, row in enumerate(rows):
        row.update(participant="lab1", onset_monotonic=5000.0 + row["onset"])
        recorder.append(
            row,
            [
                (k, 5000.0 + s, s)
                for k, s in log.loc[log["trial"] == number + 1, ["key", "session_time"]]
                .fillna("x")
                .itertuples(index=False)
            ],
        )
    recorder.finish("complete")
    lab_table = pd.read_csv(next(lab.glob("sub-lab1/beh/*.tsv")), sep="\t")
    assert list(lab_table.columns) == list(full.columns)
    # (onset_monotonic, n/a on every online row, reads as the lab's numbers do: float)
    assert {c: t for c, t in full.dtypes.items() if t != lab_table[c].dtype} == {}
    lab_log = pd.read_csv(recorder.key_log, sep="\t")
    assert list(lab_log.columns) == list(log.columns[:3])
    assert (
        lab_log.dtypes.drop("onset_monotonic")
        == log[list(lab_log.columns)].dtypes.drop("onset_monotonic")
    ).all()

    # With the lab's dataset copied in: its key log too, byte for byte; its status n/a.
    mixed = tmp_path / "mixed"
    export.export_online(f"sqlite:///{client.db}", mixed, with_lab=[lab], keep_platform_ids=True)
    copied = mixed / recorder.key_log.relative_to(lab)
    assert copied.read_bytes() == recorder.key_log.read_bytes()
    both = pd.read_csv(mixed / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert both.set_index("participant_id")["status"]["sub-lab1"] == "n/a"

    # dataset_description.json: the protocol's [dataset] (the validator's view of it: above).
    description = json.loads((out / "dataset_description.json").read_text())
    assert (description["Name"], description["Authors"]) == (DATASET["name"], DATASET["authors"])
    assert set(load_ratings(out)["participant"]) == {"gone2", "full3", "quit4"}


# --- the two rules of the export, on generated sessions ----------------------------------


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["anchor_demo", "main", "anchor_repeat"]),
            st.one_of(st.just(0.0), st.floats(0.001, 600.0)),
            st.sampled_from([True, True, True, False]),  # stored, mostly
        ),
        min_size=1,
        max_size=40,
    )
)
def test_planned_onsets_are_the_lab_timelines_until_a_trial_is_missing(trials):
    """Against the lab's own Timeline; after a trial that is not stored, n/a."""
    from sbir_study.study.online.export import planned_onsets

    order = [[k, phase] for k, (phase, _, _) in enumerate(trials, start=1)]
    kept = [(k, paused) for k, (_, paused, stored) in enumerate(trials, start=1) if stored]
    group = pd.DataFrame(kept, columns=["trial", "paused_before"])
    timing = {"stimulus_s": STIMULUS_S, "blank_s": BLANK_S, "anchor_demo_s": ANCHOR_DEMO_S}
    got = planned_onsets(group, order, timing)
    first_gap = next((k for k, (_, _, stored) in enumerate(trials, start=1) if not stored), None)
    whole = [t for t in group.itertuples() if first_gap is None or t.trial < first_gap]
    expected = lab_timeline(
        pd.DataFrame(
            {
                "phase": [trials[t.trial - 1][0] for t in whole],
                "paused_before": [t.paused_before for t in whole],
            }
        )
    )
    assert got[: len(whole)] == pytest.approx(expected, abs=1e-9)
    assert got[len(whole) :] == [None] * (len(group) - len(whole))


SCREENS = ("instructions", "message", "pause", "quit", "trial", "saving")


@settings(max_examples=40, deadline=None)
@given(
    durations=st.lists(st.floats(0.1, 5.0), min_size=1, max_size=12),
    gaps=st.lists(st.sampled_from([0.0, 0.0, 0.03, 0.5, 4.0]), min_size=12, max_size=12),
    start=st.floats(-1000.0, 1000.0),
    finished=st.booleans(),
    named=st.booleans(),
    data=st.data(),
)
def test_the_key_log_holds_each_key_the_page_sent_once_in_order(
    durations, gaps, start, finished, named, data
):
    """The page sends with each trial the keys from its onset to 50 ms after its window, and
    those of the screens before it since the previous trial's window (a screen between two
    pairs: ``gaps``); with the finish, those after the last window. The log holds each key
    once, in order, with the first report that carried it, on the session's clock, in cells a
    TSV can hold. Each key says the screen on view when it went down, as the page named it
    (``named``; a page of an earlier version named none for a window's keys: ``trial``)."""
    from sbir_study.study.online import export
    from sbir_study.study.online.browser_keys import browser_key_name
    from sbir_study.study.online.export import key_log

    # Each pair's onset follows the previous window's end after its screen's gap.
    onsets, ends, at = [], [], start
    for duration, gap in zip(durations, gaps, strict=False):
        onsets.append(at + gap)
        ends.append(at + gap + duration)
        at = ends[-1]
    # Keys anywhere, and near the windows' ends, where one is sent with two reports.
    near_an_end = st.sampled_from(ends).flatmap(lambda end: st.floats(end - 0.1, end + 0.1))
    presses = data.draw(
        st.lists(
            st.tuples(
                st.one_of(st.floats(start - 5.0, at + 5.0), near_an_end),
                st.sampled_from(["Digit3", "Numpad7", "KeyP", "Escape", "Space", ""]),
                st.text(max_size=4),
                st.sampled_from(SCREENS),
            ),
            max_size=40,
            unique_by=lambda p: p[0],
        ),
        label="presses",
    )
    keys = [{"code": c, "key": k, "t": t, "screen": screen} for t, c, k, screen in sorted(presses)]
    plain = [e if named else {"code": e["code"], "key": e["key"], "t": e["t"]} for e in keys]
    rows, carrier = [], {}  # key's index: the first report that carried it, and its screen
    for number, (onset, end) in enumerate(zip(onsets, ends, strict=True), start=1):
        since = ends[number - 2] if number > 1 else -math.inf  # what the page still holds
        screens = [k for k, e in enumerate(keys) if since <= e["t"] < onset]
        window = [k for k, e in enumerate(keys) if onset <= e["t"] < end + 0.05]
        for k in screens:
            carrier.setdefault(k, (number, keys[k]["screen"]))
        for k in window:
            carrier.setdefault(k, (number, keys[k]["screen"] if named else "trial"))
        rows.append(
            (
                number,
                json.dumps([plain[k] for k in window]),
                json.dumps([keys[k] for k in screens]),
                onset,
                onset - start,
            )
        )
    group = pd.DataFrame(rows, columns=["trial", "events", "screen_events", "page_onset", "onset"])
    final = None
    if finished:
        left = [k for k, e in enumerate(keys) if e["t"] >= ends[-1]]
        final = {"session_start": start, "events": [keys[k] for k in left]}
        for k in left:
            carrier.setdefault(k, (None, keys[k]["screen"]))
    log = key_log(group, final)
    order = sorted(carrier)  # in time: the keys are
    sent = [keys[k] for k in order]
    # Every key is sent, but for those after the last window of a session never finished.
    after = sum(e["t"] >= ends[-1] + 0.05 for e in keys)
    assert len(sent) == len(keys) - (0 if finished else after)
    assert log["page_time"].tolist() == [e["t"] for e in sent]
    assert log["session_time"].to_numpy() == pytest.approx([e["t"] - start for e in sent])
    named = [k if isinstance(k, str) else None for k in log["key"]]  # n/a in the file
    assert named == [browser_key_name(e["code"], e["key"]) for e in sent]
    trials = [None if pd.isna(t) else int(t) for t in log["trial"]]
    assert list(zip(trials, log["screen"], strict=True)) == [carrier[k] for k in order]
    # As the file gives it: the trial a whole number (not 3.000000), n/a for the finish's.
    lines = export._tsv(log).splitlines()
    column = lines[0].split("\t").index("trial")
    cells = [line.split("\t")[column] for line in lines[1:]]
    assert cells == ["n/a" if t is None else str(t) for t in trials]
    for column in ("code", "browser_key"):
        cells = log[column].dropna()
        assert all(cell.isprintable() and "\t" not in cell for cell in cells)
    assert log["onset_monotonic"].isna().all()
