"""Whether a trial's times can be true: within its session's life and after the trial before.

The page times a trial on its own clock (``performance.now()``, seconds) and says
where its session's clock starts on it (``session_start``: the instructions' key, or
where a resumed session stopped); a record's times are on the session's clock,
``time - session_start`` (:func:`.scoring.score_report`). The server cannot read the
page's clock, but it knows how long the session has existed on its own: the
session's clock starts after the server created the session, so no time of a trial
can lie further into the session than the server's ``now - created_at``, allowed
:data:`CLOCK_ALLOWANCE_S` for the clocks of several servers (and the page's) running
apart. And a session's trials follow each other: a trial begins no earlier than the
trial before it ended (its ``onset + stim_duration + blank_duration``, the next pair's
flip) and ends no later than the trial after it began, whichever of them was stored
first. A key event belongs to its trial: the page sends those from the pair's onset
until :data:`KEY_GRACE_S` after the response window (or the next flip, when later).

A screen lasts as long as the protocol plans it, give or take a frame: the page flips
the blank 1.5 frames before the stimulus's planned end and the next pair 1.5 frames
before the blank's, so a stimulus or blank shorter than planned by more than
:func:`duration_tolerance_s` (the larger of :data:`SHORTFALL_FRAMES` frames and
:data:`SHORTFALL_SHARE` of the planned duration) was never on a participant's screen
(:func:`check_durations`). The same rule over a session's trials gives the shortest time
a person can take over them (:func:`shortest_timeline_s`): a session ends ``complete``
only after that long on the server's clock (:meth:`.endings.Endings.finish`).

Pure: the service (:meth:`.service.OnlineStudy.store_trial`) reads the neighbours and
the session's age, and answers 422 with the message of :class:`InputError`, which
names the field at fault. A retry of a stored trial passes as it passed the first
time: it is compared with the trials around it, never with itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from sbir_study.foundation.checks import InputError

from ..protocol import Timing
from .scoring import TrialRecord

__all__ = [
    "CLOCK_ALLOWANCE_S",
    "KEY_GRACE_S",
    "ORDER_TOLERANCE_S",
    "SHORTFALL_FRAMES",
    "SHORTFALL_SHARE",
    "StoredTimes",
    "check_durations",
    "check_trial_times",
    "duration_tolerance_s",
    "planned_durations",
    "planned_timeline_s",
    "shortest_timeline_s",
]

#: Seconds a trial's time may lie past the session's age on the server's clock: several
#: servers' clocks (and the page's) run apart by this much at most.
CLOCK_ALLOWANCE_S = 60.0
#: Seconds a key event may come after its trial's window (or next flip): the page collects
#: the events of a trial until 50 ms after its window closed.
KEY_GRACE_S = 0.1
#: Seconds two trials may overlap: only the rounding of the times' differences (a resumed
#: page's clock is placed by subtraction), far below a frame.
ORDER_TOLERANCE_S = 1e-6
#: Frames a stimulus or blank may fall short of its planned duration: the page flips 1.5
#: frames early (the flip then lands on the refresh nearest the planned end).
SHORTFALL_FRAMES = 2
#: The share of its planned duration a stimulus or blank may fall short by, when that is
#: more than :data:`SHORTFALL_FRAMES` frames.
SHORTFALL_SHARE = 0.10


class StoredTimes(NamedTuple):
    """A stored trial's place on the session's clock."""

    trial: int
    onset: float
    stim_duration: float
    blank_duration: float

    @property
    def end(self) -> float:
        """When the next pair was flipped (the trial's end)."""
        return self.onset + self.stim_duration + self.blank_duration


# Over 80 lines for its docstring's parameters and examples; the code is one check per
# field, in the order a report's times run.
def check_trial_times(
    record: TrialRecord,
    report: Mapping,
    *,
    window_end: float,
    session_age_s: float,
    previous: StoredTimes | None = None,
    following: StoredTimes | None = None,
) -> None:
    """Refuse a trial whose times cannot be true (:class:`InputError` naming the field).

    Parameters
    ----------
    record
        The trial as scored from ``report`` (its times on the session's clock).
    report
        The page's report (``onset``, ``blank_onset``, ``next_onset``, ``events``,
        ``screen_events``, ``paused_before``; times on the page's clock). The keys of
        ``screen_events`` were pressed before the pair: none after its onset.
    window_end
        When the trial's response window closed, on the page's clock.
    session_age_s
        How long the server has known the session (its ``now - created_at``).
    previous, following
        The stored trials just before and after this one in the session, if any.

    Examples
    --------
    >>> from sbir_study.study.online.scoring import TrialRecord
    >>> record = TrialRecord(trial=2, phase="main", sketch_id="s", image_id="i", rating=None,
    ...     rt=None, anchor_rating=None, onset=3.0, stim_duration=2.0, blank_duration=1.0,
    ...     dropped_frames=None, n_presses=0, presses=None, paused_before=0.0)
    >>> report = {"onset": 13.0, "blank_onset": 15.0, "next_onset": 16.0, "events": [],
    ...     "paused_before": 0.0}
    >>> check_trial_times(record, report, window_end=16.0, session_age_s=7.0,
    ...     previous=StoredTimes(1, 0.0, 2.0, 1.0))
    >>> check_trial_times(record, report, window_end=16.0, session_age_s=7.0,
    ...     previous=StoredTimes(1, 0.5, 2.0, 1.0))
    Traceback (most recent call last):
    ...
    sbir_study.foundation.checks.InputError: onset: expected no earlier than the end of trial 1 (3.5000 s into the session), got 3.0000 s

    The same trial 30 days into a session the server created 7 s ago:

    >>> import dataclasses
    >>> late = dataclasses.replace(record, onset=30 * 86400.0)
    >>> check_trial_times(late, report, window_end=16.0, session_age_s=7.0)
    Traceback (most recent call last):
    ...
    sbir_study.foundation.checks.InputError: onset: expected at most 67.0000 s into the session (the server has known it for 7.0000 s, allowed 60 s), got 2592000.0000 s
    """  # noqa: E501
    start = report["onset"] - record.onset  # the session's start on the page's clock
    latest = session_age_s + CLOCK_ALLOWANCE_S
    for name in ("onset", "blank_onset", "next_onset"):
        into = report[name] - start
        if into > latest:
            raise InputError(
                f"{name}: expected at most {latest:.4f} s into the session (the server has "
                f"known it for {session_age_s:.4f} s, allowed {CLOCK_ALLOWANCE_S:g} s), "
                f"got {into:.4f} s"
            )
    if record.paused_before > latest:
        raise InputError(
            f"paused_before: expected at most {latest:.4f} s (the session's age on the "
            f"server, allowed {CLOCK_ALLOWANCE_S:g} s), got {record.paused_before:.4f} s"
        )
    first, last = report["onset"], max(report["next_onset"], window_end) + KEY_GRACE_S
    for index, event in enumerate(report["events"]):
        if not first <= event["t"] <= last:
            raise InputError(
                f"events[{index}].t: expected within the trial, {first:.4f} to {last:.4f} s "
                f"on the page's clock, got {event['t']:.4f} s"
            )
    for index, event in enumerate(report.get("screen_events", ())):
        if event["t"] > first:
            raise InputError(
                f"screen_events[{index}].t: expected before the pair's onset, at most "
                f"{first:.4f} s on the page's clock, got {event['t']:.4f} s"
            )
    end = record.onset + record.stim_duration + record.blank_duration
    if previous is not None and record.onset < previous.end - ORDER_TOLERANCE_S:
        raise InputError(
            f"onset: expected no earlier than the end of trial {previous.trial} "
            f"({previous.end:.4f} s into the session), got {record.onset:.4f} s"
        )
    if following is not None and end > following.onset + ORDER_TOLERANCE_S:
        raise InputError(
            f"next_onset: expected no later than the onset of trial {following.trial} "
            f"({following.onset:.4f} s into the session), got {end:.4f} s"
        )


def planned_durations(phase: str, timing: Timing) -> tuple[float, float]:
    """The planned stimulus and blank durations of a trial of ``phase`` (s).

    Examples
    --------
    >>> planned_durations("main", Timing()), planned_durations("anchor_demo", Timing())
    ((2.0, 1.0), (3.0, 1.0))
    """
    shown = timing.anchor_demo_s if phase == "anchor_demo" else timing.stimulus_s
    return shown, timing.blank_s


def duration_tolerance_s(planned_s: float, timing: Timing, refresh_hz: float | None) -> float:
    """How far a screen planned for ``planned_s`` may fall short: the larger of
    :data:`SHORTFALL_FRAMES` frames and :data:`SHORTFALL_SHARE` of ``planned_s``.

    Frames are the session's (``refresh_hz``, where its frames are counted); a page timed
    by the clock is allowed frames of the slowest refresh the protocol counts frames at
    (``timing.refresh_range_hz[0]``), the longest frame of any display it accepts.

    Examples
    --------
    >>> duration_tolerance_s(2.0, Timing(), 60.0)  # 10 % of 2 s
    0.2
    >>> round(duration_tolerance_s(0.1, Timing(), 60.0), 4)  # two frames at 60 Hz
    0.0333
    >>> duration_tolerance_s(0.1, Timing(), None)  # two frames at 50 Hz
    0.04
    """
    frame_s = 1.0 / (refresh_hz or timing.refresh_range_hz[0])
    return max(SHORTFALL_FRAMES * frame_s, SHORTFALL_SHARE * planned_s)


def check_durations(record: TrialRecord, timing: Timing, refresh_hz: float | None) -> None:
    """Refuse a trial whose stimulus or blank was shorter than planned beyond
    :func:`duration_tolerance_s` (:class:`InputError` naming ``stim_duration`` or
    ``blank_duration``): no screen of a real page is.

    ``refresh_hz`` is the rate the session's frames are counted at (None: timed by the
    clock). A screen longer than planned passes: a busy page flips late.

    Examples
    --------
    >>> from sbir_study.study.online.scoring import TrialRecord
    >>> record = TrialRecord(trial=1, phase="main", sketch_id="s", image_id="i", rating=None,
    ...     rt=None, anchor_rating=None, onset=1.0, stim_duration=1.99, blank_duration=0.01,
    ...     dropped_frames=None, n_presses=0, presses=None, paused_before=0.0)
    >>> check_durations(record, Timing(), 60.0)
    Traceback (most recent call last):
    ...
    sbir_study.foundation.checks.InputError: blank_duration: expected at least 0.9000 s (planned 1 s, less the larger of 2 frames and 10%), got 0.0100 s
    """  # noqa: E501
    shown, blank = planned_durations(record.phase, timing)
    for name, measured, planned in (
        ("stim_duration", record.stim_duration, shown),
        ("blank_duration", record.blank_duration, blank),
    ):
        shortest = planned - duration_tolerance_s(planned, timing, refresh_hz)
        if measured < shortest:
            raise InputError(
                f"{name}: expected at least {shortest:.4f} s (planned {planned:g} s, less the "
                f"larger of {SHORTFALL_FRAMES} frames and {SHORTFALL_SHARE:.0%}), "
                f"got {measured:.4f} s"
            )


def planned_timeline_s(phases: Iterable[str], timing: Timing) -> float:
    """The planned time of trials of ``phases``: each one's stimulus and blank (s).

    Examples
    --------
    >>> planned_timeline_s(["anchor_demo", "main", "main"], Timing())
    10.0
    """
    return sum(sum(planned_durations(phase, timing)) for phase in phases)


def shortest_timeline_s(phases: Iterable[str], timing: Timing) -> float:
    """The shortest time trials of ``phases`` can take on a real page: each screen its
    planned duration less :func:`duration_tolerance_s` (frames of the slowest refresh the
    protocol accepts, the most lenient of the sessions' frames).

    Examples
    --------
    >>> round(shortest_timeline_s(["anchor_demo", "main", "main"], Timing()), 4)
    9.0
    """
    total = 0.0
    for phase in phases:
        for planned in planned_durations(phase, timing):
            total += planned - duration_tolerance_s(planned, timing, None)
    return total
