"""Safe defaults outside testing: a generated secret key (a forged dev-key cookie is refused), writes only from
this origin as JSON (a plain HTML form cannot copy a snapshot over a workspace), Secure cookies on request,
and a chunked body over the cap answered 413."""
import http.client
import json
import os
import stat
import threading

import pytest
from flask import Flask
from flask.sessions import SecureCookieSessionInterface
from werkzeug.serving import make_server

from app import create_app
from backend.secret_key import DEV_ONLY_SECRET
from backend.store import close_store
from tests.settings import GENEROUS_RATE_LIMITS
from tests.api.workspace import save_session

DOCUMENT = {"spec": {"mine": 1}, "view": {"step": 2}}


@pytest.fixture
def production_app(tmp_path, monkeypatch):
    """create_app as `gunicorn 'app:create_app()'` runs it: not testing, no TAPESCOPE_SECRET_KEY."""
    monkeypatch.delenv("TAPESCOPE_SECRET_KEY", raising=False)
    monkeypatch.delenv("FLASK_DEBUG", raising=False)
    made = []

    def build(**config):
        app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'prod.sqlite'}", **config},
                         instance_path=str(tmp_path / "instance"))
        made.append(app)
        return app
    yield build
    for app in made:
        close_store(app)


def _signed(secret_key, payload):
    signer = Flask("forger")
    signer.secret_key = secret_key
    return SecureCookieSessionInterface().get_signing_serializer(signer).dumps(payload)


def test_without_a_configured_key_one_is_generated_once_and_kept(production_app, tmp_path):
    first = production_app()
    key = first.config["SECRET_KEY"]
    assert key != DEV_ONLY_SECRET and len(key) >= 64
    key_file = tmp_path / "instance" / "secret_key"
    assert key_file.read_text() == key
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert production_app().config["SECRET_KEY"] == key        # a restart (or another worker) reads the same one


def test_a_cookie_forged_with_the_old_dev_secret_is_rejected(production_app):
    app = production_app()
    victim = app.test_client()
    save_session(victim, DOCUMENT)
    victim_id = SecureCookieSessionInterface().get_signing_serializer(app).loads(
        victim.get_cookie("session").value)["workspace_id"]

    mallory = app.test_client()
    mallory.set_cookie("session", _signed(DEV_ONLY_SECRET, {"workspace_id": victim_id}))
    assert mallory.get("/api/session").get_json()["spec"] is None
    assert save_session(mallory, {"spec": {"evil": 1}}).status_code == 200   # a workspace of its own
    assert victim.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


def test_the_environment_key_wins(production_app, monkeypatch):
    monkeypatch.setenv("TAPESCOPE_SECRET_KEY", "k" * 64)
    assert production_app().config["SECRET_KEY"] == "k" * 64


def test_secure_cookies_for_https_deployments(production_app, monkeypatch):
    monkeypatch.setenv("TAPESCOPE_SECURE_COOKIES", "1")
    set_cookie = save_session(production_app().test_client(), DOCUMENT).headers["Set-Cookie"]
    assert "Secure" in set_cookie and "HttpOnly" in set_cookie


# ----- writes only from this origin, as JSON -------------------------------------------------------------------

@pytest.fixture
def shared(client, fake_trace):
    save_session(client, DOCUMENT)
    return client.post("/api/snapshots", json={"spec": {"theirs": 1}, "view": {"step": 0}}).get_json()["id"]


def test_a_plain_html_form_cannot_copy_a_snapshot_over_a_workspace(client, shared):
    """What a page on 127.0.0.1:8000 sends with <form method=post action=http://127.0.0.1:5000/...>."""
    form = client.post(f"/api/snapshots/{shared}/copy", data={"x": "1"},
                       headers={"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-site"})
    assert form.status_code == 403 and form.is_json
    assert client.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]


@pytest.mark.parametrize("headers, content_type, status", [
    ({}, "application/x-www-form-urlencoded", 415),                       # a form without Origin (old browser)
    ({}, "text/plain", 415),                                              # a no-cors fetch's only JSON-ish type
    ({"Origin": "http://127.0.0.1:8000"}, "application/json", 403),      # same site, other port
    ({"Origin": "null"}, "application/json", 403),                       # a sandboxed frame or a file:// page
    ({"Origin": "http://evil.example"}, "application/json", 403),
    ({"Sec-Fetch-Site": "same-site"}, "application/json", 403),
    ({"Sec-Fetch-Site": "cross-site"}, "application/json", 403),
    ({"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}, "application/json", 200),
    ({}, "application/json", 200),                                        # curl and scripts send no Origin
])
def test_every_write_checks_origin_and_content_type(client, shared, headers, content_type, status):
    for method, path, body in [("POST", f"/api/snapshots/{shared}/copy", "{}"),
                               ("PUT", "/api/session", {"spec": {"other": 2}})]:
        if isinstance(body, dict):          # the version the browser holds, as the page sends it
            body = json.dumps({**body, "version": client.get("/api/session").get_json()["version"]})
        response = client.open(path, method=method, data=body, content_type=content_type, headers=headers)
        assert response.status_code == status, (method, path, response.get_data(as_text=True)[:200])


def test_a_snapshot_from_another_origin_is_refused_before_tracing(client, fake_trace, monkeypatch):
    import backend.api.snapshots as snapshots_api
    calls = []
    monkeypatch.setattr(snapshots_api, "_trace_spec", lambda: lambda *args: calls.append(args))
    response = client.post("/api/snapshots", json={"spec": {}, "view": {"step": 0}},
                           headers={"Origin": "http://127.0.0.1:8000"})
    assert response.status_code == 403 and calls == []


# ----- chunked bodies over the cap ------------------------------------------------------------------------------

@pytest.fixture
def live_app(tmp_path):
    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'live.sqlite'}",
                      "RATE_LIMITS": GENEROUS_RATE_LIMITS})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    thread.join(timeout=5)
    close_store(app)


def _chunked_put(port, size):
    body = b'{"spec": {"x": "' + b"y" * size + b'"}}'
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    chunks = (body[i:i + 65536] for i in range(0, len(body), 65536))
    connection.request("PUT", "/api/session", body=chunks, encode_chunked=True,
                       headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    response = connection.getresponse()
    status, data = response.status, response.read()
    connection.close()
    return status, data


def test_a_chunked_body_over_the_cap_is_413_not_400(live_app):
    status, data = _chunked_put(live_app, 3 * 1024 * 1024)
    assert status == 413 and b"limit" in data
    assert _chunked_put(live_app, 1024 * 1024 - 10)[0] == 413       # 10 bytes over (the JSON around adds 20)
    assert _chunked_put(live_app, 100_000)[0] == 200                 # under the cap, chunked is fine
