"""The rule that turns an id a recruitment platform sends into a participant label."""

from __future__ import annotations

import hashlib
import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.foundation.checks import (
    MAX_LABEL_LENGTH,
    MAX_SOURCE_ID_LENGTH,
    InputError,
    bad_ids,
    participant_label,
)

#: Ids as platforms send them, printable text with the punctuation panels use.
source_ids = st.text(
    alphabet=st.characters(categories=("L", "N", "P", "S", "Zs")),
    min_size=1,
    max_size=MAX_SOURCE_ID_LENGTH,
).filter(str.strip)


def hashed(source_id: str, digits: int = 8) -> str:
    """The suffix the rule adds, from hashlib independently of the rule's code."""
    return "x" + hashlib.sha256(source_id.encode("utf-8")).hexdigest()[:digits]


@pytest.mark.parametrize(
    ("source_id", "label"),
    [
        ("5f8d0e2a9b1c3d4e5f6a7b8c", "5f8d0e2a9b1c3d4e5f6a7b8c"),  # Prolific: 24 hex digits
        ("A1B2C3D4E5F6G7", "A1B2C3D4E5F6G7"),  # an MTurk worker id
        ("48213", "48213"),  # a SONA number
        ("R_1dGj8kL2mNpQ", "R1dGj8kL2mNpQ"),  # a Qualtrics response id
        ("P-07", "P07"),
        ("jo.smith_2", "josmith2"),
        ("panel 12 b", "panel12b"),
        ("Müller-3", "Mller3"),  # letters outside ASCII are not BIDS label letters
    ],
)
def test_platform_ids_keep_their_letters_and_digits(source_id, label):
    assert participant_label(source_id) == label


@pytest.mark.parametrize("source_id", ["-", "_.-", "ü", "NA", "nan", "Null", "n/a", "None"])
def test_an_id_without_a_usable_label_gets_its_hash(source_id):
    letters = re.sub(r"[^A-Za-z0-9]", "", source_id)
    assert participant_label(source_id) == letters + hashed(source_id)


@pytest.mark.parametrize(
    "source_id", ["", "   ", "a\tb", "a\nb", "a\x00", "x" * (MAX_SOURCE_ID_LENGTH + 1), 7, None]
)
def test_what_is_not_an_id_is_refused_in_one_line(source_id):
    with pytest.raises(InputError, match=r"^participant id: expected") as error:
        participant_label(source_id)
    assert "\n" not in str(error.value)


@given(source_ids, st.sets(st.text(alphabet=string.ascii_letters + string.digits, min_size=1)))
def test_every_label_is_a_bids_label_not_taken(source_id, taken):
    label = participant_label(source_id, taken)
    assert not bad_ids([label], participant=True)[0]
    assert len(label) <= MAX_LABEL_LENGTH
    assert label not in taken
    assert label.lower() not in {"na", "nan", "null", "none"}
    assert participant_label(source_id, taken) == label  # the same id, the same label


@given(source_ids)
def test_a_free_label_is_the_ids_letters_and_digits(source_id):
    letters = re.sub(r"[^A-Za-z0-9]", "", source_id)
    label = participant_label(source_id)
    if letters and letters.lower() not in {"na", "nan", "null", "none"}:
        assert label == letters
    else:
        assert label == letters + hashed(source_id)


@given(st.lists(source_ids, min_size=2, max_size=30, unique=True))
def test_ids_seen_in_turn_get_distinct_labels(ids):
    """A study sees ids one after another: each new id gets a label no other id has."""
    given_labels: dict[str, str] = {}
    for source_id in ids:
        given_labels[source_id] = participant_label(source_id, set(given_labels.values()))
    assert len(set(given_labels.values())) == len(ids)


def test_a_collision_gets_a_longer_hash_when_the_short_one_is_taken_too():
    source_id = "ab-1"
    taken = {"ab1", "ab1" + hashed(source_id)}
    assert participant_label(source_id, taken) == "ab1" + hashed(source_id, 16)
    taken.add("ab1" + hashed(source_id, 16))
    assert participant_label(source_id, taken) == "ab1" + hashed(source_id, 32)
    taken.add("ab1" + hashed(source_id, 32))
    with pytest.raises(InputError, match="taken"):
        participant_label(source_id, taken)
