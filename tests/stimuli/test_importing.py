"""Importing a lab's own images as a stimulus set."""

import shutil
import subprocess

import pandas as pd
import pytest
from PIL import Image

from sbir_study.stimuli import import_set, read_manifest
from tests.helpers import assert_input_error, run_main


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
    result = run_main("stimuli", "import", str(folder), "--anchor-sketches", "1")
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
    assert_input_error(run_main("stimuli", "import", str(folder)), "manifest.csv", "--overwrite")
    Image.new("RGB", (40, 30)).save(folder / "images" / "duck" / "duck-new.png")
    again = import_set(folder, overwrite=True)
    assert len(pd.read_csv(again)) == 22


@pytest.mark.parametrize(
    "damage,fragments",
    [
        (lambda f: shutil.rmtree(f / "images" / "duck"), ["duck.png", "has no images"]),
        (lambda f: (f / "images" / "ghost").mkdir(), ["ghost", "no ghost.<ext>"]),
        (
            lambda f: (f / "images" / "duck" / "notes.txt").write_text("x"),
            ["notes.txt", "expected an image file"],
        ),
        (
            lambda f: Image.new("L", (4, 4)).save(f / "sketches" / "duck.jpg"),
            ["duck.png", "two files"],
        ),
        (
            lambda f: (f / "anchors.csv").write_text(
                "sketch_id,image_id,anchor_rating\nduck,duck-0,10\n"
            ),
            ["anchors.csv: line 2", "anchor_rating '10'", "1..9"],
        ),
        (
            lambda f: (f / "anchors.csv").write_text(
                "sketch_id,image_id,anchor_rating\nduck,duck-7,1\n"
            ),
            ["anchors.csv: line 2", "(duck, duck-7) has no files"],
        ),
        (
            lambda f: (f / "anchors.csv").write_text(
                "sketch_id,image_id,anchor_rating\nduck,duck-0,1\n"
            ),
            ["image duck-1 of anchor sketch duck has no anchor_rating"],
        ),
    ],
)
def test_import_errors(tmp_path, damage, fragments):
    folder = _lab_folder(tmp_path / "lab")
    damage(folder)
    result = run_main("stimuli", "import", str(folder), "--anchor-sketches", "0")
    assert_input_error(result, *fragments)
    assert not (folder / "manifest.csv").exists()


def test_import_names_the_validation_problems(tmp_path):
    folder = _lab_folder(tmp_path / "lab")
    (folder / "images" / "duck" / "duck-1.jpg").write_bytes(b"broken")
    result = run_main("stimuli", "import", str(folder), "--anchor-sketches", "0")
    assert result.returncode == 2
    assert "duck-1.jpg: cannot be read as an image" in result.stderr
