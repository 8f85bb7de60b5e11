"""Every screen a participant meets, in order, in the protocol's words (lab and online).

``sbir-study protocol show`` prints :func:`screens`, so a protocol can be proofread before
anyone sits down.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from sbir_study.foundation.checks import MAX_SOURCE_ID_LENGTH

from .participants import AGE_RANGE
from .protocol import Protocol
from .texts import PRACTICE_NOTE, Texts, fill, key_label, write_instructions

__all__ = ["Screen", "instruction_texts", "scale_reminder", "screens"]


def instruction_texts(protocol: Protocol) -> dict[str, str]:
    """The instruction texts, the protocol's own else written from its settings; ``practice``
    first when it has practice pairs.

    >>> print(instruction_texts(Protocol())["main"])  # doctest: +NORMALIZE_WHITESPACE
    Now rate each pair yourself: how well does the image match the sketch?
    <BLANKLINE>
    Press a number key from 1 (best match) to 7 (worst match) while the pair is shown or
    during the black screen after it. You may change your rating until the next pair appears.
    Each pair is shown for 2 seconds, then the screen is black for 1 second.
    <BLANKLINE>
    Press P to pause at any time. Press Esc to end the session. Press space to begin.
    """
    written = write_instructions(protocol.response, protocol.timing, protocol.pauses)
    own = protocol.instructions
    texts = {
        kind: getattr(own, kind) if getattr(own, kind) is not None else text
        for kind, text in written.items()
    }
    if not protocol.practice.pairs:
        return texts
    practice = own.practice if own.practice is not None else f"{PRACTICE_NOTE}\n\n{texts['main']}"
    return {"practice": practice, **texts}


def scale_reminder(protocol: Protocol) -> str:
    """The line under each rated pair ([display] scale_reminder).

    >>> scale_reminder(Protocol())
    '1 = best match ... 7 = worst match'
    """
    keys, scale = protocol.response.keys, protocol.scale
    best, worst = (0, -1) if scale.best == "low" else (-1, 0)
    return fill(
        protocol.texts.scale_reminder,
        best_key=key_label(keys[best]),
        worst_key=key_label(keys[worst]),
        best_rating=scale.points[best],
        worst_rating=scale.points[worst],
    )


class Screen(NamedTuple):
    """One screen a participant may see: when it comes, and its text."""

    when: str
    text: str


def screens(protocol: Protocol, where: Literal["lab", "online"]) -> list[Screen]:
    """Every screen's text of the lab or the online session, in the order met.

    Screens the settings never show are left out; a placeholder known only when shown gets an
    example value; buttons are in brackets.

    >>> [screen.when for screen in screens(Protocol(), "lab")][:3]
    ['details: age', 'details: an age out of range, under the question', 'details: sex']
    """
    texts, online = protocol.texts, protocol.online
    instructions = instruction_texts(protocol)
    lab = where == "lab"
    shown = _details_form(protocol) if lab else _online_start(protocol)
    shown += _blocks(protocol, instructions, lab)
    if not lab:
        shown.append(Screen("after choosing to end", texts.quit_ended))
        shown += _ending(texts, online.quit_code, online.quit_url, "after choosing to end")
        shown.append(Screen("after the last pair", texts.saving))
    shown.append(Screen("the end", instructions["end"]))
    return shown if lab else shown + _online_end(protocol)


def _details_form(protocol: Protocol) -> list[Screen]:
    """The lab's details form: one question per detail the protocol records."""
    texts = protocol.texts
    shown = []
    for name in protocol.participants.details:
        shown.append(Screen(f"details: {name}", getattr(texts, f"{name}_question")))
        if name == "age":
            retry = fill(texts.age_retry, low=AGE_RANGE[0], high=AGE_RANGE[1])
            shown.append(Screen("details: an age out of range, under the question", retry))
    return shown


