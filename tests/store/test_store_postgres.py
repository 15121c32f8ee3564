"""PostgreSQL as it behaves on its own: text PostgreSQL's JSON types refuse, timezones, eight writers, the app serving.

The database is the suite's throwaway cluster (tests/postgres.py), or $TAPESCOPE_TEST_POSTGRES_URL when set. The rest
of tests/store and the session, snapshot and rate-limit API tests also run on PostgreSQL, beside SQLite.
"""
import pytest
from sqlalchemy.orm import Session

from app import create_app
from backend.store import close_store, sessions, snapshots
from backend.store.migrate import current_revision, head_revision
from tests.concurrency import run_threads

TRACE = {"schema_version": 1, "engine_version": "pg-test", "steps": [{}, {}]}


@pytest.fixture
def db_url(empty_postgres):
    """PostgreSQL alone: tests/store/conftest.py's migrated `engine` is made on the throwaway cluster."""
    return empty_postgres


@pytest.fixture
def pg_engine(engine):
    return engine


def test_migrates_to_head(pg_engine):
    assert current_revision(pg_engine) == head_revision()


def test_snapshot_and_session_round_trip(pg_engine):
    with Session(pg_engine) as db:
        snapshot_id = snapshots.create(db, spec={"preset": "seed-tape", "name": "é \ud800"}, checkpoint=None,
                                       view={"step": 1, "selected": "n1", "zoom": None}, trace=TRACE, title="pg")
        workspace = sessions.create(db)
        sessions.save(db, workspace.id, {"spec": {"a": 1}, "checkpoint": None,
                                         "view": {"step": 0, "selected": None, "zoom": None},
                                         "history": {"undo": [], "redo": []}})
    with Session(pg_engine) as db:
        record = snapshots.get(db, snapshot_id)
        assert record.spec == {"preset": "seed-tape", "name": "é \ud800"} and record.title == "pg"
        assert record.created_at.tzinfo is not None
        assert sessions.get(db, workspace.id).spec == {"a": 1}


def test_concurrent_writers(pg_engine):
    written, errors = [], []

    def writer(thread_index):
        try:
            with Session(pg_engine) as db:
                for index in range(25):
                    written.append(snapshots.create(db, spec={"t": thread_index, "i": index}, checkpoint=None,
                                                    view={"step": 0, "selected": None, "zoom": None}, trace=TRACE))
        except Exception as error:  # collected, asserted below
            errors.append(error)

    run_threads(writer, 8)
    assert errors == [] and len(set(written)) == 200
    with Session(pg_engine) as db:
        assert all(snapshots.exists(db, snapshot_id) for snapshot_id in written)


def test_the_app_serves_sessions_from_postgres(empty_postgres):
    app = create_app({"TESTING": True, "DATABASE_URL": empty_postgres})
    client = app.test_client()
    client.put("/api/session", json={"spec": {"on": "postgres"}})
    assert client.get("/api/session").get_json()["spec"] == {"on": "postgres"}
    close_store(app)
