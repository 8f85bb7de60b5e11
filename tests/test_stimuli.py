"""Stimulus sets: format and validation, generation, import, pilot-based selection."""

import hashlib
import json
import os
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from scipy import ndimage, stats
from test_ratings import assert_input_error, run_cli

from analysis import InputError, load_ratings
from stimuli import (
    AnchorDesign,
    SetDesign,
    distance_to_uniform,
    generate_set,
    import_set,
    read_manifest,
    select_pairs,
    set_digest,
    validate_set,
    write_checksums,
)
from stimuli.manifest import read_checksums
from stimuli.select import quotas, rating_counts, sketch_spread

SMALL = SetDesign(sketches=3, images_per_sketch=6, width=96, height=72)


@pytest.fixture(scope="session")
def small_set(tmp_path_factory):
    return generate_set(tmp_path_factory.mktemp("generated") / "set", SMALL, seed=7)


@pytest.fixture
def set_copy(small_set, tmp_path):
    return shutil.copytree(small_set, tmp_path / "set")


def resum(folder):
    """Rewrite SHA256SUMS for the files it lists that still exist (after editing the set)."""
    listed, _ = read_checksums(folder)
    write_checksums(folder, [p for p in listed if (folder / p).is_file()])


def edit_manifest(folder, change):
    manifest = read_manifest(folder)
    manifest = change(manifest)
    manifest.to_csv(folder / "manifest.csv", index=False, lineterminator="\n")
    resum(folder)


