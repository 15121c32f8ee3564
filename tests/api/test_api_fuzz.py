"""Fuzzing every endpoint: malformed bodies and ids, and 2,200 mutated valid requests, get a 4xx sentence, never a 500."""
import json
import random
import urllib.parse

import pytest

from backend.ledger import FIELDS as LEDGER_FIELDS
from backend.ledger import LedgerConfig
from backend.models import presets
from tests.mutation import AWKWARD_VALUES, mutated

PADDING_ID = "AAAAAAAAAAAAAAAAAAAAAA"

MALFORMED_BODIES = [
    (b"", "application/json"),
    (b"not json", "application/json"),
    (b"{", "application/json"),
    (b"{\"spec\": }", "application/json"),
    (b"\xff\xfe\xfa garbage", "application/json"),
    (b"\xc3\x28", "application/json"),                          # invalid UTF-8
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),      # deeper than the parser's recursion limit
    (b"[" * 70 + b"]" * 70, "application/json"),                # deeper than our cap, shallow enough to parse
    (b"{\"spec\": NaN, \"view\": {\"step\": Infinity}}", "application/json"),
    (b"{\"spec\": {}, \"view\": {\"step\": 1e999}}", "application/json"),
    (b"{\"spec\": {}, \"view\": {\"step\": " + b"9" * 5000 + b"}}", "application/json"),
    (b"{\"spec\": {}, \"view\": {\"step\": 0}}", "text/plain"),
    (b"spec=1&view=2", "application/x-www-form-urlencoded"),
    (b"x" * (2 * 1024 * 1024), "application/json"),             # over MAX_CONTENT_LENGTH
]

MALFORMED_VALUES = [
    None, 0, -1, 3.5, True, "spec", [], [{}], {"spec": "seed-tape", "view": {"step": 0}},
    {"spec": [], "view": {"step": 0}}, {"spec": {}, "view": None}, {"spec": {}, "view": []},
    {"spec": {}, "view": {"step": "14"}}, {"spec": {}, "view": {"step": True}}, {"spec": {}, "view": {"step": -3}},
    {"spec": {}, "view": {"step": 2**70}}, {"spec": {}, "view": {"step": 0, "selected": ""}},
    {"spec": {}, "view": {"step": 0, "selected": "n" * 1000}}, {"spec": {}, "view": {"step": 0, "selected": ["n1"]}},
    {"spec": {}, "view": {"step": 0, "zoom": {"k": "1"}}}, {"spec": {}, "view": {"step": 0, "zoom": {str(i): i for i in range(20)}}},
    {"spec": {}, "view": {"step": 0}, "checkpoint": "sqrt"}, {"spec": {}, "view": {"step": 0}, "checkpoint": [1]},
    {"spec": {}, "view": {"step": 0}, "title": "line\nbreak"}, {"spec": {}, "view": {"step": 0}, "title": "t" * 500},
    {"spec": {}, "view": {"step": 0}, "title": 7},
    {"spec": {"x": "y" * 300_000}, "view": {"step": 0}},
    {"spec": {}, "view": {"step": 0}, "history": "undo"}, {"history": {"undo": "x"}}, {"history": {"undo": [1, 2]}},
    {"history": {"undo": [], "redo": [[]]}}, {"history": {"sideways": []}},
    {"\u0000": 1}, {"spec": {}, "view": {"step": 0}, "\ud800": "lone surrogate key"},
    {"spec\u202e": {}, "view": {"step": 0}}, {"id": PADDING_ID, "spec": {}, "view": {"step": 0}},
    {"spec": {}, "view": {"step": 0, "selected": "n1", "zoom": None, "hack": "'; DROP TABLE snapshots; --"}},
    {f"k{i}": i for i in range(5000)},
]

