"""Participant labels that another tool would misread: refused or warned of when ratings load.

A label that R, pandas or BIDS read as a missing value (``NA``, ``nan``, ``null``,
``n/a``, any case) is refused in one line naming the file and line; labels that differ
only by leading zeros (``01``, ``1``) are two participants, with a warning naming both.
"""

import re
import warnings

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import RatingsWarning, load_ratings, validate_ratings
from sbir_study.foundation.checks import InputError

# The spellings the issue names, and None (in pandas' default na_values for read_csv),
# compared in lower case.
MISSING = {"na", "nan", "null", "n/a", "none"}

LABELS = st.one_of(
    st.text(alphabet="001aN", min_size=1, max_size=4),
    st.sampled_from(
        [
            "NA",
            "na",
            "Na",
            "nAn",
            "NaN",
            "NULL",
            "Null",
            "n/a",
            "N/A",
            "N/a",
            "None",
            "NONE",
            "none",
        ]
    ),
)


def table(labels) -> pd.DataFrame:
    return pd.DataFrame(
        {"participant": labels, "sketch_id": "s1", "image_id": "i1", "rating": "3"}, dtype=str
    )


def load(labels):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ratings = validate_ratings(table(labels))
    messages = [str(w.message) for w in caught if issubclass(w.category, RatingsWarning)]
    return ratings, messages


@settings(max_examples=200, deadline=None)
@given(labels=st.lists(LABELS, min_size=1, max_size=6, unique=True))
def test_missing_spellings_are_refused_and_leading_zeros_warned_of(labels):
    if any(label.lower() in MISSING for label in labels):
        first = next(i for i, label in enumerate(labels) if label.lower() in MISSING)
        with pytest.raises(InputError) as error:
            load(labels)
        message = str(error.value)
        assert "\n" not in message
        # The first such row in the table's order (line 1 is the header).
        assert message.startswith(f"<table>: line {first + 2}: field 'participant': ")
        assert message.endswith(f"got {labels[first]!r}")
        return
    ratings, messages = load(labels)
    assert sorted(set(ratings["participant"])) == sorted(labels)  # every label a participant
    # Groups of labels equal once their leading zeros are gone, found with a regular expression.
    groups: dict[str, list[str]] = {}
    for label in labels:
        groups.setdefault(re.fullmatch(r"0*(.*)", label).group(1), []).append(label)
    alike = [group for group in groups.values() if len(group) > 1]
    if not alike:
        assert messages == []
        return
    assert len(messages) == 1 and "differ only by leading zeros" in messages[0]
    named = set(re.findall(r"'(\w+)' \(<table>: line \d+\)", messages[0]))
    assert named == {label for group in alike for label in group}


def test_the_warning_names_the_files_of_a_dataset(tmp_path):
    # A BIDS dataset with sub-01 and sub-1: both files named in one warning.
    for label in ("01", "1", "2"):
        beh = tmp_path / f"sub-{label}" / "beh"
        beh.mkdir(parents=True)
        (beh / f"sub-{label}_task-t_beh.tsv").write_text(
            "sketch_id\timage_id\trating\ns1\ti1\t2\ns1\ti2\t5\n"
        )
    with pytest.warns(RatingsWarning) as caught:
        ratings = load_ratings(tmp_path)
    assert len(caught) == 1
    message = str(caught[0].message)
    for label in ("01", "1"):
        assert f"'{label}' ({tmp_path / f'sub-{label}/beh/sub-{label}_task-t_beh.tsv'}: " in message
    assert "'2'" not in message
    assert sorted(set(ratings["participant"])) == ["01", "1", "2"]


def test_a_missing_spelling_is_refused_naming_the_file_and_line(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("participant,sketch_id,image_id,rating\n01,s1,i1,2\nNull,s1,i1,3\n")
    with pytest.raises(
        InputError,
        match=rf"^{re.escape(str(path))}: line 3: field "
        r"'participant': expected a participant label that no table reads as a "
        r"missing value .*, got 'Null'$",
    ):
        load_ratings(path)


def test_many_groups_are_counted_beyond_the_first_five():
    labels = [f"{k}" for k in range(1, 9)] + [f"0{k}" for k in range(1, 9)]
    _, messages = load(labels)
    assert len(messages) == 1 and "; and 3 more such groups." in messages[0]
