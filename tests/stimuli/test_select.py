"""Pilot-based selection of the study's pairs (the paper's Sec. 2.2)."""

import json
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import InputError, load_ratings
from stimuli import (
    SetDesign,
    distance_to_uniform,
    generate_set,
    read_manifest,
    select_pairs,
    set_digest,
)
from stimuli.select import quotas, rating_counts, sketch_spread
from tests.helpers import run_cli


def _pool_and_pilot(ratings_by_sketch, raters=2):
    """A candidate pool and a pilot where every rater gives the listed ratings."""
    pool, pilot = [], []
    for sketch_id, ratings in ratings_by_sketch.items():
        for i, rating in enumerate(ratings):
            image_id = f"{sketch_id}{i}"
            pool.append((sketch_id, image_id, f"sketches/{sketch_id}.png",
                         f"images/{image_id}.png", "candidate"))  # fmt: skip
            pilot.extend((f"{r + 1}", sketch_id, image_id, "main", rating) for r in range(raters))
    return (
        pd.DataFrame(pool, columns=["sketch_id", "image_id", "sketch_path", "image_path", "role"]),
        pd.DataFrame(pilot, columns=["participant", "sketch_id", "image_id", "phase", "rating"]),
    )


# Worked by hand with N = 7 (uniform target: 1 rating per point and person):
#   A: 1 2 3 4 5 6 7 7   counts 1 1 1 1 1 1 2   sigma = sqrt(1/7)  = 0.378
#   B: 1 1 2 3 4 5 6 7   counts 2 1 1 1 1 1 1   sigma = sqrt(1/7)  = 0.378
#   C: 1 2 7 7 7 7 7 7   counts 1 1 0 0 0 0 6   sigma = sqrt(29/7) = 2.035
#   D: 1 2 3 4 5 6 7     counts 1 1 1 1 1 1 1   sigma = 0
#   E: 1 2 3 4 5 6       only 6 candidates: cannot give 7 images, dropped first
HAND = {
    "A": [1, 2, 3, 4, 5, 6, 7, 7],
    "B": [1, 1, 2, 3, 4, 5, 6, 7],
    "C": [1, 2, 7, 7, 7, 7, 7, 7],
    "D": [1, 2, 3, 4, 5, 6, 7],
    "E": [1, 2, 3, 4, 5, 6],
}


def test_sketch_spread_matches_the_hand_computed_example():
    _, pilot = _pool_and_pilot(HAND)
    sigma = sketch_spread(rating_counts(pilot), 7)
    expected = {"A": np.sqrt(1 / 7), "B": np.sqrt(1 / 7), "C": np.sqrt(29 / 7), "D": 0.0,
                "E": np.sqrt(1 / 7)}  # fmt: skip
    assert sigma.to_dict() == pytest.approx(expected)


@pytest.mark.parametrize("keep,expected", [(1, ["D"]), (2, ["A", "D"]), (3, ["A", "B", "D"]),
                                           (4, ["A", "B", "C", "D"])])  # fmt: skip
def test_select_keeps_the_smallest_sigma_sketches(keep, expected):
    pool, pilot = _pool_and_pilot(HAND)
    selection = select_pairs(pool, pilot, sketches=keep, images_per_sketch=7, seed=1)
    assert sorted(selection.pairs["sketch_id"].unique()) == expected
    assert (selection.pairs.groupby("sketch_id").size() == 7).all()
    assert (selection.pairs["role"] == "main").all()
    table = selection.sketches.set_index("sketch_id")
    assert sorted(table.index[table["selected"]]) == expected
    if "A" in expected:
        # A's quotas are one image per point: one of its two 7s goes, and A becomes uniform.
        a = selection.pairs[selection.pairs["sketch_id"] == "A"]
        assert sorted(a["pilot_level"]) == list(range(1, 8))
        assert table.loc["A", "sigma_selected"] == 0.0


