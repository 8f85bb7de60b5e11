"""A one-line progress bar on stderr, for long runs started from a terminal."""

from __future__ import annotations

import sys

__all__ = ["progress_bar"]


def progress_bar(label: str, done: int, total: int, *, show: bool = True) -> None:
    """Redraw ``label [####......] done/total`` in place; end the line when done."""
    if not show:
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()
