"""Snapshot titles (a shared link can name what it shows) and an index to prune sessions by age.

Revision ID: 0002_snapshot_title_session_age
Revises: 0001_first_schema
Create Date: 2025-01-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0002_snapshot_title_session_age"
down_revision = "0001_first_schema"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("title", sa.String(120), nullable=True))
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_sessions_updated_at", table_name="sessions")
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_column("title")
