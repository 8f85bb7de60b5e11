"""The session's flip scheduling and its timeline on a simulated display, no window.

Two simulated displays drive the session's own scheduling code (the flips of
:class:`sbir_study.study.session.window.Screen`, and the whole trial loop of
:class:`sbir_study.study.session.loop.TrialLoop` with its planned onsets):

* with vertical sync (frames mode): a flip returns at the next refresh of a
  display with a given period and phase; now and then a flip misses one or
  more refreshes (a dropped frame);
* without it (clock mode, as under Xvfb): a flip returns a random delay after
  it is called, now and then much later (the X server busy).

Over a long session the onsets must stay on the planned timeline (no drift
from the first trial to the last), every error be within half a refresh
(frames) or within the flip's own delay noise (clock) unless a frame was
dropped, and each dropped frame be counted.
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sbir_study.stimuli import SetDesign, generate_set, load_set
from sbir_study.study.protocol import Anchoring, Participants, Pauses, Protocol, Timing
from sbir_study.study.schedule import dropped_frames, late_frames, next_refresh_is_due
from sbir_study.study.session import window as session_window
from sbir_study.study.session.loop import TrialLoop
from sbir_study.study.session.simulated import Responder
from sbir_study.study.trials import build_trials


class FakeClock:
    """PsychoPy's clock, advanced by the session's own waiting and by each flip."""

    def __init__(self) -> None:
        self.t = 0.0

    def getTime(self) -> float:
        self.t += 2e-5  # reading the clock takes a little time
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(seconds, 0.0) + 5e-5  # a wake-up is a little late


class VsyncWindow:
    """A display with vertical sync: a flip returns at a refresh, sometimes missing some."""

    def __init__(self, clock: FakeClock, period: float, phase: float, rng, drop_rate: float):
        self.clock, self.period, self.phase, self.rng = clock, period, phase, rng
        self.drop_rate = drop_rate
        self.missed = 0

    def flip(self, clearBuffer=True) -> float:
        k = np.floor((self.clock.t - self.phase) / self.period + 1e-6) + 1
        if self.rng.random() < self.drop_rate:
            extra = int(self.rng.integers(1, 3))
            k += extra
            self.missed += extra
        self.clock.t = self.phase + k * self.period
        return self.clock.t

    def clearBuffer(self) -> None:
        pass


class ClockWindow:
    """No vertical sync: a flip returns after a random delay (X server latency)."""

    def __init__(self, clock: FakeClock, rng, stall_rate: float) -> None:
        self.clock, self.rng, self.stall_rate = clock, rng, stall_rate

    def flip(self, clearBuffer=True) -> float:
        delay = self.rng.normal(0.002, 0.0003)
        if self.rng.random() < self.stall_rate:
            delay += self.rng.uniform(0.02, 0.08)
        self.clock.t += max(delay, 0.0005)
        return self.clock.t

    def clearBuffer(self) -> None:
        pass


def run_timeline(screen, clock, trials: int, shown_s: float, blank_s: float):
    """The session's main path: onset at the plan, blank after shown_s, plan += period."""
    plan = clock.t + 0.5
    rows = []
    for _ in range(trials):
        onset, lost_onset, _ = screen.present(lambda: None, plan, current=lambda: None)
        blank, lost_blank, _ = screen.present(lambda: None, onset + shown_s, current=lambda: None)
        rows.append((plan, onset, blank, lost_onset + lost_blank))
        plan += shown_s + blank_s
    return np.array(rows)