MALFORMED_IDS = [
    "..", "../", "..%2F..%2Fetc%2Fpasswd", "%2e%2e%2f", "%00", "a%00b", "AAAAAAAAAAAAAAAAAAAAA%00",
    "a" * 21, "a" * 65, "a" * 10_000, "'%20OR%20'1'='1", "1;DROP%20TABLE%20snapshots", "%27--",
    "%E2%80%AE" * 10, "%F0%9F%98%80" * 22, "%C3%A9" * 22, "%ZZ", "%", "%25", "null", "undefined",
    PADDING_ID, PADDING_ID.lower(), "_" * 22, "-" * 22,
]


def _assert_client_error(response):
    assert 400 <= response.status_code < 500, (response.status_code, response.get_data(as_text=True)[:300])
    assert response.is_json, response.get_data(as_text=True)[:300]
    assert isinstance(response.get_json()["error"], str)


@pytest.mark.parametrize("raw, content_type", MALFORMED_BODIES, ids=range(len(MALFORMED_BODIES)))
@pytest.mark.parametrize("method, path", [("POST", "/api/snapshots"), ("PUT", "/api/session")])
def test_malformed_bodies_are_4xx(client, fake_trace, method, path, raw, content_type):
    _assert_client_error(client.open(path, method=method, data=raw, content_type=content_type))


@pytest.mark.parametrize("value", MALFORMED_VALUES, ids=range(len(MALFORMED_VALUES)))
@pytest.mark.parametrize("method, path", [("POST", "/api/snapshots"), ("PUT", "/api/session")])
def test_malformed_json_values_are_4xx(client, fake_trace, method, path, value):
    body = json.dumps(value, ensure_ascii=True)
    _assert_client_error(client.open(path, method=method, data=body, content_type="application/json"))


@pytest.mark.parametrize("value", [{"spec": None, "view": {"step": 0}}, {"view": {"step": 0}}, {"spec": {}}])
def test_a_snapshot_needs_a_spec_and_a_view(client, fake_trace, value):
    """Valid as a session document (an empty workspace), not as a snapshot."""
    _assert_client_error(client.post("/api/snapshots", json=value))


@pytest.mark.parametrize("snapshot_id", MALFORMED_IDS, ids=range(len(MALFORMED_IDS)))
def test_malformed_and_unknown_ids_are_404(client, fake_trace, snapshot_id):
    for method, path in [("GET", f"/api/snapshots/{snapshot_id}"), ("POST", f"/api/snapshots/{snapshot_id}/copy"),
                         ("HEAD", f"/api/snapshots/{snapshot_id}")]:
        response = client.open(path, method=method, json={} if method == "POST" else None)
        assert response.status_code == 404, (method, path, response.status_code)
    page = client.get(f"/s/{snapshot_id}")
    assert page.status_code == 404 and page.mimetype == "text/html"


