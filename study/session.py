"""The rating session of the paper's Sec. 2.3, in a PsychoPy window.

Design -> initialise -> run -> end:

* **Design.** The protocol and the stimulus set are checked, the
  participant's seed is drawn (or, on resume, read back) and the trial list
  built (:func:`study.trials.build_trials`).
* **Initialise.** The window is opened with a monitor definition from the
  protocol (stimuli sized in degrees of visual angle); its refresh is
  measured. Durations are counted in frames when the refresh rate is stable
  and plausible, and timed by the clock otherwise (a virtual display without
  vertical sync). The keyboard must be PsychoPy's Psychtoolbox backend, which
  time-stamps each key-down itself; without it the session refuses to start.
* **Run.** Each pair is shown side by side for ``stimulus_s``, then black for
  ``blank_s``, then the next pair at once. Presses of the rating keys from
  stimulus onset until the blank ends count; the last one is the rating. Each
  trial is written (one line, fsync) just after the next stimulus onset, so
  that writing never delays an onset. The pause key pauses after the current
  response window; the quit key asks for confirmation and ends the session,
  marked incomplete, with everything recorded.
* **End.** The sidecar is completed (status, frame statistics).

``simulate=True`` lets a simulated participant answer: its key presses go
through the keyboard device's ``makeResponse``, time-stamped at the simulated
response time, and take the same path as real ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.checks import InputError
from analysis.provenance import SESSION_PACKAGES, software_versions

from .protocol import Protocol, protocol_dict
from .recorder import SessionRecorder
from .trials import build_trials, draw_seed

__all__ = ["SessionOutcome", "dropped_frames", "run_session"]

_SPACE = "space"


@dataclass(frozen=True)
class SessionOutcome:
    """What :func:`run_session` did."""

    path: Path
    status: str  # "complete" or "incomplete"
    recorded: int  # trials on disk at the end
    planned: int
    timing_mode: str  # "frames" or "clock"
    refresh_hz: float | None


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


class _Keys:
    """Every key press since the session began, each once, time-stamped by the backend.

    ``getKeys(waitRelease=False)`` returns keys still held; a tap between two
    polls only comes back with ``waitRelease=True``, and a key returned on
    press comes back again on release: both are collected and de-duplicated.
    """

    def __init__(self, kb) -> None:
        self.kb = kb
        self.presses: list[tuple[str, float]] = []  # (name, tDown on the default clock)
        self._seen: set[tuple[str, float]] = set()

    def poll(self) -> None:
        for key in [*self.kb.getKeys(waitRelease=False), *self.kb.getKeys(waitRelease=True)]:
            ident = (key.name, round(float(key.tDown), 6))
            if ident not in self._seen:
                self._seen.add(ident)
                self.presses.append((key.name, float(key.tDown)))

    def between(self, start: float, end: float, names) -> list[tuple[str, float]]:
        return sorted((n, t) for n, t in self.presses if start <= t < end and n in names)


class _Responder:
    """A simulated participant answering through the keyboard device's ``makeResponse``."""

    def __init__(self, kb, trials: pd.DataFrame, manifest: pd.DataFrame, protocol: Protocol,
                 seed: int) -> None:  # fmt: skip
        from analysis.simulate import RaterModel

        self.kb = kb
        model = RaterModel()
        rng = np.random.default_rng([seed, 1])
        bias = rng.normal(0.0, model.bias_sd)
        noise = model.noise * rng.lognormal(0.0, model.noise_sd_log)
        latent = _latent_ratings(trials, manifest, rng)
        response = latent + bias + noise * rng.standard_normal(len(trials))
        low, high = protocol.scale
        self.ratings = np.clip(np.rint(response), low, high).astype(int)
        window = protocol.timing.stimulus_s + protocol.timing.blank_s
        rt = model.rt_median * rng.lognormal(0.0, model.rt_sd_log, len(trials))
        self.rts = np.clip(rt, 0.15, window - 0.05)
        self.missed = rng.random(len(trials)) < model.miss_rate
        self.keys = protocol.response.keys
        self._due: list[tuple[float, str]] = []

    def plan(self, index: int, onset: float) -> None:
        """Press the trial's rating key at onset + rt (unless this response is missed)."""
        if not self.missed[index]:
            self.schedule(self.keys[self.ratings[index] - 1], onset + float(self.rts[index]))

    def schedule(self, name: str, at: float) -> None:
        self._due.append((at, name))

    def act(self, now: float) -> None:
        """Press every key that is due, time-stamped when it was due."""
        for at, name in [d for d in self._due if d[0] <= now]:
            self.kb.device.makeResponse(code=name, tDown=at)
            self._due.remove((at, name))


