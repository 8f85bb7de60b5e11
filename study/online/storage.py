"""The online study's database: SQLite in the data folder, or PostgreSQL for several servers.

Four tables (created and upgraded by Alembic, never by hand):

``studies``
    one row per (protocol, stimulus set) ever served from this database;
``sessions``
    one row per participant of a study: label, the id as the recruitment
    platform sent it (``source_id``), token digest, list, seed, the trial
    order, status and the details and browser it reported;
``trials``
    one row per recorded trial, keyed by (session, trial): a retry of the
    same trial finds its row and changes nothing;
``refusals``
    one row per trial report of a session's own page that the server refused
    (its trial number when the address gives one, the HTTP status, the reason the
    page was given, the time): what the experimenter's status counts.

SQLite runs in WAL mode with ``synchronous=FULL`` (a committed trial survives
a crash of the process or the machine) and every transaction begins
``IMMEDIATE``, so that writers queue instead of failing half-way. PostgreSQL
serialises the choice of a list with a transaction-scoped advisory lock.

Trials are written by :class:`GroupCommit`: one writer thread per server process
runs the trials that requests queued in one transaction and one commit (one
fsync for many trials), and answers each request only once that commit returned:
an acknowledged trial is on disk, with ``synchronous=FULL``, before its 201 leaves
the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError

from sbir_study.foundation.checks import InputError

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "LIST_LOCK",
    "BatchedReads",
    "Driver",
    "GroupCommit",
    "metadata",
    "migrate",
    "migrating",
    "open_database",
    "reading",
    "refusals",
    "session_orders",
    "sessions",
    "studies",
    "trials",
]

#: Key of PostgreSQL's advisory lock that serialises list assignment (and migrations).
LIST_LOCK = 180_018

metadata = sa.MetaData()

studies = sa.Table(
    "studies",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("task", sa.String(64), nullable=False),
    sa.Column("protocol_json", sa.Text, nullable=False),
    sa.Column("protocol_sha256", sa.String(64), nullable=False),
    sa.Column("protocol_file", sa.Text, nullable=False),
    sa.Column("stimulus_digest", sa.String(64), nullable=False),
    sa.Column("stimulus_set", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("protocol_sha256", "stimulus_digest", name="uq_studies_protocol_set"),
)

sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
    sa.Column("participant", sa.String(64), nullable=False),
    sa.Column("source_id", sa.String(200), nullable=False),
    sa.Column("token_sha256", sa.String(64), nullable=False),
    sa.Column("list_index", sa.Integer, nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("n_trials", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_seen_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float, nullable=True),
    sa.Column("details", sa.Text, nullable=False),
    sa.Column("environment", sa.Text, nullable=False),
    sa.Column("url_parameters", sa.Text, nullable=False),
    # The keys of the page's last screens (the quit question, the end), sent with the finish:
    # JSON {"session_start": page clock or null, "events": [...]}; null until finished.
    sa.Column("final_events", sa.Text, nullable=True),
    sa.UniqueConstraint("study_id", "participant", name="uq_sessions_study_participant"),
    sa.UniqueConstraint("study_id", "source_id", name="uq_sessions_study_source"),
)
#: Every column the per-list count of places (``queries.PARTICIPANTS_PER_LIST``, at every
#: session start) reads: the count is answered from the index alone.
sa.Index(
    "ix_sessions_study_list_status_seen",
    sessions.c.study_id,
    sessions.c.list_index,
    sessions.c.status,
    sessions.c.last_seen_at,
)

#: Each session's trial order (JSON: one list per trial, ``orders.ORDER_COLUMNS``), written
#: once when the session starts. A table of its own, not a column of ``sessions``: SQLite
#: would rewrite the whole order with the session's row at every trial's ``last_seen_at``.
session_orders = sa.Table(
    "session_orders",
    metadata,
    sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), primary_key=True),
    sa.Column("trial_order", sa.Text, nullable=False),
)

trials = sa.Table(
    "trials",
    metadata,
    sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), primary_key=True),
    sa.Column("trial", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("sketch_id", sa.String(200), nullable=False),
    sa.Column("image_id", sa.String(200), nullable=False),
    sa.Column("rating", sa.Integer, nullable=True),
    sa.Column("rt", sa.Float, nullable=True),
    sa.Column("anchor_rating", sa.Integer, nullable=True),
    sa.Column("onset", sa.Float, nullable=False),
    sa.Column("stim_duration", sa.Float, nullable=False),
    sa.Column("blank_duration", sa.Float, nullable=False),
    sa.Column("dropped_frames", sa.Integer, nullable=True),
    sa.Column("n_presses", sa.Integer, nullable=False),
    sa.Column("presses", sa.Text, nullable=True),
    sa.Column("paused_before", sa.Float, nullable=False),
    sa.Column("page_onset", sa.Float, nullable=False),
    sa.Column("page_window_end", sa.Float, nullable=False),
    sa.Column("events", sa.Text, nullable=False),
    sa.Column("payload_sha256", sa.String(64), nullable=False),
    sa.Column("received_at", sa.Float, nullable=False),
    # The keys pressed on the page's screens since the previous pair (instructions, a pause,
    # the quit question), sent with this trial: JSON, as ``events`` with each key's screen.
    sa.Column("screen_events", sa.Text, nullable=False, server_default="[]"),
)

#: The longest reason of a refusal kept (a reason quotes what the page sent).
MAX_REASON_LENGTH = 500
#: The most refusals kept for one session. A page sets a refused trial aside and never
#: sends it again, so an honest page is refused at most once a trial (the paper's whole
#: block is 1,240 pairs); past this, a page is sending reports in a loop. What is not kept
#: is still answered and written to serve's log.
MAX_REFUSALS_PER_SESSION = 2000

refusals = sa.Table(
    "refusals",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), nullable=False),
    sa.Column("trial", sa.Integer, nullable=True),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("refused_at", sa.Float, nullable=False),
)
sa.Index("ix_refusals_session", refusals.c.session_id)

LOG = logging.getLogger("sbir_study.study.online")


def default_url(data: str | Path) -> str:
    """The embedded database of a data folder: ``<data>/online.sqlite3``."""
    return f"sqlite:///{Path(data).resolve() / 'online.sqlite3'}"


def open_database(url: str) -> Engine:
    """An engine for ``url`` (``sqlite:///FILE`` or ``postgresql://...``), checked by connecting.

    Raises :class:`~sbir_study.foundation.checks.InputError` for another kind of address
    or a database that cannot be reached.
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InputError(
            f"--db: {url!r} is not a database address; expected sqlite:///FILE or "
            "postgresql://USER@HOST:PORT/NAME"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise InputError("--db: expected a SQLite file (sqlite:///FILE), not an in-memory one")
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": 60, "check_same_thread": False},
            pool_size=20,
            max_overflow=20,
        )
        _sqlite_pragmas(engine)
    elif backend == "postgresql":
        engine = sa.create_engine(
            parsed.set(drivername="postgresql+psycopg"),
            pool_size=10,
            max_overflow=20,
            pool_pre_ping=True,
        )
    else:
        raise InputError(
            f"--db: {backend!r} databases are not supported; expected sqlite:///FILE or "
            "postgresql://USER@HOST:PORT/NAME"
        )
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
    except OperationalError as error:
        reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        raise InputError(f"--db: cannot open {parsed.render_as_string()}: {reason}") from None
    return engine


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, record) -> None:
        # The driver's own transaction handling is off so that BEGIN IMMEDIATE below is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:
        # Writers take the lock at BEGIN, so they queue rather than fail half-way; readers
        # (reading()) take none: in WAL mode they never block a writer.
        reader = connection.get_execution_options().get("sbir_read_only", False)
        connection.exec_driver_sql("BEGIN" if reader else "BEGIN IMMEDIATE")


