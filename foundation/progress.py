"""Progress on stderr for long runs started from a terminal; silent in pipes and CI.

Bars are drawn with ``tqdm`` only when stderr is a terminal, ``CI`` is not set and
``SBIR_STUDY_PROGRESS`` is not ``0`` (``1`` forces them); anywhere else these functions
write nothing, so captured output stays the command's own (``docs/outputs.md``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["counter", "enabled", "step", "task", "track"]

_T = TypeVar("_T")

#: Redraw at most this often (seconds): a bar must not slow what it measures.
_MIN_INTERVAL = 0.2


def enabled() -> bool:
    """Whether progress is drawn.

    >>> import os
    >>> os.environ["SBIR_STUDY_PROGRESS"] = "0"
    >>> enabled()
    False
    >>> del os.environ["SBIR_STUDY_PROGRESS"]
    """
    forced = os.environ.get("SBIR_STUDY_PROGRESS", "").strip().lower()
    if forced in ("0", "false", "no", "off"):
        return False
    if forced in ("1", "true", "yes", "on"):
        return True
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def _bar(label: str, total: float | None, unit: str, show: bool | None, **style):
    from tqdm import tqdm  # only when drawing is possible: importing tqdm costs time

    known = _width() > 0  # a fresh pseudo-terminal reports 0 x 0: draw 80 x 24 there
    return tqdm(
        **style,
        total=total,
        desc=label,
        unit=unit,
        file=sys.stderr,
        leave=True,
        mininterval=_MIN_INTERVAL,
        dynamic_ncols=known,
        ncols=None if known else 80,
        nrows=None if known else 24,
        disable=not (enabled() if show is None else show),
    )


def _width() -> int:
    """Columns of the terminal stderr is on; 0 when it does not say."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class _Silent:
    """What :func:`task` yields when nothing is drawn: every call does nothing."""

    def update(self, n: float = 1) -> None:
        """Ignore ``n`` steps done."""

    def set_postfix_str(self, text: str) -> None:
        """Ignore a note."""


@contextmanager
def task(
    label: str, *, total: float | None = None, unit: str = "it", show: bool | None = None
) -> Iterator[Any]:
    """A bar for ``total`` steps of ``label``, with ``update(n)`` and ``set_postfix_str(text)``;
    ``show`` overrides :func:`enabled`.

    >>> with task("writing", total=3, show=False) as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    """
    if not (enabled() if show is None else show):
        yield _Silent()
        return
    bar = _bar(label, total, unit, True)
    try:
        yield bar
    finally:
        bar.close()


def track(
    iterable: Iterable[_T],
    label: str,
    *,
    total: float | None = None,
    unit: str = "it",
    show: bool | None = None,
) -> Iterator[_T]:
    """Yield from ``iterable``, advancing a bar by one per item.

    >>> [x * 2 for x in track(range(3), "doubling", show=False)]
    [0, 2, 4]
    """
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with task(label, total=total, unit=unit, show=show) as bar:
        for item in iterable:
            yield item
            bar.update(1)


@contextmanager
def step(label: str, *, show: bool | None = None) -> Iterator[None]:
    """One stage of unknown length: ``label`` and a clock that runs until the block ends.

    >>> with step("reading", show=False):
    ...     pass
    """
    if not (enabled() if show is None else show):
        yield
        return
    bar = _bar(label, None, "", True, bar_format="{desc}: {elapsed}")
    finished = threading.Event()

    def tick() -> None:  # the clock must run while the stage holds the main thread
        while not finished.wait(_MIN_INTERVAL * 2.5):
            bar.refresh()

    clock = threading.Thread(target=tick, daemon=True)
    clock.start()
    try:
        yield
    finally:
        finished.set()
        clock.join()
        bar.bar_format = "{desc}: done in {elapsed}"
        bar.close()


def counter(
    label: str, *, unit: str = "it", show: bool | None = None
) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback for functions that report how far they are: a bar
    that ends when ``done`` reaches ``total``.

    >>> report = counter("descriptors", show=False)
    >>> for done in range(1, 4):
    ...     report(done, 3)
    """
    show = enabled() if show is None else show
    bar: Any = None
    shown = 0

    def progress(done: int, total: int) -> None:
        nonlocal bar, shown
        if not show:
            return
        if bar is None:
            bar = _bar(label, total, unit, True)
        bar.update(done - shown)
        shown = done
        if done >= total:
            bar.close()
            bar, shown = None, 0

    return progress
