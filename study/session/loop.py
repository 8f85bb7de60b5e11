"""Run: the trials, with their pauses, breaks and quit question, each written as it ends.

Each pair is shown for ``stimulus_s``, then black for ``blank_s``, on one timeline
(:class:`~sbir_study.study.schedule.Timeline`). A trial is scored from the session's key
stream a moment (``_SETTLE_S``) after its window closed, since the backend delivers a key a
little after stamping it. A pause or quit key pressed at any instant of a trial takes effect
right after it: the next screen is chosen with a last look at the keys before its flip, and
a press that turns up after the next pair's flip withdraws that pair (shown again after the
pause). Each trial is written as soon as it is scored, its keys to the key log first.
Practice pairs come first, with their own instructions, and no scheduled break counts them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import pandas as pd

from ..protocol import CONTINUE_KEY, Protocol, Timing
from ..recorder import SessionRecorder
from ..responses import KeyEvent, control_presses, format_presses, score_trial
from ..schedule import Timeline
from ..texts import answer_keys
from .keyboard import control_keys
from .window import SessionWindow, draw_all

__all__ = ["TrialLoop"]

# What each answer key of the quit question means ([texts] yes_key, no_key).
_QUIT_ANSWERS = {"yes_key": True, "no_key": False}
# The phases of the main block, whose trials the scheduled breaks count.
_MAIN_BLOCK = ("main", "anchor_repeat")
# The instructions shown before the first trial of each phase that has its own.
_INTRO = {
    "practice": "practice",
    "anchor_demo": "anchoring",
    "main": "main",
    "anchor_repeat": "main",
}
# After a response window closes, keys pressed before it closed are awaited this long.
_SETTLE_S = 0.1


@dataclass(frozen=True)
class _OpenTrial:
    """A trial whose pair has been shown and whose response window is still open."""

    row: pd.Series  # the trial list's row
    planned: float  # onset on the session's timeline
    onset: float  # the flip that showed the pair
    blank_onset: float  # the flip that took it down
    dropped: int  # frames lost at the two flips
    paused: float  # time paused before the pair


class TrialLoop:
    """The trial loop; every screen change is a flip whose time is recorded."""

    recorder: SessionRecorder  # the session's record, given to run()

    def __init__(
        self, window: SessionWindow, protocol: Protocol, trials: pd.DataFrame, label: str
    ) -> None:
        self.window, self.protocol, self.trials, self.label = window, protocol, trials, label
        self.keys = window.keys
        self.control_keys = control_keys(protocol)
        self._handled: set[KeyEvent] = set()  # control presses that took effect
        self.key_map = protocol.key_map
        self.quit_answers = answer_keys(protocol.texts, "quit_question", _QUIT_ANSWERS)
        self.recorded = 0
        self._logged = 0  # keys written to the key log
        self._checked = 0  # keys looked at for late arrival
        self._scored_until = -math.inf  # the end of the last trial written
        self.late_keys = 0
        self.session_start = 0.0

    def run(self, recorder: SessionRecorder) -> str:
        """Run the trials from the first unrecorded one; "complete" or "incomplete"."""
        self.recorder = recorder
        self.recorded = recorder.recorded
        trials = self.trials
        start = self.recorded
        if start >= len(trials):
            return "complete"
        blank_s = self.protocol.timing.blank_s
        phases = trials["phase"].to_numpy()
        resumed_at = self._resumed_at() if start else None
        intro = _INTRO[phases[start]]
        pair = self.window.pair(trials.iloc[start])  # loaded before, so the first pair is prompt
        began, answered = self._waiting_screens([intro], None)
        if began == "quit":
            return "incomplete"
        self.window.show_black()  # until the first pair
        # The session's time zero is the key press that began it; a resumed session goes on
        # from where its record ends, after one blank.
        self.session_start = answered - (resumed_at or 0.0)
        timeline = Timeline(answered + blank_s, blank_s if resumed_at is not None else 0.0)
        self._handle_controls_before(answered)
        open_trial: _OpenTrial | None = None
        main_done = int(pd.Series(phases[:start]).isin(_MAIN_BLOCK).sum())
        index = start
        while True:
            flipped, dropped, outcome = self._boundary(index, open_trial, pair, main_done, timeline)
            open_trial = None
            if outcome == "quit":
                return "incomplete"
            if outcome == "end":
                return "complete"
            if outcome == "go":
                continue  # after the waiting screens, the pair at its new planned onset
            # The pair is on screen: trial `index` has begun.
            open_trial, pair = self._begin_trial(index, flipped, dropped, pair, timeline)
            if phases[index] in _MAIN_BLOCK:
                main_done += 1
            index += 1

    def _boundary(
        self,
        index: int,
        open_trial: _OpenTrial | None,
        pair: list,
        main_done: int,
        timeline: Timeline,
    ) -> tuple[float, int, str | None]:
        """The flip at trial ``index``'s planned onset and what follows it.

        The flip closes the open trial's window and shows the pair or a waiting screen; the open
        trial is then scored and written. Returns the flip time, the frames lost, and None with the
        pair on screen, else the waiting screens' outcome ("go": the timeline moved, "quit", "end").
        """
        window = self.window
        screens = self._scheduled(index - 1, main_done) if open_trial is not None else []
        chosen = [screens[0] if screens else "pair"]  # what is on screen after the flip

        def last_look():
            self.keys.poll()
            wanted = self._with_controls(screens, self._controls(float("inf")))
            if not wanted or wanted[0] == chosen[0]:
                return None
            chosen[0] = wanted[0]
            return window.screens[wanted[0]].draw

        draw = window.screens[screens[0]].draw if screens else partial(draw_all, pair)
        flipped, dropped, _ = window.screen.present(
            draw,
            timeline.planned,
            current=window.black.draw,
            last_look=last_look if open_trial is not None else None,
        )
        if open_trial is None:
            return flipped, dropped, None
        trials = self.trials
        timing = self.protocol.timing
        following_s = _shown_s(trials.iloc[index], timing) if index < len(trials) else 1
        wanted, shown = self._settle(flipped, screens, chosen, following_s)
        self._close(open_trial, flipped)
        if not wanted:
            return flipped, dropped, None
        outcome, answered = self._waiting_screens(wanted, shown)
        if outcome == "go":
            window.show_black()  # until the pair
            self._handle_controls_before(answered)
            timeline.resume(answered, timing.blank_s)
        return flipped, dropped, outcome

    def _begin_trial(
        self, index: int, onset: float, dropped_onset: int, pair: list, timeline: Timeline
    ) -> tuple[_OpenTrial, list]:
        """Trial ``index``'s pair came on at ``onset``: load the next pair and take this one down
        ``shown_s`` later. Returns the open trial and the next pair.
        """
        window = self.window
        row = self.trials.iloc[index]
        if window.responder is not None and row.phase != "anchor_demo":
            window.responder.plan(index, onset)
        shown_s = _shown_s(row, self.protocol.timing)
        has_next = index + 1 < len(self.trials)
        following = window.pair(self.trials.iloc[index + 1]) if has_next else []
        blank_onset, dropped_blank, _ = window.screen.present(
            window.black.draw, onset + shown_s, current=partial(draw_all, pair)
        )
        planned, paused = timeline.begin_pair(shown_s, self.protocol.timing.blank_s)
        open_trial = _OpenTrial(
            row=row,
            planned=planned,
            onset=onset,
            blank_onset=blank_onset,
            dropped=dropped_onset + dropped_blank,
            paused=paused,
        )
        return open_trial, following

    def _waiting_screens(self, kinds: list[str], shown: float | None) -> tuple[str, float]:
        """Show each waiting screen until answered; ("go" | "quit" | "end", answer time).

        ``shown`` is the first screen's flip if it is already on screen. Every screen but the quit
        question takes the quit key too, which asks the question; "no" returns to the screen.
        """
        window = self.window
        quit_key = self.protocol.response.quit_key
        answered = window.core.getTime()
        for number, kind in enumerate(kinds):
            if number or shown is None:
                shown = window.show(kind)
            while True:
                if kind == "quit":
                    event = window.answer(set(self.quit_answers), shown)
                    if self.quit_answers[event.name]:
                        return "quit", event.t
                    answered = event.t
                    break
                event = window.answer({CONTINUE_KEY, quit_key}, shown)
                answered = event.t
                if event.name == CONTINUE_KEY:
                    break
                decision = window.answer(set(self.quit_answers), window.show("quit"))
                if self.quit_answers[decision.name]:
                    return "quit", decision.t
                shown = window.show(kind)
            if kind == "end":
                return "end", answered
        return "go", answered

    def _scheduled(self, index: int, main_done: int) -> list[str]:
        """The waiting screens due after trial ``index`` whatever was pressed."""
        trials = self.trials
        if index + 1 == len(trials):
            return ["end"]
        screens = []
        every = self.protocol.pauses.break_every
        phase, following = trials["phase"].iloc[index], trials["phase"].iloc[index + 1]
        if every and phase in _MAIN_BLOCK and main_done % every == 0:
            screens.append("pause")
        # A phase with instructions of its own ends: they come before its next trial.
        if phase in ("practice", "anchor_demo") and _INTRO[following] != _INTRO[phase]:
            screens.append(_INTRO[following])
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

    def _controls(self, upto: float) -> tuple[KeyEvent, ...]:
        """Control-key presses before ``upto`` that have not taken effect yet."""
        presses = control_presses(self.keys.controls, -math.inf, upto, self.control_keys)
        return tuple(e for e in presses if e not in self._handled)

    def _handle_controls_before(self, t: float) -> None:
        """Control keys pressed before ``t`` (on a waiting screen, say) take no further effect."""
        self._handled.update(self._controls(t))

    def _settle(self, flipped: float, screens: list[str], chosen: list[str], following_s: float):
        """The waiting screens after the trial whose window closed at ``flipped``, and the first
        one's flip if already shown.

        The keys are followed for ``_SETTLE_S`` (at most half the next stimulus) after the flip; a
        pause or quit key pressed before it that turns up meanwhile withdraws the pair just shown.
        """
        window = self.window
        until = flipped + min(_SETTLE_S, 0.5 * following_s)
        shown = flipped if chosen[0] != "pair" else None
        while True:
            if window.responder is not None:
                window.responder.act(window.core.getTime())
            self.keys.poll()
            presses = self._controls(flipped)
            wanted = self._with_controls(screens, presses)
            if wanted and wanted[0] != chosen[0]:
                chosen[0] = wanted[0]
                shown = window.show(wanted[0])
            if window.core.getTime() >= until:
                break
            time.sleep(0.001)
        self._handled.update(presses)
        return wanted, shown

    def _close(self, trial: _OpenTrial, window_end: float) -> None:
        """Score the trial whose window closed at ``window_end`` and write it."""
        row = trial.row
        onset = trial.onset
        # A rating key arriving after its trial was written is counted (and in the key log).
        arrived = self.keys.received[self._checked :]
        self._checked = len(self.keys.received)
        self.late_keys += sum(e.name in self.key_map and e.t < self._scored_until for e in arrived)
        response = score_trial(self.keys.since(onset), onset, window_end, self.key_map)
        self._scored_until = window_end
        rated = row.phase != "anchor_demo"
        offset = self.window.offset
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
            "onset_planned": trial.planned - self.session_start,
            "onset": onset - self.session_start,
            "onset_monotonic": onset + offset,
            "stim_duration": trial.blank_onset - onset,
            "blank_duration": window_end - trial.blank_onset,
            "dropped_frames": trial.dropped,
            "n_presses": response.n_presses,
            "presses": format_presses(response.presses),
            "paused_before": trial.paused,
        }
        logged = self.keys.received[self._logged :]
        self._logged += len(logged)
        self.recorder.append(
            record, [(e.name, e.t + offset, e.t - self.session_start) for e in logged]
        )
        self.recorded += 1

    def _resumed_at(self) -> float:
        """Where a resumed session's timeline goes on: the planned onset after the last trial."""
        last = self.recorder.recorded_rows().iloc[-1]
        timing = self.protocol.timing
        try:
            return float(last["onset_planned"]) + _shown_s(last, timing) + timing.blank_s
        except (KeyError, ValueError):
            return 0.0


def _shown_s(row: pd.Series, timing: Timing) -> float:
    """How long a trial's pair is shown."""
    return timing.anchor_demo_s if row.phase == "anchor_demo" else timing.stimulus_s