def reading(engine: Engine) -> sa.Connection:
    """A connection for reading only (on SQLite, one that takes no write lock)."""
    return engine.connect().execution_options(sbir_read_only=True)


#: The newest revision of ``study/online/migrations`` (a test checks it against Alembic's head).
HEAD = "0005"


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (Alembic, ``study/online/migrations``); a
    database already at :data:`HEAD` is left as it is without importing Alembic."""
    try:
        with engine.connect() as connection:
            current = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    except sa.exc.DBAPIError:
        current = None  # no schema yet
    if current is not None and [tuple(row) for row in current] == [(HEAD,)]:
        return
    from alembic import command

    with migrating(engine) as config:
        command.upgrade(config, "head")


@contextlib.contextmanager
def migrating(engine: Engine) -> Iterator[Config]:
    """Alembic's configuration for the migrations, on one connection in one transaction.

    On SQLite, foreign keys are not enforced while the migrations run, and are checked
    before the commit: Alembic changes a SQLite table by copying it and dropping the old
    one, and dropping ``sessions`` while trials refer to it fails with the keys enforced
    (SQLite's own procedure for such changes: keys off outside the transaction, change,
    ``PRAGMA foreign_key_check``, keys on).
    """
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:  # outside a transaction, where SQLite takes the setting
            _driver_execute(connection, "PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                config.attributes["connection"] = connection
                yield config
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                    if broken:
                        raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                _driver_execute(connection, "PRAGMA foreign_keys=ON")


def _driver_execute(connection: sa.Connection, statement: str) -> None:
    """Run ``statement`` on the driver's own connection, outside SQLAlchemy's transaction."""
    driver = connection.connection.driver_connection
    assert driver is not None  # an open connection has its driver's
    driver.execute(statement)


def schema_revision(engine: Engine) -> str | None:
    """The schema's Alembic revision, or None for a database without the schema."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def dumps(value: object) -> str:
    """JSON as stored: compact, keys sorted, so equal values are equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def now() -> float:
    return time.time()


class Driver:
    """Statements of the trial write run on the driver's own cursor, compiled once.

    SQLAlchemy builds a statement's parameters, execution context and result at every
    execution, a cost each of a trial's four statements pays under a crowd's load. Here
    each statement is compiled once per dialect and set of columns, to the driver's SQL
    and parameter order, and run on the cursor of the transaction's own connection; what
    it returns is the driver's (rows as tuples, the row count). Only for statements whose
    columns need no conversion of SQLAlchemy's (numbers, text).
    """

    def __init__(self) -> None:
        self._compiled: dict[tuple, tuple[str, tuple[str, ...] | None, dict]] = {}

    def _sql(self, connection, statement, keys: tuple[str, ...]):
        key = (connection.dialect.name, id(statement), keys)
        compiled = self._compiled.get(key)
        if compiled is None:
            done = statement.compile(dialect=connection.dialect, column_keys=list(keys))
            positional = connection.dialect.paramstyle in ("qmark", "numeric", "format")
            names = tuple(done.positiontup) if positional else None
            # The values the statement holds itself (a LIMIT's), beside those given.
            fixed = {name: value for name, value in done.params.items() if name not in keys}
            compiled = self._compiled.setdefault(key, (str(done), names, fixed))
        return compiled

    def all(
        self, connection: sa.Connection, statement: sa.Executable, parameters: dict
    ) -> list[tuple]:
        """The rows ``statement`` returns with ``parameters``."""
        with contextlib.closing(self._run(connection, statement, parameters)) as cursor:
            return cursor.fetchall()

    def count(self, connection: sa.Connection, statement: sa.Executable, parameters: dict) -> int:
        """The rows ``statement`` changed with ``parameters``."""
        with contextlib.closing(self._run(connection, statement, parameters)) as cursor:
            return cursor.rowcount

    def _run(self, connection, statement, parameters: dict):
        sql, names, fixed = self._sql(connection, statement, tuple(parameters))
        if fixed:
            parameters = {**fixed, **parameters}
        cursor = connection.connection.dbapi_connection.cursor()
        cursor.execute(sql, parameters if names is None else [parameters[n] for n in names])
        return cursor


class GroupCommit:
    """One writer thread that commits, in one transaction, the writes that requests queued.

    :meth:`run` queues ``work`` (a function of a connection) and blocks until the
    transaction holding it has been committed, then returns what ``work`` returned
    or raises what it raised. The writer takes every write queued while the
    previous commit ran (up to ``max_batch``), so under load one commit, and on
    SQLite one fsync, serves many requests; alone, a write waits for nothing.

    ``work`` may refuse (raise one of ``refusals``) only before it writes anything: the
    others of its transaction are committed regardless. Any other failure (a database error, a
    failed commit) rolls the whole transaction back, and each write of it is then
    run again in a transaction of its own, so that one bad write never fails the
    others and none is answered before its own commit.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        refusals: tuple[type[Exception], ...] = (),
        max_batch: int = 256,
    ) -> None:
        self.engine = engine
        self.refusals = refusals
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self.commits = 0  # transactions committed (a test and the benchmark read them)
        self.writes = 0

    def run(self, work: Callable[[Any], Any]) -> Any:
        """Run ``work(connection)`` in the next group's transaction; return after its commit."""
        future: Future = Future()
        self._put(work, functools.partial(_settle, future))
        return future.result()

    async def submit(self, work: Callable[[Any], Any]) -> Any:
        """:meth:`run` for a coroutine: the event loop goes on while the group commits.

        A request whose task is cancelled (its client gone) still has its write
        committed or refused with the group's; it is only no longer waited for.
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._put(
            work, lambda value, error: loop.call_soon_threadsafe(_settle, future, value, error)
        )
        return await future

    def _put(self, work: Callable[[Any], Any], answer: Callable[[Any, Any], object]) -> None:
        self._queue.put((work, answer))
        if self._thread is None:
            with self._start:  # started in the process that writes (after uvicorn's fork)
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._writer, name="sbir-group-commit", daemon=True
                    )
                    self._thread.start()

    def _writer(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._commit(batch)
            except Exception:  # a group that failed as a whole: each write again on its own
                for item in batch:
                    self._commit([item])

    def _commit(self, batch: list) -> None:
        """Run the batch in one transaction; answer each write only after the commit.

        Raises only when a group of several failed before any was answered; a write alone
        is answered with its failure.
        """
        outcomes: list[tuple[Callable[[Any, Any], object], Any, BaseException | None]] = []
        try:
            with self.engine.begin() as connection:
                for work, answer in batch:
                    try:
                        outcomes.append((answer, work(connection), None))
                    except self.refusals as error:
                        outcomes.append((answer, None, error))
        except Exception as error:
            if len(batch) > 1:
                raise
            outcomes = [(batch[0][1], None, error)]
        else:
            self.commits += 1
            self.writes += len(batch)
        for answer, value, failure in outcomes:
            try:
                answer(value, failure)
            except Exception:  # a waiter gone (its event loop closed): the others still hear
                LOG.exception("the group commit could not answer a write")


def _settle(future: asyncio.Future | Future, value, error) -> None:
    """Answer a write's future (a thread's, or a coroutine's in its event loop), unless its
    waiter stopped waiting."""
    if future.done():
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


class BatchedReads:
    """One reader thread that reads, in one query, the keys that requests asked for meanwhile.

    :meth:`get` returns a future of what ``read_many`` gives for a key (a function of a list
    of keys that returns a dict from each key found to its value, or to an exception to
    raise for that key alone); a key not in the dict gives ``None``. Requests that ask for a
    key already being read wait for the same read. The thread takes every key asked for
    while the previous read ran (up to ``max_batch``), so after a restart, when every
    participant's next request asks for a session this process has not seen, one
    query and one connection serve hundreds of them; alone, a key waits for nothing. A read
    that fails as a whole answers each of its keys with the failure.
    """

    def __init__(self, read_many: Callable[[list], dict], *, max_batch: int = 256) -> None:
        self.read_many = read_many
        self.max_batch = max_batch
        self._waiting: dict[Any, Future] = {}
        self._asked: list = []
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self.reads = 0  # queries made (a test reads them)

    def get(self, key: Hashable) -> Future:
        """A future of ``key``'s value (``None`` if not found)."""
        with self._lock:
            future = self._waiting.get(key)
            if future is None:
                future = self._waiting[key] = Future()
                # Handed out running: a waiter that gives up cannot cancel it for the others
                # (asyncio.wrap_future cancels what it wraps when its coroutine is cancelled).
                future.set_running_or_notify_cancel()
                self._asked.append(key)
                if self._thread is None:  # started in the process that reads (after a fork)
                    self._thread = threading.Thread(
                        target=self._reader, name="sbir-batched-reads", daemon=True
                    )
                    self._thread.start()
                self._ready.notify()
            return future

    async def wait(self, key: Hashable) -> Any:
        """:meth:`get` for a coroutine, awaited in its event loop. A coroutine cancelled
        while it waits (its client gone) stops waiting alone: the read, and every other
        request waiting for the same key, go on."""
        return await asyncio.wrap_future(self.get(key))

    def _reader(self) -> None:
        while True:
            with self._lock:
                while not self._asked:
                    self._ready.wait()
                batch = self._asked[: self.max_batch]
                del self._asked[: self.max_batch]
            try:
                found = self.read_many(batch)
            except Exception as error:
                found = dict.fromkeys(batch, error)
            self.reads += 1
            with self._lock:
                futures = [self._waiting.pop(key) for key in batch]
            for key, future in zip(batch, futures, strict=True):
                value = found.get(key)
                if isinstance(value, Exception):
                    future.set_exception(value)
                else:
                    future.set_result(value)