def _latent_ratings(trials: pd.DataFrame, manifest: pd.DataFrame, rng) -> np.ndarray:
    """Each trial's noise-free rating: 7 - 6 s for a set with latent similarity, else drawn."""
    latent = np.full(len(trials), np.nan)
    if "latent_similarity" in manifest.columns:
        similarity = manifest.set_index(["sketch_id", "image_id"])["latent_similarity"]
        keys = pd.MultiIndex.from_frame(trials[["sketch_id", "image_id"]])
        values = pd.to_numeric(similarity.reindex(keys), errors="coerce").to_numpy(dtype=float)
        latent = 7.0 - 6.0 * values
    prescribed = trials["anchor_rating"].to_numpy(dtype=float, na_value=np.nan)
    latent = np.where(np.isnan(latent), prescribed, latent)
    unknown = np.isnan(latent)
    latent[unknown] = rng.uniform(1.0, 7.0, unknown.sum())
    return latent


def _measure_refresh(win, frames: int = 60) -> tuple[float | None, float]:
    """Mean refresh rate (Hz) and the sd of the frame period (ms) over ``frames`` flips."""
    times = []
    for _ in range(frames + 1):
        times.append(win.flip())
    periods = np.diff(times)
    if periods.mean() <= 0:
        return None, float("inf")
    return float(1.0 / periods.mean()), float(periods.std() * 1000.0)


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
) -> SessionOutcome:
    """Run (or resume) one participant's session; see the module docstring.

    ``stimulus_set`` is a :class:`stimuli.StimulusSet` (checked). Returns a
    :class:`SessionOutcome`; bad input raises
    :class:`~analysis.checks.InputError`.
    """
    from analysis import bids

    label = bids.check_label(participant)
    path = bids.beh_path(data, label, protocol.task)
    if resume:
        seed = _recorded_seed(path)
    elif path.exists():
        raise InputError(
            f"{path}: a session of participant {label!r} is already recorded; it is never "
            "overwritten (pass --resume to continue it, or choose another --participant)"
        )
    if seed is None:
        seed = draw_seed()
    trials = build_trials(protocol, stimulus_set.manifest, seed)
    kb = _keyboard()

    from psychopy import core, logging, monitors, visual

    logging.console.setLevel(logging.ERROR)
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
    try:
        refresh, jitter = _measure_refresh(win)
        low, high = protocol.timing.refresh_range_hz
        frames_ok = refresh is not None and low <= refresh <= high
        frames_ok = frames_ok and jitter <= protocol.timing.frame_jitter_ms
        mode = "frames" if frames_ok else "clock"
        offset = _clock_offset(core)
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
            "Simulated": bool(simulate),
            "Software": software_versions(SESSION_PACKAGES),
        }
        order = trials[["trial", "phase", "sketch_id", "image_id"]].itertuples(index=False)
        recorder = SessionRecorder.open(data, label, task=protocol.task, session=session,
                                        trial_order=list(order), resume=resume)  # fmt: skip
        loop = _Loop(win, kb, protocol, stimulus_set, trials, recorder, label, mode, refresh,
                     offset, core, simulate, seed)  # fmt: skip
        status = loop.run()
        recorder.finish(status, TrialsRecorded=loop.recorded)
    finally:
        win.close()
    return SessionOutcome(path, status, loop.recorded, len(trials), mode, refresh)


def _recorded_seed(path: Path) -> int:
    import json

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


