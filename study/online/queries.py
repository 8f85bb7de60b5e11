"""The online study's SQL statements, beside the tables they read and write (:mod:`.storage`).

Each statement is built once, with named parameters (``sa.bindparam``), and executed by
:class:`~.service.OnlineStudy` inside the transaction of one operation; SQLAlchemy caches
the compiled form, so a trial's request compiles nothing.
"""

from __future__ import annotations

import functools
import importlib

import sqlalchemy as sa

from .storage import LIST_LOCK, refusals, session_orders, sessions, studies, trials

__all__ = [
    "EXPORT_SESSIONS",
    "EXPORT_STUDY",
    "EXPORT_TRIALS",
    "FINISH_SESSION",
    "INSERT_REFUSAL",
    "INSERT_SESSION",
    "INSERT_SESSION_ORDER",
    "INSERT_STUDY",
    "NEIGHBOUR_TRIALS",
    "PARTICIPANTS_PER_LIST",
    "PARTICIPANT_REFUSALS",
    "PARTICIPANT_SESSIONS",
    "PARTICIPANT_TRIALS",
    "SEEN",
    "SESSION_ARRIVALS",
    "SESSION_FACTS",
    "SESSION_OF_PARTICIPANT",
    "SESSION_OF_SOURCE",
    "SESSION_REFUSAL_COUNT",
    "SESSION_STATUS",
    "SESSION_STATUS_SEEN",
    "SESSION_TRIAL_COUNT",
    "STATUS_REFUSALS",
    "STATUS_REFUSAL_COUNT",
    "STATUS_SESSIONS",
    "STATUS_TRIAL_COUNT",
    "STATUS_TRIAL_DURATIONS",
    "STORED_TRIALS",
    "STUDY_OF_PROTOCOL_AND_SET",
    "STUDY_SESSION_COUNT",
    "TRIAL_PAYLOAD",
    "insert_trial_once",
    "lock_list_choice",
    "lock_session",
]

# --- studies ---
#: The study of a protocol (``protocol_sha256``) on a stimulus set (``stimulus_digest``).
STUDY_OF_PROTOCOL_AND_SET = sa.select(studies.c.id).where(
    (studies.c.protocol_sha256 == sa.bindparam("protocol_sha256"))
    & (studies.c.stimulus_digest == sa.bindparam("stimulus_digest"))
)
INSERT_STUDY = studies.insert()

# --- sessions ---
#: The session of a participant label in a study (``study``, ``participant``).
SESSION_OF_PARTICIPANT = sa.select(sessions.c.id, sessions.c.token_sha256).where(
    (sessions.c.study_id == sa.bindparam("study"))
    & (sessions.c.participant == sa.bindparam("participant"))
)
#: The session of an id as the platform sent it in a study (``study``, ``source_id``).
SESSION_OF_SOURCE = sa.select(sessions.c.id, sessions.c.token_sha256).where(
    (sessions.c.study_id == sa.bindparam("study"))
    & (sessions.c.source_id == sa.bindparam("source_id"))
)
INSERT_SESSION = sessions.insert()
#: The trial order of a session just inserted (``session_id``, ``trial_order``).
INSERT_SESSION_ORDER = session_orders.insert()

#: The sessions a study has started, whatever became of them (``study``).
STUDY_SESSION_COUNT = sa.select(sa.func.count()).where(sessions.c.study_id == sa.bindparam("study"))

#: Per list, its participants and those of them who hold a place in it: complete, or running
#: and heard from since ``active_since`` (a silent one has dropped out); a place is held once
#: the session has stored a trial, so that starts alone cannot fill the study, while every
#: participant counts toward the choice, so that starts at once are spread over the lists.
_STORED_A_TRIAL = sa.exists().where(trials.c.session_id == sessions.c.id)
PARTICIPANTS_PER_LIST = (
    sa.select(
        sessions.c.list_index,
        sa.func.count(),
        sa.func.sum(sa.case(((sessions.c.status == "complete") | _STORED_A_TRIAL, 1), else_=0)),
    )
    .where(
        (sessions.c.study_id == sa.bindparam("study"))
        & (
            (sessions.c.status == "complete")
            | (
                (sessions.c.status == "running")
                & (sessions.c.last_seen_at >= sa.bindparam("active_since"))
            )
        )
    )
    .group_by(sessions.c.list_index)
)

