"""Study protocols: one typed object, loaded from TOML and checked once at load.

A protocol file has top-level keys (``name``, ``task``, ``description``) and
one table per topic: ``[timing]``, ``[response]``, ``[anchoring]``,
``[pauses]``, ``[display]``, ``[participants]``, ``[dataset]``,
``[instructions]`` and ``[online]`` (the browser session of ``sbir-study
serve``). Every setting is documented in ``protocols/README.md``; a setting
left out takes the default of the paper's replication (Eitz et al. 2011, Sec.
2.3). The session loop reads only the :class:`Protocol` object, never the TOML
dictionary.

Problems are :class:`~sbir_study.foundation.checks.InputError` naming the file and the
key: an unknown key (with the closest valid one), a wrong type, a duration
that is not a finite number in :data:`DURATION_RANGE_S`, a key name the
keyboard backend cannot report (with the closest one it can), a key given
two jobs, an invalid choice.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path

from sbir_study.foundation import paper
from sbir_study.foundation.checks import InputError

from .participants import DETAILS
from .responses import rating_key_map

__all__ = [
    "CONTINUE_KEY",
    "DURATION_RANGE_S",
    "Anchoring",
    "Dataset",
    "Display",
    "Instructions",
    "Online",
    "Participants",
    "Pauses",
    "Protocol",
    "Response",
    "Timing",
    "backend_key_names",
    "load_protocol",
    "protocol_dict",
]

#: Durations a protocol may set (seconds): from 3 frames at 60 Hz to a minute.
DURATION_RANGE_S = (0.05, 60.0)
#: The key that ends every instruction, pause and end screen.
CONTINUE_KEY = "space"


@dataclass(frozen=True)
class Timing:
    #: Seconds the sketch/image pair is shown.
    stimulus_s: float = paper.STIMULUS_S
    #: Seconds of black screen after it; the rating can be given or changed until it ends.
    blank_s: float = paper.BLANK_S
    #: Seconds an anchor pair is shown in the anchoring phase, with its prescribed rating.
    anchor_demo_s: float = paper.STIMULUS_S + paper.BLANK_S
    #: Count frames only if the measured frame period varies by less than this (ms, sd).
    frame_jitter_ms: float = 1.0
    #: ... and the measured refresh rate is within this range (Hz); else time by the clock.
    refresh_range_hz: tuple[float, float] = (50.0, 250.0)


@dataclass(frozen=True)
class Response:
    #: One key per scale point, best first: ``keys[0]`` means rating 1.
    keys: tuple[str, ...] = ("1", "2", "3", "4", "5", "6", "7")
    #: Also accept the numeric keypad for the same ratings.
    keypad: bool = True
    #: Key that asks for a pause (taken after the current response window closes).
    pause_key: str = "p"
    #: Key that asks to end the session (with a confirmation).
    quit_key: str = "escape"


@dataclass(frozen=True)
class Anchoring:
    #: Show the anchor pairs with their prescribed ratings before the main block.
    enabled: bool = True
    #: Put every anchor pair again at a random place in the later part of the main block.
    repeat: bool = True
    #: The repeats go after this fraction of the main block ("the later part").
    repeat_from: float = 0.5


@dataclass(frozen=True)
class Pauses:
    #: Whether the participant may pause at any time with the pause key.
    allowed: bool = True
    #: A scheduled break after every this many main-block trials; 0 for none.
    break_every: int = 0


@dataclass(frozen=True)
class Display:
    #: Full screen (a lab session) or a window (``run --windowed`` overrides to a window).
    fullscreen: bool = True
    #: Screen resolution in pixels, as the monitor reports it.
    resolution: tuple[int, int] = (1920, 1200)
    #: Visible width of the screen (cm); a 24-inch 16:10 LCD is 51.8 cm wide.
    width_cm: float = 51.8
    #: Eye-to-screen distance (cm); the paper: 80 cm.
    distance_cm: float = 80.0
    #: Width of the sketch and of the image, each, in degrees of visual angle.
    stimulus_deg: float = 12.0
    #: Gap between the sketch and the image (degrees of visual angle).
    gap_deg: float = 1.0
    #: Background during the stimulus, as PsychoPy RGB (-1..1); the blank is always black.
    background: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Participants:
    #: Details asked before the instructions (or given on the command line) and written to
    #: participants.tsv: any of "age", "sex", "handedness". The paper reports age and sex.
    details: tuple[str, ...] = ("age", "sex")


@dataclass(frozen=True)
class Dataset:
    #: The dataset's name in dataset_description.json (written by the first session).
    name: str = "Sketch/image similarity ratings (replication of Eitz et al. 2011)"
    #: The people who made the dataset, for dataset_description.json.
    authors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Instructions:
    anchoring: str = (
        "You will first see example pairs of a sketch and an image, each with the rating "
        "it deserves, from 1 (best match) to 7 (worst match).\n\nPress space to begin."
    )
    main: str = (
        "Now rate each pair yourself: how well does the image match the sketch?\n\n"
        "Press a number key from 1 (best match) to 7 (worst match) while the pair is shown "
        "or during the black screen after it. You may change your rating until the next "
        "pair appears.\n\nPress P to pause at any time. Press space to begin."
    )
    pause: str = "Paused. Press space to continue."
    end: str = "Thank you! The session is complete.\n\nPress space to close."


#: How an online participant's share of the main pairs is chosen (``Online.subset``).
ONLINE_SUBSETS = ("all", "sketches", "pairs")


@dataclass(frozen=True)
class Online:
    """The browser session (``sbir-study serve``); the lab session ignores this table."""

    #: ``all``: every participant rates every main pair; ``sketches``: the sketches are split
    #: into ``lists`` groups and a participant rates the pairs of one group; ``pairs``: each
    #: sketch's images are dealt over ``lists`` lists and a participant rates one list.
    subset: str = "all"
    #: How many lists the main pairs are split into; each participant gets the list with the
    #: fewest raters, so every pair gets the same number of raters.
    lists: int = 1
    #: Seed of the split into lists (fixed, so that every server process deals the same lists).
    list_seed: int = 0
    #: Width of the sketch and of the image, each, in CSS pixels; 0 derives it from
    #: ``[display]`` (``stimulus_deg`` at ``distance_cm`` on that screen).
    stimulus_px: int = 0
    #: The consent text shown before anything is recorded (HTML paragraphs allowed).
    consent: str = (
        "You are invited to rate how well images match sketches. The session takes the "
        "time stated in the study description. Your ratings, response times and the "
        "details you give next are stored under a participant label without your name. "
        "You may stop at any time with Escape."
    )
    #: Ask the participant details (age, sex, handedness), as the lab session does.
    details: bool = True
    #: Completion code shown at the end of a complete session ("" for none).
    completion_code: str = ""
    #: Address the browser goes to at the end of a complete session ("" to stay on the page).
    completion_url: str = ""
    #: Seconds without contact after which a running session counts as dropped out and its
    #: list goes to the next participant.
    dropout_after_s: float = 1800.0
    #: Complete sessions per list at which the study takes no more participants (0: no limit).
    raters_per_list: int = 0


@dataclass(frozen=True)
class Protocol:
    #: Short name of the protocol (recorded with every session).
    name: str = "eitz2011"
    #: BIDS task label (letters and digits).
    task: str = "sbirrating"
    description: str = ""
    #: Roles of the stimulus set's pairs that make the main block (``candidate`` for a pilot).
    main_roles: tuple[str, ...] = ("main",)
    timing: Timing = field(default_factory=Timing)
    response: Response = field(default_factory=Response)
    anchoring: Anchoring = field(default_factory=Anchoring)
    pauses: Pauses = field(default_factory=Pauses)
    display: Display = field(default_factory=Display)
    participants: Participants = field(default_factory=Participants)
    dataset: Dataset = field(default_factory=Dataset)
    instructions: Instructions = field(default_factory=Instructions)
    online: Online = field(default_factory=Online)

    @property
    def scale(self) -> tuple[int, int]:
        """The rating scale: 1 .. the number of response keys."""
        return 1, len(self.response.keys)

    @property
    def key_map(self) -> dict[str, int]:
        """Rating key name -> rating, the keypad's digits included when ``keypad`` is on."""
        return rating_key_map(self.response.keys, keypad=self.response.keypad)


