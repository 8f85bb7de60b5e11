"""The session's procedure: design -> initialise -> run -> end, one module each.

* **Design** (:mod:`.plan`, :mod:`.lists`): every check that needs no window; the seed and
  the trial list.
* **Initialise** (:mod:`.keyboard`, :mod:`.window`, :mod:`.forms`, :mod:`.record`): real-time
  priority, the keyboard, the window and its timing, the details form, the record opened.
* **Run** (:mod:`.loop`): the trials, each written as soon as it is scored.
* **End** (:mod:`.record`): the sidecar completed, also after an error.

``SessionOptions(simulate=True)`` lets a simulated participant answer (:mod:`.simulated`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sbir_study.foundation.checks import InputError

from ..protocol import Protocol, load_protocol
from ..trials import stimulus_set_for
from .forms import details_on_screen
from .keyboard import open_keyboard
from .loop import TrialLoop
from .plan import plan_session
from .record import finish_record, open_record
from .simulated import Responder
from .window import SessionWindow, measure_timing, open_window

if TYPE_CHECKING:
    from sbir_study.stimuli import StimulusSet

__all__ = ["SessionOptions", "SessionOutcome", "run_from_files", "run_session"]


@dataclass(frozen=True)
class SessionOptions:
    """How one participant's session runs (``sbir-study run``'s options).

    Attributes
    ----------
    resume : bool
        Continue the recorded session from its first unrecorded trial.
    simulate : bool
        A simulated participant answers.
    windowed : bool
        A window, not the full screen.
    seed : int or None
        The order seed; None: drawn (on resume, the recorded one).
    list : int or None
        The list of main pairs (from 1) when the protocol splits them; None: the one with the
        fewest sessions (on resume, the recorded one). See :mod:`.lists`.
    details : mapping or None
        ``age``, ``sex``, ``handedness`` from the command line (None: asked on screen unless
        ``simulate``).
    """

    resume: bool = False
    simulate: bool = False
    windowed: bool = False
    seed: int | None = None
    details: Mapping[str, str | None] | None = None
    list: int | None = None


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
    options: SessionOptions = SessionOptions(),
    *,
    progress: Callable[[str], None] | None = None,
) -> SessionOutcome:
    """``sbir-study run``: check every input, then :func:`run_session`; bad input, a missing
    display included, raises InputError before any window opens.
    """
    from sbir_study.foundation.checks import participant_label

    protocol = load_protocol(protocol_file)
    stimulus_set = stimulus_set_for(stimuli, protocol)
    try:
        participant_label(participant)  # an id no label can be made of, before --data
    except InputError as error:
        raise InputError(f"--participant: {str(error).removeprefix('participant id: ')}") from None
    if options.resume and options.seed is not None:
        raise InputError("--seed: a resumed session uses its recorded seed; drop --seed")
    return run_session(
        protocol,
        stimulus_set,
        participant,
        data,
        options,
        protocol_file=protocol_file,
        progress=progress,
    )


def run_session(
    protocol: Protocol,
    stimulus_set: StimulusSet,
    participant: str,
    data: str | Path,
    options: SessionOptions = SessionOptions(),
    *,
    protocol_file: str | Path = "",
    progress: Callable[[str], None] | None = None,
) -> SessionOutcome:
    """Run (or resume) one participant's session.

    ``participant`` is the id as given; the session is recorded under the label
    :func:`sbir_study.study.recorder.label_of` makes of it, the id in ``participants.tsv``.
    ``progress`` receives one line for the experimenter at each stage.
    """
    say = progress or (lambda line: None)
    # Design: every check that needs no window, the display last; nothing is opened yet.
    plan = plan_session(
        protocol,
        stimulus_set,
        participant,
        data,
        resume=options.resume,
        simulate=options.simulate,
        seed=options.seed,
        details=options.details,
        pair_list=options.list,
    )
    # Initialise: the keyboard, the window and its timing; the details form; the record.
    from psychopy import core, logging

    logging.console.setLevel(logging.ERROR)
    # Real-time priority (where the system allows it) before the keyboard and the window
    # start their threads, so that those inherit it.
    realtime = bool(core.rush(True))
    kb = open_keyboard()
    win = open_window(protocol.display, windowed=options.windowed)
    try:
        timing = measure_timing(win, protocol.timing)
        keys = protocol.response.keys
        responder = Responder(kb, plan.answers, keys) if plan.answers is not None else None
        window = SessionWindow(win, kb, protocol, stimulus_set, timing, core, responder)
        window.warm_up(plan.trials)
        loop = TrialLoop(window, protocol, plan.trials, plan.label)
        say(f"Window open ({timing.mode} timing, refresh {timing.refresh_hz or 0:.1f} Hz).")
        answered = details_on_screen(window, plan, say)
        if answered is None:
            return SessionOutcome(
                plan.path, "incomplete", 0, len(plan.trials), timing.mode, timing.refresh_hz
            )
        recorder = open_record(
            plan, timing, realtime=realtime, details=answered, protocol_file=protocol_file
        )
        say(
            f"Recording to {recorder.path}; the instructions are on screen, the session begins "
            "when the participant presses space."
        )
        # Run: the trials, each written as it ends.
        try:
            status = loop.run(recorder)
        except BaseException as error:
            finish_record(recorder, loop, "incomplete", error)
            raise
        # End: the sidecar completed (above, when an error stopped the session).
        finish_record(recorder, loop, status)
    finally:
        win.close()
        if realtime:
            core.rush(False)
    return SessionOutcome(
        plan.path, status, loop.recorded, len(plan.trials), timing.mode, timing.refresh_hz
    )
