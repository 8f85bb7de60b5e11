"""The key names a protocol may use: those a keyboard backend or a browser can report.

Which names are checked depends on where the protocol runs (:func:`key_name_tables`):

* When PsychoPy is installed, every key is checked against the names its
  Psychtoolbox keyboard backend reports on this platform
  (:func:`backend_key_names`). The lab session (``sbir-study run``) needs
  PsychoPy, so a lab session never opens a window for a key that can never
  be reported.
* A protocol served to browsers (``load_protocol(path, online=True)``, which
  ``sbir-study serve`` uses) is also checked against the names a browser can
  send (:mod:`sbir_study.study.online.browser_keys`), with or without PsychoPy.
* Loading a protocol never imports PsychoPy when it is not installed: an
  install with only the ``[online]`` extra loads and serves protocols.
"""

from __future__ import annotations

import importlib.util

from sbir_study.foundation.checks import closest

__all__ = ["backend_key_names", "browser_key_names", "closest_key", "key_name_tables"]


def backend_key_names() -> frozenset[str]:
    """The key names PsychoPy's Psychtoolbox keyboard backend reports on this platform.

    PsychoPy maps the backend's key codes to names with one table per
    platform (``psychopy.hardware.keyboard.keyNames``); a key that is not in
    it can never be reported, so a protocol naming it could never be answered.
    Imports PsychoPy.
    """
    from psychopy.hardware import keyboard

    return frozenset(keyboard.keyNames.values())


def browser_key_names() -> frozenset[str]:
    """The key names a browser key-down can be given (:mod:`.online.browser_keys`)."""
    from .online.browser_keys import BROWSER_CODES

    return frozenset(BROWSER_CODES.values())


def key_name_tables(*, online: bool) -> tuple[tuple[str, frozenset[str]], ...]:
    """The key-name tables a protocol's keys must be in: (who reports them, the names).

    ``online``: the protocol is served to browsers too.
    """
    tables = []
    if importlib.util.find_spec("psychopy") is not None:
        tables.append(("the keyboard backend reports", backend_key_names()))
    if online:
        tables.append(("a browser sends (sbir-study serve)", browser_key_names()))
    return tuple(tables)


def closest_key(name: str, known: frozenset[str]) -> str | None:
    """The known name for a key spelled another common way, or the most similar name.

    Examples
    --------
    >>> known = frozenset({"escape", "num_3", "return", "f1", "f3"})
    >>> closest_key("Esc", known), closest_key("numpad3", known), closest_key("f13", known)
    ('escape', 'num_3', 'f3')
    """
    spelled = name.strip().lower()
    for prefix in ("numpad_", "numpad", "keypad_", "keypad", "kp_", "kp"):
        if spelled.startswith(prefix) and len(spelled) > len(prefix):
            spelled = "num_" + spelled[len(prefix) :]
            break
    spelled = {"esc": "escape", "enter": "return", "spacebar": "space"}.get(spelled, spelled)
    if spelled in known:
        return spelled
    # Of equally similar names, the last in sorted order: 'f13' suggests 'f3', not 'f1'.
    return closest(spelled, sorted(known, reverse=True))
