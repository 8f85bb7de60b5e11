"""The stimulus-set format: ``manifest.csv``, ``SHA256SUMS`` and the set digest.

A set is a folder with the image files and two text files:

``manifest.csv``
    One row per sketch/image pair: ``sketch_id, image_id, sketch_path,
    image_path, role`` and, when the set has anchor pairs, ``anchor_rating``
    (the prescribed rating, 1..7). ``role`` is ``main`` (a pair of the study),
    ``anchor`` (a pair of the anchoring phase) or ``candidate`` (a pair of a
    pilot pool, from which ``stimuli select`` chooses the main pairs). Paths
    are relative to the set folder, with ``/`` as separator. Extra columns are
    kept (a generated set adds ``latent_similarity``).
``SHA256SUMS``
    Every file of the set but itself, in the format ``sha256sum`` writes, so
    that ``sha256sum -c SHA256SUMS`` checks a set with standard tools.

The set digest, which sessions record so that an analysis can tell on which
exact set a rating was given, is the SHA-256 of the ``sha256sum`` listing of
``manifest.csv`` and ``SHA256SUMS``, in that order. In a shell::

    cd SET && sha256sum manifest.csv SHA256SUMS | sha256sum
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.provenance import file_digest
from sbir_study.foundation.tables import COLON, read_table, read_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CHECKSUMS",
    "GENERATOR_FILE",
    "MANIFEST",
    "MANIFEST_COLUMNS",
    "ROLES",
    "read_checksums",
    "read_manifest",
    "set_digest",
    "write_checksums",
    "write_manifest",
]

MANIFEST = "manifest.csv"
CHECKSUMS = "SHA256SUMS"
#: What ``stimuli generate`` records of a set it made (its design, its anchors' scale). Here,
#: not in :mod:`.generate`, so that reading it (``serve``'s start) does not import PIL.
GENERATOR_FILE = "generator.json"
MANIFEST_COLUMNS = ("sketch_id", "image_id", "sketch_path", "image_path", "role")
ROLES = ("main", "anchor", "candidate")


def read_manifest(folder: str | Path, *, path: str | Path | None = None) -> pd.DataFrame:
    """The manifest of the set in ``folder``, every cell as text.

    ``path`` reads the manifest from another file (one about to be written).
    Raises :class:`~sbir_study.foundation.checks.InputError` (exit 2 on the command line)
    when the file is missing, unreadable or not a UTF-8 CSV table, or lacks a
    required column; a message names the line (the header is line 1).
    """
    shown = Path(folder) / MANIFEST
    source = Path(path) if path is not None else shown
    if source.is_dir():
        raise InputError(f"{shown}: is a folder; expected the stimulus set's manifest")
    if not source.exists():
        raise InputError(f"{shown}: no such file; expected the stimulus set's manifest")
    file = read_text(source)
    if file.is_blank():
        raise InputError(f"{shown}: is empty; expected a header line")
    # Lines are named in the set's manifest, even when it is read from a staged copy.
    table = read_table(file, ",", wording=replace(COLON, line=lambda _, n: f"{shown}: line {n}"))
    path = shown
    missing = [c for c in MANIFEST_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(
            f"{path}: line 1: missing column {missing[0]!r}; expected {', '.join(MANIFEST_COLUMNS)}"
        )
    return table


def write_manifest(folder: str | Path, table: pd.DataFrame) -> Path:
    """Write ``table`` as the manifest of the set in ``folder``; returns its path.

    The required columns come first, ``anchor_rating`` next (when present),
    then any extra columns in their order. Missing values are written as
    empty cells; line ends are ``\\n`` on every platform, so that the same
    table gives the same bytes (and the same set digest) everywhere.
    """
    missing = [c for c in MANIFEST_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"manifest table lacks column {missing[0]!r}")
    first = [*MANIFEST_COLUMNS, *(["anchor_rating"] if "anchor_rating" in table.columns else [])]
    columns = first + [c for c in table.columns if c not in first]
    path = Path(folder) / MANIFEST
    buffer = io.StringIO()
    table[columns].to_csv(buffer, index=False, lineterminator="\n")
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    return path


def write_checksums(
    folder: str | Path,
    paths: Iterable[str],
    *,
    into: str | Path | None = None,
    staged: Mapping[str, Path] | None = None,
) -> Path:
    """Write ``SHA256SUMS`` for the given files of the set (relative paths, ``/``-separated).

    Each file is listed once, sorted by path, in ``sha256sum``'s text format
    (``<hex>  <path>``). ``into`` writes the listing to another file, and
    ``staged`` maps a path of the set to the file that is about to be written
    there (``stimuli import`` lists the manifest it has not yet put in place).
    """
    folder = Path(folder)
    staged = staged or {}
    lines = [
        f"{file_digest(staged.get(p, folder / p)).sha256}  {p}\n"
        for p in sorted(set(paths))
        if p != CHECKSUMS
    ]
    path = Path(into) if into is not None else folder / CHECKSUMS
    path.write_bytes("".join(lines).encode("utf-8"))
    return path


def read_checksums(
    folder: str | Path, *, path: str | Path | None = None
) -> tuple[dict[str, str], list[str]]:
    """The entries of ``SHA256SUMS`` and the problems found reading it.

    Returns ``(checksums, problems)``: each listed path mapped to its
    expected hex digest, and one message per malformed or repeated line.
    ``path`` reads the listing from another file (one about to be written).
    A missing, unreadable or non-UTF-8 file raises
    :class:`~sbir_study.foundation.checks.InputError`.
    """
    shown = Path(folder) / CHECKSUMS
    source = Path(path) if path is not None else shown
    if not source.exists():
        raise InputError(
            f"{shown}: no such file; expected a sha256sum listing of every file of the set "
            "(sbir-study stimuli import writes one)"
        )
    text = read_text(source).text
    path = shown
    checksums: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        digest, sep, name = line.partition(" ")
        # sha256sum writes "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode).
        if sep and name[:1] in (" ", "*"):
            name = name[1:]
        valid_hex = len(digest) == 64 and all(c in "0123456789abcdefABCDEF" for c in digest)
        if not sep or not valid_hex or not name:
            problems.append(
                f"{path}: line {number}: expected '<64 hex digits>  <file>', got {line[:80]!r}"
            )
            continue
        if name in checksums:
            problems.append(f"{path}: line {number}: {name} is listed twice")
            continue
        checksums[name] = digest.lower()
    return checksums, problems


def set_digest(folder: str | Path, *, staged: Mapping[str, Path] | None = None) -> str:
    """The digest that identifies a stimulus set: SHA-256 over its manifest and checksums.

    Equal to ``sha256sum manifest.csv SHA256SUMS | sha256sum`` run in the set
    folder. Since ``SHA256SUMS`` lists every image, a change to any file of
    the set changes the digest. ``staged`` maps either name to the file that
    is about to be written there.
    """
    folder = Path(folder)
    staged = staged or {}
    listing = "".join(
        f"{file_digest(staged.get(name, folder / name)).sha256}  {name}\n"
        for name in (MANIFEST, CHECKSUMS)
    )
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()
