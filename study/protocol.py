"""Study protocols: one typed object, loaded from TOML and checked once at load.

A protocol file has top-level keys (``name``, ``task``, ``description``,
``main_roles``) and one table per topic: ``[timing]``, ``[response]``,
``[anchoring]``, ``[practice]``, ``[pauses]``, ``[display]``, ``[participants]``,
``[dataset]``, ``[instructions]``, ``[online]`` (the browser session of
``sbir-study serve``) and ``[texts]`` (every other word a participant reads,
:mod:`sbir_study.study.texts`). Each table is a frozen pydantic dataclass whose fields
say what every setting is, its default and its bounds; ``protocols/README.md``
documents the same settings for the people who write protocols. A setting left
out takes the default of the paper's replication (Eitz et al. 2011, Sec. 2.3).
The session loop reads only the :class:`Protocol` object, never the TOML
dictionary.

The tables are pydantic dataclasses rather than ``BaseModel`` subclasses so
that ``dataclasses.replace`` and ``dataclasses.asdict`` keep working for every
caller (``replace`` validates the changed protocol again). Every scalar setting
is strict (``StrictFloat``, ``StrictInt``, ``StrictBool``, ``StrictStr``): a
number is never read from a string nor a flag from a number. The tables
themselves are not in strict mode, because strict mode refuses the list a TOML
array gives for a tuple and the dictionary a TOML table gives for a dataclass.

Problems are :class:`~sbir_study.foundation.checks.InputError`, one line
naming the file and the setting (the first problem pydantic finds): an unknown
key (with the closest valid one), a wrong type, a value outside what the
setting takes (a duration that is not a finite number in
:data:`DURATION_RANGE_S`, for example), a key name the keyboard cannot report
(with the closest one it can), a key given two jobs.

Which key names a protocol may use depends on where it runs:

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

import dataclasses
import importlib.util
import tomllib
import typing
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError

from sbir_study.foundation import paper
from sbir_study.foundation.checks import ID_RULE, MAX_ID_LENGTH, InputError, closest, did_you_mean
from sbir_study.foundation.scale import Scale

from .participants import DETAILS
from .responses import rating_key_map
from .texts import Texts, rating_keys_unnamed

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
    "Practice",
    "Protocol",
    "Response",
    "Timing",
    "backend_key_names",
    "browser_key_names",
    "load_protocol",
    "protocol_dict",
]

#: Durations a protocol may set (seconds): from 3 frames at 60 Hz to a minute.
DURATION_RANGE_S = (0.05, 60.0)
#: The key that ends every instruction, pause and end screen.
CONTINUE_KEY = "space"


@dataclasses.dataclass(frozen=True)
class _Expects:
    """What a setting takes, as its refusal says it: ``<key>: expected <text>, got <value>``.

    Kept beside the bounds it describes (in the setting's ``Annotated`` type),
    in the words of the type column of ``protocols/README.md``.
    """

    text: str


# Unknown keys are refused; see the module docstring for why strictness is per setting.
_TABLE = ConfigDict(extra="forbid", strict=False)

Seconds = Annotated[
    StrictFloat,
    Field(ge=DURATION_RANGE_S[0], le=DURATION_RANGE_S[1]),
    _Expects("a duration from {:g} s to {:g} s".format(*DURATION_RANGE_S)),
]
Hertz = Annotated[StrictFloat, Field(gt=0.0, le=1000.0)]
Pixels = Annotated[StrictInt, Field(ge=1, le=32768)]
Colour = Annotated[StrictFloat, Field(ge=-1.0, le=1.0)]
KeyName = StrictStr
Role = Literal["main", "candidate"]
OnlineSubset = Literal["all", "sketches", "pairs"]

#: How an online participant's share of the main pairs is chosen (``Online.subset``).
ONLINE_SUBSETS: tuple[str, ...] = typing.get_args(OnlineSubset)


def _finite_in(low: float, high: float, *, above: bool = False) -> object:
    """A number setting from ``low`` (``above``: exclusive) to ``high``, its refusal naming
    the interval from the same bounds."""
    bound = Field(gt=low, le=high) if above else Field(ge=low, le=high)
    interval = f"{'(' if above else '['}{low:g}, {high:g}]"
    return Annotated[StrictFloat, bound, _Expects(f"a finite number in {interval}")]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank", "expected more than white space")
    return text


Name = Annotated[StrictStr, AfterValidator(_not_blank)]


def _refusal(message: str, *, field: str | None = None) -> PydanticCustomError:
    """A refusal worded in full (after ``<key>: ``); ``field`` names the setting when a
    table's own validator raises it, since pydantic then places it at the table."""
    context = {"message": message} | ({"field": field} if field else {})
    return PydanticCustomError("protocol_setting", "{message}", context)


@dataclass(frozen=True, config=_TABLE)
class Timing:
    """``[timing]``: how long each screen is shown, and when durations are counted in frames."""

    stimulus_s: Seconds = Field(
        paper.STIMULUS_S,
        description="Seconds the sketch/image pair is shown, from its actual onset.",
    )
    blank_s: Seconds = Field(
        paper.BLANK_S,
        description="Seconds of black screen after the pair; the rating can be given and "
        "changed from stimulus onset until the blank ends, not after.",
    )
    anchor_demo_s: Seconds = Field(
        paper.STIMULUS_S + paper.BLANK_S,
        description="Seconds each anchor pair is shown in the anchoring phase, with its "
        "prescribed rating (not rated).",
    )
    frame_jitter_ms: _finite_in(0.0, 100.0) = Field(
        1.0,
        description="Durations are counted in frames only when the measured frame period "
        "varies by less than this (standard deviation, ms) and the refresh rate lies in "
        "refresh_range_hz; otherwise they are timed by the clock.",
    )
    refresh_range_hz: Annotated[
        tuple[Hertz, Hertz], _Expects("[low, high] with 0 < low < high <= 1000 Hz")
    ] = Field(
        (50.0, 250.0),
        description="Durations are counted in frames only when the measured refresh rate lies "
        "in this range (Hz) and the frame period is steady (frame_jitter_ms); otherwise (a "
        "virtual display without vertical sync, for example) they are timed by the clock.",
    )

    @field_validator("refresh_range_hz")
    @classmethod
    def _low_below_high(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not value[0] < value[1]:
            raise PydanticCustomError("low_not_below_high", "expected low < high")
        return value


@dataclass(frozen=True, config=_TABLE)
class Response:
    """``[response]``: the rating keys, and the keys that pause and end the session."""

    keys: Annotated[
        tuple[KeyName, ...],
        Field(min_length=2, max_length=9),
        _Expects("2 to 9 keys, one per scale point"),
    ] = Field(
        ("1", "2", "3", "4", "5", "6", "7"),
        description="One key per scale point, in order: the first key means rating 1, the "
        "last rating k; the number of keys is the scale's length k (best says which end is "
        "the best match).",
    )
    best: Annotated[Literal["low", "high"], _Expects('"low" or "high"')] = Field(
        "low",
        description="Which end of the scale is the best match: low (rating 1, the first key; "
        "the paper's) or high (rating k, the last key). Every session's sidecar records the "
        "scale (RatingScale).",
    )
    keypad: StrictBool = Field(
        True,
        description="Also accept the numeric keypad's digits for the same ratings (num_3 is "
        'rating 3 when "3" is).',
    )
    pause_key: KeyName = Field(
        "p",
        description="Asks for a pause; the pause begins when the current trial's response "
        "window closes.",
    )
    quit_key: KeyName = Field(
        "escape",
        description="Asks to end the session; after a confirmation the session ends with "
        "everything recorded and is marked incomplete.",
    )

    @model_validator(mode="after")
    def _keys_can_be_pressed_and_have_one_job(self, info: ValidationInfo) -> Response:
        named = [(f"keys[{k}]", name) for k, name in enumerate(self.keys)]
        named += [("pause_key", self.pause_key), ("quit_key", self.quit_key)]
        # The tables are given at load (load_protocol); a Response built in code is not
        # checked against a keyboard it may never meet.
        for reporter, known in (info.context or {}).get("key_names", ()):
            for field, name in named:
                if name not in known:
                    close = _closest_key(name, known)
                    hint = f"; did you mean {close!r}?" if close else ""
                    raise _refusal(
                        f"{name!r} is not a key name {reporter}{hint} (protocols/README.md "
                        "lists them)",
                        field=field,
                    )
        repeated = sorted({name for name in self.keys if self.keys.count(name) > 1})
        if repeated:
            raise _refusal(
                f"expected distinct keys (one per scale point), got {repeated[0]!r} twice",
                field="keys",
            )
        # Each key has one job. A rating key's keypad twin (num_3 for "3") is claimed
        # beside it, so that a rating key named like another key's twin is refused rather
        # than recorded as the other rating.
        jobs = {CONTINUE_KEY: "the continue key of every instruction screen"}
        for rating, name in enumerate(self.keys, start=1):
            _claim(jobs, name, f"rating {rating}", "keys")
            if self.keypad and name.isdigit():
                _claim(jobs, f"num_{name}", f"rating {rating} (on the keypad)", "keys")
        _claim(jobs, self.pause_key, "the pause key", "pause_key")
        _claim(jobs, self.quit_key, "the quit key", "quit_key")
        return self


def _claim(jobs: dict[str, str], name: str, job: str, field: str) -> None:
    if name in jobs:
        raise _refusal(
            f"{name!r} is already {jobs[name]}; expected each key to have one job", field=field
        )
    jobs[name] = job


@dataclass(frozen=True, config=_TABLE)
class Anchoring:
    """``[anchoring]``: the anchor pairs shown first with their ratings, and their repeats."""

    enabled: StrictBool = Field(
        True,
        description="Show the stimulus set's anchor pairs first, each with its prescribed "
        "rating on screen (phase anchor_demo).",
    )
    repeat: StrictBool = Field(
        True,
        description="Put every anchor pair again at a random place in the later part of the "
        "main block (phase anchor_repeat), where it is rated like any pair; no repeats when "
        "enabled is false.",
    )
    repeat_from: Annotated[StrictFloat, Field(ge=0.0, lt=1.0), _Expects("a fraction in [0, 1)")] = (
        Field(
            0.5,
            description='"The later part": the repeats go after this fraction of the main block.',
        )
    )


#: A sketch or image id as every reader takes it (foundation.checks.check_id).
PairId = Annotated[
    StrictStr, Field(pattern=rf"^[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{MAX_ID_LENGTH - 1}}}$")
]


@dataclass(frozen=True, config=_TABLE)
class Practice:
    """``[practice]``: pairs rated first, to learn the keys and the timing; never analysed."""

    pairs: Annotated[
        tuple[tuple[PairId, PairId], ...],
        _Expects(f"a list of [sketch_id, image_id] pairs of the stimulus set, each {ID_RULE}"),
    ] = Field(
        (),
        description="Pairs of the stimulus set rated before the anchoring phase, in this "
        "order, as [sketch_id, image_id] (phase practice); recorded like any trial and left "
        "out of every statistic. The lab session (sbir-study run) only; [] for none.",
    )

    @field_validator("pairs")
    @classmethod
    def _each_pair_once(cls, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        for number, pair in enumerate(pairs):
            if pair in pairs[:number]:
                raise _refusal(f"expected each pair once, got {list(pair)!r} twice")
        return pairs


@dataclass(frozen=True, config=_TABLE)
class CatchPair:
    """``[[catch]]``: a pair of the stimulus set whose rating is known in advance (an image
    with its own sketch, a blank image), rated in the main block like any pair and
    scored by ``analyze`` on top (passed, failed or missing) to check attention."""

    sketch_id: Annotated[PairId, _Expects(f"a sketch id of the stimulus set, {ID_RULE}")] = Field(
        description="The sketch of the pair."
    )
    image_id: Annotated[PairId, _Expects(f"an image id of the stimulus set, {ID_RULE}")] = Field(
        description="The image of the pair."
    )
    ratings: Annotated[
        StrictStr,
        Field(pattern=r"^\s*[0-9]\s*(-\s*[0-9]\s*)?$"),
        _Expects('the ratings that pass, as pressed: "LOW-HIGH" or one rating ("1-2", "7")'),
    ] = Field(description='The ratings that pass, as pressed on the scale: "1-2", or "7".')

    @property
    def lowest(self) -> int:
        return int(self.ratings.split("-")[0])

    @property
    def highest(self) -> int:
        return int(self.ratings.split("-")[-1])


@dataclass(frozen=True, config=_TABLE)
class Pauses:
    """``[pauses]``: pauses the participant asks for, and scheduled breaks."""

    allowed: StrictBool = Field(
        True, description="The participant may pause at any time with the pause key."
    )
    break_every: Annotated[
        StrictInt, Field(ge=0), _Expects("0 (no breaks) or a number of trials")
    ] = Field(
        0, description="A scheduled break after every this many main-block trials; 0 for none."
    )


@dataclass(frozen=True, config=_TABLE)
class Display:
    """``[display]``: the screen, and the stimulus geometry in degrees of visual angle."""

    fullscreen: StrictBool = Field(
        True, description="Full screen (a lab session); sbir-study run --windowed overrides it."
    )
    resolution: Annotated[
        tuple[Pixels, Pixels], _Expects("[width, height] in pixels (1 to 32768)")
    ] = Field((1920, 1200), description="The screen's resolution in pixels.")
    width_cm: _finite_in(0.0, 1000.0, above=True) = Field(
        51.8,
        description="The visible width of the screen (cm); a 24-inch 16:10 LCD (the paper's "
        "monitor size) is 51.8 cm wide.",
    )
    distance_cm: _finite_in(0.0, 10000.0, above=True) = Field(
        80.0, description="Eye-to-screen distance (cm); the paper: 80 cm."
    )
    stimulus_deg: _finite_in(0.0, 90.0, above=True) = Field(
        12.0,
        description="The width of the sketch and of the image, each, in degrees of visual angle.",
    )
    gap_deg: _finite_in(0.0, 90.0) = Field(
        1.0,
        description="The gap between the sketch (left) and the image (right), in degrees of "
        "visual angle.",
    )
    background: Annotated[
        tuple[Colour, Colour, Colour], _Expects("three numbers in -1..1 (PsychoPy RGB)")
    ] = Field(
        (0.0, 0.0, 0.0),
        description="The background while the pair is shown, as PsychoPy RGB (0 is mid-grey); "
        "the blank is always black.",
    )
    scale_reminder: StrictBool = Field(
        False,
        description="Lab: a line under each rated pair (practice, main, anchor repeats) that "
        "reminds the participant of the scale ([texts] scale_reminder), drawn and taken down "
        "with the pair.",
    )


@dataclass(frozen=True, config=_TABLE)
class Participants:
    """``[participants]``: the participant details the dataset records."""

    details: tuple[StrictStr, ...] = Field(
        ("age", "sex"),
        description="Details asked before the instructions (or given on the command line) "
        'and written to participants.tsv: any of "age", "sex", "handedness". The paper '
        "reports age and sex.",
    )

    @field_validator("details")
    @classmethod
    def _known_details_once(cls, details: tuple[str, ...]) -> tuple[str, ...]:
        for name in details:
            if name not in DETAILS:
                hint = did_you_mean(name, DETAILS)
                raise _refusal(
                    f"expected a list of {', '.join(DETAILS)}{hint}, got {list(details)!r}"
                )
        if len(set(details)) != len(details):
            raise _refusal(f"expected each detail once, got {list(details)!r}")
        return details


@dataclass(frozen=True, config=_TABLE)
class Dataset:
    """``[dataset]``: what the first session writes to dataset_description.json."""

    name: Annotated[Name, _Expects("a name for dataset_description.json")] = Field(
        "Sketch/image similarity ratings (replication of Eitz et al. 2011)",
        description="The dataset's Name in dataset_description.json.",
    )
    authors: Annotated[tuple[Name, ...], _Expects("a list of names")] = Field(
        (),
        description="Authors in dataset_description.json: the people who collect and curate "
        "the dataset.",
    )


@dataclass(frozen=True, config=_TABLE)
class Instructions:
    """``[instructions]``: the texts on screen; each waits for the space bar.

    A text left out is written from the protocol's settings
    (:func:`sbir_study.study.screens.instruction_texts`): its keys, scale, pauses and timings.
    """

    practice: StrictStr | None = Field(
        None,
        description="Shown before the practice pairs ([practice]; default: a sentence saying "
        "that they do not count, then the main text).",
    )
    anchoring: StrictStr | None = Field(
        None,
        description="Shown before the anchoring phase (default: written from the settings: "
        "the scale's ends, how long each example is shown).",
    )
    main: StrictStr | None = Field(
        None,
        description="Shown before the main block (default: written from the settings: the "
        "rating keys and what the scale's ends mean, the timings, breaks, the pause and quit "
        "keys). A text of your own that names none of the rating keys gets a warning at load.",
    )
    pause: StrictStr | None = Field(
        None,
        description="Shown during a pause or a scheduled break (default: Paused. Press space "
        "to continue.).",
    )
    end: StrictStr | None = Field(
        None,
        description="Shown at the end of the session, until the space bar closes the window "
        "(default: Thank you! The session is complete. Press space to close.).",
    )


#: A code an online ending shows the participant (a crowd platform's completion code).
_EndingCode = Annotated[
    StrictStr,
    Field(pattern=r"^[A-Za-z0-9_-]{0,64}$"),
    _Expects("up to 64 letters, digits, '-' or '_'"),
]
#: An address the browser goes to at an online ending (a crowd platform's return address).
_EndingUrl = Annotated[
    StrictStr,
    Field(pattern=r"^(?:https?://[^ ]*)?$"),
    _Expects('an http(s):// address without spaces, or ""'),
]


@dataclass(frozen=True, config=_TABLE)
class Online:
    """``[online]``: the browser session (``sbir-study serve``); the lab session ignores it."""

    subset: Annotated[OnlineSubset, _Expects(f"one of {', '.join(ONLINE_SUBSETS)}")] = Field(
        "all",
        description="all: every participant rates every main pair; sketches: the sketches are "
        "split into `lists` groups and a participant rates the pairs of one group; pairs: "
        "each sketch's images are dealt over `lists` lists and a participant rates one list.",
    )
    lists: Annotated[StrictInt, Field(ge=1), _Expects("a whole number >= 1")] = Field(
        1,
        description="How many lists the main pairs are split into (1 with subset all); each "
        "participant gets the list with the fewest participants, so every pair gets the same "
        "number of raters.",
    )
    list_seed: Annotated[StrictInt, Field(ge=0), _Expects("a whole number >= 0")] = Field(
        0,
        description="Seed of the split into lists (fixed, so that every server process deals "
        "the same lists).",
    )
    stimulus_px: Annotated[
        StrictInt,
        Field(ge=0, le=4096),
        _Expects("0 (from [display]) or a width of 1..4096 CSS pixels"),
    ] = Field(
        0,
        description="Width of the sketch and of the image, each, in CSS pixels; 0 derives it "
        "from [display] (stimulus_deg at distance_cm on that screen, as PsychoPy does).",
    )
    consent: StrictStr = Field(
        "You are invited to rate how well images match sketches. The session takes the "
        "time stated in the study description. Your ratings, response times and the "
        "details you give next are stored under a participant label without your name. "
        "You may stop at any time with Escape.",
        description="The consent text shown before anything is recorded (HTML paragraphs "
        "allowed); the participant agrees or leaves.",
    )
    details: StrictBool = Field(
        True,
        description="Ask the participant details (age, sex, handedness, each optional), as "
        "the lab session does.",
    )
    completion_code: _EndingCode = Field(
        "", description='Completion code shown at the end of a complete session ("" for none).'
    )
    completion_url: _EndingUrl = Field(
        "",
        description="Address the browser goes to at the end of a complete session (a crowd "
        'platform\'s completion address; "" to stay on the page).',
    )
    # The other endings, as a crowd platform tells them apart (Prolific: a code per outcome).
    no_consent_code: _EndingCode = Field(
        "", description='Code shown to a participant who did not consent ("" for none).'
    )
    no_consent_url: _EndingUrl = Field(
        "",
        description='Address the browser goes to when the participant did not consent ("" '
        "to stay on the page).",
    )
    quit_code: _EndingCode = Field(
        "", description='Code shown when the participant ended the session early ("" for none).'
    )
    quit_url: _EndingUrl = Field(
        "",
        description="Address the browser goes to when the participant ended the session "
        'early ("" to stay on the page).',
    )
    timed_out_code: _EndingCode = Field(
        "",
        description="Code shown when a session timed out: its page came back after "
        'dropout_after_s without contact ("" for none).',
    )
    timed_out_url: _EndingUrl = Field(
        "",
        description='Address the browser goes to when a session timed out ("" to stay on '
        "the page).",
    )
    # Finite: the sidecar records the protocol as JSON, which has no infinity.
    dropout_after_s: Annotated[
        StrictFloat,
        Field(gt=0.0, allow_inf_nan=False),
        _Expects("a number of seconds above 0"),
    ] = Field(
        1800.0,
        description="Seconds without contact after which a running session counts as dropped "
        "out and its list goes to the next participant.",
    )
    raters_per_list: Annotated[
        StrictInt, Field(ge=0), _Expects("0 (no limit) or a whole number")
    ] = Field(
        0,
        description="Complete (or running) sessions per list at which the study takes no more "
        "participants; 0 for no limit.",
    )

    @model_validator(mode="after")
    def _one_list_for_all(self) -> Online:
        if self.subset == "all" and self.lists != 1:
            raise _refusal(
                f'expected 1 with subset = "all" (or subset "sketches" or "pairs"), '
                f"got {self.lists!r}",
                field="lists",
            )
        return self


@dataclass(frozen=True, config=_TABLE)
class Protocol:
    """A study protocol: every setting of a session, lab or online, checked at load."""

    name: StrictStr = Field(
        "eitz2011", description="Short name of the protocol, recorded with every session."
    )
    task: Annotated[
        StrictStr,
        Field(pattern=r"^[A-Za-z0-9]+$"),
        _Expects("a BIDS label of letters and digits"),
    ] = Field(
        "sbirrating",
        description="The BIDS task label: files are sub-<label>_task-<task>_beh.tsv.",
    )
    description: StrictStr = Field("", description="Free text, recorded with the session.")
    main_roles: Annotated[
        tuple[Role, ...], Field(min_length=1), _Expects("a list of main and/or candidate")
    ] = Field(
        ("main",),
        description="Roles of the stimulus set's pairs that make the main block (candidate "
        "for a pilot).",
    )
    timing: Timing = Field(default_factory=Timing, description=Timing.__doc__)
    response: Response = Field(default_factory=Response, description=Response.__doc__)
    anchoring: Anchoring = Field(default_factory=Anchoring, description=Anchoring.__doc__)
    practice: Practice = Field(default_factory=Practice, description=Practice.__doc__)
    pauses: Pauses = Field(default_factory=Pauses, description=Pauses.__doc__)
    display: Display = Field(default_factory=Display, description=Display.__doc__)
    participants: Participants = Field(
        default_factory=Participants, description=Participants.__doc__
    )
    dataset: Dataset = Field(default_factory=Dataset, description=Dataset.__doc__)
    instructions: Instructions = Field(
        default_factory=Instructions, description=Instructions.__doc__
    )
    online: Online = Field(default_factory=Online, description=Online.__doc__)
    texts: Texts = Field(default_factory=Texts, description=Texts.__doc__)
    catch: tuple[CatchPair, ...] = Field(
        (),
        description="Catch pairs ([[catch]] tables): pairs of the stimulus set's main block "
        "with the ratings that pass; recorded in every session's sidecar (with the protocol) "
        "and scored by analyze. [] for none.",
    )

    @model_validator(mode="after")
    def _catch_pairs_fit_the_scale(self) -> Protocol:
        seen = set()
        for number, pair in enumerate(self.catch):
            if not 1 <= pair.lowest <= pair.highest <= len(self.response.keys):
                raise _refusal(
                    f"expected ratings LOW-HIGH with 1 <= LOW <= HIGH <= {len(self.response.keys)} "
                    f"(the rating keys), got {pair.ratings!r}",
                    field=f"catch[{number}].ratings",
                )
            if (pair.sketch_id, pair.image_id) in seen:
                raise _refusal(
                    f"expected each pair once, got {pair.sketch_id}/{pair.image_id} twice",
                    field=f"catch[{number}]",
                )
            seen.add((pair.sketch_id, pair.image_id))
        return self

    @model_validator(mode="after")
    def _answer_keys_are_not_the_quit_key(self) -> Protocol:
        # On the details form the quit key ends the session: an answer key cannot be it.
        quit_key = self.response.quit_key
        for name in self.participants.details:
            for field in DETAILS[name].keys or ():
                if getattr(self.texts, field) == quit_key:
                    raise _refusal(
                        f"{quit_key!r} is already the quit key; expected another answer key "
                        f"for {name}_question",
                        field=f"texts.{field}",
                    )
        return self

    @property
    def scale(self) -> Scale:
        """The rating scale: 1 .. the number of rating keys, its best end ``response.best``."""
        return Scale(1, len(self.response.keys), self.response.best)

    @property
    def key_map(self) -> dict[str, int]:
        """Rating key name -> rating, the keypad's digits included when ``keypad`` is on."""
        return rating_key_map(self.response.keys, keypad=self.response.keypad)


_PROTOCOL = TypeAdapter(Protocol)


def load_protocol(path: str | Path, *, online: bool = False) -> Protocol:
    """Read and check a protocol file.

    Parameters
    ----------
    path
        The protocol (TOML).
    online
        The protocol is served to browsers (``sbir-study serve``): its keys must
        also be names a browser can send (:func:`browser_key_names`).

    Returns
    -------
    Protocol
        The checked protocol.

    Raises
    ------
    InputError
        One line naming the file and the setting; see the module docstring
        for which key names are accepted where.

    Examples
    --------
    >>> protocol = load_protocol("protocols/eitz2011.toml")
    >>> protocol.timing.stimulus_s, str(protocol.scale)
    (2.0, '1-7')
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
    try:
        protocol = _PROTOCOL.validate_python(raw, context={"key_names": _key_names(online=online)})
    except ValidationError as error:
        raise InputError(f"{path}: {_refusal_line(error.errors()[0], raw)}") from None
    if unnamed := rating_keys_unnamed(protocol.instructions.main, protocol.response.keys):
        warnings.warn(f"{path}: {unnamed}", stacklevel=2)
    return protocol


def protocol_dict(protocol: Protocol) -> dict:
    """The protocol as plain data (for the session's sidecar); ``catch`` only when it names
    catch pairs, so that a protocol without them is recorded as it always was."""
    recorded = dataclasses.asdict(protocol)
    if not recorded["catch"]:
        del recorded["catch"]
    return recorded


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


def _key_names(*, online: bool) -> tuple[tuple[str, frozenset[str]], ...]:
    """The key-name tables a protocol's keys must be in: (who reports them, the names)."""
    tables = []
    if importlib.util.find_spec("psychopy") is not None:
        tables.append(("the keyboard backend reports", backend_key_names()))
    if online:
        tables.append(("a browser sends (sbir-study serve)", browser_key_names()))
    return tuple(tables)


def _closest_key(name: str, known: frozenset[str]) -> str | None:
    """The known name for a key spelled another common way, or the most similar name."""
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


# --- pydantic's first error as one line --------------------------------------------------------

# A value of the wrong type is named where it is (a list item by its index), by its type.
_TYPES = {
    "float_type": "a number",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "string_type": "a string",
    "tuple_type": "a list",
}


def _refusal_line(error: Mapping, raw: dict) -> str:
    """``<key>: expected ..., got ...`` (or ``unknown key ...``) for one pydantic error."""
    loc, kind = error["loc"], error["type"]
    where = _dotted(loc)
    if loc[:1] == ("catch",) and len(loc) >= 3 and isinstance(loc[1], int):
        return _catch_refusal(error, where)
    if kind == "unexpected_keyword_argument":
        return _unknown_key(loc)
    if kind == "dataclass_type":
        return f"{where}: expected a table [{where}], got {error['input']!r}"
    if kind in _TYPES:
        return f"{where}: expected {_TYPES[kind]}, got {error['input']!r}"
    if kind == "protocol_setting":
        field = error["ctx"].get("field")
        where = ".".join(part for part in (where, field) if part)
        return f"{where}: {error['ctx']['message']}"
    # A value the setting does not take: the setting's own words, with its whole value.
    names = _setting_path(loc)
    if not names:  # the top level of a TOML document is always a table of settings
        return f"expected a table of settings ({error['msg']})"
    value = raw
    for name in names:
        value = value[name]
    expects = _expects(names) or error["msg"]
    return f"{'.'.join(names)}: expected {expects}, got {value!r}"


def _catch_refusal(error: Mapping, where: str) -> str:
    """A refusal inside one ``[[catch]]`` table, named by its index (``catch[0].ratings``)."""
    key, names = error["loc"][2], list(CatchPair.__pydantic_fields__)
    table = where.rsplit(".", 1)[0]
    if error["type"] == "unexpected_keyword_argument":
        return f"{table}: unknown key {key!r}; expected {', '.join(names)}"
    if error["type"] == "missing":
        return f"{table}: missing key {key!r}; expected {', '.join(names)}"
    info = CatchPair.__pydantic_fields__.get(key)
    expects = next(
        (item.text for item in getattr(info, "metadata", ()) if isinstance(item, _Expects)),
        error["msg"],
    )
    return f"{where}: expected {expects}, got {error['input']!r}"


def _dotted(loc: tuple) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)[1:]


def _table(names: tuple[str, ...]) -> type:
    table = Protocol
    for name in names:
        table = table.__pydantic_fields__[name].annotation
    return table


def _setting_path(loc: tuple) -> tuple[str, ...]:
    """The setting an error's location lies in (without the index of a list item)."""
    names: list[str] = []
    table = Protocol
    for part in loc:
        if not dataclasses.is_dataclass(table) or part not in table.__pydantic_fields__:
            break
        names.append(part)
        table = table.__pydantic_fields__[part].annotation
    return tuple(names)


def _expects(names: tuple[str, ...]) -> str | None:
    info = _table(names[:-1]).__pydantic_fields__[names[-1]]
    return next((item.text for item in info.metadata if isinstance(item, _Expects)), None)


def _unknown_key(loc: tuple) -> str:
    *table, key = loc
    prefix = "".join(f"{name}." for name in table)
    names = list(_table(tuple(table)).__pydantic_fields__)
    message = f"unknown key {prefix + key!r}"
    hint = did_you_mean(key, names, prefix=prefix)
    if hint:
        return message + hint
    return message + f"; expected one of {', '.join(prefix + name for name in names)}"
