"""Every file today's code writes still opens: the committed fixtures (tests/trace/fixtures, its README says how
they were made) read by the upgrade path, posted to POST /api/traces, and a database of today's schema holding a
session and a snapshot, served at /s/<id>. A failure here means people's files stopped opening: fix the reader,
never the fixture."""
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app import create_app
from backend.store.binding import close_store
from backend.trace.document_versions import step_count, unpack, upgrade
from tests.settings import app_config
from tests.schemas import assert_matches_schema

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "trace.schema.json").read_text())
# A saved v1 document is {spec, checkpoint, trace}; the others are the document (or run) as it was written.
DOCUMENT_FILES = ["seed-tape.v1.json", "residual-unit-sqrt.v1.json", "seed-tape.v2.json", "mlp.run.json",
                  "gpt_ddp.nproc2.run.json"]
DATABASE = FIXTURES / "session-and-snapshot.sqlite"
SNAPSHOT_ID = "Q3Qmb8Le6-eZwLoMLLmvTg"        # the link its author was given: /s/Q3Qmb8Le6-eZwLoMLLmvTg


def posted_bytes(name):
    """What a person would post or open: the file as it is, or a saved v1 document's trace."""
    text = (FIXTURES / name).read_text()
    stored = json.loads(text)
    saved_v1 = "schema_version" not in stored and "trace" in stored
    return json.dumps(stored["trace"]) if saved_v1 else text


def posted_body(name):
    return json.loads(posted_bytes(name))


def rank_documents(body):
    return body["ranks"] if "ranks" in body else [body]


@pytest.mark.parametrize("name", DOCUMENT_FILES)
def test_each_document_upgrades_to_a_valid_version_2_that_unpacks(name):
    for document in rank_documents(posted_body(name)):
        upgraded = upgrade(document)
        assert_matches_schema(upgraded, SCHEMA)
        unpacked = unpack(json.loads(json.dumps(upgraded)))
        assert len(unpacked["steps"]) == step_count(document) > 0
        assert unpacked["summary"]["peak_bytes"] == max(step["live_bytes"] for step in unpacked["steps"])


@pytest.mark.parametrize("name", DOCUMENT_FILES)
def test_each_document_posts_and_opens_as_its_link(client, name):
    body = posted_body(name)
    posted = client.post("/api/traces", data=posted_bytes(name), content_type="application/json")
    assert posted.status_code == 201, posted.get_data(as_text=True)[:400]
    link = posted.get_json()["url"]
    assert client.get(link).status_code == 200
    served = client.get(f"/api/snapshots/{posted.get_json()['id']}").get_json()["trace"]
    expected = ({"world_size": body["world_size"], "ranks": [upgrade(rank) for rank in body["ranks"]]}
                if "ranks" in body else upgrade(body))
    assert served == expected


@pytest.fixture
def database_app(tmp_path):
    """The app on a copy of the committed database (the app writes to it: WAL, the rate limiter)."""
    copy = tmp_path / DATABASE.name
    shutil.copy(DATABASE, copy)
    app = create_app(app_config(f"sqlite:///{copy}"))
    yield app, copy
    close_store(app)


def test_a_database_written_today_opens_its_snapshot_and_its_session(database_app):
    app, path = database_app
    with sqlite3.connect(path) as connection:
        (session_id,), = connection.execute("SELECT id FROM sessions").fetchall()
    client = app.test_client()
    assert client.get(f"/s/{SNAPSHOT_ID}").status_code == 200
    snapshot = client.get(f"/api/snapshots/{SNAPSHOT_ID}").get_json()
    assert (snapshot["title"], snapshot["view"]["step"], snapshot["schema_version"]) == ("seed tape", 3, "2")
    trace = snapshot["trace"]
    assert upgrade(trace) is trace and step_count(trace) > 3
    assert_matches_schema(trace, SCHEMA)
    assert unpack(trace)["spec"] == snapshot["spec"]
    with client.session_transaction() as cookie:
        cookie["workspace_id"] = session_id
    workspace = client.get("/api/session").get_json()
    assert workspace["spec"] == snapshot["spec"] and workspace["view"]["step"] == 3
