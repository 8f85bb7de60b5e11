"""What the window tests and the session benchmark share: a private Xvfb and a keyboard.

:class:`Keyboard` stands in for the participant's hands: it presses and
releases keys on the X display through the XTEST extension at planned times
of the system monotonic clock (sleeping, then spinning the last
milliseconds) and notes when each key went down, which is what the session's
record is compared with (``onset_monotonic`` + seconds from onset).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]

#: PsychoPy key name -> X keysym name, where they differ.
_KEYSYMS = {"escape": "Escape", "return": "Return", "backspace": "BackSpace",
            "num_enter": "KP_Enter", **{f"num_{d}": f"KP_{d}" for d in range(10)}}  # fmt: skip


@contextlib.contextmanager
def xvfb(screen: str = "1920x1200x24", nice: int = 0):
    """A private Xvfb display for the duration of the block; yields its name (":N").

    ``nice`` below 0 runs the X server ahead of other processes (where
    allowed), as a lab may run its display server.
    """
    program = shutil.which("Xvfb")
    if program is None:
        raise RuntimeError("Xvfb is not installed (Debian package xvfb); make install provides it")
    read, write = os.pipe()
    command = [program, "-displayfd", str(write), "-screen", "0", screen, "-nolisten", "tcp"]
    server = subprocess.Popen(command, pass_fds=(write,), stderr=subprocess.DEVNULL,
                              preexec_fn=(lambda: os.nice(nice)) if nice else None)  # fmt: skip
    os.close(write)
    try:
        with os.fdopen(read) as stream:
            number = stream.readline().strip()
        yield f":{number}"
    finally:
        server.terminate()
        server.wait()


def realtime() -> bool:
    """Run this process at real-time priority if allowed: the keyboard should not be late.

    Processes it starts afterwards (the X server, the session, busy workers) do
    not inherit the priority: they run as they would on their own.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_RR | os.SCHED_RESET_ON_FORK, os.sched_param(1))
    except (PermissionError, OSError, AttributeError):
        return False
    return True


@dataclass(frozen=True)
class Press:
    """A key press the keyboard made: which key, and when it went down (monotonic s)."""

    key: str
    t: float


class Keyboard:
    """Key presses on an X display through the XTEST extension, at planned times."""

    def __init__(self, display: str) -> None:
        from Xlib import XK
        from Xlib import display as xdisplay

        self.display = xdisplay.Display(display)
        self._codes: dict[str, int] = {}
        self._XK = XK

    def code(self, key: str) -> int:
        if key not in self._codes:
            keysym = self._XK.string_to_keysym(_KEYSYMS.get(key, key))
            code = self.display.keysym_to_keycode(keysym) if keysym else 0
            if not code:
                raise ValueError(f"no X key code for {key!r}")
            self._codes[key] = code
        return self._codes[key]

    def _send(self, key: str, down: bool) -> float:
        from Xlib import X
        from Xlib.ext import xtest

        code = self.code(key)
        at = time.monotonic()
        xtest.fake_input(self.display, X.KeyPress if down else X.KeyRelease, code)
        self.display.sync()
        return at

    def play(self, events, *, hold: float = 0.006) -> list[Press]:
        """Press each ``(monotonic time, key)`` at its time, releasing it ``hold`` later.

        Returns the presses as made (their times are taken just before the
        request goes to the X server). Events must be in time order and far
        enough apart that releases do not overlap the same key's next press.
        """
        pending: list[tuple[float, str, bool]] = []
        for at, key in events:
            pending.append((at, key, True))
            pending.append((at + hold, key, False))
        pending.sort(key=lambda e: (e[0], not e[2]))
        made = []
        for at, key, down in pending:
            wait_until(at)
            sent = self._send(key, down)
            if down:
                made.append(Press(key, sent))
        return made

    def tap(self, key: str, at: float | None = None, hold: float = 0.03) -> Press:
        """Press and release one key (at ``at``, or now)."""
        return self.play([(time.monotonic() if at is None else at, key)], hold=hold)[0]


def wait_until(at: float) -> None:
    """Sleep until shortly before ``at`` (monotonic), then spin."""
    while (remaining := at - time.monotonic()) > 0.002:
        time.sleep(min(remaining - 0.002, 0.01))
    while time.monotonic() < at:
        pass


def start_session(display: str, protocol: Path, stimuli: Path, data: Path, *extra: str,
                  participant: str = "01") -> subprocess.Popen:  # fmt: skip
    """``sbir-study run`` in a window on ``display``, as a subprocess."""
    env = {**os.environ, "DISPLAY": display}
    command = [sys.executable, "-m", "study.cli", "run", "--protocol", str(protocol),
               "--stimuli", str(stimuli), "--participant", participant, "--data", str(data),
               "--windowed", *extra]  # fmt: skip
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def beh_file(data: Path, task: str, participant: str = "01") -> Path:
    return data / f"sub-{participant}" / "beh" / f"sub-{participant}_task-{task}_beh.tsv"


def wait_for(condition, timeout: float = 60.0, what: str = "the session") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)
