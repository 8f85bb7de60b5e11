"""The rating session of the paper's Sec. 2.3, in a PsychoPy window.

Design -> initialise -> run -> end:

* **Design.** Everything that needs no window is checked first, in this
  order: the protocol, the stimulus set, the ``--data`` folder, the
  participant label, an existing session, the participant details given on
  the command line. Then the display (:func:`sbir_study.study.display.require_display`):
  without one, the session stops with one line before PsychoPy opens
  anything. The participant's seed is drawn (or, on resume, read back) and
  the trial list built (:func:`sbir_study.study.trials.build_trials`).
* **Initialise.** The window is opened with a monitor definition from the
  protocol (stimuli sized in degrees of visual angle); its refresh is
  measured. Durations are counted in frames when the refresh rate is stable
  and plausible, and timed by the clock otherwise (a virtual display without
  vertical sync). The keyboard must be PsychoPy's Psychtoolbox backend, which
  time-stamps each key-down itself; without it the session refuses to start.
  Details the protocol records and the command line did not give are asked
  on screen.
* **Run.** Each pair is shown side by side for ``stimulus_s``, then black for
  ``blank_s``, then the next pair. Onsets are planned on one timeline
  (:mod:`sbir_study.study.schedule`), so lateness never accumulates. Every key-down of
  the session goes into one stream ordered by its own time; what a trial
  records is :func:`sbir_study.study.responses.score_trial` of that stream, so the last
  rating key pressed before the window closes is the rating, whatever order
  the keyboard returned the presses in. The backend stamps a key with the
  time the X server took it in and delivers it a moment later, so a trial is
  scored a short while (``_SETTLE_S``) after its window closed, with every
  key pressed before the close in hand. A pause or quit key pressed at any
  instant of a trial takes effect right after that trial: the next screen is
  chosen with a last look at the keys just before its flip, and a press in
  the very last instant that turns up after the next pair was flipped
  withdraws that pair at once (it is shown again, whole, after the pause).
  Each trial is written (one line, fsync) as soon as it is scored, after the
  keys behind it go to the session's key log (``sourcedata/``).
* **End.** The end screen waits for the space bar; the sidecar is completed
  (status, trials recorded, rating keys that arrived too late for their trial
  if any). A session stopped by an error is completed as incomplete, with
  what stopped it.

``simulate=True`` lets a simulated participant answer, with the rater model
of :mod:`sbir_study.analysis.simulate` (the one ``sbir-study simulate`` uses): its key
presses go through the keyboard device's ``makeResponse``, time-stamped at the
simulated response time, and take the same path as real ones.
"""

from __future__ import annotations

import bisect
import json
import math
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.provenance import SESSION_PACKAGES, software_versions

from ..participants import DETAILS, MISSING, check_details
from ..protocol import CONTINUE_KEY, Protocol, load_protocol, protocol_dict
from ..recorder import SessionRecorder, check_dataset_folder, recorded_details
from ..responses import KeyEvent, control_presses, first_press, format_presses, score_trial
from ..schedule import dropped_frames, late_frames, next_refresh_is_due
from ..trials import build_trials, draw_seed, stimulus_set_for

__all__ = ["SessionOutcome", "run_from_files", "run_session"]

_QUIT_ANSWERS = {"y": True, "n": False}
# Clock-timed flips: the next screen is drawn and rendered this long before it is due.
_PREPARE_S = 0.025
# A flip is called this much before its deadline, less the measured time a flip takes.
_SPIN_S = 0.003
# After a response window closes, keys pressed before it closed are awaited this long.
_SETTLE_S = 0.1


@dataclass(frozen=True)
class SessionOutcome:
    """What :func:`run_session` did."""

    path: Path
    status: str  # "complete" or "incomplete"
    recorded: int  # trials on disk at the end
    planned: int
    timing_mode: str  # "frames" or "clock"
    refresh_hz: float | None


