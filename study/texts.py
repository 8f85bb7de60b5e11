"""Every word a participant reads: the protocol's ``[texts]`` and ``[instructions]``.

:class:`Texts` holds the English defaults of every participant-facing string, lab and
online; a protocol sets any of them in ``[texts]``, in any language
(``protocols/example_de.toml``). The instruction texts a protocol leaves out are written
from its settings (:func:`write_instructions`). A text's placeholders, ``{name}``, are
fixed per text (:data:`PLACEHOLDERS`) and checked at load; ``{{`` and ``}}`` are a literal
brace.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Mapping, Sequence
from typing import Annotated, TypeVar

from pydantic import AfterValidator, Field, StrictStr, model_validator
from pydantic.dataclasses import dataclass

from .protocol_errors import refusal
from .protocol_settings import CONTINUE_KEY, TABLE, Pauses, Response, Timing

__all__ = [
    "ANSWER_KEYS",
    "PLACEHOLDERS",
    "PRACTICE_NOTE",
    "Texts",
    "answer_keys",
    "fill",
    "key_label",
    "rating_keys_unnamed",
    "write_instructions",
]

_Answer = TypeVar("_Answer")

#: The placeholders each text may use; every other text uses none.
PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "anchor_label": ("rating",),
    "scale_reminder": ("best_key", "worst_key", "best_rating", "worst_rating"),
    "age_retry": ("low", "high"),
    "window_too_small": ("min_width", "min_height", "width", "height"),
    "completion_code": ("code",),
    "went_wrong": ("error",),
    "trials_not_stored": ("trials",),
    "bad_participant_id": ("max_length",),
}

#: The answer keys of each question, by their [texts] setting: a key answers one question once
#: (the "prefer not to say" key is shared by the two details questions).
ANSWER_KEYS: dict[str, tuple[str, ...]] = {
    "quit_question": ("yes_key", "no_key"),
    "sex_question": ("female_key", "male_key", "other_key", "not_say_key"),
    "handedness_question": ("right_key", "left_key", "ambidextrous_key", "not_say_key"),
}


def _one_key(name: str) -> str:
    if re.fullmatch(r"[a-z0-9]", name) is None:
        raise refusal(f"expected a key name: one lowercase letter or digit, got {name!r}")
    return name


# Answer keys are keys every keyboard backend and browser names alike: a letter or a digit.
_ANSWER_KEY = Annotated[StrictStr, AfterValidator(_one_key)]


#: Before the practice pairs, above the main instructions, where a protocol gives no text of its
#: own for them ([instructions] practice).
PRACTICE_NOTE = (
    "First a few practice pairs, to get to know the keys and the timing; your ratings of them "
    "do not count."
)


def _fields_used(text: str) -> list[str]:
    """The placeholder names of ``text``; ValueError for a stray brace or a format spec."""
    names = []
    for _, name, spec, conversion in string.Formatter().parse(text):
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise ValueError(f"{{{name}...}}")
        names.append(name)
    return names


def fill(text: str, **values: object) -> str:
    """``text`` with its placeholders filled, ``{{`` and ``}}`` as single braces.

    >>> fill("Rating: {rating}", rating=3), fill("a {{brace}}")
    ('Rating: 3', 'a {brace}')
    """
    return text.format(**values)


@dataclass(frozen=True, config=TABLE)
class Texts:
    """``[texts]``: every other word a participant reads, lab and online (English defaults)."""

    # --- lab and online ---
    quit_question: StrictStr = (
        "End the session now? Everything so far is saved.\n\nY = end, N = go on"
    )
    """Lab and online: asked when the quit key is pressed; its answer keys are yes_key and no_key,
    which the text should name."""
    yes_key: _ANSWER_KEY = "y"
    """Lab and online: the key that answers quit_question with yes (the session ends); a lowercase
    letter or digit."""
    no_key: _ANSWER_KEY = "n"
    """Lab and online: the key that answers quit_question with no (the session goes on); a lowercase
    letter or digit."""
    anchor_label: StrictStr = "Rating: {rating}"
    """Lab and online: under an anchor pair in the anchoring phase; {rating} is its prescribed
    rating."""
    scale_reminder: StrictStr = "{best_key} = best match ... {worst_key} = worst match"
    """Lab: under each rated pair when [display] scale_reminder is on; {best_key} and {worst_key}
    are the keys of the best and the worst match as printed on them, {best_rating} and
    {worst_rating} their ratings."""
    # --- lab: the details form ---
    age_question: StrictStr = (
        "How old are you (in years)?\n\nType the number and press Enter.\n"
        "Press Enter alone if you prefer not to say."
    )
    """Lab: the age question of the details form (digits, then Enter)."""
    age_retry: StrictStr = "Please type a number from {low} to {high}."
    """Lab: under the age question after an age outside {low}..{high}."""
    sex_question: StrictStr = (
        "Your sex?\n\nF = female    M = male    O = other\n\nN = prefer not to say"
    )
    """Lab: the sex question; its answer keys are female_key, male_key, other_key and not_say_key,
    which the text should name."""
    female_key: _ANSWER_KEY = "f"
    """Lab: the key that answers sex_question with female (recorded F)."""
    male_key: _ANSWER_KEY = "m"
    """Lab: the key that answers sex_question with male (recorded M)."""
    other_key: _ANSWER_KEY = "o"
    """Lab: the key that answers sex_question with other (recorded O)."""
    handedness_question: StrictStr = (
        "Which hand do you write with?\n\nR = right    L = left    A = both equally\n\n"
        "N = prefer not to say"
    )
    """Lab: the handedness question; its answer keys are right_key, left_key, ambidextrous_key and
    not_say_key, which the text should name."""
    right_key: _ANSWER_KEY = "r"
    """Lab: the key that answers handedness_question with right (recorded R)."""
    left_key: _ANSWER_KEY = "l"
    """Lab: the key that answers handedness_question with left (recorded L)."""
    ambidextrous_key: _ANSWER_KEY = "a"
    """Lab: the key that answers handedness_question with both equally (recorded A)."""
    not_say_key: _ANSWER_KEY = "n"
    """Lab: the key that answers sex_question or handedness_question with prefer not to say
    (recorded n/a)."""
    # --- online: the page ---
    language: Annotated[StrictStr, Field(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")] = "en"
    """Online: the page's language (a BCP 47 tag such as en, de, pt-BR), for the browser's fonts,
    hyphenation and screen readers."""
    page_title: StrictStr = "Rating study"
    """Online: the page's title."""
    consent_title: StrictStr = "Consent"
    """Online: the heading above the consent text."""
    agree: StrictStr = "I agree"
    """Online: the consent's button to take part."""
    disagree: StrictStr = "I do not agree"
    """Online: the consent's button to leave."""
    declined: StrictStr = "You did not consent, so nothing was recorded. You may close this page."
    """Online: shown after the participant did not agree."""
    details_title: StrictStr = "About you"
    """Online: the details form's heading."""
    details_note: StrictStr = "Each answer is optional."
    """Online: under the details form's heading."""
    age: StrictStr = "Age (years)"
    """Online: the age field's label."""
    sex: StrictStr = "Sex"
    """Online: the sex field's label."""
    female: StrictStr = "female"
    """Online: a choice of the sex field."""
    male: StrictStr = "male"
    """Online: a choice of the sex field."""
    other: StrictStr = "other"
    """Online: a choice of the sex field."""
    handedness: StrictStr = "Handedness"
    """Online: the handedness field's label."""
    right: StrictStr = "right"
    """Online: a choice of the handedness field."""
    left: StrictStr = "left"
    """Online: a choice of the handedness field."""
    ambidextrous: StrictStr = "ambidextrous"
    """Online: a choice of the handedness field."""
    prefer_not_to_say: StrictStr = "prefer not to say"
    """Online: the first choice of the sex and handedness fields."""
    continue_button: StrictStr = "Continue"
    """Online: the details form's button."""
    fullscreen: StrictStr = (
        "The study runs in full screen. Please close other programs and keep this window "
        "in front until the end."
    )
    """Online: shown before the page goes full screen."""
    fullscreen_button: StrictStr = "Continue in full screen"
    """Online: the button that goes full screen."""
    window_too_small: StrictStr = (
        "Your browser window is too small to show the pictures at their size. Please "
        "enlarge it (or zoom out with Ctrl and minus) to at least {min_width} x {min_height} "
        "pixels.\n\n"
        "It is now {width} x {height} pixels."
    )
    """Online: while the window is smaller than the pictures need; the four numbers follow the
    window as it is resized."""
    cannot_enlarge: StrictStr = "I cannot make it larger"
    """Online: the button under window_too_small that gives up."""
    needs_keyboard: StrictStr = (
        "This study needs a computer with a keyboard; it cannot run on a phone or tablet."
    )
    """Online: shown instead of the study on a phone or tablet."""
    screen_too_small: StrictStr = (
        "This study needs a larger browser window; it cannot run on this screen. Nothing "
        "was recorded."
    )
    """Online: shown when the window could not be made large enough."""
    loading: StrictStr = "Loading the pictures ..."
    """Online: while the pictures load."""
    loading_failed: StrictStr = (
        "The pictures could not be loaded. Please check your connection and reload this page."
    )
    """Online: when a picture could not be loaded."""
    welcome_back: StrictStr = "Welcome back: the session continues where it stopped."
    """Online: above the instructions when a reloaded page resumes the session."""
    saving: StrictStr = "Saving your answers ..."
    """Online: after the last trial, until every answer is stored."""
    completion_code: StrictStr = "Your completion code: {code}"
    """Online: under the end text of a complete session with a completion code."""
    completion_redirect: StrictStr = "You will be taken back in a moment."
    """Online: under the end text when a completion address follows."""
    completion_link: StrictStr = "Continue here"
    """Online: the link to the completion address."""
    complete_ended: StrictStr = "Thank you! The session is complete."
    """Online: at the end of a complete session (the lab window shows [instructions] end, which
    waits for the space bar)."""
    close_window: StrictStr = "You may close this window now."
    """Online: last on the page of a complete session that sends the participant to no completion
    address."""
    quit_ended: StrictStr = "The session has ended. Everything so far is saved. Thank you."
    """Online: after the participant chose to end the session."""
    session_ended: StrictStr = "This session has ended. Thank you."
    """Online: when a participant comes back to a session that has ended."""
    timed_out_ended: StrictStr = (
        "This session was stopped because nothing was heard from it for too long. "
        "Everything you answered before is saved. Thank you."
    )
    """Online: when a page comes back after [online] dropout_after_s without contact (the session
    timed out)."""
    could_not_start: StrictStr = "The session could not start."
    """Online: when the server refused the session without saying why."""
    went_wrong: StrictStr = (
        "Something went wrong: {error}\n\nPlease reload this page; the session continues "
        "where it stopped."
    )
    """Online: after an error; {error} is what went wrong."""
    trials_not_stored: StrictStr = (
        "These trials could not be stored: {trials}. The researcher has been told."
    )
    """Online: under went_wrong when the server refused trials of the session (the status page
    counts each, with its reason); {trials} are their numbers."""

    bad_participant_id: StrictStr = (
        "The participant id in this page's address cannot be used (it must be 1 to "
        "{max_length} characters, letters, digits or punctuation). Please open the study again "
        "from the link you were given, or contact the researcher."
    )
    """Online: the server's answer on the first screen when the id in the page's address is no id
    (empty, too long, control characters); {max_length} is the longest id taken."""
    already_started: StrictStr = (
        "This participant id has already started this study in another browser; the "
        "session continues only in the browser that started it. Please go back to it, or contact "
        "the researcher."
    )
    """Online: the server's answer when the id has a session begun in another browser."""
    study_full: StrictStr = (
        "The study is full: every list has its participants. Thank you for your interest."
    )
    """Online: the server's answer when the study takes no more participants ([online]
    raters_per_list, max_sessions)."""
    too_many_starts: StrictStr = (
        "Too many sessions were started from this address just now. Please wait a minute and "
        "open the study again."
    )
    """Online: the server's answer when one address starts more sessions than [online]
    starts_per_minute allows."""
    not_this_study: StrictStr = (
        "This page's address does not come from this study's listing on the platform. Please "
        "open the study again from the link you were given, or contact the researcher."
    )
    """Online: the server's answer when the platform's id or study id in the page's address is not
    this study's ([online] platform)."""
    settings_failed: StrictStr = "the study's settings could not be loaded"
    """Online: what went wrong ({error} of went_wrong) when the page could not load the study's
    settings."""
    needs_javascript: StrictStr = "This study needs JavaScript."
    """Online: shown instead of the page in a browser that runs no JavaScript."""

    @model_validator(mode="after")
    def _answer_keys_distinct(self) -> Texts:
        for question, fields in ANSWER_KEYS.items():
            taken: dict[str, str] = {}
            for field in fields:
                key = getattr(self, field)
                other = taken.setdefault(key, field)
                if other != field:
                    raise refusal(
                        f"{key!r} is already {other}; expected each answer of {question} its "
                        "own key",
                        field=field,
                    )
        return self

    @model_validator(mode="after")
    def _placeholders_known(self) -> Texts:
        for name in (field.name for field in dataclasses.fields(self)):
            allowed = PLACEHOLDERS.get(name, ())
            text = getattr(self, name)
            try:
                used = _fields_used(text)
            except ValueError:
                used = None
            if used is None or not set(used) <= set(allowed):
                takes = ", ".join(f"{{{a}}}" for a in allowed) if allowed else "no placeholder"
                raise refusal(
                    f"expected a text with {takes} ({{{{ and }}}} for a literal brace), got "
                    f"{text!r}",
                    field=name,
                )
        return self


