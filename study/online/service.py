"""What the server does, without HTTP: sessions, trials, completion and the study's status.

:class:`OnlineStudy` is one protocol on one checked stimulus set, registered
in the database; its methods are the server's operations. Each takes one
database transaction, so a request either changes everything it should or
nothing. Errors are exceptions carrying the HTTP status the server answers
with and one line naming the field at fault.

What an operation computes lives beside it: a trial's record from the
browser's report in :mod:`.scoring` (the lab session's rule), the
experimenter's view in :mod:`.status`, the SQL statements in :mod:`.queries`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import math
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from sbir_study.foundation.checks import MAX_SOURCE_ID_LENGTH, InputError, participant_label
from sbir_study.foundation.provenance import software_versions

from ..protocol import Protocol, protocol_dict
from ..responses import rating_key_map
from ..screens import instruction_texts
from ..texts import fill
from ..trials import draw_seed
from . import queries, storage
from .assignment import choose_list, list_manifest, split_lists
from .browser_keys import BROWSER_CODES
from .orders import Order, OrderJson, json_text, order_keys, page_trial
from .plausibility import StoredTimes, check_trial_times
from .scoring import (
    LATE_FLIP_MAX_S,
    check_rating_on_scale,
    counted_refresh,
    score_report,
    window_end,
)
from .status import participant_table, study_status

if TYPE_CHECKING:
    import pandas as pd

    from sbir_study.stimuli import StimulusSet

__all__ = [
    "ENDINGS",
    "FINISH_STATUSES",
    "FinishStatus",
    "OnlineStudy",
    "ServiceError",
    "stimulus_pixels",
]

#: How a session ends: every trial stored, the participant quit, or its page came back after
#: ``online.dropout_after_s`` without contact (timed out; see :meth:`OnlineStudy.finish`).
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


class ServiceError(Exception):
    """A request not carried out: ``status`` is the HTTP status (4xx refused, 5xx the
    server's own fault), the message one clear line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def stimulus_pixels(protocol: Protocol) -> tuple[int, int]:
    """Width of each stimulus and of the gap between them, in CSS pixels.

    ``online.stimulus_px`` when set; else the lab geometry of ``[display]``,
    converted as PsychoPy converts degrees (``deg2pix`` without flat-screen
    correction): cm = deg x distance x pi / 180, pixels = cm x resolution / width.

    Examples
    --------
    >>> stimulus_pixels(Protocol())
    (621, 52)
    """
    display = protocol.display
    per_cm = display.resolution[0] / display.width_cm

    def pixels(degrees: float) -> int:
        return round(math.radians(degrees) * display.distance_cm * per_cm)

    width = protocol.online.stimulus_px or pixels(display.stimulus_deg)
    gap = pixels(display.gap_deg)
    if protocol.online.stimulus_px:
        gap = round(gap * protocol.online.stimulus_px / pixels(display.stimulus_deg))
    return width, gap


@dataclass
class OnlineStudy:
    """A protocol on a stimulus set, served from one database (see the module docstring)."""

    protocol: Protocol
    stimulus_set: StimulusSet
    engine: Engine
    protocol_file: str = ""
    study_id: int = 0
    #: The images' largest height / width (the page sizes its area by it).
    max_aspect: float = 1.0
    #: Every image file the set's manifest names -> its SHA-256 (from ``SHA256SUMS``).
    stimulus_files: Mapping[str, str] = field(default_factory=dict)
    #: The manifest of each list's participants: the anchor pairs and the list's pairs.
    lists: tuple[pd.DataFrame, ...] = ()
    #: The number of main pairs of each list.
    list_pairs: tuple[int, ...] = ()
    _sessions: dict = field(default_factory=dict, repr=False)
    #: The trials' ``(phase, *pair)`` keys of every order the process keeps, one of each.
    _keys: dict = field(default_factory=dict, repr=False)
    _images: dict = field(default_factory=dict, repr=False)
    #: The trial write's statements on the driver's cursor (storage.Driver).
    _driver: storage.Driver = field(default_factory=storage.Driver, repr=False)
    #: JSON of each key's part of a stored order row and of a page's trial.
    _json: OrderJson = field(default_factory=OrderJson, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # --- set-up ---
    @classmethod
    def open(
        cls,
        protocol: Protocol,
        stimulus_set: StimulusSet,
        engine: Engine,
        protocol_file: str = "",
        max_aspect: float | None = None,
    ) -> OnlineStudy:
        """Split the lists from the set, migrate the schema and register the study.

        ``max_aspect``, the images' largest height / width, is measured when not given.
        A set the protocol's lists cannot be split from is refused
        (:class:`~sbir_study.foundation.checks.InputError`) here, not at the first
        participant.
        """
        from sbir_study.stimuli.manifest import read_checksums

        from .setcheck import image_names, measured_aspect

        manifest = stimulus_set.manifest
        parts = split_lists(protocol, manifest)
        lists = []
        for index in range(len(parts)):
            pairs = list_manifest(manifest, parts, index).copy()
            # Without the manifest's line numbers (attrs["lines"], for the set's messages):
            # pandas deep-copies attrs at every step of build_trials.
            pairs.attrs = {}
            lists.append(pairs)
        checksums, _ = read_checksums(stimulus_set.folder)
        names = sorted(image_names(stimulus_set))
        study = cls(
            protocol,
            stimulus_set,
            engine,
            str(protocol_file),
            max_aspect=measured_aspect(stimulus_set) if max_aspect is None else float(max_aspect),
            stimulus_files={name: checksums[name] for name in names if name in checksums},
            lists=tuple(lists),
            list_pairs=tuple(len(part) for part in parts),
        )
        storage.migrate(engine)
        study.study_id = study._register()
        study.writer  # noqa: B018 - made once, before requests (threads) can race for it
        study._reads  # noqa: B018 - the same
        return study

    def warm(self) -> None:
        """Make now the JSON of every key of every list, as stored and as the page is sent.
        ``serve`` calls it before it forks its workers, so that every worker, one forked
        again after a crash too, starts with it made."""
        for index in range(len(self.lists)):
            keys = self._order_keys(index, 0)
            self._json.rows(keys)
            self._json.page_trials(keys)

    @cached_property
    def writer(self) -> storage.GroupCommit:
        """The process's trial writer (:class:`~.storage.GroupCommit`)."""
        return storage.GroupCommit(self.engine, refusals=(ServiceError,))

    @cached_property
    def protocol_json(self) -> str:
        return storage.dumps(json.loads(json.dumps(protocol_dict(self.protocol))))

    def stimulus(self, path: str) -> bytes:
        """An image the set's manifest names, checked against its SHA-256 when first read.

        Any other path is refused (404); an image changed on disk since the set
        was checked is never served (500). A checked image is kept: it never changes.
        """
        expected = self.stimulus_files.get(path)
        if expected is None:
            raise ServiceError(404, f"no stimulus {path!r} in the set")
        data = self._images.get(path)
        if data is None:
            data = self.stimulus_set.path(path).read_bytes()
            if hashlib.sha256(data).hexdigest() != expected:
                raise ServiceError(
                    500,
                    f"stimulus {path!r} changed on disk since the set was checked; "
                    "it is not served",
                )
            self._images[path] = data
        return data

    def _order_keys(self, index: int, seed: int) -> tuple[tuple, ...]:
        """The trial keys of a participant of list ``index`` with ``seed``."""
        return order_keys(self.protocol, self.lists[index], seed, self._keys)

    def _register(self) -> int:
        digest = hashlib.sha256(self.protocol_json.encode("utf-8")).hexdigest()
        key = {"protocol_sha256": digest, "stimulus_digest": self.stimulus_set.digest}
        with self.engine.begin() as connection:
            found = connection.execute(queries.STUDY_OF_PROTOCOL_AND_SET, key).scalar()
            if found is not None:
                return int(found)
            try:
                with connection.begin_nested():
                    result = connection.execute(
                        queries.INSERT_STUDY,
                        {
                            "name": self.protocol.name,
                            "task": self.protocol.task,
                            "protocol_json": self.protocol_json,
                            "protocol_sha256": digest,
                            "protocol_file": self.protocol_file,
                            "stimulus_digest": self.stimulus_set.digest,
                            "stimulus_set": str(self.stimulus_set.folder),
                            "created_at": storage.now(),
                        },
                    )
                    return int(result.inserted_primary_key[0])
            except IntegrityError:  # another server process registered it at the same moment
                return int(connection.execute(queries.STUDY_OF_PROTOCOL_AND_SET, key).scalar_one())

    # --- what the browser needs ---
    def browser_config(self) -> dict:
        """The settings the experiment page runs with (public: no participant data)."""
        protocol = self.protocol
        width, gap = stimulus_pixels(protocol)
        aspect = self.max_aspect
        return {
            "study": protocol.name,
            "task": protocol.task,
            "timing": {
                "stimulus_s": protocol.timing.stimulus_s,
                "blank_s": protocol.timing.blank_s,
                "anchor_demo_s": protocol.timing.anchor_demo_s,
                "refresh_range_hz": list(protocol.timing.refresh_range_hz),
                # The page closes a window as the server does (scoring.window_end).
                "late_flip_max_s": LATE_FLIP_MAX_S,
            },
            "response": {
                "keys": list(protocol.response.keys),
                "keypad": protocol.response.keypad,
                "rating_keys": rating_key_map(
                    protocol.response.keys, keypad=protocol.response.keypad
                ),
                "pause_key": protocol.response.pause_key,
                "quit_key": protocol.response.quit_key,
                "key_names": BROWSER_CODES,
            },
            "pauses": {
                "allowed": protocol.pauses.allowed,
                "break_every": protocol.pauses.break_every,
            },
            "display": {
                "stimulus_px": width,
                "gap_px": gap,
                "max_aspect": aspect,
                "background": list(protocol.display.background),
                "minimum_width": 2 * width + gap + 40,
                "minimum_height": math.ceil(width * aspect) + 120,
            },
            "instructions": instruction_texts(protocol),
            # Every other word of the page, placeholders ({code}, ...) filled by the page.
            "texts": dataclasses.asdict(protocol.texts),
            "online": {
                "consent": protocol.online.consent,
                "details": protocol.online.details,
                "has_completion_code": bool(protocol.online.completion_code),
                "has_completion_url": bool(protocol.online.completion_url),
                # No session exists before consent: the page shows this ending by itself.
                "no_consent": self.ending("no_consent"),
            },
        }

    # --- sessions ---
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

    def create_session(self, source_id: str, token: str, **start) -> tuple[dict, bool]:
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
        online = self.protocol.online
        now = storage.now()
        # The trial order is drawn before the write, for the list the counts point to now,
        # so that the write lock is not held while it is drawn; in the write the choice is
        # made again, and only if it differs is it drawn there. The write is queued to the
        # trial writer (GroupCommit), so a crowd's starts share its commits.
        seed = draw_seed()
        with storage.reading(self.engine) as connection:
            guess = choose_list(
                self._participants(connection, now), len(self.lists), online.raters_per_list
            )
        drawn = None if guess is None else self._order_keys(guess, seed)
        drawn_json = None if drawn is None else self._json.rows(drawn)
        token_sha256 = _digest(token)
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
            label = participant_label(source_id, _LabelsOfStudy(connection, self.study_id))
            index = choose_list(
                self._participants(connection, now), len(self.lists), online.raters_per_list
            )
            if index is None:
                raise ServiceError(409, self.protocol.texts.study_full)
            if index == guess:
                keys, rows_json = drawn, drawn_json
            else:
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
            connection.execute(
                queries.INSERT_SESSION,
                {
                    **facts,
                    "study_id": self.study_id,
                    "seed": seed,
                    "status": "running",
                    "last_seen_at": now,
                    "finished_at": None,
                    "details": storage.dumps(dict(details)),
                    "url_parameters": storage.dumps(dict(url_parameters)),
                },
            )
            connection.execute(
                queries.INSERT_SESSION_ORDER, {"session_id": session_id, "trial_order": rows_json}
            )
            return session_id, {**facts, "order": Order(keys)}

        session_id, facts = self.writer.run(write)
        created = facts is not None
        if created:  # committed now: kept as authorise() would read them
            self._keep(session_id, facts)
        return session_id, created

    def _participants(self, connection, now: float) -> dict[int, int]:
        since = now - self.protocol.online.dropout_after_s
        rows = connection.execute(
            queries.PARTICIPANTS_PER_LIST, {"study": self.study_id, "active_since": since}
        )
        return {int(index): int(count) for index, count in rows}

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

    def _authorised(self, session_id: str, session: dict | None, token: str) -> dict:
        if session is None:
            raise ServiceError(404, f"no session {session_id!r} in this study")
        if not hmac.compare_digest(session["token_sha256"], _digest(token)):
            raise ServiceError(403, f"the token does not belong to session {session_id!r}")
        return session

    @cached_property
    def _reads(self) -> storage.BatchedReads:
        """The sessions this process has not seen yet, read back in batches
        (:class:`~.storage.BatchedReads`, :meth:`_read_sessions`)."""
        return storage.BatchedReads(self._read_sessions)

    def _read_sessions(self, session_ids: list[str]) -> dict[str, dict | ServiceError]:
        """The sessions ``session_ids`` of this study, read back in one query and kept.

        After a restart every participant's next request names a session the new process
        has not seen: a thousand within a few seconds. Read one by one, each cost a
        connection's round trips besides its order (1.5 ms on PostgreSQL); read together,
        one query serves all those asked for meanwhile.
        """
        with storage.reading(self.engine) as connection:
            rows = connection.execute(
                queries.SESSION_FACTS, {"sids": session_ids, "study": self.study_id}
            ).mappings()
            found: dict[str, dict | ServiceError] = {}
            for row in rows:
                session = dict(row)
                session_id = session["id"]
                text = session.pop("trial_order")
                del session["seed"]
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

    def session_state(self, session_id: str, token: str) -> dict:
        """What the browser needs to run or resume the session."""
        session, state = self._state(session_id, token)
        state["trials"] = [
            page_trial(t, phase, s, i, a, sp, ip)
            for t, phase, s, i, a, sp, ip in self.order(session)
        ]
        return state

    def session_state_json(self, session_id: str, token: str) -> str:
        """:meth:`session_state` as the JSON the page is sent, its 1,282 trials joined from
        each pair's JSON, made once (a crowd's starts encoded their orders anew each)."""
        session, state = self._state(session_id, token)
        trials = self._json.page_trials(self.order(session).keys)
        return json_text(state)[:-1] + ',"trials":' + trials + "}"

    def _state(self, session_id: str, token: str) -> tuple[dict, dict]:
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
            state["completion"] = self.ending(_ENDING_OF[status])
        return session, state

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

    # --- trials ---
    def _refresh(self, session: Mapping) -> float | None:
        """The refresh rate the session's frames are counted at (None: timed by the clock)."""
        reported = json.loads(session["environment"]).get("refresh_hz")
        return counted_refresh(reported, self.protocol.timing.refresh_range_hz)

    def store_trial(self, session_id: str, token: str | None, trial: int, report: Mapping) -> bool:
        """Store a trial once; True if stored now, False if this very report was stored before.

        A report for a trial that holds other data is refused (409) and
        changes nothing; so is a new trial of a finished session. The report is
        scored by :func:`.scoring.score_report` and its times checked by
        :func:`.plausibility.check_trial_times` (422); a rating off the protocol's
        scale is refused before the session is looked up.
        """
        with _unprocessable():
            check_rating_on_scale(report.get("rating"), self.protocol.scale)
        write, answer = self._trial_write(self.authorise(session_id, token), trial, report)
        return answer(self.writer.run(write))

    async def store_trial_async(
        self, session_id: str, token: str | None, trial: int, report: Mapping
    ) -> bool:
        """:meth:`store_trial` in the server's event loop, which goes on while the trial's
        group commits, and while a session not yet known to this process is read back
        (:meth:`authorise_async`)."""
        with _unprocessable():
            check_rating_on_scale(report.get("rating"), self.protocol.scale)
        session = await self.authorise_async(session_id, token)
        write, answer = self._trial_write(session, trial, report)
        return answer(await self.writer.submit(write))

    def _trial_write(self, session: Mapping, trial: int, report: Mapping):
        """The write that stores ``report`` as trial ``trial`` of ``session`` (a function of
        the group commit's connection), and what turns its outcome into the answer."""
        session_id = session["id"]
        with _unprocessable():
            record = score_report(
                report,
                trial,
                self.order(session),
                self.protocol,
                refresh_hz=self._refresh(session),
            )
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
        self, connection, key: Mapping, session: Mapping, record, report: Mapping
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
        with _unprocessable():
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
    ) -> bool:
        """Keep a trial report refused to a session's own page (the ``refusals`` table).

        The status page and the participant table count them with their reasons: a
        page sets a refused trial aside and never sends it again, so this is where the
        experimenter learns of it. Only the session's own page (its token) is counted
        against it; another caller's refusal is in serve's log alone, and so is one past
        :data:`~.storage.MAX_REFUSALS_PER_SESSION` of a session (a page in a loop).
        Returns whether it was kept.
        """
        try:
            self.authorise(session_id, token)
        except ServiceError:
            return False
        with self.engine.begin() as connection:
            queries.lock_session(connection, session_id)
            kept = connection.execute(queries.SESSION_REFUSAL_COUNT, {"sid": session_id})
            if kept.scalar_one() >= storage.MAX_REFUSALS_PER_SESSION:
                return False
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
        return True

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
        return {"status": current, "stored": stored, "completion": self.ending(_ENDING_OF[current])}

    # --- the experimenter's view ---
    def status(self) -> dict:
        """The experimenter's view of the study (:func:`.status.study_status`)."""
        now = storage.now()
        key = {"study": self.study_id}
        with storage.reading(self.engine) as connection:
            sessions = connection.execute(
                queries.STATUS_SESSIONS,
                {**key, "cutoff": now - self.protocol.online.dropout_after_s},
            ).all()
            durations = connection.execute(queries.STATUS_TRIAL_DURATIONS, key).all()
            trials_stored = connection.execute(queries.STATUS_TRIAL_COUNT, key).scalar_one()
            refused = connection.execute(queries.STATUS_REFUSAL_COUNT, key).scalar_one()
            latest = connection.execute(queries.STATUS_REFUSALS, {**key, "limit": 20}).all()
        return study_status(
            self.protocol,
            self.study_id,
            list_pairs=list(self.list_pairs),
            sessions=sessions,
            durations=durations,
            trials_stored=trials_stored,
            trials_refused=refused,
            latest_refusals=latest,
        )

    def participants(self) -> pd.DataFrame:
        """One row per participant (:func:`.status.participant_table`)."""
        import pandas as pd

        key = {"study": self.study_id}
        with storage.reading(self.engine) as connection:
            sessions = pd.DataFrame(
                connection.execute(queries.PARTICIPANT_SESSIONS, key).mappings().all(),
                columns=[c.name for c in queries.PARTICIPANT_SESSIONS.selected_columns],
            )
            trials = pd.DataFrame(
                connection.execute(queries.PARTICIPANT_TRIALS, key).mappings().all(),
                columns=[c.name for c in queries.PARTICIPANT_TRIALS.selected_columns],
            )
            refusals = pd.DataFrame(
                connection.execute(queries.PARTICIPANT_REFUSALS, key).mappings().all(),
                columns=[c.name for c in queries.PARTICIPANT_REFUSALS.selected_columns],
            )
        return participant_table(
            self.protocol,
            sessions,
            trials,
            refusals=refusals,
            silent_since=storage.now() - self.protocol.online.dropout_after_s,
            code_of=lambda status: (
                self.ending(_ENDING_OF[status])["code"] if status in _ENDING_OF else None
            ),
        )


#: The ending of each finished session status.
_ENDING_OF = {status: ending for ending, status in ENDINGS.items() if status is not None}


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


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def _unprocessable():
    """A report refused by a check (InputError) is refused to its page (422), in the
    check's words."""
    try:
        yield
    except InputError as error:
        raise ServiceError(422, str(error)) from None