@pytest.fixture
def fake_time(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(session_window.time, "sleep", clock.sleep)
    return clock


@settings(max_examples=10, deadline=None)
@given(
    hz=st.sampled_from([59.94, 60.0, 75.0, 120.0, 143.9]),
    phase=st.floats(0, 0.02),
    drop_rate=st.sampled_from([0.0, 1e-4, 1e-3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_frames_mode_onsets_stay_on_the_timeline(hz, phase, drop_rate, seed):
    clock = FakeClock()
    original = session_window.time.sleep
    session_window.time.sleep = clock.sleep
    try:
        rng = np.random.default_rng(seed)
        window = VsyncWindow(clock, 1 / hz, phase, rng, drop_rate)
        screen = session_window.Screen(window, "frames", 1 / hz, clock, tick=lambda: None)
        screen.last_flip = window.flip()
        rows = run_timeline(screen, clock, trials=300, shown_s=2.0, blank_s=1.0)
    finally:
        session_window.time.sleep = original
    plan, onset, blank, lost = rows.T
    error = onset - plan
    clean = lost == 0
    # The refresh nearest the plan: within half a refresh, at the first trial as at the last.
    assert np.abs(error[clean]).max() <= 0.5 / hz + 1e-9
    assert abs(np.median(error[:100]) - np.median(error[-100:])) <= 1 / hz
    # The stimulus stays for 2 s from its actual onset, to the nearest refresh.
    assert np.abs((blank - onset)[clean] - 2.0).max() <= 0.5 / hz + 1e-9
    # Every missed refresh is counted (some land between trials, where nothing is shown).
    assert lost.sum() <= window.missed
    if drop_rate == 0:
        assert lost.sum() == 0


def test_clock_mode_onsets_stay_on_the_timeline(fake_time):
    rng = np.random.default_rng(7)
    window = ClockWindow(fake_time, rng, stall_rate=0.01)
    screen = session_window.Screen(window, "clock", 1 / 60, fake_time, tick=lambda: None)
    screen._finish = lambda: None
    for _ in range(12):  # as the session does before the first trial
        called = fake_time.getTime()
        screen.delays.append(window.flip() - called)
    rows = run_timeline(screen, fake_time, trials=1300, shown_s=2.0, blank_s=1.0)
    plan, onset, blank, lost = rows.T
    error = (onset - plan) * 1000
    late = lost > 0
    assert np.median(np.abs(error)) < 0.5  # the flip's own delay is compensated
    assert np.abs(error[~late]).max() < 1000 / 60
    # A stall never moves the rest of the session: errors after a stall are as before it.
    stalled = np.flatnonzero(error > 10)
    assert len(stalled) > 0
    after = np.setdiff1d(stalled + 1, stalled)
    after = after[after < len(error)]
    assert np.abs(error[after]).max() < 2.0
    assert abs(np.median(error[:100]) - np.median(error[-100:])) < 0.5
    # A flip a whole frame or more after its deadline is counted as that many dropped frames.
    expected = [
        late_frames(o, p, 1 / 60) + late_frames(b, o + 2.0, 1 / 60)
        for p, o, b in zip(plan, onset, blank, strict=True)
    ]
    assert lost.tolist() == expected and sum(expected) > 0


class FakeStim:
    """A PsychoPy stimulus that notes on its window what it drew (an image's path, or None)."""

    def __init__(self, win, **settings) -> None:
        self.win, self.image, self.text, self.size = win, settings.get("image"), "", None

    def draw(self) -> None:
        self.win.drawn.append(self.image)


FAKE_VISUAL = SimpleNamespace(Rect=FakeStim, TextStim=FakeStim, ImageStim=FakeStim)


class OneLateOnset:
    """A simulated display whose first flip showing ``image`` comes ``late_s`` late."""

    def __init__(self, display, image: str, late_s: float) -> None:
        self.display, self.image, self.late_s = display, image, late_s
        self.drawn: list[str | None] = []
        self.was_late = False

    def flip(self, clearBuffer=True) -> float:
        shown, self.drawn = self.drawn, []
        t = self.display.flip(clearBuffer)
        if self.image in shown and not self.was_late:
            self.was_late = True
            self.display.clock.t += self.late_s
            t = self.display.clock.t
        return t

    def clearBuffer(self) -> None:
        self.drawn = []


class FakeKeyboard:
    """PsychoPy's keyboard: the simulated participant's presses come back from getKeys."""

    def __init__(self) -> None:
        self.device = self
        self.pressed: list[SimpleNamespace] = []

    def makeResponse(self, code: str, tDown: float) -> None:
        self.pressed.append(SimpleNamespace(name=code, tDown=tDown))

    def getKeys(self, waitRelease: bool) -> list[SimpleNamespace]:
        if not waitRelease:
            return []
        keys, self.pressed = self.pressed, []
        return keys


class FakeRecorder:
    recorded = 0

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def append(self, row, keys=()) -> None:
        self.rows.append(dict(row))


@pytest.fixture(scope="module")
def six_pairs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stimuli") / "set"
    generate_set(
        folder,
        SetDesign(sketches=1, images_per_sketch=6, anchor_sketches=0, width=96, height=72),
        seed=3,
    )
    return load_set(folder)


FRAME_S = 1 / 60
#: The lateness of the late flip, and how near the plan every other flip comes.
LATE_S = {"clock": 0.040, "frames": 2 * FRAME_S}
TOLERANCE_S = {
    "clock": 0.0015,  # the flip's own delay noise, compensated
    "frames": FRAME_S / 2 + 1e-9,  # the refresh nearest the plan
}


def run_six_trials(mode: str, stimulus_set, clock: FakeClock) -> pd.DataFrame:
    """The session's own trial loop on a simulated display: the records it writes.

    2 s stimulus, 1 s blank, a pause after every 4 pairs; the simulated
    participant rates 1 to 6, 0.8 s after each onset, and ends each waiting
    screen 0.3 s after it appears. The flip that shows the third pair comes
    ``LATE_S[mode]`` late.
    """
    protocol = Protocol(
        task="sbirtest",
        timing=Timing(stimulus_s=2.0, blank_s=1.0),
        anchoring=Anchoring(enabled=False, repeat=False),
        pauses=Pauses(break_every=4),
        participants=Participants(details=()),
    )
    trials = build_trials(protocol, stimulus_set.manifest, seed=1)
    if mode == "clock":
        display = ClockWindow(clock, np.random.default_rng(11), stall_rate=0.0)
    else:
        display = VsyncWindow(clock, FRAME_S, 0.004, np.random.default_rng(11), drop_rate=0.0)
    third = str(stimulus_set.path(trials["image_path"].iloc[2]))
    win = OneLateOnset(display, third, LATE_S[mode])
    kb = FakeKeyboard()
    answers = pd.DataFrame({"rating": [1, 2, 3, 4, 5, 6], "rt": 0.8})
    screen = session_window.SessionWindow(
        win,
        kb,
        protocol,
        stimulus_set,
        session_window.DisplayTiming(60.0, 0.1, mode),
        clock,
        Responder(kb, answers, protocol.response.keys),
        visual=FAKE_VISUAL,
    )
    screen.screen._finish = lambda: None  # nothing to render
    screen.warm_up(trials)
    recorder = FakeRecorder()
    assert TrialLoop(screen, protocol, trials, "01").run(recorder) == "complete"
    assert win.was_late
    record = pd.DataFrame(recorder.rows)
    assert record["rating"].tolist() == [1, 2, 3, 4, 5, 6]
    return record


@pytest.mark.parametrize("mode", ["clock", "frames"])
def test_a_late_flip_shortens_the_blank_not_the_session(mode, six_pairs, fake_time):
    record = run_six_trials(mode, six_pairs, fake_time)
    late, tolerance = LATE_S[mode], TOLERANCE_S[mode]
    # The planned onsets, by the rule (DESIGN.md, onset_planned in the sidecar): the previous
    # planned onset + 2 s + 1 s, and after the pause (its screen due at 13 s, ended 0.3 s
    # after it appeared) one blank after the key press that ended it.
    pause_shown = record["onset"].iloc[3] + record["stim_duration"].iloc[3]
    pause_shown += record["blank_duration"].iloc[3]
    after_pause = pause_shown + 0.3 + 1.0
    expected = np.array([1.0, 4.0, 7.0, 10.0, after_pause, after_pause + 3.0])
    np.testing.assert_allclose(record["onset_planned"], expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(pause_shown, 13.0, rtol=0, atol=tolerance)
    np.testing.assert_allclose(
        record["paused_before"], [0, 0, 0, 0, after_pause - 13.0, 0], rtol=0, atol=1e-6
    )

    # The flips: each on its plan but the late one; the pair stays 2 s from its actual onset.
    # The blank before the late pair lasts until its flip; the blank after it is shorter by as
    # much as the flip was late, and nothing after it moves.
    np.testing.assert_allclose(
        record["onset"] - record["onset_planned"], [0, 0, late, 0, 0, 0], rtol=0, atol=tolerance
    )
    np.testing.assert_allclose(record["stim_duration"], 2.0, rtol=0, atol=tolerance)
    blanks = [1.0, 1.0 + late, 1.0 - late, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(record["blank_duration"], blanks, rtol=0, atol=2 * tolerance)


@pytest.mark.parametrize("mode", ["clock", "frames"])
def test_the_late_flip_is_the_only_one_counted_as_dropped_frames(mode, six_pairs, fake_time):
    # 40 ms late at 60 Hz (clock mode) is two whole frame periods, as is a flip two refreshes
    # late (frames mode). The refreshes while a trial settles and the next pair loads, and
    # those of the pause, had no flip due: none of them is a dropped frame.
    record = run_six_trials(mode, six_pairs, fake_time)
    assert record["dropped_frames"].tolist() == [0, 0, 2, 0, 0, 0]


class LateScreenChanges:
    """A display with vertical sync whose screen changes come as late as told, no other flip.

    The session draws the new screen with :meth:`change`; the flip after it lands
    ``late.pop(0)`` refreshes after the next one. Every other flip lands at the next refresh.
    """

    def __init__(self, clock: FakeClock, period: float, phase: float, late: list[int]) -> None:
        self.clock, self.period, self.phase, self.late = clock, period, phase, list(late)
        self.changing = False

    def change(self) -> None:
        self.changing = True

    def flip(self, clearBuffer=True) -> float:
        k = np.floor((self.clock.t - self.phase) / self.period + 1e-6) + 1
        if self.changing:
            k += self.late.pop(0)
            self.changing = False
        self.clock.t = self.phase + k * self.period
        return self.clock.t


@settings(max_examples=30, deadline=None)
@example(hz=60.0, phase=0.004, trials=[(0, 0, 0.1, 0.0), (2, 0, 0.1, 0.0), (0, 0, 0.1, 0.0)])
@example(hz=60.0, phase=0.004, trials=[(1, 1, 0.1, 0.0), (2, 3, 0.1, 0.3), (1, 0, 0.1, 0.0)])
@given(
    hz=st.sampled_from([59.94, 60.0, 75.0, 120.0, 143.9]),
    phase=st.floats(0, 0.02),
    trials=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.floats(0, 1.5), st.floats(0, 0.5)),
        min_size=1,
        max_size=12,
    ),
)
def test_frames_mode_counts_late_screen_changes_not_the_waits_between_them(hz, phase, trials):
    # Each trial: how many refreshes late its onset and its blank come, how long the session
    # waits after the onset (settling, loading the next pair) and before the next onset (a
    # pause). Late flips in a row, and waits of any length that leave the next flip on time:
    # the count is the lateness the display was told, nothing for the waits.
    clock = FakeClock()
    period = 1 / hz
    late = [step for onset_late, blank_late, _, _ in trials for step in (onset_late, blank_late)]
    window = LateScreenChanges(clock, period, phase, late)
    screen = session_window.Screen(window, "frames", period, clock, tick=lambda: None)
    screen.last_flip = window.flip()
    plan = clock.t + 0.5
    for onset_late, blank_late, settle_s, wait_s in trials:
        onset, lost_onset, _ = screen.present(window.change, plan, current=lambda: None)
        clock.t += settle_s
        blank, lost_blank, _ = screen.present(window.change, onset + 2.0, current=lambda: None)
        assert abs(onset - plan - onset_late * period) <= period / 2 + 1e-9
        assert abs(blank - onset - 2.0 - blank_late * period) <= period / 2 + 1e-9
        assert (lost_onset, lost_blank) == (onset_late, blank_late)
        clock.t += wait_s
        plan += 3.0


@pytest.mark.parametrize(
    ("called", "shown", "late"),
    [
        (16.5, 17, 4),  # past the deadline: no refresh to wait for
        (12.2, 14, 1),  # just before it: the one redraw takes the deadline's refresh
    ],
)
def test_a_screen_change_after_a_wait_up_to_its_deadline_counts_its_late_refreshes(
    called, shown, late
):
    # The session waited (a slow load, say) until `called` refreshes, with the change due at
    # refresh 13, the deadline's own. It comes at refresh `shown`, late by the refreshes
    # between; the waiting before it is not counted.
    clock = FakeClock()
    period = 1 / 60
    window = LateScreenChanges(clock, period, 0.0, late=[0])
    screen = session_window.Screen(window, "frames", period, clock, tick=lambda: None)
    screen.last_flip = window.flip()  # refresh 1
    clock.t = called * period
    flipped, lost, _ = screen.present(window.change, 13 * period, current=lambda: None)
    assert flipped == pytest.approx(shown * period)
    assert lost == late


@example(last=29.77153143865342, hz=164.4805658764452, ahead=1.5)  # a tie, found in a CI run
@example(last=29.77153143865342, hz=164.4805658764452, ahead=1.5 - 1e-6)
@example(last=29.77153143865342, hz=164.4805658764452, ahead=1.5 + 1e-6)
@given(last=st.floats(0, 100), hz=st.floats(30, 500), ahead=st.floats(-2, 10))
def test_the_due_refresh_is_the_nearest_one(last, hz, ahead):
    frame = 1 / hz
    deadline = last + ahead * frame
    due = next_refresh_is_due(last, frame, deadline)
    next_refresh = last + frame
    now, later = abs(next_refresh - deadline), abs(next_refresh + frame - deadline)
    # Due exactly when no later refresh would be nearer the deadline. At a tie (deadline half
    # way between two refreshes, up to rounding) both are as near and either answer is right.
    if next_refresh >= deadline:
        assert due
    elif abs(now - later) > 1e-9:
        assert due == (now < later)


@given(
    k=st.lists(st.integers(1, 4), min_size=1, max_size=50),
    hz=st.sampled_from([60, 144]),
    jitter=st.floats(0, 0.2),
)
def test_dropped_frames_counts_each_missed_refresh(k, hz, jitter):
    period = 1 / hz
    rng = np.random.default_rng(len(k))
    refreshes = np.concatenate([[0], np.cumsum(k)])
    flips = refreshes * period + rng.uniform(-jitter, jitter, len(refreshes)) * period / 2
    assert dropped_frames(flips, period) == sum(step - 1 for step in k)
