"""The answer keys of the quit question and the details form are the protocol's ([texts]).

The session reads a key through :func:`sbir_study.study.responses.first_press` over the keys
a screen accepts (``SessionWindow.answer``); these tests give the trial loop and the details
form a window whose presses are scripted and answered by that same function, so that what
is tested is which keys each screen accepts and what each one records.
"""

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from sbir_study.study.participants import MISSING
from sbir_study.study.protocol import Protocol, load_protocol
from sbir_study.study.responses import KeyEvent, first_press
from sbir_study.study.session.forms import ask_details
from sbir_study.study.session.loop import TrialLoop
from sbir_study.study.texts import ANSWER_KEYS, Texts

ROOT = Path(__file__).resolve().parents[2]
GERMAN = load_protocol(ROOT / "protocols" / "example_de.toml")


class _Stream:
    def __init__(self, presses):
        self.presses = [KeyEvent(t, name) for name, t in presses]
        self.controls = []

    def since(self, t):
        return [e for e in self.presses if e.t >= t]


class ScriptedWindow:
    """A session window whose participant presses ``presses`` ((key, time) in order)."""

    def __init__(self, presses):
        self.keys = _Stream(presses)
        self.offered: list[set[str]] = []
        self.now = 0.0
        self.core = self  # the clock: getTime

    def getTime(self):
        return self.now

    def answer(self, keys, shown):
        self.offered.append(set(keys))
        event = first_press(self.keys.since(shown), shown, keys)
        assert event is not None, f"no press of {sorted(keys)} after {shown}"
        self.now = event.t
        return event

    def show(self, kind):
        # Flipped just after the last answer: that press answered the screen before.
        self.now += 0.001
        return self.now

    message = show


def _quit(protocol, presses):
    window = ScriptedWindow(presses)
    loop = TrialLoop(window, protocol, pd.DataFrame({"phase": ["main"]}), "01")
    outcome, _ = loop._waiting_screens(["quit"], 0.0)
    return outcome, window.offered


def test_the_german_quit_question_is_answered_with_j_and_n():
    assert "J = beenden, N = weitermachen" in GERMAN.texts.quit_question
    # Y is no answer in German: the question waits on for J.
    assert _quit(GERMAN, [("y", 1.0), ("j", 2.0)]) == ("quit", [{"j", "n"}])
    assert _quit(GERMAN, [("y", 1.0), ("n", 2.0)])[0] == "go"
    # The English default is Y and N; J is no answer there.
    assert _quit(Protocol(), [("j", 1.0), ("y", 2.0)]) == ("quit", [{"y", "n"}])


def test_the_german_details_are_answered_with_its_keys():
    window = ScriptedWindow([("f", 1.0), ("w", 2.0), ("a", 3.0), ("b", 4.0)])
    answers = ask_details(window, ["sex", "handedness"], texts=GERMAN.texts, quit_key="escape")
    # Recorded as in every language (participants.tsv's levels F, M, O, R, L, A).
    assert answers == {"sex": "F", "handedness": "A"}
    assert window.offered == [{"w", "m", "d", "k", "escape"}, {"r", "l", "b", "k", "escape"}]
    window = ScriptedWindow([("n", 1.0), ("k", 2.0), ("escape", 3.0)])
    assert ask_details(window, ["sex", "handedness"], texts=GERMAN.texts, quit_key="escape") is None
    window = ScriptedWindow([("k", 1.0)])
    assert ask_details(window, ["handedness"], texts=GERMAN.texts, quit_key="escape") == {
        "handedness": MISSING
    }


FIELDS = sorted({field for fields in ANSWER_KEYS.values() for field in fields})


@given(st.lists(st.sampled_from("abcdjkmnrwy19"), min_size=len(FIELDS), max_size=len(FIELDS)))
def test_answer_keys_are_taken_exactly_when_each_question_has_distinct_keys(letters):
    keys = dict(zip(FIELDS, letters, strict=True))
    distinct = all(len({keys[f] for f in fields}) == len(fields) for fields in ANSWER_KEYS.values())
    if not distinct:
        with pytest.raises(ValidationError, match="expected each answer of"):
            Texts(**keys)
        return
    texts = Texts(**keys)
    window = ScriptedWindow([(keys["yes_key"], 1.0)])
    loop = TrialLoop(window, Protocol(texts=texts), pd.DataFrame({"phase": ["main"]}), "01")
    assert loop._waiting_screens(["quit"], 0.0)[0] == "quit"
    assert window.offered == [{keys["yes_key"], keys["no_key"]}]
    for name, field, recorded in (
        ("sex", "other_key", "O"),
        ("handedness", "left_key", "L"),
        ("sex", "not_say_key", MISSING),
    ):
        window = ScriptedWindow([(keys[field], 1.0)])
        assert ask_details(window, [name], texts=texts, quit_key="escape") == {name: recorded}


@pytest.mark.parametrize(
    ("settings", "refusal"),
    [
        ('[texts]\nyes_key = "J"\n', "texts.yes_key: expected a key name: one lowercase letter"),
        ('[texts]\nno_key = "escape"\n', "texts.no_key: expected a key name"),
        ('[texts]\nyes_key = "n"\n', "texts.no_key: 'n' is already yes_key"),
        ('[texts]\nleft_key = "r"\n', "texts.left_key: 'r' is already right_key"),
        (
            '[response]\nquit_key = "q"\n[texts]\nmale_key = "q"\n',
            "texts.male_key: 'q' is already the quit key",
        ),
    ],
)
def test_bad_answer_keys_are_refused_in_one_line(tmp_path, settings, refusal):
    from sbir_study.foundation.checks import InputError

    path = tmp_path / "p.toml"
    path.write_text(settings, encoding="utf-8")
    with pytest.raises(InputError, match=refusal.replace(".", r"\.")):
        load_protocol(path)
