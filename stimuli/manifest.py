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
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from analysis.checks import InputError
from analysis.provenance import sha256_file as file_sha256

__all__ = [
    "CHECKSUMS",
    "MANIFEST",
    "MANIFEST_COLUMNS",
    "ROLES",
    "file_sha256",
    "read_checksums",
    "read_manifest",
    "set_digest",
    "sketch_image_paths",
    "write_checksums",
    "write_manifest",
]

MANIFEST = "manifest.csv"
CHECKSUMS = "SHA256SUMS"
MANIFEST_COLUMNS = ("sketch_id", "image_id", "sketch_path", "image_path", "role")
ROLES = ("main", "anchor", "candidate")


def read_manifest(folder: str | Path) -> pd.DataFrame:
    """The manifest of the set in ``folder``, every cell as text.

    Raises :class:`~analysis.checks.InputError` (exit 2 on the command line)
    when the file is missing or unreadable, or lacks a required column.
    """
    path = Path(folder) / MANIFEST
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; expected the stimulus set's manifest") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder; expected the stimulus set's manifest") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"{path}: cannot be read as a CSV table ({reason})") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: is empty; expected a header line") from None
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


def write_checksums(folder: str | Path, paths: Iterable[str]) -> Path:
    """Write ``SHA256SUMS`` for the given files of the set (relative paths, ``/``-separated).

    Each file is listed once, sorted by path, in ``sha256sum``'s text format
    (``<hex>  <path>``).
    """
    folder = Path(folder)
    lines = [f"{file_sha256(folder / p)}  {p}\n" for p in sorted(set(paths)) if p != CHECKSUMS]
    path = folder / CHECKSUMS
    path.write_bytes("".join(lines).encode("utf-8"))
    return path


def read_checksums(folder: str | Path) -> tuple[dict[str, str], list[str]]:
    """The entries of ``SHA256SUMS`` and the problems found reading it.

    Returns ``(checksums, problems)``: each listed path mapped to its
    expected hex digest, and one message per malformed or repeated line.
    A missing file raises :class:`~analysis.checks.InputError`.
    """
    path = Path(folder) / CHECKSUMS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file; expected a sha256sum listing of every file of the set "
            "(sbir-study stimuli import writes one)"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error})") from None
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
            problems.append(f"{path}: line {number}: expected '<64 hex digits>  <file>', "
                            f"got {line[:80]!r}")  # fmt: skip
            continue
        if name in checksums:
            problems.append(f"{path}: line {number}: {name} is listed twice")
            continue
        checksums[name] = digest.lower()
    return checksums, problems


def set_digest(folder: str | Path) -> str:
    """The digest that identifies a stimulus set: SHA-256 over its manifest and checksums.

    Equal to ``sha256sum manifest.csv SHA256SUMS | sha256sum`` run in the set
    folder. Since ``SHA256SUMS`` lists every image, a change to any file of
    the set changes the digest.
    """
    folder = Path(folder)
    listing = "".join(f"{file_sha256(folder / name)}  {name}\n" for name in (MANIFEST, CHECKSUMS))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def sketch_image_paths(folder: str | Path) -> dict[str, Path]:
    """Each sketch id of the set mapped to its image file (inside ``folder``)."""
    folder = Path(folder)
    table = read_manifest(folder).drop_duplicates("sketch_id")
    return {row.sketch_id: folder / row.sketch_path for row in table.itertuples()}
