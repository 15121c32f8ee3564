"""POST /api/traces: a good document is stored and its link opens; every inconsistency is a 4xx naming its path;
oversize is 413, a burst is 429, and anything but this origin's JSON is refused."""
import copy
import json

import pytest

from backend.driver import trace_spec
from backend.models import presets
from backend.models.caps import CAPS
from backend.trace.document_versions import pack, unpack
from tests.settings import GENEROUS_RATE_LIMITS


@pytest.fixture(scope="module")
def document():
    """A real document (our engine's transformer-tiny, checkpointed): what the recorder or an import produces."""
    spec = next(p["spec"] for p in presets.listing() if p["id"] == "transformer-tiny")
    return json.loads(json.dumps(trace_spec(spec, {"policy": "sqrt"}, wait_s=120.0, deadline_s=120.0)))


def _post(client, body, **headers):
    return client.post("/api/traces", json=body, headers=headers)


def test_a_good_document_is_stored_and_its_link_opens(client, document):
    response = _post(client, document)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["url"] == f"/s/{body['id']}" and response.headers["Location"] == body["url"]
    page = client.get(body["url"])
    assert page.status_code == 200 and b'data-read-only="true"' in page.data
    stored = client.get(f"/api/snapshots/{body['id']}").get_json()
    assert stored["trace"] == json.loads(json.dumps(pack(document)))       # stored as schema_version 2
    assert stored["view"]["step"] == 0 and stored["checkpoint"] is None
    assert stored["title"] == document["spec"]["name"]


def test_a_version_2_document_as_the_command_line_writes_it_is_checked_and_stored_as_it_came(client, document):
    packed = json.loads(json.dumps(pack(document)))
    response = _post(client, packed)
    assert response.status_code == 201, response.get_json()
    stored = client.get(f"/api/snapshots/{response.get_json()['id']}").get_json()
    assert stored["trace"] == packed and unpack(stored["trace"])["summary"] == document["summary"]


def test_a_version_2_document_is_checked_on_its_expanded_records(client, document):
    packed = json.loads(json.dumps(pack(document)))
    packed["summary"]["peak_bytes"] += 1
    response = _post(client, packed)
    assert response.status_code == 400
    assert "summary.peak_bytes" in {p["path"] for p in response.get_json()["problems"]}


def test_a_version_2_table_whose_columns_do_not_line_up_is_a_400_not_a_500(client, document):
    packed = json.loads(json.dumps(pack(document)))
    packed["tensors"]["count"] += 5            # more rows than any column holds
    response = _post(client, packed)
    assert response.status_code == 400, response.get_json()


def test_an_unknown_schema_version_is_refused_by_name(client, document):
    response = _post(client, {**document, "schema_version": 7})
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"] == "schema_version"


def test_an_imported_documents_title_names_its_model_and_torch(client, document):
    imported = {**copy.deepcopy(document), "source": {"kind": "torch", "torch_version": "2.13.0", "model": "GPT"}}
    body = _post(client, imported).get_json()
    assert client.get(f"/api/snapshots/{body['id']}").get_json()["title"] == "GPT (torch 2.13.0)"


def _first(document, name, predicate):
    return next(i for i, item in enumerate(document[name]) if predicate(item))


# Each makes one figure of a copy wrong and returns the path the 400 must name.
BREAKS = {
    "duplicate tensor id": lambda d: (d["tensors"][1].update(id=d["tensors"][0]["id"]), "tensors[1].id")[1],
    "step index out of place": lambda d: (d["steps"][2].update(index=7), "steps[2].index")[1],
    "freed past the last step": lambda d: (d["storages"][5].update(freed=len(d["steps"]) + 3), "storages[5].freed")[1],
    "freed before born": lambda d: (d["storages"][5].update(born=4, freed=2), "storages[5].freed")[1],
    "born past the last step": lambda d: (d["tensors"][3].update(born=len(d["steps"])), "tensors[3].born")[1],
    "bytes not the storage's": lambda d: (d["tensors"][0].update(nbytes=d["tensors"][0]["nbytes"] + 4), "tensors[0].nbytes")[1],
    "shape bigger than its storage": lambda d: (d["tensors"][0].update(shape=[1000, 1000]), "tensors[0].shape")[1],
    "unknown dtype": lambda d: (d["tensors"][0].update(dtype="float128"), "tensors[0].dtype")[1],
    "tensor in a storage that is not there": lambda d: (d["tensors"][0].update(storage=10**6), "tensors[0].storage")[1],
    "tape input that does not resolve": lambda d: (d["tape"][0]["inputs"].__setitem__(0, 10**6), "tape[0].inputs[0]")[1],
    "saved tensor that does not resolve": lambda d: _saved_missing(d),
    "sweep entry past the tape": lambda d: (d["sweep"][0].update(entry=len(d["tape"]) + 1), "sweep[0].entry")[1],
    "edge from nowhere": lambda d: (d["graph"]["edges"][0].update(source="e999999"), "graph.edges[0].source")[1],
    "live bytes off by one": lambda d: (d["steps"][3].update(live_bytes=d["steps"][3]["live_bytes"] + 1), "steps[3].live_bytes")[1],
    "by-kind not the intervals'": lambda d: (d["steps"][3]["by_kind"].update(grad=d["steps"][3]["by_kind"]["grad"] + 8), "steps[3].by_kind.grad")[1],
    "peak not the series' max": lambda d: (d["summary"].update(peak_bytes=d["summary"]["peak_bytes"] - 1), "summary.peak_bytes")[1],
    "peak step not at the peak": lambda d: (d["summary"].update(peak_step=0), "summary.peak_step")[1],
    "saved bytes made up": lambda d: (d["summary"].update(saved_bytes=d["summary"]["saved_bytes"] * 2), "summary.saved_bytes")[1],
    "holders not summing to the peak": lambda d: (d["summary"]["peak"]["holders"][0].update(bytes=0), "summary.peak.holders")[1],
    "missing tensors": lambda d: (d.pop("tensors"), "tensors")[1],
    "wrong schema version": lambda d: (d.update(schema_version=9), "schema_version")[1],
    "negative bytes": lambda d: (d["storages"][0].update(nbytes=-1), "storages[0].nbytes")[1],
    "bytes past int64": lambda d: (d["storages"][0].update(nbytes=10**30), "storages[0].nbytes")[1],
}


