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


def rate(
    client,
    clock,
    label: str,
    *,
    stop_after=None,
    finish="complete",
    skip_every=4,
    jitter=0.0,
    press_s=0.2,
):
    """A participant over HTTP: every ``skip_every``-th rated trial left without a key, the
    others rated ``press_s`` after the onset, the stimulus shown up to 2 ``jitter`` and the
    blank ``jitter`` / 2 seconds longer than planned; each trial sent as it ends on the
    server's ``clock`` (conftest's ``server_clock``)."""
    answer, token = start(client, label)
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}"}
    onset = 6.0  # each trial begins when the one before ended, as on the page
    for number, trial in enumerate(state["trials"], start=1):
        if stop_after is not None and number > stop_after:
            break
        rated = trial["phase"] != "anchor_demo"
        presses = [] if (not rated or number % skip_every == 0) else [("3", press_s)]
        shown = 0.6 + jitter * (number % 3)
        body = report(
            trial, number, presses, stimulus_s=shown, blank_s=0.4 + jitter / 2, onset=onset
        )
        clock[0] += body["next_onset"] - onset
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
    # The first rating key of each trial, from its presses ("rating@seconds", in time order).
    first = trials["presses"].fillna("").str.extract(r"^[0-9]+@([0-9.]+)")[0].astype(float)
    trials = trials.assign(early=first < 0.150)
    rows = []
    for s in sessions.sort_values(["created_at", "participant"]).itertuples():
        mine = trials[trials["session_id"] == s.id]
        rated = mine[mine["phase"] != "anchor_demo"]
        ended = s.last_seen_at if pd.isna(s.finished_at) else s.finished_at
        wall = round(ended - s.created_at, 3)
        early = rated["early"].mean() if len(rated) else None
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
                "wall_time_s": wall,
                # 0.6 s and 0.4 s a trial, as planned; a real page at most 10 % shorter.
                "planned_time_s": round(1.0 * len(mine), 3),
                "rt_median_s": round(rated["rt"].median(), 4)
                if rated["rt"].notna().any()
                else None,
                "early_key_share": None if early is None else round(early, 4),
                "n_catch_failed": 0,
                "flag": ";".join(
                    name
                    for name, up in (
                        ("too_fast", wall < 0.9 * len(mine) - 1e-9),
                        ("early_keys", early is not None and early > 0.1),
                    )
                    if up
                ),
            }
        )
    return pd.DataFrame(rows)


def read_csv(text: str) -> pd.DataFrame:
    return pd.read_csv(
        io.StringIO(text),
        dtype={
            "participant": str,
            "source_id": str,
            "completion_code": str,
            "refusals": str,
            "flag": str,
        },
        keep_default_na=False,
        na_values={
            "timing_error_median_ms": [""],
            "rt_median_s": [""],
            "early_key_share": [""],
        },
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
    rate(client, clock, "a1", jitter=0.017)
    clock[0] += 1.0
    rate(client, clock, "b2", skip_every=3)
    clock[0] += 1.0
    rate(client, clock, "c3", stop_after=5, finish="incomplete", jitter=0.033, press_s=0.1)
    clock[0] += 1.0
    rate(client, clock, "gone4", stop_after=3, finish=None)
    start(client, "none5")  # consented, nothing stored
    clock[0] += 30.0
    rate(client, clock, "now6", stop_after=2, finish=None)
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
    assert got["flag"].tolist() == ["", "", "early_keys", "", "", ""]
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
        "timing_error_median_ms,started,ended,completion_code,trials_refused,refusals,"
        "wall_time_s,planned_time_s,rt_median_s,early_key_share,n_catch_failed,flag"
    ]


def test_a_participant_without_trials_has_no_timing_error(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    start(client, "x1")
    got = read_csv(client.get("/admin/participants.csv", headers=ADMIN).text)
    assert got["trials_stored"].tolist() == [0] and got["missed_windows"].tolist() == [0]
    assert got["timing_error_median_ms"].isna().all() and got["ended"].tolist() == [""]
