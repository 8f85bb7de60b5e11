"""The database: Alembic's migrations build exactly the declared schema, on SQLite and on
PostgreSQL; SQLite runs in WAL mode with full sync; concurrent migrations do not collide."""

from __future__ import annotations

import subprocess
import sys

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
    assert storage.schema_revision(engine) == "0001"
    assert schema_differences(engine) == []  # Alembic's own comparison with the tables
    storage.migrate(engine)  # again: nothing to do
    assert storage.schema_revision(engine) == "0001"
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
    assert storage.schema_revision(engine) == "0001"
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
