"""A browser's report of one trial -> the trial's record, by the lab session's rule.

The page sends every key-down with its ``performance.now()`` time and the
trial's frame times; the record is computed here with
:func:`sbir_study.study.responses.score_trial` (the last rating key before the
window closes) and :func:`sbir_study.study.schedule.dropped_frames`, the
functions the lab session uses, so a browser's own rating is checked, never
trusted. The window closes as in the lab, when the next screen was actually shown
(the page's ``next_onset``), at most :data:`LATE_FLIP_MAX_S` after the blank's
nominal end (:func:`window_end`). Pure: no database, no HTTP. A report that cannot
be a trial of its session raises :class:`~sbir_study.foundation.checks.InputError`
naming the field.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale

from ..protocol import Protocol
from ..responses import format_presses, rating_key_map, response_window_end, score_trial
from ..schedule import dropped_frames
from .browser_keys import browser_key_name

__all__ = [
    "LATE_FLIP_MAX_S",
    "TrialRecord",
    "check_rating_on_scale",
    "counted_refresh",
    "resumed_from",
    "score_report",
    "window_end",
]

#: How long after the blank's nominal end (``blank_onset + blank_s``) a page's next screen
#: may come and still close the window (s). A stalled page (a busy laptop) shows its blank
#: longer, and a press made while it is visible counts, as in the lab; beyond this the
#: window is closed here whatever the page reports, so that no page holds it open.
LATE_FLIP_MAX_S = 0.5


@dataclass(frozen=True)
class TrialRecord:
    """One trial as computed from the browser's report: the columns of the lab session."""

    trial: int
    phase: str
    sketch_id: str
    image_id: str
    rating: int | None
    rt: float | None
    anchor_rating: int | None
    onset: float
    stim_duration: float
    blank_duration: float
    dropped_frames: int | None
    n_presses: int
    presses: str | None
    paused_before: float


def check_rating_on_scale(rating: int | None, scale: Scale) -> None:
    """Refuse a browser's rating off the protocol's ``scale`` (None: no key).

    Examples
    --------
    >>> check_rating_on_scale(None, Scale(1, 7))
    >>> check_rating_on_scale(9, Scale(1, 7))
    Traceback (most recent call last):
    ...
    sbir_study.foundation.checks.InputError: rating: expected 1..7 or null, got 9
    """
    if rating is not None and rating not in scale.points:
        raise InputError(f"rating: expected {scale.low}..{scale.high} or null, got {rating}")


def counted_refresh(reported: object, refresh_range_hz: tuple[float, float]) -> float | None:
    """The refresh rate a page's frames are counted at: the one it measured, when it is a
    number inside the protocol's ``refresh_range_hz``; else None (a page timed by the clock).

    Examples
    --------
    >>> counted_refresh(60, (50.0, 250.0)), counted_refresh(1000.0, (50.0, 250.0))
    (60.0, None)
    """
    low, high = refresh_range_hz
    if isinstance(reported, int | float) and low <= reported <= high:
        return float(reported)
    return None


def resumed_from(stored: Iterable[tuple[int, float, float]]) -> list[int]:
    """The trials a session went on from after a reload: from its stored trials'
    ``(trial, page_onset, onset)`` in order, those a new page showed first.

    A page's times are on its own ``performance.now()`` clock, which a reload starts
    again; a stored ``onset`` is on the session's clock (``page_onset - session_start``).
    Their difference, where the session began on the page's clock, is the same for
    every trial one page showed, and changes where another page took over. This is
    what the lab's sidecar records as ``Resumed`` (``FromTrial``) on ``run --resume``.

    Examples
    --------
    Trials 1 and 2 on the first page (session start 5.0 on its clock), a reload, trials
    3 and 4 on the next page (session start -57.5: 57.5 s had passed when it began):

    >>> resumed_from([(1, 6.0, 1.0), (2, 9.0, 4.0), (3, 2.5, 60.0), (4, 5.5, 63.0)])
    [3]
    """
    resumed, start = [], None
    for trial, page_onset, onset in stored:
        began = page_onset - onset
        if start is not None and abs(began - start) > _SAME_PAGE_S:
            resumed.append(int(trial))
        start = began
    return resumed


# Within one page, page_onset - onset is its session start up to float rounding (~1e-12 s).
_SAME_PAGE_S = 1e-6


def window_end(report: Mapping, blank_s: float) -> float:
    """When the reported trial's response window closed: the page's next screen
    (``next_onset``), no later than :data:`LATE_FLIP_MAX_S` after the nominal end.

    Examples
    --------
    >>> window_end({"blank_onset": 12.0, "next_onset": 13.3}, 1.0)
    13.3
    >>> window_end({"blank_onset": 12.0, "next_onset": 60.0}, 1.0)
    13.5
    """
    return response_window_end(
        report["blank_onset"], report["next_onset"], blank_s, LATE_FLIP_MAX_S
    )


