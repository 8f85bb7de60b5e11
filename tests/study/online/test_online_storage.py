"""The database: Alembic's migrations build exactly the declared schema, on SQLite and on
PostgreSQL; SQLite runs in WAL mode with full sync; concurrent migrations do not collide; the
group commit answers a write only after its commit, and loses none acknowledged at a kill."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from sbir_study.foundation.checks import InputError
from sbir_study.study.online import storage


def schema_differences(engine) -> list:
    with engine.connect() as connection:
        return compare_metadata(MigrationContext.configure(connection), storage.metadata)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'online.sqlite3'}"
    else:
        yield request.getfixturevalue("postgres").new_database()


def test_migrations_build_the_declared_schema(database):
    engine = storage.open_database(database)
    assert storage.schema_revision(engine) is None
    storage.migrate(engine)
    assert storage.schema_revision(engine) == storage.HEAD == "0005"
    assert schema_differences(engine) == []  # Alembic's own comparison with the tables
    storage.migrate(engine)  # again: nothing to do
    assert storage.schema_revision(engine) == storage.HEAD
    engine.dispose()


def test_the_head_revision_known_without_alembic_is_alembics():
    """storage.HEAD lets a restart skip loading Alembic; it must be Alembic's own head."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(storage.__file__).parent / "migrations"))
    assert ScriptDirectory.from_config(config).get_heads() == [storage.HEAD]


def test_migrations_started_together_do_not_collide(postgres):
    """Three hosts starting at once (three processes): one migrates, the others wait."""
    url = postgres.new_database()
    script = (
        "import sys; from sbir_study.study.online import storage; "
        "storage.migrate(storage.open_database(sys.argv[1]))"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", script, url], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    engine = storage.open_database(url)
    assert storage.schema_revision(engine) == storage.HEAD
    assert schema_differences(engine) == []
    engine.dispose()


def test_sqlite_is_durable_and_serialised(tmp_path):
    engine = storage.open_database(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://u@h/d", "not supported"),
        ("not a url", "not a database address"),
        ("sqlite://", "not an in-memory one"),
        ("postgresql://nobody@127.0.0.1:1/none", "cannot open"),
    ],
)
def test_bad_database_addresses_are_named(url, words):
    with pytest.raises(InputError, match=words):
        storage.open_database(url)


#: A stored trial order of two trials, as the service writes it.
ORDER = '[["anchor_demo","s1","i1",1],["main","s1","i2",null]]'


def _insert_study(connection) -> None:
    """Study 1, in the columns every revision has."""
    connection.exec_driver_sql(
        "INSERT INTO studies (name, task, protocol_json, protocol_sha256, protocol_file, "
        "stimulus_digest, stimulus_set, created_at) VALUES ('s', 't', '{}', 'a', '', 'b', '', 0)"
    )


def test_an_older_database_is_upgraded_with_its_sessions_ids_kept(database):
    """A database of revision 0001 keeps its sessions, their trials and trial orders; the id
    as given is their label."""
    from alembic import command

    engine = storage.open_database(database)
    with storage.migrating(engine) as config:
        command.upgrade(config, "0001")
    with engine.begin() as connection:
        _insert_study(connection)
        connection.execute(
            sa.text(
                "INSERT INTO sessions (id, study_id, participant, token_sha256, list_index, seed, "
                "n_trials, trial_order, status, created_at, last_seen_at, details, environment, "
                "url_parameters) VALUES ('x1', 1, 'P07', 'd', 0, 1, 2, :order, 'running', 0, 0, "
                "'{}', '{}', '{}')"
            ),
            {"order": ORDER},
        )
        connection.exec_driver_sql(
            "INSERT INTO trials (session_id, trial, phase, sketch_id, image_id, onset, "
            "stim_duration, blank_duration, n_presses, paused_before, page_onset, "
            "page_window_end, events, payload_sha256, received_at) VALUES ('x1', 1, 'main', "
            "'s1', 'i1', 0, 2, 1, 0, 0, 0, 3, '[]', 'h', 0)"
        )
    storage.migrate(engine)
    assert storage.schema_revision(engine) == storage.HEAD
    assert schema_differences(engine) == []
    with engine.connect() as connection:
        found = connection.exec_driver_sql(
            "SELECT participant, source_id, final_events FROM sessions"
        ).all()
        orders = connection.exec_driver_sql("SELECT * FROM session_orders").all()
        kept = connection.exec_driver_sql("SELECT session_id, trial, screen_events FROM trials")
        kept = kept.all()
    # A trial stored before revision 0005 sent no screen keys; a session not finished, none.
    assert [tuple(row) for row in found] == [("P07", "P07", None)]
    assert [tuple(row) for row in orders] == [("x1", ORDER)]
    assert [tuple(row) for row in kept] == [("x1", 1, "[]")]
    engine.dispose()


