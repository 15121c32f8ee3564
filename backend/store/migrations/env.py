"""Alembic environment: migrations run on the connection backend.store.migrate hands over, in its transaction."""
from alembic import context

from backend.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("Run migrations through backend.store.migrate.upgrade(engine), not the alembic CLI.")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
