"""Pilot-based selection of the study's pairs (the paper's Sec. 2.2)."""

import json
import os

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sbir_study.analysis import load_ratings
from sbir_study.foundation.checks import InputError
from sbir_study.stimuli import (
    SetDesign,
    distance_to_uniform,
    generate_set,
    read_manifest,
    select_pairs,
    set_digest,
)
from sbir_study.stimuli.select import quotas, rating_counts, sketch_spread
from tests.helpers import run_main


def _pool_and_pilot(ratings_by_sketch, participants=2):
    """A candidate pool and a pilot where every participant gives the listed ratings."""
    pool, pilot = [], []
    for sketch_id, ratings in ratings_by_sketch.items():
        for i, rating in enumerate(ratings):
            image_id = f"{sketch_id}{i}"
            pool.append(
                (
                    sketch_id,
                    image_id,
                    f"sketches/{sketch_id}.png",
                    f"images/{image_id}.png",
                    "candidate",
                )
            )
            pilot.extend(
                (f"{r + 1}", sketch_id, image_id, "main", rating) for r in range(participants)
            )
    return (
        pd.DataFrame(pool, columns=["sketch_id", "image_id", "sketch_path", "image_path", "role"]),
        pd.DataFrame(pilot, columns=["participant", "sketch_id", "image_id", "phase", "rating"]),
    )


# Worked by hand with N = 7 (uniform target: 1 per point): the counts c_k are the shares of
# the sketch's ratings scaled to 7 images.
#   A: 1 2 3 4 5 6 7 7   shares (1 1 1 1 1 1 2)/8, c = 7/8 x that, deviations
#                        (-1 -1 -1 -1 -1 -1 6)/8: sigma = sqrt(42/448) = 0.306
#   B: 1 1 2 3 4 5 6 7   the same shares at other points: sigma = 0.306
#   C: 1 2 7 7 7 7 7 7   c = (7 7 0 0 0 0 42)/8, deviations (-1 -1 -8 -8 -8 -8 34)/8:
#                        sigma = sqrt(1414/448) = 1.777
#   D: 1 2 3 4 5 6 7     c = 1 everywhere: sigma = 0
#   E: 1 2 3 4 5 6       c = (7 7 7 7 7 7 0)/6, deviations (1 1 1 1 1 1 -6)/6:
#                        sigma = sqrt(42/252) = 0.408; only 6 candidates: dropped first
HAND = {
    "A": [1, 2, 3, 4, 5, 6, 7, 7],
    "B": [1, 1, 2, 3, 4, 5, 6, 7],
    "C": [1, 2, 7, 7, 7, 7, 7, 7],
    "D": [1, 2, 3, 4, 5, 6, 7],
    "E": [1, 2, 3, 4, 5, 6],
}


def test_sketch_spread_matches_the_hand_computed_example():
    _, pilot = _pool_and_pilot(HAND)
    sigma = sketch_spread(rating_counts(pilot, 7), 7)
    expected = {
        "A": np.sqrt(42 / 448),
        "B": np.sqrt(42 / 448),
        "C": np.sqrt(1414 / 448),
        "D": 0.0,
        "E": np.sqrt(42 / 252),
    }
    assert sigma.to_dict() == pytest.approx(expected)


@pytest.mark.parametrize(
    "keep,expected", [(1, ["D"]), (2, ["A", "D"]), (3, ["A", "B", "D"]), (4, ["A", "B", "C", "D"])]
)
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


def _distance_to_uniform_l2(ratings):
    """The Euclidean distance of a list of ratings' shares from the uniform 1/7 (numpy only)."""
    shares = np.bincount(np.asarray(ratings), minlength=8)[1:] / len(ratings)
    return float(np.linalg.norm(shares - 1 / 7))