def score_report(
    report: Mapping,
    trial: int,
    order: Sequence[Sequence],
    protocol: Protocol,
    *,
    refresh_hz: float | None = None,
) -> TrialRecord:
    """The record of trial ``trial`` of a session from the browser's report of it.

    Parameters
    ----------
    report
        ``sketch_id``, ``image_id``, ``onset``, ``blank_onset``, ``next_onset``,
        ``session_start``, ``frames``, ``events`` (``code``, ``key``, ``t``),
        ``paused_before`` and the browser's own ``rating``; times in seconds on
        the page's clock.
    trial
        The trial's number in the session, from 1.
    order
        The session's trial order: rows of ``trial, phase, sketch_id, image_id,
        anchor_rating, sketch_path, image_path``.
    protocol
        The study's protocol (its timing and response keys).
    refresh_hz
        The rate frames are counted at (:func:`counted_refresh`); None records no
        dropped-frame count.

    Raises
    ------
    InputError
        When the trial is not one of the session's, shows another pair, has its
        times or frames out of order, or claims a rating its key events do not give.

    Examples
    --------
    A pair shown at 10.0 s for 2 s, then black for 1 s; the participant pressed 3,
    then 2, in the window (a press at 13.0 s, when the next pair came and the window
    closed, is too late):

    >>> order = [[1, "main", "s1", "i1", None, "s1.png", "i1.png"]]
    >>> keys = [{"code": f"Digit{k}", "key": k, "t": t} for k, t in (("3", 10.4), ("2", 11.1))]
    >>> report = {"sketch_id": "s1", "image_id": "i1", "onset": 10.0, "blank_onset": 12.0,
    ...     "next_onset": 13.0, "session_start": 4.0, "frames": [], "paused_before": 0.0,
    ...     "events": [*keys, {"code": "Digit5", "key": "5", "t": 13.0}], "rating": 2}
    >>> record = score_report(report, 1, order, Protocol())
    >>> record.rating, round(record.rt, 3), record.presses, record.onset
    (2, 1.1, '3@0.4000 2@1.1000', 6.0)
    """
    if not 1 <= trial <= len(order):
        raise InputError(f"trial: expected 1..{len(order)} for this session, got {trial}")
    number, phase, sketch_id, image_id, anchor_rating, _, _ = order[trial - 1]
    if (report["sketch_id"], report["image_id"]) != (sketch_id, image_id):
        raise InputError(
            f"trial {trial} of this session shows ({sketch_id}, {image_id}), not "
            f"({report['sketch_id']}, {report['image_id']})"
        )
    onset, blank_onset = report["onset"], report["blank_onset"]
    next_onset, start = report["next_onset"], report["session_start"]
    if not start <= onset <= blank_onset <= next_onset:
        raise InputError(
            "times: expected session_start <= onset <= blank_onset <= "
            f"next_onset, got {start}, {onset}, {blank_onset}, {next_onset}"
        )
    frames = report["frames"]
    if frames and (
        frames[0] != onset
        or frames[-1] != next_onset
        or blank_onset not in frames
        or any(b < a for a, b in itertools.pairwise(frames))
    ):
        raise InputError(
            "frames: expected the frame times in order, from onset "
            "through blank_onset to next_onset"
        )
    closed = window_end(report, protocol.timing.blank_s)
    key_map = rating_key_map(protocol.response.keys, keypad=protocol.response.keypad)
    named = [(browser_key_name(e["code"], e["key"]), e["t"]) for e in report["events"]]
    response = score_trial([(n, t) for n, t in named if n is not None], onset, closed, key_map)
    rated = phase != "anchor_demo"
    rating = response.rating if rated else None
    if report.get("rating") != rating:
        raise InputError(
            f"rating: the browser scored {report.get('rating')}, the key events give "
            f"{rating} (the last rating key before {closed:.4f} s)"
        )
    dropped = None
    if refresh_hz is not None and len(frames) >= 2:
        dropped = dropped_frames(frames, 1.0 / refresh_hz)
    return TrialRecord(
        trial=number,
        phase=phase,
        sketch_id=sketch_id,
        image_id=image_id,
        rating=rating,
        rt=response.rt if rated else None,
        anchor_rating=anchor_rating,
        onset=onset - start,
        stim_duration=blank_onset - onset,
        blank_duration=next_onset - blank_onset,
        dropped_frames=dropped,
        n_presses=response.n_presses,
        presses=format_presses(response.presses),
        paused_before=report["paused_before"],
    )
