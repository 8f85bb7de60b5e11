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

The check also keeps the :class:`~.plan.ServingPlan` of the protocol it was made for
(each list's trial-order rows, the images' SHA-256, their largest aspect ratio) with the
warnings its making gave, for as long as the protocol (its every setting, hashed), the
set's ``generator.json``, the code that makes a plan (:data:`PLAN_CODE`'s files, hashed)
and the versions of sbir-study, NumPy and pandas stay the same, and the plan is as it was
written (its own SHA-256, its lists and anchor repeats those of the protocol). A start
that finds both still holding neither reads the manifest nor imports pandas; it gives
sbir-study's own warnings of the plan's making again, through the filters of that start.
Another protocol on the same set reuses the set's check and makes its own plan.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from sbir_study.foundation.atomic import atomic_write
from sbir_study.foundation.checks import InputError

from .plan import ServingPlan, image_names, measured_aspect

__all__ = ["CHECK_FILE", "PLAN_CODE", "Checked", "KeptSet", "checked_set", "code_files"]

#: The kept check, in the data folder of ``serve``.
CHECK_FILE = "stimulus-check.json"


class Checked(NamedTuple):
    """What :func:`checked_set` gives ``serve``."""

    #: The checked set: a :class:`~sbir_study.stimuli.StimulusSet`, or a :class:`KeptSet`
    #: when the kept check and plan held.
    stimulus_set: object
    plan: ServingPlan
    #: Whether the set's kept check was reused (the images not read again).
    set_reused: bool
    #: Whether the kept plan was reused (the manifest not read, pandas not imported).
    plan_reused: bool


@dataclass
class KeptSet:
    """A set whose kept check held: its folder and digest, which is all serving asks of it.
    Its manifest is read (with pandas) only if something asks for it."""

    folder: Path
    digest: str

    def path(self, relative: str) -> Path:
        """A manifest path as a path on disk."""
        return self.folder / relative

    @cached_property
    def manifest(self):
        from sbir_study.stimuli.manifest import read_manifest

        return read_manifest(self.folder)


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


#: The modules whose code makes a plan (the lists, each list's rows, the order's draw) and
#: keeps it: a plan made by other code (an editable install, an upgrade that kept the
#: version) is made again.
PLAN_CODE = (
    "sbir_study.study.trials",
    "sbir_study.foundation.trial_order",
    "sbir_study.study.online.assignment",
    "sbir_study.study.online.plan",
    "sbir_study.study.online.setcheck",
)


def code_files() -> list[Path]:
    """The source files of :data:`PLAN_CODE` (found without running them)."""
    from importlib.util import find_spec

    return [Path(find_spec(name).origin) for name in PLAN_CODE]


def _code_sha256() -> str:
    digest = hashlib.sha256()
    for file in code_files():
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def _plan_key(protocol, folder: Path) -> dict:
    """What a kept plan rests on besides the set (module docstring)."""
    from importlib import metadata

    from ..protocol import protocol_dict

    settings = json.dumps(protocol_dict(protocol), sort_keys=True, ensure_ascii=False)
    try:
        generator = hashlib.sha256((folder / "generator.json").read_bytes()).hexdigest()
    except FileNotFoundError:
        generator = None
    return {
        "protocol_sha256": hashlib.sha256(settings.encode("utf-8")).hexdigest(),
        "generator_sha256": generator,
        "code_sha256": _code_sha256(),
        "numpy": metadata.version("numpy"),
        "pandas": metadata.version("pandas"),
    }


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
    except (OSError, ValueError, KeyError, TypeError, InputError):
        return None  # no kept check, or one that no longer holds: check again


