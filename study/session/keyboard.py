"""The session's keyboard, and every key-down of the session in one stream.

Only PsychoPy's Psychtoolbox backend, which time-stamps each key-down itself, is accepted.
Trials are scored from :class:`KeyStream`, ordered by the keys' own times, whatever order
the keyboard returned them in.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from sbir_study.foundation.checks import InputError

from ..protocol import Protocol
from ..responses import KeyEvent

if TYPE_CHECKING:
    from psychopy.hardware.keyboard import Keyboard

__all__ = ["KeyStream", "control_keys", "open_keyboard"]


def open_keyboard() -> Keyboard:
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


def control_keys(protocol: Protocol) -> set[str]:
    """The keys that stop the trials: quit, and pause where the protocol allows pauses.

    >>> from sbir_study.study.protocol import Protocol, Pauses
    >>> sorted(control_keys(Protocol()))
    ['escape', 'p']
    >>> sorted(control_keys(Protocol(pauses=Pauses(allowed=False))))
    ['escape']
    """
    keys = {protocol.response.quit_key}
    if protocol.pauses.allowed:
        keys.add(protocol.response.pause_key)
    return keys


class KeyStream:
    """Every key-down of the session, each (name, time stamp) once, in time order.

    A tap between two polls comes back only with ``waitRelease=True``, and a key returned on
    press comes again on release: both are collected. Times are on PsychoPy's clock.
    """

    def __init__(self, kb: Keyboard, controls: set[str]) -> None:
        self.kb = kb
        self.events: list[KeyEvent] = []  # sorted by time
        self.received: list[KeyEvent] = []  # in the order they came in
        self.controls: list[KeyEvent] = []  # the pause and quit keys among them
        self._control_names = controls
        self._seen: set[tuple[str, float]] = set()

    def poll(self) -> None:
        """Take in the key-downs the keyboard has received since the last poll."""
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
        """The events at or after ``t``."""
        return self.events[bisect.bisect_left(self.events, t, key=lambda e: e.t) :]
