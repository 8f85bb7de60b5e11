"""What a trial records, as a pure function of the key events around it.

The rating "could be submitted and changed during the total of 2 seconds of stimulus or the 1
second of blank screen, but not afterwards" (Sec. 2.3): the recorded rating is the last
rating key pressed inside the response window, the response time that press's time from
onset. The lab session (PsychoPy key-down times) and the browser session (``performance.now()``
times, scored on the server) both score here; the result depends only on the events' times,
not on the order a backend returns them in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "KeyEvent",
    "TrialResponse",
    "control_presses",
    "event_stream",
    "first_press",
    "format_presses",
    "rating_key_map",
    "response_window_end",
    "score_trial",
]


@dataclass(frozen=True, order=True)
class KeyEvent:
    """One key-down: when (seconds, on the session's clock) and which key."""

    t: float
    name: str


@dataclass(frozen=True)
class TrialResponse:
    """A trial's last rating and its ``rt`` (None without a rating press in the window), and every
    rating press in it as ``(rating, seconds from onset)``, in time order.
    """

    rating: int | None
    rt: float | None
    presses: tuple[tuple[int, float], ...]

    @property
    def n_presses(self) -> int:
        return len(self.presses)


def rating_key_map(keys: Sequence[str], *, keypad: bool = True) -> dict[str, int]:
    """Key name -> rating: ``keys[0]`` is rating 1; with ``keypad``, ``num_<d>`` as ``<d>``.

    Examples
    --------
    >>> rating_key_map(["1", "2", "3"])
    {'1': 1, '2': 2, '3': 3, 'num_1': 1, 'num_2': 2, 'num_3': 3}
    """
    mapping = {name: rating for rating, name in enumerate(keys, start=1)}
    if keypad:
        mapping |= {
            f"num_{name}": rating for name, rating in list(mapping.items()) if name.isdigit()
        }
    return mapping


def event_stream(events: Iterable[KeyEvent | tuple[str, float]]) -> tuple[KeyEvent, ...]:
    """The events by time, each (key, time) once, simultaneous ones in their arrival order.

    A backend may report a key-down twice and in any order across polls. A time that is not
    finite raises ``ValueError``.

    >>> event_stream([("3", 0.9), ("2", 0.4), ("3", 0.9)])
    (KeyEvent(t=0.4, name='2'), KeyEvent(t=0.9, name='3'))
    """
    seen: set[tuple[str, float]] = set()
    stream = []
    for event in events:
        if not isinstance(event, KeyEvent):
            event = KeyEvent(t=float(event[1]), name=str(event[0]))
        if not math.isfinite(event.t):
            # A press without a time cannot be placed before or after anything.
            raise ValueError(f"key event {event.name!r} has no finite time ({event.t!r})")
        ident = (event.name, event.t)
        if ident not in seen:
            seen.add(ident)
            stream.append(event)
    stream.sort(key=lambda e: e.t)  # stable: simultaneous events keep their arrival order
    return tuple(stream)


def response_window_end(
    blank_onset: float, next_flip: float, blank_s: float, late_max_s: float = math.inf
) -> float:
    """When a trial's response window closes: at the flip that ended its blank.

    A press made while the blank is visible counts, also when a late flip made the blank longer
    than ``blank_s``. The lab session takes its own flips as they came (``late_max_s``
    infinite); a page's reported flip is bounded to ``late_max_s`` after the blank's nominal
    end, so a page cannot hold the window open.

    A blank from 12.0 s for 1 s, the next pair 0.3 s late: the window closes at 13.3 s;
    reported 5 s late, at 13.5 s with half a second allowed.

    >>> response_window_end(12.0, 13.3, 1.0), response_window_end(12.0, 18.0, 1.0, 0.5)
    (13.3, 13.5)
    """
    return min(next_flip, blank_onset + blank_s + late_max_s)


def score_trial(
    events: Iterable[KeyEvent | tuple[str, float]],
    onset: float,
    window_end: float,
    key_map: Mapping[str, int],
) -> TrialResponse:
    """The trial's final rating, response time and presses.

    Parameters
    ----------
    events
        Key-downs in any order, possibly repeated, on the clock of ``onset``.
    onset, window_end
        The response window ``[onset, window_end)`` (:func:`response_window_end`).
    key_map
        Rating key name -> rating (:func:`rating_key_map`); other keys are ignored.

    Examples
    --------
    3, then a change of mind to 2; a press at the window's end (3.0 s) is too late:

    >>> keys = rating_key_map(["1", "2", "3", "4", "5", "6", "7"])
    >>> r = score_trial([("2", 10.9), ("3", 10.5), ("p", 10.6), ("5", 13.0)], 10.0, 13.0, keys)
    >>> r.rating, round(r.rt, 3), r.presses
    (2, 0.9, ((3, 0.5), (2, 0.9)))
    """
    inside = [e for e in event_stream(events) if e.name in key_map and onset <= e.t < window_end]
    presses = tuple((key_map[e.name], e.t - onset) for e in inside)
    if not presses:
        return TrialResponse(None, None, ())
    rating, rt = presses[-1]
    return TrialResponse(rating, rt, presses)


def format_presses(presses: Sequence[tuple[int, float]]) -> str | None:
    """The ``presses`` column: ``rating@seconds`` in time order, or None for no press.

    >>> format_presses(((3, 0.5), (2, 0.91234)))
    '3@0.5000 2@0.9123'
    """
    return " ".join(f"{rating}@{t:.4f}" for rating, t in presses) or None


def control_presses(
    events: Iterable[KeyEvent | tuple[str, float]],
    start: float,
    end: float,
    keys: Iterable[str],
) -> tuple[KeyEvent, ...]:
    """The presses of control keys (pause, quit) in ``[start, end)``, in time order.

    Asked once a trial's window has closed at ``end``, ``start`` the time up to which control
    keys were handled: a press at any instant of a trial takes effect after it, and only once.
    A pause 2 ms before the window closed counts; one as the next pair appeared does not:

    >>> control_presses([("p", 12.998), ("escape", 13.0), ("3", 12.5)], 10.0, 13.0,
    ...                 {"p", "escape"})
    (KeyEvent(t=12.998, name='p'),)
    """
    names = set(keys)
    return tuple(e for e in event_stream(events) if e.name in names and start <= e.t < end)


def first_press(
    events: Iterable[KeyEvent | tuple[str, float]],
    since: float,
    keys: Iterable[str],
) -> KeyEvent | None:
    """The earliest press of one of ``keys`` at or after ``since``, or None: what answers a
    waiting screen, the first pressed deciding whatever order one poll returned.

    >>> first_press([("y", 5.0042), ("n", 5.0031), ("y", 4.9)], 5.0, {"y", "n"})
    KeyEvent(t=5.0031, name='n')
    >>> first_press([("y", 4.9)], 5.0, {"y", "n"}) is None
    True
    """
    names = set(keys)
    for event in event_stream(events):
        if event.name in names and event.t >= since:
            return event
    return None
