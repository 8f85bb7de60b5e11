"""Making a stimulus set of a lab's own images, where they lie.

The folder convention::

    SET/sketches/<sketch_id>.<ext>
    SET/images/<sketch_id>/<image_id>.<ext>
    SET/anchors.csv            (optional: sketch_id, image_id, anchor_rating)

:func:`import_set` writes ``manifest.csv`` and ``SHA256SUMS`` and touches no other file.
File names without extension are the ids. The sketches of ``anchors.csv`` are anchor
sketches, each image with a prescribed rating there; the others get the role given. The new
files are validated as a whole set before they are put in place together, so a bad set or an
interrupted import leaves the folder as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sbir_study.foundation.checks import ID_RULE, InputError, bad_ids, check_option
from sbir_study.foundation.tables import read_table, read_text

from .manifest import CHECKSUMS, MANIFEST, write_checksums, write_manifest
from .validate import SCALE, AnchorDesign

__all__ = ["ANCHORS", "IMAGE_SUFFIXES", "import_set"]

ANCHORS = "anchors.csv"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp")
_IGNORED = {"Thumbs.db", "desktop.ini"}


def import_set(
    folder: str | Path,
    *,
    role: str = "main",
    overwrite: bool = False,
    anchors: AnchorDesign | None = None,
) -> Path:
    """Write the manifest and checksums of a set laid out by the folder convention; return the
    manifest's path.

    Parameters
    ----------
    role
        ``main`` (a study set) or ``candidate`` (a pilot pool) for the non-anchor sketches.
    overwrite
        Replace the files of an earlier import; never a manifest ``stimuli import`` did not
        write.
    anchors
        The anchor block the set must have (default: the one ``anchors.csv`` declares).

    Raises
    ------
    InputError
        Naming the file, for an unknown file type, a sketch without images or images without a
        sketch, two files for one id, a bad id, a bad ``anchors.csv``, a bad image, or anything
        :func:`~sbir_study.stimuli.validate_set` finds; nothing is written then.
    """
    from sbir_study.foundation.outputs import check_target, output_files

    from .validate import _validate, anchor_block

    folder = Path(folder)
    check_option("role", role, ("main", "candidate"))
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "no such folder"
        raise InputError(f"{folder}: {what}; expected a set with sketches/ and images/")
    writing: dict[str, Any] = dict(companions=[CHECKSUMS], overwrite=overwrite, inside_inputs=True)
    try:
        check_target(folder / MANIFEST, "stimuli import", folder=False, **writing)
    except InputError as error:
        if not overwrite and "pass --overwrite" in str(error):
            raise InputError(
                f"{folder / MANIFEST}: exists; the set was imported before (pass --overwrite "
                "to import it again)"
            ) from None
        raise
    manifest = _manifest(folder, role)
    extra = [ANCHORS] if (folder / ANCHORS).exists() else []
    listed = [*manifest["sketch_path"], *manifest["image_path"], MANIFEST, *extra]
    with output_files(folder / MANIFEST, "stimuli import", **writing) as (new, sums):
        write_manifest(new.parent, manifest)
        write_checksums(folder, listed, into=sums, staged={MANIFEST: new})
        report = _validate(
            folder,
            anchors or anchor_block(manifest),
            check_images=True,
            staged={MANIFEST: new, CHECKSUMS: sums},
        )
        if not report.ok:
            more = len(report.problems) - 1
            also = f"and {more} more; " if more else ""
            raise InputError(f"{report.problems[0]} ({also}nothing was written)")
    return folder / MANIFEST


def _manifest(folder: Path, role: str) -> pd.DataFrame:
    """The manifest of the set laid out in ``folder``, from its files and ``anchors.csv``."""
    for sub in ("sketches", "images"):
        if not (folder / sub).is_dir():
            raise InputError(f"{folder / sub}: no such folder; expected {sub}/ in the set")

    sketches = _by_stem(folder, folder / "sketches")
    rows = []
    image_folders = {p.name: p for p in _entries(folder / "images") if p.is_dir()}
    for stray in sorted(set(image_folders) - set(sketches)):
        raise InputError(
            f"{image_folders[stray]}: images for sketch {stray!r}, but sketches/ has no "
            f"{stray}.<ext>; expected one sketch file per image folder"
        )
    for path in _entries(folder / "images"):
        if not path.is_dir():
            raise InputError(
                f"{path}: expected only folders in images/, one per sketch "
                "(images/<sketch_id>/<image_id>.<ext>)"
            )
    for sketch_id, sketch_path in sketches.items():
        if sketch_id not in image_folders:
            raise InputError(
                f"{sketch_path}: sketch {sketch_id!r} has no images; expected "
                f"{folder / 'images' / sketch_id}/<image_id>.<ext>"
            )
        images = _by_stem(folder, image_folders[sketch_id])
        if not images:
            raise InputError(f"{image_folders[sketch_id]}: sketch {sketch_id!r} has no images")
        for image_id, image_path in images.items():
            rows.append(
                (sketch_id, image_id, _relative(folder, sketch_path), _relative(folder, image_path))
            )
    if not rows:
        raise InputError(f"{folder / 'sketches'}: no sketch files; expected <sketch_id>.<ext>")
    manifest = pd.DataFrame(rows, columns=["sketch_id", "image_id", "sketch_path", "image_path"])
    manifest["role"] = role
    anchors_file = folder / ANCHORS
    if anchors_file.exists():
        manifest = _with_anchors(manifest, anchors_file)
    return manifest


def _entries(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in _IGNORED
    )


def _by_stem(root: Path, folder: Path) -> dict[str, Path]:
    """The image files of ``folder`` by file name without extension."""
    found: dict[str, Path] = {}
    for path in _entries(folder):
        if path.is_dir() or path.suffix.lower() not in IMAGE_SUFFIXES:
            raise InputError(
                f"{path}: expected an image file ({', '.join(IMAGE_SUFFIXES)}) in {folder.name}/"
            )
        stem = path.stem
        if bad_ids([stem])[0]:
            raise InputError(f"{path}: expected a file name that is {ID_RULE} and an extension")
        if stem in found:
            raise InputError(f"{path}: id {stem!r} has two files ({found[stem].name}, {path.name})")
        found[stem] = path
    return found


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _with_anchors(manifest: pd.DataFrame, anchors_file: Path) -> pd.DataFrame:
    anchors = read_table(read_text(anchors_file), ",")
    for column in ("sketch_id", "image_id", "anchor_rating"):
        if column not in anchors.columns:
            raise InputError(
                f"{anchors_file}: line 1: missing column {column!r}; expected sketch_id, "
                "image_id, anchor_rating"
            )
    known = set(zip(manifest["sketch_id"], manifest["image_id"], strict=True))
    for line, row in zip(anchors.attrs["lines"], anchors.itertuples(index=False), strict=True):
        if (row.sketch_id, row.image_id) not in known:
            raise InputError(
                f"{anchors_file}: line {line}: pair ({row.sketch_id}, {row.image_id}) has no "
                "files; expected images/<sketch_id>/<image_id>.<ext>"
            )
        if row.anchor_rating not in {str(k) for k in range(SCALE[0], SCALE[1] + 1)}:
            raise InputError(
                f"{anchors_file}: line {line}: anchor_rating {row.anchor_rating!r}: expected a "
                f"whole number {SCALE[0]}..{SCALE[1]} (a point of the scale it is rated on)"
            )
    duplicated = anchors.duplicated(["sketch_id", "image_id"])
    if duplicated.any():
        line = anchors.attrs["lines"][int(duplicated.to_numpy().argmax())]
        raise InputError(f"{anchors_file}: line {line}: pair listed twice")
    prescribed = anchors.set_index(["sketch_id", "image_id"])["anchor_rating"]
    is_anchor = manifest["sketch_id"].isin(set(anchors["sketch_id"]))
    keys = pd.MultiIndex.from_frame(manifest[["sketch_id", "image_id"]])
    manifest["anchor_rating"] = prescribed.reindex(keys).to_numpy()
    unrated = is_anchor & manifest["anchor_rating"].isna()
    if unrated.any():
        row = manifest[unrated].iloc[0]
        raise InputError(
            f"{anchors_file}: image {row.image_id} of anchor sketch {row.sketch_id} has no "
            "anchor_rating; expected every image of an anchor sketch listed"
        )
    manifest.loc[is_anchor, "role"] = "anchor"
    manifest["anchor_rating"] = manifest["anchor_rating"].fillna("")
    order = manifest["role"].map({"anchor": 0}).fillna(1)
    return (
        manifest.assign(_order=order)
        .sort_values("_order", kind="stable")
        .drop(columns="_order")
        .reset_index(drop=True)
    )
