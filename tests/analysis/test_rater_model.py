"""One rater model and one trial order for `run --simulate` and `simulate` (no window).

A simulated dataset of a stimulus set records each participant's session seed;
the trial list ``run`` builds from that seed and the answers its simulated
participant gives must be exactly those of the dataset. (The window test in
tests/test_session.py runs the same check through a real session.)
"""

import json

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis.simulate import (
    RaterModel,
    StudyDesign,
    simulate_study,
    simulated_responses,
    write_simulated_dataset,
)
from sbir_study.foundation.trial_order import session_order
from sbir_study.stimuli import SetDesign, generate_set, load_set
from sbir_study.study.protocol import Protocol
from sbir_study.study.trials import build_trials


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    folder = generate_set(
        tmp_path_factory.mktemp("set") / "set",
        SetDesign(sketches=3, images_per_sketch=8, anchor_sketches=2, width=96, height=72),
        seed=4,
    )
    return load_set(folder).manifest


def test_run_draws_the_order_and_answers_of_the_simulated_participant(manifest):
    design = StudyDesign(participants=4)
    trials, people = simulate_study(design, seed=9, stimuli=manifest)
    model = RaterModel()
    window = design.stimulus_s + design.blank_s
    for label, seed in zip(people["participant"], people["session_seed"], strict=True):
        simulated = trials[trials["participant"] == label].reset_index(drop=True)
        run_trials = build_trials(Protocol(), manifest, int(seed))
        columns = ["trial", "phase", "sketch_id", "image_id"]
        pd.testing.assert_frame_equal(
            run_trials[columns].astype({"trial": "int64"}),
            simulated[columns].astype({"trial": "int64"}),
        )
        answers = simulated_responses(manifest, run_trials, model, int(seed), window_s=window)
        pd.testing.assert_series_equal(answers["rating"], simulated["rating"], check_names=False)
        np.testing.assert_array_equal(answers["rt"].to_numpy(), simulated["rt"].to_numpy())


def test_the_seed_is_in_every_sidecar_and_participants_stay_independent(manifest, tmp_path):
    root = write_simulated_dataset(
        tmp_path / "sim", StudyDesign(participants=3), seed=2, stimuli=manifest
    )
    seeds = [
        json.loads(next((root / f"sub-0{k}" / "beh").glob("*.json")).read_text())["Seed"]
        for k in (1, 2, 3)
    ]
    assert len(set(seeds)) == 3 and all(0 <= s < 2**63 for s in seeds)
    _, fewer = simulate_study(StudyDesign(participants=2), seed=2, stimuli=manifest)
    assert fewer["session_seed"].tolist() == seeds[:2]


def test_a_set_rates_the_same_whatever_the_simulation_seed(manifest):
    # The pairs' draws (sketch ambiguity, latent ratings) belong to the set, not to a study:
    # the same session seed gives the same answers in studies of different seeds.
    trials = build_trials(Protocol(), manifest, 123)
    first = simulated_responses(manifest, trials, RaterModel(), 123, window_s=3.0)
    again = simulated_responses(manifest, trials, RaterModel(), 123, window_s=3.0)
    pd.testing.assert_frame_equal(first, again)
    other = simulated_responses(manifest, trials, RaterModel(), 124, window_s=3.0)
    assert not first["rating"].equals(other["rating"])


def test_session_order_is_the_trial_list_rule():
    # The order rule as the paper describes it, checked on its own: anchors first by sketch and
    # prescribed rating, each main pair once, each anchor once more after the first half.
    pairs = pd.DataFrame(
        {
            "sketch_id": ["b", "b", "a", "a"] + ["s"] * 10,
            "image_id": ["b7", "b1", "a4", "a1"] + [f"s{k}" for k in range(10)],
            "role": ["anchor"] * 4 + ["main"] * 10,
            "anchor_rating": [7, 1, 4, 1] + [None] * 10,
        }
    )
    for seed in range(30):
        order = session_order(pairs, np.random.default_rng(seed))
        demo = order[order["phase"] == "anchor_demo"]
        assert demo["image_id"].tolist() == ["a1", "a4", "b1", "b7"]
        block = order.iloc[4:]
        mains = (block["phase"] == "main").cumsum()
        repeats = block["phase"] == "anchor_repeat"
        assert sorted(block.loc[repeats, "image_id"]) == ["a1", "a4", "b1", "b7"]
        assert (mains[repeats] >= 5).all()
        assert sorted(block.loc[~repeats, "image_id"]) == sorted(f"s{k}" for k in range(10))
