"""Simulated participants on any scale: the rater model draws on the paper's 1..7 and its
responses are mapped onto the study's scale; every sidecar records the scale.

The expectations are computed independently with pandas from the simulation on the paper's scale of
the same seed: a reversed 7-point scale is 8 - r, a shifted one r - 1; any scale's ratings
lie on its points and its sidecars list every point.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis.simulate import (
    StudyDesign,
    simulate_study,
    simulated_responses,
    write_simulated_dataset,
)
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from tests.helpers import assert_input_error, run_main

DESIGN = StudyDesign(participants=4, sketches=3, images_per_sketch=8, anchor_images=5)


def _ratings(scale: Scale, design: StudyDesign = DESIGN) -> pd.DataFrame:
    trials, _ = simulate_study(design, seed=3, scale=scale)
    return trials


def test_the_paper_s_scale_is_the_default():
    pd.testing.assert_frame_equal(_ratings(PAPER_SCALE), simulate_study(DESIGN, seed=3)[0])


def _by_pair(trials: pd.DataFrame) -> pd.DataFrame:
    # The anchors are shown in the order of their prescribed ratings, so the rows of a
    # reversed scale come in another order: compare pair by pair.
    return trials.set_index(["participant", "phase", "sketch_id", "image_id"]).sort_index()


def test_a_reversed_scale_mirrors_the_paper_s():
    paper, reversed_ = _by_pair(_ratings(PAPER_SCALE)), _by_pair(_ratings(Scale(1, 7, "high")))
    main = paper.index.get_level_values("phase") == "main"
    pd.testing.assert_series_equal(
        reversed_["rating"][main], (8 - paper["rating"][main]).astype("Int64")
    )
    pd.testing.assert_series_equal(reversed_["anchor_rating"], 8 - paper["anchor_rating"])
    pd.testing.assert_series_equal(reversed_["latent_rating"], paper["latent_rating"])


def test_a_shifted_scale_shifts_every_rating():
    # Seven anchor images: the anchors' prescribed ratings are then every point, shifted too.
    design = replace(DESIGN, anchor_images=7)
    paper = _by_pair(_ratings(PAPER_SCALE, design))
    shifted = _by_pair(_ratings(Scale(0, 6), design))
    pd.testing.assert_series_equal(shifted["rating"], (paper["rating"] - 1).astype("Int64"))


@pytest.mark.parametrize("scale", [Scale(1, 2), Scale(1, 5), Scale(1, 9), Scale(1, 9, "high")])
def test_ratings_lie_on_the_scale_and_follow_the_latent(scale):
    design = replace(DESIGN, anchor_images=min(DESIGN.anchor_images, scale.k))
    trials = _ratings(scale, design)
    rated = trials.dropna(subset=["rating"])
    assert set(rated["rating"].astype(int)) <= set(scale.points)
    # The best match of the model (latent 1) is rated near the scale's best end.
    best = rated[rated["latent_rating"] < 2.0]
    worst = rated[rated["latent_rating"] > 6.0]
    oriented_best = scale.oriented(best["rating"].astype(float)).mean()
    oriented_worst = scale.oriented(worst["rating"].astype(float)).mean()
    assert oriented_best < scale.midpoint < oriented_worst
    anchors = trials.loc[trials["phase"] == "anchor_demo", "anchor_rating"].astype(int)
    # The anchor images spread over the scale, best first, one per point at most.
    expected = np.rint(np.linspace(scale.low, scale.high, design.anchor_images)).astype(int)
    assert sorted(set(anchors)) == sorted(set(scale.oriented(expected)))


def test_more_anchor_images_than_points_are_refused():
    with pytest.raises(InputError, match="anchor_images: expected at most one per point"):
        simulate_study(StudyDesign(participants=1, anchor_images=7), scale=Scale(1, 5))


def test_a_set_s_anchor_off_the_scale_is_refused():
    manifest = pd.DataFrame(
        {
            "sketch_id": ["a", "a", "s"],
            "image_id": ["x", "y", "z"],
            "role": ["anchor", "anchor", "main"],
            "anchor_rating": [1, 7, None],
        }
    )
    trials = manifest.assign(phase=["anchor_repeat", "anchor_repeat", "main"])
    with pytest.raises(
        InputError,
        match=r"anchor pair a/y: prescribed rating 7 is not on the "
        r"scale 1-5",
    ):
        simulated_responses(manifest, trials, _model(), 1, window_s=3.0, scale=Scale(1, 5))
    answers = simulated_responses(manifest, trials, _model(), 1, window_s=3.0, scale=Scale(1, 7))
    assert answers["rating"].dropna().between(1, 7).all()


def _model():
    from sbir_study.analysis.simulate import RaterModel

    return RaterModel(miss_rate=0.0)


@pytest.mark.parametrize("scale", [Scale(1, 5), Scale(1, 9, "high")])
def test_sidecars_record_the_scale(tmp_path, scale):
    root = write_simulated_dataset(tmp_path / "data", DESIGN, seed=1, scale=scale)
    sidecars = sorted(root.glob("sub-*/beh/*_beh.json"))
    assert len(sidecars) == DESIGN.participants
    for path in sidecars:
        sidecar = json.loads(path.read_text())
        assert sidecar["RatingScale"] == {"Low": 1, "High": scale.high, "Best": scale.best}
        assert list(sidecar["rating"]["Levels"]) == [str(p) for p in scale.points]
        assert sidecar["rating"]["Levels"][str(scale.best_point)] == "best match"
    table = write_simulated_dataset(tmp_path / "flat.csv", DESIGN, seed=1, flat=True, scale=scale)
    assert json.loads(table.with_suffix(".json").read_text())["RatingScale"] == scale.sidecar()


def test_the_command_line_takes_a_scale(tmp_path):
    out = tmp_path / "data"
    result = run_main(
        "simulate",
        "--out",
        str(out),
        "--participants",
        "2",
        "--sketches",
        "2",
        "--images",
        "5",
        "--scale",
        "1-5:high-is-best",
    )
    assert result.returncode == 0, result.stderr
    assert "scale 1-5:high-is-best" in result.stdout
    sidecar = json.loads(next(out.glob("sub-01/beh/*_beh.json")).read_text())
    assert sidecar["RatingScale"] == {"Low": 1, "High": 5, "Best": "high"}
    # Five anchor images by default on five points, where the paper has seven.
    beh = pd.read_csv(next(out.glob("sub-01/beh/*_beh.tsv")), sep="\t")
    assert beh.loc[beh["phase"] == "anchor_demo"].groupby("sketch_id").size().eq(5).all()
    assert_input_error(
        run_main("simulate", "--out", str(tmp_path / "x"), "--scale", "1-12"),
        "--scale: expected 2 to 9 points, got 1-12",
    )
