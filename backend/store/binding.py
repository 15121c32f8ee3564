"""Wires the store into a Flask app: picks the URL, migrates to head, scopes one ORM session per request, and
prunes what ages out (idle workspaces, ended rate-limit windows) now and then, or on `flask --app app prune`.

Nothing here lives at module level: every app gets its own engine, so tests on separate files never share one.
"""
import logging
import os
import threading
import time
from datetime import timedelta

import click
from flask import Flask, current_app
from flask.globals import app_ctx
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, scoped_session, sessionmaker

from backend.store import ratelimits, sessions
from backend.store.budget import Budget
from backend.store.engine import StorageReadOnly, StorageUnavailable, make_engine, unavailable_kind
from backend.store.migrate import current_revision, head_revision, upgrade
from backend.store.models import utc_now

log = logging.getLogger(__name__)
EXTENSION_KEY = "tapescope.store"
SESSION_MAX_IDLE_DAYS_DEFAULT = 30      # a workspace untouched this long is deleted (snapshots never are)
PRUNE_EVERY_S_DEFAULT = 3600            # how often one process prunes, at most
STORAGE_MAX_BYTES_DEFAULT = 2 * 1024 ** 3    # workspaces and snapshots together (backend/store/budget.py)
SNAPSHOT_RETENTION_DAYS_DEFAULT = 365   # a shared link is kept at least this long, whatever the budget


class Store:
    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.sessions = scoped_session(
            sessionmaker(bind=self.engine, expire_on_commit=False),
            scopefunc=lambda: id(app_ctx._get_current_object()),
        )
        self._pruned_at = None
        self._prune_lock = threading.Lock()

    def prune(self, max_idle: timedelta) -> dict:
        """Delete workspaces idle longer than `max_idle` and rate-limit counters whose window ended."""
        with Session(self.engine) as db:      # its own session: the request's keeps its own transaction state
            removed = sessions.prune(db, utc_now() - max_idle)
        return {"sessions": removed, "rate_limits": ratelimits.prune(self.engine)}

    def prune_if_due(self, max_idle: timedelta, every_s: float) -> None:
        """`prune`, at most once per `every_s` in this process; a failure is logged, never the request's."""
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < every_s:
            return
        if not self._prune_lock.acquire(blocking=False):
            return
        try:
            self._pruned_at = now
            self.prune(max_idle)
        except (StorageUnavailable, SQLAlchemyError):
            log.warning("Pruning idle workspaces failed; the next write will try again", exc_info=True)
            self._pruned_at = None
        finally:
            self._prune_lock.release()


def read_only_url(url: str, error: OperationalError) -> str | None:
    """For a SQLite file that refused even to be read for writing's sake, the URL that opens it read-only.

    A WAL database needs its -shm file to be read at all; in a folder the server may not write, or of a file it
    may not write, SQLite cannot make one and refuses every read. Opened immutable, no -shm is needed: right
    while nothing can write the file, which is the situation here. None for any other database or error.
    """
    parsed = make_url(url)
    path = parsed.database
    readable = unavailable_kind(error) is StorageReadOnly or "unable to open database file" in str(error.orig)
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    if not readable or not os.path.exists(path):
        return None
    return f"sqlite:///file:{os.path.abspath(path)}?mode=ro&immutable=1&uri=true"


def database_url(app: Flask) -> str:
    """test_config's DATABASE_URL, else the DATABASE_URL environment variable, else a file under instance/."""
    return (app.config.get("DATABASE_URL")
            or os.environ.get("DATABASE_URL")
            or f"sqlite:///{os.path.join(app.instance_path, 'tapescope.sqlite')}")


def init_store(app: Flask) -> Store:
    os.makedirs(app.instance_path, exist_ok=True)
    store = Store(database_url(app))
    try:
        upgrade(store.engine)
    except OperationalError as error:
        fallback = read_only_url(store.url, error)
        if fallback is None:
            raise
        store.engine.dispose()
        log.warning("The database %s cannot be written (%s): serving reads only", store.url, error.orig)
        store = Store(fallback)
        if current_revision(store.engine) != head_revision():
            raise RuntimeError(f"The database {database_url(app)} is read-only and at an older schema than this "
                               "code: start once with write access so it can be migrated.") from error
    # No pooled connection survives startup, so gunicorn's --preload can fork without sharing a socket or file.
    store.engine.dispose()
    app.extensions[EXTENSION_KEY] = store
    app.teardown_appcontext(lambda _exc: store.sessions.remove())

    @app.cli.command("prune")
    def prune_command():
        """Delete idle workspaces and ended rate-limit windows now."""
        removed = store.prune(session_max_idle(app))
        click.echo(f"Deleted {removed['sessions']} idle workspaces and {removed['rate_limits']} rate-limit counters.")
    return store


def session_max_idle(app: Flask) -> timedelta:
    return timedelta(days=app.config.get("SESSION_MAX_IDLE_DAYS", SESSION_MAX_IDLE_DAYS_DEFAULT))


def storage_budget(app: Flask | None = None) -> Budget:
    """The app's storage budget: STORAGE_MAX_BYTES for workspaces and snapshots together, and how long a snapshot
    is kept whatever the budget (SNAPSHOT_RETENTION_DAYS)."""
    config = (app or current_app).config
    return Budget(max_bytes=config.get("STORAGE_MAX_BYTES", STORAGE_MAX_BYTES_DEFAULT),
                  snapshot_retention=timedelta(days=config.get("SNAPSHOT_RETENTION_DAYS",
                                                               SNAPSHOT_RETENTION_DAYS_DEFAULT)))


def prune_if_due() -> None:
    """Called after a write that grew the database; prunes at most every PRUNE_EVERY_S seconds per process."""
    current_store().prune_if_due(session_max_idle(current_app),
                                 current_app.config.get("PRUNE_EVERY_S", PRUNE_EVERY_S_DEFAULT))


def current_store(app: Flask | None = None) -> Store:
    return (app or current_app).extensions[EXTENSION_KEY]


def current_db() -> Session:
    """The ORM session of the current request (or app context), closed when that context ends."""
    return current_store().sessions()


def close_store(app: Flask) -> None:
    """Release the app's pooled connections, e.g. when a test throws the app away.

    Per-request ORM sessions are already closed by the app-context teardown, so only the pool remains.
    """
    store = app.extensions.pop(EXTENSION_KEY)
    store.engine.dispose()
