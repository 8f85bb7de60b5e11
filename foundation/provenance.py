"""Provenance: what produced a number, so that it can be traced and reproduced.

One place for the two facts every output records about its making: the
versions of the software that shaped it, and the SHA-256 of the files it was
made from.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

__all__ = [
    "ANALYSIS_PACKAGES",
    "DISTRIBUTION",
    "SESSION_PACKAGES",
    "file_digest",
    "sha256_file",
    "software_versions",
    "toolkit_version",
]

#: The distribution's name: its command, and the producer every output record names.
DISTRIBUTION = "sbir-study"
#: Every library that shapes a number or a figure of the analysis.
ANALYSIS_PACKAGES = (
    DISTRIBUTION, "numpy", "scipy", "pandas", "statsmodels", "matplotlib", "pyarrow",
)  # fmt: skip
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
    """Python's version and each package's installed version ("not installed" if absent).

    Examples
    --------
    >>> versions = software_versions(["numpy"])
    >>> sorted(versions)
    ['numpy', 'python']
    """
    versions = {"python": platform.python_version()}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def file_digest(path: str | Path) -> tuple[str, int]:
    """The SHA-256 of a file (64 lower-case hex digits) and its number of lines.

    A last line without a line break counts as a line, as an editor shows it.
    The file is read in chunks, never whole.
    """
    digest = hashlib.sha256()
    lines = 0
    last = b"\n"
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return digest.hexdigest(), lines + (last != b"\n")


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as 64 lower-case hex digits."""
    return file_digest(path)[0]
