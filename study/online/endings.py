"""How a session ends: the finish a page asks for, and the code and address of each ending."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from . import queries, storage
from .service_base import ServiceError, StudyParts

__all__ = ["ENDINGS", "ENDING_OF", "FINISH_STATUSES", "Endings", "FinishStatus"]

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
                final = None if final_events is None else storage.dumps(dict(final_events))
                connection.execute(
                    queries.FINISH_SESSION,
                    {**key, "new_status": status, "now": storage.now(), "final": final},
                )
                current = status
        return {"status": current, "stored": stored, "completion": self.ending(ENDING_OF[current])}
