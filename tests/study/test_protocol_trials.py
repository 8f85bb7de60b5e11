"""Protocols (loading and every validation error) and the trial list (a pure function)."""

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.study.online.browser_keys import BROWSER_CODES
from sbir_study.study.protocol import Protocol, load_protocol, protocol_dict
from sbir_study.study.trials import build_trials
from tests.helpers import DATA

BROWSER_NAMES = frozenset(BROWSER_CODES.values())

PROTOCOLS = Path(__file__).parents[2] / "protocols"


@pytest.mark.parametrize("name", ["eitz2011", "pilot", "demo"])
def test_shipped_protocols_load(name):
    protocol = load_protocol(PROTOCOLS / f"{name}.toml")
    assert protocol.name == name
    assert protocol.scale == PAPER_SCALE


def test_the_replication_protocol_is_the_paper_design():
    protocol = load_protocol(PROTOCOLS / "eitz2011.toml")
    # Eitz et al. 2011, Sec. 2.3: 2 s stimulus, 1 s black, keys 1..7 with 1 = best,
    # anchoring before the main block and repeated in its later part, pauses, 80 cm.
    assert (protocol.timing.stimulus_s, protocol.timing.blank_s) == (2.0, 1.0)
    assert protocol.response.keys == tuple("1234567")
    assert protocol.anchoring.enabled and protocol.anchoring.repeat
    assert protocol.pauses.allowed
    assert protocol.display.distance_cm == 80.0
    assert protocol == Protocol(description=protocol.description)  # the file states the defaults
    pilot = load_protocol(PROTOCOLS / "pilot.toml")
    assert pilot.main_roles == ("candidate",) and not pilot.anchoring.enabled