def run_from_files(
    protocol_file: str | Path,
    stimuli: str | Path,
    participant: str,
    data: str | Path,
    *,
    resume: bool = False,
    simulate: bool = False,
    windowed: bool = False,
    seed: int | None = None,
    details: Mapping[str, str | None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SessionOutcome:
    """``sbir-study run``: check every input, then run the session (see the module docstring).

    Bad input, a missing display included, raises
    :class:`~sbir_study.foundation.checks.InputError` before any window opens.
    ``progress`` receives one line for the experimenter at each stage.
    """
    from sbir_study.foundation.checks import check_participant

    protocol = load_protocol(protocol_file)
    stimulus_set = stimulus_set_for(stimuli, protocol)
    check_participant(participant, "--participant")
    if resume and seed is not None:
        raise InputError("--seed: a resumed session uses its recorded seed; drop --seed")
    return run_session(protocol, stimulus_set, participant, data, protocol_file=protocol_file,
                       resume=resume, simulate=simulate, windowed=windowed, seed=seed,
                       details=details, progress=progress)  # fmt: skip


def run_session(
    protocol: Protocol,
    stimulus_set,
    participant: str,
    data: str | Path,
    *,
    protocol_file: str | Path = "",
    resume: bool = False,
    simulate: bool = False,
    windowed: bool = False,
    seed: int | None = None,
    details: Mapping[str, str | None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SessionOutcome:
    """Run (or resume) one participant's session; see the module docstring.

    ``stimulus_set`` is a :class:`sbir_study.stimuli.StimulusSet` (checked);
    ``details`` maps ``age``, ``sex``, ``handedness`` to the values given on
    the command line (None: not given, asked on screen unless ``simulate``).
    ``progress`` receives one line for the experimenter at each stage.
    Returns a :class:`SessionOutcome`; bad input raises
    :class:`~sbir_study.foundation.checks.InputError`.
    """
    from sbir_study.foundation import bids

    say = progress or (lambda line: None)

    check_dataset_folder(data)
    label = bids.check_label(participant)
    path = bids.beh_path(data, label, protocol.task)
    if resume:
        seed = _recorded_seed(path)
    elif path.exists():
        raise InputError(
            f"{path}: a session of participant {label!r} is already recorded; it is never "
            "overwritten (pass --resume to continue it, or choose another --participant)"
        )
    given = check_details(dict(details or {}), protocol.participants.details)
    if resume:
        given = _details_on_resume(data, label, given)
    if seed is None:
        seed = draw_seed()
    trials = build_trials(protocol, stimulus_set.manifest, seed)
    responder_plan = _simulated_answers(protocol, stimulus_set, trials, seed) if simulate else None

    from ..display import require_display

    require_display()
    if not protocol.dataset.authors and not (Path(data) / "dataset_description.json").exists():
        warnings.warn(
            f"the protocol {protocol.name!r} names no authors ([dataset] authors); the new "
            "dataset's dataset_description.json will name none",
            stacklevel=2,
        )
    from psychopy import core, logging

    logging.console.setLevel(logging.ERROR)
    # Real-time priority (where the system allows it) before the keyboard and the window
    # start their threads, so that those inherit it.
    realtime = bool(core.rush(True))
    kb = _keyboard()

    from psychopy import monitors, visual

    display = protocol.display
    monitor = monitors.Monitor("sbir-study", width=display.width_cm, distance=display.distance_cm)
    monitor.setSizePix(list(display.resolution))
    fullscreen = display.fullscreen and not windowed
    size = (
        list(display.resolution)
        if fullscreen
        else [min(display.resolution[0], 1280), min(display.resolution[1], 800)]
    )
    win = visual.Window(size=size, fullscr=fullscreen, monitor=monitor, units="deg",
                        color=display.background, colorSpace="rgb", allowGUI=not fullscreen,
                        waitBlanking=True, checkTiming=False)  # fmt: skip
    loop = None
    try:
        refresh, jitter = _measure_refresh(win)
        low, high = protocol.timing.refresh_range_hz
        frames_ok = refresh is not None and low <= refresh <= high
        frames_ok = frames_ok and jitter <= protocol.timing.frame_jitter_ms
        mode = "frames" if frames_ok else "clock"
        loop = _Loop(win, kb, protocol, stimulus_set, trials, label, mode, refresh, core,
                     responder_plan)  # fmt: skip
        say(f"Window open ({mode} timing, refresh {refresh or 0:.1f} Hz).")
        wanted = [d for d in protocol.participants.details if d not in given]
        if resume or simulate:
            answered = {name: MISSING for name in wanted}  # recorded at the start, or nobody
        else:
            if wanted:
                say(f"Asking the participant on screen: {', '.join(wanted)}.")
            answered = loop.ask_details(wanted)
            if answered is None:
                return SessionOutcome(path, "incomplete", 0, len(trials), mode, refresh)
        session = {
            "TaskName": protocol.task,
            "Protocol": protocol_dict(protocol),
            "ProtocolFile": str(protocol_file),
            "StimulusSet": str(stimulus_set.folder),
            "StimulusSetDigest": stimulus_set.digest,
            "Seed": int(seed),
            "MeasuredRefreshRate": refresh,
            "FramePeriodJitterMs": jitter,
            "TimingMode": mode,
            "KeyboardBackend": "ptb",
            "RealtimePriority": realtime,
            "Simulated": bool(simulate),
            "Software": software_versions(SESSION_PACKAGES),
        }
        order = trials[["trial", "phase", "sketch_id", "image_id"]].itertuples(index=False)
        dataset = {"Name": protocol.dataset.name, "Authors": list(protocol.dataset.authors)}
        recorder = SessionRecorder.open(data, label, task=protocol.task, session=session,
                                        trial_order=list(order), resume=resume,
                                        details={**given, **answered}, dataset=dataset)  # fmt: skip
        say(
            f"Recording to {recorder.path}; the instructions are on screen, the session begins "
            "when the participant presses space."
        )
        try:
            status = loop.run(recorder)
        except BaseException as error:
            # Whatever stops the session (a stimulus file gone, Ctrl-C, a bug), every trial so
            # far is on disk; the sidecar says the session stopped, and why.
            recorder.finish("incomplete", TrialsRecorded=loop.recorded,
                            RatingKeysReceivedLate=loop.late_keys,
                            StoppedBy=f"{type(error).__name__}: {error}")  # fmt: skip
            if isinstance(error, OSError) and getattr(error, "filename", None):
                raise InputError(
                    f"{error.filename}: {error.strerror or error} during the session; its "
                    f"{loop.recorded} trials so far are recorded in {recorder.path} (continue "
                    "with --resume once the file is back)"
                ) from None
            raise
        recorder.finish(status, TrialsRecorded=loop.recorded, RatingKeysReceivedLate=loop.late_keys)
    finally:
        win.close()
        if realtime:
            core.rush(False)
    return SessionOutcome(path, status, loop.recorded, len(trials), mode, refresh)


def _details_on_resume(data, label: str, given: dict[str, str]) -> dict[str, str]:
    """Details were recorded when the session began; given again, they must agree."""
    recorded = recorded_details(data, label)
    for name, value in given.items():
        if recorded.get(name, MISSING) != value:
            raise InputError(
                f"--{name}: participants.tsv records {recorded.get(name, MISSING)!r} for "
                f"sub-{label}, not {value!r}; a resumed session keeps what was recorded (leave "
                f"--{name} out, or correct participants.tsv by hand)"
            )
    return {}


def _keyboard():
    """PsychoPy's keyboard on the Psychtoolbox backend, or an InputError naming what is missing."""
    from psychopy.hardware import keyboard

    if not keyboard.havePTB:
        raise InputError(
            "keyboard: PsychoPy's Psychtoolbox backend cannot load (on Debian install "
            "libjack-jackd2-0 and libasound2); refusing to fall back to a backend with poor timing"
        )
    kb = keyboard.Keyboard(backend="ptb")
    if keyboard.KeyboardDevice._backend != "ptb":
        raise InputError(
            f"keyboard: PsychoPy chose the {keyboard.KeyboardDevice._backend!r} backend instead "
            "of Psychtoolbox; refusing to run with poor key timing"
        )
    return kb


class _KeyStream:
    """Every key-down of the session, each once, in the order of its own time stamp.

    ``getKeys(waitRelease=False)`` returns keys still held; a tap between two
    polls only comes back with ``waitRelease=True``, and a key returned on
    press comes back again on release: both are collected, and one key-down is
    the pair (name, time stamp). Times are the backend's, on PsychoPy's clock.
    """

    def __init__(self, kb, controls: set[str]) -> None:
        self.kb = kb
        self.events: list[KeyEvent] = []  # sorted by time
        self.received: list[KeyEvent] = []  # in the order they came in
        self.controls: list[KeyEvent] = []  # the pause and quit keys among them
        self._control_names = controls
        self._seen: set[tuple[str, float]] = set()

    def poll(self) -> None:
        for key in [*self.kb.getKeys(waitRelease=False), *self.kb.getKeys(waitRelease=True)]:
            ident = (key.name, float(key.tDown))
            if ident not in self._seen:
                self._seen.add(ident)
                event = KeyEvent(t=ident[1], name=ident[0])
                bisect.insort(self.events, event, key=lambda e: e.t)
                self.received.append(event)
                if event.name in self._control_names:
                    self.controls.append(event)

    def since(self, t: float) -> list[KeyEvent]:
        """The events at or after ``t`` (what scoring a window needs, without the whole past)."""
        return self.events[bisect.bisect_left(self.events, t, key=lambda e: e.t) :]


class _Responder:
    """A simulated participant pressing keys through the keyboard device's ``makeResponse``."""

    def __init__(self, kb, answers: pd.DataFrame, key_names: tuple[str, ...]) -> None:
        self.kb = kb
        self.answers = answers  # rating (or NA) and rt per trial, in trial order
        self.key_names = key_names
        self._due: list[tuple[float, str]] = []

    def plan(self, index: int, onset: float) -> None:
        """Press the trial's rating key at onset + rt (unless the model misses this one)."""
        rating = self.answers["rating"].iloc[index]
        if not pd.isna(rating):
            rt = float(self.answers["rt"].iloc[index])
            self.schedule(self.key_names[int(rating) - 1], onset + rt)

    def schedule(self, name: str, at: float) -> None:
        self._due.append((at, name))

    def act(self, now: float) -> None:
        """Press every key that is due, time-stamped when it was due."""
        for at, name in [d for d in self._due if d[0] <= now]:
            self.kb.device.makeResponse(code=name, tDown=at)
            self._due.remove((at, name))


def _simulated_answers(protocol: Protocol, stimulus_set, trials: pd.DataFrame, seed: int):
    """The simulated participant's rating and response time per trial (analysis.simulate)."""
    from sbir_study.analysis.simulate import RaterModel, simulated_responses

    window = protocol.timing.stimulus_s + protocol.timing.blank_s
    return simulated_responses(stimulus_set.manifest, trials, RaterModel(), seed, window_s=window)


def _measure_refresh(win, frames: int = 60) -> tuple[float | None, float]:
    """Mean refresh rate (Hz) and the sd of the frame period (ms) over ``frames`` flips."""
    times = []
    for _ in range(frames + 1):
        times.append(win.flip())
    periods = np.diff(times)
    if periods.mean() <= 0:
        return None, float("inf")
    return float(1.0 / periods.mean()), float(periods.std() * 1000.0)


def _recorded_seed(path: Path) -> int:
    sidecar = path.with_suffix(".json")
    if not path.exists():
        raise InputError(f"{path}: no session to resume")
    try:
        return int(json.loads(sidecar.read_text(encoding="utf-8"))["Seed"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"{sidecar}: Seed: cannot be read ({error}); cannot resume") from None


def _clock_offset(core) -> float:
    """time.monotonic() minus PsychoPy's default clock, from the closest of 20 paired readings."""
    best = (float("inf"), 0.0)
    for _ in range(20):
        before = time.monotonic()
        psychopy_now = core.getTime()
        after = time.monotonic()
        best = min(best, (after - before, (before + after) / 2 - psychopy_now))
    return best[1]


class _Screen:
    """Flips at planned times: by counting refreshes (frames mode) or by the clock."""

    def __init__(self, win, mode: str, frame_s: float, core, tick: Callable[[], None]) -> None:
        self.win, self.mode, self.frame, self.core, self.tick = win, mode, frame_s, core, tick
        self.delays: deque[float] = deque(maxlen=15)  # flip call -> return, clock mode
        self.last_flip = core.getTime()

    def _finish(self) -> None:
        """Wait until OpenGL has rendered everything drawn so far."""
        import pyglet.gl

        pyglet.gl.glFinish()

    def wait_until(self, deadline: float) -> None:
        """Poll the keys until ``deadline``, sleeping in short steps, spinning at the end."""
        while (remaining := deadline - self.core.getTime()) > _SPIN_S:
            self.tick()
            time.sleep(min(remaining - _SPIN_S, 0.002))
        while self.core.getTime() < deadline:
            pass

    def flip(self) -> float:
        """Flip now (a screen whose timing does not matter: it waits for a key)."""
        self.last_flip = self.win.flip()
        self.tick()
        return self.last_flip

    def present(
        self,
        draw: Callable[[], None],
        deadline: float,
        *,
        current: Callable[[], None],
        last_look: Callable[[], Callable[[], None] | None] | None = None,
    ) -> tuple[float, int, bool]:
        """Show ``draw`` from the refresh nearest ``deadline`` (clock: at ``deadline``).

        ``current`` redraws what is on screen until then (frames mode);
        ``last_look``, called just before the flip, may return another screen
        to show instead. Returns the flip time, the frames lost, and whether
        the other screen was shown.
        """
        if self.mode == "frames":
            flips = [self.last_flip]
            # (The clock, too: a flip that stopped waiting for the refresh must not loop forever.)
            while not next_refresh_is_due(self.last_flip, self.frame, deadline) and (
                self.core.getTime() < deadline - self.frame / 2
            ):
                current()
                self.last_flip = self.win.flip()
                flips.append(self.last_flip)
                self.tick()
            other = last_look() if last_look else None
            (other or draw)()
            self.last_flip = self.win.flip()
            self.tick()
            return self.last_flip, dropped_frames([*flips, self.last_flip], self.frame), bool(other)
        self.wait_until(deadline - _PREPARE_S)
        # Clear, draw and render now, so that the flip at the deadline only swaps.
        self.win.clearBuffer()
        draw()
        self._finish()
        lead = float(np.median(self.delays)) if self.delays else 0.0
        self.wait_until(deadline - lead)
        other = last_look() if last_look else None
        if other:
            self.win.clearBuffer()
            other()
        called = self.core.getTime()
        self.last_flip = self.win.flip(clearBuffer=False)
        if not other:
            self.delays.append(self.last_flip - called)
        self.tick()
        return self.last_flip, late_frames(self.last_flip, deadline, self.frame), bool(other)


class _Loop:
    """The trial loop; every screen change is a flip whose time is recorded."""

    def __init__(self, win, kb, protocol: Protocol, stimulus_set, trials: pd.DataFrame,
                 label: str, mode: str, refresh: float | None, core,
                 answers: pd.DataFrame | None) -> None:  # fmt: skip
        from psychopy import visual

        self.win, self.protocol, self.core = win, protocol, core
        self.set, self.trials, self.label = stimulus_set, trials, label
        self.offset = _clock_offset(core)
        frame = 1.0 / refresh if mode == "frames" and refresh else 1.0 / 60.0
        response = protocol.response
        self.control_keys = {response.quit_key}
        if protocol.pauses.allowed:
            self.control_keys.add(response.pause_key)
        self.keys = _KeyStream(kb, self.control_keys)
        self._handled: set[KeyEvent] = set()  # control presses that took effect
        self.responder = (
            _Responder(kb, answers, protocol.response.keys) if answers is not None else None
        )
        self.screen = _Screen(win, mode, frame, core, self._tick)
        self.key_map = protocol.key_map
        self.black = visual.Rect(win, width=2.0, height=2.0, units="norm", fillColor="black",
                                 lineColor="black")  # fmt: skip
        self.text = visual.TextStim(win, text="", height=0.8, wrapWidth=30, color="white")
        # One laid-out text per waiting screen: laying out a text takes far longer than a
        # frame, and a waiting screen may replace a pair at its planned flip.
        self.screens = {
            kind: visual.TextStim(win, text=_screen_text(kind, protocol), height=0.8,
                                  wrapWidth=30, color="white")
            for kind in ("quit", "pause", "main", "anchoring", "end")
        }  # fmt: skip
        display = protocol.display
        half = (display.stimulus_deg + display.gap_deg) / 2
        self._slots = [
            (visual.ImageStim(win, image=None, pos=(-half, 0.0)),
             visual.ImageStim(win, image=None, pos=(half, 0.0)),
             visual.TextStim(win, text="", height=1.2, pos=(0, -0.5 * display.stimulus_deg),
                             color="white"))
            for _ in range(2)
        ]  # fmt: skip
        self._turn = 0
        self.recorder = None
        self.recorded = 0
        self._logged = 0  # keys written to the key log
        self._checked = 0  # keys looked at for late arrival
        self._scored_until = -math.inf  # the end of the last trial written
        self.late_keys = 0
        self.session_start = 0.0
        self._warm_up()

    def _warm_up(self) -> None:
        """Draw every kind of screen once and learn how long a flip takes, before any trial.

        First draws compile shaders and upload textures; none of that may land
        inside a trial. The time a clock-timed flip takes to return is
        learned from a few black screens, so that the first trial's flips
        already come on time.
        """
        for slot in range(2):
            row = self.trials.iloc[slot % len(self.trials)].copy()
            row["phase"], row["anchor_rating"] = "anchor_demo", 1  # the label is drawn too
            _draw_all(self._stimuli(row))
            self.win.flip()
        for screen in self.screens.values():
            screen.draw()
            self.win.flip()
        for _ in range(12):
            self.win.clearBuffer()
            self.black.draw()
            self.screen._finish()
            called = self.core.getTime()
            self.screen.delays.append(self.win.flip(clearBuffer=False) - called)
            time.sleep(0.01)
        self.black.draw()
        self.screen.flip()

    # --- keys ---
    def _tick(self) -> None:
        if self.responder is not None:
            self.responder.act(self.core.getTime())
        self.keys.poll()

    def _answer(self, keys: set[str], shown: float) -> KeyEvent:
        """Wait for the first press of one of ``keys`` at or after ``shown``."""
        if self.responder is not None and CONTINUE_KEY in keys:
            self.responder.schedule(CONTINUE_KEY, shown + 0.3)  # reads, then goes on
        while (event := first_press(self.keys.since(shown), shown, keys)) is None:
            self._tick()
            time.sleep(0.001)
        return event

    # --- screens that wait for a key ---
    def _draw_message(self, text: str) -> None:
        self.text.text = text
        self.text.draw()

    def _black(self) -> float:
        """The black screen, now (after a waiting screen, until the next pair)."""
        self.black.draw()
        return self.screen.flip()

    def _show(self, kind: str) -> float:
        """A waiting screen (its text laid out in advance), now."""
        self.win.clearBuffer()
        self.screens[kind].draw()
        return self.screen.flip()

    def _message(self, text: str) -> float:
        self.win.clearBuffer()  # a clock-timed flip leaves the back buffer as it was
        self._draw_message(text)
        return self.screen.flip()

    def ask_details(self, wanted: list[str]) -> dict[str, str] | None:
        """Ask each detail on screen; None if the participant chose to end instead."""
        answers = {}
        for name in wanted:
            detail = DETAILS[name]
            if detail.keys is None:
                value = self._type_number(detail.question)
            else:
                shown = self._message(detail.question)
                keys = {*detail.keys, self.protocol.response.quit_key}
                event = self._answer(keys, shown)
                value = detail.keys.get(event.name)
            if value is None:
                return None
            answers[name] = value
        return answers

    def _type_number(self, question: str) -> str | None:
        """A whole number typed with the digit keys (Enter confirms, Enter alone: n/a)."""
        from ..participants import AGE_RANGE

        digits = {str(d): str(d) for d in range(10)} | {f"num_{d}": str(d) for d in range(10)}
        keys = {*digits, "backspace", "return", "num_enter", self.protocol.response.quit_key}
        typed, note = "", ""
        shown = self._message(f"{question}\n\n_")
        used = 0  # presses since the question appeared are taken in order, each once
        while True:
            presses = [e for e in self.keys.since(shown) if e.name in keys]
            if len(presses) <= used:
                self._tick()
                time.sleep(0.001)
                continue
            event = presses[used]
            used += 1
            if event.name == self.protocol.response.quit_key:
                return None
            if event.name in digits and len(typed) < 3:
                typed += digits[event.name]
            elif event.name == "backspace":
                typed = typed[:-1]
            elif event.name in ("return", "num_enter"):
                if not typed:
                    return MISSING
                if AGE_RANGE[0] <= int(typed) <= AGE_RANGE[1]:
                    return str(int(typed))
                typed, note = "", f"Please type a number from {AGE_RANGE[0]} to {AGE_RANGE[1]}."
            self._message(f"{question}\n\n{typed or '_'}\n\n{note}")

    def _waiting_screens(self, kinds: list[str], shown: float | None) -> tuple[str, float]:
        """Show each waiting screen until it is answered; ("go" | "quit" | "end", answer time).

        ``shown`` is the flip time of the first screen if it is already on
        screen. Every screen but the question itself also accepts the quit key,
        which asks the question; a "no" returns to the screen.
        """
        quit_key = self.protocol.response.quit_key
        answered = self.core.getTime()
        for number, kind in enumerate(kinds):
            if number or shown is None:
                shown = self._show(kind)
            while True:
                if kind == "quit":
                    event = self._answer(set(_QUIT_ANSWERS), shown)
                    if _QUIT_ANSWERS[event.name]:
                        return "quit", event.t
                    answered = event.t
                    break
                event = self._answer({CONTINUE_KEY, quit_key}, shown)
                answered = event.t
                if event.name == CONTINUE_KEY:
                    break
                decision = self._answer(set(_QUIT_ANSWERS), self._show("quit"))
                if _QUIT_ANSWERS[decision.name]:
                    return "quit", decision.t
                shown = self._show(kind)
            if kind == "end":
                return "end", answered
        return "go", answered

    # --- the pairs ---
    def _stimuli(self, row) -> list:
        """The pair of ``row`` ready to draw, on the next of two reused sets of stimuli.

        Two sets take turns (the pair on screen, the next one loading), so a
        session of any length keeps two textures per image, not one per trial.
        """
        from PIL import Image

        self._turn = 1 - self._turn
        sketch, image, label = self._slots[self._turn]
        width = self.protocol.display.stimulus_deg
        for stim, relative in ((sketch, row.sketch_path), (image, row.image_path)):
            path = self.set.path(relative)
            with Image.open(path) as opened:
                aspect = opened.height / opened.width
            stim.image = str(path)
            stim.size = (width, width * aspect)
        if row.phase == "anchor_demo":
            label.text = f"Rating: {row.anchor_rating}"
            return [sketch, image, label]
        return [sketch, image]

    def _scheduled(self, index: int, main_done: int) -> list[str]:
        """The waiting screens due after trial ``index`` whatever was pressed."""
        trials = self.trials
        if index + 1 == len(trials):
            return ["end"]
        screens = []
        every = self.protocol.pauses.break_every
        if every and trials["phase"].iloc[index] != "anchor_demo" and main_done % every == 0:
            screens.append("pause")
        demo_ends = trials["phase"].iloc[index] == "anchor_demo"
        if demo_ends and trials["phase"].iloc[index + 1] != "anchor_demo":
            screens.append("main")
        return screens

    def _with_controls(self, screens: list[str], presses) -> list[str]:
        """The waiting screens once the control keys pressed in the trial are added."""
        if screens == ["end"]:
            return screens  # every trial is recorded: the session is complete anyway
        names = {event.name for event in presses}
        response = self.protocol.response
        added = []
        if response.quit_key in names:
            added.append("quit")
        if response.pause_key in names and self.protocol.pauses.allowed and "pause" not in screens:
            added.append("pause")
        return [*added, *screens]

    def run(self, recorder: SessionRecorder) -> str:
        """Run the trials from the first unrecorded one; "complete" or "incomplete"."""
        self.recorder = recorder
        self.recorded = recorder.recorded
        trials = self.trials
        start = self.recorded
        if start >= len(trials):
            return "complete"
        timing = self.protocol.timing
        phases = trials["phase"].to_numpy()
        resumed_at = self._resumed_at() if start else None
        intro = "anchoring" if phases[start] == "anchor_demo" else "main"
        stims = self._stimuli(trials.iloc[start])  # loaded before, so the first pair is prompt
        outcome, answered = self._waiting_screens([intro], None)
        if outcome == "quit":
            return "incomplete"
        self._black()  # until the first pair
        # The session's time zero is the key press that began it; a resumed session goes on
        # from where its record ends, after one blank.
        self.session_start = answered - (resumed_at or 0.0)
        plan = answered + timing.blank_s
        paused = timing.blank_s if resumed_at is not None else 0.0
        self._handle_controls_before(answered)
        pending: dict | None = None  # the trial whose response window is open
        main_done = int((phases[:start] != "anchor_demo").sum())
        index = start
        while True:
            # A boundary: the flip at `plan` closes the open trial's window and shows the next
            # pair, or a waiting screen (scheduled, or asked for with a control key).
            screens = self._scheduled(index - 1, main_done) if pending is not None else []
            chosen = [screens[0] if screens else "pair"]  # what is on screen after the flip

            def last_look(screens=screens, chosen=chosen):
                self.keys.poll()
                wanted = self._with_controls(screens, self._controls(float("inf")))
                if not wanted or wanted[0] == chosen[0]:
                    return None
                chosen[0] = wanted[0]
                return self.screens[wanted[0]].draw

            if screens:
                draw = self.screens[screens[0]].draw
            else:
                draw = lambda stims=stims: _draw_all(stims)  # noqa: E731
            flipped, dropped_onset, _ = self.screen.present(
                draw, plan, current=self.black.draw, last_look=last_look if pending else None
            )
            if pending is not None:
                following_s = _shown_s(trials.iloc[index], timing) if index < len(trials) else 1
                wanted, shown = self._settle(flipped, screens, chosen, following_s)
                self._close(pending, flipped)
                pending = None
                if wanted:
                    outcome, answered = self._waiting_screens(wanted, shown)
                    if outcome == "quit":
                        return "incomplete"
                    if outcome == "end":
                        return "complete"
                    self._black()  # until the pair
                    self._handle_controls_before(answered)
                    nominal, plan = plan, answered + timing.blank_s
                    paused += plan - nominal
                    continue
            # The pair is on screen: trial `index` has begun.
            row = trials.iloc[index]
            onset = flipped
            if self.responder is not None and row.phase != "anchor_demo":
                self.responder.plan(index, onset)
            if row.phase != "anchor_demo":
                main_done += 1
            shown_s = _shown_s(row, timing)
            following = self._stimuli(trials.iloc[index + 1]) if index + 1 < len(trials) else []
            blank_onset, dropped_blank, _ = self.screen.present(
                self.black.draw, onset + shown_s, current=lambda stims=stims: _draw_all(stims)
            )
            pending = {
                "row": row, "planned": plan, "onset": onset, "blank_onset": blank_onset,
                "dropped": dropped_onset + dropped_blank, "paused": paused,
            }  # fmt: skip
            paused = 0.0
            plan = plan + shown_s + timing.blank_s
            stims = following
            index += 1

    def _controls(self, upto: float) -> tuple[KeyEvent, ...]:
        """Control-key presses before ``upto`` that have not taken effect yet."""
        presses = control_presses(self.keys.controls, -math.inf, upto, self.control_keys)
        return tuple(e for e in presses if e not in self._handled)

    def _handle_controls_before(self, t: float) -> None:
        """Control keys pressed before ``t`` (on a waiting screen, say) take no further effect."""
        self._handled.update(self._controls(t))

    def _settle(self, flipped: float, screens: list[str], chosen: list[str], following_s: float):
        """The waiting screens after the trial whose window closed at ``flipped``.

        A key pressed just before the flip can reach the session after it: the
        backend stamps it with the time the X server took it in, and delivers
        it a moment later. So the keys are followed for a while after the flip
        (``_SETTLE_S``, at most half the next stimulus) before the trial is
        scored; a pause or quit key pressed before the flip that turns up in
        that time still takes effect now: the pair just shown is withdrawn and
        comes again, whole, after the waiting screens. Returns the waiting
        screens and the flip time of the first one if it is on screen already.
        """
        until = flipped + min(_SETTLE_S, 0.5 * following_s)
        shown = flipped if chosen[0] != "pair" else None
        while True:
            if self.responder is not None:
                self.responder.act(self.core.getTime())
            self.keys.poll()
            presses = self._controls(flipped)
            wanted = self._with_controls(screens, presses)
            if wanted and wanted[0] != chosen[0]:
                chosen[0] = wanted[0]
                shown = self._show(wanted[0])
            if self.core.getTime() >= until:
                break
            time.sleep(0.001)
        self._handled.update(presses)
        return wanted, shown

    def _close(self, pending: dict, window_end: float) -> None:
        """Score the trial whose window closed at ``window_end`` and write it."""
        row = pending["row"]
        onset = pending["onset"]
        # A rating key that turns up only after the trial it was pressed in was written cannot
        # change that record: it is counted (and in the key log, whence it can be scored).
        arrived = self.keys.received[self._checked :]
        self._checked = len(self.keys.received)
        self.late_keys += sum(e.name in self.key_map and e.t < self._scored_until for e in arrived)
        response = score_trial(self.keys.since(onset), onset, window_end, self.key_map)
        self._scored_until = window_end
        rated = row.phase != "anchor_demo"
        record = {
            "participant": self.label,
            "trial": int(row.trial),
            "phase": row.phase,
            "sketch_id": row.sketch_id,
            "image_id": row.image_id,
            "sketch_file": row.sketch_path,
            "image_file": row.image_path,
            "rating": response.rating if rated else None,
            "rt": response.rt if rated else None,
            "anchor_rating": None if pd.isna(row.anchor_rating) else int(row.anchor_rating),
            "onset_planned": pending["planned"] - self.session_start,
            "onset": onset - self.session_start,
            "onset_monotonic": onset + self.offset,
            "stim_duration": pending["blank_onset"] - onset,
            "blank_duration": window_end - pending["blank_onset"],
            "dropped_frames": pending["dropped"],
            "n_presses": response.n_presses,
            "presses": format_presses(response.presses),
            "paused_before": pending["paused"],
        }
        logged = self.keys.received[self._logged :]
        self._logged += len(logged)
        self.recorder.append(record, [(e.name, e.t + self.offset, e.t - self.session_start)
                                      for e in logged])  # fmt: skip
        self.recorded += 1

    def _resumed_at(self) -> float:
        """Where a resumed session's timeline goes on: the planned onset after the last trial."""
        last = self.recorder.recorded_rows().iloc[-1]
        timing = self.protocol.timing
        shown = timing.anchor_demo_s if last["phase"] == "anchor_demo" else timing.stimulus_s
        try:
            return float(last["onset_planned"]) + shown + timing.blank_s
        except (KeyError, ValueError):
            return 0.0


_QUIT_TEXT = "End the session now? Everything so far is saved.\n\nY = end, N = go on"


def _screen_text(kind: str, protocol: Protocol) -> str:
    instructions = protocol.instructions
    return {"quit": _QUIT_TEXT, "pause": instructions.pause, "main": instructions.main,
            "anchoring": instructions.anchoring, "end": instructions.end}[kind]  # fmt: skip


def _shown_s(row, timing) -> float:
    """How long a trial's pair is shown."""
    return timing.anchor_demo_s if row.phase == "anchor_demo" else timing.stimulus_s


def _draw_all(stims) -> None:
    for stim in stims:
        stim.draw()
