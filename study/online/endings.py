"""How a session ends: the finish a page asks for, and the code and address of each ending.

The server decides the ending from what it records, never from the page's word alone:
``complete`` needs every trial stored and the session's time on the server's clock to
cover its trials' shortest possible time (:func:`.plausibility.shortest_timeline_s`);
``timed_out`` needs a silence the server recorded (no trial stored) longer than
``[online] dropout_after_s`` (:func:`longest_silence_s`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Literal, get_args

from . import queries, storage
from .plausibility import shortest_timeline_s
from .service_base import ServiceError, StudyParts

__all__ = [
    "ENDINGS",
    "ENDING_OF",
    "FINISH_STATUSES",
    "Endings",
    "FinishStatus",
    "longest_silence_s",
]

#: How a session ends: every trial stored, the participant quit, or its page came back after
#: ``online.dropout_after_s`` without contact (timed out; see :meth:`Endings.finish`).
FinishStatus = Literal["complete", "incomplete", "timed_out"]
FINISH_STATUSES: tuple[str, ...] = get_args(FinishStatus)
#: The endings a participant meets, each with a code and an address of the protocol's
#: ``[online]`` (``completion_code`` and ``completion_url`` for ``complete``,
#: ``<ending>_code`` and ``<ending>_url`` for the others), and the session status of each
#: (None: no session is stored before consent).
ENDINGS: dict[str, str | None] = {
    "complete": "complete",
    "no_consent": None,
    "quit": "incomplete",
    "timed_out": "timed_out",
}
#: The ending of each finished session status.
ENDING_OF = {status: ending for ending, status in ENDINGS.items() if status is not None}


def longest_silence_s(created_at: float, received: Iterable[float], now: float) -> float:
    """The longest time the server heard nothing of a session: between its start
    (``created_at``), its trials' arrivals (``received``, in any order) and ``now``.

    Examples
    --------
    >>> longest_silence_s(0.0, [5.0, 3.0, 70.0], 71.0)
    65.0
    """
    times = sorted([created_at, *received, now])
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


class Endings(StudyParts):
    """The endings of :class:`~.service.OnlineStudy`."""

    def ending(self, name: str) -> dict:
        """The code and address the protocol sets for an ending (:data:`ENDINGS`).

        ``{"code": ..., "url": ...}``, each None where the protocol sets none:
        ``complete`` is ``[online] completion_code`` and ``completion_url``, the
        others (``no_consent``, ``quit``, ``timed_out``) ``<ending>_code`` and
        ``<ending>_url``.
        """
        if name not in ENDINGS:
            raise ValueError(f"ending: expected one of {', '.join(ENDINGS)}, got {name!r}")
        prefix = "completion" if name == "complete" else name
        online = self.protocol.online
        return {
            "code": getattr(online, f"{prefix}_code") or None,
            "url": getattr(online, f"{prefix}_url") or None,
        }

    def finish(
        self,
        session_id: str,
        token: str | None,
        status: str,
        *,
        final_events: Mapping | None = None,
    ) -> dict:
        """End a session: ``complete`` (every trial stored), ``incomplete`` (quit) or
        ``timed_out``.

        A session times out when its page comes back (a reload, the link opened
        again) after ``[online] dropout_after_s`` without contact: the server's
        state says so (``timed_out``), and the page sends the trials it still
        holds, then finishes as ``timed_out``. (While silent, the session counts
        as dropped out and its list place went to the next participant.) The
        answer carries the ending's code and address (:meth:`ending`).

        The server checks what the page asks for against its own clock (409, and
        no code): ``complete`` only once the session has existed (``now -
        created_at``) for its trials' shortest possible time; ``timed_out`` only
        after a silence longer than ``dropout_after_s`` (:meth:`_check_ending`).

        ``final_events`` (``{"session_start": ..., "events": [...]}``) are the keys of
        the page's last screens, for the key log; kept with the finish that ends the
        session, not changed by a repeated one.
        """
        if status not in FINISH_STATUSES:
            raise ServiceError(
                422, f"status: expected {' or '.join(FINISH_STATUSES)}, got {status!r}"
            )
        session = self.authorise(session_id, token)
        key = {"sid": session_id}
        with self.engine.begin() as connection:
            stored = connection.execute(queries.SESSION_TRIAL_COUNT, key).scalar_one()
            current = connection.execute(queries.SESSION_STATUS, key).scalar_one()
            if current == "complete" or current == status:
                pass
            elif current != "running":
                raise ServiceError(409, f"session {session_id!r} is already {current}")
            elif status == "complete" and stored != session["n_trials"]:
                raise ServiceError(
                    409,
                    f"session {session_id!r} has {stored} of "
                    f"{session['n_trials']} trials stored; send the others first",
                )
            else:
                self._check_ending(connection, session, status)
                final = None if final_events is None else storage.dumps(dict(final_events))
                connection.execute(
                    queries.FINISH_SESSION,
                    {**key, "new_status": status, "now": storage.now(), "final": final},
                )
                current = status
        return {"status": current, "stored": stored, "completion": self.ending(ENDING_OF[current])}

    def _check_ending(self, connection, session: Mapping, status: str) -> None:
        """Refuse (409) an ending the server's own records do not bear out.

        ``complete``: the session's age on the server's clock, ``now - created_at``,
        is at least its trials' shortest possible time. Measured from the start, not
        from the first trial stored: every trial of a real page is shown after its
        session was created (the start comes before the instructions), so the age is
        never shorter than the trials took, whereas a page that sent its trials late
        (the server out of reach a while, then everything at once) would look faster
        from its first trial stored than it was. A script must then wait as long as a
        person sits, which is the point: the code costs the session's time.
        ``timed_out``: the server recorded a silence longer than ``dropout_after_s``.
        """
        now = storage.now()
        session_id = session["id"]
        if status == "complete":
            age = now - session["created_at"]
            shortest = shortest_timeline_s(
                (row[1] for row in self.order(session)), self.protocol.timing
            )
            if age < shortest:
                raise ServiceError(
                    409,
                    f"session {session_id!r} has run {age:.1f} s on the server's clock; "
                    f"its {session['n_trials']} trials take at least {shortest:.1f} s, so "
                    "it cannot be complete",
                )
        elif status == "timed_out":
            received = connection.execute(queries.SESSION_ARRIVALS, {"sid": session_id})
            silence = longest_silence_s(session["created_at"], received.scalars(), now)
            dropout = self.protocol.online.dropout_after_s
            if silence <= dropout:
                raise ServiceError(
                    409,
                    f"session {session_id!r} has not timed out: the server never went "
                    f"online.dropout_after_s ({dropout:g} s) without hearing from it (the "
                    f"longest silence: {silence:.1f} s)",
                )