@pytest.mark.parametrize(
    "text,fragments",
    [
        (
            "[timing]\nstimulus_sec = 2.0\n",
            ["unknown key 'timing.stimulus_sec'", "did you mean 'timing.stimulus_s'?"],
        ),
        ("nmae = 'x'\n", ["unknown key 'nmae'", "did you mean 'name'?"]),
        ("[timing]\nzzz = 1\n", ["unknown key 'timing.zzz'", "expected one of timing.stimulus_s"]),
        ("[timing]\nstimulus_s = 'two'\n", ["timing.stimulus_s: expected a number, got 'two'"]),
        (
            "[timing]\nblank_s = -1.0\n",
            ["timing.blank_s: expected a duration from 0.05 s to 60 s, got -1.0"],
        ),
        ("[timing]\nstimulus_s = 0\n", ["timing.stimulus_s: expected a duration from 0.05 s"]),
        (
            "[timing]\nstimulus_s = inf\n",
            ["timing.stimulus_s: expected a duration from 0.05 s to 60 s, got inf"],
        ),
        (
            "[timing]\nstimulus_s = 1e308\n",
            ["timing.stimulus_s: expected a duration from 0.05 s to 60 s, got 1e+308"],
        ),
        (
            "[timing]\nanchor_demo_s = nan\n",
            ["timing.anchor_demo_s: expected a duration from 0.05 s to 60 s, got nan"],
        ),
        ("[timing]\nblank_s = -inf\n", ["timing.blank_s: expected a duration", "got -inf"]),
        ("[timing]\nblank_s = 0.01\n", ["timing.blank_s: expected a duration from 0.05 s"]),
        (
            "[timing]\nframe_jitter_ms = inf\n",
            ["timing.frame_jitter_ms: expected a finite number in [0, 100]"],
        ),
        ("[timing]\nrefresh_range_hz = [50, inf]\n", ["timing.refresh_range_hz: expected"]),
        ("[timing]\nstimulus_s = true\n", ["timing.stimulus_s: expected a number, got True"]),
        (
            "[timing]\nrefresh_range_hz = [60]\n",
            [
                "timing.refresh_range_hz: expected [low, high] "
                "with 0 < low < high <= 1000 Hz, got [60]"
            ],
        ),
        (
            "[timing]\nrefresh_range_hz = [50, '60']\n",
            ["timing.refresh_range_hz[1]: expected a number, got '60'"],
        ),
        ("[timing]\nrefresh_range_hz = [60, 50]\n", ["0 < low < high"]),
        ("[response]\nkeys = ['1', '1']\n", ["response.keys: expected distinct keys"]),
        ("[response]\nkeys = ['1']\n", ["response.keys: expected 2 to 9 keys"]),
        ("[response]\nkeys = [1, 2]\n", ["response.keys[0]: expected a string, got 1"]),
        (
            "[response]\nkeys = ['1', '2', 'num_1']\n",
            ["response.keys: 'num_1' is already rating 1 (on the keypad); expected each key"],
        ),
        (
            "[response]\npause_key = '3'\n",
            ["response.pause_key: '3' is already rating 3; expected each key to have one job"],
        ),
        ("[response]\npause_key = 'num_3'\n", ["response.pause_key: 'num_3' is already rating 3"]),
        ("[response]\nquit_key = 'p'\n", ["response.quit_key: 'p' is already the pause key"]),
        (
            "[response]\nquit_key = 'space'\n",
            ["response.quit_key: 'space' is already the continue key"],
        ),
        ("[response]\nkeys = ['1', '2', 'space']\n", ["response.keys: 'space' is already"]),
        (
            "[response]\nquit_key = 'esc'\n",
            [
                "response.quit_key: 'esc' is not a key name the "
                "keyboard backend reports; did you mean 'escape'?"
            ],
        ),
        (
            "[response]\npause_key = 'P'\n",
            ["response.pause_key: 'P' is not a key name", "did you mean 'p'?"],
        ),
        (
            "[response]\nkeys = ['1', '2', 'numpad3']\n",
            ["response.keys[2]: 'numpad3' is not a key name", "did you mean 'num_3'?"],
        ),
        ("[response]\nkeys = ['1', '2', '']\n", ["response.keys[2]: '' is not a key name"]),
        ("[anchoring]\nenabled = 'yes'\n", ["anchoring.enabled: expected true or false"]),
        ("[anchoring]\nrepeat_from = 1.0\n", ["anchoring.repeat_from: expected a fraction"]),
        (
            "[online]\ndropout_after_s = inf\n",
            ["online.dropout_after_s: expected a number of seconds above 0, got inf"],
        ),
        ("[timing]\nstimulus_s = 1e400\n", ["timing.stimulus_s: expected a duration"]),
        # A whole number too large for a float (tomllib reads it whole).
        (
            f"[timing]\nstimulus_s = 1{'0' * 400}\n",
            ["timing.stimulus_s: expected a number, got 1000"],
        ),
        ("[dataset]\nname = ' '\n", ["dataset.name: expected a name for dataset_description.json"]),
        ("[pauses]\nbreak_every = 2.5\n", ["pauses.break_every: expected a whole number"]),
        ("[pauses]\nbreak_every = -1\n", ["pauses.break_every: expected 0 (no breaks)"]),
        (
            "[display]\ndistance_cm = 0\n",
            ["display.distance_cm: expected a finite number in (0, 10000]"],
        ),
        ("[display]\nwidth_cm = inf\n", ["display.width_cm: expected a finite number"]),
        ("[display]\nresolution = [0, 1200]\n", ["display.resolution: expected [width, height]"]),
        (
            "[participants]\ndetails = ['age', 'gender']\n",
            ["participants.details: expected a list of age, sex, handedness"],
        ),
        ("[participants]\ndetails = ['handednes']\n", ["did you mean 'handedness'?"]),
        (
            "[participants]\ndetails = ['age', 'age']\n",
            ["participants.details: expected each detail once"],
        ),
        ("[dataset]\nauthors = ['A. B', ' ']\n", ["dataset.authors: expected a list of names"]),
        (
            "[dataset]\nauthor = ['A. B']\n",
            ["unknown key 'dataset.author'", "did you mean 'dataset.authors'?"],
        ),
        ("[display]\nbackground = [0, 0, 2]\n", ["display.background: expected three numbers"]),
        ("timing = 3\n", ["timing: expected a table [timing]"]),
        ("task = 'my-task'\n", ["task: expected a BIDS label"]),
        ("main_roles = ['anchor']\n", ["main_roles: expected a list of main and/or candidate"]),
        ("[timing\n", ["not valid TOML"]),
    ],
)
def test_protocol_errors_name_the_key(tmp_path, text, fragments):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        load_protocol(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_every_key_name_the_backend_reports_is_accepted(tmp_path):
    from sbir_study.study.key_names import backend_key_names

    names = sorted(backend_key_names() - {"space", "p", "escape"})
    assert {"1", "num_1", "escape", "space", "return", "f1"} <= backend_key_names()
    for name in names:
        if name.removeprefix("num_") in "1234567" and name[-1].isdigit():
            continue  # a rating key already
        path = tmp_path / "ok.toml"
        path.write_text(f"[response]\npause_key = {name!r}\n")
        assert load_protocol(path).response.pause_key == name


# --- Which key names are checked where (protocols/README.md, [response]) ----------------------


def _pause_key(tmp_path, name):
    path = tmp_path / "keys.toml"
    path.write_text(f"[response]\npause_key = {name!r}\n")
    return path


def test_without_psychopy_protocols_load_and_served_keys_are_the_browsers(tmp_path, monkeypatch):
    # An install with the [online] extra alone: PsychoPy cannot be imported, and find_spec
    # says it is not there.
    monkeypatch.setitem(sys.modules, "psychopy", None)
    for path in sorted(PROTOCOLS.glob("*.toml")):
        assert load_protocol(path, online=True).name == path.stem
    # f13 is a macOS key of PsychoPy's that no browser key-down is named.
    path = _pause_key(tmp_path, "f13")
    assert load_protocol(path).response.pause_key == "f13"
    with pytest.raises(
        InputError,
        match=r"^\S+: response\.pause_key: 'f13' is not a key name a "
        r"browser sends \(sbir-study serve\); did you mean 'f3'\?",
    ):
        load_protocol(path, online=True)


def test_a_served_protocol_takes_only_names_both_keyboards_report(tmp_path, monkeypatch):
    import sbir_study.study.key_names as key_names

    # PsychoPy's table on macOS names f13 (protocols/README.md); the browser's does not.
    mac = BROWSER_NAMES | {"f13"}
    monkeypatch.setattr(key_names, "backend_key_names", lambda: mac)
    path = _pause_key(tmp_path, "f13")
    assert load_protocol(path).response.pause_key == "f13"  # the lab session on that Mac
    with pytest.raises(InputError, match="'f13' is not a key name a browser sends"):
        load_protocol(path, online=True)
    if importlib.util.find_spec("psychopy") is not None:
        with pytest.raises(InputError, match="'f20' is not a key name the keyboard backend"):
            load_protocol(_pause_key(tmp_path, "f20"), online=True)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or importlib.util.find_spec("psychopy") is None,
    reason="PsychoPy's Linux key table",
)
def test_a_browser_names_exactly_the_keys_psychopy_reports_on_linux():
    from sbir_study.study.key_names import backend_key_names, browser_key_names

    # protocols/README.md: a lab protocol on Linux can be served as it is, and back.
    assert browser_key_names() == BROWSER_NAMES == backend_key_names()