def test_the_orders_go_back_into_sessions_on_a_downgrade(database):
    """Revision 0005's downgrade drops the screens' keys; 0004 moved the trial orders into a
    table of their own, and its downgrade puts them back, as revision 0003 had them."""
    from alembic import command

    engine = storage.open_database(database)
    storage.migrate(engine)
    with engine.begin() as connection:
        _insert_study(connection)
        connection.execute(
            storage.sessions.insert(),
            {
                "id": "x1",
                "study_id": 1,
                "participant": "P07",
                "source_id": "P07",
                "token_sha256": "d",
                "list_index": 0,
                "seed": 1,
                "n_trials": 2,
                "status": "running",
                "created_at": 0,
                "last_seen_at": 0,
                "details": "{}",
                "environment": "{}",
                "url_parameters": "{}",
            },
        )
        connection.execute(
            storage.session_orders.insert(), {"session_id": "x1", "trial_order": ORDER}
        )
    with storage.migrating(engine) as config:
        command.downgrade(config, "0004")
    with engine.connect() as connection:
        inspector = sa.inspect(connection)
        session_columns = {c["name"] for c in inspector.get_columns("sessions")}
        trial_columns = {c["name"] for c in inspector.get_columns("trials")}
    assert "final_events" not in session_columns and "screen_events" not in trial_columns
    with storage.migrating(engine) as config:
        command.downgrade(config, "0003")
    with engine.connect() as connection:
        found = connection.exec_driver_sql("SELECT id, trial_order FROM sessions").all()
        tables = sa.inspect(connection).get_table_names()
    assert [tuple(row) for row in found] == [("x1", ORDER)]
    assert "session_orders" not in tables
    storage.migrate(engine)  # and up again
    assert schema_differences(engine) == []
    engine.dispose()


# --- group commit: many requests' trials in one transaction, each answered after its commit ---
_ROWS = sa.Table("rows", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))


class Refused(Exception):
    pass


def _writer(database) -> storage.GroupCommit:
    engine = storage.open_database(database)
    _ROWS.metadata.create_all(engine)
    return storage.GroupCommit(engine, refusals=(Refused,))


def _stored(engine) -> set[int]:
    with storage.reading(engine) as connection:
        return {row.id for row in connection.execute(sa.select(_ROWS.c.id))}


def _insert(
    number: int, hold: threading.Event | None = None, entered: threading.Event | None = None
):
    """A write of row ``number`` that returns it; with ``hold``, it waits for it first, so
    that the writes queued meanwhile go into the next group together (``entered`` is set
    when the writer has begun it)."""

    def work(connection):
        if entered is not None:
            entered.set()
        if hold is not None:
            assert hold.wait(10)
        connection.execute(_ROWS.insert(), {"id": number})
        return number

    return work


def _queued(writer: storage.GroupCommit, count: int) -> threading.Event:
    """An event set once ``count`` writes have been queued to ``writer`` (its queue counted
    as it is put to)."""
    queued, lock = threading.Event(), threading.Lock()
    real, puts = writer._queue, [0]

    class Counting:
        def put(self, item):
            real.put(item)
            with lock:
                puts[0] += 1
                if puts[0] >= count:
                    queued.set()

        def get(self, *args, **kwargs):
            return real.get(*args, **kwargs)

        def get_nowait(self):
            return real.get_nowait()

    writer._queue = Counting()
    return queued


def _refuse(connection):
    raise Refused("no")


