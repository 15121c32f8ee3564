"""A workspace remembers what its model came from (origin) and the run it is compared against (baseline).

Revision ID: 0003_session_origin_baseline
Revises: 0002_snapshot_title_session_age
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0003_session_origin_baseline"
down_revision = "0002_snapshot_title_session_age"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("origin_json", sa.Text(), nullable=False, server_default="null"))
        batch.add_column(sa.Column("baseline_json", sa.Text(), nullable=False, server_default="null"))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("baseline_json")
        batch.drop_column("origin_json")
