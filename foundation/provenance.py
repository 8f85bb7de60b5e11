"""Provenance: the software versions that shaped an output, and the one file hash.

:func:`file_digest` is the SHA-256 every reader, output record and set checksum uses.
"""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "ANALYSIS_PACKAGES",
    "DISTRIBUTION",
    "SESSION_PACKAGES",
    "FileDigest",
    "data_sha256",
    "file_digest",
    "software_versions",
    "toolkit_version",
]

#: The distribution's name: its command, and the producer every output record names.
DISTRIBUTION = "sbir-study"
#: Every library that shapes a number or a figure of the analysis.
ANALYSIS_PACKAGES = (
    DISTRIBUTION,
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "pyarrow",
)
#: ... and, for a rating session, the libraries that time and show it.
SESSION_PACKAGES = (*ANALYSIS_PACKAGES, "psychopy", "psychtoolbox", "pillow")

_CHUNK = 1 << 22


def toolkit_version() -> str:
    """The installed version of sbir-study ("unknown" when run from an uninstalled tree)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def software_versions(packages: Iterable[str] = ANALYSIS_PACKAGES) -> dict[str, str]:
    """Python's version and each package's ("not installed" if absent).

    >>> sorted(software_versions(["numpy"]))
    ['numpy', 'python']
    """
    versions = {"python": platform.python_version()}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


class FileDigest(NamedTuple):
    """A file's SHA-256, its number of lines and, when asked for, its bytes."""

    #: 64 lower-case hex digits, as ``sha256sum`` prints them.
    sha256: str
    #: Lines as an editor shows them: LF, CR LF and a lone CR each end one, and a last line
    #: without a line end counts.
    lines: int
    #: The bytes read (``keep=True`` only).
    data: bytes | None = None


def file_digest(
    path: str | Path, *, sync: bool = False, keep: bool = False, hashed: bool = True
) -> FileDigest:
    """The SHA-256 of a file and its number of lines, read in chunks.

    ``keep`` returns the bytes too (a reader hashes what it parses), ``hashed=False`` then
    leaves the SHA-256 empty (for :func:`data_sha256` on a thread beside the parse), and
    ``sync`` fsyncs the file before closing it. OS errors are raised as they are.

    >>> import hashlib, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
    >>> _ = path.write_bytes(b"a\\r\\nb\\rc")
    >>> digest = file_digest(path)
    >>> digest.sha256 == hashlib.sha256(b"a\\r\\nb\\rc").hexdigest(), digest.lines
    (True, 3)
    """
    if keep:
        data = Path(path).read_bytes()
        return FileDigest(
            data_sha256(data) or "" if hashed else "", _line_ends(data) + _unended(data), data
        )
    digest = hashlib.sha256()
    ends = 0
    last = b""
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            ends += _line_ends(chunk, last)
            last = chunk[-1:]
        if sync:
            os.fsync(stream.fileno())
    return FileDigest(digest.hexdigest(), ends + _unended(last))


def data_sha256(data: bytes, *, stop: Callable[[], bool] | None = None) -> str | None:
    """The SHA-256 of ``data`` (``hashlib`` releases the GIL, so a thread can hash while another
    parses); None once ``stop``, asked between chunks, says so.

    >>> data_sha256(b"abc") == hashlib.sha256(b"abc").hexdigest()
    True
    >>> data_sha256(b"abc", stop=lambda: True) is None
    True
    """
    digest = hashlib.sha256()
    view = memoryview(data)
    for offset in range(0, len(data), _CHUNK):
        if stop is not None and stop():
            return None
        digest.update(view[offset : offset + _CHUNK])
    return digest.hexdigest()


def _line_ends(data: bytes, before: bytes = b"") -> int:
    """The line ends in ``data``; ``before``, the byte before it, may be a CR whose LF begins it."""
    ends = data.count(b"\n")
    if b"\r" in data:
        ends += data.count(b"\r") - data.count(b"\r\n")
    return ends - (before == b"\r" and data[:1] == b"\n")


def _unended(data: bytes) -> int:
    """1 if ``data`` (or its last byte) ends a last line without a line end."""
    return int(data[-1:] not in (b"", b"\n", b"\r"))
