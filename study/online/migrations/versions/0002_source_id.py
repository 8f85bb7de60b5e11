"""Each session keeps the participant's id as the recruitment platform sent it.

Revision ID: 0002
Revises: 0001
Create Date: 2027-01-12
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("source_id", sa.String(200), nullable=True))
    # Before this revision a session's id was its label, as the page sent it.
    op.execute("UPDATE sessions SET source_id = participant")
    with op.batch_alter_table("sessions") as batch:
        batch.alter_column("source_id", existing_type=sa.String(200), nullable=False)
        batch.create_unique_constraint("uq_sessions_study_source", ["study_id", "source_id"])


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_constraint("uq_sessions_study_source", type_="unique")
        batch.drop_column("source_id")