def load_protocol(path: str | Path) -> Protocol:
    """Read and check a protocol file.

    Raises :class:`~sbir_study.foundation.checks.InputError` naming the file and key.
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; expected a protocol (.toml)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    protocol = _build(Protocol, raw, path, prefix="")
    _check(protocol, path)
    return protocol


def protocol_dict(protocol: Protocol) -> dict:
    """The protocol as plain data (for the session's sidecar)."""
    return dataclasses.asdict(protocol)


def _build(cls: type, raw: dict, path: Path, prefix: str):
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in raw.items():
        where = f"{prefix}{key}"
        if key not in names:
            message = f"{path}: unknown key {where!r}"
            close = difflib.get_close_matches(key, names, n=1)
            if close:
                message += f" (did you mean {prefix + close[0]!r}?)"
            else:
                message += f"; expected one of {', '.join(prefix + n for n in names)}"
            raise InputError(message)
        values[key] = _convert(hints[key], value, path, where)
    return cls(**values)


def _convert(hint, value, path: Path, where: str):
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise InputError(f"{path}: {where}: expected a table [{where}], got {value!r}")
        return _build(hint, value, path, prefix=f"{where}.")
    origin = typing.get_origin(hint)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list):
            raise InputError(f"{path}: {where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, path, where) for v in value)
        if len(value) != len(args):
            raise InputError(f"{path}: {where}: expected a list of {len(args)}, got {value!r}")
        return tuple(_convert(a, v, path, where) for a, v in zip(args, value, strict=True))
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{path}: {where}: expected a number, got {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{path}: {where}: expected a whole number, got {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise InputError(f"{path}: {where}: expected true or false, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise InputError(f"{path}: {where}: expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported setting type {hint}")


def backend_key_names() -> frozenset[str]:
    """The key names PsychoPy's Psychtoolbox keyboard backend reports on this platform.

    PsychoPy maps the backend's key codes to names with one table per
    platform (``psychopy.hardware.keyboard.keyNames``); a key that is not in
    it can never be reported, so a protocol naming it could never be answered.
    """
    from psychopy.hardware import keyboard

    return frozenset(keyboard.keyNames.values())


def _check(protocol: Protocol, path: Path) -> None:
    def fail(key: str, expected: str, value) -> None:
        raise InputError(f"{path}: {key}: expected {expected}, got {value!r}")

    def bounded(key: str, value: float, low: float, high: float, *, low_open=False) -> None:
        above = value > low if low_open else value >= low
        if not (math.isfinite(value) and above and value <= high):
            left = "(" if low_open else "["
            fail(key, f"a finite number in {left}{low:g}, {high:g}]", value)

    timing = protocol.timing
    low, high = DURATION_RANGE_S
    for key in ("stimulus_s", "blank_s", "anchor_demo_s"):
        value = getattr(timing, key)
        if not (math.isfinite(value) and low <= value <= high):
            fail(f"timing.{key}", f"a duration from {low:g} s to {high:g} s", value)
    bounded("timing.frame_jitter_ms", timing.frame_jitter_ms, 0.0, 100.0)
    low, high = timing.refresh_range_hz
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low < high <= 1000):
        fail("timing.refresh_range_hz", "[low, high] with 0 < low < high <= 1000 Hz", [low, high])
    _check_keys(protocol, path)
    if not 0.0 <= protocol.anchoring.repeat_from < 1.0:
        fail("anchoring.repeat_from", "a fraction in [0, 1)", protocol.anchoring.repeat_from)
    if protocol.pauses.break_every < 0:
        fail(
            "pauses.break_every", "0 (no breaks) or a number of trials", protocol.pauses.break_every
        )
    display = protocol.display
    if not all(1 <= n <= 32768 for n in display.resolution):
        fail("display.resolution", "[width, height] in pixels (1 to 32768)",
             list(display.resolution))  # fmt: skip
    bounded("display.width_cm", display.width_cm, 0.0, 1000.0, low_open=True)
    bounded("display.distance_cm", display.distance_cm, 0.0, 10000.0, low_open=True)
    bounded("display.stimulus_deg", display.stimulus_deg, 0.0, 90.0, low_open=True)
    bounded("display.gap_deg", display.gap_deg, 0.0, 90.0)
    if not all(-1.0 <= c <= 1.0 for c in display.background):
        fail("display.background", "three numbers in -1..1 (PsychoPy RGB)", display.background)
    if not protocol.task.isalnum() or not protocol.task.isascii():
        fail("task", "a BIDS label of letters and digits", protocol.task)
    _check_online(protocol.online, fail)
    roles = ("main", "candidate")
    if not protocol.main_roles or any(r not in roles for r in protocol.main_roles):
        fail("main_roles", f"a list of {' and/or '.join(roles)}", list(protocol.main_roles))
    details = protocol.participants.details
    for name in details:
        if name not in DETAILS:
            close = difflib.get_close_matches(name, list(DETAILS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            fail("participants.details", f"a list of {', '.join(DETAILS)}{hint}", list(details))
    if len(set(details)) != len(details):
        fail("participants.details", "each detail once", list(details))
    if not protocol.dataset.name.strip():
        fail("dataset.name", "a name for dataset_description.json", protocol.dataset.name)
    if any(not a.strip() for a in protocol.dataset.authors):
        fail("dataset.authors", "a list of names", list(protocol.dataset.authors))


def _check_keys(protocol: Protocol, path: Path) -> None:
    """Every key a name the backend reports, and no key with two jobs."""
    response = protocol.response
    keys = response.keys
    if not 2 <= len(keys) <= 9:
        raise InputError(f"{path}: response.keys: expected 2 to 9 keys, one per scale point, "
                         f"got {list(keys)!r}")  # fmt: skip
    known = backend_key_names()
    named = [(f"response.keys[{k}]", name) for k, name in enumerate(keys)]
    named += [("response.pause_key", response.pause_key), ("response.quit_key", response.quit_key)]
    for where, name in named:
        if name not in known:
            close = _closest_key(name, known)
            hint = f"; did you mean {close!r}?" if close else ""
            raise InputError(
                f"{path}: {where}: {name!r} is not a key name the keyboard backend reports{hint} "
                "(protocols/README.md lists them)"
            )
    repeated = sorted({name for name in keys if keys.count(name) > 1})
    if repeated:
        raise InputError(f"{path}: response.keys: expected distinct keys (one per scale point), "
                         f"got {repeated[0]!r} twice")  # fmt: skip
    # Each key has one job; the keypad's digits rate like the top row's when keypad is on.
    jobs: dict[str, str] = {CONTINUE_KEY: "the continue key of every instruction screen"}
    for name, rating in protocol.key_map.items():
        _claim(jobs, name, f"rating {rating}", "response.keys", path)
    _claim(jobs, response.pause_key, "the pause key", "response.pause_key", path)
    _claim(jobs, response.quit_key, "the quit key", "response.quit_key", path)


def _closest_key(name: str, known: frozenset[str]) -> str | None:
    """The backend's name for a key spelled another common way, or the most similar name."""
    spelled = name.strip().lower()
    for prefix in ("numpad_", "numpad", "keypad_", "keypad", "kp_", "kp"):
        if spelled.startswith(prefix) and len(spelled) > len(prefix):
            spelled = "num_" + spelled[len(prefix) :]
            break
    spelled = {"esc": "escape", "enter": "return", "spacebar": "space"}.get(spelled, spelled)
    if spelled in known:
        return spelled
    close = difflib.get_close_matches(spelled, sorted(known), n=1)
    return close[0] if close else None


def _claim(jobs: dict[str, str], name: str, job: str, where: str, path: Path) -> None:
    if name in jobs:
        raise InputError(
            f"{path}: {where}: {name!r} is already {jobs[name]}; expected each key to have one job"
        )
    jobs[name] = job


def _check_online(online: Online, fail) -> None:
    if online.subset not in ONLINE_SUBSETS:
        fail("online.subset", f"one of {', '.join(ONLINE_SUBSETS)}", online.subset)
    if online.lists < 1:
        fail("online.lists", "a whole number >= 1", online.lists)
    if online.subset == "all" and online.lists != 1:
        fail("online.lists", "1 with subset = \"all\" (or subset \"sketches\" or \"pairs\")",
             online.lists)  # fmt: skip
    if online.list_seed < 0:
        fail("online.list_seed", "a whole number >= 0", online.list_seed)
    if online.stimulus_px < 0 or online.stimulus_px > 4096:
        fail("online.stimulus_px", "0 (from [display]) or a width of 1..4096 CSS pixels",
             online.stimulus_px)  # fmt: skip
    code = online.completion_code
    if len(code) > 64 or not all(c.isascii() and (c.isalnum() or c in "-_") for c in code):
        fail("online.completion_code", "up to 64 letters, digits, '-' or '_'", code)
    url = online.completion_url
    if url and not (url.startswith(("https://", "http://")) and " " not in url):
        fail("online.completion_url", 'an http(s):// address without spaces, or ""', url)
    if not online.dropout_after_s > 0:
        fail("online.dropout_after_s", "a number of seconds above 0", online.dropout_after_s)
    if online.raters_per_list < 0:
        fail("online.raters_per_list", "0 (no limit) or a whole number", online.raters_per_list)
