"""The first schema: studies, sessions, trials.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "studies",
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
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("participant", sa.String(64), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("list_index", sa.Integer, nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("n_trials", sa.Integer, nullable=False),
        sa.Column("trial_order", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("last_seen_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float, nullable=True),
        sa.Column("details", sa.Text, nullable=False),
        sa.Column("environment", sa.Text, nullable=False),
        sa.Column("url_parameters", sa.Text, nullable=False),
        sa.UniqueConstraint("study_id", "participant", name="uq_sessions_study_participant"),
    )
    op.create_index(
        "ix_sessions_study_list_status", "sessions", ["study_id", "list_index", "status"]
    )
    op.create_table(
        "trials",
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
    )


def downgrade() -> None:
    op.drop_table("trials")
    op.drop_index("ix_sessions_study_list_status", table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("studies")
