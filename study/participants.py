"""The participant details a paper reports: age, sex and handedness.

A protocol records any of :data:`DETAILS` (``participants.details``), given on the command
line (``run --age 24 --sex F``) or asked on screen, into ``participants.tsv``, described in
BIDS terms in ``participants.json``. "Prefer not to say" is recorded as ``n/a``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sbir_study.foundation.checks import InputError

__all__ = ["AGE_RANGE", "DETAILS", "Detail", "check_details", "details_description"]

#: Ages the session accepts, in whole years.
AGE_RANGE = (1, 120)
MISSING = "n/a"


@dataclass(frozen=True)
class Detail:
    """One participant detail: its ``participants.tsv`` column and answers (its question is the
    protocol's).
    """

    name: str
    description: str
    #: On screen: the ``[texts]`` setting that names each answer's key -> the value recorded
    #: (None for a typed number); the keys are the protocol's, the values every language's.
    keys: Mapping[str, str] | None
    #: Recorded value -> its meaning, for participants.json (None for a number).
    levels: Mapping[str, str] | None
    units: str | None = None


DETAILS: dict[str, Detail] = {
    "age": Detail(
        name="age",
        description="Age of the participant at the session.",
        keys=None,
        levels=None,
        units="year",
    ),
    "sex": Detail(
        name="sex",
        description="Sex of the participant, as they reported it.",
        keys={"female_key": "F", "male_key": "M", "other_key": "O", "not_say_key": MISSING},
        levels={"F": "female", "M": "male", "O": "other"},
    ),
    "handedness": Detail(
        name="handedness",
        description="Handedness of the participant, as they reported it.",
        keys={
            "right_key": "R",
            "left_key": "L",
            "ambidextrous_key": "A",
            "not_say_key": MISSING,
        },
        levels={"R": "right", "L": "left", "A": "ambidextrous"},
    ),
}

# What the command line accepts for each level, case-insensitively.
_SPELLINGS = {
    "sex": {"f": "F", "female": "F", "m": "M", "male": "M", "o": "O", "other": "O"},
    "handedness": {"r": "R", "right": "R", "l": "L", "left": "L", "a": "A", "ambidextrous": "A"},
}


def check_details(given: Mapping[str, str | None], wanted: tuple[str, ...]) -> dict[str, str]:
    """The details given on the command line (None: not given), checked against the protocol's
    ``wanted`` details and spelled as recorded.

    >>> check_details({"age": "24", "sex": "female", "handedness": None}, ("age", "sex"))
    {'age': '24', 'sex': 'F'}
    >>> check_details({"sex": "n/a"}, ("sex",))
    {'sex': 'n/a'}
    """
    checked = {}
    for name, text in given.items():
        if text is None:
            continue
        if name not in wanted:
            recorded = ", ".join(wanted) if wanted else "none"
            raise InputError(
                f"--{name}: the protocol does not record {name} (its participants.details: "
                f"{recorded})"
            )
        value = text.strip()
        if value.lower() in ("n/a", "na", "none", ""):
            checked[name] = MISSING
        elif name == "age":
            checked[name] = _age(value)
        else:
            spelled = _SPELLINGS[name].get(value.lower())
            if spelled is None:
                levels = DETAILS[name].levels or {}
                allowed = ", ".join(f"{k} ({v})" for k, v in levels.items())
                raise InputError(f"--{name}: expected one of {allowed} or n/a, got {text!r}")
            checked[name] = spelled
    return checked


def _age(text: str) -> str:
    low, high = AGE_RANGE
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise InputError(f"--age: expected whole years from {low} to {high} or n/a, got {text!r}")
    return str(int(text))


def details_description(names: Iterable[str]) -> dict[str, dict]:
    """The ``participants.json`` entries of the detail columns ``names``."""
    described = {}
    for name in names:
        detail = DETAILS[name]
        entry: dict = {"Description": detail.description}
        if detail.levels:
            entry["Levels"] = dict(detail.levels)
        if detail.units:
            entry["Units"] = detail.units
        described[name] = entry
    return described