def test_a_rating_key_may_be_a_keypad_name_when_the_keypad_does_not_rate(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("[response]\nkeys = ['1', '2', 'num_1']\nkeypad = false\n")
    assert load_protocol(path).key_map == {"1": 1, "2": 2, "num_1": 3}


@pytest.mark.parametrize(
    "keys, best, scale",
    [
        ('["a", "s"]', "low", Scale(1, 2)),
        ('["a", "s", "d", "f", "g"]', "high", Scale(1, 5, "high")),
        ('["1", "2", "3", "4", "5", "6", "7", "8", "9"]', "low", Scale(1, 9)),
    ],
)
def test_the_keys_and_best_make_the_scale(tmp_path, keys, best, scale):
    path = tmp_path / "p.toml"
    path.write_text(f'[response]\nkeys = {keys}\nbest = "{best}"\n')
    assert load_protocol(path).scale == scale
    path.write_text('[response]\nbest = "top"\n')
    expected = r"response\.best: expected \"low\" or \"high\", got 'top'"
    with pytest.raises(InputError, match=expected):
        load_protocol(path)


def test_a_set_s_anchors_must_lie_on_the_protocol_s_scale(tmp_path):
    from sbir_study.stimuli import SetDesign, generate_set
    from sbir_study.study.trials import stimulus_set_for

    folder = generate_set(
        tmp_path / "set",
        SetDesign(sketches=2, images_per_sketch=3, anchor_sketches=1, width=64, height=64),
    )
    five = tmp_path / "five.toml"
    five.write_text('[response]\nkeys = ["1", "2", "3", "4", "5"]\n')
    with pytest.raises(
        InputError,
        match=r"prescribed rating 6 is not on the protocol's scale "
        r"1-5 \(5 keys\)",
    ):
        stimulus_set_for(folder, load_protocol(five))
    five.write_text('[response]\nkeys = ["1", "2", "3", "4", "5"]\n[anchoring]\nenabled = false\n')
    assert stimulus_set_for(folder, load_protocol(five)).folder == folder
    assert stimulus_set_for(folder, Protocol()).folder == folder


def test_anchors_made_for_another_scale_are_warned_about(tmp_path):
    import warnings

    from sbir_study.stimuli import SetDesign, generate_set
    from sbir_study.study.trials import AnchorScaleWarning, stimulus_set_for

    design = SetDesign(
        sketches=2, images_per_sketch=3, anchor_sketches=1, anchor_images=5, width=64, height=64
    )
    folder = generate_set(tmp_path / "set", design, scale=Scale(1, 5))
    path = tmp_path / "p.toml"

    def warned(keys: int, best: str = "low") -> list[str]:
        path.write_text(
            f'[response]\nkeys = {[str(k) for k in range(1, keys + 1)]}\nbest = "{best}"\n'
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert stimulus_set_for(folder, load_protocol(path)).folder == folder
        return [str(w.message) for w in caught if w.category is AnchorScaleWarning]

    assert warned(5) == []  # made for this scale
    # Anchors 1..5 lie on 1..7 but never show its worse end; the best end reversed.
    (seven,) = warned(7)
    assert "made for the scale 1-5 (generator.json: AnchorScale)" in seven and "is 1-7;" in seven
    (reversed_,) = warned(5, "high")
    assert "made for the scale 1-5" in reversed_ and "1-5:high-is-best" in reversed_
    # A set that does not say which scale it was made for: its ratings' range speaks.
    (folder / "generator.json").unlink()
    sums = folder / "SHA256SUMS"
    sums.write_text(
        "".join(
            line
            for line in sums.read_text().splitlines(keepends=True)
            if "generator.json" not in line
        )
    )
    (short,) = warned(7)
    assert "prescribed ratings run from 1 to 5, not from end to end of" in short
    assert warned(5) == []


def test_a_protocol_changed_in_code_is_checked_again():
    protocol = Protocol()
    longer = replace(protocol, timing=replace(protocol.timing, stimulus_s=3.0))
    assert (longer.timing.stimulus_s, protocol.timing.stimulus_s) == (3.0, 2.0)
    with pytest.raises(ValidationError, match=r"greater than or equal to 0\.05"):
        replace(protocol.timing, stimulus_s=0.0)
    with pytest.raises(ValidationError, match="'p' is already the pause key"):
        replace(protocol.response, quit_key="p")


def test_the_sidecar_records_the_shipped_protocols_as_it_always_did():
    # Written by the protocol loader before its tables were pydantic dataclasses; the
    # sidecar's "Protocol" object must stay the same, byte for byte.
    recorded = json.loads((DATA / "protocol_sidecars.json").read_text(encoding="utf-8"))
    assert sorted(recorded) == sorted(path.stem for path in PROTOCOLS.glob("*.toml"))
    for name, expected in recorded.items():
        now = protocol_dict(load_protocol(PROTOCOLS / f"{name}.toml"))
        assert json.dumps(now) == json.dumps(expected), name


def test_missing_protocol_file(tmp_path):
    with pytest.raises(InputError, match="no such file; expected a protocol"):
        load_protocol(tmp_path / "nowhere.toml")


# --- The trial list ----------------------------------------------------------------------------


def _manifest(sketches=5, images=8, anchor_sketches=3, anchor_images=7):
    rows = []
    for a in range(anchor_sketches):
        for r in range(anchor_images):
            rows.append((f"a{a}", f"a{a}_{r}", "anchor", str(r + 1)))
    for s in range(sketches):
        for i in range(images):
            rows.append((f"s{s}", f"s{s}_{i}", "main", ""))
    frame = pd.DataFrame(rows, columns=["sketch_id", "image_id", "role", "anchor_rating"])
    return frame.assign(sketch_path="x.png", image_path="y.png")


def _repeat_slots(block):
    """For each anchor repeat, how many main trials of the block come before it."""
    main = np.flatnonzero(block["phase"] == "main")
    return np.searchsorted(main, np.flatnonzero(block["phase"] == "anchor_repeat"))


def test_trial_list_follows_the_paper():
    manifest = _manifest()
    trials = build_trials(Protocol(), manifest, seed=42)
    assert trials["trial"].tolist() == list(range(1, len(trials) + 1))
    demo = trials[trials["phase"] == "anchor_demo"]
    # The anchoring phase comes first, sketch by sketch, from rating 1 to 7.
    assert demo.index.tolist() == list(range(21))
    assert demo["anchor_rating"].tolist() == list(range(1, 8)) * 3
    block = trials.iloc[21:]
    main = block[block["phase"] == "main"]
    # Each main pair exactly once.
    pairs = manifest[manifest["role"] == "main"]
    assert sorted(zip(main["sketch_id"], main["image_id"], strict=True)) == sorted(
        zip(pairs["sketch_id"], pairs["image_id"], strict=True)
    )
    assert main["anchor_rating"].isna().all()
    # Each anchor pair once more, only in the later half of the main block.
    repeats = block[block["phase"] == "anchor_repeat"]
    assert sorted(repeats["image_id"]) == sorted(demo["image_id"])
    position_in_main = _repeat_slots(block)
    assert (position_in_main >= 20).all()  # 40 main trials, repeat_from = 0.5
    # Random order: not the manifest's.
    assert main["image_id"].tolist() != pairs["image_id"].tolist()


def test_same_seed_same_order_other_seed_other_order():
    manifest = _manifest()
    first = build_trials(Protocol(), manifest, seed=7)
    pd.testing.assert_frame_equal(first, build_trials(Protocol(), manifest, seed=7))
    assert not first["image_id"].equals(build_trials(Protocol(), manifest, seed=8)["image_id"])


def test_repeats_spread_over_the_later_part():
    # Over many seeds, the repeats use the whole later part (and nothing before it).
    manifest = _manifest(sketches=2, images=10, anchor_sketches=1)
    positions = []
    for seed in range(200):
        block = build_trials(Protocol(), manifest, seed=seed).iloc[7:]
        positions.extend(_repeat_slots(block))
    assert min(positions) == 10 and max(positions) == 20


def test_pilot_protocol_rates_candidates_without_anchors(tmp_path):
    manifest = _manifest()
    manifest.loc[manifest["role"] == "main", "role"] = "candidate"
    pilot = load_protocol(PROTOCOLS / "pilot.toml")
    trials = build_trials(pilot, manifest, seed=1)
    assert set(trials["phase"]) == {"main"} and len(trials) == 40
    with pytest.raises(InputError, match="no pairs with role main; the protocol 'eitz2011'"):
        build_trials(Protocol(), manifest, seed=1)
    with pytest.raises(InputError, match="seed: expected a whole number >= 0"):
        build_trials(pilot, manifest, seed=-3)


# --- Any value: accepted exactly when it can be a study, else one line naming the key -------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sbir_study.study.key_names import backend_key_names  # noqa: E402
from sbir_study.study.protocol import DURATION_RANGE_S  # noqa: E402


def _toml_number(value: float) -> str:
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


FIXTURE_OK = [HealthCheck.function_scoped_fixture]  # tmp_path is only a place to write to


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    key=st.sampled_from(["stimulus_s", "blank_s", "anchor_demo_s"]),
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(0.0, 70.0),
        st.sampled_from([0.05, 60.0, 0.0499, 60.0001]),
    ),
)
def test_any_duration_is_accepted_only_in_range(tmp_path, key, value):
    path = tmp_path / "p.toml"
    path.write_text(f"[timing]\n{key} = {_toml_number(value)}\n")
    low, high = DURATION_RANGE_S
    if low <= value <= high:
        assert getattr(load_protocol(path).timing, key) == value
    else:
        with pytest.raises(
            InputError,
            match=rf"^{path}: timing\.{key}: expected a duration from "
            r"0\.05 s to 60 s, got .+$",
        ):
            load_protocol(path)


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    name=st.one_of(st.sampled_from(sorted(backend_key_names())), st.text(min_size=0, max_size=8))
)
def test_any_pause_key_name_is_a_backend_name_with_one_job(tmp_path, name):
    path = tmp_path / "p.toml"
    path.write_text(f"[response]\npause_key = {_toml_string(name)}\n")
    taken = {*Protocol().key_map, "space", "escape"}
    if name in backend_key_names() and name not in taken:
        assert load_protocol(path).response.pause_key == name
        return
    with pytest.raises(InputError) as error:
        load_protocol(path)
    message = str(error.value)
    # The default quit key taken as pause key: the quit key is the one that finds it taken.
    field = "quit_key" if name == "escape" else "pause_key"
    assert message.startswith(f"{path}: response.{field}: ") and "\n" not in message


def _toml_string(text: str) -> str:
    import json

    # A JSON string is a TOML basic string, once DEL (which JSON leaves raw) is escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")
