"""Is there a display to open the session's window on? Asked before PsychoPy opens anything.

Without an X display the Psychtoolbox keyboard backend ends the process with a segmentation
fault, so ``run`` asks the X server itself first (python-xlib), with a time limit.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping

from sbir_study.foundation.checks import InputError

__all__ = ["require_display"]

_HOW = (
    "run it from a desktop session, or under a virtual display: "
    "xvfb-run -a -s '-screen 0 1920x1200x24' sbir-study run ..."
)


def require_display(environ: Mapping[str, str] | None = None, *, timeout_s: float = 5.0) -> str:
    """The X display the session will use, or an InputError saying what to do.

    ``DISPLAY`` must be set and its server answer within ``timeout_s`` with GLX (the window) and
    XInputExtension (the keyboard backend). Other platforms than Linux pass.
    """
    if not sys.platform.startswith("linux"):
        return ""
    environ = os.environ if environ is None else environ
    name = environ.get("DISPLAY", "")
    if not name:
        raise InputError(f"no display: DISPLAY is not set; {_HOW}")
    answer: dict = {}

    def ask() -> None:
        from Xlib import display as xdisplay

        try:
            connection = xdisplay.Display(name)
        except Exception as error:  # python-xlib raises several unrelated types
            answer["error"] = str(error) or type(error).__name__
            return
        try:
            answer["missing"] = [
                extension
                for extension in ("GLX", "XInputExtension")
                if connection.query_extension(extension) is None
            ]
        finally:
            connection.close()

    # A server that accepts the connection but never replies would block forever.
    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise InputError(f"no display: the X server of DISPLAY={name} does not answer; {_HOW}")
    if "error" in answer:
        raise InputError(f"no display: cannot open DISPLAY={name} ({answer['error']}); {_HOW}")
    if answer["missing"]:
        raise InputError(
            f"display: the X server of DISPLAY={name} lacks {' and '.join(answer['missing'])}, "
            "which the window (GLX) and the keyboard backend (XInputExtension) need"
        )
    return name
