"""Every screen a participant meets, in order, in the protocol's words (lab and online).

The words are the protocol's (:mod:`sbir_study.study.texts`): its ``[texts]``, its
``[instructions]``, and where it gives none, instruction texts written from its
settings (:func:`instruction_texts`). ``sbir-study protocol show`` prints
:func:`screens`, so that an experimenter can proofread a protocol before anyone
sits down.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from sbir_study.foundation.checks import MAX_SOURCE_ID_LENGTH

from .participants import AGE_RANGE
from .protocol import Protocol
from .texts import PRACTICE_NOTE, Texts, fill, key_label, write_instructions

__all__ = ["Screen", "instruction_texts", "scale_reminder", "screens"]


def _scale(protocol: Protocol) -> tuple[int, bool]:
    """The protocol's first rating and whether it is the best match."""
    scale = protocol.scale
    return scale.low, scale.best == "low"


def instruction_texts(protocol: Protocol) -> dict[str, str]:
    """The instruction texts: the protocol's own, else written from its settings.

    Four, and a fifth, ``practice``, first, when the protocol has practice pairs
    (by default the practice note above the main text).

    Examples
    --------
    >>> print(instruction_texts(Protocol())["main"])  # doctest: +NORMALIZE_WHITESPACE
    Now rate each pair yourself: how well does the image match the sketch?
    <BLANKLINE>
    Press a number key from 1 (best match) to 7 (worst match) while the pair is shown or
    during the black screen after it. You may change your rating until the next pair appears.
    Each pair is shown for 2 seconds, then the screen is black for 1 second.
    <BLANKLINE>
    Press P to pause at any time. Press Esc to end the session. Press space to begin.
    """
    response, timing, pauses = protocol.response, protocol.timing, protocol.pauses
    low, best_low = _scale(protocol)
    written = write_instructions(
        keys=response.keys,
        low=low,
        best_low=best_low,
        stimulus_s=timing.stimulus_s,
        blank_s=timing.blank_s,
        anchor_demo_s=timing.anchor_demo_s,
        break_every=pauses.break_every,
        pause_key=response.pause_key if pauses.allowed else None,
        quit_key=response.quit_key,
    )
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
    """The line under each rated pair ([display] scale_reminder), from ``[texts] scale_reminder``.

    Examples
    --------
    >>> scale_reminder(Protocol())
    '1 = best match ... 7 = worst match'
    """
    keys = protocol.response.keys
    low, best_low = _scale(protocol)
    high = low + len(keys) - 1
    best, worst = (0, -1) if best_low else (-1, 0)
    return fill(
        protocol.texts.scale_reminder,
        best_key=key_label(keys[best]),
        worst_key=key_label(keys[worst]),
        best_rating=low if best_low else high,
        worst_rating=high if best_low else low,
    )


class Screen(NamedTuple):
    """One screen a participant may see: when it comes, and its text."""

    when: str
    text: str


