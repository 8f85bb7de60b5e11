"""Which targets a command may write, and the output record that tells its own output
(``docs/outputs.md``, rules 1 to 4).

:func:`check_target` refuses (:class:`~sbir_study.foundation.checks.InputError`, one line
naming the target and why) a target that exists, unless ``overwrite`` is given and its
*output record* (:data:`RECORD`) says the same command wrote it and lists every file in it
with the same SHA-256; ``.`` and the folders above it, the home folder, a folder holding an
input or inside an input folder (a BIDS dataset's ``derivatives/`` excepted), a BIDS
dataset, a stimulus set and the output of another command, with anything inside the last
three; a symbolic link, a file where a folder is written (and a folder where a file is), a
path under a file and a name too long for the file system. :mod:`.outputs` writes through
the same checks, and compares the target with what they found (:func:`_state`) just
before it moves the new output into place.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .checks import InputError
from .provenance import DISTRIBUTION, file_digest

__all__ = ["RECORD", "OutputRecord", "check_dataset_folder", "check_target", "read_record"]

#: The output record: inside an output folder, or ``.<file>`` + this beside a file group.
RECORD = ".sbir-study-output.json"
_RECORD_FORMAT = 1


@dataclass(frozen=True)
class OutputRecord:
    """What one command wrote: the record kept with every output."""

    command: str
    target: str
    files: dict[str, str] = field(default_factory=dict)  # relative path -> SHA-256
    version: str = ""
    written: str = ""
    complete: bool = True
    pid: int = 0
    host: str = ""

    def to_json(self) -> str:
        """The record as its file holds it."""
        fields = {"format": _RECORD_FORMAT, "generated_by": DISTRIBUTION, **self.__dict__}
        return json.dumps(fields, indent=2) + "\n"


def read_record(path: str | Path) -> OutputRecord | None:
    """The output record of a folder (or of a file group, given its first file), or None."""
    path = Path(path)
    record = path / RECORD if path.is_dir() else _file_record(path)
    try:
        raw = json.loads(record.read_text(encoding="utf-8"))
        if raw.get("generated_by") != DISTRIBUTION:
            return None
        return OutputRecord(
            command=str(raw["command"]),
            target=str(raw["target"]),
            files={str(k): str(v) for k, v in dict(raw["files"]).items()},
            version=str(raw.get("version", "")),
            written=str(raw.get("written", "")),
            complete=bool(raw.get("complete", True)),
            pid=int(raw.get("pid", 0)),
            host=str(raw.get("host", "")),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _file_record(path: Path) -> Path:
    return path.parent / f".{path.name}{RECORD}"


#: A file's kind, inode, size, modification and change times (:func:`_state`).
_Stamp = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class _Plan:
    """What writing a target will do: where, and the state of what it replaces."""

    target: Path  # absolute, not resolved (the name the user gave)
    names: tuple[str, ...] | None  # a file group's names; None for a folder
    state: dict[str, _Stamp | None]  # what must not change until the move (_state)


def check_target(
    target: str | Path,
    command: str,
    *,
    folder: bool = True,
    companions: Sequence[str] = (),
    overwrite: bool = False,
    inputs: Iterable[str | Path] = (),
    inside_inputs: bool = False,
) -> None:
    """Check, writing nothing, that ``command`` may write ``target`` as :func:`output_folder`
    (``folder``) or :func:`output_files` would: commands call it before their work.
    """
    if folder:
        _plan_folder(Path(target), command, overwrite, inputs)
    else:
        _plan_files(Path(target), companions, command, overwrite, inputs, inside_inputs)


def _check_name(target: Path, absolute: Path) -> None:
    """Refuse a target that is no name, lies under a file, or whose names are too long."""
    if absolute.name in ("", ".", ".."):
        raise InputError(f"{target}: expected a new folder or file name, not {str(target)!r}")
    existing = absolute.parent
    while not os.path.lexists(existing):
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{target}: {existing} is a file, not a folder; choose another --out")
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in absolute.relative_to(existing).parts:
        # The record beside a file adds its suffix to the name.
        size = len(os.fsencode(part))
        if size > name_max or (part == absolute.name and size + len(RECORD) + 1 > name_max):
            raise InputError(
                f"{target}: the name {part[:40]!r}... is {size} bytes long; expected at most "
                f"{name_max - len(RECORD) - 1} ({os.strerror(errno.ENAMETOOLONG)})"
            )
    if len(os.fsencode(str(absolute))) + 64 > 4096:
        raise InputError(f"{target}: the path is too long; expected at most about 4000 bytes")


def _describe(folder: Path) -> str | None:
    """What a folder is, if it is one of the folders never written into."""
    kind = None
    if _is_bids(folder):
        kind = "a BIDS dataset"
    elif (folder / "manifest.csv").is_file() and (folder / "SHA256SUMS").is_file():
        kind = "a stimulus set"
    record = read_record(folder)
    if record is not None:
        return f"the output of sbir-study {record.command}" + (f" ({kind})" if kind else "")
    return kind


def _is_bids(folder: Path) -> bool:
    if (folder / "dataset_description.json").is_file():
        return True
    try:
        return any(folder.glob("sub-*/beh")) or any(folder.glob("sub-*/ses-*/beh"))
    except OSError:
        return False


def _check_place(
    target: Path, absolute: Path, inputs: Iterable[str | Path], inside_inputs: bool
) -> None:
    """Refuse the folders that are never targets, and targets inside them."""
    real = Path(os.path.realpath(absolute))
    cwd = Path(os.path.realpath(os.getcwd()))
    if real == cwd or real in cwd.parents:
        raise InputError(
            f"{target}: is the current folder or holds it; expected a new folder for the output"
        )
    if real == Path(real.anchor) or real == Path(os.path.realpath(Path.home())):
        raise InputError(f"{target}: is a top-level folder; expected a new folder for the output")
    # Compared as text (real paths are normal): Path parents cost much for many inputs.
    place = str(real)
    for given in inputs:
        found = os.path.realpath(given)
        if _within(found, place):
            raise InputError(
                f"{target}: holds the input {given}; it is never overwritten, choose another --out"
            )
        if not inside_inputs and _within(place, found) and os.path.isdir(found):
            source = Path(found)
            if not (_is_bids(source) and real.is_relative_to(source / "derivatives")):
                raise InputError(
                    f"{target}: is inside the input folder {given}; choose a folder outside it "
                    "(or the dataset's derivatives/)"
                )
    if inside_inputs:
        return
    for above in real.parents:
        what = _describe(above)
        if what is None or (_is_bids(above) and real.is_relative_to(above / "derivatives")):
            continue
        raise InputError(
            f"{target}: is inside {above}, {what}; nothing is written into it, choose a folder "
            "outside it"
        )


def _within(path: str, folder: str) -> bool:
    """Whether the normal absolute ``path`` is ``folder`` or below it (text, not Path: fast)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _stamp(path: Path) -> _Stamp | None:
    """A file's kind, inode, size, modification and change times; None if it is missing."""
    try:
        status = path.lstat()
    except FileNotFoundError:
        return None
    return (status.st_mode, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _listing(folder: Path) -> dict[str, _Stamp]:
    """The stamp of every file under ``folder`` by relative posix path, the record included."""
    found = {}
    for base, folders, files in os.walk(folder, followlinks=False):
        for name in files + [f for f in folders if os.path.islink(os.path.join(base, f))]:
            path = Path(base) / name
            if (stamp := _stamp(path)) is not None:
                found[path.relative_to(folder).as_posix()] = stamp
    return found


def _state(target: Path, names: Sequence[str] | None) -> dict[str, _Stamp | None]:
    """What must not change between a target's check and the move: the stamps of the folder and
    its files, or of a group's files and record (a write changes the ctime, which none can set).
    """
    if names is not None:
        paths = [*names, _file_record(target).name]
        return {name: _stamp(target.parent / name) for name in paths}
    found: dict[str, _Stamp | None] = {".": _stamp(target)}
    if (stamp := found["."]) is not None and stat.S_ISDIR(stamp[0]):
        found |= _listing(target)
    return found


def _plan_folder(
    target: Path, command: str, overwrite: bool, inputs: Iterable[str | Path]
) -> _Plan:
    absolute = Path(os.path.abspath(target))
    _check_name(target, absolute)
    _check_place(target, absolute, inputs, inside_inputs=False)
    state = _state(absolute, None)  # before the files are hashed, so that a change shows
    plan = _Plan(absolute, None, state)
    if state["."] is None:
        return plan
    if absolute.is_symlink():
        raise InputError(
            f"{target}: is a symbolic link; give the folder itself, or choose another --out"
        )
    if not absolute.is_dir():
        raise InputError(f"{target}: exists and is a file; expected a folder, choose another --out")
    try:
        entries = sorted(os.listdir(absolute))
    except OSError as error:
        raise InputError(f"{target}: cannot be read ({error.strerror})") from None
    if not entries:
        return plan
    record = read_record(absolute)
    if record is None:
        what = _describe(absolute)
        if what is not None:
            raise InputError(f"{target}: is {what}; it is never overwritten, choose another --out")
        raise InputError(
            f"{target}: holds files that sbir-study {command} did not write ({entries[0]}, ...); "
            "they are never overwritten, choose another --out"
        )
    present = _listing(absolute)
    present.pop(RECORD, None)
    _check_own(target, record, command, overwrite, present, absolute)
    return plan


def _check_own(
    target: Path,
    record: OutputRecord,
    command: str,
    overwrite: bool,
    present: dict[str, _Stamp],
    base: Path,
) -> None:
    """Refuse to replace what ``command`` did not write, or anything without ``overwrite``."""
    if record.command != command:
        raise InputError(
            f"{target}: holds the output of sbir-study {record.command}; it is never "
            f"overwritten by sbir-study {command}, choose another --out"
        )
    if not overwrite:
        raise InputError(
            f"{target}: exists (the output of an earlier sbir-study {command}); pass "
            "--overwrite to replace it, or choose another --out"
        )
    for relative, stamp in sorted(present.items()):
        expected = record.files.get(relative)
        if expected is None:
            raise InputError(
                f"{target}: holds {relative}, which sbir-study {command} did not write; it is "
                "never overwritten, move it out first or choose another --out"
            )
        if not stat.S_ISREG(stamp[0]) or file_digest(base / relative).sha256 != expected:
            raise InputError(
                f"{target}: {relative} was changed after sbir-study {command} wrote it; it is "
                "never overwritten, move it out first or choose another --out"
            )


def _plan_files(
    target: Path,
    companions: Sequence[str],
    command: str,
    overwrite: bool,
    inputs: Iterable[str | Path],
    inside_inputs: bool,
) -> _Plan:
    absolute = Path(os.path.abspath(target))
    _check_name(target, absolute)
    names = (absolute.name, *companions)
    if len(set(names)) != len(names):
        raise InputError(f"{target}: the output and its companion file would have one name")
    _check_place(target, absolute, inputs, inside_inputs)
    parent = absolute.parent
    state = _state(absolute, names)
    present = {name: stamp for name in names if (stamp := state[name]) is not None}
    for name, stamp in present.items():
        if not stat.S_ISREG(stamp[0]):
            kind = "a symbolic link" if stat.S_ISLNK(stamp[0]) else "a folder"
            raise InputError(
                f"{parent / name}: exists and is {kind}; expected a file, choose another --out"
            )
    if present:
        first = parent / next(iter(present))
        record = read_record(absolute)
        if record is None:
            raise InputError(
                f"{first}: exists and sbir-study {command} did not write it; it is never "
                "overwritten, choose another --out"
            )
        _check_own(first, record, command, overwrite, present, parent)
    return _Plan(absolute, names, state)


def check_dataset_folder(folder: str | Path, command: str) -> Path:
    """Check the folder ``command`` appends sessions to (``run --data``): missing, empty or a BIDS
    dataset; never a file, a stimulus set, an output, or inside one of them.
    """
    folder = Path(folder)
    absolute = Path(os.path.abspath(folder))
    _check_name(folder, absolute)
    _check_place(folder, absolute, (), inside_inputs=False)
    if os.path.lexists(absolute):
        if not absolute.is_dir():
            raise InputError(f"{folder}: exists and is a file; expected a BIDS dataset folder")
        what = _describe(absolute)
        if what is not None and what != "a BIDS dataset":  # never a set or an output
            raise InputError(
                f"{folder}: is {what}; sbir-study {command} records sessions only into a BIDS "
                "dataset of its own, choose another folder"
            )
        if not os.access(absolute, os.W_OK):
            raise InputError(f"{folder}: cannot be written ({os.strerror(errno.EACCES)})")
    return folder