class _Loop:
    """The trial loop; every screen change is a flip whose time is recorded."""

    def __init__(self, win, kb, protocol, stimulus_set, trials, recorder, label, mode, refresh,
                 offset, core, simulate, seed) -> None:  # fmt: skip
        from psychopy import visual

        self.win, self.kb, self.protocol, self.core = win, kb, protocol, core
        self.set, self.trials, self.recorder, self.label = stimulus_set, trials, recorder, label
        self.mode, self.offset = mode, offset
        self.frame = 1.0 / refresh if refresh else 1.0 / 60.0
        self.keys = _Keys(kb)
        rating_keys = {name: k + 1 for k, name in enumerate(protocol.response.keys)}
        if protocol.response.keypad:
            rating_keys.update({f"num_{name}": k for name, k in list(rating_keys.items())
                                if name.isdigit()})  # fmt: skip
        self.rating_keys = rating_keys
        self.responder = (_Responder(kb, trials, stimulus_set.manifest, protocol, seed)
                          if simulate else None)  # fmt: skip
        self.black = visual.Rect(win, width=2.0, height=2.0, units="norm", fillColor="black",
                                 lineColor="black")  # fmt: skip
        self.text = visual.TextStim(win, text="", height=0.8, wrapWidth=30, color="white")
        self.rating_label = visual.TextStim(win, text="", height=1.2, pos=(0, -7), color="white")
        display = protocol.display
        half = (display.stimulus_deg + display.gap_deg) / 2
        self.positions = ((-half, 0.0), (half, 0.0))
        self.recorded = recorder.recorded
        self.session_start = 0.0
        self._pending: dict | None = None
        self._paused_for = 0.0
        self._seen_upto = 0.0  # control keys before this time were handled already
        self._flip_delays: list[float] = []
        # Draw each kind of screen once, so that no first-time cost lands inside a trial.
        self.black.draw()
        self.text.text = protocol.instructions.main
        self.text.draw()
        win.flip()
        for _ in range(10):  # and learn how long a flip takes to return
            self.black.draw()
            called = core.getTime()
            self._flip_delays.append(win.flip() - called)

    # --- time and keys ---
    def _tick(self) -> None:
        if self.responder is not None:
            self.responder.act(self.core.getTime())
        self.keys.poll()

    def _wait_until(self, deadline: float) -> None:
        """Poll keys until ``deadline`` on the default clock (sleeping in short steps)."""
        while (remaining := deadline - self.core.getTime()) > 0:
            self._tick()
            if remaining > 0.004:
                self.core.wait(min(remaining - 0.003, 0.002), hogCPUperiod=0)

    def _show(self, draw, start: float, duration: float, choose_next) -> tuple[float, int | None]:
        """Keep a screen from ``start`` for ``duration``, then flip to the next one.

        ``choose_next`` is called shortly before the end (a frame, or 20 ms in
        clock mode) and draws the next screen into the back buffer, so that the
        flip itself is all that happens at the deadline. Frames mode: the
        duration in whole frames, redrawn each frame. Clock mode: the flip is
        timed by the clock. Returns the next screen's flip time and the frames
        dropped (None in clock mode, where frames are not counted).
        """
        if self.mode == "frames":
            frames = max(1, round(duration / self.frame))
            flips = [start]
            for _ in range(frames - 1):
                draw()
                flips.append(self.win.flip())
                self._tick()
            choose_next()
            flipped = self.win.flip()
            flips.append(flipped)
            self._tick()
            return flipped, dropped_frames(flips, self.frame)
        deadline = start + duration
        self._wait_until(deadline - 0.02)
        choose_next()
        flipped = self._flip_at(deadline)
        self._tick()
        return flipped, None

    def _flip_at(self, deadline: float) -> float:
        """Flip so that the flip's time stamp falls on ``deadline`` (clock mode).

        A flip's time stamp is taken when the swap returns; without vertical
        sync that is a few milliseconds after the call. The call is made that
        much early: the median of the last 15 measured delays.
        """
        delays = self._flip_delays
        self._wait_until(deadline - (float(np.median(delays)) if delays else 0.0))
        called = self.core.getTime()
        flipped = self.win.flip()
        delays.append(flipped - called)
        del delays[:-15]
        return flipped

    # --- screens ---
    def _draw_message(self, text: str) -> None:
        self.text.text = text
        self.text.draw()

    def _await(self, keys: set[str], shown: float) -> tuple[str, float]:
        """Wait for one of ``keys`` after a message shown at ``shown``; the key and the wait."""
        self._close_pending(shown)
        if self.responder is not None and _SPACE in keys:
            self.responder.schedule(_SPACE, shown + 0.3)
        while True:
            self._tick()
            answer = self.keys.between(shown, float("inf"), keys)
            if answer:
                break
            self.core.wait(0.001, hogCPUperiod=0)
        self._seen_upto = self.core.getTime()
        return answer[0][0], self._seen_upto - shown

    def _message(self, text: str, keys: set[str]) -> tuple[str, float]:
        """Show ``text`` now until one of ``keys``; the key and how long it was shown."""
        self._draw_message(text)
        return self._await(keys, self.win.flip())

    def _stimuli(self, row) -> list:
        from PIL import Image
        from psychopy import visual

        width = self.protocol.display.stimulus_deg
        stims = []
        for relative, pos in zip((row.sketch_path, row.image_path), self.positions, strict=True):
            path = self.set.path(relative)
            with Image.open(path) as image:
                aspect = image.height / image.width
            stims.append(visual.ImageStim(self.win, image=str(path), pos=pos,
                                          size=(width, width * aspect)))  # fmt: skip
        if row.phase == "anchor_demo":
            label = visual.TextStim(self.win, text=f"Rating: {row.anchor_rating}", height=1.2,
                                    pos=(0, -0.5 * width), color="white")  # fmt: skip
            stims.append(label)
        return stims

    # --- the session ---
    def run(self) -> str:
        trials = self.trials
        start = self.recorded
        if start >= len(trials):
            return "complete"
        phases = trials["phase"].to_numpy()
        rated = np.flatnonzero(phases != "anchor_demo")
        first_rated = int(rated[0]) if rated.size else len(trials)
        resumed_at = self._resumed_onset() if self.recorded else 0.0
        instructions = self.protocol.instructions
        stims = self._stimuli(trials.iloc[start])  # loaded before, so the first pair is prompt
        self._message(instructions.anchoring if phases[start] == "anchor_demo"
                      else instructions.main, {_SPACE})  # fmt: skip
        self.session_start = self.core.getTime() - resumed_at
        timing = self.protocol.timing
        quit_text = "End the session now? Everything so far is saved.\n\nY = end, N = go on"
        self._draw_all(stims)
        onset = self.win.flip()
        main_done = 0
        for index in range(start, len(trials)):
            row = trials.iloc[index]
            self._close_pending(onset)
            if self.responder is not None and row.phase != "anchor_demo":
                self.responder.plan(index, onset)
            if row.phase != "anchor_demo":
                main_done += 1
            shown_for = timing.anchor_demo_s if row.phase == "anchor_demo" else timing.stimulus_s
            blank_onset, dropped = self._show(lambda stims=stims: self._draw_all(stims), onset,
                                              shown_for, self.black.draw)  # fmt: skip
            last = index + 1 == len(trials)
            following = [] if last else self._stimuli(trials.iloc[index + 1])
            screens = []  # what waits for a key after this trial, in order

            def choose_next(row=row, following=following, screens=screens, last=last,
                            index=index, main_done=main_done):  # fmt: skip
                # Shortly before the window closes: the next pair, or the first waiting screen.
                pause, quit_ = self._control_keys()
                if quit_:
                    screens.append(("quit", quit_text, {"y", "n"}))
                if last:
                    screens.append(("end", instructions.end, set()))
                else:
                    every = self.protocol.pauses.break_every
                    scheduled = bool(every) and row.phase != "anchor_demo" and (
                        main_done % every == 0)  # fmt: skip
                    if pause or scheduled:
                        screens.append(("pause", instructions.pause, {_SPACE}))
                    if index + 1 == first_rated:
                        screens.append(("main", instructions.main, {_SPACE}))
                if screens:
                    self._draw_message(screens[0][1])
                else:
                    self._draw_all(following)

            next_flip, dropped_blank = self._show(self.black.draw, blank_onset, timing.blank_s,
                                                  choose_next)  # fmt: skip
            self.keys.poll()
            self._pending = self._row(row, onset, blank_onset, blank_onset + timing.blank_s,
                                      _sum(dropped, dropped_blank))  # fmt: skip
            self._paused_for = 0.0
            shown = next_flip
            ended = False
            for number, (kind, text, keys) in enumerate(screens):
                if number:
                    self._draw_message(text)
                    shown = self.win.flip()
                if kind == "end":
                    self._close_pending(shown)
                    self.core.wait(0.5 if self.responder is None else 0.05)
                    return "complete"
                answer, waited = self._await(keys, shown)
                if kind == "quit":
                    if answer == "y":
                        ended = True
                        break
                    continue
                self._paused_for += waited
            if ended:
                return "incomplete"
            stims = following
            if screens:
                self._draw_all(stims)
                onset = self.win.flip()
            else:
                onset = next_flip
        return "complete"

    def _draw_all(self, stims) -> None:
        for stim in stims:
            stim.draw()

    def _control_keys(self) -> tuple[bool, bool]:
        """Whether the pause or quit key was pressed since the last check."""
        self.keys.poll()
        response = self.protocol.response
        now = self.core.getTime()
        control = {response.pause_key, response.quit_key}
        pressed = {name for name, _ in self.keys.between(self._seen_upto, now, control)}
        self._seen_upto = now
        return (response.pause_key in pressed and self.protocol.pauses.allowed,
                response.quit_key in pressed)  # fmt: skip

    def _row(self, row, onset: float, blank_onset: float, window_end: float, dropped) -> dict:
        presses = self.keys.between(onset, window_end, self.rating_keys)
        final = presses[-1] if presses and row.phase != "anchor_demo" else None
        return {
            "participant": self.label,
            "trial": int(row.trial),
            "phase": row.phase,
            "sketch_id": row.sketch_id,
            "image_id": row.image_id,
            "rating": self.rating_keys[final[0]] if final else None,
            "rt": final[1] - onset if final else None,
            "anchor_rating": None if pd.isna(row.anchor_rating) else int(row.anchor_rating),
            "onset": onset - self.session_start,
            "onset_monotonic": onset + self.offset,
            "stim_duration": blank_onset - onset,
            "_blank_onset": blank_onset,
            "dropped_frames": dropped,
            "n_presses": len(presses),
            "presses": " ".join(f"{self.rating_keys[n]}@{t - onset:.4f}" for n, t in presses)
            or None,
            "paused_before": self._paused_for,
        }

    def _close_pending(self, blank_end: float) -> None:
        """Write the previous trial, now that its blank has ended (at ``blank_end``)."""
        row = self._pending
        if row is None:
            return
        row["blank_duration"] = blank_end - row.pop("_blank_onset")
        self.recorder.append(row)
        self.recorded += 1
        self._pending = None

    def _resumed_onset(self) -> float:
        """Where the onset column continues after a resume: the end of the last recorded trial."""
        last = self.recorder.recorded_rows().iloc[-1]
        try:
            return sum(float(last[c]) for c in ("onset", "stim_duration", "blank_duration"))
        except ValueError:
            return 0.0


