"""The online window closes by the lab's rule: at the next screen the page actually showed.

The lab session scores a trial with ``score_trial(keys, onset, flipped, key_map)`` where
``flipped`` is the flip of the next screen (study/session/loop.py ``_close``); the server
scores a page's report with the same function, closing the window at the page's
``next_onset``, bounded to ``LATE_FLIP_MAX_S`` after the blank's nominal end. The reference
here is the lab's call itself, on generated press sequences around a blank that a stalled
page made longer (hypothesis), and the issue's case written out by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.study.online.scoring import LATE_FLIP_MAX_S, score_report, window_end
from sbir_study.study.protocol import Protocol
from sbir_study.study.responses import rating_key_map, score_trial

PROTOCOL = Protocol()  # the paper's timing: 2 s pair, 1 s blank; keys 1..7 and the keypad
STIMULUS_S, BLANK_S = PROTOCOL.timing.stimulus_s, PROTOCOL.timing.blank_s
KEY_MAP = rating_key_map(PROTOCOL.response.keys, keypad=PROTOCOL.response.keypad)
ORDER = [[1, "main", "s1", "i1", None, "s1.png", "i1.png"]]
# Browser key-downs (code, key) and the lab's name of each.
KEYS = {("Digit3", "3"): "3", ("Digit2", "2"): "2", ("Numpad5", "5"): "num_5",
        ("Digit7", "7"): "7", ("KeyP", "p"): "p", ("Space", " "): "space"}  # fmt: skip


def report(onset: float, next_onset: float, presses, rating) -> dict:
    """A page's report of trial 1: the pair from ``onset`` for 2 s, its blank until
    ``next_onset``, the key-downs ``presses`` as ((code, key), t)."""
    return {
        "sketch_id": "s1",
        "image_id": "i1",
        "onset": onset,
        "blank_onset": onset + STIMULUS_S,
        "next_onset": next_onset,
        "session_start": 0.0,
        "frames": [],
        "paused_before": 0.0,
        "events": [{"code": code, "key": key, "t": t} for (code, key), t in presses],
        "rating": rating,
    }


def lab(presses, onset: float, flipped: float):
    """What the lab session records when the next screen was flipped at ``flipped``."""
    return score_trial([(KEYS[k], t) for k, t in presses], onset, flipped, KEY_MAP)


def test_a_press_while_a_stalled_blank_is_still_visible_is_the_rating():
    # The case: the page stalled 300 ms, the blank stayed up; the participant pressed
    # 3 during the pair and 2 20 ms after the nominal end, while the blank was still visible.
    onset = 10.0
    nominal_end = onset + STIMULUS_S + BLANK_S
    presses = [(("Digit3", "3"), onset + 0.8), (("Digit2", "2"), nominal_end + 0.02)]
    record = score_report(report(onset, nominal_end + 0.3, presses, 2), 1, ORDER, PROTOCOL)
    assert (record.rating, record.n_presses, record.presses) == (2, 2, "3@0.8000 2@3.0200")
    assert record.blank_duration == pytest.approx(BLANK_S + 0.3)
    # Claiming the nominal end's rating (3) is refused: the key events give 2.
    with pytest.raises(InputError, match="the browser scored 3, the key events give 2"):
        score_report(report(onset, nominal_end + 0.3, presses, 3), 1, ORDER, PROTOCOL)
    # On time, the same press came with the next pair on screen: it is not this trial's.
    on_time = score_report(report(onset, nominal_end, presses, 3), 1, ORDER, PROTOCOL)
    assert (on_time.rating, on_time.n_presses) == (3, 1)


def test_a_page_cannot_hold_the_window_open():
    onset = 10.0
    bound = onset + STIMULUS_S + BLANK_S + LATE_FLIP_MAX_S
    presses = [(("Digit3", "3"), onset + 0.5), (("Digit7", "7"), bound), (("Digit2", "2"), 40.0)]
    record = score_report(report(onset, 60.0, presses, 3), 1, ORDER, PROTOCOL)
    assert (record.rating, record.n_presses) == (3, 1)
    assert record.blank_duration == pytest.approx(60.0 - onset - STIMULUS_S)  # as measured
    assert window_end(report(onset, 60.0, presses, 3), BLANK_S) == bound


times = st.floats(-0.6, 5.0, allow_nan=False).map(lambda t: round(t, 4))


@settings(max_examples=200, deadline=None)
@given(
    onset=st.floats(0.0, 1e4, allow_nan=False).map(lambda t: round(t, 3)),
    late=st.one_of(st.just(0.0), st.just(LATE_FLIP_MAX_S), st.floats(0.0, 3.0)),
    presses=st.lists(st.tuples(st.sampled_from(sorted(KEYS)), times), max_size=12),
    at_edges=st.lists(st.sampled_from(["next", "nominal", "bound"]), max_size=3),
)
def test_the_server_records_what_the_lab_would(onset, late, presses, at_edges):
    """Any press sequence around a blank the page showed ``late`` s longer than planned: the
    stored rating, rt and press list are the lab's for a flip at the page's next onset, up
    to the bound, and the bound's beyond it."""
    blank_onset = onset + STIMULUS_S
    next_onset = blank_onset + BLANK_S + late
    bound = blank_onset + BLANK_S + LATE_FLIP_MAX_S
    edges = {"next": next_onset, "nominal": blank_onset + BLANK_S, "bound": bound}
    presses = [(k, onset + t) for k, t in presses] + [(("Digit7", "7"), edges[e]) for e in at_edges]
    flipped = next_onset if next_onset <= bound else bound
    expected = lab(presses, onset, flipped)
    record = score_report(report(onset, next_onset, presses, expected.rating), 1, ORDER, PROTOCOL)
    assert record.rating == expected.rating
    assert record.rt == expected.rt
    assert record.n_presses == expected.n_presses
    assert record.blank_duration == next_onset - blank_onset
    if late <= LATE_FLIP_MAX_S:
        assert window_end(report(onset, next_onset, [], None), BLANK_S) == next_onset
