"""A trial's rating, response time and presses as a pure function of the key events.

Property-based (hypothesis): random sequences of 0-6 presses per window, top
row and keypad mixed, repeated keys, presses at the window's first and last
representable instants and at the very instant it closes, presses in the
blank, non-rating keys, and the same events delivered in any order, split
over polls and reported twice (on press and on release), as a keyboard
backend may. The expected values come from the definition in the paper
(Sec. 2.3: the rating "could be submitted and changed during the total of 2
seconds of stimulus or the 1 second of blank screen, but not afterwards")
computed directly in each test, not from the module under test.
"""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.study.responses import (
    KeyEvent,
    control_presses,
    event_stream,
    first_press,
    format_presses,
    rating_key_map,
    score_trial,
)

ONSET, STIMULUS_S, BLANK_S = 100.0, 2.0, 1.0
END = ONSET + STIMULUS_S + BLANK_S
KEY_MAP = rating_key_map(["1", "2", "3", "4", "5", "6", "7"])
RATING_KEYS = [*map(str, range(1, 8)), *(f"num_{d}" for d in range(1, 8))]
OTHER_KEYS = ["p", "escape", "space", "a", "8", "0", "num_8", "num_0", "return"]
LAST_INSTANT = math.nextafter(END, -math.inf)

# Times that matter: the window's edges (and the representable instants beside them), the
# start of the blank, the last 20 ms, and anywhere from before the onset to after the end.
edge_times = st.sampled_from(
    [
        ONSET,
        math.nextafter(ONSET, -math.inf),
        ONSET + STIMULUS_S,
        LAST_INSTANT,
        END,
        math.nextafter(END, math.inf),
        END - 0.02,
        END - 0.001,
    ]
)
any_time = st.floats(ONSET - 1.0, END + 1.0, allow_nan=False)
in_window = st.floats(ONSET, LAST_INSTANT, allow_nan=False)
in_blank = st.floats(ONSET + STIMULUS_S, LAST_INSTANT, allow_nan=False)
times = st.one_of(edge_times, any_time, in_window, in_blank)


def inside(t: float) -> bool:
    return ONSET <= t < END


@st.composite
def trial_events(draw, min_presses=0, max_presses=6):
    """0-6 rating presses in the window and other events around, all at distinct times."""
    presses = draw(
        st.lists(
            st.tuples(
                st.sampled_from(RATING_KEYS),
                st.one_of(edge_times.filter(inside), in_window, in_blank),
            ),
            min_size=min_presses,
            max_size=max_presses,
        )
    )
    others = draw(st.lists(st.tuples(st.sampled_from(RATING_KEYS + OTHER_KEYS), times), max_size=6))
    events, seen = [], set()
    for name, t in presses + others:
        if t not in seen:  # distinct times: the order in time is then unambiguous
            seen.add(t)
            events.append((name, t))
    return events


def expected(events):
    """The definition, computed directly: rating presses in [onset, end), in time order."""
    pressed = sorted({(t, name) for name, t in events if name in KEY_MAP and ONSET <= t < END})
    return [(int(name.removeprefix("num_")), t - ONSET) for t, name in pressed]


def as_backend_delivers(events, rng: random.Random):
    """The same key-downs in any order, split over polls, some reported twice."""
    delivered = [*events, *rng.sample(events, k=rng.randint(0, len(events)))]
    rng.shuffle(delivered)
    return delivered


@settings(max_examples=400, deadline=None)
@given(events=trial_events(), seed=st.integers(0, 2**32 - 1))
def test_final_rating_is_the_last_press_before_the_window_closes(events, seed):
    delivered = as_backend_delivers(events, random.Random(seed))
    result = score_trial(delivered, ONSET, END, KEY_MAP)
    presses = expected(events)
    assert result.presses == tuple(presses)
    assert result.n_presses == len(presses)
    if presses:
        assert (result.rating, result.rt) == presses[-1]
    else:
        assert result.rating is None and result.rt is None


@settings(max_examples=200, deadline=None)
@given(events=trial_events(min_presses=1), seed=st.integers(0, 2**32 - 1))
def test_order_of_delivery_never_matters(events, seed):
    rng = random.Random(seed)
    first = score_trial(as_backend_delivers(events, rng), ONSET, END, KEY_MAP)
    again = score_trial(as_backend_delivers(events, rng), ONSET, END, KEY_MAP)
    assert first == again == score_trial(sorted(events, key=lambda e: e[1]), ONSET, END, KEY_MAP)


@settings(max_examples=200, deadline=None)
@given(events=trial_events())
def test_keypad_and_top_row_are_the_same_rating(events):
    top_row = [(name.removeprefix("num_") if name in KEY_MAP else name, t) for name, t in events]
    keypad = [
        (f"num_{name}" if name in KEY_MAP and name.isdigit() else name, t) for name, t in top_row
    ]
    assert score_trial(top_row, ONSET, END, KEY_MAP) == score_trial(keypad, ONSET, END, KEY_MAP)
    assert score_trial(events, ONSET, END, KEY_MAP) == score_trial(top_row, ONSET, END, KEY_MAP)


@settings(max_examples=200, deadline=None)
@given(
    events=trial_events(),
    noise=st.lists(st.tuples(st.sampled_from(RATING_KEYS + OTHER_KEYS), times), max_size=8),
)
def test_keys_outside_the_window_and_other_keys_change_nothing(events, noise):
    taken = {t for _, t in events}
    ignored = [
        (name, t)
        for name, t in noise
        if t not in taken and (name not in KEY_MAP or not ONSET <= t < END)
    ]
    assert score_trial(events + ignored, ONSET, END, KEY_MAP) == score_trial(
        events, ONSET, END, KEY_MAP
    )


