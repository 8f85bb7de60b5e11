"""Manifests, checksum lists, anchors.csv, images: any bytes give a checked set or one message."""

import csv
import io
import shutil
import tempfile
import zlib
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from sbir_study.foundation.checks import MAX_IMAGE_PIXELS, InputError, bad_ids, open_image
from sbir_study.stimuli import AnchorDesign, import_set, load_set, validate_set
from sbir_study.stimuli.validate import anchor_block
from tests.helpers import reads_or_refuses, table_bytes

TOKENS = [
    "sketch_id",
    "image_id",
    "sketch_path",
    "image_path",
    "role",
    "anchor_rating",
    "main",
    "anchor",
    "candidate",
    "s1",
    "i1",
    "i2",
    "sketches/s1.png",
    "images/s1/i1.png",
    "images/s1/i2.png",
    "../outside.png",
    "/etc/passwd",
    "sketches",
    "4",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder with the image files a fuzzed manifest may name (and one outside it)."""
    root = tmp_path_factory.mktemp("fuzzed")
    folder = root / "set"
    (folder / "sketches").mkdir(parents=True)
    (folder / "images" / "s1").mkdir(parents=True)
    Image.new("L", (8, 8), 255).save(folder / "sketches" / "s1.png")
    for name in ("i1", "i2"):
        Image.new("RGB", (8, 8), (9, 9, 9)).save(folder / "images" / "s1" / f"{name}.png")
    Image.new("L", (8, 8)).save(root / "outside.png")
    return folder


@settings(
    max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(manifest=table_bytes(TOKENS, separators=(",",)), sums=st.binary(max_size=200))
def test_any_bytes_as_a_manifest_and_checksums(files, manifest, sums):
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(shutil.copytree(files, Path(scratch) / "set"))
        (folder / "manifest.csv").write_bytes(manifest)
        (folder / "SHA256SUMS").write_bytes(sums)
        report = validate_set(folder, AnchorDesign(sketches=0))
        for problem in report.problems:
            assert problem and "\n" not in problem
        stimulus_set = reads_or_refuses(load_set, folder)
    if stimulus_set is not None:  # only possible with a valid listing; then every id is good
        assert not bad_ids(stimulus_set.manifest["sketch_id"]).any()


def _lab(root):
    for sketch in ("duck", "boat"):
        (root / "sketches").mkdir(parents=True, exist_ok=True)
        Image.new("L", (8, 8), 255).save(root / "sketches" / f"{sketch}.png")
        (root / "images" / sketch).mkdir(parents=True, exist_ok=True)
        for k in range(3):
            Image.new("RGB", (8, 8), (k, 0, 0)).save(root / "images" / sketch / f"{sketch}-{k}.png")
    return root


@st.composite
def anchor_tables(draw):
    """An anchors.csv as a lab might write it: any column order, an extra column, R's quoting,
    any line ends, empty lines, a byte-order mark; mostly right (each anchor sketch's three
    images rated 1, 4 and 7, as the block the set declares prescribes), now and then not."""
    columns = draw(st.permutations(["sketch_id", "image_id", "anchor_rating", "note"]))
    columns = columns if draw(st.booleans()) else [c for c in columns if c != "note"]
    rows = []
    for sketch in draw(st.lists(st.sampled_from(["duck", "boat"]), unique=True, max_size=2)):
        ratings = draw(st.permutations(["1", "4", "7"]))
        if not draw(st.integers(0, 6)):
            ratings[0] = draw(st.sampled_from(["2", "9", " 1", ""]))
        images = [f"{sketch}-{k}" for k in range(3)]
        if not draw(st.integers(0, 6)):
            images = images[:2]
        for image, rating in zip(images, ratings, strict=False):
            cells = {
                "sketch_id": sketch,
                "image_id": image,
                "anchor_rating": rating,
                "note": draw(st.sampled_from(["", "a, b", 'say "hi"', "two\nlines"])),
            }
            rows.append([cells[c] for c in columns])
    out = io.StringIO()
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    writer = csv.writer(
        out, quoting=quoting, lineterminator=draw(st.sampled_from(["\n", "\r\n", "\r"]))
    )
    writer.writerow(columns)
    for row in rows:
        if not draw(st.integers(0, 4)):
            out.write("\n")
        writer.writerow(row)
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + out.getvalue().encode("utf-8")


@settings(max_examples=100, deadline=5000)
@given(
    anchors=st.one_of(
        anchor_tables(),
        table_bytes(
            [
                "sketch_id",
                "image_id",
                "anchor_rating",
                "duck",
                "duck-0",
                "duck-1",
                "duck-2",
                "boat",
                "1",
                "4",
                "7",
            ],
            separators=(",",),
        ),
    ),
)
def test_any_bytes_as_anchors_csv(anchors):
    with tempfile.TemporaryDirectory() as scratch:
        folder = _lab(Path(scratch) / "lab")
        (folder / "anchors.csv").write_bytes(anchors)
        written = reads_or_refuses(import_set, folder)
        if written is None:  # refused: nothing was written
            assert not (folder / "manifest.csv").exists()
            assert not (folder / "SHA256SUMS").exists()
            return
        manifest = pd.read_csv(written, dtype=str, keep_default_na=False)
        # The set as written validates, with the anchor block its manifest declares ...
        assert validate_set(folder, anchor_block(manifest), check_images=False).ok
    # ... its anchor pairs and their ratings are those of anchors.csv, read by Python's csv
    # module, and every image of an anchor sketch is one of them; the rest are main pairs.
    expected = _anchors_by_csv_module(anchors)
    is_anchor = manifest["role"] == "anchor"
    anchor_rows = manifest[is_anchor].itertuples(index=False)
    assert {(r.sketch_id, r.image_id): r.anchor_rating for r in anchor_rows} == expected
    assert is_anchor.sum() == len(expected)
    assert set(manifest.loc[~is_anchor, "sketch_id"]).isdisjoint(s for s, _ in expected)
    assert (manifest.loc[~is_anchor, "role"] == "main").all()


def _anchors_by_csv_module(content: bytes) -> dict[tuple[str, str], str]:
    """(sketch_id, image_id) -> anchor_rating of an anchors.csv, by Python's csv module: the
    header is the first record with a field that is not blank, a record of empty fields is
    no row."""
    records = csv.reader(io.StringIO(content.decode("utf-8-sig"), newline=""))
    names = None
    found = {}
    for fields in records:
        if names is None:
            if any(f.strip(" \t\x0b\x0c") for f in fields):
                names = [f.strip() for f in fields]
            continue
        if any(fields):
            row = dict(zip(names, fields, strict=True))
            found[row["sketch_id"], row["image_id"]] = row["anchor_rating"]
    return found


def _png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` 1-bit pixels: a few hundred
    bytes that would decode to gigabytes (a "decompression bomb")."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([1, 0, 0, 0, 0])
    pixels = zlib.compress(bytes(4096), 9)  # far too short: it is never decoded anyway
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("size", [(8_000, 8_000), (100_000, 100_000), (2**31 - 1, 2)])
def test_an_image_declaring_too_many_pixels_is_refused_before_decoding(tmp_path, size):
    path = tmp_path / "bomb.png"
    path.write_bytes(_png_declaring(*size))
    assert path.stat().st_size < 5_000
    with pytest.raises(InputError, match=r"bomb\.png: declares"):
        open_image(path)


def test_the_limit_is_checked_by_every_reader_of_a_set(set_copy):
    """validate, load_set (simulate, baseline, run, analyze --stimuli) and import alike."""
    manifest = (set_copy / "manifest.csv").read_text()
    image = manifest.splitlines()[-1].split(",")[3]
    (set_copy / image).write_bytes(_png_declaring(10_000, 10_000))
    report = validate_set(set_copy)
    assert any(f"{image}: declares 100,000,000 pixels" in p for p in report.problems)
    with pytest.raises(InputError, match="declares 100,000,000 pixels"):
        load_set(set_copy)


def test_an_image_just_below_the_limit_is_read(tmp_path):
    width = MAX_IMAGE_PIXELS // 5_000
    Image.new("1", (width, 5_000)).save(tmp_path / "big.png")
    with open_image(tmp_path / "big.png") as image:
        assert image.size == (width, 5_000)


def test_a_manifest_line_is_the_files_own_line(set_copy):
    """Empty lines and CR-only line ends do not shift the line a message names."""
    lines = (set_copy / "manifest.csv").read_text().splitlines()
    cells = lines[-1].split(",")
    cells[4] = "star"
    text = "\r".join([*lines[:3], "", "", *lines[3:-1], ",".join(cells)]) + "\r"
    (set_copy / "manifest.csv").write_text(text, newline="")
    report = validate_set(set_copy)
    assert f"{set_copy / 'manifest.csv'}: line {len(lines) + 2}: role 'star'" in " ".join(
        report.problems
    )
