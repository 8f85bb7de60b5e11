"""What the window tests and the session benchmark share: a private Xvfb and a keyboard.

:class:`Keyboard` stands in for the participant's hands: it presses and
releases keys on the X display through the XTEST extension at planned times
of the system monotonic clock (sleeping, then spinning the last
milliseconds) and notes when each key went down, which is what the session's
record is compared with (``onset_monotonic`` + seconds from onset).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]

#: PsychoPy key name -> X keysym name, where they differ.
_KEYSYMS = {
    "escape": "Escape",
    "return": "Return",
    "backspace": "BackSpace",
    "num_enter": "KP_Enter",
    **{f"num_{d}": f"KP_{d}" for d in range(10)},
}


@contextlib.contextmanager
def xvfb(screen: str = "1920x1200x24", nice: int = 0):
    """A private Xvfb display for the duration of the block; yields its name (":N").

    ``nice`` below 0 runs the X server ahead of other processes: at real-time
    priority where allowed (above the session's), else at that nice value.
    The X server is the display and the keyboard here; on a busy machine its
    scheduling delays every key event it passes on.
    """
    program = shutil.which("Xvfb")
    if program is None:
        raise RuntimeError("Xvfb is not installed (Debian package xvfb); make install provides it")
    read, write = os.pipe()
    command = [program, "-displayfd", str(write), "-screen", "0", screen, "-nolisten", "tcp"]
    server = subprocess.Popen(
        command,
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
        preexec_fn=(lambda: _nice(nice)) if nice else None,
    )
    os.close(write)
    try:
        with os.fdopen(read) as stream:
            number = stream.readline().strip()
        yield f":{number}"
    finally:
        server.terminate()
        server.wait()


def _nice(increment: int) -> None:
    """Raise this (child) process's priority: real-time above the session's, else nicer."""
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(2))
        return
    except (PermissionError, OSError):
        pass
    try:
        os.nice(increment)
    except PermissionError:
        pass  # runs at the default priority where raising it is not allowed


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
    """A key press the keyboard made: which key, when it was sent (monotonic s), and when
    the X server had taken it (its answer to the sync after the request; the key went down
    between the two)."""

    key: str
    t: float
    acked: float = float("nan")


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

    def _send(self, key: str, down: bool) -> tuple[float, float]:
        from Xlib import X
        from Xlib.ext import xtest

        code = self.code(key)
        at = time.monotonic()
        xtest.fake_input(self.display, X.KeyPress if down else X.KeyRelease, code)
        self.display.sync()
        return at, time.monotonic()

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
            sent, acked = self._send(key, down)
            if down:
                made.append(Press(key, sent, acked))
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


class Session:
    """``sbir-study run`` in a window on a display, as a subprocess whose output is followed."""

    def __init__(self, command: list[str], env: dict) -> None:
        self.process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(stream, into), daemon=True)
            for stream, into in (
                (self.process.stdout, self.lines),
                (self.process.stderr, self.errors),
            )
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def wait_line(self, text: str, timeout: float = 120.0) -> str:
        """Wait until the session prints a line containing ``text``; return it."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                if text in line:
                    return line
            if self.process.poll() is not None:
                time.sleep(0.1)  # let the readers drain
                if not any(text in line for line in self.lines):
                    errors = "".join(self.errors)[-2000:]
                    raise RuntimeError(
                        f"the session ended ({self.process.returncode}) before "
                        f"printing {text!r}: {errors}"
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(f"the session did not print {text!r}")
            time.sleep(0.02)

    def finish(self, timeout: float = 120.0) -> tuple[int, str, str]:
        """Wait for the session to end: exit status, stdout, stderr."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        for reader in self._readers:
            reader.join(10)
        return self.process.returncode, "".join(self.lines), "".join(self.errors)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def start_session(
    display: str | None,
    protocol: Path,
    stimuli: Path,
    data: Path,
    *extra: str,
    participant: str = "01",
    windowed: bool = True,
) -> Session:
    """``sbir-study run`` in a window on ``display`` (None: no DISPLAY at all)."""
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    if display is not None:
        env["DISPLAY"] = display
    command = [
        sys.executable,
        "-m",
        "sbir_study",
        "run",
        "--protocol",
        str(protocol),
        "--stimuli",
        str(stimuli),
        "--participant",
        participant,
        "--data",
        str(data),
        *(["--windowed"] if windowed else []),
        *extra,
    ]
    return Session(command, env)


@contextlib.contextmanager
def realtime_priority():
    """Real-time priority for this thread inside the block (where allowed), normal after it."""
    try:
        before = os.sched_getscheduler(0), os.sched_getparam(0)
    except (OSError, AttributeError):
        yield False
        return
    raised = realtime()
    try:
        yield raised
    finally:
        if raised:
            os.sched_setscheduler(0, before[0], before[1])


def beh_file(data: Path, task: str, participant: str = "01") -> Path:
    return data / f"sub-{participant}" / "beh" / f"sub-{participant}_task-{task}_beh.tsv"


def wait_for(condition, timeout: float = 60.0, what: str = "the session") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


#: The start of a script that draws with the session's own window (``SessionWindow``), as
#: ``sbir-study run`` opens it, on the protocol ``sys.argv[1]`` and the set ``sys.argv[2]``;
#: nobody presses a key. ``read_back(draw)`` draws into the back buffer and returns the frame
#: as drawn, before the flip shows it (a virtual display's front buffer reads back black).
WINDOW_SCRIPT = r"""
import json, sys
import numpy as np
from psychopy import core, visual
from sbir_study.study.protocol import load_protocol
from sbir_study.study.session.window import DisplayTiming, SessionWindow, open_window
from sbir_study.study.trials import build_trials, stimulus_set_for

protocol = load_protocol(sys.argv[1])
stimulus_set = stimulus_set_for(sys.argv[2], protocol)
win = open_window(protocol.display, windowed=True)
class NoKeys:
    def getKeys(self, waitRelease):
        return []

window = SessionWindow(win, NoKeys(), protocol, stimulus_set, DisplayTiming(60.0, 0.1, "clock"),
                       core)

def read_back(draw):
    win.clearBuffer()
    draw()
    frame = np.asarray(win.getMovieFrame(buffer="back"), dtype=np.int16)
    win.movieFrames.clear()
    win.flip()
    return frame
"""


def draw_in_window(tmp_path: Path, body: str, protocol: Path, stimuli: Path) -> dict:
    """Run :data:`WINDOW_SCRIPT` + ``body`` on a private 1280x800 Xvfb display.

    ``body`` ends by printing one JSON line, which is returned parsed.
    """
    script = tmp_path / "draw.py"
    script.write_text(WINDOW_SCRIPT + body, encoding="utf-8")
    with xvfb("1280x800x24") as display:
        result = subprocess.run(
            [sys.executable, str(script), str(protocol), str(stimuli)],
            env={**os.environ, "DISPLAY": display},
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=180,
            cwd=ROOT,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
