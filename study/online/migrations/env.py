"""Alembic's environment for the online study's database (run by ``storage.migrate``)."""

from alembic import context

from sbir_study.study.online.storage import LIST_LOCK, metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the migrations through sbir_study.study.online.storage.migrate(engine)")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        # Several hosts may start at once: one migrates, the others wait and find it done.
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LIST_LOCK})")
    context.run_migrations()
