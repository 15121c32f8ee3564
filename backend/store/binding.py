"""Wires the store into a Flask app: picks the URL, migrates to head, and scopes one ORM session per request.

Nothing here lives at module level: every app gets its own engine, so tests on separate files never share one.
"""
import os

from flask import Flask, current_app
from flask.globals import app_ctx
from sqlalchemy.orm import Session, scoped_session, sessionmaker

from backend.store.engine import make_engine
from backend.store.migrate import upgrade

EXTENSION_KEY = "tapescope.store"


class Store:
    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.sessions = scoped_session(
            sessionmaker(bind=self.engine, expire_on_commit=False),
            scopefunc=lambda: id(app_ctx._get_current_object()),
        )


def database_url(app: Flask) -> str:
    """test_config's DATABASE_URL, else the DATABASE_URL environment variable, else a file under instance/."""
    return (app.config.get("DATABASE_URL")
            or os.environ.get("DATABASE_URL")
            or f"sqlite:///{os.path.join(app.instance_path, 'tapescope.sqlite')}")


def init_store(app: Flask) -> Store:
    os.makedirs(app.instance_path, exist_ok=True)
    store = Store(database_url(app))
    upgrade(store.engine)
    # No pooled connection survives startup, so gunicorn's --preload can fork without sharing a socket or file.
    store.engine.dispose()
    app.extensions[EXTENSION_KEY] = store
    app.teardown_appcontext(lambda _exc: store.sessions.remove())
    return store


def current_db() -> Session:
    """The ORM session of the current request (or app context), closed when that context ends."""
    return current_app.extensions[EXTENSION_KEY].sessions()


def close_store(app: Flask) -> None:
    """Release the app's pooled connections, e.g. when a test throws the app away.

    Per-request ORM sessions are already closed by the app-context teardown, so only the pool remains.
    """
    store = app.extensions.pop(EXTENSION_KEY)
    store.engine.dispose()
