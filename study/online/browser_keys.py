"""Browser key events as PsychoPy key names, so that one protocol names its keys once.

Protocols name keys as PsychoPy does (``"1"``, ``"num_1"``, ``"escape"``,
``"space"``, ``"p"``). A browser reports a key-down as ``KeyboardEvent.code``
(the physical key, named after its place on a US keyboard: ``"Digit1"``,
``"Numpad1"``, ``"KeyP"``) and ``KeyboardEvent.key`` (what the key types in
the current layout: ``"1"``, ``"&"`` on a French keyboard, ``"P"`` with
shift). PsychoPy's Psychtoolbox backend names the physical key too, so the
name comes from ``code``:

=================================  ================================
``KeyboardEvent.code``             PsychoPy name
=================================  ================================
``Digit0`` .. ``Digit9``           ``"0"`` .. ``"9"``
``Numpad0`` .. ``Numpad9``         ``"num_0"`` .. ``"num_9"``
``KeyA`` .. ``KeyZ``               ``"a"`` .. ``"z"``
``F1`` .. ``F12``                  ``"f1"`` .. ``"f12"``
``Escape``, ``Space``, ``Enter``   ``"escape"``, ``"space"``, ``"return"``
others                             :data:`BROWSER_CODES`
=================================  ================================

When ``code`` is empty or unknown (some on-screen and remote keyboards send
only ``key``), a digit, a letter (either case), ``" "``, ``"Escape"`` and
``"Enter"`` in ``key`` still give the name; anything else has no name and
never counts as a rating. Auto-repeated key-downs of a held key are not
presses (the browser drops them before sending): PsychoPy reports one press
per key-down too.
"""

from __future__ import annotations

import string

__all__ = ["BROWSER_CODES", "browser_key_name"]

_NAMED = {
    "Escape": "escape",
    "Space": "space",
    "Enter": "return",
    "Tab": "tab",
    "Backspace": "backspace",
    "CapsLock": "capslock",
    "Delete": "delete",
    "Insert": "insert",
    "Home": "home",
    "End": "end",
    "PageUp": "pageup",
    "PageDown": "pagedown",
    "ArrowLeft": "left",
    "ArrowRight": "right",
    "ArrowUp": "up",
    "ArrowDown": "down",
    "Minus": "minus",
    "Equal": "equal",
    "BracketLeft": "bracketleft",
    "BracketRight": "bracketright",
    "Backslash": "backslash",
    "Semicolon": "semicolon",
    "Quote": "apostrophe",
    "Backquote": "quoteleft",
    "Comma": "comma",
    "Period": "period",
    "Slash": "slash",
    "IntlBackslash": "less",
    "ShiftLeft": "lshift",
    "ShiftRight": "rshift",
    "ControlLeft": "lctrl",
    "ControlRight": "rctrl",
    "AltLeft": "lalt",
    "AltRight": "ralt",
    "NumLock": "numlock",
    "ScrollLock": "scrolllock",
    "Pause": "pause",
    "ContextMenu": "menu",
    "NumpadDivide": "num_divide",
    "NumpadMultiply": "num_multiply",
    "NumpadSubtract": "num_subtract",
    "NumpadAdd": "num_add",
    "NumpadEnter": "num_enter",
    "NumpadDecimal": "num_decimal",
}

#: ``KeyboardEvent.code`` -> PsychoPy key name (the Linux names of ``psychopy.hardware.keyboard``).
BROWSER_CODES: dict[str, str] = {
    **{f"Digit{d}": d for d in string.digits},
    **{f"Numpad{d}": f"num_{d}" for d in string.digits},
    **{f"Key{c}": c.lower() for c in string.ascii_uppercase},
    **{f"F{n}": f"f{n}" for n in range(1, 13)},
    **_NAMED,
}

_FROM_KEY = {" ": "space", "Escape": "escape", "Esc": "escape", "Enter": "return"}


def browser_key_name(code: str, key: str) -> str | None:
    """The PsychoPy name of a browser key-down, or None when it has none.

    Examples
    --------
    >>> browser_key_name("Digit3", "3"), browser_key_name("Digit3", "\\"")
    ('3', '3')
    >>> browser_key_name("Numpad7", "7"), browser_key_name("KeyP", "P")
    ('num_7', 'p')
    >>> browser_key_name("", "Escape"), browser_key_name("", "é")
    ('escape', None)
    """
    name = BROWSER_CODES.get(code)
    if name is not None:
        return name
    if key in _FROM_KEY:
        return _FROM_KEY[key]
    if len(key) == 1 and key.isascii() and key.isalnum():
        return key.lower()
    return None
