"""Storage stays bounded and honest: compressed snapshots under a cap, idle workspaces pruned, and a database
that cannot write (full disk, read-only file) answers 507/503, keeps what it acknowledged and still serves reads."""
import sqlite3

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from backend.store import close_store, jsontext, snapshots
from backend.store.binding import current_store
from backend.store.engine import StorageBusy, StorageFull, StorageReadOnly, unavailable_kind
from tests.api.workspace import save_session

DOCUMENT = {"spec": {"preset": "lab1-mlp"}, "checkpoint": None, "view": {"step": 3, "selected": None, "zoom": None},
            "history": {"undo": [], "redo": []}}
BIG_DOCUMENT = {**DOCUMENT, "history": {"undo": [{"blob": f"{i:05d}" * 12_000} for i in range(3)], "redo": []}}
SNAPSHOT = {"spec": {"n": 1}, "view": {"step": 2}}


def _engine(app):
    return current_store(app).engine


def _scalar(app, sql):
    with _engine(app).connect() as connection:
        return connection.execute(text(sql)).scalar()


# ----- size caps -------------------------------------------------------------------------------------------------

def test_the_worst_accepted_snapshot_stores_in_two_mebibytes(tmp_path):
    """repeat 64 x repeat 60 x [linear 1, tanh]: a 204-byte spec whose trace was 28.5 MiB of JSON. Recorded
    straight from the recorder, whatever the work budget says of it: this is about what storing costs."""
    from backend.models import validate_spec
    from backend.store.engine import make_engine
    from backend.store.migrate import upgrade
    from backend.trace.run import record
    engine = make_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    upgrade(engine)
    linear = {"type": "linear", "out": 1}
    spec = {"batch": 1, "input": {"kind": "features", "size": 1}, "layers": [
        {"type": "repeat", "times": 64, "layers": [{"type": "repeat", "times": 60, "layers": [linear, {"type": "tanh"}]}]}]}
    trace, _grads = record(validate_spec(spec))
    with Session(engine) as db:
        snapshot_id = snapshots.create(db, spec=spec, checkpoint=None, view={"step": 0, "selected": None, "zoom": None},
                                       trace=trace, max_stored_bytes=2 * 1024 * 1024)
        stored = db.execute(text("SELECT length(trace_xz) + length(spec_json) FROM snapshots")).scalar()
        assert stored <= 2 * 1024 * 1024
        assert snapshots.get(db, snapshot_id).trace_json == jsontext.dump(trace)      # all of it comes back
    engine.dispose()


def test_a_snapshot_over_its_stored_cap_is_413_naming_the_cap(make_app, fake_trace):
    client = make_app(SNAPSHOT_MAX_STORED_BYTES=200).test_client()
    response = client.post("/api/snapshots", json=SNAPSHOT)
    assert response.status_code == 413
    body = response.get_json()
    assert body["cap"] == "snapshot_stored_bytes" and body["limit"] == 200 and body["requested"] > 200
    assert "compressed" in body["error"]


# ----- idle workspaces --------------------------------------------------------------------------------------------

def _age_all_sessions(app, days):
    with _engine(app).begin() as connection:
        connection.execute(text(f"UPDATE sessions SET updated_at = datetime('now', '-{days} days')"))


def test_idle_workspaces_are_pruned_when_a_new_one_is_made(make_app):
    app = make_app(PRUNE_EVERY_S=0, SESSION_MAX_IDLE_DAYS=30)
    old, recent = app.test_client(), app.test_client()
    save_session(old, DOCUMENT)
    _age_all_sessions(app, 31)
    save_session(recent, DOCUMENT)
    assert _scalar(app, "SELECT count(*) FROM sessions") == 1
    assert old.get("/api/session").get_json()["spec"] is None           # its cookie now reads as no workspace
    assert recent.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


def test_the_prune_command_deletes_idle_workspaces_and_ended_windows(make_app):
    app = make_app(SESSION_MAX_IDLE_DAYS=7)
    save_session(app.test_client(), DOCUMENT)
    save_session(app.test_client(), DOCUMENT)
    _age_all_sessions(app, 8)
    with _engine(app).begin() as connection:
        connection.execute(text("UPDATE rate_limits SET expires_at = 0"))
    result = app.test_cli_runner().invoke(args=["prune"])
    assert result.exit_code == 0 and "Deleted 2 idle workspaces" in result.output
    assert _scalar(app, "SELECT count(*) FROM sessions") == 0 and _scalar(app, "SELECT count(*) FROM rate_limits") == 0


# ----- a full disk ------------------------------------------------------------------------------------------------

def _fill_the_disk(app):
    """Make SQLite's own size limit the database's current size: the next write that grows it fails for real
    with SQLITE_FULL ("database or disk is full"), exactly as on a full disk."""
    engine = _engine(app)
    pages = _scalar(app, "PRAGMA page_count")

    def limit(dbapi_connection, _record):
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 1}")
    event.listen(engine, "connect", limit)
    engine.dispose()
    return lambda: (event.remove(engine, "connect", limit), engine.dispose())


