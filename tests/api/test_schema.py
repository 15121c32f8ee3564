"""GET /api/schema: the field declarations and caps, as validation uses them."""
import pytest

from backend.models import SpecError, validate_spec
from backend.models.caps import CAPS
from backend.models.kinds import LAYER_KINDS


def field(entries, name):
    return next(entry for entry in entries if entry["name"] == name)


def kind(schema, name):
    return next(entry for entry in schema["layers"] if entry["type"] == name)


def test_schema_lists_every_layer_kind_with_its_fields_and_help(client):
    schema = client.get("/api/schema").get_json()
    assert [entry["type"] for entry in schema["layers"]] == list(LAYER_KINDS)
    linear = kind(schema, "linear")
    assert linear["params"] and linear["help"]
    out = field(linear["fields"], "out")
    assert (out["type"], out["min"], out["max"], out["cap"], out["required"]) == ("integer", 1, 4096, "width", True)
    assert field(linear["fields"], "frozen")["type"] == "boolean"
    assert "frozen" not in {f["name"] for f in kind(schema, "relu")["fields"]}
    assert kind(schema, "repeat")["wrapper"] and kind(schema, "repeat")["layers"] == [{"type": "relu"}]
    assert all(entry["help"] for each in schema["layers"] for entry in each["fields"])


def test_schema_top_level_fields_input_loss_and_optimizer(client):
    schema = client.get("/api/schema").get_json()
    batch = field(schema["fields"], "batch")
    assert (batch["max"], batch["cap"]) == (CAPS["batch"], "batch")
    assert field(schema["fields"], "dtype")["options"] == ["float32", "float64", "float16"]
    assert list(schema["input"]["options"]) == ["features", "tokens"]
    assert field(schema["input"]["options"]["tokens"]["fields"], "seq")["max"] == CAPS["seq"]
    assert field(schema["loss"]["options"]["mse"]["fields"], "target")["options"] == ["square", "zeros", "random"]
    adamw = schema["optimizer"]["options"]["adamw"]["fields"]
    assert field(adamw, "weight_decay")["default"] == 0.01 and field(adamw, "betas")["default"] == [0.9, 0.999]
    assert schema["caps"] == CAPS


def test_a_cap_changed_in_python_moves_the_schema_and_the_check_together(client, monkeypatch):
    monkeypatch.setitem(CAPS, "batch", 300)
    schema = client.get("/api/schema").get_json()
    assert field(schema["fields"], "batch")["max"] == 300
    spec = {"batch": 301, "input": {"kind": "features", "size": 1}, "layers": [{"type": "linear", "out": 1}]}
    with pytest.raises(SpecError) as error:
        validate_spec(spec)
    assert "300" in error.value.problems[0]["message"] and error.value.problems[0]["path"] == "batch"
    assert validate_spec({**spec, "batch": 300})["batch"] == 300


def test_every_declared_default_is_a_valid_layer():
    """A layer made from the schema's defaults (as the editor makes a new one) validates as is."""
    for name, declared in LAYER_KINDS.items():
        layer = {"type": name, **{f.name: f.default for f in declared.fields if not f.optional}}
        if declared.inner is not None:
            layer["layers"] = list(declared.inner)
        attends = name in ("attention", "transformer_block")
        tokens = declared.reads_tokens or attends
        spec = {"input": {"kind": "tokens", "vocab": 50, "seq": 4} if tokens else {"kind": "features", "size": 16},
                "layers": ([{"type": "embedding", "dim": 16}] if attends else []) + [layer]
                + [{"type": "linear", "out": 2}]}
        assert validate_spec(spec)["layers"][-2]["type"] == name


def test_the_gradient_penalty_is_a_declared_loss_group_with_its_cap(client, monkeypatch):
    from backend.models.caps import CAPS
    monkeypatch.setitem(CAPS, "penalty_weight", 50.0)
    loss = client.get("/api/schema").get_json()["loss"]
    (penalty,) = [group for group in loss["groups"] if group["name"] == "gradient_penalty"]
    assert penalty["optional"] is True and "WGAN-GP" in penalty["help"]
    (weight,) = penalty["fields"]
    assert weight == {**weight, "name": "weight", "type": "number", "default": 10.0, "min": 0, "max": 50.0,
                      "cap": "penalty_weight"}
    spec = {"batch": 2, "input": {"kind": "features", "size": 3}, "layers": [{"type": "linear", "out": 2}],
            "loss": {"type": "mse", "gradient_penalty": {"weight": 60}}}
    problems = client.post("/api/trace", json={"spec": spec}).get_json()["problems"]
    assert problems == [{"path": "loss.gradient_penalty.weight",
                         "message": "must be a number from 0 to 50 (WGAN-GP uses 10); got 60"}]
