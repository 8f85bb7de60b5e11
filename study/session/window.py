"""Initialise: the window, its timing, what it draws, and flips at planned times.

The window's monitor comes from the protocol (stimuli sized in degrees). Durations are
counted in frames when the measured refresh is steady and plausible, else timed by the
clock (a virtual display without vertical sync). Every screen is drawn once before the
first trial (:meth:`SessionWindow.warm_up`), so no shader compilation or texture upload
lands in a trial.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..protocol import CONTINUE_KEY, Display, Protocol, Timing
from ..responses import KeyEvent, first_press
from ..schedule import dropped_frames, late_frames, next_refresh_is_due, refreshes_late
from ..screens import instruction_texts, scale_reminder
from ..texts import fill
from .keyboard import KeyStream, control_keys

if TYPE_CHECKING:
    from types import ModuleType

    from psychopy.hardware.keyboard import Keyboard
    from psychopy.visual import ImageStim, TextStim, Window

    from sbir_study.stimuli import StimulusSet

    from .simulated import Responder

__all__ = [
    "DisplayTiming",
    "Screen",
    "SessionWindow",
    "clock_offset",
    "draw_all",
    "measure_timing",
    "open_window",
    "screen_texts",
    "timing_mode",
]

# Clock-timed flips: the next screen is drawn and rendered this long before it is due.
_PREPARE_S = 0.025
# A flip is called this much before its deadline, less the measured time a flip takes.
_SPIN_S = 0.003


def open_window(display: Display, *, windowed: bool) -> Window:
    """A PsychoPy window on a monitor of the protocol's size and distance, in degrees."""
    from psychopy import monitors, visual

    monitor = monitors.Monitor("sbir-study", width=display.width_cm, distance=display.distance_cm)
    monitor.setSizePix(list(display.resolution))
    fullscreen = display.fullscreen and not windowed
    size = (
        list(display.resolution)
        if fullscreen
        else [min(display.resolution[0], 1280), min(display.resolution[1], 800)]
    )
    return visual.Window(
        size=size,
        fullscr=fullscreen,
        monitor=monitor,
        units="deg",
        color=display.background,
        colorSpace="rgb",
        allowGUI=not fullscreen,
        waitBlanking=True,
        checkTiming=False,
    )


@dataclass(frozen=True)
class DisplayTiming:
    """The window's measured refresh and how the session times its durations."""

    refresh_hz: float | None  # None: the flips did not advance the clock
    jitter_ms: float  # sd of the frame period
    mode: str  # "frames" or "clock"


def measure_timing(win: Window, timing: Timing, frames: int = 60) -> DisplayTiming:
    """The mean refresh rate (Hz) and frame-period sd (ms) over ``frames`` flips, and their mode."""
    periods = np.diff([win.flip() for _ in range(frames + 1)])
    if periods.mean() <= 0:
        refresh, jitter = None, float("inf")
    else:
        refresh, jitter = float(1.0 / periods.mean()), float(periods.std() * 1000.0)
    return DisplayTiming(refresh, jitter, timing_mode(refresh, jitter, timing))


def timing_mode(refresh: float | None, jitter_ms: float, timing: Timing) -> str:
    """The mode: "frames" for a plausible, steady refresh rate, else "clock".

    >>> from sbir_study.study.protocol import Timing
    >>> timing = Timing()  # 50 to 250 Hz, a frame period steady to 1 ms
    >>> timing_mode(60.0, 0.2, timing), timing_mode(463.0, 1.7, timing)
    ('frames', 'clock')
    >>> timing_mode(60.0, 1.5, timing), timing_mode(None, float("inf"), timing)
    ('clock', 'clock')
    """
    low, high = timing.refresh_range_hz
    frames_ok = refresh is not None and low <= refresh <= high
    frames_ok = frames_ok and jitter_ms <= timing.frame_jitter_ms
    return "frames" if frames_ok else "clock"


def clock_offset(core: ModuleType) -> float:
    """time.monotonic() minus PsychoPy's default clock, from the closest of 20 paired readings."""
    best = (float("inf"), 0.0)
    for _ in range(20):
        before = time.monotonic()
        psychopy_now = core.getTime()
        after = time.monotonic()
        best = min(best, (after - before, (before + after) / 2 - psychopy_now))
    return best[1]


class Screen:
    """Flips at planned times: by counting refreshes (frames mode) or by the clock."""

    def __init__(
        self, win: Window, mode: str, frame_s: float, core: ModuleType, tick: Callable[[], None]
    ) -> None:
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
        """Show ``draw`` from the refresh nearest ``deadline`` (clock mode: at ``deadline``).

        ``current`` redraws what is on screen until then (frames mode); ``last_look``, called just
        before the flip, may return another screen to show instead. Returns the flip time, the
        frames lost (frames mode: refreshes missed between this call's flips, or, with no flip
        before the deadline's refresh, refreshes after it; clock mode: whole periods late) and
        whether the other screen was shown.
        """
        if self.mode == "frames":
            # Only this call's flips count: before it the session may have waited without a
            # flip due. The clock bounds the loop should a flip stop waiting for the refresh.
            flips = []
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
            if flips and flips[0] < deadline - self.frame / 2:
                lost = dropped_frames([*flips, self.last_flip], self.frame)
            else:  # the call came too late for a flip before the deadline's refresh
                lost = refreshes_late(self.last_flip, deadline, self.frame)
            return self.last_flip, lost, bool(other)
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


