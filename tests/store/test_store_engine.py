"""Engine setup: SQLite pragmas on every connection, and where the database URL comes from."""
from flask import Flask
from sqlalchemy import text

from app import create_app
from backend.store import close_store
from backend.store.binding import EXTENSION_KEY, database_url
from backend.store.engine import make_engine, normalise_url


def test_sqlite_connections_use_wal_foreign_keys_and_busy_timeout(sqlite_url):
    engine = make_engine(sqlite_url)
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() >= 1000
    engine.dispose()


def test_test_config_url_beats_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'from-env.sqlite'}")
    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'from-config.sqlite'}"})
    assert app.extensions[EXTENSION_KEY].url.endswith("from-config.sqlite")
    close_store(app)
    assert (tmp_path / "from-config.sqlite").exists() and not (tmp_path / "from-env.sqlite").exists()


def test_environment_url_beats_default(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'from-env.sqlite'}")
    app = create_app({"TESTING": True})
    close_store(app)
    assert (tmp_path / "from-env.sqlite").exists()


def test_default_is_a_file_in_the_instance_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    bare = Flask(__name__, instance_path=str(tmp_path))  # no create_app: nothing is written anywhere
    assert database_url(bare) == f"sqlite:///{tmp_path / 'tapescope.sqlite'}"


def test_postgres_scheme_is_normalised():
    assert normalise_url("postgres://u:p@h/db") == "postgresql://u:p@h/db"
    assert normalise_url("sqlite:///x.sqlite") == "sqlite:///x.sqlite"
