"""One file replaced whole or not at all, and kept through a power cut.

The content goes to a temporary sibling (``.<name>.<pid>.partial``), is fsync'ed and renamed
into place, then the folder is fsync'ed: a crash leaves the old content or the new.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write", "fsync_folder"]


def atomic_write(path: str | Path, content: str | bytes) -> None:
    """Replace ``path`` with ``content`` (text as UTF-8), atomically and durably.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.json"
    >>> atomic_write(path, '{"a": 1}\\n')
    >>> path.read_text(), sorted(p.name for p in path.parent.iterdir())
    ('{"a": 1}\\n', ['notes.json'])
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
