"""Protocol files: any bytes, and any value for any key, give a checked protocol or one message."""

import dataclasses
import importlib.util
import json
import math
import re
import tempfile
import typing
import warnings
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from sbir_study.foundation.checks import InputError
from sbir_study.study.participants import DETAILS
from sbir_study.study.protocol import (
    Instructions,
    Practice,
    Protocol,
    load_protocol,
    protocol_dict,
)
from sbir_study.study.screens import instruction_texts
from tests.helpers import ROOT, reads_or_refuses, table_bytes, toml_value


def _keys(cls, prefix=""):
    """Every (table, key) of the protocol, from its dataclasses."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[field.name]):
            yield from ((field.name, key) for _, key in _keys(hints[field.name]))
        else:
            yield (prefix, field.name)


KEYS = sorted(set(_keys(Protocol)))
TABLES = sorted({table for table, _ in KEYS} - {""})
#: Every name a message may give a setting by: "timing", "timing.stimulus_s", "name", ...
SETTINGS = {".".join(filter(None, key)) for key in KEYS} | set(TABLES)


# --- What protocols/README.md says each setting takes ------------------------------------------
# Written from the README's type column, not from the protocol module: a loaded protocol must
# hold only what the README promises.


def _number(low, high, *, low_open=False, high_open=False):
    def check(value):
        if not isinstance(value, float) or not math.isfinite(value):
            return False
        return (low < value if low_open else low <= value) and (
            value < high if high_open else value <= high
        )

    return check


def _whole(low, high=math.inf):
    return lambda value: type(value) is int and low <= value <= high


def _text(value):
    return type(value) is str


def _flag(value):
    return type(value) is bool


def _names(value):
    return type(value) is tuple and all(type(v) is str and v.strip() for v in value)


def _refresh_range(value):
    return (
        type(value) is tuple
        and len(value) == 2
        and all(_number(0, 1000, low_open=True)(v) for v in value)
        and value[0] < value[1]
    )


def _rating_keys(value):
    return type(value) is tuple and 2 <= len(value) <= 9 and len(set(value)) == len(value)


def _pairs(value):
    """Distinct [sketch_id, image_id] pairs of ids of letters, digits and ._- (docs/formats.md)."""
    ids = r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}"
    return (
        type(value) is tuple
        and len(set(value)) == len(value)
        and all(
            type(pair) is tuple and len(pair) == 2 and all(re.fullmatch(ids, i) for i in pair)
            for pair in value
        )
    )


def _catch_pairs(value):
    """[[catch]] tables: distinct pairs of ids, each with "LOW-HIGH" or one rating, 1 <= LOW <=
    HIGH <= the number of rating keys (7 by default)."""
    if type(value) is not tuple or not all(dataclasses.is_dataclass(p) for p in value):
        return False
    pairs = [(p.sketch_id, p.image_id) for p in value]
    spans = [re.fullmatch(r"\s*([0-9])\s*(?:-\s*([0-9])\s*)?", p.ratings) for p in value]
    return _pairs(tuple(pairs)) and all(
        s and 1 <= int(s[1]) <= int(s[2] or s[1]) <= 7 for s in spans
    )


def _placeholders(allowed):
    """A string whose braces are {{, }} or one of the row's placeholders (README, [texts])."""

    def check(value):
        if not _text(value):
            return False
        rest = value.replace("{{", "").replace("}}", "")
        used = re.findall(r"\{(\w*)\}", rest)
        return (
            set(used) <= set(allowed)
            and "{" not in re.sub(r"\{\w+\}", "", rest)
            and ("}" not in re.sub(r"\{\w+\}", "", rest))
        )

    return check


# The placeholders the README's [texts] rows name.
PLACEHOLDERS = {
    "anchor_label": ["rating"],
    "age_retry": ["low", "high"],
    "scale_reminder": ["best_key", "worst_key", "best_rating", "worst_rating"],
    "window_too_small": ["min_width", "min_height", "width", "height"],
    "completion_code": ["code"],
    "went_wrong": ["error"],
    "trials_not_stored": ["trials"],
    "bad_participant_id": ["max_length"],
}
# The README's [texts] rows of answer keys.
ANSWER_KEYS = """yes_key no_key female_key male_key other_key right_key left_key ambidextrous_key
    not_say_key""".split()
