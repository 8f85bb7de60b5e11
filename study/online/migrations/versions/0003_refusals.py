"""The refused trials of each session, for the experimenter's status.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "refusals",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("trial", sa.Integer, nullable=True),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("refused_at", sa.Float, nullable=False),
    )
    op.create_index("ix_refusals_session", "refusals", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_refusals_session", table_name="refusals")
    op.drop_table("refusals")