def answer_keys(texts: Texts, question: str, answers: Mapping[str, _Answer]) -> dict[str, _Answer]:
    """Key name -> answer for ``question`` (of :data:`ANSWER_KEYS`), ``answers`` mapping each of
    its key settings to what that key answers.

    >>> answer_keys(Texts(yes_key="j"), "quit_question", {"yes_key": True, "no_key": False})
    {'j': True, 'n': False}
    """
    return {getattr(texts, field): answers[field] for field in ANSWER_KEYS[question]}


# --- keys as printed on the keyboard -------------------------------------------------------

_KEY_LABELS = {
    "space": "space",
    "escape": "Esc",
    "return": "Enter",
    "tab": "Tab",
    "backspace": "Backspace",
    "left": "the left arrow",
    "right": "the right arrow",
    "up": "the up arrow",
    "down": "the down arrow",
    "minus": "-",
    "equal": "=",
    "bracketleft": "[",
    "bracketright": "]",
    "backslash": "\\",
    "semicolon": ";",
    "apostrophe": "'",
    "quoteleft": "`",
    "comma": ",",
    "period": ".",
    "slash": "/",
    "less": "<",
}


def key_label(name: str) -> str:
    """A key name as printed on the key.

    >>> [key_label(k) for k in ("a", "7", "num_3", "escape", "comma", "f5")]
    ['A', '7', '3 on the keypad', 'Esc', ',', 'F5']
    """
    if name.startswith("num_"):
        rest = name.removeprefix("num_")
        return f"{key_label(rest) if rest.isdigit() else rest} on the keypad"
    if len(name) == 1:
        return name.upper()
    if re.fullmatch(r"f\d{1,2}", name):
        return name.upper()
    return _KEY_LABELS.get(name, name.replace("_", " "))


