"""The session's timeline: when each screen is due, and how late a flip was.

Every onset is planned on one timeline, ``onset(i + 1) = onset(i) + shown(i) +
blank_s + paused_before(i + 1)``, never from the previous flip: a late flip
shortens the blank that follows it and does not move the rest of the session.
The stimulus is taken down ``shown(i)`` after its *actual* onset, so that the
participant sees it for the protocol's duration. Pure functions, tested
without a window.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["dropped_frames", "late_frames", "next_refresh_is_due"]


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


def dropped_frames(flip_times, frame_period: float) -> int:
    """Refreshes missed between consecutive flips: an interval of k periods missed k - 1.

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
