"""Snapshots over HTTP: create, read, survive a restart, 8 concurrent clients, copy into a session, /s/<id>."""
import threading

import pytest
from flask import template_rendered

from backend.store import close_store
from tests.api.conftest import FAKE_STEP_COUNT
from tests.concurrency import run_threads

SPEC = {"preset": "seed-tape", "width": 4}
VIEW = {"step": 14, "selected": "n3"}


@pytest.fixture
def database_url(each_database_url):
    """Every test here runs on SQLite and on PostgreSQL."""
    return each_database_url


def _share(client, spec=SPEC, view=VIEW, **extra):
    return client.post("/api/snapshots", json={"spec": spec, "view": view, **extra})


def test_create_returns_201_an_unguessable_id_and_its_url(client, fake_trace):
    response = _share(client)
    assert response.status_code == 201
    body = response.get_json()
    assert len(body["id"]) >= 22
    assert body["url"] == f"/s/{body['id']}"
    assert response.headers["Location"] == body["url"]


def test_read_returns_what_was_shared(client, fake_trace):
    snapshot_id = _share(client, checkpoint={"policy": "sqrt"}, title="Backward step 14").get_json()["id"]
    response = client.get(f"/api/snapshots/{snapshot_id}")
    assert response.status_code == 200
    body = response.get_json()
    assert body["id"] == snapshot_id
    assert body["spec"] == SPEC
    assert body["checkpoint"] == {"policy": "sqrt"}
    assert body["view"] == {"step": 14, "selected": "n3", "zoom": None}
    assert body["trace"] == fake_trace(SPEC, {"policy": "sqrt"})
    assert body["title"] == "Backward step 14"
    assert body["schema_version"] == "1" and body["engine_version"] == "fake-0"
    assert body["created_at"].endswith("+00:00")


def test_snapshot_survives_the_app_being_thrown_away(make_app, fake_trace):
    app = make_app()
    snapshot_id = _share(app.test_client()).get_json()["id"]
    before = app.test_client().get(f"/api/snapshots/{snapshot_id}").data
    close_store(app)
    del app

    reborn = make_app()
    after = reborn.test_client().get(f"/api/snapshots/{snapshot_id}")
    assert after.status_code == 200
    assert after.data == before
    close_store(reborn)


def test_eight_clients_create_fifty_each_and_all_read_back(app, fake_trace):
    created, errors = [], []
    barrier = threading.Barrier(8)

    def client_thread(thread_index):
        client = app.test_client()
        try:
            barrier.wait()
            for index in range(50):
                spec = {"thread": thread_index, "index": index}
                response = _share(client, spec=spec, view={"step": index % FAKE_STEP_COUNT})
                assert response.status_code == 201, response.get_json()
                created.append((response.get_json()["id"], spec))
        except Exception as error:  # collected, asserted below
            errors.append(error)

    run_threads(client_thread, 8)

    assert errors == []
    assert len(created) == 400 and len({snapshot_id for snapshot_id, _ in created}) == 400
    reader = app.test_client()
    for snapshot_id, spec in created:
        assert reader.get(f"/api/snapshots/{snapshot_id}").get_json()["spec"] == spec


def test_unknown_and_malformed_ids_are_404_json(client, fake_trace):
    for path in ["/api/snapshots/AAAAAAAAAAAAAAAAAAAAAA", "/api/snapshots/nope", "/api/snapshots/x%27%20OR%201=1"]:
        response = client.get(path)
        assert response.status_code == 404
        assert response.is_json and "No snapshot has this id" in response.get_json()["error"]


def test_there_is_no_listing(client, fake_trace):
    _share(client)
    response = client.get("/api/snapshots")
    assert response.status_code == 405
    assert response.is_json and "error" in response.get_json()


def test_a_bad_spec_is_400_with_its_problems(client, fake_trace):
    response = _share(client, spec={"bad": True})
    assert response.status_code == 400
    assert response.get_json()["problems"] == [{"path": "spec.bad", "message": "Remove 'bad'."}]


def test_a_spec_over_a_cap_is_413_naming_the_cap(client, fake_trace):
    response = _share(client, spec={"huge": True})
    assert response.status_code == 413
    body = response.get_json()
    assert body["cap"] == "parameters" and "make the model" in body["error"]


def test_a_step_past_the_end_of_the_trace_is_400(client, fake_trace):
    response = _share(client, view={"step": FAKE_STEP_COUNT})
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"] == "view.step"


def test_a_trace_over_the_stored_cap_is_413(make_app, fake_trace):
    client = make_app(SNAPSHOT_MAX_TRACE_BYTES=100).test_client()
    response = _share(client)
    assert response.status_code == 413
    assert "trace document" in response.get_json()["error"]


def test_snapshot_page_opens_the_explorer_read_only(app, client, fake_trace):
    snapshot_id = _share(client).get_json()["id"]
    rendered = []
    template_rendered.connect(lambda sender, template, context, **extra: rendered.append((template.name, context)),
                              app, weak=False)
    response = client.get(f"/s/{snapshot_id}")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    name, context = rendered[0]
    assert name == "explorer.html"
    assert context["snapshot_id"] == snapshot_id and context["read_only"] is True


def test_snapshot_page_for_an_unknown_id_is_a_404_page(client, fake_trace):
    for path in ["/s/AAAAAAAAAAAAAAAAAAAAAA", "/s/..%2F..%2Fetc", "/s/" + "a" * 5000]:
        response = client.get(path)
        assert response.status_code == 404
        assert response.mimetype == "text/html"
        assert b"No snapshot at this link" in response.data


def test_copy_forks_the_snapshot_into_my_session_and_keeps_my_work_undoable(client, fake_trace):
    client.put("/api/session", json={"spec": {"mine": 1}, "view": {"step": 2}})
    snapshot_id = _share(client, spec=SPEC, view=VIEW, checkpoint={"policy": "sqrt"}).get_json()["id"]

    response = client.post(f"/api/snapshots/{snapshot_id}/copy", json={})
    assert response.status_code == 200
    session = client.get("/api/session").get_json()
    assert session == response.get_json()
    assert session["spec"] == SPEC
    assert session["checkpoint"] == {"policy": "sqrt"}
    assert session["view"] == {"step": 14, "selected": "n3", "zoom": None}
    assert session["history"]["undo"][-1]["spec"] == {"mine": 1}
    assert session["history"]["redo"] == []
    assert client.get(f"/api/snapshots/{snapshot_id}").get_json()["spec"] == SPEC  # the snapshot is untouched


def test_copy_works_for_someone_with_no_session_yet(app, fake_trace):
    snapshot_id = _share(app.test_client()).get_json()["id"]
    stranger = app.test_client()
    response = stranger.post(f"/api/snapshots/{snapshot_id}/copy", json={})
    assert response.status_code == 200
    assert stranger.get("/api/session").get_json()["spec"] == SPEC


def test_copy_of_an_unknown_snapshot_is_404_and_leaves_the_session_alone(client, fake_trace):
    client.put("/api/session", json={"spec": {"mine": 1}})
    assert client.post("/api/snapshots/AAAAAAAAAAAAAAAAAAAAAA/copy", json={}).status_code == 404
    assert client.get("/api/session").get_json()["spec"] == {"mine": 1}
