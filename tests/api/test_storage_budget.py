"""The storage budget through the API: a flood of workspaces and snapshots from 16 addresses stays within it,
evicting idle workspaces and losing no acknowledged snapshot; a class of 60 behind one address makes its
workspaces; a versionless save over an existing workspace is a 409 carrying the current document."""
import os

from backend.api.limits import DEFAULT_RATE_LIMITS
from backend.store import current_db
from backend.store.budget import stored_bytes
from tests.api.workspace import save_session

BUDGET = 2 * 1024 * 1024


def _client(app, address):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_a_flood_from_16_addresses_stays_within_the_budget_and_keeps_every_acknowledged_snapshot(make_app, fake_trace):
    app = make_app(STORAGE_MAX_BYTES=BUDGET, RATE_LIMITS={})            # the shipped per-address limits
    acknowledged, snapshot_statuses, saves = [], set(), set()
    for round_ in range(12):
        for host in range(16):
            fresh = _client(app, f"127.0.0.{host + 1}")                  # a new cookie jar: a new workspace
            saves.add(save_session(fresh, {"spec": {"junk": os.urandom(24_000).hex()}}).status_code)   # 48 KB
            snapshot = fresh.post("/api/snapshots", json={"spec": {"n": os.urandom(500).hex()}, "view": {"step": 0}})
            snapshot_statuses.add(snapshot.status_code)
            if snapshot.status_code == 201:
                acknowledged.append(snapshot.get_json()["id"])
    assert saves == {200}                                   # 9 MiB of workspaces into 2 MiB: the idlest went
    assert snapshot_statuses <= {201, 429}                  # past 10 a minute an address waits; none was lost
    with app.app_context():
        assert stored_bytes(current_db()) <= BUDGET
    reader = _client(app, "127.0.0.99")
    assert len(acknowledged) == 16 * 10
    assert all(reader.get(f"/api/snapshots/{i}").status_code == 200 for i in acknowledged)


def test_a_class_of_60_behind_one_address_each_gets_a_workspace(make_app):
    app = make_app(RATE_LIMITS={})
    per_hour = int(DEFAULT_RATE_LIMITS["workspace_create"].split(" per hour")[0])
    assert per_hour >= 300
    statuses = [save_session(_client(app, "10.0.0.1"), {"spec": {"student": n}}).status_code for n in range(60)]
    assert statuses == [200] * 60


def test_a_versionless_save_over_an_existing_workspace_is_a_409_with_the_current_document(client):
    first = client.put("/api/session", json={"spec": {"tab": "A", "batch": 96}})
    assert first.status_code == 200
    second = client.put("/api/session", json={"spec": {"tab": "B", "batch": 48}})        # opened before A saved
    assert second.status_code == 409
    assert second.get_json()["current"]["spec"] == {"tab": "A", "batch": 96}
    assert client.get("/api/session").get_json()["spec"] == {"tab": "A", "batch": 96}     # nothing overwritten
