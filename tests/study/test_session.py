"""The rating session in a real PsychoPy window under Xvfb, keys pressed through XTEST.

Each session runs as ``sbir-study run`` in a subprocess on a private Xvfb
display; this process is the participant's keyboard (tests/study/session_harness.py)
and presses keys at planned times of the system monotonic clock, several per
trial as a participant who changes their mind does. What each trial must
record is worked out here from the presses as made and the trial's own
recorded window (``onset_monotonic`` to the end of its blank): every rating
press inside it, in the order pressed, the last one the rating.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sbir_study.stimuli import SetDesign, generate_set
from tests.helpers import assert_valid_bids
from tests.study.session_harness import (
    Keyboard,
    beh_file,
    realtime_priority,
    start_session,
    wait_for,
    wait_until,
)

FRAME_60HZ = 1.0 / 60.0
TASK = "sbirtest"


def protocol_file(
    folder: Path, stimulus_s: float, blank_s: float, anchoring: bool, extra: str = ""
) -> Path:
    path = folder / "protocol.toml"
    path.write_text(
        f'name = "test"\ntask = "{TASK}"\n'
        f"[timing]\nstimulus_s = {stimulus_s}\nblank_s = {blank_s}\nanchor_demo_s = {stimulus_s}\n"
        f"[anchoring]\nenabled = {str(anchoring).lower()}\nrepeat = {str(anchoring).lower()}\n"
        "[participants]\ndetails = []\n"
        '[dataset]\nname = "Window tests"\nauthors = ["A. Tester", "B. Tester"]\n'
        "[display]\nfullscreen = false\nresolution = [800, 600]\n" + extra
    )
    return path


def read_trials(data: Path, label: str = "01") -> pd.DataFrame:
    return pd.read_csv(beh_file(data, TASK, label), sep="\t", dtype={"participant": str})


def begin(session, keys: Keyboard) -> float:
    """Press space once the instructions are up; the time the participant pressed it."""
    session.wait_line("the session begins when the participant presses space")
    time.sleep(0.8)
    return keys.tap("space").t


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    return generate_set(
        tmp_path_factory.mktemp("stimuli") / "set",
        SetDesign(sketches=2, images_per_sketch=3, anchor_sketches=0, width=96, height=72),
        seed=5,
    )


# --- Many trials, random multi-press sequences, control keys at the window's edges ----------

STIMULUS_S, BLANK_S = 0.5, 0.25
WINDOW = STIMULUS_S + BLANK_S
RATING_KEYS = [*map(str, range(1, 8)), *(f"num_{d}" for d in range(1, 8))]


def rating_of(key: str) -> int | None:
    name = key.removeprefix("num_")
    return int(name) if name.isdigit() and 1 <= int(name) <= 7 else None


def random_presses(rng: np.random.Generator) -> list[tuple[float, str]]:
    """0-6 presses at random times of a window, top row and keypad, now and then other keys."""
    count = int(rng.choice(7, p=[0.1, 0.25, 0.25, 0.15, 0.1, 0.1, 0.05]))
    while True:
        times = np.sort(rng.uniform(0.01, WINDOW - 0.01, count))
        if count < 2 or np.diff(times).min() > 0.02:
            break
    keys = [
        str(rng.choice(RATING_KEYS)) if rng.random() > 0.1 else str(rng.choice(["a", "x"]))
        for _ in range(count)
    ]
    return list(zip(times.tolist(), keys, strict=True))


# What the participant does in particular trials: (seconds from onset, key). The window is
# [0, 0.75): stimulus 0.5 s, blank 0.25 s. A trial not listed gets random presses.
SCRIPTED = {
    2: [(0.10, "5"), (0.40, "2")],  # a lower digit after a higher one
    3: [(0.10, "num_3"), (0.30, "6")],  # keypad, then top row
    4: [(0.20, "4"), (0.40, "4")],  # the same key twice
    5: [(0.008, "1")],  # the window's first instants
    6: [(0.20, "3"), (WINDOW - 0.009, "7")],  # the last 20 ms
    7: [(0.55, "2"), (0.70, "num_6")],  # both in the blank
    8: [(0.10, "a"), (0.30, "x")],  # no rating key at all
    9: [(0.30, "6"), (WINDOW - 0.015, "num_2"), (WINDOW + 0.012, "5")],  # the 5: next trial's
    10: [(0.30, "3"), (WINDOW - 0.012, "p")],  # pause in the last 20 ms
    20: [(0.015, "p"), (0.20, "num_7"), (0.60, "1")],  # pause in the first instants
    30: [(0.25, "2"), (WINDOW - 0.010, "escape")],  # quit question; n and y together: n first
    40: [(0.30, "escape"), (0.45, "5"), (0.50, "p")],  # question (n), then the pause
    50: [(0.20, "4"), (0.40, "p"), (0.55, "6"), (WINDOW - 0.011, "num_1")],  # pause in a change
    62: [(0.35, "3"), (WINDOW - 0.012, "escape")],  # question: y and n together, y first
}
# After these trials, what the waiting screens get: (seconds after the window closed, key).
ANSWERS = {
    10: [(0.45, "space")],
    20: [(0.35, "space")],
    30: [(0.40, "n"), (0.403, "y")],
    40: [(0.40, "n"), (0.90, "space")],
    50: [(0.30, "space")],
    62: [(0.40, "y"), (0.403, "n")],
}
DECIDES = {10: 0, 20: 0, 30: 0, 40: 1, 50: 0}  # which answer the next pair is planned from


def test_random_multi_press_sequences_in_a_real_window(display, tmp_path):
    planned_trials, recorded_trials = 66, 62
    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=3, images_per_sketch=22, anchor_sketches=0, width=96, height=72),
        seed=3,
    )
    protocol = protocol_file(tmp_path, STIMULUS_S, BLANK_S, anchoring=False)
    data = tmp_path / "data"
    session = start_session(display, protocol, stimuli, data, "--seed", "17")
    keys = Keyboard(display)
    rng = np.random.default_rng(2011)
    made = []  # every press as made: (key, monotonic time)
    acked = {}  # press time -> when the X server had taken it
    resumed_from = {}  # trial -> the key press its planned onset was set from
    with realtime_priority():
        start = begin(session, keys)
        every = [("space", start)]  # every key pressed, answers to waiting screens included
        onset = start + BLANK_S  # trial 1 is planned one blank after the space bar
        for trial in range(1, recorded_trials + 1):
            plan = SCRIPTED.get(trial) or random_presses(rng)
            played = keys.play([(onset + t, key) for t, key in plan])
            made += [(p.key, p.t) for p in played]
            acked.update({p.t: p.acked for p in played})
            window_end = onset + WINDOW
            if trial in ANSWERS:
                answers = keys.play([(window_end + t, key) for t, key in ANSWERS[trial]])
                every += [(p.key, p.t) for p in answers]
                if trial in DECIDES:
                    decided = answers[DECIDES[trial]].t
                    resumed_from[trial + 1] = decided
                    onset = decided + BLANK_S
                continue
            onset = window_end
    status, out, err = session.finish(timeout=60)
    assert status == 0, err
    assert f"Session incomplete: {recorded_trials} of {planned_trials} trials" in out

    trials = read_trials(data).set_index("trial")
    assert trials.index.tolist() == list(range(1, recorded_trials + 1))
    starts = trials["onset_monotonic"].to_numpy()
    ends = starts + trials["stim_duration"].to_numpy() + trials["blank_duration"].to_numpy()

    # 1. The key log holds every key made up to the end of the last trial written, once, in
    # the order made, each at its key-down time: not before it was sent, and not after the X
    # server took it, give or take what a busy machine adds between the X server and the
    # keyboard thread (`late`; how close it is in practice, measured over a full session:
    # benchmarks/bench_session.py).
    late = 0.1
    log = pd.read_csv(
        data / "sourcedata" / "sub-01" / f"sub-01_task-{TASK}_keys.tsv",
        sep="\t",
        dtype={"key": str},
    )
    made_before = sorted((t, key) for key, t in made + every if t < ends[-1] - late)
    logged = sorted(zip(log["onset_monotonic"], log["key"], strict=True))
    assert [k for _, k in logged[: len(made_before)]] == [k for _, k in made_before]
    assert len(logged) <= len(made + every)
    errors = []
    for (logged_t, key), (sent, _) in zip(logged, made_before, strict=False):
        assert sent - 0.005 < logged_t < max(sent, acked.get(sent, sent)) + late, (key, sent)
        errors.append(logged_t - sent)
    print(
        f"\nkey-down logged - sent (ms): median {1000 * np.median(errors):.2f}, "
        f"max {1000 * np.max(errors):.2f}; X server slower than 5 ms to take "
        f"{sum(acked[t] - t > 0.005 for t in acked)} of {len(acked)} presses"
    )

    # 2. Each trial records exactly the rating presses of the log inside its window
    # [onset, onset + stimulus + blank), in time order, the last one its rating. The log and
    # the table are written to the microsecond: a press within 5 us of an edge may be in
    # either trial, in one only.
    in_log = [(t, rating_of(k)) for t, k in logged if rating_of(k) is not None]
    claimed = []
    n_checked = 0
    for trial, start_t, end_t in zip(trials.index, starts, ends, strict=True):
        row = trials.loc[trial]
        listed = [] if pd.isna(row["presses"]) else row["presses"].split()
        recorded = [(int(r), float(offset)) for r, offset in (item.split("@") for item in listed)]
        assert row["n_presses"] == len(recorded), (trial, row.to_dict())
        inside = [(t, r) for t, r in in_log if start_t - 5e-6 <= t < end_t + 5e-6]
        sure = [(t, r) for t, r in inside if start_t + 5e-6 <= t < end_t - 5e-6]
        matched = []
        for rating, offset in recorded:
            hits = [(t, r) for t, r in inside if r == rating and abs(t - start_t - offset) < 1.5e-4]
            assert len(hits) >= 1, (trial, rating, offset, row["presses"], inside)
            matched.append(min(hits, key=lambda press: abs(press[0] - start_t - offset)))
        assert matched == sorted(matched), trial  # in time order
        assert set(sure) <= set(matched), (trial, sure, matched)  # none missed
        claimed += [press for press in matched if press not in sure]
        if not recorded:
            assert pd.isna(row["rating"]) and pd.isna(row["rt"])
            continue
        assert row["rating"] == recorded[-1][0]
        assert abs(row["rt"] - recorded[-1][1]) < 1e-4
        n_checked += len(recorded)
    assert len(claimed) == len(set(claimed))  # an edge press in one trial only
    in_a_window = [(t, r) for t, r in in_log if ((starts <= t) & (t < ends)).any()]
    assert trials["n_presses"].sum() == len(in_a_window)  # and each in one trial only
    assert n_checked > 120  # many presses, several per trial
    # The same presses as made: each made well inside a window (more than `late` from its
    # edges) is recorded in that trial.
    for key, t in made:
        if rating_of(key) is None or t >= ends[-1]:
            continue
        window = np.flatnonzero((starts + late < t) & (t < ends - late))
        if window.size:
            listed = str(trials["presses"].iloc[window[0]]).split()
            assert str(rating_of(key)) in {p.split("@")[0] for p in listed}, (key, t, listed)

    # 3. Pauses and questions took effect right after the trial the key went down in, each
    # once, and the next pair came one blank after the key that ended the waiting screen.
    controls = [(t, k) for t, k in logged if k in ("p", "escape")]
    asked_in = sorted(
        {int(np.flatnonzero(starts <= t)[-1]) + 1 for t, _ in controls if t < ends[-1]}
    )
    paused = trials["paused_before"]
    assert [t + 1 for t in asked_in if t + 1 in trials.index] == paused[paused > 0].index.tolist()
    assert sorted(resumed_from) == [t + 1 for t in asked_in if t + 1 in trials.index]
    for trial, pressed in resumed_from.items():
        answer = min((t for t, _ in logged), key=lambda t: abs(t - pressed))
        assert abs(starts[trial - 1] - (answer + BLANK_S)) < FRAME_60HZ, trial
    # One timeline: each planned onset is the previous one plus a trial, plus what was paused.
    planned = trials["onset_planned"].to_numpy()
    step = np.diff(planned) - WINDOW - paused.to_numpy()[1:]
    assert np.abs(step).max() < 2e-6
    onset_error = (trials["onset"] - trials["onset_planned"]).abs()
    assert (onset_error[trials["dropped_frames"] == 0] < FRAME_60HZ).all()
    print(
        f"onset - planned (ms): median {1000 * onset_error.median():.2f}, "
        f"max {1000 * onset_error.max():.2f}"
    )
    sidecar = json.loads(beh_file(data, TASK).with_suffix(".json").read_text())
    assert sidecar["SessionStatus"] == "incomplete" and sidecar["TimingMode"] == "clock"
    assert sidecar["KeyboardBackend"] == "ptb" and sidecar["RatingKeysReceivedLate"] == 0
    assert sidecar["Origin"] == "lab"  # a person pressed the keys (docs/formats.md)
    warnings = assert_valid_bids(data)
    assert not {"NO_AUTHORS", "TOO_FEW_AUTHORS"} & set(warnings), warnings
    from sbir_study.analysis import load_ratings

    ratings = load_ratings(data)
    assert ratings["rating"].notna().sum() == trials["rating"].notna().sum()


def test_details_asked_on_screen_and_the_end_screen_waits_for_space(display, small_set, tmp_path):
    protocol = protocol_file(tmp_path, 0.3, 0.2, anchoring=False)
    protocol.write_text(
        protocol.read_text().replace("details = []", 'details = ["age", "sex", "handedness"]')
    )
    data = tmp_path / "data"
    session = start_session(display, protocol, small_set, data)
    keys = Keyboard(display)
    session.wait_line("Asking the participant on screen: age, sex, handedness")
    time.sleep(0.8)
    with realtime_priority():
        # Age: 2, 7, a correction, 5 on the keypad, Enter: 25. Then an answer that is no
        # answer (x), F, and R.
        now = time.monotonic()
        typed = [
            (0.05, "2"),
            (0.10, "7"),
            (0.15, "backspace"),
            (0.20, "num_5"),
            (0.25, "return"),
            (0.60, "x"),
            (0.70, "f"),
            (1.10, "r"),
        ]
        keys.play([(now + t, key) for t, key in typed])
        start = begin(session, keys)
        last_window_end = start + BLANK_S + 6 * 0.5
        wait_until(last_window_end + 1.5)
    assert session.process.poll() is None, "the end screen must wait for the space bar"
    keys.tap("space")
    status, out, err = session.finish(timeout=30)
    assert status == 0, err
    assert "Session complete: 6 of 6 trials" in out
    table = pd.read_csv(data / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
    # The id as given is kept beside the label (source_id), here the same.
    assert table.to_dict("list") == {
        "participant_id": ["sub-01"],
        "source_id": ["01"],
        "age": ["25"],
        "sex": ["F"],
        "handedness": ["R"],
    }
    described = json.loads((data / "participants.json").read_text())
    assert described["sex"]["Levels"]["F"] == "female" and described["age"]["Units"] == "year"
    assert_valid_bids(data)


def test_scheduled_breaks(display, small_set, tmp_path):
    protocol = protocol_file(
        tmp_path, 0.3, 0.2, anchoring=False, extra="[pauses]\nbreak_every = 2\n"
    )
    data = tmp_path / "data"
    session = start_session(display, protocol, small_set, data, "--simulate", "--seed", "4")
    status, _, err = session.finish(timeout=60)
    assert status == 0, err
    paused = read_trials(data)["paused_before"]
    # A break after trials 2 and 4 (the simulated participant goes on after 0.3 s, then one
    # blank), none after the last.
    assert (paused.iloc[[2, 4]] > 0.45).all(), paused.tolist()
    assert (paused.drop(index=[2, 4]) == 0).all(), paused.tolist()
    sidecar = json.loads(beh_file(data, TASK).with_suffix(".json").read_text())
    assert sidecar["Origin"] == "run-simulate" and sidecar["Simulated"] is True


def test_sigkill_mid_block_then_resume(display, tmp_path):
    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=2, images_per_sketch=8, anchor_sketches=1, width=96, height=72),
        seed=2,
    )
    protocol = protocol_file(tmp_path, 0.3, 0.15, anchoring=True)
    data = tmp_path / "data"
    # An id as a platform sends it (Qualtrics): recorded under its label, found again on resume.
    source_id, label = "R_0-1 b", "R01b"
    session = start_session(display, protocol, stimuli, data, "--simulate", participant=source_id)
    tsv = beh_file(data, TASK, label)
    wait_for(lambda: tsv.exists() and len(tsv.read_text().splitlines()) > 12, what="12 trials")
    session.kill()
    before = read_trials(data, label)
    assert len(before) >= 12
    # Refused without --resume: nothing is overwritten.
    again = start_session(display, protocol, stimuli, data, "--simulate", participant=source_id)
    status, _, err = again.finish(timeout=60)
    assert status == 2 and "never overwritten" in err
    resumed = start_session(
        display, protocol, stimuli, data, "--simulate", "--resume", participant=source_id
    )
    status, _, err = resumed.finish(timeout=120)
    assert status == 0, err
    after = read_trials(data, label)
    assert set(after["participant"]) == {label}
    people = (data / "participants.tsv").read_text()
    assert people == f"participant_id\tsource_id\nsub-{label}\t{source_id}\n"
    sidecar = json.loads(tsv.with_suffix(".json").read_text())
    planned = len(sidecar["TrialOrder"])
    assert after["trial"].tolist() == list(range(1, planned + 1))
    # Each pair exactly once per phase, and the ratings recorded before the crash unchanged.
    assert not after.duplicated(["phase", "sketch_id", "image_id"]).any()
    pd.testing.assert_frame_equal(after.iloc[: len(before)], before)
    assert sidecar["SessionStatus"] == "complete"
    assert sidecar["Resumed"][0]["FromTrial"] == len(before) + 1
    assert (after["onset"].diff().dropna() > 0).all()  # onsets go on after the resume
    # The timeline goes on across the resume: one blank after the last recorded trial.
    first = after.iloc[len(before)]
    assert first["paused_before"] == pytest.approx(0.15, abs=1e-6)
    assert_valid_bids(data)


def test_a_simulated_session_rates_as_the_simulated_dataset(display, tmp_path):
    # One rater model: participant 01 of a simulated dataset of a set has a session seed in
    # its sidecar; `run --simulate --seed` with it gives the same order and ratings.
    from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
    from sbir_study.stimuli import load_set

    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=1, images_per_sketch=5, anchor_sketches=1, width=96, height=72),
        seed=8,
    )
    design = StudyDesign(participants=2, stimulus_s=1.0, blank_s=0.5)
    write_simulated_dataset(tmp_path / "sim", design, seed=5, stimuli=load_set(stimuli).manifest)
    beh = tmp_path / "sim" / "sub-01" / "beh"
    seed = json.loads(next(beh.glob("*_beh.json")).read_text())["Seed"]
    simulated = pd.read_csv(next(beh.glob("*_beh.tsv")), sep="\t")
    protocol = protocol_file(tmp_path, 1.0, 0.5, anchoring=True)
    protocol.write_text(protocol.read_text().replace("anchor_demo_s = 1.0", "anchor_demo_s = 0.3"))
    data = tmp_path / "data"
    session = start_session(display, protocol, stimuli, data, "--simulate", "--seed", str(seed))
    status, _, err = session.finish(timeout=120)
    assert status == 0, err
    recorded = read_trials(data)
    columns = ["trial", "phase", "sketch_id", "image_id"]
    pd.testing.assert_frame_equal(recorded[columns], simulated[columns])
    # The simulated participant presses each rating key at its trial's onset + the model's
    # rt, which the model keeps 10 ms inside the nominal window. The session scores by the
    # lab rule in the window it gave: from the pair's onset to the next pair's, which keeps
    # to plan, so an onset late by more than 10 ms (a busy machine) leaves such a press
    # after the window, in the next trial's, as it would a real participant's. Expected:
    # the last simulated press inside each recorded window, found here from the recorded
    # onsets and durations alone.
    rated = simulated["rt"].notna()
    assert rated.sum() >= 10
    presses = sorted(
        (recorded["onset"][i] + simulated["rt"][i], int(simulated["rating"][i]))
        for i in recorded.index[rated]
    )
    ends = recorded["onset"] + recorded["stim_duration"] + recorded["blank_duration"]
    scored = recorded.index[recorded["phase"] != "anchor_demo"]
    expected = pd.DataFrame({"rating": np.nan, "rt": np.nan}, index=scored)
    for i in scored:
        inside = [(t, r) for t, r in presses if recorded["onset"][i] <= t < ends[i]]
        if inside:
            expected.loc[i] = inside[-1][1], inside[-1][0] - recorded["onset"][i]
    assert recorded["rating"][~recorded.index.isin(scored)].isna().all()
    got = recorded.loc[scored, ["rating", "rt"]].astype(float)
    context = recorded[["trial", "onset", "onset_planned", "rt"]].assign(model=simulated["rt"])
    assert np.allclose(got, expected, rtol=0, atol=1e-5, equal_nan=True), (got, expected, context)
    # Most presses are inside their own trial's window, with the model's rating and rt.
    own = (recorded["rating"] == simulated["rating"]) & (
        (recorded["rt"] - simulated["rt"]).abs() < 1e-5
    )
    assert own[rated].sum() >= rated.sum() - 2, own


def test_a_stimulus_file_gone_mid_session_stops_it_cleanly_and_resume_goes_on(display, tmp_path):
    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=2, images_per_sketch=6, anchor_sketches=0, width=96, height=72),
        seed=6,
    )
    protocol = protocol_file(tmp_path, 0.3, 0.15, anchoring=False)
    data = tmp_path / "data"
    session = start_session(display, protocol, stimuli, data, "--simulate", "--seed", "9")
    tsv = beh_file(data, TASK)
    wait_for(lambda: tsv.exists() and len(tsv.read_text().splitlines()) > 3, what="3 trials")
    order = json.loads(tsv.with_suffix(".json").read_text())["TrialOrder"]
    # Every image the session has yet to load: one of them is gone when its turn comes.
    later = {row[3] for row in order[6:]}
    moved = []
    for image in sorted((stimuli / "images").rglob("*.jpg")):
        if image.stem in later:
            moved.append((image, image.with_suffix(".away")))
            image.rename(moved[-1][1])
    status, _, err = session.finish(timeout=60)
    assert status == 2, err
    message = err.strip().splitlines()[-1]
    assert "during the session" in message and "--resume" in message, err
    sidecar = json.loads(tsv.with_suffix(".json").read_text())
    recorded = read_trials(data)
    assert sidecar["SessionStatus"] == "incomplete" and "StoppedBy" in sidecar
    assert sidecar["TrialsRecorded"] == len(recorded) >= 3
    for image, away in moved:
        away.rename(image)
    resumed = start_session(display, protocol, stimuli, data, "--simulate", "--resume")
    status, _, err = resumed.finish(timeout=60)
    assert status == 0, err
    assert read_trials(data)["trial"].tolist() == list(range(1, len(order) + 1))


def test_refuses_to_start_without_the_psychtoolbox_keyboard(monkeypatch):
    from psychopy.hardware import keyboard

    from sbir_study.foundation.checks import InputError
    from sbir_study.study.session.keyboard import open_keyboard

    monkeypatch.setattr(keyboard, "havePTB", False)
    with pytest.raises(
        InputError,
        match=r"Psychtoolbox backend cannot load .* libjack-jackd2-0 "
        r"and libasound2.*refusing to fall back",
    ):
        open_keyboard()


def test_the_session_package_loads_psychopy_only_when_a_session_runs():
    # Every stage's module, and the face's names, import without PsychoPy (sbir-study --help,
    # the docstring examples and the window-free tests rely on it).
    code = (
        "import sys; import sbir_study.study.session as session; session.run_session;"
        " from sbir_study.study.session import forms, keyboard, lists, loop, plan, procedure,"
        " record, simulated, window; print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded = result.stdout
    assert "'sbir_study'" in loaded
    assert "psychopy" not in loaded and "pyglet" not in loaded
