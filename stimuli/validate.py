"""Checking a stimulus set before anyone rates it.

:func:`validate_set` lists every problem, one line each; :func:`load_set`, which the rest of
the toolkit calls, returns the checked set or raises the first problem.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from sbir_study.foundation import paper
from sbir_study.foundation.checks import ID_RULE, InputError, bad_ids, open_image
from sbir_study.foundation.provenance import file_digest
from sbir_study.foundation.scale import PAPER_SCALE, SCALE_POINTS, Scale

from .manifest import (
    CHECKSUMS,
    MANIFEST,
    ROLES,
    read_checksums,
    read_manifest,
    set_digest,
)

__all__ = ["AnchorDesign", "SetReport", "StimulusSet", "load_set", "validate_set"]

#: The prescribed ratings a set may hold, 1..9; a session checks them against its protocol's scale.
SCALE = (1, SCALE_POINTS[1])


@dataclass(frozen=True)
class AnchorDesign:
    """A whole anchor block: the paper's 3 sketches x 7 images rated 1..7.

    ``sketches = 0`` declares a study without anchoring; a pilot pool needs no anchors. Each
    sketch's images are rated at points spread evenly over ``scale``; None is the set's own
    scale, found when the set is checked (:meth:`on_set`).
    """

    sketches: int = paper.ANCHOR_SKETCHES
    images: int = paper.ANCHOR_IMAGES
    scale: Scale | None = None

    def __post_init__(self) -> None:
        if self.sketches < 0:
            raise InputError(f"anchor sketches: expected 0 or more, got {self.sketches}")
        most = self.scale.k if self.scale is not None else SCALE[1] - SCALE[0] + 1
        if not 2 <= self.images <= most:
            raise InputError(
                f"anchor images: expected 2 to {most} per sketch"
                + (f" (the scale {self.scale})" if self.scale is not None else "")
                + f", got {self.images}"
            )

    @property
    def ratings(self) -> tuple[int, ...]:
        """The prescribed ratings of one anchor sketch's images, spread evenly over the scale.

        >>> AnchorDesign().ratings, AnchorDesign(images=3, scale=Scale(1, 5)).ratings
        ((1, 2, 3, 4, 5, 6, 7), (1, 3, 5))
        """
        scale = self.scale or (
            PAPER_SCALE if self.images <= PAPER_SCALE.k else Scale(1, self.images)
        )
        spread = np.rint(np.linspace(scale.low, scale.high, self.images)).astype(int)
        return tuple(int(r) for r in spread)

    def on_set(self, manifest: pd.DataFrame) -> AnchorDesign:
        """This design with a scale: if it has none, 1 to the highest prescribed anchor rating of
        the manifest, at least 1..images (1..7 without prescribed ratings).
        """
        if self.scale is not None:
            return self
        given = (
            manifest.loc[manifest["role"] == "anchor", "anchor_rating"]
            if ("anchor_rating" in manifest.columns)
            else pd.Series(dtype=str)
        )
        points = given[given.isin([str(k) for k in range(SCALE[0], SCALE[1] + 1)])]
        highest = int(points.astype(int).max()) if len(points) else PAPER_SCALE.high
        return replace(self, scale=Scale(1, max(highest, self.images, 2)))


@dataclass(frozen=True)
class StimulusSet:
    """A checked stimulus set: its folder, manifest and digest."""

    folder: Path
    manifest: pd.DataFrame
    digest: str

    def pairs(self, role: str) -> pd.DataFrame:
        """The manifest rows of one role (``main``, ``anchor`` or ``candidate``)."""
        return self.manifest[self.manifest["role"] == role]

    def path(self, relative: str) -> Path:
        """A manifest path as a path on disk."""
        return self.folder / relative

    def sketch_paths(self) -> dict[str, Path]:
        """Each sketch id's file."""
        first = self.manifest.drop_duplicates("sketch_id")
        return {row.sketch_id: self.path(row.sketch_path) for row in first.itertuples()}


