"""Security headers on every kind of response, and JSON (never HTML) errors under /api/."""
import pytest

from backend.api.security import CONTENT_SECURITY_POLICY


@pytest.mark.parametrize("method, path", [
    ("GET", "/"), ("GET", "/api/session"), ("GET", "/api/snapshots/AAAAAAAAAAAAAAAAAAAAAA"),
    ("GET", "/s/AAAAAAAAAAAAAAAAAAAAAA"), ("GET", "/no/such/page"), ("DELETE", "/api/session"),
    ("POST", "/api/session"),
])
def test_every_response_carries_the_security_headers(client, method, path):
    response = client.open(path, method=method)
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_the_policy_forbids_inline_script_and_framing():
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["script-src"] == "'self'"
    assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in directives["script-src"]
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/api/no-such-endpoint", 404), ("DELETE", "/api/session", 405), ("PATCH", "/api/snapshots", 405),
])
def test_api_errors_are_json_sentences(client, method, path, status):
    response = client.open(path, method=method)
    assert response.status_code == status
    assert response.is_json
    assert response.get_json()["error"].endswith(".")


def test_pages_outside_the_api_keep_html_errors(client):
    response = client.get("/no/such/page")
    assert response.status_code == 404 and response.mimetype == "text/html"
