"""The stimulus-set format: ``manifest.csv``, ``SHA256SUMS`` and the set digest.

``manifest.csv``
    One row per pair: ``sketch_id, image_id, sketch_path, image_path, role`` and, with
    anchor pairs, ``anchor_rating`` (the prescribed rating). ``role`` is ``main``,
    ``anchor`` or ``candidate`` (a pilot pool's, for ``stimuli select``). Paths are
    relative, ``/``-separated; extra columns are kept (``latent_similarity``).
``SHA256SUMS``
    Every other file of the set, as ``sha256sum`` writes it (``sha256sum -c SHA256SUMS``).

The set digest, which sessions record, is the SHA-256 of the ``sha256sum`` listing of
``manifest.csv`` and ``SHA256SUMS``::

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
    """The manifest of the set in ``folder`` (or read from ``path``, one about to be written),
    every cell as text; InputError, naming the line, for a missing, unreadable or incomplete one.
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
    """Write ``table`` as the set's manifest: the required columns, ``anchor_rating``, then the
    rest; empty cells for missing values and ``\\n`` line ends, so the bytes (and the set
    digest) are the same everywhere.
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
    """Write ``SHA256SUMS`` (or ``into``) for ``paths`` of the set, sorted, as ``sha256sum`` does.

    ``staged`` maps a path of the set to the file about to be written there.
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
    """``SHA256SUMS``' entries (path -> hex digest) and one problem per malformed or repeated line;
    ``path`` reads another file. A missing or unreadable one raises InputError.
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
    """The set's digest, ``sha256sum manifest.csv SHA256SUMS | sha256sum``: any file's change
    changes it. ``staged`` maps either name to the file about to be written there.
    """
    folder = Path(folder)
    staged = staged or {}
    listing = "".join(
        f"{file_digest(staged.get(name, folder / name)).sha256}  {name}\n"
        for name in (MANIFEST, CHECKSUMS)
    )
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()