def test_group_commit_answers_each_write_only_after_its_commit(database):
    """Writes queued while a commit runs go in the next one, together; each caller is answered
    only when its row is visible to another connection (committed)."""
    writer = _writer(database)
    hold, entered = threading.Event(), threading.Event()
    queued = _queued(writer, 21)

    def first(connection):
        entered.set()
        assert hold.wait(10)  # the writer is busy: the 20 writes below queue meanwhile
        connection.execute(_ROWS.insert(), {"id": 0})

    seen_at_answer = {}

    def write(number):
        writer.run(lambda connection: connection.execute(_ROWS.insert(), {"id": number}))
        seen_at_answer[number] = number in _stored(writer.engine)

    threads = [threading.Thread(target=writer.run, args=(first,))]
    threads += [threading.Thread(target=write, args=(k,)) for k in range(1, 21)]
    threads[0].start()
    assert entered.wait(10)
    for thread in threads[1:]:
        thread.start()
    assert queued.wait(10)
    assert seen_at_answer == {}  # nothing answered while the first commit is held
    hold.set()
    for thread in threads:
        thread.join(30)
    assert seen_at_answer == {k: True for k in range(1, 21)}
    assert writer.writes == 21
    assert writer.commits < 21  # grouped (2 when all 20 were queued before the first ended)
    writer.engine.dispose()


def test_group_commit_a_refusal_or_a_failing_write_spares_the_others(database):
    writer = _writer(database)
    hold, entered = threading.Event(), threading.Event()
    queued = _queued(writer, 5)
    outcomes = {}

    def run(number, work):
        try:
            outcomes[number] = writer.run(work)
        except Exception as error:  # the test records what each caller got
            outcomes[number] = type(error).__name__

    def duplicate(connection):  # a database error after writing: the group is rolled back
        connection.execute(_ROWS.insert(), {"id": 500})
        connection.execute(_ROWS.insert(), {"id": 500})

    jobs = [
        (1, _insert(1, hold, entered)),
        (2, _insert(2)),
        (3, _refuse),
        (4, duplicate),
        (5, _insert(5)),
    ]
    threads = [threading.Thread(target=run, args=job) for job in jobs]
    threads[0].start()
    assert entered.wait(10)
    for thread in threads[1:]:
        thread.start()
    assert queued.wait(10)
    hold.set()
    for thread in threads:
        thread.join(30)
    assert outcomes == {1: 1, 2: 2, 3: "Refused", 4: "IntegrityError", 5: 5}
    assert _stored(writer.engine) == {1, 2, 5}
    writer.engine.dispose()


def test_group_commit_answers_coroutines_in_their_loop_and_a_waiter_gone_loses_nothing(database):
    """submit(): coroutines' writes share the group's commit with threads' writes; each is
    answered in its event loop after the commit, a refusal as its exception; a coroutine
    cancelled while its write waits (its client gone) leaves the write committed, and the
    others of its group answered."""
    writer = _writer(database)
    hold, entered = threading.Event(), threading.Event()
    queued = _queued(writer, 8)

    holder = threading.Thread(target=writer.run, args=(_insert(0, hold, entered),))
    holder.start()
    assert entered.wait(10)

    async def main():
        seen = {}

        async def write(number):
            value = await writer.submit(_insert(number))
            seen[number] = (value, number in _stored(writer.engine))

        tasks = [asyncio.create_task(write(k)) for k in range(1, 6)]
        refused = asyncio.create_task(writer.submit(_refuse))
        gone = asyncio.create_task(writer.submit(_insert(99)))
        assert await asyncio.to_thread(queued.wait, 10)  # the tasks run meanwhile
        assert seen == {} and writer.commits == 0  # all queued behind the held commit
        gone.cancel()
        hold.set()
        await asyncio.gather(*tasks)
        with pytest.raises(Refused):
            await refused
        assert gone.cancelled()
        return seen

    seen = asyncio.run(main())
    holder.join(30)
    assert seen == {k: (k, True) for k in range(1, 6)}
    assert _stored(writer.engine) == {0, 1, 2, 3, 4, 5, 99}
    assert writer.commits == 2  # the held write's, then the seven's together
    writer.engine.dispose()


