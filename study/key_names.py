"""The key names a protocol may use: those a keyboard backend or a browser can report.

With PsychoPy installed every key is checked against its Psychtoolbox backend's names on
this platform, so a lab session never opens for a key that cannot be reported; a protocol
served to browsers (``load_protocol(path, online=True)``) is also checked against a
browser's names. Without PsychoPy, loading a protocol does not import it.
"""

from __future__ import annotations

import importlib.util

from sbir_study.foundation.checks import closest

__all__ = ["backend_key_names", "browser_key_names", "closest_key", "key_name_tables"]


def backend_key_names() -> frozenset[str]:
    """The names PsychoPy's keyboard backend can report here (``keyboard.keyNames``); imports it."""
    from psychopy.hardware import keyboard

    return frozenset(keyboard.keyNames.values())


def browser_key_names() -> frozenset[str]:
    """The key names a browser key-down can be given (:mod:`.online.browser_keys`)."""
    from .online.browser_keys import BROWSER_CODES

    return frozenset(BROWSER_CODES.values())


def key_name_tables(*, online: bool) -> tuple[tuple[str, frozenset[str]], ...]:
    """The key-name tables a protocol's keys must be in, as (who reports them, the names)."""
    tables = []
    if importlib.util.find_spec("psychopy") is not None:
        tables.append(("the keyboard backend reports", backend_key_names()))
    if online:
        tables.append(("a browser sends (sbir-study serve)", browser_key_names()))
    return tuple(tables)


def closest_key(name: str, known: frozenset[str]) -> str | None:
    """The known name for a key spelled another common way, or the most similar name.

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
