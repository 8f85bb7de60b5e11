"""The tables of a protocol's settings, one per topic: each setting, its default and bounds.

Each table (``[timing]``, ``[response]``, ...) is a frozen pydantic dataclass: a setting's
type holds its bounds, its default is the paper's replication (Sec. 2.3), and the docstring
under it is its description (``use_attribute_docstrings``), as ``protocols/README.md``
documents it. Pydantic dataclasses keep ``dataclasses.replace`` (which validates again) and
``asdict`` working. Every scalar is strict (no number from a string, no flag from a number);
the tables are not, since strict mode refuses a TOML array for a tuple and a TOML table for a
dataclass.
"""

from __future__ import annotations

import typing
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError

from sbir_study.foundation import paper
from sbir_study.foundation.checks import ID_RULE, MAX_ID_LENGTH, did_you_mean

from .key_names import closest_key
from .participants import DETAILS
from .protocol_errors import Expects, refusal

__all__ = [
    "CONTINUE_KEY",
    "DURATION_RANGE_S",
    "TABLE",
    "Anchoring",
    "CatchPair",
    "Dataset",
    "Display",
    "Instructions",
    "Online",
    "Participants",
    "Pauses",
    "Practice",
    "Response",
    "Timing",
]

#: Durations a protocol may set (seconds): from 3 frames at 60 Hz to a minute.
DURATION_RANGE_S = (0.05, 60.0)
#: The key that ends every instruction, pause and end screen.
CONTINUE_KEY = "space"


#: The configuration of every table: unknown keys are refused (see the module docstring for
#: why strictness is per setting); the docstring under a setting is its description.
TABLE = ConfigDict(extra="forbid", strict=False, use_attribute_docstrings=True)

Seconds = Annotated[
    StrictFloat,
    Field(ge=DURATION_RANGE_S[0], le=DURATION_RANGE_S[1]),
    Expects("a duration from {:g} s to {:g} s".format(*DURATION_RANGE_S)),
]
Hertz = Annotated[StrictFloat, Field(gt=0.0, le=1000.0)]
Pixels = Annotated[StrictInt, Field(ge=1, le=32768)]
Colour = Annotated[StrictFloat, Field(ge=-1.0, le=1.0)]
KeyName = StrictStr
OnlineSubset = Literal["all", "sketches", "pairs"]

#: How an online participant's share of the main pairs is chosen (``Online.subset``).
ONLINE_SUBSETS: tuple[str, ...] = typing.get_args(OnlineSubset)


def _finite_in(low: float, high: float, *, above: bool = False) -> tuple[object, object]:
    """The bounds of a number setting from ``low`` (``above``: exclusive) to ``high``, and
    its refusal naming the interval from the same bounds (``Annotated[StrictFloat, *...]``)."""
    bound = Field(gt=low, le=high) if above else Field(ge=low, le=high)
    interval = f"{'(' if above else '['}{low:g}, {high:g}]"
    return bound, Expects(f"a finite number in {interval}")


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank", "expected more than white space")
    return text


Name = Annotated[StrictStr, AfterValidator(_not_blank)]