def _names_key(text: str, name: str) -> bool:
    """Whether ``text`` names the key by its name or label as a word; a letter by its capital only
    (the article "a" names no key).
    """
    if len(name) == 1 and name.isalpha():
        return re.search(rf"(?<!\w){re.escape(name.upper())}(?!\w)", text) is not None
    spellings = {name, key_label(name), name.removeprefix("num_")}
    return any(
        re.search(rf"(?<!\w){re.escape(spelling)}(?!\w)", text, flags=re.IGNORECASE)
        for spelling in spellings
    )


# --- the instruction texts written from the settings ----------------------------------------


def _seconds(value: float) -> str:
    return f"{value:g} second" + ("" if value == 1 else "s")


def write_instructions(response: Response, timing: Timing, pauses: Pauses) -> dict[str, str]:
    """The four instruction texts in English, written from a protocol's settings: the rating keys
    and which end is the best match, the timings, the breaks, the pause and quit keys.

    >>> texts = write_instructions(Response(keys=("a", "s", "d")), Timing(), Pauses(allowed=False))
    >>> print(texts["main"])  # doctest: +NORMALIZE_WHITESPACE
    Now rate each pair yourself: how well does the image match the sketch?
    <BLANKLINE>
    Press one of the keys A, S, D: A for the best match, D for the worst match, the keys
    between them for the ratings between, while the pair is shown or during the black screen
    after it. You may change your rating until the next pair appears. Each pair is shown for
    2 seconds, then the screen is black for 1 second.
    <BLANKLINE>
    Press Esc to end the session. Press space to begin.
    """
    keys, go_on = response.keys, key_label(CONTINUE_KEY)
    first, last = ("best", "worst") if response.best == "low" else ("worst", "best")
    ends = f"from 1 ({first} match) to {len(keys)} ({last} match)"
    if keys == tuple(str(r) for r in range(1, len(keys) + 1)):
        rating = f"Press a number key {ends}"
    else:
        labels = [key_label(k) for k in keys]
        between = "" if len(keys) == 2 else ", the keys between them for the ratings between"
        rating = (
            f"Press one of the keys {', '.join(labels)}: {labels[0]} for the {first} match, "
            f"{labels[-1]} for the {last} match{between},"
        )
    controls = []
    if pauses.break_every:
        controls.append(f"There is a break after every {pauses.break_every} pairs.")
    if pauses.allowed:
        controls.append(f"Press {key_label(response.pause_key)} to pause at any time.")
    controls.append(f"Press {key_label(response.quit_key)} to end the session.")
    controls.append(f"Press {go_on} to begin.")
    return {
        "anchoring": "You will first see example pairs of a sketch and an image, each with the "
        f"rating it deserves, {ends}. Each example is shown for "
        f"{_seconds(timing.anchor_demo_s)}.\n\nPress {go_on} to begin.",
        "main": "Now rate each pair yourself: how well does the image match the sketch?\n\n"
        f"{rating} while the pair is shown or during the black screen after it. You may change "
        "your rating until the next pair appears. Each pair is shown for "
        f"{_seconds(timing.stimulus_s)}, then the screen is black for {_seconds(timing.blank_s)}."
        "\n\n" + " ".join(controls),
        "pause": f"Paused. Press {go_on} to continue.",
        "end": f"Thank you! The session is complete.\n\nPress {go_on} to close.",
    }


def rating_keys_unnamed(main: str | None, keys: Sequence[str]) -> str | None:
    """A warning when a protocol's own main text names none of its rating keys (by label or
    name, a letter by its capital); None when it names one or is written (``main`` None).

    Examples
    --------
    >>> rating_keys_unnamed("Press a number key from 1 to 7.", ["a", "s", "d"])
    'instructions.main names none of the rating keys (A, S, D); a participant who presses other keys records nothing'
    """  # noqa: E501
    if main is None or any(_names_key(main, key) for key in keys):
        return None
    return (
        f"instructions.main names none of the rating keys ({', '.join(map(key_label, keys))}); "
        "a participant who presses other keys records nothing"
    )
