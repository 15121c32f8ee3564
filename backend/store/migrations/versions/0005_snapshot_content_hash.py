"""Snapshots carry the hash of what they hold, so an identical document is stored once.

Revision ID: 0005_snapshot_content_hash
Revises: 0004_compressed_traces
Create Date: 2026-12-02

Rows stored before it keep a null hash: they are found by id as always, and only rows written from now on are
matched by content.
"""
import sqlalchemy as sa
from alembic import op

revision = "0005_snapshot_content_hash"
down_revision = "0004_compressed_traces"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("content_hash", sa.String(64), nullable=True))
        batch.create_index("ix_snapshots_content_hash", ["content_hash"])


def downgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_index("ix_snapshots_content_hash")
        batch.drop_column("content_hash")
