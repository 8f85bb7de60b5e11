"""Storing a trial: scored by the lab's rule, its times checked, written once through the
group commit; and a refused report kept for the experimenter."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Literal

from . import queries, storage
from .plausibility import StoredTimes, check_durations, check_trial_times
from .scoring import check_rating_on_scale, counted_refresh, score_report, window_end
from .service_base import ServiceError, StudyParts, unprocessable

__all__ = ["TrialWrites"]


class TrialWrites(StudyParts):
    """The trial writes of :class:`~.service.OnlineStudy`."""

    def _refresh(self, session: Mapping) -> float | None:
        """The refresh rate the session's frames are counted at (None: timed by the clock)."""
        reported = json.loads(session["environment"]).get("refresh_hz")
        return counted_refresh(reported, self.protocol.timing.refresh_range_hz)

    def store_trial(self, session_id: str, token: str | None, trial: int, report: Mapping) -> bool:
        """Store a trial once; True if stored now, False if this very report was stored before.

        A report for a trial that holds other data is refused (409) and
        changes nothing; so is a new trial of a finished session. The report is
        scored by :func:`.scoring.score_report`, its durations checked by
        :func:`.plausibility.check_durations` and its times by
        :func:`.plausibility.check_trial_times` (422); a rating off the protocol's
        scale is refused before the session is looked up.
        """
        with unprocessable():
            check_rating_on_scale(report.get("rating"), self.protocol.scale)
        write, answer = self._trial_write(self.authorise(session_id, token), trial, report)
        return answer(self.writer.run(write))

    async def store_trial_async(
        self, session_id: str, token: str | None, trial: int, report: Mapping
    ) -> bool:
        """:meth:`store_trial` in the server's event loop, which goes on while the trial's
        group commits, and while a session not yet known to this process is read back
        (:meth:`authorise_async`)."""
        with unprocessable():
            check_rating_on_scale(report.get("rating"), self.protocol.scale)
        session = await self.authorise_async(session_id, token)
        write, answer = self._trial_write(session, trial, report)
        return answer(await self.writer.submit(write))

    def _trial_write(self, session: Mapping, trial: int, report: Mapping):
        """The write that stores ``report`` as trial ``trial`` of ``session`` (a function of
        the group commit's connection), and what turns its outcome into the answer."""
        session_id = session["id"]
        refresh = self._refresh(session)
        with unprocessable():
            record = score_report(
                report, trial, self.order(session), self.protocol, refresh_hz=refresh
            )
            check_durations(record, self.protocol.timing, refresh)
        payload = storage.dumps(dict(report))
        digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        now = storage.now()
        values = {
            **record.__dict__,
            "session_id": session_id,
            "page_onset": report["onset"],
            "page_window_end": window_end(report, self.protocol.timing.blank_s),
            "events": storage.dumps(list(report["events"])),
            "screen_events": storage.dumps(list(report.get("screen_events", ()))),
            "payload_sha256": digest,
            "received_at": now,
        }
        key = {"sid": session_id, "trial": trial}

        def write(connection):
            # Refuses only before writing (GroupCommit's rule): the rest of the group commits.
            self._check_times(connection, key, session, record, report)
            driver = self._driver
            [(status,)] = driver.all(connection, queries.SESSION_STATUS, {"sid": session_id})
            if status == "running":
                insert = queries.insert_trial_once(connection)
                if driver.count(connection, insert, values):
                    driver.count(connection, queries.SEEN, {"sid": session_id, "now": now})
                    return None
            existing = connection.execute(queries.TRIAL_PAYLOAD, key).first()
            if existing is None:
                raise ServiceError(
                    409, f"session {session_id!r} is {status}; it takes no more trials"
                )
            return existing[0]

        def answer(existing) -> bool:
            # Answered only after the commit that holds it (one commit for all queued trials).
            if existing is None:
                return True
            if existing != digest:
                raise ServiceError(
                    409,
                    f"trial {trial} of session {session_id!r} is already stored "
                    "with other data; nothing was changed",
                )
            return False

        return write, answer

    def _check_times(
        self, connection, key: dict, session: Mapping, record, report: Mapping
    ) -> None:
        """Refuse (422) a trial whose times cannot be true (:mod:`.plausibility`): past the
        session's age on the server's clock, or overlapping the stored trials around it.

        Read in the write's own transaction (``connection``, the group commit's), so the
        trials around it are the ones its insert will sit beside, with no connection or
        transaction of its own to pay for per trial.
        """
        rows = self._driver.all(connection, queries.NEIGHBOUR_TRIALS, key)
        around = [StoredTimes(*row) for row in rows]
        trial = key["trial"]
        with unprocessable():
            check_trial_times(
                record,
                report,
                window_end=window_end(report, self.protocol.timing.blank_s),
                session_age_s=storage.now() - session["created_at"],
                previous=next((t for t in around if t.trial < trial), None),
                following=next((t for t in around if t.trial > trial), None),
            )

    def record_refusal(
        self, session_id: str, token: str | None, trial: int | None, status: int, reason: str
    ) -> Literal["kept", "full", "not its own"]:
        """Keep a trial report refused to a session's own page (the ``refusals`` table).

        The status page and the participant table count them with their reasons: a
        page sets a refused trial aside and never sends it again, so this is where the
        experimenter learns of it. Only the session's own page (its token) is counted
        against it; another caller's refusal is in serve's log alone, and so is one past
        :data:`~.storage.MAX_REFUSALS_PER_SESSION` of a session (a page in a loop).
        Returns ``kept``, ``full`` (the session has as many as it may keep) or ``not its
        own``.
        """
        try:
            self.authorise(session_id, token)
        except ServiceError:
            return "not its own"
        with self.engine.begin() as connection:
            queries.lock_session(connection, session_id)
            kept = connection.execute(queries.SESSION_REFUSAL_COUNT, {"sid": session_id})
            if kept.scalar_one() >= storage.MAX_REFUSALS_PER_SESSION:
                return "full"
            connection.execute(
                queries.INSERT_REFUSAL,
                {
                    "session_id": session_id,
                    "trial": trial,
                    "status": status,
                    "reason": reason[: storage.MAX_REASON_LENGTH],
                    "refused_at": storage.now(),
                },
            )
        return "kept"