def assert_problems(result, *fragments, lines=None):
    """Exit 2, no traceback, one 'error:' line per problem; each fragment in some line."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = result.stderr.strip().splitlines()
    assert all(line.startswith("sbir-study: error: ") for line in errors), errors
    if lines is not None:
        assert len(errors) == lines, errors
    for fragment in fragments:
        assert any(fragment in line for line in errors), (fragment, errors)


# --- Format and validation ----------------------------------------------------------------------


def test_a_generated_set_validates_and_sha256sum_agrees(small_set):
    result = run_cli("stimuli", "validate", str(small_set))
    assert result.returncode == 0, result.stderr
    assert "3 sketches, 18 images, anchors 3 sketches x 7 images" in result.stdout
    # Independent check with GNU coreutils: every listed file matches ...
    check = subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=small_set,
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    # ... and the set digest is `sha256sum manifest.csv SHA256SUMS | sha256sum`.
    listing = subprocess.run(["sha256sum", "manifest.csv", "SHA256SUMS"], cwd=small_set,
                             capture_output=True, check=True).stdout  # fmt: skip
    assert set_digest(small_set) == hashlib.sha256(listing).hexdigest()
    assert set_digest(small_set) in result.stdout


def test_every_file_is_listed_and_the_digest_follows_any_change(set_copy):
    listed, problems = read_checksums(set_copy)
    assert not problems
    on_disk = {p.relative_to(set_copy).as_posix() for p in set_copy.rglob("*") if p.is_file()}
    assert set(listed) == on_disk - {"SHA256SUMS"}
    before = set_digest(set_copy)
    image = set_copy / read_manifest(set_copy)["image_path"].iloc[5]
    Image.new("RGB", (96, 72), (10, 20, 30)).save(image, format="JPEG")
    resum(set_copy)
    assert set_digest(set_copy) != before


def test_missing_image(set_copy):
    path = read_manifest(set_copy)["image_path"].iloc[3]
    (set_copy / path).unlink()
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, f"{path}: no such file (manifest line 5, image_path)")


def test_unreadable_image(set_copy):
    path = read_manifest(set_copy)["image_path"].iloc[0]
    (set_copy / path).write_bytes(b"not a JPEG at all")
    resum(set_copy)
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, f"{path}: cannot be read as an image", "manifest line 2", lines=1)


def test_checksum_mismatch(set_copy):
    path = read_manifest(set_copy)["sketch_path"].iloc[-1]
    Image.new("L", (96, 72), 255).save(set_copy / path)  # a valid image, but not the listed one
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, f"{path}: checksum mismatch", lines=1)


def test_missing_checksums_file(set_copy):
    (set_copy / "SHA256SUMS").unlink()
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, "SHA256SUMS: no such file", lines=1)


def test_duplicate_pair(set_copy):
    edit_manifest(set_copy, lambda m: pd.concat([m, m.iloc[[24]]], ignore_index=True))
    result = run_cli("stimuli", "validate", str(set_copy))
    row = read_manifest(set_copy).iloc[24]
    assert_problems(result, f"line 41: duplicate pair ({row.sketch_id}, {row.image_id}); first "
                    "on line 26", lines=1)  # fmt: skip


@pytest.mark.parametrize(
    "bad_path,expected",
    [
        ("/etc/passwd", "not an absolute path"),
        ("images/../../outside.png", "without '..'"),
        ("images\\s01\\x.png", "'/' as separator"),
        ("", "got an empty cell"),
    ],
)
def test_unsafe_paths(set_copy, bad_path, expected):
    def change(m):
        m.loc[30, "image_path"] = bad_path
        return m

    edit_manifest(set_copy, change)
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, f"line 32: image_path {bad_path!r}", expected, lines=1)


def test_symlink_out_of_the_set(set_copy, tmp_path):
    outside = tmp_path / "elsewhere.png"
    Image.new("L", (96, 72), 255).save(outside)
    link = set_copy / "images" / "s01" / "linked.png"
    os.symlink(outside, link)

    def change(m):
        m.loc[21, "image_path"] = "images/s01/linked.png"
        return m

    edit_manifest(set_copy, change)
    write_checksums(set_copy, [*read_checksums(set_copy)[0], "images/s01/linked.png"])
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, "line 23: image_path 'images/s01/linked.png'", "outside the set",
                    lines=1)  # fmt: skip


def test_anchor_block_not_whole(set_copy):
    edit_manifest(set_copy, lambda m: m.drop(index=9))  # the third image of the second anchor
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, "anchor sketch a02 has images rated 1, 2, 4, 5, 6, 7; expected one "
                    "each rated 1, 2, 3, 4, 5, 6, 7", lines=1)  # fmt: skip
    # The size of a whole block is configurable: a set without anchoring validates with 0.
    edit_manifest(set_copy, lambda m: m[m["role"] != "anchor"])
    assert_problems(run_cli("stimuli", "validate", str(set_copy)),
                    "anchor block has 0 sketches; expected 3", lines=1)  # fmt: skip
    result = run_cli("stimuli", "validate", "--anchor-sketches", "0", str(set_copy))
    assert result.returncode == 0, result.stderr
    assert "no anchors" in result.stdout


def test_sketch_without_images(set_copy):
    def change(m):
        extra = m.iloc[[0]].assign(
            sketch_id="s99",
            image_id="",
            image_path="",
            role="main",
            anchor_rating="",
            sketch_path="sketches/s01.png",
        )
        return pd.concat([m, extra], ignore_index=True)  # fmt: skip

    edit_manifest(set_copy, change)
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, "line 41: sketch s99 has no images", lines=1)


def test_many_problems_one_line_each_and_load_set_names_the_first(set_copy):
    manifest = read_manifest(set_copy)
    for path in manifest["image_path"].iloc[21:24]:
        (set_copy / path).unlink()
    result = run_cli("stimuli", "validate", str(set_copy))
    assert_problems(result, *manifest["image_path"].iloc[21:24])
    with pytest.raises(InputError, match="more problems; sbir-study stimuli validate"):
        from stimuli import load_set

        load_set(set_copy)


def test_bad_manifest_header_and_roles(set_copy):
    edit_manifest(set_copy, lambda m: m.assign(role=np.where(m.index == 25, "mian", m["role"])))
    assert_problems(run_cli("stimuli", "validate", str(set_copy)),
                    "line 27: role 'mian': expected one of main, anchor, candidate")  # fmt: skip
    edit_manifest(set_copy, lambda m: m.drop(columns="sketch_path"))
    assert_problems(run_cli("stimuli", "validate", str(set_copy)),
                    "line 1: missing column 'sketch_path'", lines=1)  # fmt: skip
    assert_problems(run_cli("stimuli", "validate", str(set_copy / "nowhere")),
                    "no such folder", lines=1)  # fmt: skip


# --- Generation ---------------------------------------------------------------------------------


def test_generate_is_reproducible_byte_for_byte(small_set, tmp_path):
    again = generate_set(tmp_path / "again", SMALL, seed=7)
    assert (again / "SHA256SUMS").read_bytes() == (small_set / "SHA256SUMS").read_bytes()
    assert set_digest(again) == set_digest(small_set)
    other = generate_set(tmp_path / "other", SMALL, seed=8)
    mine, theirs = read_checksums(small_set)[0], read_checksums(other)[0]
    differing = [p for p in mine if p.endswith((".png", ".jpg")) and mine[p] != theirs.get(p)]
    assert len(differing) == len([p for p in mine if p.endswith((".png", ".jpg"))])
    # Sketch k does not depend on how many sketches are drawn.
    more = generate_set(tmp_path / "more", SetDesign(sketches=4, images_per_sketch=6, width=96,
                                                     height=72), seed=7)  # fmt: skip
    assert read_checksums(more)[0]["images/s03/s03_i06.jpg"] == mine["images/s03/s03_i06.jpg"]


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
    folder = generate_set(tmp_path / "set", SetDesign(sketches=8, images_per_sketch=24,
                                                      anchor_sketches=0), seed=3)  # fmt: skip
    manifest = read_manifest(folder)
    rows = []
    for _, pairs in manifest.groupby("sketch_id"):
        strokes = np.asarray(Image.open(folder / pairs["sketch_path"].iloc[0]).convert("L")) < 128
        for pair in pairs.itertuples():
            rows.append((pair.sketch_id, float(pair.latent_similarity),
                         _edge_distance(strokes, _edges(folder / pair.image_path))))  # fmt: skip
    table = pd.DataFrame(rows, columns=["sketch_id", "similarity", "distance"])
    rho = table.groupby("sketch_id").apply(
        lambda t: stats.spearmanr(t["similarity"], t["distance"]).statistic,
        include_groups=False,
    )
    assert (rho < -0.3).all(), rho
    assert rho.mean() < -0.6, rho
    # Averaged over sketches, the distance falls strictly as the similarity rises.
    by_band = table.groupby(pd.cut(table["similarity"], np.linspace(0, 1, 6)),
                            observed=True)["distance"].mean()  # fmt: skip
    assert (np.diff(by_band.to_numpy()) < 0).all(), by_band


def test_generate_refuses_a_folder_that_is_not_empty(small_set):
    result = run_cli("stimuli", "generate", "--out", str(small_set))
    assert_input_error(result, str(small_set), "not empty")
    result = run_cli("stimuli", "generate", "--out", str(small_set) + "x", "--anchor-images", "9")
    assert_input_error(result, "anchor_images", "2..7")


# --- Import ------------------------------------------------------------------------------------


def _lab_folder(root, sketches=("duck", "tower"), images=3):
    for sketch in sketches:
        (root / "sketches").mkdir(parents=True, exist_ok=True)
        Image.new("L", (40, 30), 255).save(root / "sketches" / f"{sketch}.png")
        (root / "images" / sketch).mkdir(parents=True, exist_ok=True)
        for i in range(images):
            Image.new("RGB", (40, 30), (i * 30, 90, 200)).save(
                root / "images" / sketch / f"{sketch}-{i}.jpg"
            )
    return root


def test_import_writes_manifest_and_checksums_without_touching_the_files(tmp_path):
    folder = _lab_folder(tmp_path / "lab", sketches=("duck", "tower", "boat"), images=7)
    pd.DataFrame(
        {
            "sketch_id": "boat",
            "image_id": [f"boat-{i}" for i in range(7)],
            "anchor_rating": range(1, 8),
        }
    ).to_csv(folder / "anchors.csv", index=False)
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*.*")}
    result = run_cli("stimuli", "import", str(folder), "--anchor-sketches", "1")
    assert result.returncode == 0, result.stderr
    assert "2 sketches, 14 images, anchors 1 sketches x 7 images" in result.stdout
    assert before == {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in before}
    manifest = read_manifest(folder)
    assert manifest["role"].tolist() == ["anchor"] * 7 + ["main"] * 14
    assert manifest.loc[0, "image_path"] == "images/boat/boat-0.jpg"
    assert manifest["anchor_rating"].tolist()[:7] == [str(k) for k in range(1, 8)]
    check = subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=folder)
    assert check.returncode == 0
    # Importing again needs --overwrite; with it, new images are picked up.
    assert_input_error(run_cli("stimuli", "import", str(folder)), "manifest.csv", "--overwrite")
    Image.new("RGB", (40, 30)).save(folder / "images" / "duck" / "duck-new.png")
    again = import_set(folder, overwrite=True)
    assert len(pd.read_csv(again)) == 22


@pytest.mark.parametrize(
    "damage,fragments",
    [
        (lambda f: shutil.rmtree(f / "images" / "duck"), ["duck.png", "has no images"]),
        (lambda f: (f / "images" / "ghost").mkdir(), ["ghost", "no ghost.<ext>"]),
        (lambda f: (f / "images" / "duck" / "notes.txt").write_text("x"),
         ["notes.txt", "expected an image file"]),
        (lambda f: Image.new("L", (4, 4)).save(f / "sketches" / "duck.jpg"),
         ["duck.png", "two files"]),
        (lambda f: (f / "anchors.csv").write_text("sketch_id,image_id,anchor_rating\n"
                                                  "duck,duck-0,9\n"),
         ["anchors.csv: line 2", "anchor_rating '9'"]),
        (lambda f: (f / "anchors.csv").write_text("sketch_id,image_id,anchor_rating\n"
                                                  "duck,duck-7,1\n"),
         ["anchors.csv: line 2", "(duck, duck-7) has no files"]),
        (lambda f: (f / "anchors.csv").write_text("sketch_id,image_id,anchor_rating\n"
                                                  "duck,duck-0,1\n"),
         ["image duck-1 of anchor sketch duck has no anchor_rating"]),
    ],
)  # fmt: skip
def test_import_errors(tmp_path, damage, fragments):
    folder = _lab_folder(tmp_path / "lab")
    damage(folder)
    result = run_cli("stimuli", "import", str(folder), "--anchor-sketches", "0")
    assert_input_error(result, *fragments)
    assert not (folder / "manifest.csv").exists()


def test_import_names_the_validation_problems(tmp_path):
    folder = _lab_folder(tmp_path / "lab")
    (folder / "images" / "duck" / "duck-1.jpg").write_bytes(b"broken")
    result = run_cli("stimuli", "import", str(folder), "--anchor-sketches", "0")
    assert result.returncode == 2
    assert "duck-1.jpg: cannot be read as an image" in result.stderr


# --- Selection (Sec. 2.2) ----------------------------------------------------------------------


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


def test_validate_accepts_a_pool_without_anchors(tmp_path):
    pool = generate_set(tmp_path / "pool", SetDesign(sketches=2, images_per_sketch=4,
                                                     anchor_sketches=0, width=64, height=64,
                                                     role="candidate"), seed=1)  # fmt: skip
    report = validate_set(pool, AnchorDesign())
    assert report.ok, report.problems
    assert report.summary().startswith(f"{pool}: 8 candidate pairs, no anchors")


# --- Simulating participants on a set ----------------------------------------------------------


def test_simulate_on_a_set_rates_its_pairs_and_records_its_digest(small_set, tmp_path):
    result = run_cli("simulate", "--stimuli", str(small_set), "--participants", "4",
                     "--out", str(tmp_path / "data"), "--seed", "1")  # fmt: skip
    assert result.returncode == 0, result.stderr
    ratings = load_ratings(tmp_path / "data")
    manifest = read_manifest(small_set)
    shown = set(zip(ratings["sketch_id"].astype(str), ratings["image_id"].astype(str),
                    strict=True))  # fmt: skip
    assert shown == set(zip(manifest["sketch_id"], manifest["image_id"], strict=True))
    sidecar = next((tmp_path / "data").rglob("*_beh.json"))
    assert json.loads(sidecar.read_text())["StimulusSetDigest"] == set_digest(small_set)
    # Latent similarity drives the ratings: more similar pairs are rated better.
    main = ratings[ratings["phase"] == "main"].merge(
        manifest.astype({"latent_similarity": float}), on=["sketch_id", "image_id"]
    )
    rho = stats.spearmanr(main["latent_similarity"], main["rating"], nan_policy="omit").statistic
    assert rho < -0.5
    assert_input_error(run_cli("simulate", "--stimuli", str(small_set), "--sketches", "4",
                               "--out", str(tmp_path / "x")), "--sketches")  # fmt: skip