def _sealed(record: dict) -> str:
    """The SHA-256 of a kept plan's record (its key, warnings and plan), as written."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _kept_plan(kept: dict, key: dict, protocol) -> tuple[ServingPlan, list] | None:
    """The kept plan and its warnings, if made for ``key`` and as written; else None."""
    try:
        record = dict(kept["plan"])
        # A plan changed on disk, even to values of the right types, is not this plan.
        if record.pop("sha256") != _sealed(record) or record["key"] != key:
            return None
        caught = record["warnings"]
        if type(caught) is not list or any(
            type(w) is not list or len(w) != 3 or any(type(part) is not str for part in w)
            for w in caught
        ):
            return None
        plan = ServingPlan.from_record(record)
        anchoring = protocol.anchoring
        repeat = anchoring.enabled and anchoring.repeat
        if len(plan.orders) != protocol.online.lists or any(
            order.repeat != repeat or order.repeat_from != anchoring.repeat_from
            for order in plan.orders
        ):
            return None
        return plan, caught
    except (ValueError, KeyError, TypeError):
        return None  # made again


def _keep(
    path: Path, stimulus_set, max_aspect: float, plan: ServingPlan, key: dict, caught: list
) -> None:
    """Write the check beside the data, whole or not at all (a temporary file renamed)."""
    record = {
        "version": _version(),
        "folder": str(stimulus_set.folder.resolve()),
        "digest": stimulus_set.digest,
        "max_aspect": max_aspect,
        "files": _stat(stimulus_set.folder, image_names(stimulus_set)),
        "plan": {"key": key, "warnings": caught, **plan.record()},
    }
    record["plan"]["sha256"] = _sealed(record["plan"])
    try:
        atomic_write(path, json.dumps(record, sort_keys=True))
    except OSError:
        pass  # not kept: the next start checks again


def _warn_again(caught: list) -> None:
    """Give again, each of its category, the warnings a kept plan's making gave (a category
    not of sbir-study's, or not found now, is a UserWarning)."""
    import importlib

    for module, name, text in caught:
        category = UserWarning
        if module.startswith("sbir_study."):
            try:
                found = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                found = None
            if isinstance(found, type) and issubclass(found, Warning):
                category = found
        warnings.warn(text, category, stacklevel=3)


def checked_set(folder: str | Path, protocol, data: str | Path | None) -> Checked:
    """The set in ``folder`` checked for ``protocol``, and the plan of serving it.

    With ``data``, the check and plan kept in ``data/stimulus-check.json`` are reused when
    they still hold (see the module docstring) and written after a new check or plan; the
    protocol's own checks of the set (anchor ratings on its scale, catch pairs) run
    whenever the plan is made, and their warnings are given at every start.
    """
    from ..trials import stimulus_set_for

    folder = Path(folder)
    path = Path(data) / CHECK_FILE if data else None
    kept = _kept(path, folder) if path is not None else None
    key = _plan_key(protocol, folder) if path is not None else None
    checked = None
    if kept is not None:
        found = _kept_plan(kept, key, protocol)
        if found is not None:
            plan, caught = found
            _warn_again(caught)
            return Checked(KeptSet(folder, kept["digest"]), plan, True, True)
        from sbir_study.stimuli.manifest import read_manifest
        from sbir_study.stimuli.validate import StimulusSet

        checked = StimulusSet(folder, read_manifest(folder), kept["digest"])
    # Every warning of the check and the plan, whatever the filters now: each is given here
    # through them, and sbir-study's own are kept to be given (through the filters of
    # that time) at every start that reads the plan back.
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stimulus_set = stimulus_set_for(folder, protocol, checked=checked)
            aspect = (
                float(kept["max_aspect"]) if kept is not None else measured_aspect(stimulus_set)
            )
            plan = ServingPlan.of(protocol, stimulus_set, aspect)
    finally:  # given also when the set or the protocol is refused
        for warning in caught:
            warnings.warn(warning.message, warning.category, stacklevel=2)
    if path is not None:
        own = [
            [w.category.__module__, w.category.__qualname__, str(w.message)]
            for w in caught
            if w.category.__module__.startswith("sbir_study.")
        ]
        _keep(path, stimulus_set, aspect, plan, key, own)
    return Checked(stimulus_set, plan, kept is not None, False)
