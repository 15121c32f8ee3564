"""PostgreSQL: the same store against $TAPESCOPE_TEST_POSTGRES_URL (a throwaway database), skipped when unset.

Example: TAPESCOPE_TEST_POSTGRES_URL=postgresql+psycopg://user@127.0.0.1:5432/tapescope_test
"""
import os

import pytest
from sqlalchemy.orm import Session

from app import create_app
from backend.store import close_store, sessions, snapshots
from backend.store.engine import make_engine
from backend.store.migrate import current_revision, head_revision, upgrade
from tests.concurrency import run_threads

POSTGRES_URL = os.environ.get("TAPESCOPE_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="set TAPESCOPE_TEST_POSTGRES_URL to test PostgreSQL")

TRACE = {"schema_version": 1, "engine_version": "pg-test", "steps": [{}, {}]}


@pytest.fixture
def pg_engine():
    engine = make_engine(POSTGRES_URL)
    upgrade(engine)
    yield engine
    engine.dispose()


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


def test_the_app_serves_sessions_from_postgres():
    app = create_app({"TESTING": True, "DATABASE_URL": POSTGRES_URL})
    client = app.test_client()
    client.put("/api/session", json={"spec": {"on": "postgres"}})
    assert client.get("/api/session").get_json()["spec"] == {"on": "postgres"}
    close_store(app)