class SessionWindow:
    """The open window as the session uses it: what it draws, when it flips, the keys pressed.

    ``visual`` and ``core`` are PsychoPy's modules; ``responder``, the simulated participant,
    presses its keys whenever the keys are polled.
    """

    def __init__(
        self,
        win: Window,
        kb: Keyboard,
        protocol: Protocol,
        stimulus_set: StimulusSet,
        timing: DisplayTiming,
        core: ModuleType,
        responder: Responder | None = None,
        visual: ModuleType | None = None,
    ) -> None:
        if visual is None:
            import psychopy.visual

            visual = psychopy.visual

        self.win, self.protocol, self.core = win, protocol, core
        self.set = stimulus_set
        self.offset = clock_offset(core)
        refresh = timing.refresh_hz
        frame = 1.0 / refresh if timing.mode == "frames" and refresh else 1.0 / 60.0
        self.keys = KeyStream(kb, control_keys(protocol))
        self.responder = responder
        self.screen = Screen(win, timing.mode, frame, core, self.tick)
        self.black = visual.Rect(
            win, width=2.0, height=2.0, units="norm", fillColor="black", lineColor="black"
        )
        self.text = visual.TextStim(win, text="", height=0.8, wrapWidth=30, color="white")
        # One laid-out text per waiting screen: laying out a text takes far longer than a
        # frame, and a waiting screen may replace a pair at its planned flip.
        self.screens = {
            kind: visual.TextStim(win, text=text, height=0.8, wrapWidth=30, color="white")
            for kind, text in screen_texts(protocol).items()
        }
        display = protocol.display
        half = (display.stimulus_deg + display.gap_deg) / 2
        self._slots = [
            (
                visual.ImageStim(win, image=None, pos=(-half, 0.0)),
                visual.ImageStim(win, image=None, pos=(half, 0.0)),
                visual.TextStim(
                    win, text="", height=1.2, pos=(0, -0.5 * display.stimulus_deg), color="white"
                ),
            )
            for _ in range(2)
        ]
        # The scale's reminder, one per set of stimuli (the next pair's is placed while the
        # shown pair's is redrawn), laid out once.
        self._reminders = (
            [
                visual.TextStim(
                    win,
                    text=scale_reminder(protocol),
                    height=0.8,
                    wrapWidth=30,
                    anchorVert="top",
                    color="white",
                )
                for _ in range(2)
            ]
            if display.scale_reminder
            else []
        )
        self._turn = 0

    def warm_up(self, trials: pd.DataFrame) -> None:
        """Draw every kind of screen once and learn how long a clock-timed flip takes to return, so
        the first trial's flips come on time.
        """
        for slot in range(2):
            row = trials.iloc[slot % len(trials)].copy()
            row["phase"], row["anchor_rating"] = "anchor_demo", 1  # the label is drawn too
            draw_all(self.pair(row))
            self.win.flip()
        for screen in [*self.screens.values(), *self._reminders]:
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
    def tick(self) -> None:
        """Let the simulated participant press what is due, and collect the keys pressed."""
        if self.responder is not None:
            self.responder.act(self.core.getTime())
        self.keys.poll()

    def answer(self, keys: set[str], shown: float) -> KeyEvent:
        """Wait for the first press of one of ``keys`` at or after ``shown``."""
        if self.responder is not None and CONTINUE_KEY in keys:
            self.responder.schedule(CONTINUE_KEY, shown + 0.3)  # reads, then goes on
        while (event := first_press(self.keys.since(shown), shown, keys)) is None:
            self.tick()
            time.sleep(0.001)
        return event

    # --- screens that wait for a key ---
    def show_black(self) -> float:
        """The black screen, now (after a waiting screen, until the next pair)."""
        self.black.draw()
        return self.screen.flip()

    def show(self, kind: str) -> float:
        """A waiting screen (its text laid out in advance), now."""
        self.win.clearBuffer()
        self.screens[kind].draw()
        return self.screen.flip()

    def message(self, text: str) -> float:
        """A text (a question of the details form), laid out and shown now."""
        self.win.clearBuffer()  # a clock-timed flip leaves the back buffer as it was
        self.text.text = text
        self.text.draw()
        return self.screen.flip()

    # --- the pairs ---
    def pair(self, row: pd.Series) -> list[ImageStim | TextStim]:
        """The pair of ``row`` ready to draw, on the next of two sets of stimuli that take turns (a
        session keeps two textures per image, not one per trial).
        """
        from PIL import Image

        self._turn = 1 - self._turn
        sketch, image, label = self._slots[self._turn]
        width = self.protocol.display.stimulus_deg
        heights = []
        for stim, relative in ((sketch, row.sketch_path), (image, row.image_path)):
            path = self.set.path(relative)
            with Image.open(path) as opened:
                aspect = opened.height / opened.width
            stim.image = str(path)
            stim.size = (width, width * aspect)
            heights.append(width * aspect)
        if row.phase == "anchor_demo":
            label.text = fill(self.protocol.texts.anchor_label, rating=row.anchor_rating)
            return [sketch, image, label]
        if self._reminders:
            # Below the taller of the two, a gap's height (at least half a degree) clear of it.
            reminder = self._reminders[self._turn]
            reminder.pos = (0.0, -max(heights) / 2 - max(self.protocol.display.gap_deg, 0.5))
            return [sketch, image, reminder]
        return [sketch, image]


def draw_all(stims: Iterable[ImageStim | TextStim]) -> None:
    """Draw each of ``stims`` (a pair with its label or reminder) for the flip that shows them."""
    for stim in stims:
        stim.draw()


def screen_texts(protocol: Protocol) -> dict[str, str]:
    """The text of each waiting screen, in the protocol's words."""
    return {**instruction_texts(protocol), "quit": fill(protocol.texts.quit_question)}
