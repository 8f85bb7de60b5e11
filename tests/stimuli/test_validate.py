"""Stimulus-set format and validation: files, checksums, paths, pairs, the anchor block."""

import hashlib
import os
import subprocess

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sbir_study.foundation.checks import InputError
from sbir_study.stimuli import (
    AnchorDesign,
    SetDesign,
    generate_set,
    read_manifest,
    set_digest,
    validate_set,
    write_checksums,
)
from sbir_study.stimuli.manifest import read_checksums
from tests.helpers import run_main


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


def test_a_generated_set_validates_and_sha256sum_agrees(small_set):
    result = run_main("stimuli", "validate", str(small_set))
    assert result.returncode == 0, result.stderr
    assert "3 sketches, 18 images, anchors 3 sketches x 7 images" in result.stdout
    # Independent check with GNU coreutils: every listed file matches ...
    check = subprocess.run(
        ["sha256sum", "--check", "--quiet", "SHA256SUMS"],
        cwd=small_set,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    # ... and the set digest is `sha256sum manifest.csv SHA256SUMS | sha256sum`.
    listing = subprocess.run(
        ["sha256sum", "manifest.csv", "SHA256SUMS"], cwd=small_set, capture_output=True, check=True
    ).stdout
    assert set_digest(small_set) == hashlib.sha256(listing).hexdigest()
    assert set_digest(small_set) in result.stdout


def test_every_file_is_listed_and_the_digest_follows_any_change(set_copy):
    listed, problems = read_checksums(set_copy)
    assert not problems
    on_disk = {p.relative_to(set_copy).as_posix() for p in set_copy.rglob("*") if p.is_file()}
    # The output record of stimuli generate is not a file of the set (docs/outputs.md).
    assert set(listed) == on_disk - {"SHA256SUMS", ".sbir-study-output.json"}
    before = set_digest(set_copy)
    image = set_copy / read_manifest(set_copy)["image_path"].iloc[5]
    Image.new("RGB", (96, 72), (10, 20, 30)).save(image, format="JPEG")
    resum(set_copy)
    assert set_digest(set_copy) != before


def test_missing_image(set_copy):
    path = read_manifest(set_copy)["image_path"].iloc[3]
    (set_copy / path).unlink()
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(result, f"{path}: no such file (manifest line 5, image_path)")


def test_unreadable_image(set_copy):
    path = read_manifest(set_copy)["image_path"].iloc[0]
    (set_copy / path).write_bytes(b"not a JPEG at all")
    resum(set_copy)
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(result, f"{path}: cannot be read as an image", "manifest line 2", lines=1)


def test_checksum_mismatch(set_copy):
    path = read_manifest(set_copy)["sketch_path"].iloc[-1]
    Image.new("L", (96, 72), 255).save(set_copy / path)  # a valid image, but not the listed one
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(result, f"{path}: checksum mismatch", lines=1)


def test_missing_checksums_file(set_copy):
    (set_copy / "SHA256SUMS").unlink()
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(result, "SHA256SUMS: no such file", lines=1)


def test_duplicate_pair(set_copy):
    edit_manifest(set_copy, lambda m: pd.concat([m, m.iloc[[24]]], ignore_index=True))
    result = run_main("stimuli", "validate", str(set_copy))
    row = read_manifest(set_copy).iloc[24]
    assert_problems(
        result,
        f"line 41: duplicate pair ({row.sketch_id}, {row.image_id}); first on line 26",
        lines=1,
    )


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
    result = run_main("stimuli", "validate", str(set_copy))
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
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(
        result, "line 23: image_path 'images/s01/linked.png'", "outside the set", lines=1
    )


def test_anchor_block_not_whole(set_copy):
    edit_manifest(set_copy, lambda m: m.drop(index=9))  # the third image of the second anchor
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(
        result,
        "anchor sketch a02 has images rated 1, 2, 4, 5, 6, 7; expected one "
        "each rated 1, 2, 3, 4, 5, 6, 7",
        lines=1,
    )
    # The size of a whole block is configurable: a set without anchoring validates with 0.
    edit_manifest(set_copy, lambda m: m[m["role"] != "anchor"])
    assert_problems(
        run_main("stimuli", "validate", str(set_copy)),
        "anchor block has 0 sketches; expected 3",
        lines=1,
    )
    result = run_main("stimuli", "validate", "--anchor-sketches", "0", str(set_copy))
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
        return pd.concat([m, extra], ignore_index=True)

    edit_manifest(set_copy, change)
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(result, "line 41: sketch s99 has no images", lines=1)


def test_many_problems_one_line_each_and_load_set_names_the_first(set_copy):
    manifest = read_manifest(set_copy)
    for path in manifest["image_path"].iloc[21:24]:
        (set_copy / path).unlink()
    result = run_main("stimuli", "validate", str(set_copy))
    assert_problems(result, *manifest["image_path"].iloc[21:24])
    with pytest.raises(InputError, match="more problems; sbir-study stimuli validate"):
        from sbir_study.stimuli import load_set

        load_set(set_copy)


def test_bad_manifest_header_and_roles(set_copy):
    edit_manifest(set_copy, lambda m: m.assign(role=np.where(m.index == 25, "mian", m["role"])))
    assert_problems(
        run_main("stimuli", "validate", str(set_copy)),
        "line 27: role 'mian': expected one of main, anchor, candidate",
    )
    edit_manifest(set_copy, lambda m: m.drop(columns="sketch_path"))
    assert_problems(
        run_main("stimuli", "validate", str(set_copy)),
        "line 1: missing column 'sketch_path'",
        lines=1,
    )
    assert_problems(
        run_main("stimuli", "validate", str(set_copy / "nowhere")), "no such folder", lines=1
    )


def test_validate_accepts_a_pool_without_anchors(tmp_path):
    pool = generate_set(
        tmp_path / "pool",
        SetDesign(
            sketches=2,
            images_per_sketch=4,
            anchor_sketches=0,
            width=64,
            height=64,
            role="candidate",
        ),
        seed=1,
    )
    report = validate_set(pool, AnchorDesign())
    assert report.ok, report.problems
    assert report.summary().startswith(f"{pool}: 8 candidate pairs, no anchors")