def _garbage(rng: random.Random, depth: int = 0):
    """A random JSON value: scalars of awkward kinds, and objects/lists that sometimes look like a request."""
    choice = rng.randrange(10 if depth < 5 else 6)
    scalars = [None, True, False, 0, -1, 2**63, 1e308, -0.0, "", "é\u0000\ud83d", "n" * rng.randrange(300),
               "'; DROP TABLE sessions; --"]
    if choice < 6:
        return rng.choice(scalars)
    if choice < 8:
        return [_garbage(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["spec", "view", "checkpoint", "history", "step", "selected", "zoom", "undo", "redo", "title", "k", "\ud800"]
    return {rng.choice(keys): _garbage(rng, depth + 1) for _ in range(rng.randrange(5))}


VIEW = {"step": 3, "selected": "n1", "zoom": {"k": 1, "x": 0, "y": 0}}
VALID_SNAPSHOT = {"spec": {"preset": "seed-tape"}, "checkpoint": {"policy": "none"}, "title": "t", "view": VIEW}
VALID_SESSION = {"spec": {"preset": "seed-tape"}, "checkpoint": None, "view": VIEW,
                 "history": {"undo": [{"spec": {}}], "redo": []}}


def _near_valid(rng: random.Random, valid: dict):
    """A valid body with one field, at any depth, replaced by garbage or removed: reaches every validator branch."""
    body = json.loads(json.dumps(valid))
    node = body
    while True:
        key = rng.choice(list(node))
        if isinstance(node[key], dict) and node[key] and rng.random() < 0.5:
            node = node[key]
            continue
        if rng.random() < 0.2:
            del node[key]
        else:
            node[key] = _garbage(rng)
        return body


@pytest.mark.parametrize("seed", range(8))
def test_random_garbage_never_causes_a_server_error(client, fake_trace, seed):
    """Random values may now and then be valid; then they must round-trip. Either way, no 5xx."""
    rng = random.Random(seed)
    for _ in range(60):
        garbage = rng.random() < 0.5
        value = _garbage(rng) if garbage else _near_valid(rng, VALID_SNAPSHOT)
        created = client.post("/api/snapshots", data=json.dumps(value), content_type="application/json")
        assert created.status_code in (201, 400, 413), created.get_data(as_text=True)[:300]
        if created.status_code == 201:
            read = client.get(f"/api/snapshots/{created.get_json()['id']}").get_json()
            assert read["spec"] == value["spec"]

        value = _garbage(rng) if garbage else _near_valid(rng, VALID_SESSION)
        saved = client.put("/api/session", data=json.dumps(value), content_type="application/json")
        assert saved.status_code in (200, 400, 409, 413), saved.get_data(as_text=True)[:300]
        if saved.status_code == 200:
            assert client.get("/api/session").get_json() == saved.get_json()


# ===== Mutation fuzzing through the real engine: every kind of body a client sends, zero 5xx ===================
# Fixed seeds, so a failure reproduces; together the cases below send FUZZ_TOTAL (> 2,000) requests in well
# under a minute: the traced specs are small presets (a valid mutation traces in milliseconds).

AWKWARD_QUERY_VALUES = ["", "0", "-1", "1.5", "1e309", "nan", "inf", "0x10", "１２", "9" * 400, "true", "yes",
                        "fp8", "flash", "%00", "<script>", "1,2", " 12", "12 ", "+3"]
SPEC_PRESETS = ["seed-tape", "lab1-mlp", "residual-unit", "seed-tape", "lab1-mlp", "residual-unit", "transformer-tiny"]
CHECKPOINT_PRESETS = ["seed-tape", "lab1-mlp", "residual-unit"]
VALID_CHECKPOINTS = [{"policy": "none"}, {"policy": "every_k", "k": 1}, {"policy": "every_k", "k": 2},
                     {"policy": "sqrt", "preserve_rng_state": False}, {"policy": "selective"},
                     {"policy": "optimal", "budget_bytes": 4096}, {"policy": "manual", "recompute": [2, 4]}]
FUZZ_CASES = {"spec": 800, "checkpoint": 400, "snapshot": 300, "session": 300, "ledger": 400}
FUZZ_TOTAL = sum(FUZZ_CASES.values())


def _assert_no_server_errors(sent):
    """`sent` is a list of (what was sent, response); every answer must be a 2xx or a 4xx with a JSON sentence."""
    errors = [(what, response.status_code, response.get_data(as_text=True)[:200]) for what, response in sent
              if response.status_code >= 500
              or (response.status_code >= 400 and not (response.is_json and response.get_json().get("error")))]
    assert errors == [], errors[:5]


def _post_json(client, path, body):
    return client.post(path, data=json.dumps(body), content_type="application/json")


def test_fuzz_mutated_preset_specs(client):
    rng = random.Random("specs")
    sent = []
    for _ in range(FUZZ_CASES["spec"]):
        spec = mutated(presets.get(rng.choice(SPEC_PRESETS)), rng)
        sent.append((spec, _post_json(client, "/api/trace", {"spec": spec})))
    _assert_no_server_errors(sent)
    assert 0 < sum(response.status_code == 200 for _, response in sent) < len(sent)   # both kinds were reached


def test_fuzz_checkpoint_objects(client):
    rng = random.Random("checkpoints")
    sent = []
    for _ in range(FUZZ_CASES["checkpoint"]):
        spec = presets.get(rng.choice(CHECKPOINT_PRESETS))
        checkpoint = mutated(rng.choice(VALID_CHECKPOINTS), rng) if rng.random() < 0.8 else rng.choice(AWKWARD_VALUES)
        sent.append(((spec["name"], checkpoint), _post_json(client, "/api/trace", {"spec": spec, "checkpoint": checkpoint})))
    _assert_no_server_errors(sent)
    assert 0 < sum(response.status_code == 200 for _, response in sent) < len(sent)


def test_fuzz_snapshot_bodies(client):
    rng = random.Random("snapshots")
    sent = []
    for _ in range(FUZZ_CASES["snapshot"]):
        valid = {"spec": presets.get(rng.choice(CHECKPOINT_PRESETS)), "checkpoint": rng.choice(VALID_CHECKPOINTS + [None]),
                 "view": {"step": rng.randrange(12), "selected": "n1", "zoom": {"k": 1, "x": 0, "y": 0}}, "title": "t"}
        body = mutated(valid, rng)
        response = _post_json(client, "/api/snapshots", body)
        sent.append((body, response))
        if response.status_code == 201:
            snapshot_id = response.get_json()["id"]
            sent.append((snapshot_id, client.get(f"/api/snapshots/{snapshot_id}")))
            if rng.random() < 0.3:
                sent.append((snapshot_id, _post_json(client, f"/api/snapshots/{snapshot_id}/copy", mutated({"a": 1}, rng))))
    _assert_no_server_errors(sent)
    assert any(response.status_code == 201 for _, response in sent)


def test_fuzz_session_bodies(client):
    rng = random.Random("sessions")
    valid = {"spec": presets.get("residual-unit"), "checkpoint": {"policy": "sqrt"},
             "view": {"step": 3, "selected": "n2", "zoom": {"k": 1.5, "x": 0, "y": 2}},
             "history": {"undo": [{"spec": {"name": "a"}, "label": "edit"}], "redo": [{"spec": {}}]}}
    sent = []
    for _ in range(FUZZ_CASES["session"]):
        body = mutated(valid, rng)
        response = client.put("/api/session", data=json.dumps(body), content_type="application/json")
        sent.append((body, response))
        if response.status_code == 200:
            assert client.get("/api/session").get_json() == response.get_json()
    _assert_no_server_errors(sent)
    assert any(response.status_code == 200 for _, response in sent)


def test_fuzz_ledger_queries(client):
    rng = random.Random("ledger")
    sent = []
    for _ in range(FUZZ_CASES["ledger"]):
        pairs = [(name, str(getattr(LedgerConfig, name))) for name in rng.sample(list(LEDGER_FIELDS), rng.randrange(1, 6))]
        for _ in range(rng.choice([1, 1, 2, 3])):
            index = rng.randrange(len(pairs))
            roll = rng.random()
            if roll < 0.6:
                pairs[index] = (pairs[index][0], rng.choice(AWKWARD_QUERY_VALUES))
            elif roll < 0.75:
                pairs.append(pairs[index])                                 # a field given twice
            elif roll < 0.9:
                pairs.append((rng.choice(["colour", "", "layers[0]", "\u202e"]), "1"))
            else:
                del pairs[index]
                pairs = pairs or [("layers", "2")]
        query = urllib.parse.urlencode(pairs)
        sent.append((query, client.get(f"/api/ledger?{query}")))
    _assert_no_server_errors(sent)
    assert 0 < sum(response.status_code == 200 for _, response in sent) < len(sent)


def test_the_fuzz_sends_at_least_two_thousand_requests():
    assert FUZZ_TOTAL >= 2000
