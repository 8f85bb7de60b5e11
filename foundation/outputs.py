"""Where commands write: one policy for every output (``docs/outputs.md`` states its rules).

A command writing a folder (``analyze``, ``evaluate``, ``simulate``, ``stimuli generate``,
...) or a group of files (``simulate --flat`` and its sidecar, a ``baseline`` run,
``stimuli import``'s manifest and checksums) writes through :func:`output_folder` or
:func:`output_files`. The target is checked first (:mod:`.targets`); the output is written
into a temporary folder beside it (``.sbir-study-tmp-HOST-PID-*``), flushed, given its
record (:data:`RECORD`: command, version, each file's SHA-256) and moved into place in one
atomic rename, SIGINT, SIGTERM and SIGHUP held back meanwhile. A target changed since the
check is checked again. A failed or interrupted command leaves the previous output as it
was; what a killed one leaves, the next writer removes once its process is gone. ``run``,
which appends to a dataset, checks its folder with :func:`check_dataset_folder`.

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
import functools
import hashlib
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .atomic import atomic_write, fsync_folder
from .checks import InputError, causes
from .provenance import file_digest, toolkit_version
from .targets import (
    RECORD,
    OutputRecord,
    _file_record,
    _listing,
    _Plan,
    _plan_files,
    _plan_folder,
    _state,
    check_dataset_folder,
    check_target,
    read_record,
)

__all__ = [
    "RECORD",
    "TEMP_PREFIX",
    "OutputRecord",
    "OutputWarning",
    "check_dataset_folder",
    "check_target",
    "output_files",
    "output_folder",
    "read_record",
]

#: Temporary folders beside a target start with this, then their writer's host (a digest
#: of its name) and process id: a writer killed before it wrote the folder's record is
#: still known by the name (:func:`_clear_leftovers`).
TEMP_PREFIX = ".sbir-study-tmp-"
_WRITER = re.compile(rf"{re.escape(TEMP_PREFIX)}([0-9a-f]{{8}})-([0-9]+)-")
_HELD_SIGNALS = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}


class OutputWarning(UserWarning):
    """Something about an output deserves attention (a leftover of an interrupted run)."""


def _record(command: str, target: Path, files: dict[str, str], complete: bool) -> OutputRecord:
    """This process's record of ``command`` writing ``target``, now."""
    written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    host = socket.gethostname()
    return OutputRecord(
        command, target.name, files, toolkit_version(), written, complete, os.getpid(), host
    )


@contextlib.contextmanager
def _held_signals() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP: one that comes meanwhile is raised, once, at the end.

    Python runs handlers in the main thread whatever thread gets the signal, so the handlers
    are swapped for a note (``pthread_sigmask`` would not hold them); in another thread there
    is nothing to hold. A nested hold raises into the outer hold's notes. A handler set outside
    Python (``None``) cannot be put back and is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {n: h for n in _HELD_SIGNALS if (h := signal.getsignal(n)) is not None}
    came: list[int] = []

    def note(number: int, frame: object) -> None:
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


def _clear_leftovers(parent: Path, name: str) -> None:
    """Remove the temporary folders of dead writers in ``parent``: those writing ``name`` (by
    their record) and those killed before writing a record (by the folder's name). A folder of
    a live writer or another host's writing ``name`` is warned about and left.
    """
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(TEMP_PREFIX) and e.is_dir()]
    except OSError:
        return
    for entry in entries:
        record = read_record(Path(entry.path))
        writer = _WRITER.match(entry.name)
        if record is not None:
            if record.target != name:
                continue  # another target's: its next writer clears it
            here, pid = record.host == socket.gethostname(), record.pid
            what = f"{record.command} (process {record.pid})"
        elif writer is not None:
            here, pid = writer.group(1) == _host_digest(), int(writer.group(2))
            what = f"(process {pid}), stopped before it had written anything"
        else:
            continue
        if here and not _alive(pid):
            with _held_signals():
                shutil.rmtree(entry.path, ignore_errors=True)
            message = f"removed the unfinished output of an interrupted sbir-study {what}"
        elif record is not None:
            message = (
                f"an unfinished output of sbir-study {record.command} (process {record.pid} on "
                f"{record.host}) is still there; remove it when nothing writes {parent / name}"
            )
        else:
            continue
        warnings.warn(f"{entry.path}: {message}", OutputWarning, stacklevel=5)


def _make_temporary(absolute: Path, command: str) -> Path:
    """A new temporary folder beside ``absolute``, its record saying what is under way."""
    parent = absolute.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        prefix = f"{TEMP_PREFIX}{_host_digest()}-{os.getpid()}-"
        temporary = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        # mkdtemp makes the folder private (0700); the output gets the mode a folder made
        # with mkdir would have, or that of the folder it replaces.
        os.chmod(temporary, _folder_mode(absolute))
    except OSError as error:
        where = error.filename or parent
        raise InputError(
            f"{absolute}: cannot be written ({error.strerror}: {where}); choose another --out"
        ) from None
    try:
        atomic_write(temporary / RECORD, _record(command, absolute, {}, False).to_json())
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


@functools.cache
def _libc(name: str) -> Any:
    """A function of the C library (``renameat2``, ``syncfs``), or None where it has none."""
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2(source: Path, destination: Path, flags: int) -> bool:
    """Linux renameat2; False when the system or file system does not offer it."""
    call = _libc("renameat2")
    if call is None:
        return False
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


