"""Where commands write: one policy for every output (``docs/outputs.md``).

Every command that writes a folder (``analyze``, ``evaluate``,
``evaluate-hpatches``, ``baseline``, ``power``, ``simulate``, ``stimuli
generate`` and ``select``, ``export-online``) or a group of files (``simulate --flat`` with its
sidecar, one ``baseline`` run, ``stimuli import``'s manifest and checksums)
writes through :func:`output_folder` or :func:`output_files`:

1. **Checked first.** The target is refused (:class:`~sbir_study.foundation.checks.InputError`,
   exit 2) when it exists, unless ``overwrite``; and even then unless its
   *output record* says the same command wrote it and every file in it is
   one that command wrote, unchanged. ``.`` and the folders above it, a folder
   holding one of the command's inputs, a BIDS dataset, a stimulus set, the
   output of another command, and anything inside the last three (a BIDS
   dataset's ``derivatives/`` excepted) are never targets. A name too long
   for the file system, a file where a folder is needed and a symbolic link
   are refused before any work is done.
2. **Written aside.** The command writes into a fresh temporary folder beside
   the target (``.sbir-study-tmp-*``, on the same file system), which holds a
   record of what is under way.
3. **Moved into place when complete.** The files are flushed to disk, the
   output record (:data:`RECORD`: the command, the version, every file with
   its SHA-256) is written, and the folder takes the target's place in one
   atomic rename (Linux ``renameat2``: an exchange when replacing), with
   SIGINT, SIGTERM and SIGHUP held back until it is done. A failed or
   interrupted command removes its temporary folder and leaves the previous
   output exactly as it was.

After SIGKILL (or a power cut) the temporary folder stays; the next command
writing to the same target removes it when the process that made it is gone,
and says so. A command that *appends* to a dataset (``run``) does not write
aside, but checks its dataset folder with :func:`check_dataset_folder`.

Examples
--------
>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> with output_folder(root / "results", "demo") as folder:
...     _ = (folder / "table.csv").write_text("a,b\\n1,2\\n")
>>> sorted(p.name for p in (root / "results").iterdir())
['.sbir-study-output.json', 'table.csv']
>>> read_record(root / "results").files
{'table.csv': '492d5ea496056f1a6a6592241032fab764c321596317930b4fa0e1e8bc3b7470'}
>>> try:
...     with output_folder(root / "results", "demo") as folder:
...         pass
... except InputError as error:
...     print(str(error).split(": ", 1)[1])
exists (the output of an earlier sbir-study demo); pass --overwrite to replace it,
or choose another --out
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .atomic import atomic_write, fsync_folder
from .checks import InputError, causes
from .provenance import DISTRIBUTION, file_digest

__all__ = [
    "RECORD",
    "OutputRecord",
    "OutputWarning",
    "check_dataset_folder",
    "check_target",
    "output_files",
    "output_folder",
    "read_record",
]

#: The output record: inside an output folder, or ``.<file>`` + this beside a file group.
RECORD = ".sbir-study-output.json"
#: Temporary folders beside a target start with this, then their writer's host (a digest
#: of its name) and process id: a writer killed before it wrote the folder's record is
#: still known by the name (:func:`_clear_leftovers`).
TEMP_PREFIX = ".sbir-study-tmp-"
_WRITER = re.compile(rf"{re.escape(TEMP_PREFIX)}([0-9a-f]{{8}})-([0-9]+)-")
_RECORD_FORMAT = 1
_HELD_SIGNALS = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}


class OutputWarning(UserWarning):
    """Something about an output deserves attention (a leftover of an interrupted run)."""


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
        return (
            json.dumps(
                {"format": _RECORD_FORMAT, "generated_by": DISTRIBUTION, **self.__dict__}, indent=2
            )
            + "\n"
        )


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


# --- checking a target -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """What writing a target will do: where, and what it replaces."""

    target: Path  # absolute, not resolved (the name the user gave)
    replaces: tuple[str, ...]  # existing names (files, or folder entries) being replaced


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
    """Check that ``command`` may write ``target``, as :func:`output_folder` (``folder``) or
    :func:`output_files` would, without writing anything.

    Commands call it before their work, so that a refused target costs nothing.
    Raises :class:`~sbir_study.foundation.checks.InputError` naming the target and why.
    """
    if folder:
        _plan_folder(Path(target), command, overwrite, inputs)
    else:
        _plan_files(Path(target), companions, command, overwrite, inputs, inside_inputs)


def _absolute(target: Path) -> Path:
    return Path(os.path.abspath(target))


def _check_name(target: Path, absolute: Path) -> Path:
    """The nearest existing folder above ``absolute``, after checking the names on the way."""
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
    return existing


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
    return (folder / "dataset_description.json").is_file() or _has_sessions(folder)


def _has_sessions(folder: Path) -> bool:
    try:
        return any(True for _ in folder.glob("sub-*/beh")) or any(
            True for _ in folder.glob("sub-*/ses-*/beh")
        )
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
    # Compared as text (real paths are normal): a study's thousands of session files cost
    # a second as Path objects and their parents.
    place = str(real)
    for given in inputs:
        found = os.path.realpath(given)
        if _within(found, place):
            raise InputError(
                f"{target}: holds the input {given}; it is never overwritten, choose another --out"
            )
        if not inside_inputs and _within(place, found) and os.path.isdir(found):
            source = Path(found)
            derivatives = source / "derivatives"
            if not (_is_bids(source) and real.is_relative_to(derivatives)):
                raise InputError(
                    f"{target}: is inside the input folder {given}; choose a folder outside it "
                    "(or the dataset's derivatives/)"
                )
    if inside_inputs:
        return
    for above in real.parents:
        what = _describe(above)
        if what is None:
            continue
        if _is_bids(above) and real.is_relative_to(above / "derivatives"):
            continue
        raise InputError(
            f"{target}: is inside {above}, {what}; nothing is written into it, choose a folder "
            "outside it"
        )


def _within(path: str, folder: str) -> bool:
    """Whether the normal absolute ``path`` is ``folder`` or below it (as ``Path(path) ==
    Path(folder) or Path(folder) in Path(path).parents``)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _listing(folder: Path) -> dict[str, os.stat_result]:
    """Every file under ``folder`` (relative posix path -> stat), the record left out."""
    found = {}
    for base, folders, files in os.walk(folder, followlinks=False):
        for name in files + [f for f in folders if os.path.islink(os.path.join(base, f))]:
            path = Path(base) / name
            relative = path.relative_to(folder).as_posix()
            if relative != RECORD:
                found[relative] = path.lstat()
    return found