def test_the_trial_writes_statements_on_the_drivers_cursor_answer_as_sqlalchemys(database):
    """storage.Driver runs the trial write's statements compiled once, on the driver's
    cursor: the same rows (a neighbour query with its own LIMIT and a parameter used twice)
    and row counts (an insert that does nothing the second time) as SQLAlchemy's own."""
    from sbir_study.study.online import queries

    engine = storage.open_database(database)
    storage.migrate(engine)
    driver = storage.Driver()
    with engine.begin() as connection:
        connection.execute(
            queries.INSERT_STUDY,
            {
                "id": 1,
                "name": "n",
                "task": "t",
                "protocol_json": "{}",
                "protocol_sha256": "p",
                "protocol_file": "f",
                "stimulus_digest": "d",
                "stimulus_set": "s",
                "created_at": 1.0,
            },
        )
        connection.execute(
            storage.sessions.insert(),
            {
                "id": "s 1",
                "study_id": 1,
                "participant": "p",
                "source_id": "p",
                "token_sha256": "t",
                "list_index": 0,
                "seed": 7,
                "n_trials": 12,
                "status": "running",
                "created_at": 1.0,
                "last_seen_at": 1.0,
                "finished_at": None,
                "details": "{}",
                "environment": "{}",
                "url_parameters": "{}",
            },
        )
    for number, trial in enumerate((2, 5, 9, 5)):
        values = {
            "session_id": "s 1",
            "trial": trial,
            "phase": "main",
            "sketch_id": "a b",
            "image_id": "c'd",
            "rating": 3,
            "rt": 0.5,
            "anchor_rating": None,
            "onset": trial * 3.0,
            "stim_duration": 2.0,
            "blank_duration": 1.0,
            "dropped_frames": 0,
            "n_presses": 1,
            "presses": "[]",
            "paused_before": 0.0,
            "page_onset": trial * 3.0,
            "page_window_end": trial * 3.0 + 3.0,
            "events": "[]",
            "payload_sha256": "h",
            "received_at": 2.0,
            "screen_events": "[]",
        }
        with engine.begin() as connection:
            insert = queries.insert_trial_once(connection)
            counted = driver.count(connection, insert, values)
            again = number == 3  # trial 5 a second time: the insert does nothing
            seen = (
                0 if again else driver.count(connection, queries.SEEN, {"sid": "s 1", "now": 4.0})
            )
        assert (counted, seen) == ((0, 0) if again else (1, 1))
    with engine.begin() as connection:
        assert (
            connection.execute(sa.select(sa.func.count()).select_from(storage.trials)).scalar() == 3
        )
        for trial in (1, 2, 3, 5, 7, 9, 10):
            key = {"sid": "s 1", "trial": trial}
            ours = driver.all(connection, queries.NEIGHBOUR_TRIALS, key)
            theirs = [tuple(row) for row in connection.execute(queries.NEIGHBOUR_TRIALS, key)]
            around = any(t < trial for t in (2, 5, 9)) + any(t > trial for t in (2, 5, 9))
            assert sorted(ours) == sorted(theirs) and len(ours) == around
        assert driver.all(connection, queries.SESSION_STATUS, {"sid": "s 1"}) == [("running",)]
        assert driver.all(connection, queries.SESSION_STATUS, {"sid": "none"}) == []
    engine.dispose()


_KILLED_WRITER = """
import sys, threading
import sqlalchemy as sa
from sbir_study.study.online import storage
rows = sa.Table("rows", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))
engine = storage.open_database(sys.argv[1])
rows.metadata.create_all(engine)
writer = storage.GroupCommit(engine)
lock = threading.Lock()

def client(first):
    for number in range(first, first + 100_000, 8):
        writer.run(lambda connection: connection.execute(rows.insert(), {"id": number}))
        with lock:
            print(number, flush=True)  # acknowledged

for k in range(8):
    threading.Thread(target=client, args=(k,)).start()
"""


def test_group_commit_loses_no_acknowledged_write_at_a_kill(tmp_path):
    """SIGKILL while 8 clients write: every write acknowledged before the kill is stored."""
    database = f"sqlite:///{tmp_path / 'killed.sqlite3'}"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, database], stdout=subprocess.PIPE, text=True
    )
    acknowledged = []
    for line in child.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) == 400:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    acknowledged += [int(line) for line in child.stdout.read().split()]  # answered before it
    engine = storage.open_database(database)
    stored = _stored(engine)
    engine.dispose()
    assert len(acknowledged) >= 400
    assert set(acknowledged) <= stored