def _exchange(temporary: Path, target: Path) -> None:
    """Put the folder ``temporary`` in ``target``'s place; the old one ends up at ``temporary``."""
    if _renameat2(temporary, target, _RENAME_EXCHANGE):
        return
    # Without an exchange: two renames; the old output waits beside until the new is in place.
    aside = Path(f"{temporary}-old")
    os.rename(target, aside)
    os.rename(temporary, target)
    os.rename(aside, temporary)


def _syncfs(folder: Path) -> bool:
    """Flush the file system holding ``folder`` in one call (Linux ``syncfs``: one wait for a
    dataset's thousands of files instead of one per file); False where not offered.
    """
    call = _libc("syncfs")
    if call is None:
        return False
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        return bool(call(descriptor) == 0)
    finally:
        os.close(descriptor)


def _seal(temporary: Path, plan: _Plan, command: str) -> None:
    """Flush the files written into ``temporary``, then write the final record with their hashes."""
    if plan.names is None:
        names, record = [n for n in _listing(temporary) if n != RECORD], RECORD
    else:
        names, record = list(plan.names), _file_record(plan.target).name
        missing = [name for name in names if not (temporary / name).is_file()]
        if missing:
            raise RuntimeError(f"sbir-study {command} did not write {missing[0]}")
    synced = _syncfs(temporary)
    hashes = {n: file_digest(temporary / n, sync=not synced).sha256 for n in sorted(names)}
    if not synced:
        for base, _, _ in os.walk(temporary):
            fsync_folder(base)
    atomic_write(temporary / record, _record(command, plan.target, hashes, True).to_json())


def _move(temporary: Path, plan: _Plan) -> None:
    """Put the sealed output in place: a folder in one rename, a group one rename a file, the
    record last; a new name is never put over a file that appeared meanwhile.
    """
    if plan.names is None:
        (_move_new if plan.state["."] is None else _exchange)(temporary, plan.target)
        return
    for name in (*plan.names, _file_record(plan.target).name):
        source, destination = temporary / name, plan.target.parent / name
        if plan.state[name] is None:
            _move_new(source, destination)
        else:
            os.replace(source, destination)


#: Errors of the storage itself, which carry no file name when a write fails.
_STORAGE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def _written_error(error: BaseException, temporary: Path | None, target: Path) -> InputError | None:
    """A one-line InputError naming ``target`` for the OSError of writing found in ``error`` or
    behind it (a library's clean-up can hide the storage's error: matplotlib's PDF writer after
    ENOSPC fails with AttributeError).
    """
    if not isinstance(error, Exception):
        return None
    for cause in (error, *causes(error)):
        if not isinstance(cause, OSError):
            continue
        name = str(cause.filename or "")
        reason = cause.strerror or str(cause)
        if temporary is not None and name.startswith(str(temporary)):
            inner = Path(name).relative_to(temporary).as_posix() if name != str(temporary) else "."
            return InputError(f"{target}: {reason} while writing {inner}; nothing was replaced")
        if not name and cause.errno in _STORAGE_ERRORS:
            return InputError(f"{target}: {reason} while writing; nothing was replaced")
    return None


@contextlib.contextmanager
def _aside(target: Path, command: str, check: Callable[[], _Plan]) -> Iterator[Path]:
    """The temporary folder of ``check()``'s plan; on success it is sealed and, signals held,
    moved into place if the target is as planned (else checked again). Always removed after.
    """
    plan = check()
    _clear_leftovers(plan.target.parent, plan.target.name)
    temporary = None
    try:
        # Inside the try: a signal held back while the folder is made arrives when the
        # hold ends, and the folder must then be removed.
        with _held_signals():
            temporary = _make_temporary(plan.target, command)
        yield temporary
        _seal(temporary, plan, command)
        with _held_signals():
            if _state(plan.target, plan.names) != plan.state:
                plan = check()  # names a file added or changed meanwhile
                if _state(plan.target, plan.names) != plan.state:
                    raise InputError(
                        f"{target}: changed while the output was written; nothing was replaced"
                    )
            _move(temporary, plan)
            shutil.rmtree(temporary, ignore_errors=True)
            fsync_folder(plan.target.parent)
    except BaseException as error:
        if temporary is not None:
            with _held_signals():
                shutil.rmtree(temporary, ignore_errors=True)
        message = _written_error(error, temporary, target)
        if message is None:
            raise
        raise message from None


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
        The command writing it (``"analyze"``): the record names it, and ``overwrite``
        replaces only that command's output.
    overwrite
        Replace an earlier output of the same command at ``target``.
    inputs
        The command's input files and folders: never a target, nor inside one.

    Yields
    ------
    Path
        The temporary folder to write into. When the block ends without an exception it
        replaces ``target``; otherwise it is removed and ``target`` is left as it was.
    """
    target, inputs = Path(target), list(inputs)

    def check() -> _Plan:
        return _plan_folder(target, command, overwrite, inputs)

    with _aside(target, command, check) as temporary:
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
    """Write a group of files (``target`` and the ``companions`` beside it) aside, then put them
    in place together, as :func:`output_folder` does a folder.

    The record is ``.<target name>.sbir-study-output.json`` beside ``target``.
    ``inside_inputs`` allows a group inside an input folder (``stimuli import`` writes into its
    set). Yields the temporary paths ``[target, *companions]``. Only SIGKILL or a power cut
    between the renames can leave a new file beside an old one; the record then shows it, and
    a later ``overwrite`` refuses the group.
    """
    target, inputs = Path(target), list(inputs)

    def check() -> _Plan:
        return _plan_files(target, companions, command, overwrite, inputs, inside_inputs)

    with _aside(target, command, check) as temporary:
        names = [Path(os.path.abspath(target)).name, *companions]
        yield [temporary / name for name in names]
