"""The trace document against docs/trace.schema.json (schema_version 2), over the HTTP API and the command line."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from backend.models import presets
from backend.trace.document_versions import unpack
from tests.schemas import assert_matches_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "trace.schema.json").read_text())


@pytest.mark.parametrize("preset", list(presets.PRESETS))
def test_every_preset_trace_validates_against_the_schema(client, preset):
    response = client.post("/api/trace", json={"spec": presets.get(preset)})
    assert response.status_code == 200
    assert_matches_schema(response.get_json(), SCHEMA)


def test_presets_endpoint_lists_every_preset_with_a_spec(client):
    listed = client.get("/api/presets").get_json()
    assert [p["id"] for p in listed] == list(presets.PRESETS)
    assert all(p["description"] and p["spec"]["layers"] for p in listed)


def test_a_bad_spec_gets_every_problem_with_its_path(client):
    spec = presets.get("lab1-mlp")
    spec["layers"][0]["out"] = 0
    spec["batch"] = "many"
    spec["layers"].append({"type": "conv2d"})
    response = client.post("/api/trace", json={"spec": spec})
    assert response.status_code == 400
    paths = {p["path"]: p["message"] for p in response.get_json()["problems"]}
    assert paths["layers[0].out"].startswith("must be a whole number from 1 to 4,096; got ")
    assert "batch" in paths and "layers[3].type" in paths


def test_a_spec_over_the_byte_cap_is_refused_with_the_cap_named(client):
    spec = {"batch": 4096, "input": {"kind": "features", "size": 2048},
            "layers": [{"type": "repeat", "times": 8, "layers": [{"type": "linear", "out": 2048}, {"type": "relu"}]}]}
    response = client.post("/api/trace", json={"spec": spec})
    assert response.status_code == 413
    body = response.get_json()
    assert body["cap"] == "total bytes (256 MiB)" and body["requested"] > body["limit"]
    assert "256 MiB" in body["error"]


@pytest.mark.parametrize("body", ["not json", "[]", "null", '{"spec": 3}', '{"spec": {"layers": "x"}}',
                                  '{"nospec": 1}', '{"spec": {"layers": [{"type": "repeat", "times": 1e9}]}}',
                                  '{"spec": {"input": {"kind": "tokens", "vocab": -1}, "layers": []}}',
                                  '{"spec": {"input": {"kind": "features", "size": 2}, "layers": [{"type": "relu"}]},'
                                  ' "checkpoint": [1, 2]}',
                                  '{"spec": {"input": {"kind": "features", "size": 2}, "layers": [{"type": "relu"}]},'
                                  ' "checkpoint": {"policy": "optimal", "budget_bytes": "lots"}}'])
def test_garbage_gets_a_4xx_never_a_500(client, body):
    response = client.post("/api/trace", data=body, content_type="application/json")
    assert 400 <= response.status_code < 500
    assert "error" in response.get_json()


def test_command_line_prints_the_document():
    result = subprocess.run([sys.executable, "-m", "backend.driver", "seed-tape"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    document = json.loads(result.stdout)
    assert_matches_schema(document, SCHEMA)
    assert document["schema_version"] == 2 and len(unpack(document)["tape"]) == 5
    bad = subprocess.run([sys.executable, "-m", "backend.driver", "no-such-preset"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "neither a preset nor a file" in bad.stderr


@pytest.mark.parametrize("preset,checkpoint", [("deep-mlp", {"policy": "sqrt"}),
                                               ("transformer-tiny", {"policy": "every_k", "k": 2})])
def test_a_checkpointed_trace_is_the_checkpointed_run(client, preset, checkpoint):
    response = client.post("/api/trace", json={"spec": presets.get(preset), "checkpoint": checkpoint})
    assert response.status_code == 200
    assert_matches_schema(response.get_json(), SCHEMA)
    document = unpack(response.get_json())
    schedule = document["schedule"]
    assert schedule["policy"] == checkpoint["policy"]
    assert document["summary"]["peak_bytes"] == schedule["executed_peak_bytes"] == schedule["predicted_peak_bytes"]
    phases = {step["phase"] for step in document["steps"]}
    assert {"forward", "backward", "recompute"} <= phases
    assert [e["op"] for e in document["tape"]].count("checkpoint") == len(schedule["block_regions"])
    assert {s["policy"] for s in document["schedules"]} >= {"none", "sqrt", "selective"}
    assert all(s["grads_match"] and s["executed_peak_bytes"] == s["predicted_peak_bytes"] for s in document["schedules"])
    assert document["pareto"] and all(p["predicted_peak_bytes"] > 0 for p in document["pareto"])


def test_a_bad_checkpoint_request_names_the_field(client):
    response = client.post("/api/trace", json={"spec": presets.get("deep-mlp"),
                                               "checkpoint": {"policy": "every_k", "k": 99}})
    assert response.status_code == 400
    assert response.get_json()["problems"][0]["path"] == "checkpoint.k"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # float16 overflows on purpose here
def test_a_loss_that_overflows_is_valid_json_and_can_be_shared(client):
    spec = {"dtype": "float16", "init_std": 10.0, "input": {"kind": "features", "size": 1024},
            "layers": [{"type": "linear", "out": 1024}, {"type": "linear", "out": 1024}], "loss": {"type": "sum"}}
    response = client.post("/api/trace", json={"spec": spec})
    assert response.status_code == 200
    document = json.loads(response.data)              # strict JSON: no Infinity
    assert document["loss"] is None and document["loss_text"] in ("inf", "-inf", "nan")
    shared = client.post("/api/snapshots", json={"spec": spec, "view": {"step": 0}})
    assert shared.status_code == 201


def test_a_body_nested_too_deep_is_a_400_not_a_crash(client):
    body = '{"spec": ' + "[" * 5000 + "]" * 5000 + "}"
    response = client.post("/api/trace", data=body, content_type="application/json")
    assert response.status_code == 400
