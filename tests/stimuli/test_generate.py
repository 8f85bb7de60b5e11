"""Generated stimulus sets: reproducible bytes, the paper's design, similarity that follows
the latent value."""

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from scipy import ndimage, stats

from sbir_study.stimuli import SetDesign, generate_set, read_manifest, set_digest
from sbir_study.stimuli.generate import _SensorNoise
from sbir_study.stimuli.manifest import read_checksums
from tests.helpers import SMALL_SET as SMALL
from tests.helpers import assert_input_error, run_main


def test_generate_is_reproducible_byte_for_byte(small_set, tmp_path):
    again = generate_set(tmp_path / "again", SMALL, seed=7)
    assert (again / "SHA256SUMS").read_bytes() == (small_set / "SHA256SUMS").read_bytes()
    assert set_digest(again) == set_digest(small_set)
    other = generate_set(tmp_path / "other", SMALL, seed=8)
    mine, theirs = read_checksums(small_set)[0], read_checksums(other)[0]
    differing = [p for p in mine if p.endswith((".png", ".jpg")) and mine[p] != theirs.get(p)]
    assert len(differing) == len([p for p in mine if p.endswith((".png", ".jpg"))])
    # Sketch k does not depend on how many sketches are drawn.
    more = generate_set(
        tmp_path / "more", SetDesign(sketches=4, images_per_sketch=6, width=96, height=72), seed=7
    )
    assert read_checksums(more)[0]["images/s03/s03_i06.jpg"] == mine["images/s03/s03_i06.jpg"]


@settings(max_examples=40, deadline=None)
@given(
    seeds=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4),
    width=st.integers(64, 90),
    height=st.integers(64, 80),
    level=st.integers(0, 255),
)
def test_sensor_noise_kept_between_images_is_numpys_normal_noise(seeds, width, height, level):
    """The noise added in kept arrays, image after image, is what adding
    ``rng.normal(0.0, 3.0, shape)`` in single precision to each image gives (NumPy's draws
    the reference): the same numbers from the same stream, nothing carried over from the
    image before, and the stream left where NumPy's call leaves it."""
    noise = _SensorNoise(SetDesign(width=width, height=height))
    for seed in seeds:
        pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), np.uint8)
        pixels[0, 0] = level  # the ends of the range, where rounding and clipping meet
        canvas = Image.fromarray(pixels)
        mine, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        kept = np.asarray(noise.added_to(canvas, mine))
        draws = numpys.normal(0.0, 3.0, (height, width, 3)).astype(np.float32)
        expected = np.clip(np.rint(pixels.astype(np.float32) + draws), 0, 255).astype(np.uint8)
        assert np.array_equal(kept, expected)
        assert mine.random() == numpys.random()  # the streams go on alike


def test_generate_follows_the_paper_design(small_set):
    manifest = read_manifest(small_set)
    anchors = manifest[manifest["role"] == "anchor"]
    assert anchors.groupby("sketch_id").size().tolist() == [7, 7, 7]
    for _, block in anchors.groupby("sketch_id"):
        # Prescribed ratings 1..7, ordered by latent similarity (1 = most similar).
        block = block.sort_values("latent_similarity", ascending=False)
        assert block["anchor_rating"].astype(int).tolist() == list(range(1, 8))
    main = manifest[manifest["role"] == "main"]
    assert main.groupby("sketch_id").size().tolist() == [6, 6, 6]
    s = main["latent_similarity"].astype(float)
    assert s.between(0, 1).all()
    # Stratified: each sketch has one image in each sixth of the similarity range.
    for _, sketch in main.groupby("sketch_id"):
        strata = np.floor(sketch["latent_similarity"].astype(float) * 6 - 1e-9).clip(0, 5)
        assert sorted(strata.astype(int)) == list(range(6))
    with Image.open(small_set / main["sketch_path"].iloc[0]) as sketch:
        assert sketch.size == (96, 72) and sketch.mode == "L"
    with Image.open(small_set / main["image_path"].iloc[0]) as image:
        assert image.size == (96, 72) and image.mode == "RGB"
    about = json.loads((small_set / "generator.json").read_text())
    assert about["Seed"] == 7 and about["Design"]["sketches"] == 3


def _edges(path):
    grey = ndimage.gaussian_filter(np.asarray(Image.open(path).convert("L"), dtype=float), 1.0)
    return np.hypot(ndimage.sobel(grey, 0), ndimage.sobel(grey, 1)) > 60


def _edge_distance(sketch, image):
    """1 - correlation of the blurred sketch strokes and the blurred image edges."""
    a = ndimage.gaussian_filter(sketch.astype(float), 6)
    b = ndimage.gaussian_filter(image.astype(float), 6)
    return 1.0 - np.corrcoef(a.ravel(), b.ravel())[0, 1]


def test_latent_similarity_is_monotone_with_an_image_distance(tmp_path):
    folder = generate_set(
        tmp_path / "set", SetDesign(sketches=8, images_per_sketch=24, anchor_sketches=0), seed=3
    )
    manifest = read_manifest(folder)
    rows = []
    for _, pairs in manifest.groupby("sketch_id"):
        strokes = np.asarray(Image.open(folder / pairs["sketch_path"].iloc[0]).convert("L")) < 128
        for pair in pairs.itertuples():
            rows.append(
                (
                    pair.sketch_id,
                    float(pair.latent_similarity),
                    _edge_distance(strokes, _edges(folder / pair.image_path)),
                )
            )
    table = pd.DataFrame(rows, columns=["sketch_id", "similarity", "distance"])
    rho = table.groupby("sketch_id").apply(
        lambda t: stats.spearmanr(t["similarity"], t["distance"]).statistic,
        include_groups=False,
    )
    assert (rho < -0.3).all(), rho
    assert rho.mean() < -0.6, rho
    # Averaged over sketches, the distance falls strictly as the similarity rises.
    by_band = table.groupby(pd.cut(table["similarity"], np.linspace(0, 1, 6)), observed=True)[
        "distance"
    ].mean()
    assert (np.diff(by_band.to_numpy()) < 0).all(), by_band


def test_generate_refuses_a_folder_that_is_not_empty(small_set):
    result = run_main("stimuli", "generate", "--out", str(small_set))
    assert_input_error(result, str(small_set), "exists", "pass --overwrite")
    result = run_main("stimuli", "generate", "--out", str(small_set) + "x", "--anchor-images", "9")
    assert_input_error(result, "--anchor-images", "2..7")
