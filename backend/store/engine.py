"""Engine construction: the database URL, SQLite pragmas, and transactions that take SQLite's write lock early.

SQLite is the embedded default. Every connection gets WAL (readers never block the writer), foreign keys
on, and a busy timeout. pysqlite's own transaction handling is switched off and SQLAlchemy emits BEGIN
itself (the recipe in SQLAlchemy's SQLite docs), so that a write transaction can say BEGIN IMMEDIATE: a
read-then-write transaction under plain BEGIN fails at once with "database is locked" when another writer
committed since its read, whereas IMMEDIATE waits its turn up to the busy timeout.

A write the database cannot take (disk full, read-only file, lock never granted) is rolled back and raised as
one of the StorageUnavailable errors below, which the API answers 507 or 503: what was committed before stays.
"""
import logging
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

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
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
    except dbapi_connection.OperationalError as error:  # a read-only file not yet in WAL: reads still work
        log.warning("SQLite journal_mode=WAL not set (%s); serving reads only", error)
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


class StorageUnavailable(Exception):
    """The database could not take a write; nothing of it was kept, everything committed before was."""


class StorageFull(StorageUnavailable):
    """The disk (or the database's quota) is full."""


class StorageReadOnly(StorageUnavailable):
    """The database is read-only (a read-only file or mount, a read-only replica)."""


class StorageBusy(StorageUnavailable):
    """The write lock was not granted within the busy timeout."""


# SQLite's result codes (sqlite3 errors carry them as sqlite_errorname) and PostgreSQL's SQLSTATEs.
_SQLITE_KINDS = {"SQLITE_FULL": StorageFull, "SQLITE_READONLY": StorageReadOnly, "SQLITE_BUSY": StorageBusy,
                 "SQLITE_LOCKED": StorageBusy}
_POSTGRES_KINDS = {"53100": StorageFull, "25006": StorageReadOnly, "55P03": StorageBusy}
_MESSAGE_KINDS = {"database or disk is full": StorageFull, "readonly database": StorageReadOnly,
                  "database is locked": StorageBusy, "could not extend file": StorageFull}


def unavailable_kind(error: OperationalError) -> type[StorageUnavailable] | None:
    """Which StorageUnavailable an OperationalError is, or None for one that is a bug (bad SQL, schema)."""
    original = error.orig
    name = getattr(original, "sqlite_errorname", "") or ""
    for prefix, kind in _SQLITE_KINDS.items():
        if name.startswith(prefix):
            return kind
    state = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    if state in _POSTGRES_KINDS:
        return _POSTGRES_KINDS[state]
    message = str(original).lower()
    return next((kind for text, kind in _MESSAGE_KINDS.items() if text in message), None)


@contextmanager
def write_transaction(db: Session):
    """Run a block as one write transaction: committed on success, rolled back on any error.

    An OperationalError that says the database cannot take writes becomes StorageFull, StorageReadOnly or
    StorageBusy (after the rollback), so a caller can tell the client; any other error propagates as it is.
    """
    try:
        if db.in_transaction():
            db.commit()  # end any read snapshot first: a write must start its own transaction to lock early
        db.connection(execution_options={BEGIN_OPTION: "immediate"})
        yield db
        db.commit()
    except BaseException as error:
        db.rollback()
        kind = unavailable_kind(error) if isinstance(error, OperationalError) else None
        if kind is not None:
            raise kind(str(error.orig)) from error
        raise
