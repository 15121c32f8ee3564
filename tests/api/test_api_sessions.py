"""The session API: a browser's own workspace behind a signed cookie; never another's, never a tampered one."""
import threading

import pytest
from sqlalchemy import create_engine, text

from backend.models.caps import cap
from backend.store import close_store
from tests.concurrency import run_threads
from tests.api.workspace import save_session

DOCUMENT = {
    "spec": {"preset": "lab1-mlp", "hidden": [8, 8]},
    "checkpoint": {"policy": "every-2"},
    "view": {"step": 9, "selected": "matmul_3", "zoom": {"k": 1.25, "x": -40, "y": 12.5}},
    "history": {"undo": [{"spec": {"preset": "lab1-mlp"}}], "redo": []},
}


@pytest.fixture
def database_url(each_database_url):
    """Every test here runs on SQLite and on PostgreSQL."""
    return each_database_url


def _session_cookie(client):
    cookie = client.get_cookie("session")
    return None if cookie is None else cookie.value


def _session_rows(app) -> int:
    """Counted on a connection of our own, not the app's."""
    engine = create_engine(app.config["DATABASE_URL"])
    with engine.connect() as connection:
        count = connection.execute(text("SELECT COUNT(*) FROM sessions")).scalar_one()
    engine.dispose()
    return count


def test_a_cookieless_get_answers_the_empty_workspace_and_writes_nothing(app, client):
    client.get("/api/presets")  # the app and its tables exist
    before = _session_rows(app)
    response = client.get("/api/session")
    assert response.status_code == 200
    body = response.get_json()
    assert body["spec"] is None and body["view"]["step"] == 0 and body["history"] == {"undo": [], "redo": []}
    assert body["version"] is None
    assert "Set-Cookie" not in response.headers
    assert response.headers["Cache-Control"] == "no-store"
    assert _session_rows(app) == before


def test_the_first_put_creates_the_row_and_sets_the_cookie(app, client):
    client.get("/api/session")
    before = _session_rows(app)
    response = save_session(client, DOCUMENT)
    assert response.status_code == 200 and response.get_json()["version"]
    set_cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=Lax" in set_cookie and "Expires=" in set_cookie
    assert _session_rows(app) == before + 1


def test_a_stale_put_is_409_with_the_current_document_and_changes_nothing(app):
    first = app.test_client()
    version = first.put("/api/session", json=DOCUMENT).get_json()["version"]
    second = app.test_client()
    second.set_cookie("session", _session_cookie(first))          # another tab of the same browser
    newer = second.put("/api/session", json={**DOCUMENT, "spec": {"tab": 2}, "version": version})
    assert newer.status_code == 200
    stale = first.put("/api/session", json={**DOCUMENT, "spec": {"tab": 1}, "version": version})
    assert stale.status_code == 409 and "another tab" in stale.get_json()["error"]
    current = stale.get_json()["current"]
    assert current["spec"] == {"tab": 2} and current["version"] == newer.get_json()["version"]
    assert first.get("/api/session").get_json()["spec"] == {"tab": 2}
    kept = first.put("/api/session", json={**DOCUMENT, "spec": {"tab": 1}, "version": current["version"]})
    assert kept.status_code == 200 and first.get("/api/session").get_json()["spec"] == {"tab": 1}


def test_origin_and_baseline_round_trip(client):
    document = {**DOCUMENT, "origin": {"kind": "preset", "preset": "deep-mlp"},
                "baseline": {"spec": {"name": "deep-mlp"}, "checkpoint": {"policy": "sqrt"}, "label": "sqrt, batch 64"}}
    save_session(client, document)
    body = client.get("/api/session").get_json()
    assert body["origin"] == document["origin"] and body["baseline"] == document["baseline"]


def test_one_cookie_holds_one_workspace_however_often_it_writes(app, client):
    for step in range(5):
        assert save_session(client, {**DOCUMENT, "view": {"step": step}}).status_code == 200
    for _ in range(3):
        client.get("/api/session")
    assert _session_rows(app) == 1


def test_put_replaces_the_workspace_and_get_returns_it(client):
    client.get("/api/session")
    response = save_session(client, DOCUMENT)
    assert response.status_code == 200
    body = client.get("/api/session").get_json()
    assert {key: body[key] for key in DOCUMENT} == DOCUMENT


def test_put_without_a_prior_get_still_binds_a_workspace(client):
    assert save_session(client, DOCUMENT).status_code == 200
    assert client.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


def test_the_session_id_never_appears_in_a_body(client):
    body = save_session(client, DOCUMENT).get_data(as_text=True)
    assert "id" not in client.get("/api/session").get_json()
    from flask.sessions import SecureCookieSessionInterface
    serializer = SecureCookieSessionInterface().get_signing_serializer(client.application)
    session_id = serializer.loads(_session_cookie(client))["workspace_id"]
    assert session_id not in body