#: What never changes once a session is created, of the sessions ``sids`` (a list) of the
#: study ``study``.
SESSION_FACTS = (
    sa.select(
        sessions.c.id,
        sessions.c.participant,
        sessions.c.source_id,
        sessions.c.token_sha256,
        sessions.c.n_trials,
        session_orders.c.trial_order,
        sessions.c.environment,
        sessions.c.list_index,
        sessions.c.created_at,
    )
    .join(session_orders, session_orders.c.session_id == sessions.c.id)
    .where(
        sessions.c.id.in_(sa.bindparam("sids", expanding=True))
        & (sessions.c.study_id == sa.bindparam("study"))
    )
)
SESSION_STATUS = sa.select(sessions.c.status).where(sessions.c.id == sa.bindparam("sid"))
#: The status of the session ``sid`` and when it was last heard from.
SESSION_STATUS_SEEN = sa.select(sessions.c.status, sessions.c.last_seen_at).where(
    sessions.c.id == sa.bindparam("sid")
)
#: The session ``sid`` was heard from at ``now``.
SEEN = (
    sessions.update()
    .where(sessions.c.id == sa.bindparam("sid"))
    .values(last_seen_at=sa.bindparam("now"))
)
#: The session ``sid`` ends as ``new_status`` at ``now``.
FINISH_SESSION = (
    sessions.update()
    .where(sessions.c.id == sa.bindparam("sid"))
    .values(
        status=sa.bindparam("new_status"),
        finished_at=sa.bindparam("now"),
        last_seen_at=sa.bindparam("now"),
        final_events=sa.bindparam("final"),
    )
)

# --- trials ---
_TIMES = (trials.c.trial, trials.c.onset, trials.c.stim_duration, trials.c.blank_duration)
_IN_SESSION = trials.c.session_id == sa.bindparam("sid")
#: The stored trials of the session ``sid``, in order, with the times a resumed page needs.
STORED_TRIALS = sa.select(*_TIMES).where(_IN_SESSION).order_by(trials.c.trial)
#: The stored trials of the session ``sid`` just before and just after trial ``trial`` (their
#: times; none, one or both), in one statement.
NEIGHBOUR_TRIALS = sa.union_all(
    sa.select(
        sa.select(*_TIMES)
        .where(_IN_SESSION & (trials.c.trial < sa.bindparam("trial")))
        .order_by(trials.c.trial.desc())
        .limit(1)
        .subquery()
    ),
    sa.select(
        sa.select(*_TIMES)
        .where(_IN_SESSION & (trials.c.trial > sa.bindparam("trial")))
        .order_by(trials.c.trial)
        .limit(1)
        .subquery()
    ),
)
SESSION_TRIAL_COUNT = sa.select(sa.func.count()).where(trials.c.session_id == sa.bindparam("sid"))
#: When each trial of the session ``sid`` reached the server (its contacts after the start).
SESSION_ARRIVALS = sa.select(trials.c.received_at).where(_IN_SESSION)
#: The digest of the report stored as trial ``trial`` of the session ``sid``.
TRIAL_PAYLOAD = sa.select(trials.c.payload_sha256).where(
    (trials.c.session_id == sa.bindparam("sid")) & (trials.c.trial == sa.bindparam("trial"))
)