_duration = _number(0.05, 60)
# The rows of the README's [texts] table (the language tag aside): each a string.
TEXTS = """quit_question anchor_label scale_reminder age_question age_retry sex_question
    handedness_question page_title consent_title agree disagree declined details_title
    details_note age sex female
    male other handedness right left ambidextrous prefer_not_to_say continue_button fullscreen
    fullscreen_button window_too_small cannot_enlarge needs_keyboard screen_too_small loading
    loading_failed welcome_back saving completion_code completion_redirect completion_link
    complete_ended close_window quit_ended session_ended timed_out_ended could_not_start
    went_wrong trials_not_stored bad_participant_id already_started study_full
    too_many_starts not_this_study settings_failed
    needs_javascript""".split()
DOCUMENTED = {
    ("", "name"): _text,
    ("", "task"): lambda v: _text(v) and re.fullmatch(r"[A-Za-z0-9]+", v) is not None,
    ("", "description"): _text,
    ("", "main_roles"): lambda v: type(v) is tuple and v and set(v) <= {"main", "candidate"},
    ("timing", "stimulus_s"): _duration,
    ("timing", "blank_s"): _duration,
    ("timing", "anchor_demo_s"): _duration,
    ("timing", "frame_jitter_ms"): _number(0, 100),
    ("timing", "refresh_range_hz"): _refresh_range,
    ("response", "keys"): _rating_keys,
    ("response", "best"): lambda value: value in ("low", "high"),
    ("response", "keypad"): _flag,
    ("response", "pause_key"): _text,
    ("response", "quit_key"): _text,
    ("anchoring", "enabled"): _flag,
    ("anchoring", "repeat"): _flag,
    ("anchoring", "repeat_from"): _number(0, 1, high_open=True),
    ("practice", "pairs"): _pairs,
    ("", "catch"): _catch_pairs,
    ("pauses", "allowed"): _flag,
    ("pauses", "break_every"): _whole(0),
    ("participants", "details"): lambda v: (
        type(v) is tuple and set(v) <= {"age", "sex", "handedness"} and len(set(v)) == len(v)
    ),
    ("dataset", "name"): lambda v: _text(v) and bool(v.strip()),
    ("dataset", "authors"): _names,
    ("display", "fullscreen"): _flag,
    ("display", "resolution"): lambda v: (
        type(v) is tuple and len(v) == 2 and all(_whole(1, 32768)(n) for n in v)
    ),
    ("display", "width_cm"): _number(0, 1000, low_open=True),
    ("display", "distance_cm"): _number(0, 10000, low_open=True),
    ("display", "stimulus_deg"): _number(0, 90, low_open=True),
    ("display", "gap_deg"): _number(0, 90),
    ("display", "background"): lambda v: (
        type(v) is tuple and len(v) == 3 and all(_number(-1, 1)(c) for c in v)
    ),
    ("display", "scale_reminder"): _flag,
    # Left out: written from the settings when shown.
    ("instructions", "practice"): lambda v: v is None or _text(v),
    ("instructions", "anchoring"): lambda v: v is None or _text(v),
    ("instructions", "main"): lambda v: v is None or _text(v),
    ("instructions", "pause"): lambda v: v is None or _text(v),
    ("instructions", "end"): lambda v: v is None or _text(v),
    ("online", "subset"): lambda v: v in ("all", "sketches", "pairs"),
    ("online", "lists"): _whole(1),
    ("online", "list_seed"): _whole(0),
    ("online", "stimulus_px"): _whole(0, 4096),
    ("online", "consent"): _text,
    ("online", "details"): _flag,
    # Each ending's code and address: up to 64 of [A-Za-z0-9_-]; "" or http(s):// without spaces.
    **{
        ("online", f"{ending}_code"): lambda v: (
            _text(v) and re.fullmatch(r"[A-Za-z0-9_-]{0,64}", v) is not None
        )
        for ending in ("completion", "no_consent", "quit", "timed_out")
    },
    **{
        ("online", f"{ending}_url"): lambda v: (
            _text(v) and (v == "" or (v.startswith(("http://", "https://")) and " " not in v))
        )
        for ending in ("completion", "no_consent", "quit", "timed_out")
    },
    ("online", "dropout_after_s"): _number(0, math.inf, low_open=True),
    ("online", "raters_per_list"): _whole(0),
    ("online", "max_sessions"): _whole(0),
    ("online", "starts_per_minute"): _whole(0),
    ("online", "platform"): lambda v: v in ("", "prolific"),
    ("online", "platform_study_id"): lambda v: _text(v) and len(v) <= 64,
    ("texts", "language"): lambda v: _text(v) and re.fullmatch(r"[A-Za-z]{2,3}(-\w{1,8})*", v),
    **{("texts", name): _placeholders(PLACEHOLDERS.get(name, ())) for name in TEXTS},
    # The answer keys: one lowercase letter or digit each (distinct within a question).
    **{
        ("texts", name): lambda v: _text(v) and re.fullmatch(r"[a-z0-9]", v) is not None
        for name in ANSWER_KEYS
    },
}


