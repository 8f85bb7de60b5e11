"""The session's timeline: when each screen is due, and how late a flip was.

Onsets are planned on one timeline, ``onset(i + 1) = onset(i) + shown(i) + blank_s +
paused_before(i + 1)``, never from the previous flip: a late flip shortens the blank after
it and does not move the rest. A stimulus comes down ``shown(i)`` after its actual onset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Timeline", "dropped_frames", "late_frames", "next_refresh_is_due", "refreshes_late"]


@dataclass
class Timeline:
    """The planned onset of the next pair, and the time paused before it.

    A pair on screen moves ``planned`` on by its duration and one blank, however late its
    flip (:meth:`begin_pair`); a waiting screen moves it to one blank after the key that ended
    it, the added time counted in ``paused`` (:meth:`resume`).

    >>> timeline = Timeline(planned=1.0)
    >>> timeline.begin_pair(shown_s=2.0, blank_s=1.0)
    (1.0, 0.0)
    >>> timeline.planned
    4.0

    A pause answered at 10.5 s: the next pair comes at 11.5 s, 7.5 s after it was due.

    >>> timeline.resume(10.5, blank_s=1.0)
    >>> timeline.begin_pair(shown_s=2.0, blank_s=1.0)
    (11.5, 7.5)
    >>> timeline.planned
    14.5
    """

    planned: float
    paused: float = 0.0

    def begin_pair(self, shown_s: float, blank_s: float) -> tuple[float, float]:
        """The due pair is on screen: its planned onset and the time paused before it."""
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
    """With vertical sync: is the next refresh (about ``last_flip + frame_s``) the one nearest
    ``deadline``, no more than half a frame before it?

    >>> frame = 1 / 60
    >>> next_refresh_is_due(0.0, frame, 2.0), next_refresh_is_due(2.0 - frame, frame, 2.0)
    (False, True)

    Refreshes 0.4 frame before and 0.6 after: the one before; 0.6 before and 0.4 after: after.

    >>> next_refresh_is_due(2.0 - 1.4 * frame, frame, 2.0)
    True
    >>> next_refresh_is_due(2.0 - 1.6 * frame, frame, 2.0)
    False
    """
    return last_flip + frame_s >= deadline - frame_s / 2


def late_frames(flip_time: float, deadline: float, frame_s: float) -> int:
    """Whole frame periods a clock-timed flip came after its deadline (counted as dropped frames).

    >>> late_frames(2.0049, 2.0, 1 / 60), late_frames(2.0170, 2.0, 1 / 60)
    (0, 1)
    >>> late_frames(1.99, 2.0, 1 / 60)
    0
    """
    late = (flip_time - deadline) / frame_s
    return math.floor(late) if late >= 1.0 else 0


def refreshes_late(flip_time: float, deadline: float, frame_s: float) -> int:
    """With vertical sync: refreshes a flip came after the one nearest ``deadline`` (the earlier of
    two equally near, as :func:`next_refresh_is_due` chooses).

    >>> frame = 1 / 60
    >>> refreshes_late(2.0 + 0.4 * frame, 2.0, frame), refreshes_late(2.0 - 0.5 * frame, 2.0, frame)
    (0, 0)
    >>> refreshes_late(2.0 + 0.6 * frame, 2.0, frame), refreshes_late(2.0 + 2.2 * frame, 2.0, frame)
    (1, 2)
    """
    return max(math.floor((flip_time - deadline) / frame_s + 0.5), 0)


def dropped_frames(flip_times: Sequence[float], frame_period: float) -> int:
    """Refreshes missed between consecutive flips: an interval of k periods misses k - 1.

    No wait (a pause, loading) may lie between the flips. Unlike PsychoPy's
    ``Window.nDroppedFrames`` (one per late interval, only while recording intervals), this
    counts each missed refresh, which is what lengthens a stimulus.

    >>> dropped_frames([0.0, 1 / 60, 2 / 60, 4 / 60, 5 / 60], 1 / 60)
    1
    """
    intervals = np.diff(np.asarray(flip_times, dtype=np.float64))
    return int(np.maximum(np.rint(intervals / frame_period) - 1.0, 0.0).sum())
