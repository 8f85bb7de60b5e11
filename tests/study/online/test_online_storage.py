"""The database: Alembic's migrations build exactly the declared schema, on SQLite and on
PostgreSQL; SQLite runs in WAL mode with full sync; concurrent migrations do not collide."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
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
    assert storage.schema_revision(engine) == "0003"
    assert schema_differences(engine) == []  # Alembic's own comparison with the tables
    storage.migrate(engine)  # again: nothing to do
    assert storage.schema_revision(engine) == "0003"
    engine.dispose()


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
    assert storage.schema_revision(engine) == "0003"
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


def test_an_older_database_is_upgraded_with_its_sessions_ids_kept(database):
    """A database of revision 0001 keeps its sessions; the id as given is their label."""
    from alembic import command
    from alembic.config import Config

    engine = storage.open_database(database)
    config = Config()
    config.set_main_option("script_location", str(Path(storage.__file__).parent / "migrations"))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO studies (name, task, protocol_json, protocol_sha256, protocol_file, "
            "stimulus_digest, stimulus_set, created_at) VALUES ('s', 't', '{}', 'a', '', 'b', "
            "'', 0)"
        )
        connection.exec_driver_sql(
            "INSERT INTO sessions (id, study_id, participant, token_sha256, list_index, seed, "
            "n_trials, trial_order, status, created_at, last_seen_at, details, environment, "
            "url_parameters) VALUES ('x1', 1, 'P07', 'd', 0, 1, 2, '[]', 'running', 0, 0, "
            "'{}', '{}', '{}')"
        )
    storage.migrate(engine)
    assert storage.schema_revision(engine) == "0003"
    assert schema_differences(engine) == []
    with engine.connect() as connection:
        found = connection.exec_driver_sql("SELECT participant, source_id FROM sessions").all()
    assert [tuple(row) for row in found] == [("P07", "P07")]
    engine.dispose()