def _within_documented_bounds(protocol):
    for table, key in KEYS:
        value = getattr(getattr(protocol, table) if table else protocol, key)
        assert DOCUMENTED[table, key](value), (table, key, value)
    online = protocol.online
    assert online.subset != "all" or online.lists == 1
    assert not online.platform or online.platform_study_id
    response = protocol.response
    keys = [*protocol.key_map, response.pause_key, response.quit_key, "space"]
    assert len(set(keys)) == len(keys), keys  # each key one job
    if importlib.util.find_spec("psychopy") is not None:
        from sbir_study.study.key_names import backend_key_names

        assert set(keys) <= backend_key_names()


def test_every_setting_is_documented():
    assert sorted(DOCUMENTED) == KEYS
    # ... in the protocol's own fields ...
    for table in ["", *TABLES]:
        cls = type(getattr(Protocol(), table)) if table else Protocol
        for name, info in cls.__pydantic_fields__.items():
            assert info.description and info.description.strip(), (table, name)
    # ... and in protocols/README.md: one section per table, one row per key.
    readme = (ROOT / "protocols" / "README.md").read_text(encoding="utf-8")
    rows: dict[str, set[str]] = {}
    section = None
    for line in readme.splitlines():
        if line.startswith("## "):
            heading = re.fullmatch(r"## `\[(\w+)\]`", line)
            section = heading.group(1) if heading else ("" if line == "## Top level" else None)
        elif section is not None and (row := re.match(r"\| `(\w+)` \|", line)):
            rows.setdefault(section, set()).add(row.group(1))
    documented = {(table, key) for table, keys in rows.items() for key in keys}
    assert documented == set(KEYS)


def test_the_defaults_are_a_valid_protocol_and_the_sidecar_reads_back():
    # The sidecar's dictionary, validated again, is the protocol it came from.
    adapter = TypeAdapter(Protocol)
    for protocol in [Protocol(), *map(load_protocol, sorted((ROOT / "protocols").glob("*.toml")))]:
        _within_documented_bounds(protocol)
        assert adapter.validate_python(protocol_dict(protocol)) == protocol
        assert adapter.validate_python(json.loads(json.dumps(protocol_dict(protocol)))) == protocol


# --- Any document of the real keys with any values ---------------------------------------------

WORDS = [
    "",
    " ",
    "1",
    "7",
    "num_3",
    "p",
    "P",
    "escape",
    "esc",
    "space",
    "return",
    "f13",
    "age",
    "sex",
    "handedness",
    "gender",
    "main",
    "candidate",
    "anchor",
    "all",
    "sketches",
    "pairs",
    "sbirtest",
    "my-task",
    "A. B",
    "C0DE-1",
    "https://example.org/done?cc=1",
    "ftp://x",
    "https://a b",
]
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-3, 5000),
    st.integers(-(2**70), 2**70),
    st.floats(-2.0, 1100.0),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=8),
    st.dates(),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=10),
    st.dictionaries(st.sampled_from(["a", "stimulus_s"]), SCALARS, max_size=2),
)