@dataclass(frozen=True, config=TABLE)
class Timing:
    """``[timing]``: how long each screen is shown, and when durations are counted in frames."""

    stimulus_s: Seconds = paper.STIMULUS_S
    """Seconds the sketch/image pair is shown, from its actual onset."""
    blank_s: Seconds = paper.BLANK_S
    """Seconds of black screen after the pair; the rating can be given and changed from stimulus
    onset until the blank ends, not after."""
    anchor_demo_s: Seconds = paper.STIMULUS_S + paper.BLANK_S
    """Seconds each anchor pair is shown in the anchoring phase, with its prescribed rating (not
    rated)."""
    frame_jitter_ms: Annotated[StrictFloat, *_finite_in(0.0, 100.0)] = 1.0
    """Durations are counted in frames only when the measured frame period varies by less than this
    (standard deviation, ms) and the refresh rate lies in refresh_range_hz; otherwise they are timed
    by the clock."""
    refresh_range_hz: Annotated[
        tuple[Hertz, Hertz], Expects("[low, high] with 0 < low < high <= 1000 Hz")
    ] = (50.0, 250.0)
    """Durations are counted in frames only when the measured refresh rate lies in this range (Hz)
    and the frame period is steady (frame_jitter_ms); otherwise (a virtual display without vertical
    sync, for example) they are timed by the clock."""

    @field_validator("refresh_range_hz")
    @classmethod
    def _low_below_high(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not value[0] < value[1]:
            raise PydanticCustomError("low_not_below_high", "expected low < high")
        return value


@dataclass(frozen=True, config=TABLE)
class Response:
    """``[response]``: the rating keys, and the keys that pause and end the session."""

    keys: Annotated[
        tuple[KeyName, ...],
        Field(min_length=2, max_length=9),
        Expects("2 to 9 keys, one per scale point"),
    ] = ("1", "2", "3", "4", "5", "6", "7")
    """One key per scale point, in order: the first key means rating 1, the last rating k; the
    number of keys is the scale's length k (best says which end is the best match)."""
    best: Annotated[Literal["low", "high"], Expects('"low" or "high"')] = "low"
    """Which end of the scale is the best match: low (rating 1, the first key; the paper's) or high
    (rating k, the last key). Every session's sidecar records the scale (RatingScale)."""
    keypad: StrictBool = True
    """Also accept the numeric keypad's digits for the same ratings (num_3 is rating 3 when "3"
    is)."""
    pause_key: KeyName = "p"
    """Asks for a pause; the pause begins when the current trial's response window closes."""
    quit_key: KeyName = "escape"
    """Asks to end the session; after a confirmation the session ends with everything recorded and
    is marked incomplete."""

    @model_validator(mode="after")
    def _keys_can_be_pressed_and_have_one_job(self, info: ValidationInfo) -> Response:
        named = [(f"keys[{k}]", name) for k, name in enumerate(self.keys)]
        named += [("pause_key", self.pause_key), ("quit_key", self.quit_key)]
        # The tables are given at load (load_protocol); a Response built in code is not
        # checked against a keyboard it may never meet.
        for reporter, known in (info.context or {}).get("key_names", ()):
            for field, name in named:
                if name not in known:
                    close = closest_key(name, known)
                    hint = f"; did you mean {close!r}?" if close else ""
                    raise refusal(
                        f"{name!r} is not a key name {reporter}{hint} (protocols/README.md "
                        "lists them)",
                        field=field,
                    )
        repeated = sorted({name for name in self.keys if self.keys.count(name) > 1})
        if repeated:
            raise refusal(
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
        raise refusal(
            f"{name!r} is already {jobs[name]}; expected each key to have one job", field=field
        )
    jobs[name] = job


@dataclass(frozen=True, config=TABLE)
class Anchoring:
    """``[anchoring]``: the anchor pairs shown first with their ratings, and their repeats."""

    enabled: StrictBool = True
    """Show the stimulus set's anchor pairs first, each with its prescribed rating on screen (phase
    anchor_demo)."""
    repeat: StrictBool = True
    """Put every anchor pair again at a random place in the later part of the main block (phase
    anchor_repeat), where it is rated like any pair; no repeats when enabled is false."""
    repeat_from: Annotated[StrictFloat, Field(ge=0.0, lt=1.0), Expects("a fraction in [0, 1)")] = (
        0.5
    )
    """"The later part": the repeats go after this fraction of the main block."""


#: A sketch or image id as every reader takes it (foundation.checks.check_id).
PairId = Annotated[
    StrictStr, Field(pattern=rf"^[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{MAX_ID_LENGTH - 1}}}$")
]


@dataclass(frozen=True, config=TABLE)
class Practice:
    """``[practice]``: pairs rated first, to learn the keys and the timing; never analysed."""

    pairs: Annotated[
        tuple[tuple[PairId, PairId], ...],
        Expects(f"a list of [sketch_id, image_id] pairs of the stimulus set, each {ID_RULE}"),
    ] = ()
    """Pairs of the stimulus set rated before the anchoring phase, in this order, as [sketch_id,
    image_id] (phase practice); recorded like any trial and left out of every statistic. The lab
    session (sbir-study run) only; [] for none."""

    @field_validator("pairs")
    @classmethod
    def _each_pair_once(cls, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        for number, pair in enumerate(pairs):
            if pair in pairs[:number]:
                raise refusal(f"expected each pair once, got {list(pair)!r} twice")
        return pairs


@dataclass(frozen=True, config=TABLE)
class CatchPair:
    """``[[catch]]``: a pair of the stimulus set whose rating is known in advance (an image
    with its own sketch, a blank image), rated in the main block like any pair and
    scored by ``analyze`` on top (passed, failed or missing) to check attention."""

    sketch_id: Annotated[PairId, Expects(f"a sketch id of the stimulus set, {ID_RULE}")] = Field(
        description="The sketch of the pair."
    )
    image_id: Annotated[PairId, Expects(f"an image id of the stimulus set, {ID_RULE}")] = Field(
        description="The image of the pair."
    )
    ratings: Annotated[
        StrictStr,
        Field(pattern=r"^\s*[0-9]\s*(-\s*[0-9]\s*)?$"),
        Expects('the ratings that pass, as pressed: "LOW-HIGH" or one rating ("1-2", "7")'),
    ] = Field(description='The ratings that pass, as pressed on the scale: "1-2", or "7".')

    @property
    def lowest(self) -> int:
        return int(self.ratings.split("-")[0])

    @property
    def highest(self) -> int:
        return int(self.ratings.split("-")[-1])


@dataclass(frozen=True, config=TABLE)
class Pauses:
    """``[pauses]``: pauses the participant asks for, and scheduled breaks."""

    allowed: StrictBool = True
    """The participant may pause at any time with the pause key."""
    break_every: Annotated[
        StrictInt, Field(ge=0), Expects("0 (no breaks) or a number of trials")
    ] = 0
    """A scheduled break after every this many main-block trials; 0 for none."""


@dataclass(frozen=True, config=TABLE)
class Display:
    """``[display]``: the screen, and the stimulus geometry in degrees of visual angle."""

    fullscreen: StrictBool = True
    """Full screen (a lab session); sbir-study run --windowed overrides it."""
    resolution: Annotated[
        tuple[Pixels, Pixels], Expects("[width, height] in pixels (1 to 32768)")
    ] = (1920, 1200)
    """The screen's resolution in pixels."""
    width_cm: Annotated[StrictFloat, *_finite_in(0.0, 1000.0, above=True)] = 51.8
    """The visible width of the screen (cm); a 24-inch 16:10 LCD (the paper's monitor size) is 51.8
    cm wide."""
    distance_cm: Annotated[StrictFloat, *_finite_in(0.0, 10000.0, above=True)] = 80.0
    """Eye-to-screen distance (cm); the paper: 80 cm."""
    stimulus_deg: Annotated[StrictFloat, *_finite_in(0.0, 90.0, above=True)] = 12.0
    """The width of the sketch and of the image, each, in degrees of visual angle."""
    gap_deg: Annotated[StrictFloat, *_finite_in(0.0, 90.0)] = 1.0
    """The gap between the sketch (left) and the image (right), in degrees of visual angle."""
    background: Annotated[
        tuple[Colour, Colour, Colour], Expects("three numbers in -1..1 (PsychoPy RGB)")
    ] = (0.0, 0.0, 0.0)
    """The background while the pair is shown, as PsychoPy RGB (0 is mid-grey); the blank is always
    black."""
    scale_reminder: StrictBool = False
    """Lab: a line under each rated pair (practice, main, anchor repeats) that reminds the
    participant of the scale ([texts] scale_reminder), drawn and taken down with the pair."""


@dataclass(frozen=True, config=TABLE)
class Participants:
    """``[participants]``: the participant details the dataset records."""

    details: tuple[StrictStr, ...] = ("age", "sex")
    """Details asked before the instructions (or given on the command line) and written to
    participants.tsv: any of "age", "sex", "handedness". The paper reports age and sex."""

    @field_validator("details")
    @classmethod
    def _known_details_once(cls, details: tuple[str, ...]) -> tuple[str, ...]:
        for name in details:
            if name not in DETAILS:
                hint = did_you_mean(name, DETAILS)
                raise refusal(
                    f"expected a list of {', '.join(DETAILS)}{hint}, got {list(details)!r}"
                )
        if len(set(details)) != len(details):
            raise refusal(f"expected each detail once, got {list(details)!r}")
        return details


@dataclass(frozen=True, config=TABLE)
class Dataset:
    """``[dataset]``: what the first session writes to dataset_description.json."""

    name: Annotated[Name, Expects("a name for dataset_description.json")] = (
        "Sketch/image similarity ratings (replication of Eitz et al. 2011)"
    )
    """The dataset's Name in dataset_description.json."""
    authors: Annotated[tuple[Name, ...], Expects("a list of names")] = ()
    """Authors in dataset_description.json: the people who collect and curate the dataset."""


@dataclass(frozen=True, config=TABLE)
class Instructions:
    """``[instructions]``: the texts on screen; each waits for the space bar.

    A text left out is written from the protocol's settings
    (:func:`sbir_study.study.screens.instruction_texts`): its keys, scale, pauses and timings.
    """

    practice: StrictStr | None = None
    """Shown before the practice pairs ([practice]; default: a sentence saying that they do not
    count, then the main text)."""
    anchoring: StrictStr | None = None
    """Shown before the anchoring phase (default: written from the settings: the scale's ends, how
    long each example is shown)."""
    main: StrictStr | None = None
    """Shown before the main block (default: written from the settings: the rating keys and what the
    scale's ends mean, the timings, breaks, the pause and quit keys). A text of your own that names
    none of the rating keys gets a warning at load."""
    pause: StrictStr | None = None
    """Shown during a pause or a scheduled break (default: Paused. Press space to continue.)."""
    end: StrictStr | None = None
    """Shown at the end of the session, until the space bar closes the window (default: Thank you!
    The session is complete. Press space to close.)."""


#: A code an online ending shows the participant (a crowd platform's completion code).
_EndingCode = Annotated[
    StrictStr,
    Field(pattern=r"^[A-Za-z0-9_-]{0,64}$"),
    Expects("up to 64 letters, digits, '-' or '_'"),
]
#: An address the browser goes to at an online ending (a crowd platform's return address).
_EndingUrl = Annotated[
    StrictStr,
    Field(pattern=r"^(?:https?://[^ ]*)?$"),
    Expects('an http(s):// address without spaces, or ""'),
]


@dataclass(frozen=True, config=TABLE)
class Online:
    """``[online]``: the browser session (``sbir-study serve``); the lab session ignores it."""

    subset: Annotated[OnlineSubset, Expects(f"one of {', '.join(ONLINE_SUBSETS)}")] = "all"
    """all: every participant rates every main pair; sketches: the sketches are split into `lists`
    groups and a participant rates the pairs of one group; pairs: each sketch's images are dealt
    over `lists` lists and a participant rates one list."""
    lists: Annotated[StrictInt, Field(ge=1), Expects("a whole number >= 1")] = 1
    """How many lists the main pairs are split into (1 with subset all); each participant gets the
    list with the fewest participants, so every pair gets the same number of raters."""
    list_seed: Annotated[StrictInt, Field(ge=0), Expects("a whole number >= 0")] = 0
    """Seed of the split into lists (fixed, so that every server process deals the same lists)."""
    stimulus_px: Annotated[
        StrictInt,
        Field(ge=0, le=4096),
        Expects("0 (from [display]) or a width of 1..4096 CSS pixels"),
    ] = 0
    """Width of the sketch and of the image, each, in CSS pixels; 0 derives it from [display]
    (stimulus_deg at distance_cm on that screen, as PsychoPy does)."""
    consent: StrictStr = (
        "You are invited to rate how well images match sketches. The session takes the "
        "time stated in the study description. Your ratings, response times and the "
        "details you give next are stored under a participant label without your name. "
        "You may stop at any time with Escape."
    )
    """The consent text shown before anything is recorded (HTML paragraphs allowed); the participant
    agrees or leaves."""
    details: StrictBool = True
    """Ask the participant details (age, sex, handedness, each optional), as the lab session
    does."""
    completion_code: _EndingCode = ""
    """Completion code shown at the end of a complete session ("" for none)."""
    completion_url: _EndingUrl = ""
    """Address the browser goes to at the end of a complete session (a crowd platform's completion
    address; "" to stay on the page)."""
    # The other endings, as a crowd platform tells them apart (Prolific: a code per outcome).
    no_consent_code: _EndingCode = ""
    """Code shown to a participant who did not consent ("" for none)."""
    no_consent_url: _EndingUrl = ""
    """Address the browser goes to when the participant did not consent ("" to stay on the page)."""
    quit_code: _EndingCode = ""
    """Code shown when the participant ended the session early ("" for none)."""
    quit_url: _EndingUrl = ""
    """Address the browser goes to when the participant ended the session early ("" to stay on the
    page)."""
    timed_out_code: _EndingCode = ""
    """Code shown when a session timed out: its page came back after dropout_after_s without contact
    ("" for none)."""
    timed_out_url: _EndingUrl = ""
    """Address the browser goes to when a session timed out ("" to stay on the page)."""
    # Finite: the sidecar records the protocol as JSON, which has no infinity.
    dropout_after_s: Annotated[
        StrictFloat,
        Field(gt=0.0, allow_inf_nan=False),
        Expects("a number of seconds above 0"),
    ] = 1800.0
    """Seconds without contact after which a running session counts as dropped out and its list goes
    to the next participant."""
    raters_per_list: Annotated[
        StrictInt, Field(ge=0), Expects("0 (no limit) or a whole number")
    ] = 0
    """Complete (or running) sessions per list at which the study takes no more participants; 0 for
    no limit. A running session holds its place once it has stored a trial."""
    max_sessions: Annotated[StrictInt, Field(ge=0), Expects("0 (no limit) or a whole number")] = 0
    """Sessions the study starts in all, whatever becomes of them, after which it takes no more
    participants; 0 for no limit."""
    starts_per_minute: Annotated[
        StrictInt, Field(ge=0), Expects("0 (no limit) or a whole number")
    ] = 10
    """Sessions one client address may start per minute, per server process: as many at once, then
    one every 60/n s (a token bucket); 0 for no limit. Behind a proxy, the address is the one it
    forwards (serve --proxy-headers)."""
    platform: Annotated[Literal["", "prolific"], Expects('"" or "prolific"')] = ""
    """The crowd platform participants come from: "prolific" checks that the id is a Prolific id
    (24 hex digits, PROLIFIC_PID) and that STUDY_ID is platform_study_id; "" checks neither."""
    platform_study_id: Annotated[
        StrictStr, Field(max_length=64), Expects("up to 64 characters")
    ] = ""
    """The study's id on the platform (Prolific's STUDY_ID), required with platform."""

    @model_validator(mode="after")
    def _platform_study(self) -> Online:
        if self.platform and not self.platform_study_id:
            raise refusal(
                f"expected the study's id on {self.platform} (its STUDY_ID) with platform = "
                f"{self.platform!r}",
                field="platform_study_id",
            )
        return self

    @model_validator(mode="after")
    def _one_list_for_all(self) -> Online:
        if self.subset == "all" and self.lists != 1:
            raise refusal(
                f'expected 1 with subset = "all" (or subset "sketches" or "pairs"), '
                f"got {self.lists!r}",
                field="lists",
            )
        return self
