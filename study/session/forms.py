"""Initialise: the participant details form, on screen before the instructions.

Each detail the protocol records and the command line did not give is asked: a choice by
one of the protocol's answer keys, the age typed with the digit keys. The quit key ends the
session instead, before anything is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..participants import AGE_RANGE, DETAILS, MISSING
from ..texts import Texts, answer_keys, fill
from .plan import SessionPlan
from .window import SessionWindow

__all__ = ["ask_details", "details_on_screen"]


def details_on_screen(
    window: SessionWindow, plan: SessionPlan, say: Callable[[str], None]
) -> dict[str, str] | None:
    """The details not given, asked on screen (n/a, asked of nobody, on resume or simulated);
    None if the participant chose to end.
    """
    wanted = [d for d in plan.protocol.participants.details if d not in plan.given]
    if plan.resume or plan.simulate:
        return {name: MISSING for name in wanted}
    if wanted:
        say(f"Asking the participant on screen: {', '.join(wanted)}.")
    protocol = plan.protocol
    return ask_details(window, wanted, texts=protocol.texts, quit_key=protocol.response.quit_key)


def ask_details(
    window: SessionWindow, wanted: list[str], *, texts: Texts, quit_key: str
) -> dict[str, str] | None:
    """Ask each detail on screen in the protocol's words; None if the participant chose to end."""
    answers = {}
    for name in wanted:
        detail = DETAILS[name]
        question = fill(getattr(texts, f"{name}_question"))
        if detail.keys is None:
            value = _type_number(
                window,
                question,
                fill(texts.age_retry, low=AGE_RANGE[0], high=AGE_RANGE[1]),
                quit_key,
            )
        else:
            keys = answer_keys(texts, f"{name}_question", detail.keys)
            shown = window.message(question)
            event = window.answer({*keys, quit_key}, shown)
            value = keys.get(event.name)
        if value is None:
            return None
        answers[name] = value
    return answers


def _type_number(window: SessionWindow, question: str, retry: str, quit_key: str) -> str | None:
    """A whole number typed with the digit keys (Enter confirms, Enter alone: n/a)."""
    digits = {str(d): str(d) for d in range(10)} | {f"num_{d}": str(d) for d in range(10)}
    keys = {*digits, "backspace", "return", "num_enter", quit_key}
    typed, note = "", ""
    shown = window.message(f"{question}\n\n_")
    used = 0  # presses since the question appeared are taken in order, each once
    while True:
        presses = [e for e in window.keys.since(shown) if e.name in keys]
        if len(presses) <= used:
            window.tick()
            time.sleep(0.001)
            continue
        event = presses[used]
        used += 1
        if event.name == quit_key:
            return None
        if event.name in digits and len(typed) < 3:
            typed += digits[event.name]
        elif event.name == "backspace":
            typed = typed[:-1]
        elif event.name in ("return", "num_enter"):
            if not typed:
                return MISSING
            if AGE_RANGE[0] <= int(typed) <= AGE_RANGE[1]:
                return str(int(typed))
            typed, note = "", retry
        window.message(f"{question}\n\n{typed or '_'}\n\n{note}")
