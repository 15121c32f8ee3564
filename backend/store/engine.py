"""Engine construction: the database URL, SQLite pragmas, and transactions that take SQLite's write lock early.

SQLite is the embedded default. Every connection gets WAL (readers never block the writer), foreign keys
on, and a busy timeout. pysqlite's own transaction handling is switched off and SQLAlchemy emits BEGIN
itself (the recipe in SQLAlchemy's SQLite docs), so that a write transaction can say BEGIN IMMEDIATE: a
read-then-write transaction under plain BEGIN fails at once with "database is locked" when another writer
committed since its read, whereas IMMEDIATE waits its turn up to the busy timeout.
"""
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

SQLITE_BUSY_TIMEOUT_S = 30
BEGIN_OPTION = "tapescope_sqlite_begin"


def normalise_url(url: str) -> str:
    """Accept the `postgres://` spelling many hosts hand out; SQLAlchemy only knows `postgresql://`."""
    if url.startswith("postgres://"):
        return "postgresql://" + url[len("postgres://"):]
    return url


def make_engine(url: str) -> Engine:
    url = normalise_url(url)
    if make_url(url).get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    engine = create_engine(
        url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _sqlite_on_connect(dbapi_connection, _connection_record):
    dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself, see _sqlite_on_begin
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
    cursor.close()


def _sqlite_on_begin(connection):
    if connection.get_execution_options().get(BEGIN_OPTION) == "immediate":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        connection.exec_driver_sql("BEGIN")


def immediate(connection):
    """Mark a Core connection so its next transaction takes the write lock up front (no-op off SQLite)."""
    return connection.execution_options(**{BEGIN_OPTION: "immediate"})


@contextmanager
def write_transaction(db: Session):
    """Run a block as one write transaction: committed on success, rolled back on any error."""
    if db.in_transaction():
        db.commit()  # end any read snapshot first: a write must start its own transaction to lock early
    db.connection(execution_options={BEGIN_OPTION: "immediate"})
    try:
        yield db
        db.commit()
    except BaseException:
        db.rollback()
        raise
