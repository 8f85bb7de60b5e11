"""The keys pressed on the page's screens between the pairs, and on its last screens.

A browser participant's key-downs on instruction, pause, break and quit-question screens
were not sent, so the online key log lacked them where the lab's has every key-down of the
session. The page now sends those pressed since the previous pair with the next trial's
report (``trials.screen_events``), and those of its last screens (the quit question
answered yes, the end screen) with the session's finish (``sessions.final_events``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

import sqlite3

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A stored trial from before kept no such keys: an empty list, as a page sends for none.
    op.add_column(
        "trials", sa.Column("screen_events", sa.Text, nullable=False, server_default="[]")
    )
    op.add_column("sessions", sa.Column("final_events", sa.Text, nullable=True))


def _drop(table: str, column: str) -> None:
    # SQLite drops a column in place from 3.35 on; before, the table is copied (batch).
    bind = op.get_bind()
    if bind.dialect.name == "sqlite" and sqlite3.sqlite_version_info < (3, 35):
        with op.batch_alter_table(table) as batch:
            batch.drop_column(column)
    else:
        op.drop_column(table, column)


def downgrade() -> None:
    _drop("sessions", "final_events")
    _drop("trials", "screen_events")
