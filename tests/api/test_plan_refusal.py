"""The planner's refusal is one sentence per reason: the 400 a checkpoint request gets and the plain trace's
summary.plan_refusal say the same thing (the page reads the field instead of asking for the 400)."""
import json
from pathlib import Path

import pytest

from backend.models import presets
from backend.trace.document_versions import unpack
from tests.schemas import assert_matches_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = {version: json.loads((ROOT / "docs" / name).read_text())
           for version, name in ((1, "trace.v1.schema.json"), (2, "trace.schema.json"))}

# One preset per reason, and the words that say which reason it is (gradient-penalty plans: its checkpoint
# regions are predicted through both backwards, tests/planner/test_gradient_penalty_plans.py).
REASONS = {
    "version-error": "backward stops at step",
}


@pytest.mark.parametrize("preset,words", REASONS.items())
def test_the_400_and_the_document_give_the_same_sentence(client, preset, words):
    spec = presets.get(preset)
    traced = client.post("/api/trace", json={"spec": spec})
    assert traced.status_code == 200, traced.get_json()
    assert_matches_schema(traced.get_json(), SCHEMAS[2])
    document = unpack(traced.get_json())
    assert_matches_schema({**document, "schema_version": 1}, SCHEMAS[1])
    stated = document["summary"]["plan_refusal"]
    assert words in stated

    refused = client.post("/api/trace", json={"spec": spec, "checkpoint": {"policy": "none"}})
    assert refused.status_code == 400, refused.get_json()
    assert refused.get_json()["problems"] == [{"path": "checkpoint", "message": stated}]


@pytest.mark.parametrize("preset", ["lab1-mlp", "gradient-penalty"])
def test_a_plannable_run_states_null_and_its_plan_runs(client, preset):
    spec = presets.get(preset)
    plain = unpack(client.post("/api/trace", json={"spec": spec}).get_json())
    assert plain["summary"]["plan_refusal"] is None
    planned = client.post("/api/trace", json={"spec": spec, "checkpoint": {"policy": "none"}})
    assert planned.status_code == 200
    assert unpack(planned.get_json())["summary"]["plan_refusal"] is None


def test_accumulate_and_precision_together_plan_with_bitwise_gradients(client):
    spec = {**presets.get("deep-mlp"), "accumulate": 2, "precision": {"compute": "bfloat16"}}
    assert unpack(client.post("/api/trace", json={"spec": spec}).get_json())["summary"]["plan_refusal"] is None
    planned = client.post("/api/trace", json={"spec": spec, "checkpoint": {"policy": "sqrt"}})
    assert planned.status_code == 200, planned.get_json()
    schedule = unpack(planned.get_json())["schedule"]
    assert schedule["grads_match"] is True
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]


def test_a_document_without_the_field_still_validates(client):
    packed = client.post("/api/trace", json={"spec": presets.get("lab1-mlp")}).get_json()
    del packed["summary"]["plan_refusal"]
    assert_matches_schema(packed, SCHEMAS[2])
    posted = client.post("/api/traces", json=packed)
    assert posted.status_code == 201, posted.get_json()
