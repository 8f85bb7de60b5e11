"""A secret kept in a file of the data folder: the admin token, the labels' key.

Such a file is readable by its owner alone (mode 0600): a file others can read is refused,
naming the mode and the ``chmod`` that mends it, and one made here is made so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from sbir_study.foundation.checks import InputError

__all__ = ["secret_text"]


def secret_text(path: Path, new: Callable[[], str] | None = None) -> str:
    """The text in ``path``, stripped; when there is no such file and ``new`` is given, the
    file is made (mode 0600) holding ``new()``, which is returned."""
    if new is not None and not path.exists():
        text = new()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        return text
    try:
        mode = path.stat().st_mode & 0o777
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not text"
        raise InputError(f"{path}: cannot be read ({reason})") from None
    if mode & 0o077:
        raise InputError(
            f"{path}: readable by others (mode {mode:04o}); expected mode 0600 (chmod 600 {path})"
        )
    return text