def _plan_folder(target: Path, command: str, overwrite: bool, inputs) -> _Plan:
    absolute = _absolute(target)
    _check_name(target, absolute)
    _check_place(target, absolute, inputs, inside_inputs=False)
    if not os.path.lexists(absolute):
        return _Plan(absolute, ())
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
        return _Plan(absolute, ())
    record = read_record(absolute)
    if record is None:
        what = _describe(absolute)
        if what is not None:
            raise InputError(f"{target}: is {what}; it is never overwritten, choose another --out")
        raise InputError(
            f"{target}: holds files that sbir-study {command} did not write ({entries[0]}, ...); "
            "they are never overwritten, choose another --out"
        )
    _check_own(target, record, command, overwrite, _listing(absolute), absolute)
    return _Plan(absolute, tuple(entries))


def _check_own(
    target: Path,
    record: OutputRecord,
    command: str,
    overwrite: bool,
    present: dict[str, os.stat_result],
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
    for relative, status in sorted(present.items()):
        expected = record.files.get(relative)
        if expected is None:
            raise InputError(
                f"{target}: holds {relative}, which sbir-study {command} did not write; it is "
                "never overwritten, move it out first or choose another --out"
            )
        if not _is_file(status) or file_digest(base / relative).sha256 != expected:
            raise InputError(
                f"{target}: {relative} was changed after sbir-study {command} wrote it; it is "
                "never overwritten, move it out first or choose another --out"
            )


def _is_file(status: os.stat_result) -> bool:
    return stat.S_ISREG(status.st_mode)


def _plan_files(
    target: Path,
    companions: Sequence[str],
    command: str,
    overwrite: bool,
    inputs,
    inside_inputs: bool,
) -> _Plan:
    absolute = _absolute(target)
    _check_name(target, absolute)
    names = [absolute.name, *companions]
    if len(set(names)) != len(names):
        raise InputError(f"{target}: the output and its companion file would have one name")
    _check_place(target, absolute, inputs, inside_inputs)
    parent = absolute.parent
    present = {}
    for name in names:
        path = parent / name
        if not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_file():
            kind = "a symbolic link" if path.is_symlink() else "a folder"
            raise InputError(f"{path}: exists and is {kind}; expected a file, choose another --out")
        present[name] = path.lstat()
    if present:
        record = read_record(absolute)
        if record is None:
            first = next(iter(present))
            raise InputError(
                f"{parent / first}: exists and sbir-study {command} did not write it; it is never "
                "overwritten, choose another --out"
            )
        _check_own(parent / next(iter(present)), record, command, overwrite, present, parent)
    return _Plan(absolute, tuple(present))


def check_dataset_folder(folder: str | Path, command: str) -> Path:
    """Check a dataset folder that ``command`` appends sessions to (``run --data``).

    It may be missing (it is created), empty, or a BIDS dataset; never a file,
    a stimulus set, another command's output, or inside one of them. Returns
    the folder.
    """
    folder = Path(folder)
    absolute = _absolute(folder)
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


# --- writing aside and moving into place -------------------------------------------------------


@contextlib.contextmanager
def _held_signals() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP: a signal that comes meanwhile is delivered,
    once, when the block ends.

    The hold is kept where Python runs its signal handlers, in the main thread: for the
    block, each of these signals' handler only notes that it came. Blocking the signals
    with ``pthread_sigmask`` holds them back from the calling thread alone, and the
    kernel gives a signal sent to the process to any thread that does not block it (a
    progress clock, a library's thread pool); Python then runs the handler in the main
    thread, inside the block. In another thread than the main one there is nothing to
    hold: no handler runs there. A hold inside a hold notes for the outer one: it puts the
    outer hold's handlers back and raises the signal into them.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in _HELD_SIGNALS}
    if any(handler is None for handler in previous.values()):
        # A handler set outside Python cannot be put back; hold in this thread only.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return
    came: list[int] = []

    def note(number, frame) -> None:
        if number not in came:
            came.append(number)

    try:
        for number in previous:
            signal.signal(number, note)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in came:
            signal.raise_signal(number)  # the handler it had: the program's own, or the default


def _version() -> str:
    from .provenance import toolkit_version

    return toolkit_version()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _host_digest() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]


def _temporary_prefix() -> str:
    """:data:`TEMP_PREFIX` and this writer (:data:`_WRITER`)."""
    return f"{TEMP_PREFIX}{_host_digest()}-{os.getpid()}-"


def _clear_leftovers(parent: Path, name: str) -> None:
    """Remove the temporary folders that a killed writer of ``name`` left in ``parent``,
    and those of any writer on this host killed before it wrote its folder's record (an
    empty folder, whose output cannot be told)."""
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(TEMP_PREFIX) and e.is_dir()]
    except OSError:
        return
    host = socket.gethostname()
    for entry in entries:
        record = read_record(Path(entry.path))
        if record is None:
            _clear_unrecorded(entry)
            continue
        if record.target != name:
            continue
        if record.host != host or _alive(record.pid):
            warnings.warn(
                f"{entry.path}: an unfinished output of sbir-study {record.command} (process "
                f"{record.pid} on {record.host}) is still there; remove it when nothing writes "
                f"{parent / name}",
                OutputWarning,
                stacklevel=4,
            )
            continue
        _remove_leftover(entry.path, f"{record.command} (process {record.pid})")


