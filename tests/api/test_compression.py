"""JSON answers are gzip-compressed for a client that accepts it, and only then; the bytes decode to the same JSON."""
import gzip
import json

import pytest

from backend.models import presets


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from app import create_app
    path = tmp_path_factory.mktemp("compression") / "tapescope.sqlite"
    return create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{path}"}).test_client()


def trace(client, **headers):
    return client.post("/api/trace", json={"spec": presets.get("transformer-tiny")}, headers=headers)


def test_a_trace_goes_gzipped_to_a_client_that_accepts_it_and_decodes_to_the_same_document(client):
    plain = trace(client)
    packed = trace(client, **{"Accept-Encoding": "gzip, deflate, br"})
    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed.headers["Vary"]
    assert int(packed.headers["Content-Length"]) == len(packed.data) < len(plain.data) / 2
    unpacked, expected = json.loads(gzip.decompress(packed.data)), plain.get_json()
    for document in (unpacked, expected):        # what the process measured with tracemalloc differs run to run
        document["summary"].pop("measured_peak_bytes")
    assert unpacked == expected


def test_small_answers_and_errors_that_are_small_go_as_they_are(client):
    small = client.get("/api/session", headers={"Accept-Encoding": "gzip"})
    assert small.status_code == 200 and "Content-Encoding" not in small.headers
    refused = client.post("/api/trace", json={"spec": {"batch": 0}}, headers={"Accept-Encoding": "gzip"})
    assert refused.status_code == 400
    body = gzip.decompress(refused.data) if refused.headers.get("Content-Encoding") == "gzip" else refused.data
    assert json.loads(body)["problems"]


def test_pages_and_scripts_are_not_touched(client):
    page = client.get("/", headers={"Accept-Encoding": "gzip"})
    assert page.status_code == 200 and "Content-Encoding" not in page.headers