def _saved_missing(document):
    index = _first(document, "tape", lambda e: e["saved"])
    document["tape"][index]["saved"][0] = 10**6
    return f"tape[{index}].saved[0]"


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_inconsistency_is_a_400_naming_its_path(client, document, name):
    broken = copy.deepcopy(document)
    path = BREAKS[name](broken)
    response = _post(client, broken)
    assert response.status_code == 400, name
    body = response.get_json()
    assert path in [p["path"] for p in body["problems"]], (name, body["problems"][:5])
    assert all(p["message"] for p in body["problems"])


def test_an_inconsistent_document_stores_nothing(app, client, document):
    broken = copy.deepcopy(document)
    broken["summary"]["peak_bytes"] += 1
    assert _post(client, broken).status_code == 400
    from backend.store import current_db
    from backend.store.models import Snapshot
    with app.app_context():
        assert current_db().query(Snapshot).count() == 0


def test_a_body_over_the_upload_cap_is_413(make_app, document):
    client = make_app(TRACE_UPLOAD_MAX_BYTES=64 * 1024).test_client()
    response = _post(client, document)
    assert response.status_code == 413
    assert "byte" in response.get_json()["error"]


def test_the_default_upload_cap_is_above_the_site_wide_one(app, client, document):
    """The small GPT's document is ~0.8 MB; a 1.5 MB one (over MAX_CONTENT_LENGTH's 1 MiB) still gets in."""
    padded = copy.deepcopy(document)
    padded["engine_version"] = "x" * (1536 * 1024)
    assert len(json.dumps(padded)) > app.config["MAX_CONTENT_LENGTH"]
    assert _post(client, padded).status_code == 201


def test_a_list_over_its_count_cap_is_413_naming_it(client, document, monkeypatch):
    monkeypatch.setitem(CAPS, "posted_tensors", len(document["tensors"]) - 1)
    response = _post(client, document)
    assert response.status_code == 413
    body = response.get_json()
    assert body["cap"] == "tensors" and body["limit"] == len(document["tensors"]) - 1
    assert body["problems"][0]["path"] == "tensors"


def test_a_document_over_the_stored_cap_is_413(make_app, document):
    client = make_app(SNAPSHOT_MAX_STORED_BYTES=4096).test_client()
    response = _post(client, document)
    assert response.status_code == 413 and response.get_json()["cap"] == "snapshot_stored_bytes"


def test_a_burst_meets_the_rate_limit(make_app, document):
    client = make_app(RATE_LIMITS={**GENEROUS_RATE_LIMITS, "trace_upload": "2 per minute"}).test_client()
    assert [_post(client, document).status_code for _ in range(3)] == [201, 201, 429]


def test_another_sites_page_is_refused(client, document):
    assert _post(client, document, Origin="https://elsewhere.example").status_code == 403
    assert _post(client, document, **{"Sec-Fetch-Site": "cross-site"}).status_code == 403


def test_this_sites_page_is_let_in(client, document):
    assert _post(client, document, Origin="http://localhost", **{"Sec-Fetch-Site": "same-origin"}).status_code == 201


def test_a_form_or_text_body_is_refused(client, document):
    assert client.post("/api/traces", data={"document": json.dumps(document)}).status_code == 415
    assert client.post("/api/traces", data=json.dumps(document), content_type="text/plain").status_code == 415
    not_json = client.post("/api/traces", data="{not json", content_type="application/json")
    assert not_json.status_code == 400
    assert _post(client, [1, 2, 3]).status_code == 400


UNTYPED = {          # references the schema does not type: each, made an object, a list or a string, is a 400
    "graph.nodes[0].id": lambda d, v: d["graph"]["nodes"][0].update(id=v),
    "graph.nodes[0].entry": lambda d, v: d["graph"]["nodes"][0].update(entry=v),
    "graph.leaves[0].tensor": lambda d, v: d["graph"]["leaves"][0].update(tensor=v),
    "graph.edges[0].source": lambda d, v: d["graph"]["edges"][0].update(source=v),
    "graph.edges[0].tensor": lambda d, v: d["graph"]["edges"][0].update(tensor=v),
    "sweep[0].contributions[0].to": lambda d, v: d["sweep"][0]["contributions"][0].update(to=v),
    "sweep[0].adjoint.tensor": lambda d, v: d["sweep"][0]["adjoint"].update(tensor=v),
}


@pytest.mark.parametrize("value", [{"a": 1}, [1], "e0x", True])
@pytest.mark.parametrize("path", list(UNTYPED))
def test_an_untyped_reference_of_the_wrong_type_is_a_400_not_a_500(client, document, path, value):
    broken = copy.deepcopy(document)
    UNTYPED[path](broken, value)
    response = _post(client, broken)
    assert response.status_code == 400
    paths = [p["path"] for p in response.get_json()["problems"]]
    if path == "graph.nodes[0].id" and isinstance(value, str):          # a fine id, but the edges name e0
        assert any(p.startswith("graph.edges[") for p in paths)
    else:
        assert path in paths
