"""Snapshot traces stored xz-compressed (a 28.5 MiB document becomes 1.2 MiB), and the rate limiter's counters.

Revision ID: 0004_compressed_traces (was 0004_compressed_traces_rate_limits: see RENAMED_REVISIONS in migrate.py)
Revises: 0003_session_origin_baseline
Create Date: 2026-12-01
"""
import lzma

import sqlalchemy as sa
from alembic import op

revision = "0004_compressed_traces"
down_revision = "0003_session_origin_baseline"
branch_labels = None
depends_on = None

XZ_PRESET = 0  # as backend.store.jsontext writes them; lzma.decompress reads any preset


def _snapshots(*columns):
    return sa.table("snapshots", sa.column("id", sa.String), *columns)


def _convert(source, target, convert):
    """Rewrite one column into another, a row at a time: a database of big traces never sits in memory at once."""
    connection = op.get_bind()
    table = _snapshots(sa.column(source), sa.column(target))
    for snapshot_id in connection.execute(sa.select(table.c.id)).scalars().all():
        value = connection.execute(sa.select(table.c[source]).where(table.c.id == snapshot_id)).scalar_one()
        connection.execute(sa.update(table).where(table.c.id == snapshot_id).values({target: convert(value)}))


def upgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("trace_xz", sa.LargeBinary, nullable=True))
    _convert("trace_json", "trace_xz", lambda text: lzma.compress(text.encode("utf-8"), preset=XZ_PRESET))
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_column("trace_json")
        batch.alter_column("trace_xz", existing_type=sa.LargeBinary, nullable=False)
    op.create_table(
        "rate_limits",
        sa.Column("bucket", sa.String(255), primary_key=True),
        sa.Column("hits", sa.Integer, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("ix_rate_limits_expires_at", "rate_limits", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_rate_limits_expires_at", table_name="rate_limits")
    op.drop_table("rate_limits")
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("trace_json", sa.Text, nullable=True))
    _convert("trace_xz", "trace_json", lambda blob: lzma.decompress(blob).decode("utf-8"))
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_column("trace_xz")
        batch.alter_column("trace_json", existing_type=sa.Text, nullable=False)