@dataclass
class SetReport:
    """What :func:`validate_set` found: the problems, and the counts of a good set."""

    folder: Path
    problems: list[str] = field(default_factory=list)
    n_sketches: int = 0
    n_images: int = 0
    n_anchor_sketches: int = 0
    n_anchor_images: int = 0
    n_candidates: int = 0
    digest: str | None = None
    #: The manifest as read and checked (None when it could not be read).
    manifest: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line describing a good set."""
        parts = []
        if self.n_images:
            parts.append(f"{self.n_sketches} sketches, {self.n_images} images")
        if self.n_candidates:
            parts.append(f"{self.n_candidates} candidate pairs")
        if self.n_anchor_sketches:
            parts.append(
                f"anchors {self.n_anchor_sketches} sketches x "
                f"{self.n_anchor_images // self.n_anchor_sketches} images"
            )
        else:
            parts.append("no anchors")
        return f"{self.folder}: {', '.join(parts)}; set digest {self.digest}"


def validate_set(
    folder: str | Path, anchors: AnchorDesign = AnchorDesign(), *, check_images: bool = True
) -> SetReport:
    """Check a stimulus set and report every problem, one line each naming the file or line.

    It checks the manifest's columns, ids, roles and prescribed ratings; duplicate pairs; a
    sketch with two files, two roles or no images; paths that are absolute, hold ``..`` or lead
    outside the set (a symlink); missing, unreadable or too large images
    (:data:`~sbir_study.foundation.checks.MAX_IMAGE_PIXELS`); ``SHA256SUMS`` (malformed lines,
    files not listed, mismatches); and whether the anchor block is whole (``anchors``).
    ``check_images=False`` does not open the images (the checksums still prove them).
    """
    return _validate(Path(folder), anchors, check_images=check_images)


# Kept whole: one pass over the set in the order its problems are reported, each check
# reading what the ones before it established.
def _validate(
    folder: Path,
    anchors: AnchorDesign | None,
    *,
    check_images: bool,
    staged: dict[str, Path] | None = None,
) -> SetReport:
    """:func:`validate_set`, reading ``manifest.csv`` and ``SHA256SUMS`` from ``staged`` when given
    (``stimuli import`` checks what it is about to write); ``anchors`` None takes the manifest's.
    """
    staged = staged or {}
    report = SetReport(folder=folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "no such folder"
        report.problems.append(f"{folder}: {what}; expected a stimulus set")
        return report
    try:
        manifest = read_manifest(folder, path=staged.get(MANIFEST))
    except InputError as error:
        report.problems.append(str(error))
        return report
    report.manifest = manifest
    if anchors is None:
        anchors = anchor_block(manifest)

    where = folder / MANIFEST
    # The file's own line of each row (line 1 is the header; empty lines are skipped).
    lines = pd.Index(manifest.attrs.get("lines", range(2, len(manifest) + 2)))
    problems = report.problems
    # A row with neither image id nor image path declares a sketch alone (a sketch without
    # images, reported below rather than as two empty cells).
    declared = (manifest["image_id"] == "") & (manifest["image_path"] == "")
    for column in ("sketch_id", "image_id"):
        bad = bad_ids(manifest[column])
        if column == "image_id":
            bad &= ~declared.to_numpy()
        for line, value in zip(lines[bad], manifest.loc[bad, column], strict=True):
            problems.append(f"{where}: line {line}: {column} {value!r}: expected {ID_RULE}")
    for line, role in zip(lines, manifest["role"], strict=True):
        if role not in ROLES:
            problems.append(
                f"{where}: line {line}: role {role!r}: expected one of {', '.join(ROLES)}"
            )
    _check_anchor_ratings(manifest, lines, where, problems)

    pair = manifest["sketch_id"] + "\x00" + manifest["image_id"]
    first_line = dict(zip(pair[::-1], lines[::-1], strict=True))
    for line, key in zip(lines, pair, strict=True):
        if first_line[key] != line:
            sketch_id, image_id = key.split("\x00")
            problems.append(
                f"{where}: line {line}: duplicate pair ({sketch_id}, {image_id}); first on line "
                f"{first_line[key]}"
            )

    for column, found, expected in (
        ("sketch_path", "has {n} files ({values})", "expected one"),
        ("role", "is in roles {values}", "expected each sketch in one role"),
    ):
        for sketch_id, values in manifest.groupby("sketch_id", sort=False)[column].unique().items():
            if len(values) > 1:
                listed = ", ".join(values if column == "sketch_path" else sorted(values))
                found_here = found.format(n=len(values), values=listed)
                problems.append(f"{where}: sketch {sketch_id} {found_here}; {expected}")
    with_images = set(manifest.loc[~declared, "sketch_id"])
    for line, sketch_id in zip(
        lines[declared.to_numpy()], manifest.loc[declared, "sketch_id"], strict=True
    ):
        if sketch_id not in with_images:
            problems.append(f"{where}: line {line}: sketch {sketch_id} has no images")

    files = _check_paths(folder, manifest, lines, declared, check_images, problems)
    named = set(manifest["sketch_path"]) | set(manifest["image_path"])
    _check_checksums(folder, files, named, problems, staged)
    _check_anchor_block(manifest, anchors.on_set(manifest), where, problems)

    report.n_sketches = manifest.loc[manifest["role"] == "main", "sketch_id"].nunique()
    report.n_images = int(((manifest["role"] == "main") & ~declared).sum())
    report.n_candidates = int(((manifest["role"] == "candidate") & ~declared).sum())
    report.n_anchor_sketches = manifest.loc[manifest["role"] == "anchor", "sketch_id"].nunique()
    report.n_anchor_images = int(((manifest["role"] == "anchor") & ~declared).sum())
    if report.ok:
        report.digest = set_digest(folder, staged=staged)
    return report


def load_set(folder: str | Path, anchors: AnchorDesign | None = None) -> StimulusSet:
    """The stimulus set in ``folder``, checked by :func:`validate_set`; raises InputError with the
    first problem (and the count of the others).

    ``anchors`` is the block the set must have; None accepts the set's own, whatever its number
    of sketches, if each has the same images rated over the scale.
    """
    report = _validate(Path(folder), anchors, check_images=True)
    if not report.ok or report.manifest is None:
        more = len(report.problems) - 1
        suffix = (
            f" (and {more} more problem{'s' * (more > 1)}; sbir-study stimuli validate "
            f"{folder} lists them)"
            if more
            else ""
        )
        raise InputError(report.problems[0] + suffix)
    return StimulusSet(Path(folder), report.manifest, str(report.digest))


def anchor_block(manifest: pd.DataFrame) -> AnchorDesign:
    """The anchor block a manifest declares (its anchor sketches and images per sketch)."""
    per_sketch = manifest[manifest["role"] == "anchor"].groupby("sketch_id").size()
    if per_sketch.empty:
        return AnchorDesign(sketches=0)
    images = int(per_sketch.max())
    return AnchorDesign(sketches=int(per_sketch.size), images=min(max(images, 2), SCALE[1]))


def _check_anchor_ratings(
    manifest: pd.DataFrame, lines: pd.Index, where: Path, problems: list[str]
) -> None:
    is_anchor = (manifest["role"] == "anchor").to_numpy()
    if "anchor_rating" not in manifest.columns:
        if is_anchor.any():
            problems.append(
                f"{where}: line 1: missing column 'anchor_rating'; expected the prescribed "
                f"rating ({SCALE[0]}..{SCALE[1]}) of each anchor pair"
            )
        return
    allowed = {str(k) for k in range(SCALE[0], SCALE[1] + 1)}
    for line, anchor, value in zip(lines, is_anchor, manifest["anchor_rating"], strict=True):
        if anchor and value not in allowed:
            problems.append(
                f"{where}: line {line}: anchor_rating {value!r}: expected a whole number "
                f"{SCALE[0]}..{SCALE[1]} for an anchor pair (a point of the scale it is rated on)"
            )
        elif not anchor and value not in ("", "n/a"):
            problems.append(
                f"{where}: line {line}: anchor_rating {value!r}: expected an empty cell for a "
                "pair that is not an anchor"
            )


def _check_paths(
    folder: Path,
    manifest: pd.DataFrame,
    lines: pd.Index,
    declared: pd.Series,
    check_images: bool,
    problems: list[str],
) -> set[str]:
    """Check every path the manifest names; return the safe ones that exist."""
    where = folder / MANIFEST
    root = folder.resolve()
    first: dict[str, tuple[int, str]] = {}
    for column in ("sketch_path", "image_path"):
        for line, path, skip in zip(lines, manifest[column], declared, strict=True):
            if column == "image_path" and skip:
                continue
            if path not in first:
                first[path] = (line, column)
    files = set()
    for path, (line, column) in first.items():
        reason = _unsafe(path, root, folder)
        if reason:
            problems.append(f"{where}: line {line}: {column} {path!r}: {reason}")
            continue
        target = folder / path
        if not target.is_file():
            problems.append(f"{target}: no such file (manifest line {line}, {column})")
            continue
        if check_images:
            error = _unreadable(target)
            if error:
                problems.append(f"{target}: {error} (manifest line {line})")
                continue
        files.add(path)
    return files


def _unsafe(path: str, root: Path, folder: Path) -> str | None:
    """Why a manifest path is not a safe path inside the set, or None."""
    if not path:
        return "expected a path relative to the set folder, got an empty cell"
    if "\\" in path or any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "expected a path with '/' as separator and no backslash or control character"
    pure = PurePosixPath(path)
    if pure.is_absolute() or (len(path) > 1 and path[1] == ":"):
        return "expected a path relative to the set folder, not an absolute path"
    if ".." in pure.parts:
        return "expected a path inside the set folder, without '..'"
    resolved = Path(os.path.realpath(folder / path))
    if not resolved.is_relative_to(root):
        return f"resolves to {resolved}, outside the set folder (a symlink?)"
    return None


def _unreadable(path: Path) -> str | None:
    """Why ``path`` is not an image to show, or None (its size checked before decoding)."""
    try:
        with open_image(path) as image:
            image.verify()
    except InputError as error:
        return str(error).removeprefix(f"{path}: ")
    except (OSError, SyntaxError, ValueError) as error:
        return f"cannot be read as an image ({str(error) or type(error).__name__})"
    return None


def _check_checksums(
    folder: Path, files: set[str], named: set[str], problems: list[str], staged: dict[str, Path]
) -> None:
    """Check SHA256SUMS; ``files`` are the manifest's good paths, ``named`` all it names."""
    try:
        checksums, malformed = read_checksums(folder, path=staged.get(CHECKSUMS))
    except InputError as error:
        problems.append(str(error))
        return
    problems.extend(malformed)
    sums = folder / CHECKSUMS
    for path in sorted(files | {MANIFEST}):
        if path not in checksums:
            problems.append(f"{sums}: {path} is not listed; expected every file of the set")
    for path, expected in checksums.items():
        target = staged.get(path, folder / path)
        if _unsafe(path, folder.resolve(), folder):
            if path not in named:  # else the manifest's line says it already
                problems.append(f"{sums}: {path!r}: expected a path inside the set folder")
        elif not target.is_file():
            problems.append(f"{target}: no such file (listed in {CHECKSUMS})")
        elif file_digest(target).sha256 != expected:
            problems.append(f"{target}: checksum mismatch; the file differs from {CHECKSUMS}")


