"""The session's timeline: when each screen is due, and how late a flip was.

Every onset is planned on one timeline (:class:`Timeline`), ``onset(i + 1) =
onset(i) + shown(i) + blank_s + paused_before(i + 1)``, never from the
previous flip: a late flip shortens the blank that follows it and does not
move the rest of the session. The stimulus is taken down ``shown(i)`` after
its *actual* onset, so that the participant sees it for the protocol's
duration. Pure code, tested without a window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Timeline", "dropped_frames", "late_frames", "next_refresh_is_due", "refreshes_late"]


@dataclass
class Timeline:
    """The planned onset of the session's next pair, and the time paused before it.

    ``planned`` moves on by the pair's own duration and one blank whenever a
    pair comes on screen, however late its flip came (:meth:`begin_pair`); a
    waiting screen (a pause, the quit question, the instructions of the next
    block) moves it to one blank after the key press that ended the screen,
    and the time this adds is counted in ``paused`` (:meth:`resume`).

    Examples
    --------
    The first pair is due one blank (1 s) after the session began; it is shown
    for 2 s. Where its flip came does not matter: the next one is due at 4 s.

    >>> timeline = Timeline(planned=1.0)
    >>> timeline.begin_pair(shown_s=2.0, blank_s=1.0)
    (1.0, 0.0)
    >>> timeline.planned
    4.0

    A pause answered at 10.5 s: the next pair comes one blank later, at 11.5 s,
    7.5 s after it was due.

    >>> timeline.resume(10.5, blank_s=1.0)
    >>> timeline.begin_pair(shown_s=2.0, blank_s=1.0)
    (11.5, 7.5)
    >>> timeline.planned
    14.5
    """

    planned: float
    paused: float = 0.0

    def begin_pair(self, shown_s: float, blank_s: float) -> tuple[float, float]:
        """The pair due at ``planned`` is on screen: its planned onset and the time paused
        before it; the next pair is planned ``shown_s + blank_s`` after it."""
        planned, paused = self.planned, self.paused
        self.planned = planned + shown_s + blank_s
        self.paused = 0.0
        return planned, paused

    def resume(self, answered: float, blank_s: float) -> None:
        """A waiting screen ended at ``answered``: the next pair comes one blank later."""
        nominal = self.planned
        self.planned = answered + blank_s
        self.paused += self.planned - nominal


def next_refresh_is_due(last_flip: float, frame_s: float, deadline: float) -> bool:
    """With vertical sync: is the next refresh the one nearest ``deadline``?

    A flip issued now appears at the next refresh, about ``last_flip +
    frame_s``; it is the one to show the new screen on when that refresh is no
    more than half a frame before the deadline (any later one would be
    farther from it).

    Examples
    --------
    >>> frame = 1 / 60
    >>> next_refresh_is_due(0.0, frame, 2.0)
    False
    >>> next_refresh_is_due(2.0 - frame, frame, 2.0)
    True

    With the refreshes 0.4 frame before and 0.6 frame after the deadline, the
    one before is nearer; 0.6 before and 0.4 after, the one after:

    >>> next_refresh_is_due(2.0 - 1.4 * frame, frame, 2.0)
    True
    >>> next_refresh_is_due(2.0 - 1.6 * frame, frame, 2.0)
    False
    """
    return last_flip + frame_s >= deadline - frame_s / 2


def late_frames(flip_time: float, deadline: float, frame_s: float) -> int:
    """Whole frame periods a flip came after its deadline (a clock-timed display).

    Without vertical sync nothing is dropped in the strict sense; a flip one
    or more frame periods late is what a dropped frame does to a display that
    has them, so it is counted the same way.

    Examples
    --------
    >>> late_frames(2.0049, 2.0, 1 / 60), late_frames(2.0170, 2.0, 1 / 60)
    (0, 1)
    >>> late_frames(1.99, 2.0, 1 / 60)
    0
    """
    late = (flip_time - deadline) / frame_s
    return math.floor(late) if late >= 1.0 else 0


def refreshes_late(flip_time: float, deadline: float, frame_s: float) -> int:
    """With vertical sync: refreshes a flip came after the one nearest ``deadline``.

    A flip lands on a refresh; on time, that is the refresh nearest the
    deadline, the earlier of two equally near (as :func:`next_refresh_is_due`
    chooses), so it lies less than half a frame after the deadline.

    Examples
    --------
    >>> frame = 1 / 60
    >>> refreshes_late(2.0 + 0.4 * frame, 2.0, frame), refreshes_late(2.0 - 0.5 * frame, 2.0, frame)
    (0, 0)
    >>> refreshes_late(2.0 + 0.6 * frame, 2.0, frame), refreshes_late(2.0 + 2.2 * frame, 2.0, frame)
    (1, 2)
    """
    return max(math.floor((flip_time - deadline) / frame_s + 0.5), 0)


def dropped_frames(flip_times: Sequence[float], frame_period: float) -> int:
    """Refreshes missed between consecutive flips: an interval of k periods missed k - 1.

    ``flip_times`` are flips made one after another, each at the refresh after
    the one before if none is missed; a stretch in which nothing flipped (the
    session waiting or loading) is no run of missed refreshes and must not lie
    between two of them.

    PsychoPy's own counter (``Window.nDroppedFrames``) counts only while
    ``recordFrameIntervals`` is on, and one per late interval however late it
    was; this counts each missed refresh, which is what lengthens a stimulus.

    Examples
    --------
    >>> dropped_frames([0.0, 1 / 60, 2 / 60, 4 / 60, 5 / 60], 1 / 60)
    1
    """
    intervals = np.diff(np.asarray(flip_times, dtype=np.float64))
    return int(np.maximum(np.rint(intervals / frame_period) - 1.0, 0.0).sum())
