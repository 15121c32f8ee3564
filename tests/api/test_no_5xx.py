"""No input reaches a 500: every preset on every engine route, and a lone surrogate in every kind of string field of
an uploaded document (each answered 4xx, naming where)."""
import json
import re

import pytest

from backend.driver import trace_spec
from backend.models import presets
from backend.trace.document_versions import pack

ENGINE_ROUTES = ["/api/trace", "/api/modes", "/api/levers"]


@pytest.mark.parametrize("preset", list(presets.PRESETS))
def test_every_preset_on_every_engine_route_is_answered_without_a_5xx(client, preset):
    spec = presets.get(preset)
    for route in ENGINE_ROUTES:
        response = client.post(route, json={"spec": spec})
        assert response.status_code < 500, (route, response.status_code, response.get_json())
        if response.status_code >= 400:
            assert response.get_json()["error"], (route, response.get_json())   # a sentence, not a stack trace


def test_the_version_error_preset_on_modes_is_a_400_naming_the_in_place_op(client):
    response = client.post("/api/modes", json={"spec": presets.get("version-error")})
    assert response.status_code == 400
    assert "inplace" in response.get_json()["problems"][0]["message"]


def _string_leaves(value, path=()):
    """(path, string) for every string in the document, keys included (a key is written as ("key", name))."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*path, ("key", key)), key
            yield from _string_leaves(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _string_leaves(child, (*path, i))
    elif isinstance(value, str):
        yield path, value


def _kind_of(path):
    """The field a path is an instance of: list indices and table row numbers left out."""
    return tuple("*" if isinstance(p, int) or (isinstance(p, str) and p.isdigit()) else p for p in path)


def _with_surrogate(document, path):
    """The document's JSON text with the string at `path` replaced by a lone surrogate escape."""
    broken = json.loads(json.dumps(document))
    *parents, last = path
    node = broken
    for part in parents:
        node = node[part]
    if isinstance(last, tuple):                   # a key
        node["\ud800" + last[1]] = node.pop(last[1])
    else:
        node[last] = "\ud800" + node[last]
    return json.dumps(broken)                     # ensure_ascii writes the escape \ud800


@pytest.fixture(scope="module")
def packed():
    return json.loads(json.dumps(pack(trace_spec(presets.get("lab1-mlp"), measure=False))))


def test_a_lone_surrogate_in_any_string_field_of_an_upload_is_a_400(client, packed):
    kinds = {}
    for path, _text in _string_leaves(packed):
        kinds.setdefault(_kind_of(path), path)
    assert len(kinds) > 20                        # names, scopes, ops, whys, dtypes, kinds, keys, engine_version...
    for path in kinds.values():
        response = client.post("/api/traces", data=_with_surrogate(packed, path), content_type="application/json")
        assert response.status_code == 400, (path, response.status_code)
        assert re.search(r"not text at ", response.get_json()["error"]), path
        assert response.get_json()["problems"][0]["path"]
