"""``stimuli select`` on a pilot rated on another scale than the paper's 1..7.

The levels are the points of the pilot's scale (``ratings.attrs["scale"]``, as
``load_ratings`` sets it): counts, spread, quotas and the distribution against 1/k are over
them. Expected values are computed here with NumPy (bincount over the scale's points).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sbir_study.foundation.scale import Scale
from sbir_study.stimuli import distance_to_uniform, select_pairs

N = 10


def _pool_and_pilot(scale: Scale, seed: int = 0):
    """Six sketches of 20 to 30 candidates, two participants giving each image one rating of
    the scale; some sketches' ratings lean to the scale's ends."""
    rng = np.random.default_rng(seed)
    pool, pilot = [], []
    for s in range(6):
        n = 20 + 2 * s
        weights = np.ones(scale.k) + s * np.eye(scale.k)[s % scale.k]
        ratings = rng.choice(scale.points, size=n, p=weights / weights.sum())
        for i, rating in enumerate(ratings):
            sketch_id, image_id = f"s{s}", f"s{s}_{i:02d}"
            pool.append(
                (
                    sketch_id,
                    image_id,
                    f"sketches/{sketch_id}.png",
                    f"images/{image_id}.png",
                    "candidate",
                )
            )
            pilot.extend((str(r + 1), sketch_id, image_id, "main", int(rating)) for r in range(2))
    pool = pd.DataFrame(
        pool, columns=["sketch_id", "image_id", "sketch_path", "image_path", "role"]
    )
    pilot = pd.DataFrame(pilot, columns=["participant", "sketch_id", "image_id", "phase", "rating"])
    pilot.attrs["scale"] = scale
    return pool, pilot


@pytest.mark.parametrize("scale", [Scale(1, 5), Scale(1, 9, "high"), Scale(1, 3)], ids=str)
def test_the_levels_are_the_pilot_s_scale_points(scale):
    pool, pilot = _pool_and_pilot(scale)
    selection = select_pairs(pool, pilot, sketches=3, images_per_sketch=N, seed=1)
    points = np.array(scale.points)
    table = selection.sketches.set_index("sketch_id")
    assert [c for c in table.columns if c.startswith("count_")] == [f"count_{k}" for k in points]
    for sketch_id, group in pilot.groupby("sketch_id"):
        # NumPy: the sketch's rating counts at each point, scaled to N images; sigma against N/k.
        counts = np.bincount(group["rating"], minlength=scale.high + 1)[scale.low :]
        scaled = counts / counts.sum() * N
        np.testing.assert_allclose(
            table.loc[sketch_id, [f"count_{k}" for k in points]], scaled, rtol=1e-12
        )
        sigma = np.sqrt(((scaled - N / scale.k) ** 2).mean())
        assert table.loc[sketch_id, "sigma"] == pytest.approx(sigma, rel=1e-12)
    distribution = selection.distribution
    uniform = distribution[distribution["dataset"] == "uniform"]
    assert uniform["rating"].tolist() == list(points)
    np.testing.assert_allclose(uniform["share"], 1 / scale.k)
    pool_shares = distribution.loc[distribution["dataset"] == "pool", "share"].to_numpy()
    expected = np.bincount(pilot["rating"], minlength=scale.high + 1)[scale.low :] / len(pilot)
    np.testing.assert_allclose(pool_shares, expected, rtol=1e-12)
    assert distance_to_uniform(pool_shares) == pytest.approx(
        0.5 * np.abs(expected - 1 / scale.k).sum(), rel=1e-12
    )
    # Every chosen image sits at a point of the scale, N per kept sketch.
    assert selection.pairs["pilot_level"].isin(points).all()
    assert (selection.pairs.groupby("sketch_id").size() == N).all()


def test_a_pilot_without_a_scale_is_on_the_paper_s():
    pool, pilot = _pool_and_pilot(Scale(1, 5))
    pilot.attrs.clear()
    selection = select_pairs(pool, pilot, sketches=3, images_per_sketch=N, seed=1)
    uniform = selection.distribution[selection.distribution["dataset"] == "uniform"]
    assert uniform["rating"].tolist() == list(range(1, 8))
