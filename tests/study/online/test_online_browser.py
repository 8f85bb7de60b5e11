"""The browser session in headless Chromium against a real `sbir-study serve` on 127.0.0.1.

A simulated participant presses keys through the DevTools protocol at known times of the
page's clock; what the server stored must follow the lab session's rule exactly (every
rating and press list), and the recorded times must match the sent ones.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import statistics
import time

import httpx
import pandas as pd
import pytest

from sbir_study.study.online.browser_keys import browser_key_name
from sbir_study.study.texts import Texts, fill
from tests.study.online.browser_participant import KEYS, Participant, summary
from tests.study.online.support import ADMIN_TOKEN, END_S, free_port, write_protocol

SCALE_KEYS = {str(k): k for k in range(1, 8)} | {f"num_{k}": k for k in range(1, 8)}


def stored_trials(data) -> pd.DataFrame:
    with sqlite3.connect(data / "online.sqlite3") as connection:
        return pd.read_sql("SELECT * FROM trials ORDER BY session_id, trial", connection)


def stored_sessions(data) -> pd.DataFrame:
    with sqlite3.connect(data / "online.sqlite3") as connection:
        return pd.read_sql("SELECT * FROM sessions", connection)


#: A key logger of the test's own on the page: each key-down's time stamp, the one the
#: page's own listener reads from the same event (``event.timeStamp``).
KEY_LOGGER = (
    "window.testKeys = []; window.addEventListener('keydown', (e) => { if (!e.repeat) "
    "window.testKeys.push({code: e.code, t: e.timeStamp / 1000}); }, true);"
)


def stall(participant, *, at: float, ms: int) -> None:
    """Keep the page's main thread busy for ``ms`` from ``at`` on its clock (a busy laptop):
    no frame is drawn and no key is taken meanwhile."""
    participant.driver.execute_script(
        "const due = arguments[0] * 1000; setTimeout(() => { const end = performance.now() + "
        "arguments[1]; while (performance.now() < end) {} }, Math.max(0, due - performance.now()))",
        at,
        ms,
    )


def stall_at_step_end(participant, *, trial: int, ms: int) -> None:
    """Keep the page's main thread busy for ``ms`` from the instant trial ``trial``'s step
    ends (when the page sets that trial ``pending``, 2.5 frames before its blank's due end,
    so as to flip the next pair on time), inside that frame: the blank stays on screen and
    no later frame begins meanwhile. (A stall set by the clock alone must fall in those 2.5
    frames: on a loaded machine its timer fired after the next pair was flipped.)"""
    participant.driver.execute_script(
        "const s = window.sbir.session, trial = arguments[0], ms = arguments[1];"
        "let value = s.pending, done = false;"
        "Object.defineProperty(s, 'pending', {configurable: true, get: () => value,"
        " set: (v) => { value = v; if (!done && v && v.trial.trial === trial) { done = true;"
        " const end = performance.now() + ms; while (performance.now() < end) {} } }});",
        trial,
        ms,
    )


def stamped_presses(participant) -> list[tuple]:
    """(press, the page's stamp of it) for every key sent since :data:`KEY_LOGGER` was
    installed, each stamp checked to lie while its DevTools command ran: between sending
    and return (1 ms for the clock calibration)."""
    stamps = participant.driver.execute_script("return window.testKeys")
    presses = participant.presses[-len(stamps) :] if stamps else []
    assert [KEYS[p.name][1] for p in presses] == [s["code"] for s in stamps]
    for press, stamp in zip(presses, stamps, strict=True):
        sent, returned = press.page_time, press.page_time + press.sent_within
        assert sent - 0.001 <= stamp["t"] <= returned + 0.001, (press, stamp)
    return [(press, stamp["t"]) for press, stamp in zip(presses, stamps, strict=True)]


def expected_records(stamped, windows) -> dict[int, list[tuple[int, float, float]]]:
    """Trial -> [(rating, its stamp and its sending, in seconds from onset)] of the rating
    presses the page stamped inside its window.

    Computed here from the page's stamps and the windows it reports, independently of the
    server's scoring: the lab rule (a press counts for the trial whose [onset, window_end)
    holds it, by the time the key was stamped; a key sent just before a window closes and
    stamped after it, on a busy machine, belongs to the next).
    """
    expected: dict[int, list[tuple[int, float, float]]] = {w["trial"]: [] for w in windows}
    for press, stamp in stamped:
        if press.name not in SCALE_KEYS:
            continue
        for window in windows:
            if window["onset"] <= stamp < window["window_end"]:
                expected[window["trial"]].append(
                    (
                        SCALE_KEYS[press.name],
                        stamp - window["onset"],
                        press.page_time - window["onset"],
                    )
                )
    return expected


def past_the_intake(query, tmp_path, online_set, start_server, browser, **tables):
    """A browser participant opened with ``query`` on a fresh `serve` of a protocol with
    ``tables`` (anchoring off unless given), consent and details done: (participant, the
    server's data folder)."""
    tables.setdefault("anchoring", {"enabled": False, "repeat": False})
    protocol = write_protocol(tmp_path, **tables)
    data = tmp_path / "data"
    server = start_server(protocol, online_set, data)
    participant = Participant(browser(), server.url)
    participant.open(query)
    participant.intake({})
    return participant, data


def run_trials(participant: Participant, trials: list[dict], plan, *, first_rated_space=True):
    """Go through ``trials``: ``plan(trial, onset, window_end)`` presses keys for each."""
    seen_rated = False
    for trial in trials:
        if trial["phase"] != "anchor_demo" and not seen_rated:
            seen_rated = True
            if first_rated_space and trial["trial"] != trials[0]["trial"]:
                participant.start_trials()
        shown = participant.onset_of(trial["trial"])
        plan(trial, shown["onset"])


def test_browser_participant_every_rating_exact_and_times_measured(
    online_set, tmp_path, start_server, browser
):
    protocol = write_protocol(tmp_path, online={"completion_code": "SBIR2011"})
    data = tmp_path / "data"
    server = start_server(protocol, online_set, data)
    participant = Participant(browser(), server.url)
    participant.open("?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=study77&SESSION_ID=s99")
    participant.intake({"age": 34, "sex": "female", "handedness": "left"})
    participant.driver.execute_script(KEY_LOGGER)
    participant.start_trials()
    trials = participant.session()["state"]["trials"]
    stimulus_s, blank_s = 0.6, 0.4
    window = stimulus_s + blank_s
    rated = [t for t in trials if t["phase"] != "anchor_demo"]
    # Several presses per trial, changed ratings, the keypad, presses during the blank, a
    # press 40 ms before the window closes, one 50 ms after it (it belongs to the next
    # pair), a trial without a press, a pause asked for mid-trial.
    plans = {
        rated[0]["trial"]: [("3", 0.15), ("5", 0.42)],
        rated[1]["trial"]: [("num_2", 0.2), ("6", stimulus_s + 0.1)],
        rated[2]["trial"]: [],
        rated[3]["trial"]: [("7", 0.3), ("1", window - 0.04)],
        rated[4]["trial"]: [("4", 0.25), ("2", window + 0.05)],
        rated[5]["trial"]: [("5", 0.2), ("p", 0.35), ("3", stimulus_s + 0.2)],
        rated[6]["trial"]: [("1", 0.1), ("2", 0.2), ("3", 0.3), ("num_4", 0.5)],
    }
    anchor = trials[1]
    plans[anchor["trial"]] = [("6", 0.3)]  # pressed while an anchor is shown: listed, not a rating
    paused_after = rated[5]["trial"]

    def plan(trial, onset):
        for name, at in plans.get(trial["trial"], [("4", 0.3)]):
            participant.key_at(name, onset + at, trial["trial"])
        if trial["trial"] == paused_after:
            participant.wait(lambda: participant.phase() == "pause", what="the pause screen")
            time.sleep(0.5)
            participant.key("space")

    run_trials(participant, trials, plan)
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    finished = participant.driver.execute_script("return window.sbir.finished")
    assert finished["completion"]["code"] == "SBIR2011"
    code = participant.driver.find_element("id", "sbir-code").text
    assert code == "SBIR2011"
    # The end page says what is true: no key closes a browser's window, the participant may.
    ending = participant.driver.execute_script("return document.body.innerText")
    assert ending.split() == (
        "Thank you! The session is complete. Your completion code: SBIR2011 "
        "You may close this window now.".split()
    )
    windows = participant.driver.execute_script("return window.sbir.session.onsets")

    stored = stored_trials(data).set_index("trial")
    assert stored.index.tolist() == [t["trial"] for t in trials]
    stamped = stamped_presses(participant)
    expected = expected_records(stamped, windows)
    page_onset = {w["trial"]: w["onset"] for w in windows}
    rt_errors, press_errors, send_times = [], [], []
    sends = {round(p.page_time, 9): p.sent_within for p, _ in stamped}
    for trial in trials:
        number = trial["trial"]
        row = stored.loc[number]
        presses = expected[number]
        listed = [] if pd.isna(row["presses"]) else [p.split("@") for p in row["presses"].split()]
        assert [int(r) for r, _ in listed] == [r for r, _, _ in presses], (number, row.to_dict())
        assert row["n_presses"] == len(presses)
        if trial["phase"] == "anchor_demo" or not presses:
            assert pd.isna(row["rating"]) and pd.isna(row["rt"]), (number, row.to_dict())
            continue
        assert row["rating"] == presses[-1][0], (number, row.to_dict())
        rt_errors.append(row["rt"] - presses[-1][2])
        for (_, recorded), (_, stamp, sent) in zip(listed, presses, strict=True):
            # Each press as the page stamped it (0.05 ms for the 4 decimals of the presses
            # column), which stamped_presses found to lie while its DevTools command ran.
            assert abs(float(recorded) - stamp) <= 0.0001, (number, recorded, stamp)
            press_errors.append(float(recorded) - sent)
            send_times.append(sends[round(sent + page_onset[number], 9)])
        assert row["page_onset"] == page_onset[number]
    assert stored.loc[rated[2]["trial"], "n_presses"] == 0
    assert stored.loc[anchor["trial"], "n_presses"] == 1
    # The pause: after the window of the trial it was asked in, recorded before the next one.
    after = stored.index[stored.index.get_loc(paused_after) + 1]
    assert stored.loc[after, "paused_before"] > 0.45
    assert (stored.drop(index=[after, rated[0]["trial"]])["paused_before"] == 0).all()

    rt_summary, press_summary = summary(rt_errors), summary(press_errors)
    stim_planned = [stimulus_s if t["phase"] != "anchor_demo" else 0.6 for t in trials]
    stim_errors = (stored["stim_duration"].to_numpy() - stim_planned).tolist()
    blank_errors = (stored["blank_duration"] - blank_s).tolist()
    # Pair after pair with no screen between: each onset one window after the previous one.
    follows = [
        (a, b)
        for a, b in itertools.pairwise(trials)
        if b["trial"] not in (after, rated[0]["trial"])
    ]
    schedule_errors = [
        page_onset[b["trial"]]
        - page_onset[a["trial"]]
        - (0.6 if a["phase"] == "anchor_demo" else stimulus_s)
        - blank_s
        for a, b in follows
    ]
    print(
        f"\nrecorded rt - sent (s): {rt_summary}\nevery press: {press_summary}"
        f"\nstimulus duration - planned: {summary(stim_errors)}"
        f"\nblank duration - planned: {summary(blank_errors)}"
        f"\nonset - previous onset - {window} s: {summary(schedule_errors)}"
        f"\nper trial (ms): "
        + json.dumps(
            [
                [t["trial"], round(s * 1000, 2), round(b * 1000, 2)]
                for t, s, b in zip(trials, stim_errors, blank_errors, strict=True)
            ]
        )
    )
    print(f"DevTools key command round trip: {summary(send_times)}")
    # Each press was checked above to be stamped while its DevTools command ran. How close the
    # stamps are to the send times (goal: median under 5 ms, max under one frame + 5 ms) is a
    # property of the machine as much as of the page, so it is measured where the machine is
    # quiet and the sample large: benchmarks/bench_online.py, figures in RESULTS.md.
    # Durations in whole frames: the typical trial is on time to the frame.
    assert statistics.median(abs(e) for e in stim_errors) < 0.002
    assert statistics.median(abs(e) for e in blank_errors) < 0.002

    session = stored_sessions(data).iloc[0]
    assert session["participant"] == "5f1e2d3c4b5a69788796a5b4"
    assert session["status"] == "complete"
    assert json.loads(session["details"]) == {"age": 34, "sex": "female", "handedness": "left"}
    assert json.loads(session["url_parameters"])["STUDY_ID"] == "study77"
    environment = json.loads(session["environment"])
    assert environment["browser"] == "chrome"
    assert (environment["window_width"], environment["screen_width"]) == (1920, 1920)
    assert environment["fullscreen"] is True
    assert 20 <= environment["refresh_hz"] <= 300


def test_reload_mid_session_resumes_at_the_next_unrecorded_trial(
    online_set, tmp_path, start_server, browser
):
    # An id with punctuation (Qualtrics-style): its label differs from it, the reload must
    # still find the session the browser kept under the id.
    participant, data = past_the_intake(
        "?participant=R_reload-1", tmp_path, online_set, start_server, browser
    )
    participant.start_trials()
    trials = participant.session()["state"]["trials"]
    order = [(t["trial"], t["sketch_id"], t["image_id"]) for t in trials]
    for trial in trials[:4]:
        onset = participant.onset_of(trial["trial"])["onset"]
        participant.key_at(str(trial["trial"] % 7 + 1), onset + 0.2, trial["trial"])
    shown = participant.onset_of(5)  # trial 4's window closed here, on the wall clock:
    left = (participant.origin_ms + shown["onset"] * 1000.0) / 1000.0
    time.sleep(0.2)
    participant.driver.refresh()  # mid-trial 5: its window never closed, so it is not recorded
    participant.calibrate()
    participant.wait(lambda: participant.phase() == "intake", what="the page after the reload")
    participant.click("#jspsych-fullscreen-btn")  # no consent again: the session goes on
    participant.wait(lambda: participant.phase() == "instructions", what="welcome back")
    state = participant.session()["state"]
    assert [(t["trial"], t["sketch_id"], t["image_id"]) for t in state["trials"]] == order
    assert "Welcome back" in participant.driver.page_source
    time.sleep(1.0)  # reading the welcome back
    participant.key("space")
    resumed_at = participant.onset_of(5)  # the same order, from trial 5
    back = (participant.origin_ms + resumed_at["onset"] * 1000.0) / 1000.0
    assert participant.driver.execute_script("return window.sbir.session.onsets")[0]["trial"] == 5
    for trial in trials[4:]:
        onset = (
            resumed_at["onset"]
            if trial["trial"] == 5
            else participant.onset_of(trial["trial"])["onset"]
        )
        participant.key_at("6", onset + 0.2, trial["trial"])
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    stored = stored_trials(data)
    assert stored["trial"].tolist() == list(range(1, len(trials) + 1))
    assert stored[["trial", "sketch_id", "image_id"]].apply(tuple, axis=1).tolist() == order
    assert stored.loc[stored["trial"] <= 4, "rating"].tolist() == [t % 7 + 1 for t in range(1, 5)]
    assert (stored.loc[stored["trial"] >= 5, "rating"] == 6).all()
    # The time away (the reload, the screens, the welcome back and the blank after it) is
    # accounted as a pause is: trial 5's paused_before, measured here on the wall clock, and
    # the session's clock goes on over it.
    four, five = stored.set_index("trial").loc[4], stored.set_index("trial").loc[5]
    assert back - left > 1.5
    assert five["paused_before"] == pytest.approx(back - left, abs=0.05)
    due = four["onset"] + four["stim_duration"] + four["blank_duration"]
    assert five["onset"] == pytest.approx(due + five["paused_before"], abs=0.03)
    sessions = stored_sessions(data)
    assert sessions["status"].tolist() == ["complete"]
    assert sessions[["participant", "source_id"]].values.tolist() == [["Rreload1", "R_reload-1"]]


def test_a_stalled_page_keeps_the_window_open_while_its_blank_is_shown_and_pairs_wait_a_blank(
    online_set, tmp_path, start_server, browser
):
    """The lab's rule, on a page whose main thread stalls 300 ms over the end of a blank (a
    busy laptop): the blank stays on screen, and the participant's last press, made 20 ms
    after the blank's nominal end while it is still visible, is the rating, as the lab's
    window closes only at the next flip. And as in the lab, the first pair comes one blank
    after the space bar that ended the instructions, and one blank after a pause."""
    participant, data = past_the_intake(
        "?participant=stalled", tmp_path, online_set, start_server, browser
    )
    stimulus_s, blank_s = 0.6, 0.4
    participant.wait(lambda: participant.phase() == "instructions", what="the instructions")
    # Every frame the page draws from here, by its time stamp (an animation-frame callback of
    # its own: callbacks of one frame share its time).
    participant.driver.execute_script(
        "window.drawn = []; const log = (now) => { window.drawn.push(now / 1000); "
        "requestAnimationFrame(log); }; requestAnimationFrame(log);"
    )

    def stamped_space() -> float | None:  # the page's stamp of the last space bar it took
        return participant.driver.execute_script(
            "const s = window.sbir.session.events.filter((e) => e.code === 'Space');"
            "return s.length ? s[s.length - 1].t : null"
        )

    time.sleep(0.2)
    space = participant.key("space")
    first = participant.onset_of(1)["onset"]
    space_stamp = stamped_space()
    participant.key_at("3", first + 0.3, 1)
    nominal_end = first + stimulus_s + blank_s
    # The stall: a busy loop on the page's main thread from 150 ms before the blank's
    # nominal end to 150 ms after it; no frame is drawn meanwhile, the blank stays up.
    stall(participant, at=nominal_end - 0.15, ms=300)
    # Pressed while the page is busy: stamped when pressed, as a keyboard stamps it (a key
    # the page stamped when it got to it, after the stall, lost the trial on a loaded machine
    # when the next pair came first).
    pressed = participant.key_at("2", nominal_end + 0.02, 1, stamped=True)
    second = participant.onset_of(2)["onset"]
    participant.key_at("5", second + 0.2, 2)
    participant.key_at("p", second + 0.3, 2)
    participant.wait(lambda: participant.phase() == "pause", what="the pause")
    time.sleep(0.3)
    resumed = participant.key("space")
    third = participant.onset_of(3)["onset"]
    resumed_stamp = stamped_space()
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")

    stored = stored_trials(data).set_index("trial")
    one = stored.loc[1]
    assert one["blank_duration"] > blank_s + 0.1, one.to_dict()  # the page did stall
    presses = [p.split("@") for p in one["presses"].split()]
    assert [int(r) for r, _ in presses] == [3, 2], (one.to_dict(), stored.loc[2].to_dict())
    # The 2 was pressed after the nominal end and before the next pair was on screen, and it
    # is recorded when it was pressed (to within the page clock's placing on the wall clock
    # and Chromium's placing of the stamp, as for the late key below), not when the page
    # got to it.
    shown = one["stim_duration"] + one["blank_duration"]
    assert stimulus_s + blank_s < float(presses[-1][1]) < shown, (presses, shown)
    tolerance = participant.offset_error_ms / 1000 + 0.002
    assert abs(float(presses[-1][1]) - (pressed - first)) <= tolerance, (presses, pressed - first)
    assert one["rating"] == 2
    assert (stored.loc[2, "rating"], stored.loc[2, "n_presses"]) == (5, 1)  # the 5 alone
    # Each pair one blank after the key the page took (stamped after the test sent it): never
    # early (made visible the frame before it is due, its frame begins up to a frame and a
    # half before), and held back by no frame the page drew (a busy page draws frames late,
    # as happened here, 106 ms once; then the pair comes on the frame after the first one
    # drawn past its time).
    print(
        f"\nfirst pair - space: {first - space:.4f} s; pair after the pause - space: "
        f"{third - resumed:.4f} s; stalled blank: {one['blank_duration']:.4f} s, the 2 at "
        f"{float(presses[-1][1]):.4f} s from onset"
    )
    drawn = participant.driver.execute_script("return window.drawn")
    for sent, stamp, onset in ((space, space_stamp, first), (resumed, resumed_stamp, third)):
        assert stamp is not None and stamp >= sent - 0.005, (stamp, sent)
        planned = stamp + blank_s
        assert onset >= planned - 0.03, (onset, planned)
        held = [t for t in drawn if planned <= t < onset]
        assert len(held) <= 1, (onset - planned, held)
    # Recorded as the lab records them: the first pair one blank into the session, unpaused;
    # the break and the blank after it in the next pair's paused_before.
    assert stored.loc[1, "onset"] == pytest.approx(blank_s, abs=0.03)
    assert stored.loc[1, "paused_before"] == 0
    # The pause screen came when the second pair's blank was due to end (not a frame
    # before), and its coming closed that pair's window.
    screens = participant.driver.execute_script("return window.sbir.session.screens")
    pause = next(s["shown"] for s in screens if s["phase"] == "pause")
    two = stored.loc[2]
    blank_onset = two["page_onset"] + two["stim_duration"]
    assert pause == two["page_window_end"]
    assert pause == pytest.approx(blank_onset + two["blank_duration"], abs=1e-9)
    assert pause >= blank_onset + blank_s - 0.009
    # The timeline moved from one blank after the second pair's blank onset (due) to one
    # blank after the key that ended the pause: paused_before is that planned shift, not
    # the third pair's onset (late on a busy page: 38 ms once). Times are stored to 0.1 ms.
    due = stored.loc[2, "page_onset"] + stored.loc[2, "stim_duration"] + blank_s
    paused = stored.loc[3, "paused_before"]
    assert paused == pytest.approx(resumed_stamp + blank_s - due, abs=0.0005)
    assert paused > 0.3


def test_a_pause_key_at_the_end_of_a_blank_takes_effect_right_after_that_trial(
    online_set, tmp_path, start_server, browser
):
    """The lab takes a pause or quit key at any instant of a trial, its blank included until
    the next pair is flipped: the pause comes right after that trial, and a pair flipped
    before the key was seen is withdrawn and comes again after it. Here the page ends the
    trial's step (2.5 frames before the blank's end, so as to flip the next pair on time),
    then stalls 300 ms in that frame with the blank on screen; the pause key is pressed in
    the stall, 30 ms before the blank's end, before any later frame began."""
    participant, data = past_the_intake(
        "?participant=latepause", tmp_path, online_set, start_server, browser
    )
    stimulus_s, blank_s = 0.6, 0.4
    participant.start_trials()
    first = participant.onset_of(1)["onset"]
    participant.key_at("3", first + 0.2, 1)
    nominal_end = first + stimulus_s + blank_s
    stall_at_step_end(participant, trial=1, ms=300)
    pressed = participant.key_at("p", nominal_end - 0.03, 1, stamped=True)
    participant.wait(lambda: shown(participant, "pause") == 1, what="the pause")
    time.sleep(0.3)
    participant.key("space")
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")

    screens = participant.driver.execute_script("return window.sbir.session.screens")
    pause = next(s["shown"] for s in screens if s["phase"] == "pause")
    onsets = participant.driver.execute_script("return window.sbir.session.onsets")
    # The second pair was never on screen before the pause (at most withdrawn in the frame
    # it came on: then it is in onsets twice, the first without a window's end).
    second = [o for o in onsets if o["trial"] == 2]
    assert second[-1]["onset"] > pause, (second, pause, first, nominal_end, pressed, onsets)
    assert pause > nominal_end + 0.2, (pause, nominal_end)  # the page did stall
    stored = stored_trials(data).set_index("trial")
    assert stored.index.tolist() == list(range(1, len(stored) + 1)) and len(stored) > 2
    one = stored.loc[1]
    assert one["rating"] == 3 and one["n_presses"] == 1, one.to_dict()
    # Trial 1's window stayed open until the pause was flipped, the key inside it.
    assert one["page_window_end"] == pytest.approx(pause, abs=1e-9)
    assert one["page_onset"] < pressed < pause
    assert json.loads(one["events"])[-1]["code"] == "KeyP"
    assert stored.loc[2, "paused_before"] > 0.25


def test_keys_pressed_before_a_pause_screen_appears_ask_once_and_a_quit_is_not_lost(
    online_set, tmp_path, start_server, browser
):
    """The pause key pressed in trial 1 chose the pause; pressed again while the blank is
    still on screen (the page stalled), it asks for no second pause; the quit key pressed
    then too is not lost: its question comes before the next pair. (A key that reached the
    page after the pause screen appeared is the pause screen's, and asks nothing: on a busy
    machine a key can be sent late, so the test reads where the keys fell.)"""
    participant, data = past_the_intake(
        "?participant=twice",
        tmp_path,
        online_set,
        start_server,
        browser,
        response={"quit_key": "q"},
    )
    stimulus_s, blank_s = 0.6, 0.4
    participant.start_trials()
    participant.driver.execute_script(KEY_LOGGER)
    first = participant.onset_of(1)["onset"]
    participant.key_at("p", first + 0.2, 1)
    nominal_end = first + stimulus_s + blank_s
    stall_at_step_end(participant, trial=1, ms=300)
    participant.key_at("p", nominal_end - 0.03, 1, stamped=True)
    participant.key_at("q", nominal_end - 0.025, 1, stamped=True)
    answered = {"pause": 0, "quit": 0}
    deadline = time.monotonic() + END_S
    while participant.phase() != "complete" and time.monotonic() < deadline:
        for phase, key in (("pause", "space"), ("quit", "n")):
            if shown(participant, phase) > answered[phase]:
                time.sleep(0.15)
                participant.key(key)
                answered[phase] += 1
        time.sleep(0.02)
    assert participant.phase() == "complete", answered
    session = participant.driver.execute_script(
        "const s = window.sbir.session; return {screens: s.screens, onsets: s.onsets}"
    )
    screens, onsets = session["screens"], session["onsets"]
    asked = [s for s in screens if s["phase"] in ("pause", "quit")]
    stamps = participant.driver.execute_script("return window.testKeys")
    quit_stamp = next(k["t"] for k in stamps if k["code"] == "KeyQ")
    second = [o for o in onsets if o["trial"] == 2][-1]["onset"]
    assert [s["phase"] for s in asked].count("pause") == 1, screens  # one pause
    if quit_stamp < asked[0]["shown"]:  # the quit key fell in trial 1's window
        assert sorted(s["phase"] for s in asked) == ["pause", "quit"], screens
        assert all(s["shown"] < second for s in asked), (asked, second)
    else:
        assert [s["phase"] for s in asked] == ["pause"], screens
    stored = stored_trials(data)
    assert stored["trial"].tolist() == list(range(1, len(stored) + 1)) and len(stored) > 2


def test_an_id_that_cannot_be_used_is_refused_on_the_first_screen(
    online_set, tmp_path, start_server, browser
):
    """Before consent, in the participant's words; nothing is asked and nothing stored."""
    protocol = write_protocol(tmp_path)
    data = tmp_path / "data"
    server = start_server(protocol, online_set, data)
    participant = Participant(browser(), server.url)
    participant.open("?PROLIFIC_PID=" + "x" * 70)
    participant.wait(lambda: participant.phase() == "refused", what="the refusal")
    text = participant.driver.find_element("id", "sbir-bad-id").text
    assert "participant id" in text and "contact the researcher" in text
    assert "Consent" not in participant.driver.page_source
    assert server.admin("api/admin/status").json()["participants"]["started"] == 0


def shown(participant, phase: str) -> int:
    """How many of the page's message screens of ``phase`` have been put on screen (a
    message after a pair is revealed when its blank is due to end)."""
    return participant.driver.execute_script(
        "return window.sbir.session.screens.filter((s) => s.phase === arguments[0]).length",
        phase,
    )


def test_escape_asks_and_ends_incomplete_with_everything_saved(
    online_set, tmp_path, start_server, browser
):
    """Also: every key-down of the session's screens is in the export's key log, as the
    lab logs every one, with the report that carried it and the screen it came on."""
    participant, data = past_the_intake(
        "?participant=quitter", tmp_path, online_set, start_server, browser
    )
    participant.wait(
        lambda: participant.phase() == "instructions" and shown(participant, "instructions") == 1,
        timeout=60,
        what="the instructions",
    )
    participant.key("k")  # a stray key while reading
    participant.start_trials()
    onset = participant.onset_of(1)["onset"]
    participant.key_at("num_3", onset + 0.2, 1)
    participant.key_at("escape", onset + 0.4, 1)
    participant.wait(lambda: shown(participant, "quit") == 1, what="the question")
    time.sleep(0.1)  # past the 50 ms after its window closed: a key of the question's alone
    participant.key("n")  # go on
    onset = participant.onset_of(2)["onset"]
    participant.key_at("escape", onset + 0.3, 2)
    participant.wait(lambda: shown(participant, "quit") == 2, what="the question again")
    time.sleep(0.1)
    participant.key("y")
    participant.wait(lambda: participant.phase() == "ended", what="the end")
    stored = stored_trials(data)
    assert stored["trial"].tolist() == [1, 2]
    assert stored["rating"].tolist()[0] == 3  # the keypad's 3
    assert stored_sessions(data)["status"].tolist() == ["incomplete"]
    # The page reported its queue with each trial: nothing waits behind the last one sent.
    status = httpx.get(
        participant.url + "api/admin/status", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    load = status.json()["load"]
    assert (load["pages_reporting"], load["trials_waiting"]) == (1, 0), load
    # The key log: the screens' keys with the next trial's report, the last answer with the
    # finish; each pressed key once, in order, at the time the page stamped it.
    from sbir_study.study.online.export import export_online

    export_online(f"sqlite:///{data / 'online.sqlite3'}", tmp_path / "bids", keep_platform_ids=True)
    (path,) = (tmp_path / "bids" / "sourcedata" / "sub-quitter").glob("*_keys.tsv")
    log = pd.read_csv(path, sep="\t", dtype={"trial": str}, keep_default_na=False)
    logged = list(zip(log["key"], log["trial"], log["screen"], strict=True))
    # Escape is not among them: in full screen the browser takes it (leaving full screen,
    # which asks the question as the quit key does); the page never sees that key-down.
    assert logged == [
        ("k", "1", "instructions"),
        ("space", "1", "instructions"),
        ("num_3", "1", "trial"),
        ("n", "2", "quit"),
        ("y", "n/a", "quit"),
    ], log.to_string()
    received = [press for press in participant.presses if press.name != "escape"]
    # Stamped while its DevTools command ran (1 ms for the clock calibration).
    for press, stamp in zip(received, log["page_time"], strict=True):
        sent, returned = press.page_time, press.page_time + press.sent_within
        assert sent - 0.001 <= stamp <= returned + 0.001, (press, stamp)
    assert (log["session_time"].astype(float).diff().dropna() > 0).all()


#: Installed on the page: its report of trial 2 claims a rating its keys do not give, which
#: the server refuses (422) as it refuses any report that cannot be true. With ``finish``,
#: the session's finish is answered 403 as a server answers a page whose session it will not
#: end: the real server answers a complete session missing a trial 409, which the page
#: retries for half a minute before it gives up the same way.
_REFUSE_TRIAL_2 = """
const original = window.fetch;
window.fetch = (url, options) => {
  if (String(url).endsWith("/trials/2") && options && options.method === "PUT") {
    const body = JSON.parse(options.body);
    body.rating = body.rating === 7 ? 1 : 7;
    options = { ...options, body: JSON.stringify(body) };
  }
  if (arguments[0] && String(url).endsWith("/finish")) {
    return Promise.resolve(new Response(JSON.stringify({ error: "session not ended" }),
      { status: 403, headers: { "Content-Type": "application/json" } }));
  }
  return original(url, options);
};
"""


def _refusal_counted(participant, label: str) -> None:
    """The experimenter sees the refusal of trial 2 with its reason, on the status and in
    the participant table."""
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    status = httpx.get(participant.url + "api/admin/status", headers=admin).json()
    assert status["trials_refused"] == 1, status
    (refused,) = status["refused"]
    assert (refused["participant"], refused["trial"], refused["status"]) == (label, 2, 422)
    assert refused["error"].startswith("rating: the browser scored 7"), refused
    table = httpx.get(participant.url + "admin/participants.csv", headers=admin).text
    assert f"trial 2 (422): {refused['error']}" in table


@pytest.mark.parametrize("ending", ["quit", "error"])
def test_a_trial_the_server_refused_is_named_at_the_end_and_the_experimenter_told(
    online_set, tmp_path, start_server, browser, ending
):
    """The page sets a refused trial aside and goes on; its ending (the participant quits,
    or the page gives up) names the trials not stored and says the researcher has been
    told, in the protocol's words; the status counts the refusal with its reason."""
    label = f"refused{ending}"
    participant, data = past_the_intake(
        f"?participant={label}", tmp_path, online_set, start_server, browser
    )
    participant.wait(
        lambda: participant.phase() == "instructions", timeout=60, what="the instructions"
    )
    participant.driver.execute_script(_REFUSE_TRIAL_2, ending == "error")
    participant.start_trials()
    for trial in (1, 2):
        onset = participant.onset_of(trial)["onset"]
        participant.key_at("3", onset + 0.2, trial)
    onset = participant.onset_of(3)["onset"]
    if ending == "quit":
        participant.key_at("escape", onset + 0.2, 3)
        participant.wait(lambda: shown(participant, "quit") == 1, what="the question")
        participant.key("y")
        participant.wait(lambda: participant.phase() == "ended", what="the end")
    else:
        trials = participant.session()["state"]["trials"]
        for trial in range(3, len(trials) + 1):
            onset = participant.onset_of(trial)["onset"]
            participant.key_at("3", onset + 0.2, trial)
        participant.wait(lambda: participant.phase() == "error", timeout=END_S, what="the error")
    words = participant.driver.find_element("css selector", ".sbir-text").text
    texts = Texts()  # the test protocol's: the defaults
    told = fill(texts.trials_not_stored, trials="2")
    if ending == "quit":  # not quit_ended, which says everything so far is saved
        assert " ".join(words.split()) == " ".join(f"{texts.session_ended} {told}".split())
    else:
        said = fill(texts.went_wrong, error="Error: session not ended")
        assert " ".join(words.split()) == " ".join(f"{said} {told}".split())
    stored = stored_trials(data)
    assert 2 not in stored["trial"].tolist() and {1, 3} <= set(stored["trial"])
    _refusal_counted(participant, label)


def test_leaving_full_screen_asks_as_escape_does(online_set, tmp_path, start_server, browser):
    """In full screen a browser takes Escape to leave full screen, and the page may never see
    the key; leaving full screen (here through the page's own API, which fires the same
    event) asks the quit question. Going on returns to full screen; ending keeps every
    trial stored."""
    participant, data = past_the_intake(
        "?participant=leaver", tmp_path, online_set, start_server, browser
    )
    full_screen = "return Boolean(document.fullscreenElement)"
    participant.start_trials()
    onset = participant.onset_of(1)["onset"]
    assert participant.driver.execute_script(full_screen)
    participant.key_at("num_5", onset + 0.2, 1)
    participant.driver.execute_script("document.exitFullscreen()")
    participant.wait(lambda: participant.phase() == "quit", what="the question")
    participant.key("n")  # go on
    onset = participant.onset_of(2)["onset"]
    participant.wait(lambda: participant.driver.execute_script(full_screen), what="full screen")
    participant.driver.execute_script("document.exitFullscreen()")
    participant.wait(lambda: participant.phase() == "quit", what="the question again")
    participant.key("y")
    participant.wait(lambda: participant.phase() == "ended", what="the end")
    stored = stored_trials(data)
    assert stored["trial"].tolist() == [1, 2]
    assert stored["rating"].tolist()[0] == 5
    assert stored_sessions(data)["status"].tolist() == ["incomplete"]


def test_a_window_too_small_or_no_consent_records_nothing(
    online_set, tmp_path, start_server, browser
):
    protocol = write_protocol(tmp_path, online={"stimulus_px": 500})
    data = tmp_path / "data"
    server = start_server(protocol, online_set, data)
    small = Participant(browser(width=800, height=600, screen=(800, 600)), server.url)
    small.open("?participant=smallscreen")
    small.intake({})
    small.wait(lambda: "too small" in small.driver.page_source, what="the resize message")
    declined = Participant(browser(), server.url)
    declined.open("?participant=declined")
    declined.wait(lambda: declined.phase() == "intake", what="the intake")
    declined.click("#sbir-consent-1")
    declined.wait(lambda: declined.phase() == "declined", what="the refusal page")
    time.sleep(0.5)
    assert server.admin("api/admin/status").json()["participants"]["started"] == 0


def test_completion_redirects_and_a_second_browser_cannot_take_the_label(
    online_set, tmp_path, start_server, browser
):
    """Prolific's flow: the label from the URL, then back to the platform's address."""
    target = "http://127.0.0.1:{port}/healthz?cc=DONE42"
    data = tmp_path / "data"
    port = free_port()
    protocol = write_protocol(
        tmp_path,
        anchoring={"enabled": False, "repeat": False},
        timing={"stimulus_s": 0.2, "blank_s": 0.2},
        online={"completion_url": target.format(port=port)},
    )
    server = start_server(protocol, online_set, data, port=port)
    participant = Participant(browser(), server.url)
    participant.open("?PROLIFIC_PID=abc123def")
    participant.intake({})
    participant.start_trials()
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    # Sent on to the platform: the page does not say the window may be closed.
    assert not participant.driver.find_elements("id", "sbir-close")
    participant.wait(
        lambda: "cc=DONE42" in participant.driver.current_url, timeout=10, what="the redirect"
    )
    other = Participant(browser(), server.url)
    other.open("?PROLIFIC_PID=abc123def")
    other.intake({})
    other.wait(lambda: other.phase() == "refused", what="the refusal")
    assert "already started" in other.driver.page_source
    assert stored_sessions(data)["participant"].tolist() == ["abc123def"]


@pytest.mark.parametrize("probe", ["scoring", "names"])
def test_the_page_scores_and_names_keys_as_the_server_does(
    online_set, tmp_path, start_server, browser, probe
):
    """The page's own scoring (sent along for the server to check), the end of its window and
    its key names equal study.responses.score_trial, study.online.scoring.window_end and
    study.online.browser_keys on generated cases (hypothesis)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from sbir_study.study.online.browser_keys import BROWSER_CODES
    from sbir_study.study.online.scoring import LATE_FLIP_MAX_S, window_end
    from sbir_study.study.responses import rating_key_map, score_trial

    protocol = write_protocol(tmp_path)
    server = start_server(protocol, online_set, tmp_path / "data")
    driver = browser()
    driver.get(server.url + "?participant=probe")
    table = BROWSER_CODES
    codes = st.sampled_from([*table, "", "Unidentified", "IntlRo", "__proto__"])
    keys = st.sampled_from(["1", "7", "a", "Z", " ", "Escape", "Enter", "é", "€", "Shift", "8"])
    key_map = rating_key_map([str(k) for k in range(1, 8)], keypad=True)

    if probe == "names":

        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(st.lists(st.tuples(codes, keys), min_size=1, max_size=40))
        def check(pairs):
            names = driver.execute_script(
                "return arguments[0].map(([c, k]) => sbirKeyName(c, k, arguments[1]))", pairs, table
            )
            assert names == [browser_key_name(c, k) for c, k in pairs]
    else:
        times = st.floats(0.0, 4.0, allow_nan=False).map(lambda t: round(t, 4))
        events = st.lists(st.tuples(codes, keys, times), max_size=25)

        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(events, times, times, times)
        def check(events, onset, length, next_after):
            blank_onset = onset + length / 2
            report = {"blank_onset": blank_onset, "next_onset": blank_onset + next_after}
            closed = driver.execute_script(
                "return sbirWindowEnd(arguments[0], arguments[1], arguments[2], arguments[3])",
                blank_onset,
                blank_onset + next_after,
                length / 2,
                LATE_FLIP_MAX_S,
            )
            assert closed == window_end(report, length / 2)
            window_end_at = onset + length
            records = [{"code": c, "key": k, "t": t} for c, k, t in events]
            page = driver.execute_script(
                "return sbirScore(arguments[0], arguments[1], arguments[2], arguments[3],"
                " arguments[4])",
                records,
                onset,
                window_end_at,
                key_map,
                table,
            )
            named = [(browser_key_name(c, k), t) for c, k, t in events]
            expected = score_trial(
                [e for e in named if e[0] is not None], onset, window_end_at, key_map
            )
            assert page["rating"] == expected.rating
            assert [tuple(p) for p in page["presses"]] == [
                (r, pytest.approx(t, abs=1e-12)) for r, t in expected.presses
            ]

    check()


#: On the page: ``arguments[0]`` key-downs now, on the screen on view, as its listener
#: records them (a break's key mashing; 600 real presses take DevTools half a minute).
_MASHED = """
const session = window.sbir.session;
const now = performance.now() / 1000;
for (let k = 0; k < arguments[0]; k += 1) {
  session.events.push({ code: "KeyX", key: "x", t: now - 1e-4 * (arguments[0] - k),
                        screen: session.visible });
}
"""


def test_scheduled_breaks_come_after_every_so_many_rated_pairs(
    online_set, tmp_path, start_server, browser
):
    """Also: 600 keys on the first break reach the next trial's report as its last 500
    screen keys (the server's bound), and the trial is stored, not refused."""
    participant, data = past_the_intake(
        "?participant=breaker",
        tmp_path,
        online_set,
        start_server,
        browser,
        timing={"stimulus_s": 0.3, "blank_s": 0.2},
        pauses={"break_every": 3},
    )
    participant.start_trials()
    trials = participant.session()["state"]["trials"]
    for trial in trials:
        participant.onset_of(trial["trial"])
        if trial["trial"] % 3 == 0 and trial["trial"] < len(trials):
            breaks = trial["trial"] // 3
            participant.wait(lambda n=breaks: shown(participant, "pause") == n, what="the break")
            time.sleep(0.4)
            if trial["trial"] == 3:
                participant.driver.execute_script(_MASHED, 600)
            participant.key("space")
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    stored = stored_trials(data).set_index("trial")
    paused = stored["paused_before"]
    after_break = [t for t in paused.index if t > 1 and (t - 1) % 3 == 0]
    assert after_break == [4, 7]
    assert (paused.loc[after_break] > 0.35).all(), paused.tolist()
    assert (paused.drop(index=after_break) == 0).all(), paused.tolist()
    assert stored.index.tolist() == [t["trial"] for t in trials]  # every trial stored
    screens = json.loads(stored.loc[4, "screen_events"])
    # The last 500 keys of the break: 499 mashed, then the space that ended it.
    assert len(screens) == 500 and {e["screen"] for e in screens} == {"pause"}
    assert [e["code"] for e in screens] == ["KeyX"] * 499 + ["Space"]


def test_a_key_that_reaches_a_busy_page_late_still_counts_for_its_window(
    online_set, tmp_path, start_server, browser
):
    """A key pressed before a window closed reaches a busy page late: here the page is kept
    busy for 200 ms from just after the next pair came, and a 2, stamped 50 ms before the
    window closed, reaches it 10 ms after that. The trial's record waits for it: the 2 is
    the rating (collecting once, 60 ms after the close, lost it)."""
    participant, data = past_the_intake(
        "?participant=latekey", tmp_path, online_set, start_server, browser
    )
    stimulus_s, blank_s = 0.6, 0.4
    participant.start_trials()
    first = participant.onset_of(1)["onset"]
    participant.key_at("3", first + 0.3, 1)
    closes = first + stimulus_s + blank_s  # the next pair's due onset
    stall(participant, at=closes + 0.03, ms=200)
    second = participant.onset_of(2)["onset"]
    stamp = second - 0.05
    key, code, key_code = KEYS["2"]
    # The key's time stamp, given to the DevTools command on the wall clock.
    wall = participant.wall_clock(stamp)
    down = {
        "type": "keyDown",
        "key": key,
        "code": code,
        "text": key,
        "timestamp": wall,
        "windowsVirtualKeyCode": key_code,
        "nativeVirtualKeyCode": key_code,
    }
    while participant.page_now() < closes + 0.24:
        time.sleep(0.002)
    participant.driver.execute_cdp_cmd("Input.dispatchKeyEvent", down)
    participant.driver.execute_cdp_cmd("Input.dispatchKeyEvent", {**down, "type": "keyUp"})
    assert participant.page_now() > closes + 0.23  # it came after the busy spell
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    one = stored_trials(data).set_index("trial").loc[1]
    presses = [p.split("@") for p in one["presses"].split()]
    assert [int(r) for r, _ in presses] == [3, 2], one.to_dict()
    # At the stamp given, not when it arrived (290 ms later): to within the error of the
    # page's clock placed on the wall clock, and 2 ms for Chromium's own placing of the
    # command's wall-clock stamp on its event clock (1.1-1.6 ms early in quiet runs here; a
    # fixed 3 ms was once exceeded by 0.1 ms on a loaded machine).
    tolerance = participant.offset_error_ms / 1000 + 0.002
    assert abs(float(presses[-1][1]) - (stamp - first)) <= tolerance, (
        presses,
        stamp - first,
        tolerance,
    )
    assert one["rating"] == 2


@pytest.mark.parametrize("resume", [False, True])
def test_frames_stamped_before_the_key_that_began_the_trials_lose_no_trial(
    online_set, tmp_path, start_server, browser, resume
):
    """A busy page runs its animation frames late, each stamped with the time its frame
    began: the first pair's onset can be stamped before the key press that ended the
    instructions, which the page reads from performance.now(). Played here by moving
    performance.now() 0.5 s ahead of the frame clock before that press (and again after a
    reload): every trial is still stored, no onset before the session's start."""
    participant, data = past_the_intake(
        "?participant=lateframes",
        tmp_path,
        online_set,
        start_server,
        browser,
        timing={"stimulus_s": 0.3, "blank_s": 0.2},
    )
    ahead = "const real = performance.now.bind(performance); performance.now = () => real() + 500;"
    participant.wait(lambda: participant.phase() == "instructions", what="the instructions")
    participant.driver.execute_script(ahead)
    participant.start_trials()
    trials = participant.session()["state"]["trials"]
    if resume:
        participant.onset_of(4)
        participant.driver.refresh()
        participant.calibrate()
        participant.wait(lambda: participant.phase() == "intake", what="the page after reload")
        participant.click("#jspsych-fullscreen-btn")
        participant.wait(lambda: participant.phase() == "instructions", what="welcome back")
        participant.driver.execute_script(ahead)
        participant.start_trials()
    participant.wait(lambda: participant.phase() == "complete", timeout=END_S, what="the end")
    stored = stored_trials(data)
    assert stored["trial"].tolist() == [t["trial"] for t in trials]
    assert (stored["onset"] >= 0).all(), stored["onset"].tolist()
    assert stored["onset"].is_monotonic_increasing, stored["onset"].tolist()
