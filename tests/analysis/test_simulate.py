"""The simulator's design rules: reproducible per participant, the paper's design, spread
largest mid-scale."""

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis import binned_medians, simulate_study
from sbir_study.analysis.simulate import RaterModel, StudyDesign
from sbir_study.foundation.checks import InputError


def test_simulation_is_reproducible_and_per_participant():
    design = StudyDesign(participants=4, sketches=3, images_per_sketch=8)
    first, _ = simulate_study(design, seed=11)
    again, _ = simulate_study(design, seed=11)
    pd.testing.assert_frame_equal(first, again)
    other, _ = simulate_study(design, seed=12)
    assert not first["rating"].equals(other["rating"])
    # Adding participants leaves the earlier ones' sessions unchanged.
    more, _ = simulate_study(StudyDesign(participants=6, sketches=3, images_per_sketch=8), seed=11)
    pd.testing.assert_frame_equal(first, more[more["participant"].isin(first["participant"])])


def test_simulated_session_follows_the_paper_design():
    design = StudyDesign(participants=5, sketches=4, images_per_sketch=10)
    trials, _ = simulate_study(design, seed=3)
    for _, session in trials.groupby("participant"):
        phases = session["phase"].tolist()
        n_anchor = design.anchor_sketches * design.anchor_images
        assert phases[:n_anchor] == ["anchor_demo"] * n_anchor
        assert session.loc[session["phase"] == "anchor_demo", "rating"].isna().all()
        main_block = session.iloc[n_anchor:]
        n_main = design.sketches * design.images_per_sketch
        # Each main pair exactly once; each anchor pair repeated once, in the later part.
        main = main_block[main_block["phase"] == "main"]
        assert len(main) == n_main and not main.duplicated(["sketch_id", "image_id"]).any()
        repeats = main_block["phase"].to_numpy() == "anchor_repeat"
        assert repeats.sum() == n_anchor
        mains_before = np.cumsum(~repeats)[repeats] - 1
        assert (mains_before >= np.ceil(design.anchor_repeat_from * n_main) - 1).all()
        assert session["trial"].tolist() == list(range(1, len(session) + 1))
        assert np.all(np.diff(session["onset"]) == pytest.approx(3.0))


def test_simulated_ratings_spread_most_mid_scale():
    trials, _ = simulate_study(StudyDesign(participants=28, sketches=31), seed=2011)
    bins = binned_medians(trials).set_index("bin")
    assert bins.loc[4, "sd"] > bins.loc[1, "sd"] and bins.loc[4, "sd"] > bins.loc[7, "sd"]
    assert (bins["n_ratings"] > 0).all()
    missing = trials.loc[trials["phase"] == "main", "rating"].isna().mean()
    assert 0.002 < missing < 0.03  # miss_rate 0.01


def test_model_and_design_validation():
    with pytest.raises(InputError, match="miss_rate"):
        RaterModel(miss_rate=1.5)
    with pytest.raises(InputError, match="images_per_sketch"):
        StudyDesign(images_per_sketch=1)
    with pytest.raises(InputError, match="anchor_images"):  # 2..9: a point each of a 9-point scale
        StudyDesign(anchor_images=10)