def _clear_unrecorded(entry: os.DirEntry) -> None:
    """Remove a temporary folder without a record whose name says that a process of this
    host made it, and that process is gone: killed between making the folder and writing
    its record, it wrote nothing else."""
    writer = _WRITER.match(entry.name)
    if writer is None or writer.group(1) != _host_digest() or _alive(int(writer.group(2))):
        return
    _remove_leftover(
        entry.path, f"(process {writer.group(2)}), stopped before it had written anything"
    )


def _remove_leftover(path: str, what: str) -> None:
    """Remove a killed writer's temporary folder and say so: "removed the unfinished output
    of an interrupted sbir-study ``what``"."""
    with _held_signals():
        shutil.rmtree(path, ignore_errors=True)
    warnings.warn(
        f"{path}: removed the unfinished output of an interrupted sbir-study {what}",
        OutputWarning,
        stacklevel=5,
    )


def _make_temporary(absolute: Path, command: str) -> Path:
    """A new temporary folder beside ``absolute``, with a record saying what is under way."""
    parent = absolute.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=_temporary_prefix(), dir=parent))
        # mkdtemp makes the folder private (0700); the output gets the mode a folder made
        # with mkdir would have, or that of the folder it replaces.
        os.chmod(temporary, _folder_mode(absolute))
    except OSError as error:
        where = error.filename or parent
        raise InputError(
            f"{absolute}: cannot be written ({error.strerror}: {where}); choose another --out"
        ) from None
    try:
        marker = OutputRecord(
            command,
            absolute.name,
            {},
            _version(),
            _now(),
            complete=False,
            pid=os.getpid(),
            host=socket.gethostname(),
        )
        atomic_write(temporary / RECORD, marker.to_json())
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        raise InputError(
            f"{absolute}: cannot be written ({error.strerror}); choose another --out"
        ) from None
    return temporary


