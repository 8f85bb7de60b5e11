"""The rating session in a real PsychoPy window under Xvfb, keys injected through XTEST.

Each session runs as ``sbir-study run`` in a subprocess on a private Xvfb
display; this process presses keys on that display at known times of the
system monotonic clock and compares them with what the session logged
(``onset_monotonic + rt``).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from stimuli import SetDesign, generate_set

FRAME_60HZ = 1.0 / 60.0


@pytest.fixture(scope="module")
def display():
    """A private Xvfb display (the CI machine installs Xvfb; without it these tests fail)."""
    xvfb = shutil.which("Xvfb")
    assert xvfb, "Xvfb is not installed (Debian package xvfb); make install provides it"
    read, write = os.pipe()
    command = [xvfb, "-displayfd", str(write), "-screen", "0", "1920x1200x24", "-nolisten", "tcp"]
    server = subprocess.Popen(command, pass_fds=(write,), stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as stream:
        number = stream.readline().strip()
    yield f":{number}"
    server.terminate()
    server.wait()


class Keys:
    """Key presses on an X display through the XTEST extension."""

    def __init__(self, name: str) -> None:
        from Xlib import XK
        from Xlib import display as xdisplay

        self.display = xdisplay.Display(name)
        self.XK = XK

    def tap(self, key: str, hold: float = 0.03) -> float:
        """Press and release ``key``; returns the monotonic time of the press."""
        from Xlib import X
        from Xlib.ext import xtest

        keysym = self.XK.string_to_keysym({"escape": "Escape"}.get(key, key))
        assert keysym, f"no X keysym for {key!r}"
        code = self.display.keysym_to_keycode(keysym)
        pressed = time.monotonic()
        xtest.fake_input(self.display, X.KeyPress, code)
        self.display.sync()
        time.sleep(hold)
        xtest.fake_input(self.display, X.KeyRelease, code)
        self.display.sync()
        return pressed

    def tap_at(self, key: str, at: float) -> float:
        while (remaining := at - time.monotonic()) > 0:
            time.sleep(min(remaining, 0.002) if remaining < 0.01 else remaining - 0.008)
        return self.tap(key)


def protocol_file(folder: Path, stimulus_s: float, blank_s: float, anchoring: bool) -> Path:
    path = folder / "protocol.toml"
    path.write_text(
        f'name = "test"\ntask = "sbirtest"\n'
        f"[timing]\nstimulus_s = {stimulus_s}\nblank_s = {blank_s}\nanchor_demo_s = {stimulus_s}\n"
        f"[anchoring]\nenabled = {str(anchoring).lower()}\nrepeat = {str(anchoring).lower()}\n"
        f"[display]\nfullscreen = false\n"
    )
    return path


def start_session(display, protocol, stimuli, data, *extra):
    env = {**os.environ, "DISPLAY": display}
    return subprocess.Popen(
        [sys.executable, "-m", "study.cli", "run", "--protocol", str(protocol), "--stimuli",
         str(stimuli), "--participant", "01", "--data", str(data), "--windowed", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def beh(data: Path) -> Path:
    return data / "sub-01" / "beh" / "sub-01_task-sbirtest_beh.tsv"


def wait_for(condition, timeout=60.0, what="the session"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


VALIDATOR = Path(__file__).parents[2] / ".node" / "node_modules" / ".bin" / "bids-validator"


def assert_valid_bids(root: Path) -> None:
    """No errors from the BIDS validator (npm bids-validator, installed by make install)."""
    assert VALIDATOR.exists(), f"{VALIDATOR} is missing; make install installs it"
    result = subprocess.run([str(VALIDATOR), str(root), "--json"], capture_output=True, text=True)
    report = json.loads(result.stdout)
    errors = [(e["key"], e["reason"], [f["file"]["relativePath"] for f in e["files"]][:3])
              for e in report["issues"]["errors"]]  # fmt: skip
    assert not errors, errors


def read_trials(data: Path) -> pd.DataFrame:
    return pd.read_csv(beh(data), sep="\t", dtype={"participant": str})


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    return generate_set(tmp_path_factory.mktemp("stimuli") / "set",
                        SetDesign(sketches=2, images_per_sketch=3, anchor_sketches=0,
                                  width=96, height=72), seed=5)  # fmt: skip


def test_ratings_and_times_follow_the_injected_presses(display, small_set, tmp_path):
    stimulus_s, blank_s = 0.8, 0.4
    period = stimulus_s + blank_s
    protocol = protocol_file(tmp_path, stimulus_s, blank_s, anchoring=False)
    data = tmp_path / "data"
    session = start_session(display, protocol, small_set, data, "--seed", "11")
    keys = Keys(display)
    # The sidecar is written once the window is open and its refresh measured.
    wait_for(lambda: beh(data).with_suffix(".json").exists() or session.poll() is not None)
    assert session.poll() is None, session.communicate()
    time.sleep(1.0)
    keys.tap("space")  # ends the instructions; the first pair follows at once
    injected = {1: []}  # trial -> [(key, monotonic time)] of the presses that must count
    # Trial 1 has no press: a missing rating. Its row, written when trial 2 begins, gives
    # the onset from which the next ones follow at one period each.
    wait_for(lambda: len(beh(data).read_text().splitlines()) > 1, what="trial 1")
    first = read_trials(data)["onset_monotonic"].iloc[0]

    def onset(trial):
        return first + (trial - 1) * period

    injected[2] = [("3", keys.tap_at("3", onset(2) + 0.3))]
    # A change of rating inside the window: the last press is the rating.
    injected[3] = [("2", keys.tap_at("2", onset(3) + 0.2)), ("5", keys.tap_at("5", onset(3) + 0.6))]
    # During the blank, and a pause asked for; then a press just after the window: it must
    # not count (the pause screen is showing).
    keys.tap_at("p", onset(4) + 0.2)
    injected[4] = [("6", keys.tap_at("6", onset(4) + stimulus_s + 0.15))]
    late = keys.tap_at("7", onset(5) + 0.1)
    resumed = keys.tap_at("space", onset(5) + 1.0)  # the pause lasts about a second
    injected[5] = [("4", keys.tap_at("4", resumed + 0.4))]
    injected[6] = [("1", keys.tap_at("1", resumed + 0.4 + period))]
    out, err = session.communicate(timeout=60)
    assert session.returncode == 0, err
    assert "Session complete: 6 of 6 trials" in out

    trials = read_trials(data).set_index("trial")
    for trial, presses in injected.items():
        row = trials.loc[trial]
        assert row["n_presses"] == len(presses), (trial, row.to_dict())
        if not presses:
            assert pd.isna(row["rating"]) and pd.isna(row["rt"])
            continue
        final_key, final_time = presses[-1]
        assert row["rating"] == int(final_key)
        logged = row["onset_monotonic"] + row["rt"]
        assert abs(logged - final_time) < 0.005, (trial, logged - final_time)
        # Every press is listed, each at its injected time.
        listed = [item.split("@") for item in row["presses"].split()]
        assert [k for k, _ in listed] == [k for k, _ in presses]
        for (_, offset), (_, at) in zip(listed, presses, strict=True):
            assert abs(row["onset_monotonic"] + float(offset) - at) < 0.005
    assert trials.loc[4, "onset_monotonic"] + period < late < trials.loc[5, "onset_monotonic"]
    # The pause: taken after trial 4's window, recorded before trial 5.
    pause_shown = trials.loc[4, ["onset_monotonic", "stim_duration", "blank_duration"]].sum()
    assert trials.loc[5, "paused_before"] == pytest.approx(resumed - pause_shown, abs=0.02)
    assert (trials["paused_before"].drop(index=5) == 0).all()
    # Durations: each within one 60 Hz frame of the protocol's.
    assert (trials["stim_duration"] - stimulus_s).abs().max() < FRAME_60HZ
    assert (trials["blank_duration"] - blank_s).abs().max() < FRAME_60HZ
    sidecar = json.loads(beh(data).with_suffix(".json").read_text())
    assert sidecar["SessionStatus"] == "complete"
    assert sidecar["KeyboardBackend"] == "ptb"
    assert sidecar["TimingMode"] == "clock"  # Xvfb has no vertical sync
    assert_valid_bids(data)


def test_escape_asks_then_ends_the_session_marked_incomplete(display, small_set, tmp_path):
    protocol = protocol_file(tmp_path, 0.5, 0.3, anchoring=False)
    data = tmp_path / "data"
    session = start_session(display, protocol, small_set, data, "--seed", "3")
    keys = Keys(display)
    wait_for(lambda: beh(data).with_suffix(".json").exists() or session.poll() is not None)
    time.sleep(1.0)
    start = keys.tap("space")
    keypad = keys.tap_at("KP_4", start + 0.3)  # the numeric keypad rates too
    keys.tap_at("escape", start + 0.8 + 0.2)  # during trial 2
    keys.tap_at("n", start + 1.6 + 0.5)  # "go on" at the question after trial 2
    keys.tap_at("escape", start + 1.6 + 0.5 + 0.3)  # again, during trial 3
    time.sleep(1.2)
    keys.tap("y")
    out, err = session.communicate(timeout=60)
    assert session.returncode == 0, err
    assert "Session incomplete: 3 of 6 trials" in out
    sidecar = json.loads(beh(data).with_suffix(".json").read_text())
    assert sidecar["SessionStatus"] == "incomplete"
    trials = read_trials(data)
    assert trials["trial"].tolist() == [1, 2, 3]
    assert trials.loc[0, "rating"] == 4
    assert abs(trials.loc[0, "onset_monotonic"] + trials.loc[0, "rt"] - keypad) < 0.005


def test_scheduled_breaks(display, small_set, tmp_path):
    protocol = protocol_file(tmp_path, 0.3, 0.2, anchoring=False)
    protocol.write_text(protocol.read_text() + "[pauses]\nbreak_every = 2\n")
    data = tmp_path / "data"
    session = start_session(display, protocol, small_set, data, "--simulate", "--seed", "4")
    _, err = session.communicate(timeout=60)
    assert session.returncode == 0, err
    paused = read_trials(data)["paused_before"]
    # A break after trials 2 and 4 (the simulated participant goes on after 0.3 s), none
    # after the last.
    assert (paused.iloc[[2, 4]] > 0.25).all(), paused.tolist()
    assert (paused.drop(index=[2, 4]) == 0).all(), paused.tolist()


def test_sigkill_mid_block_then_resume(display, tmp_path):
    stimuli = generate_set(tmp_path / "set", SetDesign(sketches=2, images_per_sketch=8,
                                                       anchor_sketches=1, width=96, height=72),
                           seed=2)  # fmt: skip
    protocol = protocol_file(tmp_path, 0.3, 0.15, anchoring=True)
    data = tmp_path / "data"
    session = start_session(display, protocol, stimuli, data, "--simulate")
    wait_for(lambda: beh(data).exists() and len(beh(data).read_text().splitlines()) > 12,
             what="12 trials")  # fmt: skip
    session.send_signal(signal.SIGKILL)
    session.wait()
    before = read_trials(data)
    assert len(before) >= 12
    # Refused without --resume: nothing is overwritten.
    again = start_session(display, protocol, stimuli, data, "--simulate")
    _, err = again.communicate(timeout=60)
    assert again.returncode == 2 and "never overwritten" in err
    resumed = start_session(display, protocol, stimuli, data, "--simulate", "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    after = read_trials(data)
    sidecar = json.loads(beh(data).with_suffix(".json").read_text())
    planned = len(sidecar["TrialOrder"])
    assert after["trial"].tolist() == list(range(1, planned + 1))
    # Each pair exactly once per phase, and the ratings recorded before the crash unchanged.
    assert not after.duplicated(["phase", "sketch_id", "image_id"]).any()
    pd.testing.assert_frame_equal(after.iloc[: len(before)], before)
    assert sidecar["SessionStatus"] == "complete"
    assert sidecar["Resumed"][0]["FromTrial"] == len(before) + 1
    assert (after["onset"].diff().dropna() > 0).all()  # onsets go on after the resume
    assert_valid_bids(data)


def test_simulated_datasets_pass_the_bids_validator(tmp_path):
    from analysis.simulate import StudyDesign, write_simulated_dataset

    design = StudyDesign(participants=3, sketches=2, images_per_sketch=5)
    root = write_simulated_dataset(tmp_path / "sim", design, seed=1)
    assert_valid_bids(root)


def test_refuses_to_start_without_the_psychtoolbox_keyboard(monkeypatch):
    from psychopy.hardware import keyboard

    from analysis import InputError
    from study.session import _keyboard

    monkeypatch.setattr(keyboard, "havePTB", False)
    with pytest.raises(InputError, match=r"Psychtoolbox backend cannot load .* libjack-jackd2-0 "
                       r"and libasound2.*refusing to fall back"):  # fmt: skip
        _keyboard()


def test_dropped_frames_counts_each_missed_refresh():
    from study.session import dropped_frames

    period = 1 / 60
    # Flips at refreshes 0, 1, 2, 5, 6, 9 with up to 2 ms of time-stamp jitter: 2 + 2 missed.
    refreshes = [0, 1, 2, 5, 6, 9]
    jitter = [0.0, 0.002, -0.0015, 0.001, -0.002, 0.0]
    flips = [r * period + j for r, j in zip(refreshes, jitter, strict=True)]
    assert dropped_frames(flips, period) == 4
    assert dropped_frames([0.0], period) == 0
