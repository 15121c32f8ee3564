"""Schema migrations with Alembic, run from code at startup so fresh and old databases both end at head.

The Alembic Config is built here rather than read from an alembic.ini. The whole upgrade runs inside one
transaction that first takes a database-wide lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock),
so several gunicorn workers starting at once migrate exactly once and the others find the schema at head.

Revision ids fit Alembic's `alembic_version.version_num`, VARCHAR(32): PostgreSQL enforces the length, SQLite does
not, so an id once shipped longer than that lives on only in RENAMED_REVISIONS, and a database stamped with it is
restamped with the new id inside the upgrade's transaction.
"""
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from backend.store.engine import immediate

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
POSTGRES_MIGRATION_LOCK_KEY = 0x7A9E5C09  # any constant; one app, one lock
REVISION_ID_LIMIT = 32                     # alembic_version.version_num is VARCHAR(32)
# An id that shipped (on SQLite, which ignores the length) → the id that replaced it. Never remove an entry.
RENAMED_REVISIONS = {"0004_compressed_traces_rate_limits": "0004_compressed_traces"}


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
            _restamp_renamed(connection)
            config.attributes["connection"] = connection
            command.upgrade(config, revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, by today's id (a database stamped with a renamed id reads as its new one)."""
    with engine.connect() as connection:
        stamped = MigrationContext.configure(connection).get_current_revision()
    return RENAMED_REVISIONS.get(stamped, stamped)


def _restamp_renamed(connection) -> None:
    """Rewrite a stamp that uses a renamed revision id to today's id, so Alembic finds it in the script directory."""
    if not inspect(connection).has_table("alembic_version"):
        return
    for old, new in RENAMED_REVISIONS.items():
        connection.execute(text("UPDATE alembic_version SET version_num = :new WHERE version_num = :old"),
                           {"new": new, "old": old})


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
