"""One file replaced whole or not at all, and kept through a power cut.

:func:`atomic_write` is how the toolkit replaces a single file in place: a recorded
session's sidecar and ``participants.tsv``, the output record of a folder being written,
the stimulus set's kept check. The new content goes to a temporary sibling, is flushed
to disk, and takes the file's place in one rename; the folder is then flushed too, so
that the rename itself survives a power cut. A crash at any moment leaves the old content
or the new, never a mixture or a truncated file, and no temporary file that a later
writer would take for data (its name starts with a dot and ends ``.partial``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write", "fsync_folder"]


def atomic_write(path: str | Path, content: str | bytes) -> None:
    """Replace ``path`` with ``content`` (text as UTF-8, its line ends as given), atomically
    and durably; its folder is made when missing.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.json"
    >>> atomic_write(path, '{"a": 1}\\n')
    >>> path.read_text()
    '{"a": 1}\\n'
    >>> sorted(p.name for p in path.parent.iterdir())
    ['notes.json']
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def fsync_folder(folder: str | Path) -> None:
    """Flush ``folder``'s entries (a rename, a new file) to disk; a file system that cannot
    (some network and virtual ones) is left as it is."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