# --- the experimenter's status (study ``study``) ---
#: Sessions counted by status and list, and whether silent since ``cutoff`` (dropped out).
STATUS_SESSIONS = (
    sa.select(
        sessions.c.status,
        sessions.c.list_index,
        (sessions.c.last_seen_at < sa.bindparam("cutoff")).label("silent"),
        sa.func.count(),
    )
    .where(sessions.c.study_id == sa.bindparam("study"))
    .group_by(sessions.c.status, sessions.c.list_index, "silent")
)
#: The phase and measured durations of the latest 100,000 trials (the timing errors).
STATUS_TRIAL_DURATIONS = (
    sa.select(trials.c.phase, trials.c.stim_duration, trials.c.blank_duration)
    .join(sessions, sessions.c.id == trials.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
    .order_by(trials.c.received_at.desc())
    .limit(100_000)
)
STATUS_TRIAL_COUNT = (
    sa.select(sa.func.count())
    .select_from(trials)
    .join(sessions, sessions.c.id == trials.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
)

# --- refused trials ---
INSERT_REFUSAL = refusals.insert()
#: The refusals kept for one session.
SESSION_REFUSAL_COUNT = (
    sa.select(sa.func.count())
    .select_from(refusals)
    .where(refusals.c.session_id == sa.bindparam("sid"))
)
STATUS_REFUSAL_COUNT = (
    sa.select(sa.func.count())
    .select_from(refusals)
    .join(sessions, sessions.c.id == refusals.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
)
#: The study's latest refusals, newest first, with the participant's label (``limit`` rows).
STATUS_REFUSALS = (
    sa.select(
        sessions.c.participant,
        refusals.c.trial,
        refusals.c.status,
        refusals.c.reason,
        refusals.c.refused_at,
    )
    .join(sessions, sessions.c.id == refusals.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
    .order_by(refusals.c.refused_at.desc(), refusals.c.id.desc())
    .limit(sa.bindparam("limit"))
)
#: Every refusal of the study, in the order they came, for the participant table.
PARTICIPANT_REFUSALS = (
    sa.select(refusals.c.session_id, refusals.c.trial, refusals.c.status, refusals.c.reason)
    .join(sessions, sessions.c.id == refusals.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
    .order_by(refusals.c.id)
)

#: Every session of the study, for the participant table.
PARTICIPANT_SESSIONS = sa.select(
    sessions.c.id,
    sessions.c.participant,
    sessions.c.source_id,
    sessions.c.list_index,
    sessions.c.status,
    sessions.c.n_trials,
    sessions.c.created_at,
    sessions.c.last_seen_at,
    sessions.c.finished_at,
).where(sessions.c.study_id == sa.bindparam("study"))
#: What the participant table counts and measures of every stored trial of the study.
PARTICIPANT_TRIALS = (
    sa.select(
        trials.c.session_id,
        trials.c.phase,
        trials.c.sketch_id,
        trials.c.image_id,
        trials.c.rating,
        trials.c.rt,
        trials.c.presses,
        trials.c.stim_duration,
        trials.c.blank_duration,
    )
    .join(sessions, sessions.c.id == trials.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
)

# --- the export (study ``study``) ---
#: The study's row.
EXPORT_STUDY = sa.select(studies).where(studies.c.id == sa.bindparam("study"))
#: Every session of the study, stored trials or none, by participant label.
EXPORT_SESSIONS = (
    sa.select(sessions, session_orders.c.trial_order)
    .join(session_orders, session_orders.c.session_id == sessions.c.id)
    .where(sessions.c.study_id == sa.bindparam("study"))
    .order_by(sessions.c.participant)
)
#: Every stored trial of the study, by session and trial, with the key events behind it.
EXPORT_TRIALS = (
    sa.select(trials)
    .join(sessions, sessions.c.id == trials.c.session_id)
    .where(sessions.c.study_id == sa.bindparam("study"))
    .order_by(trials.c.session_id, trials.c.trial)
)


def insert_trial_once(connection: sa.Connection) -> sa.Insert:
    """INSERT of a trial that does nothing when its (session, trial) row exists."""
    return _insert_trial_once(connection.dialect.name)


@functools.cache
def _insert_trial_once(dialect: str) -> sa.Insert:
    # Made once per dialect: storage.Driver keeps each statement's compiled form by identity.
    insert = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert
    return insert(trials).on_conflict_do_nothing(index_elements=["session_id", "trial"])


def lock_session(connection: sa.Connection, session_id: str) -> None:
    """Serialise the writers of one session's rows until the transaction ends (SQLite: one
    writer at a time already)."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            sa.select(sessions.c.id).where(sessions.c.id == session_id).with_for_update()
        )


def lock_list_choice(connection: sa.Connection) -> None:
    """Serialise list choices until the transaction ends (SQLite: its IMMEDIATE transaction
    already does)."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LIST_LOCK})")
