"""The option values of sbir-study import (sbir_study.cli.import_options): --columns and --keys
read back as written (by property), and bad --columns, --answers, --select and --sep values
refused in one line naming the option."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.importers import IMPORT_COLUMNS
from sbir_study.cli.import_options import (
    parse_answers,
    parse_columns,
    parse_keys,
    parse_select,
    parse_separator,
)
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale

_SOURCE_NAME = (
    st.text(alphabet=string.ascii_letters + string.digits + " ._-ä", min_size=1, max_size=12)
    .map(str.strip)
    .filter(bool)
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(IMPORT_COLUMNS), _SOURCE_NAME))
def test_a_column_mapping_reads_back_as_written(mapping):
    text = ",".join(f"{target}={source}" for target, source in mapping.items())
    assert parse_columns(text) == mapping
    spaced = " , ".join(f" {target} = {source} " for target, source in mapping.items())
    assert parse_columns(spaced) == mapping


@pytest.mark.parametrize(
    "text, message",
    [
        ("participant=A,participant=B", "'participant' is mapped twice"),
        ("particpant=A", "did you mean 'participant'?"),
        ("rating", "expected COLUMN=SOURCE"),
        ("rating=", "expected COLUMN=SOURCE"),
    ],
)
def test_a_bad_column_mapping_is_refused_in_one_line(text, message):
    with pytest.raises(InputError, match=message):
        parse_columns(text)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 9), st.booleans(), st.data())
def test_keys_map_to_the_scale_s_points_low_end_first(k, high_best, data):
    scale = Scale(1, k, "high" if high_best else "low")
    keys = data.draw(
        st.lists(
            st.text(alphabet=string.ascii_lowercase + string.digits + "_", min_size=1, max_size=6),
            min_size=k,
            max_size=k,
            unique=True,
        )
    )
    assert parse_keys(",".join(keys), scale) == dict(zip(keys, range(1, k + 1), strict=True))
    with pytest.raises(InputError, match=f"expected {k} keys"):
        parse_keys(",".join(keys[:-1]), scale)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("Best=1,Best=2", "label 'Best' is given twice"),
        ("Best=8", "'Best' is given 8; expected a rating 1..7"),
        ("Best", "expected LABEL=RATING"),
        ("Best=one", "expected LABEL=RATING"),
    ],
)
def test_a_bad_answers_mapping_is_refused_in_one_line(text, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_answers(text, Scale())


@pytest.mark.parametrize(
    "text, expected",
    [
        (None, {}),
        ("", {}),
        ("task = rating", {"task": "rating"}),
        ("task=rating,block=2", {"task": "rating", "block": "2"}),
        ("task=", {"task": ""}),
    ],
)
def test_a_select_reads_as_written(text, expected):
    assert parse_select(text) == expected


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("task", "--select: expected FIELD=VALUE entries separated by commas"),
        ("=rating", "--select: expected FIELD=VALUE"),
        ("task=a,task=b", "--select: field 'task' is named twice"),
    ],
)
def test_a_bad_select_is_refused_in_one_line(text, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_select(text)


@pytest.mark.parametrize(
    "text, sep",
    [
        (None, None),
        (",", ","),
        ("comma", ","),
        ("Semicolon", ";"),
        ("TAB", "\t"),
        ("\\t", "\t"),
        ("\t", "\t"),
        ("bar", "|"),
        ("|", "|"),
    ],
)
def test_a_separator_is_named_or_given_as_itself(text, sep):
    assert parse_separator(text) == sep


@pytest.mark.parametrize("text", ["x", "colon", "::", " "])
def test_another_separator_is_refused_naming_the_choices(text):
    with pytest.raises(InputError, match="--sep: expected comma, semicolon, tab or bar"):
        parse_separator(text)
