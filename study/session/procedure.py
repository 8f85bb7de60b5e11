"""The session's procedure: design -> initialise -> run -> end, one module each.

* **Design** (:mod:`.plan`, with :mod:`.lists`): every check that needs no window, the display
  last; the participant's seed and trial list.
* **Initialise** (:mod:`.keyboard`, :mod:`.window`, :mod:`.forms`): real-time
  priority, the Psychtoolbox keyboard, the window and its timing, every
  screen drawn once; details the protocol records and the command line did
  not give are asked on screen; the record is opened (:mod:`.record`).
* **Run** (:mod:`.loop`): the trials, each written as soon as it is scored.
* **End** (:mod:`.record`): the sidecar completed, also when an error stopped
  the session.

``SessionOptions(simulate=True)`` lets a simulated participant answer
(:mod:`.simulated`).
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
    """How one participant's session runs, beyond its inputs (``sbir-study run``'s options).

    Attributes
    ----------
    resume : bool
        Continue the recorded session from its first unrecorded trial.
    simulate : bool
        A simulated participant answers.
    windowed : bool
        A window, not the full screen.
    seed : int or None
        The participant's order seed; None: drawn at random (on resume, the recorded one).
    list : int or None
        The list of main pairs (from 1) when the protocol splits them (``[online]
        subset``, ``lists``); None: the one with the fewest sessions in the dataset (on
        resume, the recorded one). See :mod:`.lists`.
    details : mapping or None
        ``age``, ``sex``, ``handedness`` as given on the command line (None: not given,
        asked on screen unless ``simulate``).
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
    """``sbir-study run``: check every input, then run the session (see :func:`run_session`).

    Bad input, a missing display included, raises
    :class:`~sbir_study.foundation.checks.InputError` before any window opens.
    ``progress`` receives one line for the experimenter at each stage.
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
    """Run (or resume) one participant's session; see the module docstring.

    ``participant`` is the participant's id as given (a recruitment platform's
    id or the lab's own label); the session is recorded under the label
    :func:`sbir_study.study.recorder.label_of` makes of it, and the id goes
    into ``participants.tsv`` (``source_id``). ``stimulus_set`` is a
    :class:`sbir_study.stimuli.StimulusSet` (checked).
    ``progress`` receives one line for the experimenter at each stage.
    Returns a :class:`SessionOutcome`; bad input raises
    :class:`~sbir_study.foundation.checks.InputError`.
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