def test_a_full_disk_is_507_and_loses_nothing_acknowledged(make_app, fake_trace):
    app = make_app()
    client = app.test_client()
    assert save_session(client, DOCUMENT).status_code == 200
    shared = client.post("/api/snapshots", json=SNAPSHOT).get_json()["id"]
    free_the_disk = _fill_the_disk(app)

    refused = save_session(client, BIG_DOCUMENT)
    assert refused.status_code == 507 and refused.is_json and "disk is full" in refused.get_json()["error"]
    assert int(refused.headers["Retry-After"]) > 0
    big_snapshot = {"spec": {"blob": [f"{i:07d}" for i in range(20_000)]}, "view": {"step": 0}}
    assert client.post("/api/snapshots", json=big_snapshot).status_code == 507
    assert client.get("/api/session").get_json()["view"] == DOCUMENT["view"]        # the last acknowledged write
    assert client.get(f"/api/snapshots/{shared}").status_code == 200
    assert _scalar(app, "SELECT count(*) FROM snapshots") == 1

    free_the_disk()
    assert save_session(client, BIG_DOCUMENT).status_code == 200


def test_a_simulated_disk_full_error_is_507_not_500(make_app, fake_trace):
    """The same through a raised OperationalError, as another driver would report it."""
    app = make_app()
    client = app.test_client()
    save_session(client, DOCUMENT)

    def disk_full(_connection, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith(("INSERT INTO SNAPSHOTS", "UPDATE SESSIONS")):
            raise sqlite3.OperationalError("database or disk is full")
    event.listen(_engine(app), "before_cursor_execute", disk_full)
    assert save_session(client, {**DOCUMENT, "view": {"step": 9}}).status_code == 507
    assert client.post("/api/snapshots", json=SNAPSHOT).status_code == 507
    event.remove(_engine(app), "before_cursor_execute", disk_full)
    assert client.get("/api/session").get_json()["view"]["step"] == 3


@pytest.mark.parametrize("message, kind", [
    ("database or disk is full", StorageFull), ("attempt to write a readonly database", StorageReadOnly),
    ("database is locked", StorageBusy), ('could not extend file "base/1/2": No space left on device', StorageFull),
    ("no such table: snapshots", None),
])
def test_operational_errors_are_told_apart_by_what_the_database_said(message, kind):
    assert unavailable_kind(OperationalError("INSERT", {}, Exception(message))) is kind


# ----- a read-only database ---------------------------------------------------------------------------------------

def test_a_read_only_database_starts_serves_reads_and_refuses_writes_with_503(tmp_path, make_app, fake_trace):
    path = tmp_path / "tapescope.sqlite"
    writer = make_app()
    client = writer.test_client()
    save_session(client, DOCUMENT)
    snapshot_id = client.post("/api/snapshots", json=SNAPSHOT).get_json()["id"]
    cookie = client.get_cookie("session").value
    close_store(writer)

    reader = make_app(DATABASE_URL=f"sqlite:///file:{path}?mode=ro&uri=true")     # create_app runs, as gunicorn's
    browser = reader.test_client()
    browser.set_cookie("session", cookie)
    assert browser.get(f"/api/snapshots/{snapshot_id}").status_code == 200
    assert browser.get(f"/s/{snapshot_id}").status_code == 200
    assert browser.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]
    refused = save_session(browser, DOCUMENT)
    assert refused.status_code == 503 and "read-only" in refused.get_json()["error"]
    assert browser.post("/api/snapshots", json={**SNAPSHOT, "view": {"step": 3}}).status_code == 503   # a new one
    assert browser.post(f"/api/snapshots/{snapshot_id}/copy", json={}).status_code == 503
    close_store(reader)


def test_a_database_that_refuses_even_to_open_for_writing_is_served_read_only(tmp_path, make_app, fake_trace,
                                                                              monkeypatch):
    """A WAL file the server may not write, in a folder it may not write, refuses every read ("attempt to write
    a readonly database": no -shm can be made) and stopped gunicorn from booting. As root no permission bites,
    so the refusal is raised where startup first meets it; the app must reopen the file immutable and serve."""
    import backend.store.binding as binding
    writer = make_app()
    snapshot_id = writer.test_client().post("/api/snapshots", json=SNAPSHOT).get_json()["id"]
    close_store(writer)
    real_upgrade, refusals = binding.upgrade, []

    def refusing_upgrade(engine):
        if "immutable" not in str(engine.url):
            refusals.append(engine.url)
            raise OperationalError("PRAGMA main.table_info", {}, sqlite3.OperationalError(
                "attempt to write a readonly database"))
        real_upgrade(engine)
    monkeypatch.setattr(binding, "upgrade", refusing_upgrade)

    reader = make_app()
    assert refusals and "immutable=1" in current_store(reader).url
    client = reader.test_client()
    assert client.get(f"/api/snapshots/{snapshot_id}").status_code == 200
    assert save_session(client, DOCUMENT).status_code == 503
    close_store(reader)
