"""The words a participant reads: written from the protocol's settings, or the protocol's own."""

import re
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.study.protocol import load_protocol
from sbir_study.study.screens import instruction_texts, screens
from sbir_study.study.session.window import screen_texts
from sbir_study.study.texts import key_label, rating_keys_unnamed


def _protocol(tmp_path, text):
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        protocol = load_protocol(path)
    return protocol, [str(w.message) for w in caught]


def test_letter_keys_and_no_pauses_are_what_the_instructions_say(tmp_path):
    # Keys a,s,d,f,g, pause key b, pauses off, no [instructions]: the texts must not say
    # "Press a number key from 1 ... to 7 ... Press P to pause".
    protocol, caught = _protocol(
        tmp_path,
        '[response]\nkeys = ["a", "s", "d", "f", "g"]\n'
        'pause_key = "b"\n[pauses]\nallowed = false\n',
    )
    assert caught == []
    main = instruction_texts(protocol)["main"]
    assert "A, S, D, F, G" in main
    assert "A for the best match, G for the worst match" in main
    assert not re.search(r"number key|\b7\b|\bP\b|\bB\b|pause", main), main
    anchoring = instruction_texts(protocol)["anchoring"]
    assert "from 1 (best match) to 5 (worst match)" in anchoring


def test_timings_breaks_and_control_keys_are_what_the_instructions_say(tmp_path):
    settings = (
        "[timing]\nstimulus_s = 1.5\nblank_s = 0.5\nanchor_demo_s = 4.0\n[response]\n"
        'keys = ["1", "2", "3"]\npause_key = "b"\nquit_key = "q"\n[pauses]\n'
        "break_every = 40\n"
    )
    protocol, _ = _protocol(tmp_path, settings)
    texts = instruction_texts(protocol)
    assert "from 1 (best match) to 3 (worst match)" in texts["main"]
    assert "shown for 1.5 seconds, then the screen is black for 0.5 seconds" in texts["main"]
    assert "a break after every 40 pairs" in texts["main"]
    assert "Press B to pause" in texts["main"] and "Press Q to end" in texts["main"]
    assert "shown for 4 seconds" in texts["anchoring"]


def test_the_protocols_own_texts_are_shown_as_written(tmp_path):
    own = '[instructions]\nmain = "Drücke 1 bis 7."\nend = "Danke!"\n[texts]\n'
    protocol, caught = _protocol(tmp_path, own + 'quit_question = "Beenden? J/N"\n')
    assert caught == []
    shown = screen_texts(protocol)
    assert (shown["main"], shown["end"], shown["quit"]) == (
        "Drücke 1 bis 7.",
        "Danke!",
        "Beenden? J/N",
    )
    assert shown["pause"] == "Paused. Press space to continue."


@pytest.mark.parametrize(
    ("keys", "text", "warned"),
    [
        (["1", "2", "3"], "Press P to pause. Rate each pair.", True),
        (["1", "2", "3"], "Use the keys 1 to 3.", False),
        (["a", "s", "d"], "Press a number key from 1 to 7.", True),
        (["a", "s", "d"], "Press A for the best match.", False),
        (["a", "s", "d"], "Tasten: A, S, D.", False),
        (["a", "s", "d"], "Rate with a key.", True),
        (["num_1", "num_2"], "Press 1 or 2 on the keypad.", False),
        (["comma", "period"], "Use , and . to rate.", False),
        (["comma", "period"], "Use the arrows.", True),
    ],
)
def test_an_own_main_text_naming_no_rating_key_is_warned_about(tmp_path, keys, text, warned):
    protocol, caught = _protocol(
        tmp_path, f"[response]\nkeys = {keys!r}\n[instructions]\nmain = {text!r}\n"
    )
    unnamed = rating_keys_unnamed(protocol.instructions.main, protocol.response.keys)
    assert (unnamed is not None) == warned
    assert len(caught) == warned
    if warned:
        assert caught[0].startswith(f"{tmp_path / 'p.toml'}: instructions.main names none of")


def test_an_unknown_text_names_the_closest_one(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[texts]\nquit_questoin = "x"\n', encoding="utf-8")
    with pytest.raises(
        InputError,
        match=r"unknown key 'texts.quit_questoin' \(did you mean "
        r"'texts.quit_question'\?\)",
    ):
        load_protocol(path)


@pytest.mark.parametrize(
    ("key", "text", "loads"),
    [
        ("anchor_label", "Bewertung: {rating}", True),
        ("anchor_label", "Bewertung: {wert}", False),
        ("anchor_label", "Bewertung: {rating:>3}", False),
        ("anchor_label", "Bewertung {", False),
        ("anchor_label", "Bewertung {{x}}", True),
        ("loading", "Bilder werden geladen {code}", False),
        ("completion_code", "Ihr Code: {code}", True),
    ],
)
def test_a_placeholder_the_text_does_not_take_is_refused(tmp_path, key, text, loads):
    path = tmp_path / "p.toml"
    path.write_text(f"[texts]\n{key} = {text!r}\n", encoding="utf-8")
    if loads:
        assert getattr(load_protocol(path).texts, key) == text
    else:
        with pytest.raises(InputError, match=rf"p\.toml: texts\.{key}: expected a text with "):
            load_protocol(path)


class _Plain:
    """Formats only as itself: a format spec or a conversion (!r, !s, !a) raises."""

    def __format__(self, spec):
        if spec:
            raise ValueError(spec)
        return "3"

    def __repr__(self):
        raise ValueError("conversion")

    __str__ = __repr__


PIECES = ["{", "}", "{{", "}}", "rating", "code", "x", " ", ":>3", "!r", "!s", "{}", "{0}"]


@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_a_label_loads_exactly_when_str_format_fills_its_one_placeholder(text):
    # The oracle is Python's own str.format, given the one name the label may use.
    from sbir_study.study.texts import Texts

    try:
        text.format(rating=_Plain())
        fills = True
    except (KeyError, ValueError, IndexError):
        fills = False
    try:
        Texts(anchor_label=text)
        loaded = True
    except ValueError:
        loaded = False
    assert loaded == fills, text


def test_key_labels_are_as_printed_on_the_keys():
    assert [key_label(k) for k in ("a", "9", "num_4", "space", "return", "slash", "f12")] == [
        "A",
        "9",
        "4 on the keypad",
        "space",
        "Enter",
        "/",
        "F12",
    ]


def test_every_screen_is_listed_in_order(tmp_path):
    protocol, _ = _protocol(tmp_path, '[online]\ncompletion_code = "C0DE"\n')
    lab = [screen.when for screen in screens(protocol, "lab")]
    assert lab[:3] == [
        "details: age",
        "details: an age out of range, under the question",
        "details: sex",
    ]
    assert lab.index("before the anchoring phase") < lab.index("before the main block")
    assert lab[-1] == "the end"
    online = screens(protocol, "online")
    when = [screen.when for screen in online]
    consent = online[when.index("consent")]
    assert "[I agree] [I do not agree]" in consent.text
    # The id in the page's address is checked on the first screen, before consent.
    assert when.index("an id in the page's address that cannot be used") < when.index("consent")
    assert any(s.text == "Your completion code: C0DE" for s in online)
    assert not any("details" in s.when for s in screens(protocol, "online")[2:3])
