"""Schema migrations with Alembic, run from code at startup so fresh and old databases both end at head.

The Alembic Config is built here rather than read from an alembic.ini. The whole upgrade runs inside one
transaction that first takes a database-wide lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock),
so several gunicorn workers starting at once migrate exactly once and the others find the schema at head.
"""
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from backend.store.engine import immediate

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
POSTGRES_MIGRATION_LOCK_KEY = 0x7A9E5C09  # any constant; one app, one lock


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database at `engine` up to `revision`; safe to call from many processes at once.

    A database already at head is only read, never locked: a read-only database still starts and serves.
    """
    if revision == "head" and current_revision(engine) == head_revision():
        return
    config = alembic_config()
    with engine.connect() as connection:
        connection = immediate(connection)
        with connection.begin():
            if engine.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({POSTGRES_MIGRATION_LOCK_KEY})")
            config.attributes["connection"] = connection
            command.upgrade(config, revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
