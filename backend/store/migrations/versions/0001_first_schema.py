"""First schema: sessions and snapshots.

Revision ID: 0001_first_schema
Revises:
Create Date: 2025-01-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0001_first_schema"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("spec_json", sa.Text, nullable=False),
        sa.Column("checkpoint_json", sa.Text, nullable=False),
        sa.Column("view_json", sa.Text, nullable=False),
        sa.Column("history_json", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "snapshots",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("spec_json", sa.Text, nullable=False),
        sa.Column("checkpoint_json", sa.Text, nullable=False),
        sa.Column("view_json", sa.Text, nullable=False),
        sa.Column("trace_json", sa.Text, nullable=False),
        sa.Column("schema_version", sa.String(32), nullable=False),
        sa.Column("engine_version", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("snapshots")
    op.drop_table("sessions")
