"""The practice block: pairs named in the protocol, rated first, recorded, never analysed.

From the protocol ([practice] pairs) through the trial list, the screens and the
simulated participant, to a real session in a PsychoPy window under Xvfb, and the
analysis, whose every output a practice rating must leave as it was.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation.checks import InputError
from sbir_study.study.protocol import (
    Anchoring,
    Instructions,
    Pauses,
    Practice,
    Protocol,
    load_protocol,
)
from sbir_study.study.screens import instruction_texts, screens
from sbir_study.study.session.loop import TrialLoop
from sbir_study.study.texts import PRACTICE_NOTE
from sbir_study.study.trials import build_trials
from tests.helpers import DATA, PNG, snapshot
from tests.study.session_harness import beh_file, start_session


def _manifest(sketches=3, images=6, anchor_images=3):
    rows = [("a", f"a_{r}", "anchor", str(r + 1)) for r in range(anchor_images)]
    rows += [(f"s{s}", f"s{s}_{i}", "main", "") for s in range(sketches) for i in range(images)]
    frame = pd.DataFrame(rows, columns=["sketch_id", "image_id", "role", "anchor_rating"])
    return frame.assign(sketch_path="x.png", image_path="y.png")


def _with_practice(pairs, **tables) -> Protocol:
    return Protocol(practice=Practice(pairs=tuple(pairs)), **tables)


# --- The protocol ------------------------------------------------------------------------------


def test_the_pairs_load_in_their_order(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[practice]\npairs = [["s1", "s1_i03"], ["a.b", "x-1_2"]]\n')
    assert load_protocol(path).practice.pairs == (("s1", "s1_i03"), ("a.b", "x-1_2"))
    assert Protocol().practice.pairs == ()  # none by default: the paper had none


@pytest.mark.parametrize(
    "pairs,message",
    [
        (
            '[["s1", "i1"], ["s1", "i1"]]',
            "practice.pairs: expected each pair once, got ['s1', 'i1'] twice",
        ),
        ('[["s1", "i 1"]]', "practice.pairs: expected a list of [sketch_id, image_id] pairs"),
        ('[["s1"]]', "practice.pairs: expected a list of [sketch_id, image_id] pairs"),
        ('[["s1", "i1", "i2"]]', "practice.pairs: expected a list of [sketch_id, image_id]"),
        ('["s1", "i1"]', "practice.pairs[0]: expected a list, got 's1'"),
        ('[[".s", "i1"]]', "practice.pairs: expected a list of [sketch_id, image_id] pairs"),
        ("3", "practice.pairs: expected a list, got 3"),
    ],
)
def test_bad_pairs_are_refused_naming_the_setting(tmp_path, pairs, message):
    path = tmp_path / "p.toml"
    path.write_text(f"[practice]\npairs = {pairs}\n")
    with pytest.raises(InputError) as error:
        load_protocol(path)
    assert str(error.value).startswith(f"{path}: {message}")
    assert "\n" not in str(error.value)


# --- The trial list ----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**63 - 1), anchoring=st.booleans())
def test_practice_pairs_come_first_in_order_and_change_nothing_after_them(data, seed, anchoring):
    manifest = _manifest()
    pairs = list(zip(manifest["sketch_id"], manifest["image_id"], strict=True))
    chosen = data.draw(st.lists(st.sampled_from(pairs), unique=True, min_size=1, max_size=6))
    plain = Protocol(anchoring=Anchoring(enabled=anchoring, repeat=anchoring))
    protocol = _with_practice(chosen, anchoring=plain.anchoring)
    without = build_trials(plain, manifest, seed)
    trials = build_trials(protocol, manifest, seed, practice=True)
    n = len(chosen)
    first = trials.iloc[:n]
    assert first[["sketch_id", "image_id"]].apply(tuple, axis=1).tolist() == chosen
    assert (first["phase"] == "practice").all() and first["anchor_rating"].isna().all()
    assert trials["trial"].tolist() == list(range(1, len(without) + n + 1))
    rest = trials.iloc[n:].reset_index(drop=True).assign(trial=without["trial"])
    pd.testing.assert_frame_equal(rest, without)
    # The online page has no practice block: its trial list leaves them out.
    pd.testing.assert_frame_equal(build_trials(protocol, manifest, seed), without)


def test_a_pair_the_set_does_not_hold_is_refused_before_any_window():
    protocol = _with_practice([("s0", "s0_1"), ("s0", "s0_99")])
    with pytest.raises(
        InputError,
        match=r"^practice.pairs\[1\]: the stimulus set has no pair "
        r"s0/s0_99; expected pairs of its manifest",
    ):
        build_trials(protocol, _manifest(), 1, practice=True)


# --- The screens and the loop's waiting screens -------------------------------------------------


def test_the_practice_instructions_come_first_with_the_main_text_under_the_note():
    protocol = _with_practice([("s0", "s0_1")])
    texts = instruction_texts(protocol)
    assert next(iter(texts)) == "practice"
    assert texts["practice"] == f"{PRACTICE_NOTE}\n\n{texts['main']}"
    assert "practice" not in instruction_texts(Protocol())
    own = _with_practice([("s0", "s0_1")], instructions=Instructions(practice="Übung", main="M 1"))
    assert instruction_texts(own)["practice"] == "Übung"
    own_main = _with_practice([("s0", "s0_1")], instructions=Instructions(main="Keys 1 to 7"))
    assert instruction_texts(own_main)["practice"] == f"{PRACTICE_NOTE}\n\nKeys 1 to 7"
    lab = [screen.when for screen in screens(protocol, "lab")]
    assert lab.index("before the practice pairs") + 1 == lab.index("before the anchoring phase")
    assert "before the practice pairs" not in [s.when for s in screens(protocol, "online")]


def _waiting_screens(protocol, trials):
    """The waiting screens the loop schedules after each trial, as it counts main trials."""
    loop = TrialLoop(SimpleNamespace(keys=None), protocol, trials, "01")
    after, main_done = [], 0
    for index, phase in enumerate(trials["phase"]):
        main_done += phase in ("main", "anchor_repeat")
        after.append(loop._scheduled(index, main_done))
    return after


def test_the_instructions_follow_the_practice_and_breaks_do_not_count_it():
    manifest = _manifest(sketches=1, images=4)
    protocol = _with_practice([("s0", "s0_3"), ("a", "a_0")], pauses=Pauses(break_every=2))
    trials = build_trials(protocol, manifest, 3, practice=True)
    phases = trials["phase"].tolist()
    assert phases[:5] == ["practice", "practice", "anchor_demo", "anchor_demo", "anchor_demo"]
    after = _waiting_screens(protocol, trials)
    assert after[:5] == [[], ["anchoring"], [], [], ["main"]]
    # A break after every 2 trials of the main block (4 main, 3 repeats): trials 2, 4, 6 of it.
    block = after[5:]
    assert [k for k, screens_after in enumerate(block, 1) if "pause" in screens_after] == [2, 4, 6]
    assert block[-1] == ["end"]
    no_anchoring = _with_practice([("s0", "s0_3")], anchoring=Anchoring(enabled=False))
    trials = build_trials(no_anchoring, manifest, 3, practice=True)
    assert _waiting_screens(no_anchoring, trials)[0] == ["main"]


def test_the_simulated_participant_answers_the_rest_as_without_practice(small_set):
    from sbir_study.stimuli import load_set
    from sbir_study.study.session.simulated import simulated_answers

    stimulus_set = load_set(small_set)
    manifest = stimulus_set.manifest
    main = manifest[manifest["role"] == "main"]
    protocol = _with_practice(list(zip(main["sketch_id"], main["image_id"], strict=True))[:3])
    without = build_trials(Protocol(), manifest, 11)
    trials = build_trials(protocol, manifest, 11, practice=True)
    answers = simulated_answers(protocol, stimulus_set, trials, 11)
    expected = simulated_answers(Protocol(), stimulus_set, without, 11)
    assert len(answers) == len(trials)
    assert answers["rating"].iloc[:3].notna().any()  # the practice pairs are answered
    pd.testing.assert_frame_equal(answers.iloc[3:].reset_index(drop=True), expected)


# --- The analysis ------------------------------------------------------------------------------


def test_a_practice_rating_changes_no_output(tmp_path):
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, validate_ratings

    table = pd.read_csv(DATA / "ratings_small.csv", dtype=str, keep_default_na=False)
    # Each participant first rates three pairs as practice, against the grain: one pair
    # they rate again in the main block, worst where they rate it well, one best, one
    # never rated in the study (a pair of its own) and missed.
    practice = []
    for participant in table["participant"].unique():
        practice += [
            (participant, "s1", "s1_i01", "practice", "7", "0.5", "n/a", "1"),
            (participant, "s2", "s2_i03", "practice", "1", "0.6", "n/a", "2"),
            (participant, "p0", "p0_i0", "practice", "n/a", "n/a", "n/a", "3"),
        ]
    shifted = table.assign(trial=(table["trial"].astype(int) + 3).astype(str))
    with_practice = pd.concat(
        [pd.DataFrame(practice, columns=table.columns), shifted], ignore_index=True
    )
    options = AnalysisOptions(bootstrap=20, permutations=20)
    written = {}
    for name, frame in (("plain", table), ("practice", with_practice)):
        ratings = validate_ratings(frame)
        # The figures as PNG: drawn from the same numbers, the same PNG bytes.
        analyze_ratings(ratings, tmp_path / name, options, figure_formats=PNG)
        written[name] = snapshot(tmp_path / name)
        del written[name][".sbir-study-output.json"]  # what wrote the folder, and when
    assert (validate_ratings(with_practice)["phase"] == "practice").sum() == 24
    assert sorted(written["plain"]) == sorted(written["practice"])
    differing = [
        path for path in written["plain"] if written["plain"][path] != written["practice"][path]
    ]
    # Every table, figure, the summary and the report, byte for byte.
    assert differing == [], differing
    summary = json.loads((tmp_path / "practice" / "summary.json").read_text())
    assert "practice" not in summary["phases"]
    distribution = pd.read_csv(tmp_path / "practice" / "rating_distribution.csv")
    assert "practice" not in set(distribution["phase"])


# --- A real session under Xvfb -----------------------------------------------------------------

TASK = "sbirpractice"


def test_a_session_with_practice_in_a_real_window(display, tmp_path):
    from sbir_study.analysis import load_ratings
    from sbir_study.stimuli import SetDesign, generate_set, load_set

    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=2, images_per_sketch=3, anchor_sketches=1, width=96, height=72),
        seed=5,
    )
    manifest = load_set(stimuli).manifest
    main = manifest[manifest["role"] == "main"]
    chosen = [
        tuple(main.iloc[4][["sketch_id", "image_id"]]),
        tuple(main.iloc[0][["sketch_id", "image_id"]]),
    ]
    protocol = tmp_path / "protocol.toml"
    protocol.write_text(
        f'name = "practice test"\ntask = "{TASK}"\n'
        "[timing]\nstimulus_s = 0.4\nblank_s = 0.2\nanchor_demo_s = 0.3\n"
        "[participants]\ndetails = []\n"
        '[dataset]\nname = "Practice tests"\nauthors = ["A. Tester"]\n'
        "[display]\nfullscreen = false\nresolution = [800, 600]\n"
        f"[practice]\npairs = {json.dumps([list(pair) for pair in chosen])}\n"
    )
    data = tmp_path / "data"
    session = start_session(display, protocol, stimuli, data, "--simulate", "--seed", "9")
    status, out, err = session.finish(timeout=120)
    assert status == 0, err
    recorded = pd.read_csv(beh_file(data, TASK), sep="\t", dtype={"participant": str})
    expected = build_trials(load_protocol(protocol), manifest, 9, practice=True)
    assert recorded[["trial", "phase", "sketch_id", "image_id"]].to_numpy().tolist() == (
        expected[["trial", "phase", "sketch_id", "image_id"]].to_numpy().tolist()
    )
    assert recorded["phase"].iloc[:2].tolist() == ["practice", "practice"]
    assert [tuple(row) for row in recorded[["sketch_id", "image_id"]].iloc[:2].to_numpy()] == chosen
    # Rated like any pair: the simulated participant's keys are recorded (it may miss one).
    assert recorded["n_presses"].iloc[:2].sum() >= 1
    assert recorded["anchor_rating"].iloc[:2].isna().all()
    # The anchoring instructions waited for the space bar between the two phases (the
    # simulated participant reads for 0.3 s), and nothing else paused the practice.
    first_demo = recorded.index[recorded["phase"] == "anchor_demo"][0]
    assert first_demo == 2 and recorded["paused_before"].iloc[first_demo] > 0.3
    assert (recorded["paused_before"].iloc[:2] == 0).all()
    sidecar = json.loads(beh_file(data, TASK).with_suffix(".json").read_text())
    assert sidecar["Protocol"]["practice"]["pairs"] == [list(pair) for pair in chosen]
    assert sidecar["InstructionTexts"]["practice"].startswith(PRACTICE_NOTE)
    assert "practice" in sidecar["phase"]["Levels"]
    ratings = load_ratings(data)
    assert (ratings["phase"] == "practice").sum() == 2
    assert Path(beh_file(data, TASK)).exists() and "Session complete" in out
    assert np.array_equal(ratings["trial"].to_numpy()[:2], [1, 2])
