"""The experimenter's participant table (``/admin`` and ``/admin/participants.csv``) against
the database's own tables, read and summarised with pandas independently of the server."""

from __future__ import annotations

import base64
import io
import sqlite3
import time

import pandas as pd

from tests.study.online.support import ADMIN_TOKEN, make_client, report, start

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def rate(client, label: str, *, stop_after=None, finish="complete", skip_every=4, jitter=0.0):
    """A participant over HTTP: every ``skip_every``-th rated trial left without a key, the
    stimulus shown up to 2 ``jitter`` and the blank ``jitter`` / 2 seconds longer than planned."""
    answer, token = start(client, label)
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}"}
    onset = 6.0  # each trial begins when the one before ended, as on the page
    for number, trial in enumerate(state["trials"], start=1):
        if stop_after is not None and number > stop_after:
            break
        rated = trial["phase"] != "anchor_demo"
        presses = [] if (not rated or number % skip_every == 0) else [("3", 0.2)]
        shown = 0.6 + jitter * (number % 3)
        body = report(
            trial, number, presses, stimulus_s=shown, blank_s=0.4 + jitter / 2, onset=onset
        )
        onset = body["next_onset"]
        put = client.put(
            f"/api/sessions/{state['session_id']}/trials/{number}", json=body, headers=headers
        )
        assert put.status_code == 201, put.text
    if finish:
        done = client.post(
            f"/api/sessions/{state['session_id']}/finish", json={"status": finish}, headers=headers
        )
        assert done.status_code == 200, done.text
    return state


def expected_table(db, protocol, dropout_after_s: float, now: float) -> pd.DataFrame:
    """The participant table from the database's tables with pandas alone."""
    with sqlite3.connect(db) as connection:
        sessions = pd.read_sql("SELECT * FROM sessions", connection)
        trials = pd.read_sql("SELECT * FROM trials", connection)
    # The test protocol (support.write_protocol) plans 0.6 s for every pair, 0.4 s of blank.
    assert protocol.timing.stimulus_s == protocol.timing.anchor_demo_s == 0.6
    planned = 0.6
    errors = pd.concat(
        [
            trials.assign(e=(trials["stim_duration"] - planned).abs() * 1000)[["session_id", "e"]],
            trials.assign(e=(trials["blank_duration"] - 0.4).abs() * 1000)[["session_id", "e"]],
        ]
    )
    rows = []
    for s in sessions.sort_values(["created_at", "participant"]).itertuples():
        mine = trials[trials["session_id"] == s.id]
        status = s.status
        if status == "running" and s.last_seen_at < now - dropout_after_s:
            status = "dropped_out"
        errs = errors.loc[errors["session_id"] == s.id, "e"]
        rows.append(
            {
                "participant": s.participant,
                "source_id": s.source_id,
                "list": s.list_index + 1,
                "status": status,
                "trials_stored": len(mine),
                "trials_planned": s.n_trials,
                "missed_windows": int(
                    (mine["rating"].isna() & (mine["phase"] != "anchor_demo")).sum()
                ),
                "timing_error_median_ms": round(errs.median(), 3) if len(errs) else None,
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.created_at)),
                "ended": ""
                if pd.isna(s.finished_at)
                else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.finished_at)),
                "completion_code": "DONE42" if status == "complete" else "",
                "trials_refused": 0,
                "refusals": "",
            }
        )
    return pd.DataFrame(rows)


def read_csv(text: str) -> pd.DataFrame:
    return pd.read_csv(
        io.StringIO(text),
        dtype={"participant": str, "source_id": str, "completion_code": str, "refusals": str},
        keep_default_na=False,
        na_values={"timing_error_median_ms": [""]},
    )


def test_the_participant_table_says_what_the_database_holds(tmp_path, online_set, server_clock):
    clock = server_clock
    client = make_client(
        tmp_path,
        online_set,
        online={
            "completion_code": "DONE42",
            "subset": "pairs",
            "lists": 2,
            "dropout_after_s": 60.0,
        },
    )
    rate(client, "a1", jitter=0.017)
    clock[0] += 1.0
    rate(client, "b2", skip_every=3)
    clock[0] += 1.0
    rate(client, "c3", stop_after=5, finish="incomplete", jitter=0.033)
    clock[0] += 1.0
    rate(client, "gone4", stop_after=3, finish=None)
    start(client, "none5")  # consented, nothing stored
    clock[0] += 30.0
    rate(client, "now6", stop_after=2, finish=None)
    clock[0] += 40.0  # gone4 and none5 silent for over 60 s: dropped out; now6 not yet

    answer = client.get("/admin/participants.csv", headers=ADMIN)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    got = read_csv(answer.text)
    expected = expected_table(client.db, client.study.protocol, 60.0, clock[0])
    assert got["status"].tolist() == [
        "complete",
        "complete",
        "incomplete",
        "dropped_out",
        "dropped_out",
        "running",
    ]
    assert got["missed_windows"].gt(0).any() and got["timing_error_median_ms"].gt(1.0).any()
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)

    # The status page shows the same rows, and the same numbering of the lists.
    page = client.get("/admin", headers=ADMIN).text
    shown = pd.read_html(io.StringIO(page), attrs={"id": "participants"})[0]
    assert shown.columns.tolist() == got.columns.tolist()
    assert shown["participant"].astype(str).tolist() == got["participant"].tolist()
    assert shown["list"].tolist() == got["list"].tolist()
    assert shown["missed_windows"].tolist() == got["missed_windows"].tolist()


def test_the_participant_table_needs_the_admin_token(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    assert client.get("/admin/participants.csv").status_code == 401
    wrong = {"Authorization": "Bearer wrong"}
    assert client.get("/admin/participants.csv", headers=wrong).status_code == 401
    basic = base64.b64encode(f"anyone:{ADMIN_TOKEN}".encode()).decode()
    answer = client.get("/admin/participants.csv", headers={"Authorization": f"Basic {basic}"})
    assert answer.status_code == 200
    assert answer.text.splitlines() == [
        "participant,source_id,list,status,trials_stored,trials_planned,missed_windows,"
        "timing_error_median_ms,started,ended,completion_code,trials_refused,refusals"
    ]


def test_a_participant_without_trials_has_no_timing_error(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    start(client, "x1")
    got = read_csv(client.get("/admin/participants.csv", headers=ADMIN).text)
    assert got["trials_stored"].tolist() == [0] and got["missed_windows"].tolist() == [0]
    assert got["timing_error_median_ms"].isna().all() and got["ended"].tolist() == [""]
