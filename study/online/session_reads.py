"""A session as a request finds it: its token checked, its fixed facts read back once per
process (in batches after a restart), its state for the page."""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from functools import cached_property

from . import queries, storage
from .endings import ENDING_OF
from .orders import Order, json_text, page_trial
from .service_base import ServiceError, StudyParts, token_digest

__all__ = ["SessionReads"]


class SessionReads(StudyParts):
    """The session reads of :class:`~.service.OnlineStudy`."""

    def authorise(self, session_id: str, token: str | None) -> dict:
        """The session's fixed facts if ``token`` is its token; else 401/403/404.

        A session's token, trial order and environment never change once it
        is created, so they are read once per process and kept; the sessions asked for
        while one is read are read together (:meth:`_read_sessions`).
        """
        session = self._kept_session(session_id, token)
        if session is None:
            session = self._reads.get(session_id).result()
        return self._authorised(session_id, session, token)

    async def authorise_async(self, session_id: str, token: str | None) -> dict:
        """:meth:`authorise` in the server's event loop, which goes on while a session not
        yet known to this process is read back."""
        session = self._kept_session(session_id, token)
        if session is None:
            session = await self._reads.wait(session_id)
        return self._authorised(session_id, session, token)

    def _kept_session(self, session_id: str, token: str | None) -> dict | None:
        """The session as this process keeps it (None: not read yet); 401 without a token,
        before anything is read."""
        if not token:
            raise ServiceError(401, "missing the session token (Authorization: Bearer TOKEN)")
        return self._sessions.get(session_id)

    def _authorised(self, session_id: str, session: dict | None, token: str | None) -> dict:
        if session is None:
            raise ServiceError(404, f"no session {session_id!r} in this study")
        if not hmac.compare_digest(session["token_sha256"], token_digest(token or "")):
            raise ServiceError(403, f"the token does not belong to session {session_id!r}")
        return session

    @cached_property
    def _reads(self) -> storage.BatchedReads:
        """The sessions this process has not seen yet, read back in batches
        (:class:`~.storage.BatchedReads`, :meth:`_read_sessions`)."""
        return storage.BatchedReads(self._read_sessions)

    def _read_sessions(self, session_ids: list[str]) -> dict[str, dict | ServiceError]:
        """The sessions ``session_ids`` of this study, read back in one query and kept: after
        a restart every participant's next request names a session the new process has not
        seen, and one query serves all those asked for meanwhile."""
        with storage.reading(self.engine) as connection:
            rows = connection.execute(
                queries.SESSION_FACTS, {"sids": session_ids, "study": self.study_id}
            ).mappings()
            found: dict[str, dict | ServiceError] = {}
            for row in rows:
                session = dict(row)
                session_id = session["id"]
                text = session.pop("trial_order")
                try:
                    session["order"] = self._stored_order(session_id, text)
                except ServiceError as error:
                    found[session_id] = error
                else:
                    found[session_id] = session
                    self._keep(session_id, session)
        return found

    def _stored_order(self, session_id: str, text: str) -> Order:
        """The order stored as ``text`` for session ``session_id``."""
        try:
            return Order.of_rows(json.loads(text), self._keys)
        except ValueError as error:  # written by hand: never served wrongly numbered
            raise ServiceError(500, f"session {session_id!r}: {error}") from None

    def _keep(self, session_id: str, session: dict) -> None:
        with self._lock:
            if len(self._sessions) > 50_000:
                self._sessions.clear()
            self._sessions[session_id] = session

    def order(self, session: Mapping) -> Order:
        """The session's trial order (rows of ``trial, phase, sketch_id, image_id,
        anchor_rating, sketch_path, image_path``)."""
        return session["order"]

    def session_state(self, session_id: str, token: str | None) -> dict:
        """What the browser needs to run or resume the session."""
        session, state = self._state(session_id, token)
        state["trials"] = [
            page_trial(t, phase, s, i, a, sp, ip)
            for t, phase, s, i, a, sp, ip in self.order(session)
        ]
        return state

    def session_state_json(self, session_id: str, token: str | None) -> str:
        """:meth:`session_state` as the JSON the page is sent, its 1,282 trials joined from
        each pair's JSON, made once (a crowd's starts encoded their orders anew each)."""
        session, state = self._state(session_id, token)
        trials = self._json.page_trials(self.order(session).keys)
        return json_text(state)[:-1] + ',"trials":' + trials + "}"

    def _state(self, session_id: str, token: str | None) -> tuple[dict, dict]:
        session = self.authorise(session_id, token)
        with storage.reading(self.engine) as connection:
            stored = connection.execute(queries.STORED_TRIALS, {"sid": session_id}).all()
            status, seen = connection.execute(
                queries.SESSION_STATUS_SEEN, {"sid": session_id}
            ).one()
        last = stored[-1] if stored else None
        state = {
            "session_id": session_id,
            "participant": session["participant"],
            "source_id": session["source_id"],
            "status": status,
            "list": session["list_index"] + 1,  # numbered from 1, as the status and export
            "stored": len(stored),
            "next_trial": (last.trial + 1) if last else 1,
            "resumed_at": (last.onset + last.stim_duration + last.blank_duration) if last else 0.0,
            # Came back after dropout_after_s without contact: the page sends the trials it
            # still holds, then finishes the session as timed_out (its list place is gone).
            "timed_out": status == "running"
            and seen < storage.now() - self.protocol.online.dropout_after_s,
        }
        if status != "running":
            state["completion"] = self.ending(ENDING_OF[status])
        return session, state
