"""Stimulus sets whose anchors are spread over another scale than the paper's 1..7.

A set does not know the protocol it will be rated under: it may hold prescribed ratings
1..9 (the largest scale), each anchor sketch's images spread evenly over its own scale
(1 to its highest prescribed rating); a session checks them against the protocol's scale
when it starts (tests/study/test_protocol_trials.py). Expected spreads are computed here
with NumPy (np.linspace rounded half to even, as the paper's 1, 2, ..., 7).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale
from sbir_study.stimuli import AnchorDesign, SetDesign, generate_set, load_set, read_manifest
from sbir_study.stimuli.manifest import read_checksums, write_checksums
from tests.helpers import run_main

SMALL = {"sketches": 1, "images_per_sketch": 2, "anchor_sketches": 2, "width": 64, "height": 64}


def _spread(scale: Scale, n: int) -> list[int]:
    return [int(r) for r in np.rint(np.linspace(scale.low, scale.high, n))]


@pytest.mark.parametrize(
    ("scale", "images"),
    [
        (Scale(1, 5), 5),
        (Scale(1, 5, "high"), 3),
        (Scale(1, 9), 9),
        (Scale(1, 9, "high"), 4),
        (Scale(1, 2), 2),
    ],
    ids=str,
)
def test_generate_spreads_the_anchors_over_the_scale(tmp_path, scale, images):
    folder = generate_set(
        tmp_path / "set", SetDesign(**SMALL, anchor_images=images), seed=3, scale=scale
    )
    stimulus_set = load_set(folder)  # the set's own anchor block, on its own scale
    anchors = stimulus_set.pairs("anchor")
    for _, block in anchors.groupby("sketch_id"):
        ratings = block["anchor_rating"].astype(int).tolist()
        assert sorted(ratings) == _spread(scale, images)
        # The best match (the scale's best end) is the most similar image, the worst the least.
        similarity = block["latent_similarity"].astype(float).to_numpy()
        best = ratings.index(scale.best_point)
        worst = ratings.index(scale.high if scale.best == "low" else scale.low)
        assert similarity[best] == 1.0 and similarity[worst] == 0.0
        order = np.argsort(-similarity)
        turned = (
            np.array(ratings) if scale.best == "low" else scale.low + scale.high - np.array(ratings)
        )
        assert (np.diff(turned[order]) > 0).all()
    about = json.loads((folder / "generator.json").read_text())
    assert about["AnchorScale"] == str(scale)


def test_the_paper_s_set_is_described_as_before(tmp_path):
    folder = generate_set(tmp_path / "set", SetDesign(**SMALL), seed=3)
    assert "AnchorScale" not in json.loads((folder / "generator.json").read_text())
    anchors = load_set(folder).pairs("anchor")
    assert sorted(anchors["anchor_rating"].astype(int)) == sorted(list(range(1, 8)) * 2)


def test_generate_refuses_more_anchor_images_than_points(tmp_path):
    with pytest.raises(
        InputError,
        match=r"anchor_images: expected at most one per point of "
        r"the scale 1-5 \(5\), got 7",
    ):
        generate_set(tmp_path / "set", SetDesign(**SMALL), scale=Scale(1, 5))
    with pytest.raises(InputError, match=r"scale: expected a scale from 1"):
        generate_set(tmp_path / "set", SetDesign(**SMALL, anchor_images=3), scale=Scale(0, 4))
    assert not (tmp_path / "set").exists()


def test_generate_scale_on_the_command_line(tmp_path):
    result = run_main(
        "stimuli",
        "generate",
        "--out",
        str(tmp_path / "set"),
        "--sketches",
        "1",
        "--images",
        "2",
        "--anchor-sketches",
        "1",
        "--anchor-images",
        "9",
        "--scale",
        "1-9:high-is-best",
        "--width",
        "64",
        "--height",
        "64",
    )
    assert result.returncode == 0, result.stderr
    manifest = read_manifest(tmp_path / "set")
    assert sorted(manifest.loc[manifest["role"] == "anchor", "anchor_rating"].astype(int)) == list(
        range(1, 10)
    )
    assert (
        run_main(
            "stimuli",
            "validate",
            str(tmp_path / "set"),
            "--anchor-sketches",
            "1",
            "--anchor-images",
            "9",
            "--no-open",
        ).returncode
        == 0
    )


def _edit_anchor_rating(folder, row, value):
    manifest = read_manifest(folder)
    at = manifest.index[manifest["role"] == "anchor"][row]
    manifest.loc[at, "anchor_rating"] = value
    manifest.to_csv(folder / "manifest.csv", index=False, lineterminator="\n")
    listed, _ = read_checksums(folder)
    write_checksums(folder, [p for p in listed if (folder / p).is_file()])


def test_a_set_holds_anchor_ratings_1_to_9_and_its_block_stays_whole(tmp_path):
    folder = generate_set(
        tmp_path / "set", SetDesign(**SMALL, anchor_images=5), seed=1, scale=Scale(1, 5)
    )
    _edit_anchor_rating(folder, 0, "10")
    with pytest.raises(InputError, match=r"anchor_rating '10': expected a whole number 1\.\.9"):
        load_set(folder)
    # One image of an anchor sketch rated twice at 4 and none at 5: not a whole block on 1..5.
    _edit_anchor_rating(folder, 0, "1")
    manifest = read_manifest(folder)
    five = manifest.index[(manifest["role"] == "anchor") & (manifest["anchor_rating"] == "5")][0]
    _edit_anchor_rating(folder, list(manifest.index[manifest["role"] == "anchor"]).index(five), "4")
    with pytest.raises(
        InputError,
        match=r"anchor sketch a\d+ has images rated 1, 2, 3, 4, 4; "
        r"expected one each rated 1, 2, 3, 4, 5",
    ):
        load_set(folder, AnchorDesign(sketches=2, images=5, scale=Scale(1, 5)))


def test_anchor_design_on_a_scale():
    assert AnchorDesign().ratings == tuple(range(1, 8))  # the paper's block, as before
    assert AnchorDesign(images=3, scale=Scale(1, 9)).ratings == tuple(_spread(Scale(1, 9), 3))
    assert AnchorDesign(images=9).ratings == tuple(range(1, 10))
    with pytest.raises(
        InputError,
        match=r"anchor images: expected 2 to 5 per sketch \(the "
        r"scale 1-5\), got 6",
    ):
        AnchorDesign(images=6, scale=Scale(1, 5))
    with pytest.raises(InputError, match=r"anchor images: expected 2 to 9 per sketch, got 10"):
        AnchorDesign(images=10)