def screens(protocol: Protocol, where: Literal["lab", "online"]) -> list[Screen]:
    """Every screen's text of the ``"lab"`` or the ``"online"`` session, in the order met.

    Screens that the protocol's settings never show (the details form without
    details, the anchoring instructions without anchoring, the pause screen
    without pauses or breaks) are left out; a placeholder known only when the
    screen is shown gets an example value. Buttons are in brackets.
    """
    texts, online = protocol.texts, protocol.online
    instructions = instruction_texts(protocol)
    lab = where == "lab"
    shown: list[Screen] = []

    def add(when: str, text: str) -> None:
        shown.append(Screen(when, text))

    if lab:
        questions = {
            "age": texts.age_question,
            "sex": texts.sex_question,
            "handedness": texts.handedness_question,
        }
        for name in protocol.participants.details:
            add(f"details: {name}", questions[name])
            if name == "age":
                add(
                    "details: an age out of range, under the question",
                    fill(texts.age_retry, low=AGE_RANGE[0], high=AGE_RANGE[1]),
                )
    else:
        add("the page's title", f"{texts.page_title} (language: {texts.language})")
        add("a browser without JavaScript", texts.needs_javascript)
        add(
            "an id in the page's address that cannot be used",
            fill(texts.bad_participant_id, max_length=MAX_SOURCE_ID_LENGTH),
        )
        add(
            "consent",
            f"{texts.consent_title}\n\n{online.consent}\n\n[{texts.agree}] [{texts.disagree}]",
        )
        add("after not agreeing", texts.declined)
        _ending(add, texts, online.no_consent_code, online.no_consent_url, "after not agreeing")
        if online.details:
            add(
                "details",
                "\n".join(
                    [
                        texts.details_title,
                        texts.details_note,
                        f"{texts.age}: ___",
                        f"{texts.sex}: {texts.prefer_not_to_say} | {texts.female} | {texts.male} | "
                        f"{texts.other}",
                        f"{texts.handedness}: {texts.prefer_not_to_say} | {texts.right} | "
                        f"{texts.left} | {texts.ambidextrous}",
                        f"[{texts.continue_button}]",
                    ]
                ),
            )
        add("full screen", f"{texts.fullscreen}\n\n[{texts.fullscreen_button}]")
        add(
            "a window too small",
            fill(texts.window_too_small, min_width=1040, min_height=640, width=800, height=600)
            + f"\n\n[{texts.cannot_enlarge}]",
        )
        add("on a phone or tablet", texts.needs_keyboard)
        add("a window that could not be enlarged", texts.screen_too_small)
        add("while the pictures load", texts.loading)
        add("a picture that could not be loaded", texts.loading_failed)
    reminder = lab and protocol.display.scale_reminder
    if lab and protocol.practice.pairs:
        add("before the practice pairs", instructions["practice"])
        if reminder:
            add("under each practice pair", scale_reminder(protocol))
    if protocol.anchoring.enabled:
        add("before the anchoring phase", instructions["anchoring"])
        add("under each anchor pair", fill(texts.anchor_label, rating=_scale(protocol)[0]))
    add("before the main block", instructions["main"])
    if reminder:
        add("under each pair of the main block", scale_reminder(protocol))
    if not lab:
        add("above the instructions, when a reloaded page resumes the session", texts.welcome_back)
    if protocol.pauses.allowed or protocol.pauses.break_every:
        add("a pause or a break", instructions["pause"])
    add("after the quit key", texts.quit_question)
    if not lab:
        add("after choosing to end", texts.quit_ended)
        _ending(add, texts, online.quit_code, online.quit_url, "after choosing to end")
        add("after the last pair", texts.saving)
    add("the end", instructions["end"])
    if not lab:
        _ending(add, texts, online.completion_code, online.completion_url, "the end")
        add("coming back to a session that has ended", texts.session_ended)
        add("coming back after the dropout time (timed out)", texts.timed_out_ended)
        _ending(add, texts, online.timed_out_code, online.timed_out_url, "timed out")
        add("a session the server refused without a reason", texts.could_not_start)
        add("an id whose session began in another browser", texts.already_started)
        add("a study that takes no more participants", texts.study_full)
        add("after an error", fill(texts.went_wrong, error="(what went wrong)"))
        add(
            "after an error, when the server refused trials",
            fill(texts.trials_not_stored, trials="4, 7"),
        )
        add(
            "when the page cannot load the study's settings",
            fill(texts.went_wrong, error=texts.settings_failed),
        )
    return shown


def _ending(add, texts: Texts, code: str, url: str, where: str) -> None:
    """The code and the address of an online ending ([online]), under its text."""
    if code:
        add(f"{where}, under its text", fill(texts.completion_code, code=code))
    if url:
        add(f"{where}, under its text", f"{texts.completion_redirect} [{texts.completion_link}]")
