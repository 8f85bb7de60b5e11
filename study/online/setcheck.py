"""The stimulus set's check, kept between starts of ``serve``.

Checking a set (:func:`sbir_study.stimuli.load_set`: every image's SHA-256 against
``SHA256SUMS`` and its header read) and measuring the images' aspect ratio for the page
take seconds for a paper-size set, and every start of ``serve`` needs both. ``serve``
keeps what a check found in ``<data>/stimulus-check.json`` (:data:`CHECK_FILE`) and
reuses it when nothing it rests on changed:

* the same sbir-study version (the rules of the check),
* the same set folder and set digest (``manifest.csv`` and ``SHA256SUMS``, hashed anew
  at every start, a few kilobytes),
* for every image the manifest names, the same size, modification time (ns), inode
  and device.

Anything else (a file touched, replaced, added to the manifest, another version) checks
the set again, whole, and a set that fails is refused. What the kept check cannot see, a
file rewritten with its size and times put back, is still never served:
:meth:`~.service.OnlineStudy.stimulus` checks each image's SHA-256 when it first reads it.
The protocol's own checks of the set (anchor ratings on its scale, catch pairs) run at
every start, and give their warnings at every start. Keys of the file that the check does
not read (the ``plan`` an older version kept there) are ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from sbir_study.foundation.atomic import atomic_write
from sbir_study.foundation.checks import InputError

if TYPE_CHECKING:
    from sbir_study.stimuli import StimulusSet

    from ..protocol import Protocol

__all__ = ["CHECK_FILE", "Checked", "checked_set", "image_names", "measured_aspect"]

#: The kept check, in the data folder of ``serve``.
CHECK_FILE = "stimulus-check.json"


class Checked(NamedTuple):
    """What :func:`checked_set` gives ``serve``."""

    stimulus_set: StimulusSet
    #: The images' largest height / width (the page sizes its area by it).
    max_aspect: float
    #: Whether the set's kept check was reused (the images not read again).
    reused: bool


def image_names(stimulus_set: StimulusSet) -> set[str]:
    """Every image file the set's manifest names."""
    manifest = stimulus_set.manifest
    return (set(manifest["sketch_path"]) | set(manifest["image_path"])) - {""}


def measured_aspect(stimulus_set: StimulusSet) -> float:
    """The largest height / width of the set's images."""
    from PIL import Image

    aspects = []
    for name in sorted(image_names(stimulus_set)):
        with Image.open(stimulus_set.path(name)) as image:
            aspects.append(image.height / image.width)
    return round(max(aspects), 4) if aspects else 1.0


def _stat(folder: Path, names) -> dict[str, list[int]]:
    """Size, modification time (ns), inode and device of each file ``names`` names."""
    found = {}
    for name in sorted(names):
        status = os.stat(folder / name)
        found[name] = [status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev]
    return found


def _version() -> str:
    from sbir_study.foundation.provenance import toolkit_version

    return toolkit_version()


def _kept(path: Path, folder: Path) -> dict | None:
    """The kept record, if its check of the set still holds; else None."""
    from sbir_study.stimuli.manifest import set_digest

    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("version") != _version() or kept.get("folder") != str(folder.resolve()):
            return None
        if kept.get("digest") != set_digest(folder):
            return None
        files = kept["files"]
        # The digest covers manifest.csv: the names it lists are the kept ones.
        if type(files) is not dict or _stat(folder, files) != files:
            return None
        aspect = kept["max_aspect"]
        if type(aspect) not in (int, float) or not 0 < aspect < float("inf"):
            return None
        return kept
    except (OSError, ValueError, KeyError, TypeError, AttributeError, InputError):
        return None  # no kept check, or one that no longer holds: check again


def _keep(path: Path, stimulus_set: StimulusSet, max_aspect: float) -> None:
    """Write the check beside the data, whole or not at all."""
    record = {
        "version": _version(),
        "folder": str(stimulus_set.folder.resolve()),
        "digest": stimulus_set.digest,
        "max_aspect": max_aspect,
        "files": _stat(stimulus_set.folder, image_names(stimulus_set)),
    }
    try:
        atomic_write(path, json.dumps(record, sort_keys=True))
    except OSError:
        pass  # not kept: the next start checks again


def checked_set(folder: str | Path, protocol: Protocol, data: str | Path | None) -> Checked:
    """The set in ``folder`` checked for ``protocol``.

    With ``data``, the check kept in ``data/stimulus-check.json`` is reused when it still
    holds (module docstring), and a new check is kept there.
    """
    from sbir_study.stimuli.manifest import read_manifest
    from sbir_study.stimuli.validate import StimulusSet

    from ..trials import stimulus_set_for

    folder = Path(folder)
    path = Path(data) / CHECK_FILE if data else None
    kept = _kept(path, folder) if path is not None else None
    if kept is not None:
        found = StimulusSet(folder, read_manifest(folder), kept["digest"])
        stimulus_set = stimulus_set_for(folder, protocol, checked=found)
        return Checked(stimulus_set, float(kept["max_aspect"]), True)
    stimulus_set = stimulus_set_for(folder, protocol)
    aspect = measured_aspect(stimulus_set)
    if path is not None:
        _keep(path, stimulus_set, aspect)
    return Checked(stimulus_set, aspect, False)
