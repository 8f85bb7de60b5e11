"""Participant details from the command line: accepted exactly when they are a level of BIDS.

The levels are those of the BIDS specification's participants.tsv (sex: M, F,
O; handedness: R, L, A; age in years); anything else is refused with one line
naming the option and the accepted values.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.study.participants import AGE_RANGE, check_details, details_description

ALL = ("age", "sex", "handedness")
SEX = {"f": "F", "female": "F", "m": "M", "male": "M", "o": "O", "other": "O"}
HAND = {"r": "R", "right": "R", "l": "L", "left": "L", "a": "A", "ambidextrous": "A"}
MISSING = {"n/a", "na", "none", ""}


@given(
    text=st.one_of(
        st.text(max_size=6),
        st.integers(-5, 200).map(str),
        st.sampled_from(["n/a", "NA", " 30 ", "030", "1e2", "٣٠", "25.0"]),
    )
)
def test_age(text):
    value = text.strip()
    if value.lower() in MISSING:
        assert check_details({"age": text}, ALL) == {"age": "n/a"}
    elif value.isascii() and value.isdigit() and AGE_RANGE[0] <= int(value) <= AGE_RANGE[1]:
        assert check_details({"age": text}, ALL) == {"age": str(int(value))}
    else:
        with pytest.raises(InputError, match=r"^--age: expected whole years from 1 to 120"):
            check_details({"age": text}, ALL)


@pytest.mark.parametrize("name,levels", [("sex", SEX), ("handedness", HAND)])
@given(
    text=st.one_of(
        st.text(max_size=12),
        st.sampled_from(
            ["F", "female", "FEMALE", " m ", "Other", "R", "left", "Ambidextrous", "n/a", "x"]
        ),
    )
)
def test_sex_and_handedness(name, levels, text):
    value = text.strip().lower()
    if value in MISSING:
        assert check_details({name: text}, ALL) == {name: "n/a"}
    elif value in levels:
        assert check_details({name: text}, ALL) == {name: levels[value]}
    else:
        with pytest.raises(InputError, match=rf"^--{name}: expected one of "):
            check_details({name: text}, ALL)


def test_a_detail_the_protocol_does_not_record_is_refused():
    with pytest.raises(
        InputError,
        match=r"^--handedness: the protocol does not record "
        r"handedness \(its participants.details: age, sex\)",
    ):
        check_details({"handedness": "R"}, ("age", "sex"))
    assert check_details({"handedness": None}, ("age",)) == {}


def test_participants_json_levels_are_bids_levels():
    described = details_description(ALL)
    assert described["age"] == {
        "Description": "Age of the participant at the session.",
        "Units": "year",
    }
    assert set(described["sex"]["Levels"]) == {"M", "F", "O"}
    assert set(described["handedness"]["Levels"]) == {"R", "L", "A"}