def _folder_mode(target: Path) -> int:
    if target.is_dir() and not target.is_symlink():
        return stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o777 & ~umask


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2(source: Path, destination: Path, flags: int) -> bool:
    """Linux renameat2; False when the system or file system does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if call(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(destination), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(destination))


def _move_new(source: Path, destination: Path) -> None:
    """Move ``source`` to ``destination``, which must not exist (never replaced)."""
    if _renameat2(source, destination, _RENAME_NOREPLACE):
        return
    if os.path.lexists(destination):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(destination))
    os.rename(source, destination)


def _replace_folder(temporary: Path, target: Path) -> None:
    """Put the folder ``temporary`` in ``target``'s place; the old one ends up at ``temporary``."""
    if _renameat2(temporary, target, _RENAME_EXCHANGE):
        return
    # Without an exchange: two renames; the old output waits beside until the new is in place.
    aside = Path(tempfile.mkdtemp(prefix=_temporary_prefix(), dir=target.parent))
    os.rmdir(aside)
    os.rename(target, aside)
    os.rename(temporary, target)
    os.rename(aside, temporary)


def _syncfs(folder: Path) -> bool:
    """Flush the file system holding ``folder`` to disk in one call (Linux ``syncfs``);
    False where the system does not offer it."""
    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        return call(descriptor) == 0
    finally:
        os.close(descriptor)


def _seal(folder: Path, files: Iterable[str], command: str, target: Path) -> str:
    """Flush every file to disk and return the text of the final record."""
    # One syncfs flushes thousands of files (a BIDS dataset) far faster than one fsync each.
    synced = _syncfs(folder)
    hashes = {name: file_digest(folder / name, sync=not synced).sha256 for name in sorted(files)}
    record = OutputRecord(
        command,
        target.name,
        hashes,
        _version(),
        _now(),
        complete=True,
        pid=os.getpid(),
        host=socket.gethostname(),
    )
    return record.to_json()


def _snapshot(paths: Iterable[Path]) -> list[tuple[str, int, int]]:
    """Names, sizes and modification times: what must not change between check and commit."""
    found = []
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            found += [(f"{path}/{k}", s.st_size, s.st_mtime_ns) for k, s in _listing(path).items()]
        elif os.path.lexists(path):
            status = path.lstat()
            found.append((str(path), status.st_size, status.st_mtime_ns))
    return sorted(found)


#: Errors of the storage itself, which carry no file name when a write fails.
_STORAGE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def _written_error(error: OSError, temporary: Path | None, target: Path) -> InputError | None:
    """An OSError from writing the output, as the one-line message naming ``target``."""
    name = str(error.filename or "")
    reason = error.strerror or str(error)
    if temporary is not None and name.startswith(str(temporary)):
        inner = Path(name).relative_to(temporary).as_posix() if name != str(temporary) else "."
        return InputError(f"{target}: {reason} while writing {inner}; nothing was replaced")
    if not name and error.errno in _STORAGE_ERRORS:
        return InputError(f"{target}: {reason} while writing; nothing was replaced")
    return None


@contextlib.contextmanager
def _aside(target: Path, command: str, plan: _Plan, commit) -> Iterator[Path]:
    """The temporary folder beside ``plan.target``; ``commit(temporary)`` when the block ends
    without an exception (called with SIGINT, SIGTERM and SIGHUP held back). The temporary
    folder is removed in every case."""
    _clear_leftovers(plan.target.parent, plan.target.name)
    temporary = None
    try:
        # Inside the try: a signal held back while the folder is made arrives when the
        # hold ends, and the folder must then be removed.
        with _held_signals():
            temporary = _make_temporary(plan.target, command)
        yield temporary
        finish = commit(temporary)
        with _held_signals():
            finish()
            shutil.rmtree(temporary, ignore_errors=True)
            fsync_folder(plan.target.parent)
    except OSError as error:
        message = _written_error(error, temporary, target)
        if temporary is not None:
            with _held_signals():
                shutil.rmtree(temporary, ignore_errors=True)
        if message is None:
            raise
        raise message from None
    except BaseException as error:
        if temporary is not None:
            with _held_signals():
                shutil.rmtree(temporary, ignore_errors=True)
        # A library's clean-up can hide the storage's error behind its own: matplotlib's
        # PDF writer, whose write failed with ENOSPC, then fails closing its stream
        # (AttributeError: 'Stream' object has no attribute 'pos'). The storage's error
        # is in the chain, and it is the one to report.
        if isinstance(error, Exception):
            for cause in causes(error):
                if (
                    isinstance(cause, OSError)
                    and (message := _written_error(cause, temporary, target)) is not None
                ):
                    raise message from None
        raise