def test_select_needs_enough_candidates():
    pool, pilot = _pool_and_pilot(HAND)
    with pytest.raises(InputError, match="4 sketches have at least 7 rated candidate images; "
                       "expected 5"):  # fmt: skip
        select_pairs(pool, pilot, sketches=5, images_per_sketch=7)
    stray = pd.concat([pilot, pilot.iloc[[0]].assign(image_id="Z9")], ignore_index=True)
    with pytest.raises(InputError, match=r"pair \(A, Z9\) is not a candidate pair"):
        select_pairs(pool, stray, sketches=2, images_per_sketch=7)


@given(
    available=st.lists(st.integers(0, 30), min_size=7, max_size=7),
    total=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=200, deadline=None)
def test_quotas_are_as_even_as_the_candidates_allow(available, total, seed):
    available = np.array(available)
    if total > available.sum():
        with pytest.raises(ValueError):
            quotas(available, total, np.random.default_rng(seed))
        return
    take = quotas(available, total, np.random.default_rng(seed))
    assert take.sum() == total
    assert (take <= available).all()
    # No point that could have given more is more than one image behind any other point.
    could_give_more = take[take < available]
    if could_give_more.size:
        assert could_give_more.min() >= take.max() - 1


def test_select_end_to_end_is_closer_to_uniform_than_the_pool(tmp_path):
    design = SetDesign(sketches=12, images_per_sketch=40, width=64, height=64, role="candidate")
    pool = generate_set(tmp_path / "pool", design, seed=2)
    result = run_cli(
        "simulate",
        "--stimuli",
        str(pool),
        "--anchor-sketches",
        "0",
        "--participants",
        "3",
        "--seed",
        "4",
        "--out",
        str(tmp_path / "pilot"),
    )
    assert result.returncode == 0, result.stderr
    pilot = load_ratings(tmp_path / "pilot")
    assert set(pilot["phase"].astype(str)) == {"main"}
    out = tmp_path / "selected"
    result = run_cli("stimuli", "select", str(pool), str(tmp_path / "pilot"), "--out", str(out),
                     "--sketches", "8", "--images", "14", "--seed", "1")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert run_cli("stimuli", "validate", str(out)).returncode == 0

    manifest = read_manifest(out)
    main = manifest[manifest["role"] == "main"]
    assert main.groupby("sketch_id").size().tolist() == [14] * 8
    assert manifest[manifest["role"] == "anchor"].shape[0] == 21  # the pool's anchors come along
    # The same files: hard links to the pool's.
    first = main["image_path"].iloc[0]
    assert os.path.samefile(out / first, pool / first)

    # The kept sketches are the 8 smallest-sigma ones, recomputed here from the pilot directly.
    given_ = pilot.dropna(subset=["rating"])
    per_person = (
        given_.groupby(["sketch_id", "rating"], observed=True)
        .size()
        .unstack(fill_value=0)
        .reindex(columns=range(1, 8), fill_value=0)
        / given_.groupby("sketch_id", observed=True)["participant"].nunique().to_numpy()[:, None]
    )
    sigma = np.sqrt(((per_person - 14 / 7) ** 2).mean(axis=1))
    assert sorted(main["sketch_id"].unique()) == sorted(sigma.sort_values().index[:8].astype(str))

    # Closer to uniform than the pool, for the pilot's own ratings of the chosen pairs.
    table = pd.read_csv(out / "selection_distribution.csv")
    share = table.pivot(index="rating", columns="dataset", values="share")
    pool_distance = distance_to_uniform(share["pool"])
    chosen_distance = distance_to_uniform(share["selection"])
    # (seed 2: 0.178 and 0.102; with 3 pilot raters and 336 ratings chosen, sampling noise in
    # the distance is about 0.03.)
    assert chosen_distance < 0.75 * pool_distance, (pool_distance, chosen_distance)
    # ... and per sketch, each kept sketch's spread shrank.
    sketches = pd.read_csv(out / "selection_sketches.csv")
    kept = sketches[sketches["selected"]]
    assert (kept["sigma_selected"] < kept["sigma"]).all()
    assert json.loads((out / "selection.json").read_text())["PoolDigest"] == set_digest(pool)
