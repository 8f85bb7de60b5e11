"""A session's trial order in a table of its own; the per-list count from an index alone.

A session's order (about 100 KB of JSON for the paper's 1,240 pairs) was a column of
``sessions``, before ``status`` and ``last_seen_at``. SQLite keeps a row whole, so every
trial's ``last_seen_at`` update rewrote the session's 100 KB, and counting the places taken
in each list (every session start) read every session's order to reach ``last_seen_at``:
39 ms per start with 1,000 sessions, inside the one writer. The orders now have a table of
their own, written once, and the index on ``sessions`` holds every column the count reads.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

import sqlite3

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_COUNT_COLUMNS = ["study_id", "list_index", "status", "last_seen_at"]


def _drop_order_column() -> None:
    # SQLite drops a column in place from 3.35 on; before, the table is copied (batch).
    bind = op.get_bind()
    if bind.dialect.name == "sqlite" and sqlite3.sqlite_version_info < (3, 35):
        with op.batch_alter_table("sessions") as batch:
            batch.drop_column("trial_order")
    else:
        op.drop_column("sessions", "trial_order")


def upgrade() -> None:
    op.create_table(
        "session_orders",
        sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), primary_key=True),
        sa.Column("trial_order", sa.Text, nullable=False),
    )
    op.execute(
        "INSERT INTO session_orders (session_id, trial_order) SELECT id, trial_order FROM sessions"
    )
    _drop_order_column()
    op.drop_index("ix_sessions_study_list_status", table_name="sessions")
    op.create_index("ix_sessions_study_list_status_seen", "sessions", _COUNT_COLUMNS)


def downgrade() -> None:
    op.drop_index("ix_sessions_study_list_status_seen", table_name="sessions")
    op.create_index(
        "ix_sessions_study_list_status", "sessions", ["study_id", "list_index", "status"]
    )
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("trial_order", sa.Text, nullable=True))
    op.execute(
        "UPDATE sessions SET trial_order = (SELECT trial_order FROM session_orders "
        "WHERE session_orders.session_id = sessions.id)"
    )
    with op.batch_alter_table("sessions") as batch:
        batch.alter_column("trial_order", existing_type=sa.Text, nullable=False)
    op.drop_table("session_orders")