def _online_start(protocol: Protocol) -> list[Screen]:
    """The page's screens before the instructions: consent, details, the window's size."""
    texts, online = protocol.texts, protocol.online
    shown = [
        Screen("the page's title", f"{texts.page_title} (language: {texts.language})"),
        Screen("a browser without JavaScript", texts.needs_javascript),
        Screen(
            "an id in the page's address that cannot be used",
            fill(texts.bad_participant_id, max_length=MAX_SOURCE_ID_LENGTH),
        ),
        Screen(
            "consent",
            f"{texts.consent_title}\n\n{online.consent}\n\n[{texts.agree}] [{texts.disagree}]",
        ),
        Screen("after not agreeing", texts.declined),
        *_ending(texts, online.no_consent_code, online.no_consent_url, "after not agreeing"),
    ]
    if online.details:
        sex = [texts.prefer_not_to_say, texts.female, texts.male, texts.other]
        hand = [texts.prefer_not_to_say, texts.right, texts.left, texts.ambidextrous]
        form = [
            texts.details_title,
            texts.details_note,
            f"{texts.age}: ___",
            f"{texts.sex}: {' | '.join(sex)}",
            f"{texts.handedness}: {' | '.join(hand)}",
            f"[{texts.continue_button}]",
        ]
        shown.append(Screen("details", "\n".join(form)))
    too_small = fill(texts.window_too_small, min_width=1040, min_height=640, width=800, height=600)
    return [
        *shown,
        Screen("full screen", f"{texts.fullscreen}\n\n[{texts.fullscreen_button}]"),
        Screen("a window too small", f"{too_small}\n\n[{texts.cannot_enlarge}]"),
        Screen("on a phone or tablet", texts.needs_keyboard),
        Screen("a window that could not be enlarged", texts.screen_too_small),
        Screen("while the pictures load", texts.loading),
        Screen("a picture that could not be loaded", texts.loading_failed),
    ]


def _blocks(protocol: Protocol, instructions: dict[str, str], lab: bool) -> list[Screen]:
    """Each block's instructions and the lines under its pairs, the pause, the quit question."""
    texts = protocol.texts
    reminder = lab and protocol.display.scale_reminder
    shown = []
    if lab and protocol.practice.pairs:
        shown.append(Screen("before the practice pairs", instructions["practice"]))
        if reminder:
            shown.append(Screen("under each practice pair", scale_reminder(protocol)))
    if protocol.anchoring.enabled:
        shown.append(Screen("before the anchoring phase", instructions["anchoring"]))
        label = fill(texts.anchor_label, rating=protocol.scale.low)
        shown.append(Screen("under each anchor pair", label))
    shown.append(Screen("before the main block", instructions["main"]))
    if reminder:
        shown.append(Screen("under each pair of the main block", scale_reminder(protocol)))
    if not lab:
        when = "above the instructions, when a reloaded page resumes the session"
        shown.append(Screen(when, texts.welcome_back))
    if protocol.pauses.allowed or protocol.pauses.break_every:
        shown.append(Screen("a pause or a break", instructions["pause"]))
    return [*shown, Screen("after the quit key", texts.quit_question)]


def _online_end(protocol: Protocol) -> list[Screen]:
    """The page's screens after the end text: its code, coming back, refusals, errors."""
    texts, online = protocol.texts, protocol.online
    return [
        *_ending(texts, online.completion_code, online.completion_url, "the end"),
        Screen("coming back to a session that has ended", texts.session_ended),
        Screen("coming back after the dropout time (timed out)", texts.timed_out_ended),
        *_ending(texts, online.timed_out_code, online.timed_out_url, "timed out"),
        Screen("a session the server refused without a reason", texts.could_not_start),
        Screen("an id whose session began in another browser", texts.already_started),
        Screen("a study that takes no more participants", texts.study_full),
        Screen("after an error", fill(texts.went_wrong, error="(what went wrong)")),
        Screen(
            "after an error, when the server refused trials",
            fill(texts.trials_not_stored, trials="4, 7"),
        ),
        Screen(
            "when the page cannot load the study's settings",
            fill(texts.went_wrong, error=texts.settings_failed),
        ),
    ]


def _ending(texts: Texts, code: str, url: str, where: str) -> list[Screen]:
    """The code and the address of an online ending ([online]), under its text."""
    shown = []
    if code:
        shown.append(Screen(f"{where}, under its text", fill(texts.completion_code, code=code)))
    if url:
        link = f"{texts.completion_redirect} [{texts.completion_link}]"
        shown.append(Screen(f"{where}, under its text", link))
    return shown
