"""Giving memory freed by one large step back to the system before the next (private).

glibc's allocator and Arrow's memory pool keep freed blocks for reuse; after a large step
(parsed session files, a sketch's rater pairs) no later step reuses them, yet they count in
the process's peak. :func:`release_freed` hands them back.
"""

from __future__ import annotations

import ctypes
import functools
import sys


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed() -> None:
    """Return the memory freed so far to the operating system, where the allocator can."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