def _plausible(default):
    """Values of the default's type, near and across the documented bounds."""
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, float):
        return st.one_of(
            st.floats(-1.5, 1.5),
            st.floats(0.0, 100.0),
            st.floats(-1.0, 1100.0),
            st.integers(-1, 100),
        )
    if isinstance(default, int):
        return st.one_of(st.integers(-2, 10), st.integers(-2, 5000))
    if isinstance(default, str):
        return st.one_of(st.sampled_from(WORDS), st.just(default))
    element = _plausible(default[0]) if default else st.sampled_from(WORDS)
    size = len(default)
    return st.one_of(
        st.lists(element, min_size=size, max_size=size),
        st.lists(element, min_size=max(0, size - 1), max_size=size + 1),
    )


# The defaults with the instruction texts as written from the settings (left out, they are None);
# the practice text as written for a protocol that has practice pairs.
_WRITTEN = dataclasses.replace(
    Protocol(),
    instructions=Instructions(
        **instruction_texts(Protocol(practice=Practice(pairs=(("s1", "s1_i01"),))))
    ),
)


@st.composite
def documents(draw):
    """(TOML text, {(table, key): value}) over the protocol's real keys."""
    chosen = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=8))
    defaults = _WRITTEN
    given = {}
    for table, key in chosen:
        default = getattr(getattr(defaults, table) if table else defaults, key)
        # Half the keys keep a valid value, so that whole documents load often enough.
        kind = draw(st.sampled_from(["default", "default", "plausible", "any"]))
        if kind == "default":
            given[table, key] = list(default) if isinstance(default, tuple) else default
        else:
            given[table, key] = draw(_plausible(default) if kind == "plausible" else VALUES)
    tables: dict[str, list[str]] = {}
    for (table, key), value in given.items():
        tables.setdefault(table, []).append(f"{key} = {toml_value(value)}")
    text = "".join(line + "\n" for line in tables.pop("", []))
    text += "".join(
        f"[{table}]\n" + "".join(f"{line}\n" for line in lines) for table, lines in tables.items()
    )
    return text, given


def _load_or_message(path):
    """The protocol, or the one-line refusal (any other exception fails the test)."""
    try:
        with warnings.catch_warnings():  # a main text naming no rating key loads, with a warning
            warnings.simplefilter("ignore")
            return load_protocol(path), None
    except InputError as error:
        return None, str(error)


def _as_loaded(value):
    """A TOML value as the protocol holds it: arrays as tuples, whole numbers of a number
    setting as floats (compared by value)."""
    return tuple(value) if isinstance(value, list) else value


@settings(max_examples=400, deadline=None)
@given(document=documents())
def test_any_document_of_real_keys_loads_within_bounds_or_names_a_setting(document):
    text, given_values = document
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.toml"
        path.write_text(text, encoding="utf-8")
        protocol, message = _load_or_message(path)
    event("loaded" if protocol is not None else "refused")
    if protocol is not None:
        _within_documented_bounds(protocol)
        for (table, key), value in given_values.items():
            loaded = getattr(getattr(protocol, table) if table else protocol, key)
            assert loaded == _as_loaded(value), (table, key, loaded, value)
        return
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    named = re.match(
        r"([\w.]+)(?:\[\d+\])?: expected |([\w.]+)(?:\[\d+\])?: '", message[len(f"{path}: ") :]
    )
    assert named, message
    setting = named.group(1) or named.group(2)
    assert setting in SETTINGS, message
    # The setting named is one given, or the table of one given (a key given two jobs is
    # named where the second job is claimed).
    given_names = {".".join(filter(None, key)) for key in given_values}
    assert setting in given_names or setting.split(".")[0] in {t for t, _ in given_values}, message


# --- One setting at a time: loaded exactly when the README says it may be ----------------------

_REFUSED = object()


def _converted(default, value):
    """``value`` as a protocol would hold it in place of ``default``, or _REFUSED when a TOML
    value of that type is not what the setting takes (a number is never read from text)."""
    if isinstance(default, tuple):
        if type(value) is not list:
            return _REFUSED
        like = default[0] if default else ""
        items = tuple(_converted(like, item) for item in value)
        return _REFUSED if _REFUSED in items else items
    if type(default) is float and type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return _REFUSED
    return value if type(value) is type(default) else _REFUSED