def test_a_restarted_server_brings_the_user_back(make_app):
    app = make_app()
    client = app.test_client()
    save_session(client, DOCUMENT)
    cookie = _session_cookie(client)
    close_store(app)

    returning = make_app().test_client()
    returning.set_cookie("session", cookie)
    assert returning.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


def test_two_browsers_never_see_each_other(app):
    alice, bob = app.test_client(), app.test_client()
    save_session(alice, DOCUMENT)
    assert bob.get("/api/session").get_json()["spec"] is None
    save_session(bob, {"spec": {"bob": True}})
    assert alice.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]
    assert _session_cookie(alice) != _session_cookie(bob)


def test_a_tampered_cookie_gets_a_fresh_workspace(app):
    alice = app.test_client()
    save_session(alice, DOCUMENT)
    cookie = _session_cookie(alice)

    mallory = app.test_client()
    payload, rest = cookie.split(".", 1)
    mallory.set_cookie("session", payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + rest)
    response = mallory.get("/api/session")
    assert response.get_json()["spec"] is None
    assert _session_cookie(mallory) != cookie
    assert alice.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


def test_a_cookie_signed_with_another_key_is_rejected(make_app):
    forger_app = make_app(SECRET_KEY="attacker-key")
    forger = forger_app.test_client()
    save_session(forger, DOCUMENT)

    victim_server = make_app().test_client()
    victim_server.set_cookie("session", _session_cookie(forger))
    assert victim_server.get("/api/session").get_json()["spec"] is None


def test_shape_errors_are_400_with_paths(client):
    response = save_session(client, {
        "spec": [1, 2], "view": {"step": -1, "selected": 7, "zoom": "big", "extra": 1}, "history": {"undo": [3]},
        "surprise": True})
    assert response.status_code == 400
    paths = {problem["path"] for problem in response.get_json()["problems"]}
    assert paths == {"spec", "view.step", "view.selected", "view.zoom", "view.extra", "history.undo[0]", "surprise"}
    assert client.get("/api/session").get_json()["spec"] is None  # nothing was saved


def test_history_length_is_capped(client):
    history = {"undo": [{"n": i} for i in range(cap("history_entries") + 1)], "redo": []}
    response = save_session(client, {"history": history})
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"] == "history.undo"


def test_spec_size_is_capped(client):
    response = save_session(client, {"spec": {"blob": "x" * cap("spec_bytes")}})
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"] == "spec"


def test_the_whole_workspace_size_is_capped_with_a_413_naming_the_cap(client):
    entry = {"blob": "x" * 60_000}
    response = save_session(client, {"history": {"undo": [entry] * 3, "redo": [entry] * 2}})
    assert response.status_code == 413
    body = response.get_json()
    assert body["cap"] == "session_bytes" and body["limit"] == cap("session_bytes") == 256 * 1024
    assert "256 KiB" in body["error"]


def test_a_body_over_max_content_length_is_413_json(client):
    response = client.put("/api/session", data=b"{" + b" " * (2 * 1024 * 1024) + b"}",
                          content_type="application/json")
    assert response.status_code == 413 and response.is_json


def test_a_cross_site_write_is_refused(client):
    save_session(client, DOCUMENT)
    response = save_session(client, {"spec": {"evil": 1}}, headers={"Sec-Fetch-Site": "cross-site"})
    assert response.status_code == 403 and response.is_json
    assert client.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


def test_eight_browsers_saving_at_once_each_keep_their_own_work(app):
    errors = []
    barrier = threading.Barrier(8)

    def browser(index):
        client = app.test_client()
        try:
            client.get("/api/session")
            barrier.wait()
            for step in range(25):
                response = save_session(client, {"spec": {"who": index}, "view": {"step": step}})
                assert response.status_code == 200, response.get_json()
            body = client.get("/api/session").get_json()
            assert body["spec"] == {"who": index} and body["view"]["step"] == 24
        except Exception as error:  # collected, asserted below
            errors.append(error)

    run_threads(browser, 8)
    assert errors == []


def test_the_graphs_unfolded_groups_round_trip_and_bad_ones_are_400_naming_the_field(client):
    document = {**DOCUMENT, "view": {**DOCUMENT["view"], "unfolded": ["layers[1]", "layers[0][0–5]#range"]}}
    assert save_session(client, document).status_code == 200
    assert client.get("/api/session").get_json()["view"]["unfolded"] == ["layers[1]", "layers[0][0–5]#range"]
    assert save_session(client, {**DOCUMENT, "view": {**DOCUMENT["view"], "unfolded": "all"}}).status_code == 200
    assert client.get("/api/session").get_json()["view"]["unfolded"] == "all"
    for bad in ("some", ["x"] * 501, [""], [7], {"layers[1]": True}):
        response = save_session(client, {**DOCUMENT, "view": {**DOCUMENT["view"], "unfolded": bad}})
        assert response.status_code == 400
        problems = response.get_json()["problems"]
        assert [p["path"] for p in problems] in (["view.unfolded"], ["view.unfolded[0]"])
        assert "group id" in problems[0]["message"]
