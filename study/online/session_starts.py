"""A participant's session start: the id checked, a label, a list and a seed, the trial
order stored with the session."""

from __future__ import annotations

import functools
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from sbir_study.foundation.checks import MAX_SOURCE_ID_LENGTH, InputError, participant_label
from sbir_study.foundation.provenance import software_versions

from ..texts import fill
from ..trials import draw_seed
from . import queries, storage
from .assignment import choose_list
from .orders import Order, order_keys
from .service_base import ServiceError, StudyParts, token_digest

__all__ = ["ONLINE_PACKAGES", "SessionStarts", "web_versions"]

#: The libraries of the server that shape a stored trial (recorded with every session).
ONLINE_PACKAGES = (
    "sbir-study",
    "numpy",
    "pandas",
    "fastapi",
    "starlette",
    "pydantic",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "psycopg",
)


def web_versions() -> dict[str, str]:
    """The versions of jsPsych and its plugins the page runs, from the installed packages."""
    folder = Path(__file__).parent / "web" / "node_modules"
    versions = {}
    for package in sorted([folder / "jspsych", *folder.glob("@jspsych/*")]):
        try:
            meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        versions[meta.get("name", package.name)] = str(meta.get("version", "unknown"))
    return versions


class SessionStarts(StudyParts):
    """The session starts of :class:`~.service.OnlineStudy`."""

    def check_participant_id(self, source_id: str) -> None:
        """Refuse (422), in words a participant understands, an id no label can be made of.

        The page asks on its first screen, before consent, so that an id the
        platform sent wrongly is found before anything else is asked.
        """
        try:
            participant_label(source_id)
        except InputError:
            raise ServiceError(422, self._bad_id()) from None

    def _bad_id(self) -> str:
        """The refusal of an id no label can be made of, in the protocol's words."""
        return fill(self.protocol.texts.bad_participant_id, max_length=MAX_SOURCE_ID_LENGTH)

    def create_session(self, source_id: str, token: str, **start: Mapping) -> tuple[dict, bool]:
        """Start a participant's session (:meth:`start_session`, the same keywords); its state
        as a dict."""
        session_id, created = self.start_session(source_id, token, **start)
        return self.session_state(session_id, token), created

    def start_session(
        self,
        source_id: str,
        token: str,
        *,
        details: Mapping,
        environment: Mapping,
        url_parameters: Mapping,
    ) -> tuple[str, bool]:
        """Start a participant's session: a label, a list, a seed, the trial order.

        ``source_id`` is the participant's id as the page was given it (a
        platform's id, or one the page drew); its label is
        :func:`~sbir_study.foundation.checks.participant_label`'s, made once under
        the lock of the list choice against the labels the study has given, and
        both are stored. The browser draws the session's ``token`` (and the id,
        when the address gives none) before asking, and keeps them, so the
        request is idempotent: asked again with the same id and token (an answer
        lost on the way), it returns the same session. An id that has a session
        under another token is refused (409): no one else can write under it.
        Returns the session's id and whether it was created now.
        """
        self.check_participant_id(source_id)
        self._check_platform(source_id, url_parameters)
        online = self.protocol.online
        now = storage.now()
        # The trial order is drawn before the write, for the list the counts point to now,
        # so that the write lock is not held while it is drawn; in the write the choice is
        # made again, and only if it differs is it drawn there. The write is queued to the
        # trial writer (GroupCommit), so a crowd's starts share its commits.
        seed = draw_seed()
        with storage.reading(self.engine) as connection:
            guess = self._list_choice(connection, now)
        drawn = None if guess is None else self._order_keys(guess, seed)
        drawn_json = None if drawn is None else self._json.rows(drawn)
        token_sha256 = token_digest(token)
        environment_json = storage.dumps({**environment, "software": _software()})

        def write(connection) -> tuple[str, dict | None]:
            # Refuses (409) only before writing (GroupCommit's rule).
            queries.lock_list_choice(connection)
            taken = connection.execute(
                queries.SESSION_OF_SOURCE, {"study": self.study_id, "source_id": source_id}
            ).first()
            if taken is not None:
                if hmac.compare_digest(taken.token_sha256, token_sha256):
                    return taken.id, None
                raise ServiceError(409, self.protocol.texts.already_started)
            if online.max_sessions and self._started(connection) >= online.max_sessions:
                raise ServiceError(409, self.protocol.texts.study_full)
            label = participant_label(source_id, _LabelsOfStudy(connection, self.study_id))
            index = self._list_choice(connection, now)
            if index is None:
                raise ServiceError(409, self.protocol.texts.study_full)
            keys, rows_json = drawn, drawn_json
            if index != guess or keys is None or rows_json is None:
                keys = self._order_keys(index, seed)
                rows_json = self._json.rows(keys)
            session_id = secrets.token_hex(16)
            facts = {
                "id": session_id,
                "participant": label,
                "source_id": source_id,
                "token_sha256": token_sha256,
                "n_trials": len(keys),
                "environment": environment_json,
                "list_index": index,
                "created_at": now,
            }
            written = {"seed": seed, "details": details, "url_parameters": url_parameters}
            self._insert_session(connection, facts, written, rows_json)
            return session_id, {**facts, "order": Order(keys)}

        session_id, facts = self.writer.run(write)
        created = facts is not None
        if created:  # committed now: kept as authorise() would read them
            self._keep(session_id, facts)
        return session_id, created

    def _insert_session(self, connection, facts: Mapping, written: Mapping, rows_json: str) -> None:
        """Insert a new session (``facts``, kept by the process, and ``written``, its seed,
        details and address parameters) and its stored order."""
        connection.execute(
            queries.INSERT_SESSION,
            {
                **facts,
                "study_id": self.study_id,
                "seed": written["seed"],
                "status": "running",
                "last_seen_at": facts["created_at"],
                "finished_at": None,
                "details": storage.dumps(dict(written["details"])),
                "url_parameters": storage.dumps(dict(written["url_parameters"])),
            },
        )
        connection.execute(
            queries.INSERT_SESSION_ORDER, {"session_id": facts["id"], "trial_order": rows_json}
        )

    def _check_platform(self, source_id: str, url_parameters: Mapping) -> None:
        """Refuse (422) a start whose address is not the configured platform's for this study:
        a Prolific id is 24 hex digits, and its STUDY_ID the protocol's."""
        online = self.protocol.online
        if online.platform != "prolific":
            return
        pid, study = url_parameters.get("PROLIFIC_PID"), url_parameters.get("STUDY_ID")
        if pid != source_id or _PROLIFIC_ID.fullmatch(source_id) is None:
            raise ServiceError(422, self.protocol.texts.not_this_study)
        if study is None or not hmac.compare_digest(study, online.platform_study_id):
            raise ServiceError(422, self.protocol.texts.not_this_study)

    def _started(self, connection) -> int:
        """The sessions the study has started."""
        return connection.execute(
            queries.STUDY_SESSION_COUNT, {"study": self.study_id}
        ).scalar_one()

    def _list_choice(self, connection, now: float) -> int | None:
        """The list for a participant starting ``now`` (:func:`.assignment.choose_list`)."""
        online = self.protocol.online
        since = now - online.dropout_after_s
        rows = connection.execute(
            queries.PARTICIPANTS_PER_LIST, {"study": self.study_id, "active_since": since}
        ).all()
        participants = {int(index): int(count) for index, count, _ in rows}
        holding = {int(index): int(held or 0) for index, _, held in rows}
        return choose_list(participants, len(self.lists), online.raters_per_list, holding)

    def _order_keys(self, index: int, seed: int) -> tuple[tuple, ...]:
        """The trial keys of a participant of list ``index`` with ``seed``."""
        return order_keys(self.protocol, self.lists[index], seed, self._keys)


#: A Prolific participant id: 24 hex digits (a MongoDB ObjectId).
_PROLIFIC_ID = re.compile(r"[0-9a-fA-F]{24}")


class _LabelsOfStudy:
    """The labels a study has given, asked one at a time (``label in labels``)."""

    def __init__(self, connection, study_id: int) -> None:
        self.connection, self.study_id = connection, study_id

    def __contains__(self, label: object) -> bool:
        found = self.connection.execute(
            queries.SESSION_OF_PARTICIPANT, {"study": self.study_id, "participant": label}
        )
        return found.first() is not None


@functools.cache
def _software() -> dict[str, str]:
    """The server's and the page's software versions (fixed while the process runs)."""
    return {**software_versions(ONLINE_PACKAGES), **web_versions()}
