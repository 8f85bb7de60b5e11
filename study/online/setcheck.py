"""The stimulus set's check, kept between starts of ``serve`` so that a restart takes no time.

Checking a set (:func:`sbir_study.stimuli.load_set`: every image's SHA-256 against
``SHA256SUMS`` and its header read) and measuring the images' aspect ratio for the page
take seconds for a paper-size set, and every worker process did both at each start, so
that a server killed under load was away for 3-9 s. ``serve`` now keeps what a check
found in ``<data>/stimulus-check.json`` (:data:`CHECK_FILE`), where the parent process
and every worker find it, and reuses it when nothing it rests on changed:

* the same sbir-study version (the rules of the check),
* the same set folder and set digest (``manifest.csv`` and ``SHA256SUMS``, hashed anew
  at every start, a few kilobytes),
* for every image the manifest names, the same size, modification time (ns), inode
  and device.

Anything else (a file touched, replaced, added to the manifest, another version) checks
the set again, whole, and a set that fails is refused as before. What the kept check
cannot see, a file rewritten with its size and times put back, is still never served:
:meth:`~.service.OnlineStudy.stimulus` checks each image's SHA-256 when it first reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sbir_study.foundation.checks import InputError

__all__ = ["CHECK_FILE", "checked_set"]

#: The kept check, in the data folder of ``serve``.
CHECK_FILE = "stimulus-check.json"


def _files(stimulus_set) -> dict[str, list[int]]:
    """Size, modification time (ns), inode and device of every image the manifest names."""
    manifest = stimulus_set.manifest
    names = sorted((set(manifest["sketch_path"]) | set(manifest["image_path"])) - {""})
    found = {}
    for name in names:
        status = os.stat(stimulus_set.path(name))
        found[name] = [status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev]
    return found


def _version() -> str:
    from sbir_study.foundation.provenance import toolkit_version

    return toolkit_version()


def _kept(path: Path, folder: Path):
    """The set the kept check describes, if it still holds; else None."""
    from sbir_study.stimuli.manifest import read_manifest, set_digest
    from sbir_study.stimuli.validate import StimulusSet

    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("version") != _version() or kept.get("folder") != str(folder.resolve()):
            return None
        digest = set_digest(folder)
        if kept.get("digest") != digest:
            return None
        stimulus_set = StimulusSet(folder, read_manifest(folder), digest)
        if _files(stimulus_set) != kept.get("files"):
            return None
        return stimulus_set, float(kept["max_aspect"])
    except (OSError, ValueError, KeyError, TypeError, InputError):
        return None  # no kept check, or one that no longer holds: check again


def _keep(path: Path, stimulus_set, max_aspect: float) -> None:
    """Write the check beside the data, whole or not at all (a temporary file renamed)."""
    record = {
        "version": _version(),
        "folder": str(stimulus_set.folder.resolve()),
        "digest": stimulus_set.digest,
        "max_aspect": max_aspect,
        "files": _files(stimulus_set),
    }
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)  # not kept: the next start checks again


def max_aspect(stimulus_set) -> float:
    """The largest height / width of the set's images (the page sizes its area by it)."""
    from PIL import Image

    manifest = stimulus_set.manifest
    names = sorted((set(manifest["sketch_path"]) | set(manifest["image_path"])) - {""})
    aspects = []
    for name in names:
        with Image.open(stimulus_set.path(name)) as image:
            aspects.append(image.height / image.width)
    return round(max(aspects), 4) if aspects else 1.0


def checked_set(folder: str | Path, protocol, data: str | Path | None):
    """The set in ``folder`` checked for ``protocol``, and its images' largest aspect ratio.

    With ``data``, the check kept in ``data/stimulus-check.json`` is reused when it still
    holds (see the module docstring) and written after a full check; the protocol's own
    checks of the set (anchor ratings on its scale, catch pairs) run every time.
    Returns ``(stimulus_set, max_aspect, reused)``.
    """
    from ..trials import stimulus_set_for

    folder = Path(folder)
    path = Path(data) / CHECK_FILE if data else None
    kept = _kept(path, folder) if path is not None else None
    if kept is not None:
        stimulus_set, aspect = kept
        return stimulus_set_for(folder, protocol, checked=stimulus_set), aspect, True
    stimulus_set = stimulus_set_for(folder, protocol)
    aspect = max_aspect(stimulus_set)
    if path is not None:
        _keep(path, stimulus_set, aspect)
    return stimulus_set, aspect, False