def _one_job_each(response) -> bool:
    """Rating keys (and their keypad twins), pause, quit and space: each key once, and each a
    name the keyboard backend reports (when PsychoPy is installed)."""
    keys = response["keys"]
    twins = [f"num_{k}" for k in keys if response["keypad"] and k.isdigit()]
    claimed = ["space", *keys, *twins, response["pause_key"], response["quit_key"]]
    if importlib.util.find_spec("psychopy") is not None:
        from sbir_study.study.key_names import backend_key_names

        named = [*keys, response["pause_key"], response["quit_key"]]
        if not set(named) <= backend_key_names():
            return False
    return len(set(claimed)) == len(claimed)


def _should_load(table, key, value) -> bool:
    default = getattr(getattr(_WRITTEN, table) if table else _WRITTEN, key)
    converted = _converted(default, value)
    if converted is _REFUSED or not DOCUMENTED[table, key](converted):
        return False
    # The rules between settings, every other setting at its default (protocols/README.md).
    if (table, key) == ("online", "lists"):
        return converted == 1  # with subset "all"
    if table == "response":
        defaults = {
            "keys": tuple("1234567"),
            "keypad": True,
            "pause_key": "p",
            "quit_key": "escape",
        }
        # The details form's answer keys (its sex question's m and f by default) are not
        # the quit key either (protocols/README.md, "[texts]").
        answers = {
            getattr(_WRITTEN.texts, field)
            for name in _WRITTEN.participants.details
            for field in DETAILS[name].keys or ()
        }
        if key == "quit_key" and converted in answers:
            return False
        return _one_job_each(defaults | {key: converted})
    return True


def _as_text(value):
    """A value written as text: a number or a flag in quotes must still be refused."""
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    return json.dumps(value) if isinstance(value, bool | int | float) else value


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize(("table", "key"), KEYS)
def test_one_setting_loads_exactly_when_the_readme_allows_it(table, key, data):
    default = getattr(getattr(_WRITTEN, table) if table else _WRITTEN, key)
    value = data.draw(st.one_of(_plausible(default), _plausible(default).map(_as_text), VALUES))
    text = f"{key} = {toml_value(value)}\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.toml"
        path.write_text(f"[{table}]\n{text}" if table else text, encoding="utf-8")
        protocol, message = _load_or_message(path)
    assert (protocol is not None) == _should_load(table, key, value), (value, message)
    if protocol is not None:
        loaded = getattr(getattr(protocol, table) if table else protocol, key)
        assert loaded == _converted(default, value)
        assert type(loaded) is type(default)
    else:
        setting = ".".join(filter(None, (table, key)))
        where = f"{path}: {setting}"
        named_here = message.startswith((f"{where}: ", f"{where}["))
        # A pause key taken by the default quit key is named at the quit key, and so on; a
        # quit key taken by an answer key of the details form, at that answer key.
        assert (
            named_here
            or (table == "response" and message.startswith(f"{path}: response."))
            or (key == "quit_key" and message.startswith(f"{path}: texts."))
        ), message


@settings(max_examples=100, deadline=None)
@given(
    document=documents(),
    unknown=st.sampled_from(
        [
            "stimulus = 2\n",
            "[timing]\nstimuls_s = 2\n",
            "[extra]\n",
            "[dataset]\nauthor = []\n",
            "[timing.deeper]\n",
        ]
    ),
)
def test_an_unknown_key_is_named_with_the_closest_real_one(document, unknown):
    text, _ = document
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.toml"
        path.write_text(unknown + text if unknown.startswith("stimulus") else text + unknown)
        protocol, message = _load_or_message(path)
    assert protocol is None
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    found = re.search(r"unknown key '([\w.]+)'(?: \(did you mean '([\w.]+)'\?\))?", message)
    if found:
        assert found.group(1) not in SETTINGS
        assert found.group(2) is None or found.group(2) in SETTINGS
    else:  # another problem came first, or the document declares the table twice
        rest = message[len(f"{path}: ") :]
        assert rest.startswith("not valid TOML (") or re.match(r"[\w.]+(\[\d+\])?: ", rest), message


@settings(max_examples=100, deadline=3000)
@given(
    content=table_bytes(
        ["[timing]", "stimulus_s", "=", "2.0", "[response]", "keys"], separators=(" ", "")
    )
)
def test_any_bytes_as_a_protocol(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.toml"
        path.write_bytes(content)
        reads_or_refuses(load_protocol, path)


def test_the_shipped_protocols_load():
    for path in sorted((ROOT / "protocols").glob("*.toml")):
        assert load_protocol(path).name
