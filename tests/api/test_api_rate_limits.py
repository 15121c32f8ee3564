"""Per-client rate limits on every write: 429 with a sentence and Retry-After, counted in the database for all workers."""
import pytest

from tests.settings import GENEROUS_RATE_LIMITS
from tests.api.workspace import save_session

DOCUMENT = {"spec": {"preset": "lab1-mlp"}, "view": {"step": 1}}


@pytest.fixture
def database_url(each_database_url):
    """Every test here runs on SQLite and on PostgreSQL."""
    return each_database_url


def _limited(make_app, **limits):
    return make_app(RATE_LIMITS={**GENEROUS_RATE_LIMITS, **limits})


def _assert_429(response):
    assert response.status_code == 429, response.get_data(as_text=True)[:300]
    assert response.is_json and "limit" in response.get_json()["error"]
    assert int(response.headers["Retry-After"]) >= 1


def test_rapid_session_writes_get_429_and_reads_still_work(make_app):
    client = _limited(make_app, session_write="3 per minute").test_client()
    for _ in range(3):
        assert save_session(client, DOCUMENT).status_code == 200
    _assert_429(save_session(client, DOCUMENT))
    assert client.get("/api/session").get_json()["spec"] == DOCUMENT["spec"]      # reads are never limited


def test_rapid_snapshots_and_copies_get_429(make_app, fake_trace):
    client = _limited(make_app, snapshot_create="2 per minute", snapshot_copy="1 per minute").test_client()
    body = {"spec": {"n": 1}, "view": {"step": 0}}
    first = client.post("/api/snapshots", json=body)
    assert first.status_code == 201 and client.post("/api/snapshots", json=body).status_code == 201
    _assert_429(client.post("/api/snapshots", json=body))
    copy = f"/api/snapshots/{first.get_json()['id']}/copy"
    assert client.post(copy, json={}).status_code == 200
    _assert_429(client.post(copy, json={}))


def test_a_client_that_drops_its_cookie_cannot_make_workspaces_without_end(make_app):
    app = _limited(make_app, workspace_create="3 per hour")
    for _ in range(3):
        assert save_session(app.test_client(), DOCUMENT).status_code == 200   # a fresh cookie jar each
    refused = save_session(app.test_client(), DOCUMENT)
    _assert_429(refused)
    assert "new workspaces" in refused.get_json()["error"]
    keeper = app.test_client()
    keeper.environ_base["REMOTE_ADDR"] = "127.0.0.2"                          # another client is not affected
    assert save_session(keeper, DOCUMENT).status_code == 200
    for step in range(5):                                                      # and a kept cookie never counts
        assert save_session(keeper, {**DOCUMENT, "view": {"step": step}}).status_code == 200


def test_workers_on_one_database_count_together(make_app):
    """Two apps on one database stand for two gunicorn workers: the limit is the client's, not the worker's."""
    workers = [_limited(make_app, session_write="4 per minute") for _ in range(2)]
    cookie_jar = workers[0].test_client()
    save_session(cookie_jar, DOCUMENT)
    statuses = []
    for index in range(5):
        client = workers[index % 2].test_client()
        client.set_cookie("session", cookie_jar.get_cookie("session").value)
        statuses.append(save_session(client, DOCUMENT).status_code)
    assert statuses == [200, 200, 200, 429, 429]


@pytest.mark.parametrize("limits", [{"session_write": ""}, {"session_write": "sideways"}, {"sessions": "1/minute"}])
def test_a_broken_limit_setting_stops_the_server_at_startup(make_app, limits):
    """Flask-Limiter would otherwise log the bad string and limit nothing."""
    with pytest.raises(ValueError, match="RATE_LIMITS"):
        _limited(make_app, **limits)