# Cases of the kind that went wrong when presses were sorted by key name, not by time.
@pytest.mark.parametrize(
    "events,rating,presses",
    [
        ([("3", 100.5), ("2", 100.9)], 2, ((3, 0.5), (2, 0.9))),  # a lower digit after a higher
        ([("num_1", 100.4), ("6", 100.8)], 6, ((1, 0.4), (6, 0.8))),  # keypad, then top row
        ([("6", 100.4), ("num_1", 100.8)], 1, ((6, 0.4), (1, 0.8))),
        ([("4", 100.2), ("4", 100.7)], 4, ((4, 0.2), (4, 0.7))),  # the same key twice
        ([("5", ONSET)], 5, ((5, 0.0),)),  # at the onset: counts
        ([("5", 102.5), ("2", END)], 5, ((5, 2.5),)),  # at the very end: does not
        ([("7", 99.99), ("p", 101.0), ("space", 101.5)], None, ()),  # before, and other keys
    ],
)
def test_change_of_mind_cases(events, rating, presses):
    result = score_trial(events, ONSET, END, KEY_MAP)
    assert result.rating == rating
    assert [(r, round(t, 9)) for r, t in result.presses] == list(presses)


def test_a_press_in_the_last_representable_instant_counts():
    result = score_trial([("2", 100.5), ("6", LAST_INSTANT)], ONSET, END, KEY_MAP)
    assert result.rating == 6 and result.rt == LAST_INSTANT - ONSET


def test_same_instant_keeps_arrival_order_and_duplicates_collapse():
    # Two different keys with one time stamp (a backend cannot tell them apart in time):
    # the order they arrived in stands.
    assert score_trial([("3", 101.0), ("5", 101.0)], ONSET, END, KEY_MAP).rating == 5
    assert score_trial([("5", 101.0), ("3", 101.0)], ONSET, END, KEY_MAP).rating == 3
    assert event_stream([("3", 1.0), ("3", 1.0), ("3", 2.0)]) == (
        KeyEvent(1.0, "3"),
        KeyEvent(2.0, "3"),
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_key_event_without_a_finite_time_is_an_error(bad):
    with pytest.raises(ValueError, match="no finite time"):
        score_trial([("3", bad)], ONSET, END, KEY_MAP)


@settings(max_examples=200, deadline=None)
@given(events=trial_events())
def test_presses_column_round_trips(events):
    result = score_trial(events, ONSET, END, KEY_MAP)
    text = format_presses(result.presses)
    if not result.presses:
        assert text is None
        return
    parsed = [item.split("@") for item in text.split(" ")]
    assert [int(r) for r, _ in parsed] == [r for r, _ in result.presses]
    for (_, written), (_, t) in zip(parsed, result.presses, strict=True):
        assert abs(float(written) - t) <= 5e-5  # 0.1 ms resolution


def test_rating_key_map_for_other_scales():
    assert rating_key_map(["a", "s", "d"], keypad=True) == {"a": 1, "s": 2, "d": 3}
    assert rating_key_map(["1", "2"], keypad=False) == {"1": 1, "2": 2}


# --- control keys and waiting screens ------------------------------------------------------

CONTROL = {"p", "escape"}


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(st.tuples(st.sampled_from(["p", "escape", "3", "y", "n"]), times), max_size=8),
    seed=st.integers(0, 2**32 - 1),
)
def test_control_presses_belong_to_the_window_they_were_pressed_in(events, seed):
    delivered = as_backend_delivers(events, random.Random(seed))
    since = ONSET - 0.5  # where control keys were last dealt with
    got = control_presses(delivered, since, END, CONTROL)
    want = {(t, name) for name, t in events if name in CONTROL and since <= t < END}
    assert {(e.t, e.name) for e in got} == want and len(got) == len(want)
    assert [e.t for e in got] == sorted(e.t for e in got)  # in time order
    # The next look starts where this one ended: every press is seen once, none lost.
    later = control_presses(delivered, END, math.inf, CONTROL)
    all_of_them = {(t, name) for name, t in events if name in CONTROL and t >= since}
    assert {(e.t, e.name) for e in (*got, *later)} == all_of_them
    assert not {(e.t, e.name) for e in got} & {(e.t, e.name) for e in later}


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(st.tuples(st.sampled_from(["y", "n", "space", "p"]), times), max_size=8),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_first_answer_by_time_decides(events, seed):
    shown = ONSET + 1.0
    delivered = as_backend_delivers(events, random.Random(seed))
    answer = first_press(delivered, shown, {"y", "n"})
    candidates = sorted((t, name) for name, t in set(events) if name in "yn" and t >= shown)
    if not candidates:
        assert answer is None
    else:
        # With equal times the arrival order stands; distinct times decide by time.
        assert answer.t == candidates[0][0]
        if len([c for c in candidates if c[0] == candidates[0][0]]) == 1:
            assert answer.name == candidates[0][1]


def test_y_and_n_in_one_poll():
    # n pressed 3 ms before y, both returned by one poll in the order y, n: n decides.
    assert first_press([("y", 50.004), ("n", 50.001)], 50.0, {"y", "n"}).name == "n"
    assert first_press([("n", 50.004), ("y", 50.001)], 50.0, {"y", "n"}).name == "y"
    # A y pressed before the question appeared is not an answer to it.
    assert first_press([("y", 49.9), ("n", 50.2)], 50.0, {"y", "n"}).name == "n"
