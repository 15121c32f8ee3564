"""The training-step knobs over HTTP: accumulate, precision and adam8bit in GET /api/schema as validation uses
them; bad values answered 400 naming the field and what to do; the planner's refusal; the work price."""
import pytest

from backend.driver.work import ENTRY_US, FLOAT16_MATMUL_FLOP_US, MATMUL_FLOP_US, price
from backend.models import presets, validate_spec
from backend.models.caps import CAPS
from backend.models.spec import plan
from backend.trace.document_versions import unpack


def problems(response):
    assert response.status_code == 400, response.get_json()
    return {p["path"]: p["message"] for p in response.get_json()["problems"]}


def spec(**extra):
    base = presets.get("seed-tape")
    base.update(extra)
    return base


def field(entries, name):
    return next(entry for entry in entries if entry["name"] == name)


def test_schema_declares_the_knobs_validation_reads(client, monkeypatch):
    schema = client.get("/api/schema").get_json()
    accumulate = field(schema["fields"], "accumulate")
    assert (accumulate["min"], accumulate["max"], accumulate["cap"], accumulate["default"]) == (1, 16, "accumulate", 1)
    precision = schema["precision"]
    assert precision["key"] == "compute" and set(precision["options"]) == {"float16", "bfloat16"}
    scale = field(precision["options"]["float16"]["fields"], "loss_scale")
    assert scale["options"] == ["dynamic", "none"] and scale["default"] == "dynamic" and scale["number_max"] == 2 ** 24
    assert scale["number_min"] == 1 and scale["number_default"] == 2 ** 16       # the dynamic policy's start
    assert field(precision["options"]["bfloat16"]["fields"], "loss_scale")["default"] == "none"
    assert "adam8bit" in schema["optimizer"]["options"]
    monkeypatch.setitem(CAPS, "accumulate", 8)
    assert field(client.get("/api/schema").get_json()["fields"], "accumulate")["max"] == 8
    assert "accumulate" in problems(client.post("/api/trace", json={"spec": spec(accumulate=16)}))


@pytest.mark.parametrize("extra,path,words", [
    ({"accumulate": 3}, "accumulate", "must divide batch (64) into equal micro-batches: try 1, 2, 4, 8, 16"),
    ({"accumulate": 0}, "accumulate", "must be a whole number from 1 to 16; got 0"),
    ({"accumulate": 17}, "accumulate", "from 1 to 16; got 17"),
    ({"precision": {"compute": "float8"}}, "precision.compute", 'must be one of "float16", "bfloat16"'),
    ({"precision": {"compute": "float16", "loss_scale": "auto"}}, "precision.loss_scale",
     'must be "dynamic", "none" or a number from 1 to 16,777,216'),
    ({"precision": {"compute": "float16", "loss_scale": 0.5}}, "precision.loss_scale", "a number from 1"),
    ({"precision": {"compute": "float16", "growth_interval": 0}}, "precision.growth_interval", "whole number"),
    ({"precision": {"compute": "float16", "scale": 2}}, "precision.scale", "is not a field here"),
    ({"precision": {"compute": "float16"}, "dtype": "float64"}, "precision", 'needs dtype "float32"'),
])
def test_bad_knobs_are_400s_naming_the_field(client, extra, path, words):
    found = problems(client.post("/api/trace", json={"spec": spec(**extra)}))
    assert path in found and words in found[path], found


def test_a_checkpoint_with_accumulate_or_precision_is_planned_and_exact(client):
    for extra in ({"accumulate": 2}, {"precision": {"compute": "bfloat16"}}):
        response = client.post("/api/trace", json={"spec": spec(**extra), "checkpoint": {"policy": "sqrt"}})
        assert response.status_code == 200, response.get_json()
        schedule = unpack(response.get_json())["schedule"]
        assert schedule["grads_match"] is True, extra
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"], extra


def test_the_knob_presets_trace_over_http(client):
    listed = {p["id"]: p for p in client.get("/api/presets").get_json()}
    for preset_id in ("grad-accumulation", "mixed-precision"):
        response = client.post("/api/trace", json={"spec": listed[preset_id]["spec"]})
        assert response.status_code == 200, response.get_json()
    document = unpack(response.get_json())
    assert document["summary"]["loss_scale"]["scale"] == 65536.0
    assert any(t.get("underflow") for t in document["tensors"])


def test_the_work_price_counts_micro_batches_casts_and_float16_matmuls():
    plain = validate_spec(presets.get("deep-mlp"))
    tally = plan(plain)
    accumulated = validate_spec({**presets.get("deep-mlp"), "accumulate": 4})
    assert price(accumulated).work_us - price(plain).work_us == pytest.approx(3 * ENTRY_US * tally.entries, abs=2)
    mixed = validate_spec({**presets.get("deep-mlp"), "precision": {"compute": "float16"}})
    extra = price(mixed).work_us - price(plain).work_us
    assert extra >= ENTRY_US * tally.entries + (FLOAT16_MATMUL_FLOP_US - MATMUL_FLOP_US) * tally.matmul_flops - 2
    brain = validate_spec({**presets.get("deep-mlp"), "precision": {"compute": "bfloat16"}})
    assert price(brain).work_us == price(mixed).work_us       # ml_dtypes' bfloat16 is no faster end to end
