"""What the server does, without HTTP: sessions, trials, completion and the study's status.

:class:`OnlineStudy` is one protocol on one checked stimulus set, registered
in the database; its methods are the server's operations. Each takes one
database transaction, so a request either changes everything it should or
nothing. Errors are exceptions carrying the HTTP status the server answers
with and one line naming the field at fault.

The trial record follows the lab session's rule by construction: the browser
sends every key-down with its ``performance.now()`` time and the trial's
frame times, and the record is computed here with
:func:`sbir_study.study.responses.score_trial` (the last rating key before the window
closes) and :func:`sbir_study.study.schedule.dropped_frames`, the functions the lab
session uses.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import json
import math
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.provenance import software_versions

from ..protocol import Protocol, protocol_dict
from ..responses import format_presses, rating_key_map, score_trial
from ..trials import build_trials, draw_seed
from . import storage
from .assignment import choose_list, list_manifest, split_lists
from .keys import BROWSER_CODES, browser_key_name
from .storage import sessions, studies, trials

__all__ = ["OnlineStudy", "ServiceError", "TrialRecord", "stimulus_pixels"]

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
    """A refused request: ``status`` is the HTTP status, the message one clear line."""

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


@dataclass
class OnlineStudy:
    """A protocol on a stimulus set, served from one database (see the module docstring)."""

    protocol: Protocol
    stimulus_set: object  # sbir_study.stimuli.StimulusSet
    engine: Engine
    protocol_file: str = ""
    study_id: int = 0
    _sessions: dict = field(default_factory=dict, repr=False)
    _manifests: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # --- set-up ---
    @classmethod
    def open(cls, protocol: Protocol, stimulus_set, engine: Engine, protocol_file: str = ""):
        """Check the lists against the set, migrate the schema and register the study."""
        study = cls(protocol, stimulus_set, engine, str(protocol_file))
        study.lists  # noqa: B018 - an impossible split is refused now, not at the first participant
        storage.migrate(engine)
        study.study_id = study._register()
        return study

    @cached_property
    def lists(self) -> list[pd.DataFrame]:
        return split_lists(self.protocol, self.stimulus_set.manifest)

    @cached_property
    def protocol_json(self) -> str:
        return storage.dumps(json.loads(json.dumps(protocol_dict(self.protocol))))

    @cached_property
    def stimulus_files(self) -> dict[str, str]:
        """Every image file the set's manifest names -> its SHA-256 (from ``SHA256SUMS``)."""
        from sbir_study.stimuli.manifest import read_checksums

        checksums, _ = read_checksums(self.stimulus_set.folder)
        manifest = self.stimulus_set.manifest
        names = set(manifest["sketch_path"]) | set(manifest["image_path"])
        return {name: checksums[name] for name in names if name in checksums}

    def _list_manifest(self, index: int) -> pd.DataFrame:
        """The manifest a participant of list ``index`` sees (kept: it never changes)."""
        kept = self._manifests.get(index)
        if kept is None:
            kept = list_manifest(self.stimulus_set.manifest, self.lists, index)
            self._manifests[index] = kept
        return kept

    def _register(self) -> int:
        digest = hashlib.sha256(self.protocol_json.encode("utf-8")).hexdigest()
        key = (studies.c.protocol_sha256 == digest) & (
            studies.c.stimulus_digest == self.stimulus_set.digest
        )
        with self.engine.begin() as connection:
            found = connection.execute(sa.select(studies.c.id).where(key)).scalar()
            if found is not None:
                return int(found)
            try:
                with connection.begin_nested():
                    result = connection.execute(
                        studies.insert().values(
                            name=self.protocol.name,
                            task=self.protocol.task,
                            protocol_json=self.protocol_json,
                            protocol_sha256=digest,
                            protocol_file=self.protocol_file,
                            stimulus_digest=self.stimulus_set.digest,
                            stimulus_set=str(self.stimulus_set.folder),
                            created_at=storage.now(),
                        )
                    )
                    return int(result.inserted_primary_key[0])
            except IntegrityError:  # another server process registered it at the same moment
                return int(connection.execute(sa.select(studies.c.id).where(key)).scalar_one())

    # --- what the browser needs ---
    def browser_config(self) -> dict:
        """The settings the experiment page runs with (public: no participant data)."""
        protocol = self.protocol
        width, gap = stimulus_pixels(protocol)
        manifest = self.stimulus_set.manifest
        aspect = self._max_aspect(manifest)
        return {
            "study": protocol.name,
            "task": protocol.task,
            "timing": {
                "stimulus_s": protocol.timing.stimulus_s,
                "blank_s": protocol.timing.blank_s,
                "anchor_demo_s": protocol.timing.anchor_demo_s,
                "refresh_range_hz": list(protocol.timing.refresh_range_hz),
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
            "instructions": {
                "anchoring": protocol.instructions.anchoring,
                "main": protocol.instructions.main,
                "pause": protocol.instructions.pause,
                "end": protocol.instructions.end,
            },
            "online": {
                "consent": protocol.online.consent,
                "details": protocol.online.details,
                "has_completion_code": bool(protocol.online.completion_code),
                "has_completion_url": bool(protocol.online.completion_url),
            },
        }

    def _max_aspect(self, manifest: pd.DataFrame) -> float:
        from PIL import Image

        aspects = []
        for name in sorted(self.stimulus_files):
            with Image.open(self.stimulus_set.path(name)) as image:
                aspects.append(image.height / image.width)
        return round(max(aspects), 4) if aspects else 1.0

    # --- sessions ---
    def create_session(
        self,
        participant: str,
        token: str,
        *,
        details: Mapping,
        environment: Mapping,
        url_parameters: Mapping,
    ) -> tuple[dict, bool]:
        """Start a participant's session: a list, a seed, the trial order.

        The browser draws the session's ``token`` (and the label, when the
        address gives none) before asking, and keeps them, so the request is
        idempotent: asked again with the same label and token (an answer lost
        on the way), it returns the same session. A label that has a session
        under another token is refused (409): no one else can write under it.
        Returns the session's state and whether it was created now.
        """
        try:
            bids.check_label(participant)
        except InputError as error:
            raise ServiceError(422, str(error)) from None
        online = self.protocol.online
        now = storage.now()
        with self.engine.begin() as connection:
            self._lock_lists(connection)
            taken = connection.execute(
                sa.select(sessions.c.id, sessions.c.token_sha256).where(
                    (sessions.c.study_id == self.study_id) & (sessions.c.participant == participant)
                )
            ).first()
            if taken is not None:
                if hmac.compare_digest(taken.token_sha256, _digest(token)):
                    session_id = taken.id
                    created = False
                else:
                    raise ServiceError(
                        409,
                        f"participant {participant!r} has already started this study; the "
                        "session continues only in the browser that started it (ask the "
                        "experimenter)",
                    )
            else:
                index = choose_list(
                    self._raters(connection, now), len(self.lists), online.raters_per_list
                )
                if index is None:
                    raise ServiceError(409, "the study is full: every list has its raters")
                seed = draw_seed()
                order = build_trials(self.protocol, self._list_manifest(index), seed)
                session_id = secrets.token_hex(16)
                software = _software()
                connection.execute(
                    sessions.insert().values(
                        id=session_id,
                        study_id=self.study_id,
                        participant=participant,
                        token_sha256=_digest(token),
                        list_index=index,
                        seed=seed,
                        n_trials=len(order),
                        trial_order=storage.dumps(_order_rows(order)),
                        status="running",
                        created_at=now,
                        last_seen_at=now,
                        finished_at=None,
                        details=storage.dumps(dict(details)),
                        environment=storage.dumps({**environment, "software": software}),
                        url_parameters=storage.dumps(dict(url_parameters)),
                    )
                )
                created = True
        return self.session_state(session_id, token), created

    def _lock_lists(self, connection) -> None:
        """Serialise list choices (SQLite: the IMMEDIATE transaction already does)."""
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({storage.LIST_LOCK})")

    def _raters(self, connection, now: float) -> dict[int, int]:
        active = (sessions.c.status == "complete") | (
            (sessions.c.status == "running")
            & (sessions.c.last_seen_at >= now - self.protocol.online.dropout_after_s)
        )
        rows = connection.execute(
            sa.select(sessions.c.list_index, sa.func.count())
            .where((sessions.c.study_id == self.study_id) & active)
            .group_by(sessions.c.list_index)
        )
        return {int(index): int(count) for index, count in rows}

    def authorise(self, session_id: str, token: str | None) -> dict:
        """The session's fixed facts if ``token`` is its token; else 401/403/404.

        A session's token, trial order and environment never change once it
        is created, so they are read once per process and kept.
        """
        if not token:
            raise ServiceError(401, "missing the session token (Authorization: Bearer TOKEN)")
        session = self._sessions.get(session_id)
        if session is None:
            with storage.reading(self.engine) as connection:
                found = connection.execute(_SESSION, {"sid": session_id, "study": self.study_id})
                row = found.mappings().first()
            if row is None:
                raise ServiceError(404, f"no session {session_id!r} in this study")
            session = dict(row)
            session["order"] = json.loads(session.pop("trial_order"))
            with self._lock:
                if len(self._sessions) > 50_000:
                    self._sessions.clear()
                self._sessions[session_id] = session
        if not hmac.compare_digest(session["token_sha256"], _digest(token)):
            raise ServiceError(403, f"the token does not belong to session {session_id!r}")
        return session

    def order(self, session: Mapping) -> list[list]:
        """The session's trial order."""
        return session["order"]

    def session_state(self, session_id: str, token: str) -> dict:
        """What the browser needs to run or resume the session."""
        session = self.authorise(session_id, token)
        with storage.reading(self.engine) as connection:
            stored = connection.execute(
                sa.select(
                    trials.c.trial, trials.c.onset, trials.c.stim_duration, trials.c.blank_duration
                )
                .where(trials.c.session_id == session_id)
                .order_by(trials.c.trial)
            ).all()
            status = connection.execute(_STATUS, {"sid": session_id}).scalar_one()
        last = stored[-1] if stored else None
        state = {
            "session_id": session_id,
            "participant": session["participant"],
            "status": status,
            "list": session["list_index"],
            "trials": [
                {
                    "trial": t,
                    "phase": phase,
                    "sketch_id": s,
                    "image_id": i,
                    "anchor_rating": a,
                    "sketch_url": _url(sp),
                    "image_url": _url(ip),
                }
                for t, phase, s, i, a, sp, ip in self.order(session)
            ],
            "stored": len(stored),
            "next_trial": (last.trial + 1) if last else 1,
            "resumed_at": (last.onset + last.stim_duration + last.blank_duration) if last else 0.0,
        }
        if status == "complete":
            state["completion"] = self.completion()
        return state

    def completion(self) -> dict:
        online = self.protocol.online
        return {"code": online.completion_code or None, "url": online.completion_url or None}

    # --- trials ---
    def record(self, session: Mapping, trial: int, report: Mapping) -> TrialRecord:
        """The trial's record from the browser's report (validated; see the module docstring).

        ``report`` holds ``sketch_id``, ``image_id``, ``onset``,
        ``blank_onset``, ``next_onset``, ``session_start``, ``frames``,
        ``events`` (``code``, ``key``, ``t``), ``paused_before`` and the
        browser's own ``rating``; times in seconds on the page's clock.
        """
        order = self.order(session)
        if not 1 <= trial <= len(order):
            raise ServiceError(
                422, f"trial: expected 1..{len(order)} for this session, got {trial}"
            )
        number, phase, sketch_id, image_id, anchor_rating, _, _ = order[trial - 1]
        if (report["sketch_id"], report["image_id"]) != (sketch_id, image_id):
            raise ServiceError(
                422,
                f"trial {trial} of this session shows ({sketch_id}, {image_id}), not "
                f"({report['sketch_id']}, {report['image_id']})",
            )
        timing = self.protocol.timing
        onset, blank_onset = report["onset"], report["blank_onset"]
        next_onset, start = report["next_onset"], report["session_start"]
        if not start <= onset <= blank_onset <= next_onset:
            raise ServiceError(
                422,
                "times: expected session_start <= onset <= blank_onset <= "
                f"next_onset, got {start}, {onset}, {blank_onset}, {next_onset}",
            )
        frames = report["frames"]
        if frames and (
            frames[0] != onset
            or frames[-1] != next_onset
            or blank_onset not in frames
            or any(b < a for a, b in itertools.pairwise(frames))
        ):
            raise ServiceError(
                422,
                "frames: expected the frame times in order, from onset "
                "through blank_onset to next_onset",
            )
        window_end = blank_onset + timing.blank_s
        key_map = rating_key_map(self.protocol.response.keys, keypad=self.protocol.response.keypad)
        named = [(browser_key_name(e["code"], e["key"]), e["t"]) for e in report["events"]]
        response = score_trial(
            [(n, t) for n, t in named if n is not None], onset, window_end, key_map
        )
        rated = phase != "anchor_demo"
        rating = response.rating if rated else None
        if report.get("rating") != rating:
            raise ServiceError(
                422,
                f"rating: the browser scored {report.get('rating')}, the key events give "
                f"{rating} (the last rating key before {window_end:.4f} s)",
            )
        refresh = self._refresh(session)
        dropped = None
        if refresh is not None and len(frames) >= 2:
            from ..schedule import dropped_frames

            dropped = dropped_frames(frames, 1.0 / refresh)
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

    def _refresh(self, session: Mapping) -> float | None:
        """The refresh rate frames are counted at; None when it is implausible (clock mode)."""
        rate = json.loads(session["environment"]).get("refresh_hz")
        low, high = self.protocol.timing.refresh_range_hz
        if isinstance(rate, int | float) and low <= rate <= high:
            return float(rate)
        return None

    def store_trial(self, session_id: str, token: str | None, trial: int, report: Mapping) -> bool:
        """Store a trial once; True if stored now, False if this very report was stored before.

        A report for a trial that holds other data is refused (409) and
        changes nothing; so is a new trial of a finished session.
        """
        session = self.authorise(session_id, token)
        record = self.record(session, trial, report)
        payload = storage.dumps(dict(report))
        digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        now = storage.now()
        values = {
            **record.__dict__,
            "session_id": session_id,
            "page_onset": report["onset"],
            "page_window_end": report["blank_onset"] + self.protocol.timing.blank_s,
            "events": storage.dumps(list(report["events"])),
            "payload_sha256": digest,
            "received_at": now,
        }
        key = {"sid": session_id, "trial": trial}
        with self.engine.begin() as connection:
            status = connection.execute(_STATUS, {"sid": session_id}).scalar_one()
            if status == "running":
                inserted = connection.execute(_insert_ignore(connection), values).rowcount
                if inserted:
                    connection.execute(_SEEN, {"sid": session_id, "now": now})
                    return True
            existing = connection.execute(_PAYLOAD, key).first()
            if existing is None:
                raise ServiceError(
                    409, f"session {session_id!r} is {status}; it takes no more trials"
                )
        if existing[0] != digest:
            raise ServiceError(
                409,
                f"trial {trial} of session {session_id!r} is already stored "
                "with other data; nothing was changed",
            )
        return False

    def finish(self, session_id: str, token: str | None, status: str) -> dict:
        """End a session: ``complete`` (every trial stored) or ``incomplete`` (quit)."""
        if status not in ("complete", "incomplete"):
            raise ServiceError(422, f"status: expected complete or incomplete, got {status!r}")
        session = self.authorise(session_id, token)
        with self.engine.begin() as connection:
            stored = connection.execute(
                sa.select(sa.func.count()).where(trials.c.session_id == session_id)
            ).scalar_one()
            current = connection.execute(
                sa.select(sessions.c.status).where(sessions.c.id == session_id)
            ).scalar_one()
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
                now = storage.now()
                connection.execute(
                    sessions.update()
                    .where(sessions.c.id == session_id)
                    .values(status=status, finished_at=now, last_seen_at=now)
                )
                current = status
        result = {"status": current, "stored": stored}
        if current == "complete":
            result["completion"] = self.completion()
        return result

    # --- the experimenter's view ---
    def status(self) -> dict:
        """Participants started, complete, quit, dropped out and running; trials; timing errors."""
        now = storage.now()
        cutoff = now - self.protocol.online.dropout_after_s
        with storage.reading(self.engine) as connection:
            rows = connection.execute(
                sa.select(
                    sessions.c.status,
                    sessions.c.list_index,
                    (sessions.c.last_seen_at < cutoff).label("silent"),
                    sa.func.count(),
                )
                .where(sessions.c.study_id == self.study_id)
                .group_by(sessions.c.status, sessions.c.list_index, "silent")
            ).all()
            stored = connection.execute(
                sa.select(trials.c.phase, trials.c.stim_duration, trials.c.blank_duration)
                .join(sessions, sessions.c.id == trials.c.session_id)
                .where(sessions.c.study_id == self.study_id)
                .order_by(trials.c.received_at.desc())
                .limit(100_000)
            ).all()
            n_trials = connection.execute(
                sa.select(sa.func.count())
                .select_from(trials)
                .join(sessions, sessions.c.id == trials.c.session_id)
                .where(sessions.c.study_id == self.study_id)
            ).scalar_one()
        counts = {"started": 0, "complete": 0, "incomplete": 0, "dropped_out": 0, "running": 0}
        per_list = {k: {"complete": 0, "running": 0} for k in range(len(self.lists))}
        for status, index, silent, count in rows:
            counts["started"] += count
            if status == "running":
                key = "dropped_out" if silent else "running"
                counts[key] += count
                if not silent:
                    per_list.setdefault(index, {"complete": 0, "running": 0})["running"] += count
            else:
                counts[status] += count
                if status == "complete":
                    per_list.setdefault(index, {"complete": 0, "running": 0})["complete"] += count
        timing = self.protocol.timing
        errors = _timing_errors(stored, timing)
        return {
            "study": self.protocol.name,
            "study_id": self.study_id,
            "participants": counts,
            "trials_stored": int(n_trials),
            "lists": [
                {"list": k, **v, "pairs": len(self.lists[k])}
                for k, v in sorted(per_list.items())
                if k < len(self.lists)
            ],
            "timing_error_ms": errors,
        }


def _timing_errors(rows: Sequence, timing) -> dict:
    """Median and max |measured - planned| of the stimulus and blank durations (ms)."""
    if not rows:
        return {
            "n_trials": 0,
            "stimulus_median": None,
            "stimulus_max": None,
            "blank_median": None,
            "blank_max": None,
            "median": None,
        }
    phases = np.array([r[0] for r in rows])
    planned = np.where(phases == "anchor_demo", timing.anchor_demo_s, timing.stimulus_s)
    stim = np.abs(np.array([r[1] for r in rows], dtype=float) - planned) * 1000.0
    blank = np.abs(np.array([r[2] for r in rows], dtype=float) - timing.blank_s) * 1000.0
    both = np.concatenate([stim, blank])
    return {
        "n_trials": len(rows),
        "stimulus_median": round(float(np.median(stim)), 3),
        "stimulus_max": round(float(stim.max()), 3),
        "blank_median": round(float(np.median(blank)), 3),
        "blank_max": round(float(blank.max()), 3),
        "median": round(float(np.median(both)), 3),
    }


_SESSION = sa.select(
    sessions.c.id,
    sessions.c.participant,
    sessions.c.token_sha256,
    sessions.c.n_trials,
    sessions.c.trial_order,
    sessions.c.environment,
    sessions.c.list_index,
).where((sessions.c.id == sa.bindparam("sid")) & (sessions.c.study_id == sa.bindparam("study")))
_STATUS = sa.select(sessions.c.status).where(sessions.c.id == sa.bindparam("sid"))
_SEEN = (
    sessions.update()
    .where(sessions.c.id == sa.bindparam("sid"))
    .values(last_seen_at=sa.bindparam("now"))
)
_PAYLOAD = sa.select(trials.c.payload_sha256).where(
    (trials.c.session_id == sa.bindparam("sid")) & (trials.c.trial == sa.bindparam("trial"))
)
_INSERTS: dict = {}


def _insert_ignore(connection):
    """INSERT of a trial that does nothing when its (session, trial) row exists."""
    dialect = connection.dialect.name
    statement = _INSERTS.get(dialect)
    if statement is None:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        statement = insert(trials).on_conflict_do_nothing(index_elements=["session_id", "trial"])
        _INSERTS[dialect] = statement
    return statement


def _order_rows(order: pd.DataFrame) -> list[list]:
    columns = [
        "trial",
        "phase",
        "sketch_id",
        "image_id",
        "anchor_rating",
        "sketch_path",
        "image_path",
    ]
    rows = order[columns].to_numpy(dtype=object).tolist()
    for row in rows:
        row[0] = int(row[0])
        row[4] = None if pd.isna(row[4]) else int(row[4])
    return rows


@functools.lru_cache(maxsize=100_000)
def _url(path: str) -> str:
    from urllib.parse import quote

    return "stimuli/" + quote(path)


@functools.cache
def _software() -> dict[str, str]:
    """The server's and the page's software versions (fixed while the process runs)."""
    return {**software_versions(ONLINE_PACKAGES), **web_versions()}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
