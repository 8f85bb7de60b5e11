"""The rating scale: its text is parsed or refused in one line, and its numbers are those
an independent computation gives (NumPy's rounding, Python's ``range``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale

lows = st.integers(0, 20)
sizes = st.integers(2, 9)
bests = st.sampled_from(["low", "high"])


@given(lows, sizes, bests)
def test_parse_reads_back_what_str_writes(low, k, best):
    scale = Scale(low, low + k - 1, best)
    assert Scale.parse(str(scale)) == scale
    assert scale.points == tuple(range(low, low + k))
    assert scale.k == k == len(scale.levels())


@given(lows, sizes)
def test_parse_spellings(low, k):
    high = low + k - 1
    assert Scale.parse(f" {low}-{high} ") == Scale(low, high, "low")
    assert Scale.parse(f"{low}-{high}:low-is-best") == Scale(low, high, "low")
    assert Scale.parse(f"{low}-{high}:high-is-best") == Scale(low, high, "high")


@given(st.text(max_size=20))
@example("1-7:best-is-high")
@example("1..7")
@example("7-1")
@example("1-1")
@example("1-10")
@example("-1-5")
@example("1-5:high")
def test_bad_text_is_one_line_naming_the_option(text):
    try:
        scale = Scale.parse(text)
    except InputError as error:
        message = str(error)
        assert message.startswith("--scale: expected ")
        assert "\n" not in message
    else:
        assert 2 <= scale.k <= 9 and Scale.parse(str(scale)) == scale


@pytest.mark.parametrize("low, high", [(1, 1), (5, 1), (1, 10), (0, 9)])
def test_bad_sizes_are_refused(low, high):
    with pytest.raises(InputError, match="expected 2 to 9 points"):
        Scale(low, high)


@pytest.mark.parametrize("args", [(1.0, 7), (True, 7), (-1, 5), (1, 7, "top")])
def test_bad_fields_are_refused(args):
    with pytest.raises(InputError, match=r"^scale: expected"):
        Scale(*args)


def test_the_paper_s_scale_and_its_levels():
    assert PAPER_SCALE == Scale() == Scale.parse("1-7")
    # The levels every _beh.json sidecar of the paper's scale has always recorded.
    assert PAPER_SCALE.levels() == {
        "1": "best match",
        "2": "2",
        "3": "3",
        "4": "4 (middle of the scale)",
        "5": "5",
        "6": "6",
        "7": "worst match",
    }
    assert Scale(1, 5, "high").levels() == {
        "1": "worst match",
        "2": "2",
        "3": "3 (middle of the scale)",
        "4": "4",
        "5": "best match",
    }


@given(lows, sizes, bests)
def test_orientation_puts_the_best_match_low(low, k, best):
    scale = Scale(low, low + k - 1, best)
    ratings = pd.Series([*scale.points, None], dtype="Int64")
    oriented = scale.oriented(ratings)
    assert oriented.iloc[:-1].between(scale.low, scale.high).all()
    assert pd.isna(oriented.iloc[-1])
    assert scale.oriented(scale.best_point) == scale.low
    # Reversing twice is the identity.
    assert scale.oriented(oriented).equals(ratings)


@given(lows, sizes, st.floats(0, 1))
def test_grades_and_relevance(low, k, where):
    scale = Scale(low, low + k - 1)
    mean = scale.low + where * (scale.k - 1)
    # Independent: round half up with Python's decimal-free arithmetic on the points.
    nearest = min(scale.points, key=lambda p: (abs(p - mean), -p))
    grade = int(scale.grade(mean))
    assert grade == scale.high - nearest
    assert 0 <= grade <= k - 1
    # Relevant exactly when the mean rounds to a point of the better half, the middle of an
    # odd scale excluded.
    assert (mean < scale.relevant_below) == (nearest - scale.low < k // 2)


def test_the_paper_s_grades_are_seven_minus_the_rounded_mean():
    means = np.array([1.0, 1.49, 1.5, 3.5, 4.0, 6.5, 7.0])
    assert scale_grades(means) == [6, 6, 5, 3, 3, 0, 0]


def scale_grades(means):
    return PAPER_SCALE.grade(means).tolist()


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"Low": 1, "High": 5}, "expected an object with Low, High and Best"),
        ([1, 5], "expected an object with Low, High and Best"),
        ({"Low": 1, "High": 12, "Best": "low"}, "expected 2 to 9 points"),
        ({"Low": 1, "High": 5, "Best": "up"}, "expected best 'low' or 'high'"),
    ],
)
def test_bad_sidecar_entries_name_the_file(entry, message):
    with pytest.raises(InputError, match=rf"^sub-01_beh\.json: RatingScale: {message}"):
        Scale.from_sidecar(entry, what="sub-01_beh.json")


@given(lows, sizes, bests)
def test_sidecar_round_trip(low, k, best):
    scale = Scale(low, low + k - 1, best)
    assert Scale.from_sidecar(scale.sidecar(), what="x") == scale
