"""Snapshots with the real tracer: presets shared and read back, spec errors and caps as 4xx, mutated specs fuzzed."""
import random

import pytest

from backend.models import presets
from backend.tape import ENGINE_VERSION
from backend.trace import SCHEMA_VERSION
from backend.trace.document_versions import unpack
from tests.mutation import mutate_once


def _backward_step(trace):
    return next(index for index, step in enumerate(trace["steps"]) if step.get("phase") == "backward")


@pytest.mark.parametrize("preset_id", ["seed-tape", "lab1-mlp"])
def test_a_preset_shared_at_a_backward_step_reads_back(client, preset_id):
    spec = presets.get(preset_id)
    first = client.post("/api/snapshots", json={"spec": spec, "view": {"step": 0}})
    assert first.status_code == 201, first.get_json()
    trace = unpack(client.get(f"/api/snapshots/{first.get_json()['id']}").get_json()["trace"])
    step = _backward_step(trace)

    shared = client.post("/api/snapshots", json={"spec": spec, "view": {"step": step, "selected": "n1"}})
    body = client.get(f"/api/snapshots/{shared.get_json()['id']}").get_json()
    assert body["spec"] == spec
    assert body["view"] == {"step": step, "selected": "n1", "zoom": None}
    assert body["trace"]["schema_version"] == SCHEMA_VERSION
    assert body["trace"]["engine_version"] == ENGINE_VERSION
    assert body["schema_version"] == str(SCHEMA_VERSION) and body["engine_version"] == ENGINE_VERSION
    assert unpack(body["trace"])["steps"][step]["phase"] == "backward"


def test_an_invalid_spec_is_400_listing_its_problems(client):
    spec = presets.get("seed-tape")
    spec["batch"] = 10**9
    response = client.post("/api/snapshots", json={"spec": spec, "view": {"step": 0}})
    assert response.status_code == 400
    assert any(problem["path"].endswith("batch") for problem in response.get_json()["problems"])


def test_a_spec_over_a_cap_is_413_naming_the_cap(client):
    spec = presets.get("seed-tape")
    spec["input"]["size"] = 4096
    spec["layers"][0]["out"] = 4096  # a 4096 x 4096 weight: over the elements-per-tensor cap
    response = client.post("/api/snapshots", json={"spec": spec, "view": {"step": 0}})
    assert response.status_code == 413
    assert response.get_json()["cap"] and "cap" in response.get_json()["error"]


def test_a_step_past_the_trace_is_refused(client):
    spec = presets.get("seed-tape")
    response = client.post("/api/snapshots", json={"spec": spec, "view": {"step": 100_000}})
    assert response.status_code == 400 and response.get_json()["problems"][0]["path"] == "view.step"


AWKWARD = [None, True, -1, 0, 1.5, 10**12, "", "relu", "x" * 300, [], [1, "a"], {}, {"type": "linear"}]


@pytest.mark.parametrize("preset_id", ["seed-tape", "residual-unit", "transformer-tiny"])
def test_mutated_presets_never_cause_a_server_error(client, preset_id):
    rng = random.Random(preset_id)
    for _ in range(40):
        spec = mutate_once(presets.get(preset_id), rng, AWKWARD, grow=False)
        response = client.post("/api/snapshots", json={"spec": spec, "view": {"step": 0}})
        assert response.status_code in (201, 400, 413), (spec, response.get_data(as_text=True)[:500])


@pytest.mark.parametrize("checkpoint", [{"policy": "every_k", "k": 0}, {"policy": "teleport"}, "sqrt",
                                        {"policy": "manual", "recompute": ["x"]}, {"policy": "optimal"}])
def test_a_bad_checkpoint_is_a_400_naming_the_field(client, checkpoint):
    response = client.post("/api/snapshots", json={"spec": presets.get("deep-mlp"),
                                                          "checkpoint": checkpoint, "view": {"step": 0}})
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"].startswith("checkpoint")


RELU_FIRST = {"input": {"kind": "features", "size": 1}, "layers": [{"type": "relu"}, {"type": "linear", "out": 1}]}


@pytest.mark.parametrize("checkpoint", [{"policy": "sqrt"}, {"policy": "every_k", "k": 2}, {"policy": "selective"}])
def test_a_first_layer_without_parameters_takes_any_checkpoint(client, checkpoint):
    """Once a KeyError in the planner's predictor, a 500 from both routes."""
    traced = client.post("/api/trace", json={"spec": RELU_FIRST, "checkpoint": checkpoint})
    assert traced.status_code == 200, traced.get_data(as_text=True)[:300]
    schedule = traced.get_json()["schedule"]
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]
    shared = client.post("/api/snapshots", json={"spec": RELU_FIRST, "checkpoint": checkpoint, "view": {"step": 0}})
    assert shared.status_code == 201, shared.get_data(as_text=True)[:300]


def test_a_title_with_a_lone_surrogate_is_refused_before_tracing(client, monkeypatch):
    """Once a UnicodeEncodeError on INSERT, after the trace had run."""
    import backend.api.snapshots as snapshots_api
    calls = []
    monkeypatch.setattr(snapshots_api, "_trace_spec", lambda: lambda *args: calls.append(args))
    body = '{"spec": {"name": "m"}, "view": {"step": 0}, "title": "bad \\ud800 half"}'
    response = client.post("/api/snapshots", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"] == "title"
    assert calls == []
