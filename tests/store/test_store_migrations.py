"""Migrations: fresh and old databases both reach head, no stored snapshot is lost, models match the schema."""
import json
import threading

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from app import create_app
from backend.store import close_store
from backend.store.engine import make_engine
from backend.store import jsontext
from alembic.script import ScriptDirectory

from backend.store.migrate import (RENAMED_REVISIONS, REVISION_ID_LIMIT, alembic_config, current_revision,
                                   head_revision, upgrade)
from backend.store.models import Base
from tests.concurrency import run_threads

FIRST = "0001_first_schema"


def _insert_raw_snapshots(engine, count):
    """Rows written the way the first schema's code wrote them, with plain SQL (no ORM, no current models)."""
    rows = []
    with engine.begin() as connection:
        for index in range(count):
            row = {
                "id": f"legacy-snapshot-id-{index:04d}-abcdef",
                "spec_json": json.dumps({"preset": "seed-tape", "width": index}),
                "checkpoint_json": "null",
                "view_json": json.dumps({"step": index % 7, "selected": f"n{index}", "zoom": None}),
                "trace_json": json.dumps({"schema_version": 1, "engine_version": "0.0.1", "steps": [index]}),
                "schema_version": "1",
                "engine_version": "0.0.1",
                "created_at": "2025-03-01 12:00:00.000000",
            }
            connection.execute(text(
                "INSERT INTO snapshots (id, spec_json, checkpoint_json, view_json, trace_json, schema_version,"
                " engine_version, created_at) VALUES (:id, :spec_json, :checkpoint_json, :view_json,"
                " :trace_json, :schema_version, :engine_version, :created_at)"), row)
            rows.append(row)
    return rows


def test_fresh_database_reaches_head(engine):
    assert current_revision(engine) == head_revision()
    assert head_revision() != FIRST  # there is a second revision to migrate through


def test_upgrading_from_the_first_schema_loses_no_snapshot(db_url):
    engine = make_engine(db_url)
    upgrade(engine, FIRST)
    assert current_revision(engine) == FIRST
    rows = _insert_raw_snapshots(engine, 30)

    upgrade(engine)

    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        stored = {r.id: r for r in connection.execute(text("SELECT * FROM snapshots"))}
    assert len(stored) == len(rows)
    for row in rows:
        for column in ("spec_json", "view_json", "schema_version", "engine_version"):
            assert getattr(stored[row["id"]], column) == row[column]
        assert jsontext.decompress(stored[row["id"]].trace_xz) == row["trace_json"]   # byte for byte
        assert stored[row["id"]].title is None
    engine.dispose()


def test_downgrading_from_head_gives_the_traces_back_as_text(db_url):
    engine = make_engine(db_url)
    upgrade(engine, FIRST)
    rows = _insert_raw_snapshots(engine, 5)
    upgrade(engine)
    config = alembic_config()
    with engine.connect() as connection:          # the app only ever upgrades; a downgrade is by hand
        config.attributes["connection"] = connection
        command.downgrade(config, "0003_session_origin_baseline")
        stored = {r.id: r.trace_json for r in connection.execute(text("SELECT id, trace_json FROM snapshots"))}
    assert stored == {row["id"]: row["trace_json"] for row in rows}
    engine.dispose()


def test_app_startup_migrates_an_old_database_and_serves_its_snapshots(db_url):
    url = db_url
    engine = make_engine(url)
    upgrade(engine, FIRST)
    rows = _insert_raw_snapshots(engine, 3)
    engine.dispose()

    app = create_app({"TESTING": True, "DATABASE_URL": url})
    client = app.test_client()
    for row in rows:
        body = client.get(f"/api/snapshots/{row['id']}").get_json()
        assert body["spec"] == json.loads(row["spec_json"])
        assert body["trace"] == json.loads(row["trace_json"])
        assert body["view"] == json.loads(row["view_json"])
        assert body["created_at"].startswith("2025-03-01T12:00:00")
    close_store(app)


def test_models_match_the_migrated_schema(engine):
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_many_processes_starting_at_once_migrate_exactly_once(db_url):
    """gunicorn workers all run create_app together; the migration lock makes that safe."""
    errors = []
    barrier = threading.Barrier(6)

    def start():
        engine = make_engine(db_url)
        try:
            barrier.wait()
            upgrade(engine)
        except Exception as error:  # collected, asserted below
            errors.append(error)
        finally:
            engine.dispose()

    run_threads(start, 6, with_index=False)
    assert errors == []
    engine = make_engine(db_url)
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
    engine.dispose()


RELEASED = [script.revision for script in reversed(list(ScriptDirectory.from_config(alembic_config()).walk_revisions()))]


def test_every_revision_id_fits_alembic_version_on_postgresql():
    assert all(len(revision) <= REVISION_ID_LIMIT for revision in RELEASED), RELEASED
    assert set(RENAMED_REVISIONS.values()) <= set(RELEASED)


@pytest.mark.parametrize("start", RELEASED[:-1])
def test_every_released_revision_upgrades_to_head_keeping_its_snapshots(db_url, start):
    engine = make_engine(db_url)
    upgrade(engine, FIRST)
    rows = _insert_raw_snapshots(engine, 4)          # written at the first schema, carried up to `start`
    upgrade(engine, start)
    assert current_revision(engine) == start
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        stored = {r.id: jsontext.decompress(r.trace_xz) for r in connection.execute(text("SELECT * FROM snapshots"))}
    assert stored == {row["id"]: row["trace_json"] for row in rows}
    engine.dispose()


@pytest.mark.parametrize("old, new", sorted(RENAMED_REVISIONS.items()))
def test_a_database_stamped_with_a_renamed_revision_id_still_upgrades_and_serves(db_url, old, new):
    """SQLite databases made before the rename carry the 34-character id; PostgreSQL could never store it, so there the
    stamp is widened by hand to stand for such a database."""
    engine = make_engine(db_url)
    upgrade(engine, new)
    rows = _insert_raw_snapshots_at_head(engine, 2)
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("ALTER TABLE alembic_version ALTER COLUMN version_num TYPE VARCHAR(64)"))
        connection.execute(text("UPDATE alembic_version SET version_num = :old"), {"old": old})
    assert current_revision(engine) == new          # read as today's id, so a read-only database still starts
    upgrade(engine, new)                            # a real Alembic run (as the next revision's will be): restamped
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == new
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    engine.dispose()
    app = create_app({"TESTING": True, "DATABASE_URL": db_url})
    client = app.test_client()
    for row in rows:
        assert client.get(f"/api/snapshots/{row['id']}").get_json()["trace"] == json.loads(row["trace_json"])
    close_store(app)


def _insert_raw_snapshots_at_head(engine, count):
    """Rows as today's schema holds them (trace compressed), written with plain SQL."""
    rows = []
    with engine.begin() as connection:
        for index in range(count):
            row = {"id": f"renamed-stamp-snapshot-{index:04d}-abcdef", "trace_json": json.dumps({"steps": [index]})}
            connection.execute(text(
                "INSERT INTO snapshots (id, spec_json, checkpoint_json, view_json, trace_xz, schema_version,"
                " engine_version, created_at) VALUES (:id, '{}', 'null', '{\"step\": 0}', :trace_xz, '1', '0.0.1',"
                " '2025-03-01 12:00:00')"), {"id": row["id"], "trace_xz": jsontext.compress(row["trace_json"])})
            rows.append(row)
    return rows