def dropped_frames(flip_times, frame_period: float) -> int:
    """Refreshes missed between consecutive flips: an interval of k periods missed k - 1.

    PsychoPy's own counter (``Window.nDroppedFrames``) counts only while
    ``recordFrameIntervals`` is on, and one per late interval however late it
    was; this counts each missed refresh, which is what lengthens a stimulus.

    Examples
    --------
    >>> dropped_frames([0.0, 1 / 60, 2 / 60, 4 / 60, 5 / 60], 1 / 60)
    1
    """
    intervals = np.diff(np.asarray(flip_times, dtype=np.float64))
    return int(np.maximum(np.rint(intervals / frame_period) - 1.0, 0.0).sum())


def _sum(*counts):
    """Dropped frames of a trial; None when durations were timed by the clock."""
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def stimulus_set_for(folder: str | Path, protocol: Protocol):
    """Load and check the stimulus set, with the anchor pairs the protocol needs."""
    from stimuli import load_set

    stimulus_set = load_set(folder)
    if protocol.anchoring.enabled and stimulus_set.pairs("anchor").empty:
        raise InputError(
            f"{folder}: the protocol {protocol.name!r} has anchoring, but the set has no anchor "
            "pairs (set anchoring.enabled = false, or use a set with an anchor block)"
        )
    return stimulus_set