def _pool_ratings(size, moved):
    """size ratings spread as evenly as possible over 1..7, then ``moved`` of them moved to 7."""
    counts = np.full(7, size // 7)
    counts[: size % 7] += 1
    for j in range(moved):
        counts[j % 6] -= 1
        counts[6] += 1
    return list(np.repeat(np.arange(1, 8), counts))


def test_unequal_pools_keep_the_most_uniform_sketches():
    # Twelve sketches with 23 to 43 candidates each; the larger pools are the more uniform
    # (0 to 5 ratings moved to 7). Every K from 1 to 11 must keep the K most uniform.
    sizes = np.linspace(23, 43, 12).round().astype(int)
    ratings = {f"s{i:02d}": _pool_ratings(n, round(5 * (11 - i) / 11)) for i, n in enumerate(sizes)}
    pool, pilot = _pool_and_pilot(ratings, participants=3)
    l2 = {sketch: _distance_to_uniform_l2(r) for sketch, r in ratings.items()}
    total_variation = {
        s: distance_to_uniform(np.bincount(r, minlength=8)[1:] / len(r)) for s, r in ratings.items()
    }
    # Both measures of uniformity order the sketches the same way here.
    most_uniform = sorted(l2, key=l2.get)
    assert most_uniform == sorted(total_variation, key=total_variation.get)
    assert scipy.stats.spearmanr(sizes, list(l2.values())).statistic < -0.95
    # The spread of raw counts around 20/7 (what a count that is not scaled to the sample
    # measures) grows with the pool, and would keep other sketches at every K.
    raw = {
        s: np.sqrt(((np.bincount(r, minlength=8)[1:] - 20 / 7) ** 2).mean())
        for s, r in ratings.items()
    }
    by_raw = sorted(raw, key=raw.get)
    for keep in range(1, 12):
        selection = select_pairs(pool, pilot, sketches=keep, images_per_sketch=20, seed=0)
        kept = sorted(selection.pairs["sketch_id"].unique())
        assert kept == sorted(most_uniform[:keep]), keep
        assert kept != sorted(by_raw[:keep]), keep


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_kept_sketches_are_the_most_uniform_whatever_the_pool_sizes(data):
    n_sketches = data.draw(st.integers(3, 9))
    ratings = {}
    for i in range(n_sketches):
        size = data.draw(st.integers(10, 45))
        ratings[f"s{i}"] = data.draw(st.lists(st.integers(1, 7), min_size=size, max_size=size))
    keep = data.draw(st.integers(1, n_sketches - 1))
    l2 = {sketch: _distance_to_uniform_l2(r) for sketch, r in ratings.items()}
    ordered = sorted(l2, key=lambda sketch: (l2[sketch], sketch))
    # Near-ties between the last kept and the first dropped sketch are left to rounding.
    assume(abs(l2[ordered[keep]] - l2[ordered[keep - 1]]) > 1e-9)
    pool, pilot = _pool_and_pilot(ratings, participants=data.draw(st.integers(1, 3)))
    selection = select_pairs(pool, pilot, sketches=keep, images_per_sketch=10, seed=0)
    assert sorted(selection.pairs["sketch_id"].unique()) == sorted(ordered[:keep])


def test_select_needs_enough_candidates():
    pool, pilot = _pool_and_pilot(HAND)
    with pytest.raises(
        InputError, match="4 sketches have at least 7 rated candidate images; expected 5"
    ):
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
    result = run_main(
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
    result = run_main(
        "stimuli",
        "select",
        str(pool),
        str(tmp_path / "pilot"),
        "--out",
        str(out),
        "--sketches",
        "8",
        "--images",
        "14",
        "--seed",
        "1",
    )
    assert result.returncode == 0, result.stderr
    assert run_main("stimuli", "validate", str(out)).returncode == 0

    manifest = read_manifest(out)
    main = manifest[manifest["role"] == "main"]
    assert main.groupby("sketch_id").size().tolist() == [14] * 8
    assert manifest[manifest["role"] == "anchor"].shape[0] == 21  # the pool's anchors come along
    # The same files: hard links to the pool's.
    first = main["image_path"].iloc[0]
    assert os.path.samefile(out / first, pool / first)

    # The kept sketches are the 8 whose pilot ratings are closest to uniform, recomputed here
    # from the pilot directly.
    given_ = pilot.dropna(subset=["rating"])
    distance = {
        sketch: _distance_to_uniform_l2(group["rating"].astype(int))
        for sketch, group in given_.groupby("sketch_id", observed=True)
    }
    closest = sorted(distance, key=lambda sketch: (distance[sketch], sketch))[:8]
    assert sorted(main["sketch_id"].unique()) == sorted(map(str, closest))

    # Closer to uniform than the pool, for the pilot's own ratings of the chosen pairs.
    table = pd.read_csv(out / "selection_distribution.csv")
    share = table.pivot(index="rating", columns="dataset", values="share")
    pool_distance = distance_to_uniform(share["pool"])
    chosen_distance = distance_to_uniform(share["selection"])
    # (seed 2: 0.178 and 0.102; with 3 pilot participants and 336 ratings chosen, sampling noise in
    # the distance is about 0.03.)
    assert chosen_distance < 0.75 * pool_distance, (pool_distance, chosen_distance)
    # ... and the kept sketches' spread shrank: sigma is of shares scaled to 14 images on both
    # sides, so pool and selection compare directly (seed 2: mean 0.90 -> 0.61; a sketch
    # that was already near uniform may come out a little less so, its images being chosen
    # by their medians over 3 participants).
    sketches = pd.read_csv(out / "selection_sketches.csv")
    kept = sketches[sketches["selected"]]
    assert kept["sigma_selected"].mean() < 0.8 * kept["sigma"].mean()
    assert json.loads((out / "selection.json").read_text())["PoolDigest"] == set_digest(pool)