@contextlib.contextmanager
def output_folder(
    target: str | Path,
    command: str,
    *,
    overwrite: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Iterator[Path]:
    """Write a command's output folder aside and move it into place when complete.

    Parameters
    ----------
    target
        The output folder (``--out``).
    command
        The command writing it (``"analyze"``, ``"stimuli generate"``): the
        record names it, and ``overwrite`` replaces only that command's output.
    overwrite
        Replace an earlier output of the same command at ``target``.
    inputs
        The command's input files and folders: never a target, nor inside one.

    Yields
    ------
    Path
        The temporary folder to write into. When the block ends without an
        exception, the folder (with its record) replaces ``target``; otherwise
        it is removed and ``target`` is left as it was.
    """
    target = Path(target)
    inputs = list(inputs)
    plan = _plan_folder(target, command, overwrite, inputs)

    def commit(temporary: Path):
        text = _seal(temporary, _listing(temporary), command, plan.target)
        atomic_write(temporary / RECORD, text)
        if not _syncfs(temporary):
            for base, _, _ in os.walk(temporary):
                fsync_folder(Path(base))
        # Checked again (hashes included) just before, and unchanged (names, sizes, times)
        # at the moment of the move: what is replaced is still only this command's output.
        again = _plan_folder(target, command, overwrite, inputs)
        state = _snapshot([plan.target])

        def finish() -> None:
            if _snapshot([plan.target]) != state:
                raise InputError(
                    f"{target}: changed while the output was written; nothing was replaced"
                )
            if again.replaces or os.path.lexists(plan.target):
                _replace_folder(temporary, plan.target)
            else:
                _move_new(temporary, plan.target)

        return finish

    with _aside(target, command, plan, commit) as temporary:
        yield temporary


@contextlib.contextmanager
def output_files(
    target: str | Path,
    command: str,
    *,
    companions: Sequence[str] = (),
    overwrite: bool = False,
    inputs: Iterable[str | Path] = (),
    inside_inputs: bool = False,
) -> Iterator[list[Path]]:
    """Write a group of files (``target`` and ``companions`` beside it) aside, then put them
    in place together.

    ``companions`` are file names in ``target``'s folder (a sidecar). The
    record is ``.<target name>.sbir-study-output.json`` beside ``target``.
    ``inside_inputs`` allows a group inside an input folder (``stimuli
    import`` writes into the set it imports). Yields the temporary paths to
    write, in the order ``[target, *companions]``; see :func:`output_folder`
    for the rest.

    Notes
    -----
    The files are moved into place one rename each, the record last, with
    the signals held back; only SIGKILL or a power cut between two of these
    renames can leave a new file beside an old one, which the record (hashes
    of the new files) then shows: a later ``overwrite`` refuses the group.
    """
    target = Path(target)
    inputs = list(inputs)
    plan = _plan_files(target, companions, command, overwrite, inputs, inside_inputs)
    parent = plan.target.parent
    names = [plan.target.name, *companions]

    def commit(temporary: Path):
        missing = [name for name in names if not (temporary / name).is_file()]
        if missing:
            raise RuntimeError(f"sbir-study {command} did not write {missing[0]}")
        record_path = temporary / f".{plan.target.name}{RECORD}"
        atomic_write(record_path, _seal(temporary, names, command, plan.target))
        if not _syncfs(temporary):
            fsync_folder(temporary)
        again = _plan_files(target, companions, command, overwrite, inputs, inside_inputs)
        paths = [parent / name for name in names]
        state = _snapshot(paths)

        def finish() -> None:
            if _snapshot(paths) != state:
                raise InputError(
                    f"{target}: changed while the output was written; nothing was replaced"
                )
            for name in names:
                if name in again.replaces:
                    os.replace(temporary / name, parent / name)
                else:
                    _move_new(temporary / name, parent / name)
            os.replace(record_path, _file_record(plan.target))

        return finish

    with _aside(target, command, plan, commit) as temporary:
        yield [temporary / name for name in names]