def _check_anchor_block(
    manifest: pd.DataFrame, anchors: AnchorDesign, where: Path, problems: list[str]
) -> None:
    is_anchor = manifest["role"] == "anchor"
    is_pool = manifest["role"].eq("candidate").all()
    found = manifest.loc[is_anchor, "sketch_id"].unique()
    if is_pool and not len(found):
        return
    if len(found) != anchors.sketches:
        problems.append(
            f"{where}: anchor block has {len(found)} sketch{'es' * (len(found) != 1)}; expected "
            f"{anchors.sketches} (each with {anchors.images} images rated "
            f"{', '.join(map(str, anchors.ratings))})"
        )
    if "anchor_rating" not in manifest.columns:
        return
    expected = Counter(str(r) for r in anchors.ratings)
    for sketch_id, prescribed in manifest[is_anchor].groupby("sketch_id", sort=False)[
        "anchor_rating"
    ]:
        got = Counter(prescribed)
        if got != expected:
            problems.append(
                f"{where}: anchor sketch {sketch_id} has images rated "
                f"{', '.join(sorted(prescribed, key=_as_number)) or 'none'}; expected one each "
                f"rated {', '.join(map(str, anchors.ratings))}"
            )


def _as_number(text: str) -> tuple[int, float | str]:
    try:
        return (0, float(text))
    except ValueError:
        return (1, text)
