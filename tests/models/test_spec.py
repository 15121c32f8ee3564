"""Spec validation: every problem with its path, normalization, caps refused before allocating."""
import pytest

from backend.models import CapError, Model, SpecError, presets, validate_spec
from backend.models.spec import MAX_TAPE_ENTRIES


def problems_of(spec):
    with pytest.raises(SpecError) as error:
        validate_spec(spec)
    return {p["path"]: p["message"] for p in error.value.problems}


def test_every_preset_validates_and_builds():
    for preset in presets.PRESETS:
        spec = validate_spec(presets.get(preset))
        model = Model(spec)
        assert model.params and model.blocks


def test_defaults_are_filled_in():
    spec = validate_spec({"input": {"kind": "features", "size": 3}, "layers": [{"type": "linear", "out": 2}]})
    assert spec["dtype"] == "float32" and spec["loss"] == {"type": "sum"} and spec["layers"][0]["bias"] is True


def test_all_problems_are_reported_at_once_with_paths():
    found = problems_of({"batch": 0, "dtype": "int8", "input": {"kind": "features", "size": 2},
                         "layers": [{"type": "linear", "out": 0}, {"type": "dropout", "p": 1.5},
                                    {"type": "repeat", "times": 2, "layers": [{"type": "linear", "out": -3}]}],
                         "loss": {"type": "mse", "target": "cubes"}, "extra": 1})
    assert found["layers[0].out"] == "must be a positive integer ≤ 4,096"
    assert {"batch", "dtype", "layers[1].p", "layers[2].layers[0].out", "loss.target", "extra"} <= set(found)


def test_shape_problems_name_the_layer():
    found = problems_of({"input": {"kind": "tokens", "vocab": 10, "seq": 4},
                         "layers": [{"type": "embedding", "dim": 6}, {"type": "attention", "heads": 4}]})
    assert "must divide the width 6" in found["layers[1].heads"]
    found = problems_of({"input": {"kind": "features", "size": 2},
                         "layers": [{"type": "residual", "layers": [{"type": "linear", "out": 3}]}]})
    assert "must keep the shape [1, 2]" in found["layers[0].layers"]
    found = problems_of({"input": {"kind": "tokens", "vocab": 10, "seq": 4}, "layers": [{"type": "relu"}]})
    assert "embedding" in found["layers[0]"]


def test_layer_names_are_text_with_a_length_cap():
    spec = validate_spec({"input": {"kind": "features", "size": 1},
                          "layers": [{"type": "linear", "out": 1, "name": "<img src=x onerror=alert(1)>"}]})
    assert spec["layers"][0]["name"] == "<img src=x onerror=alert(1)>"
    assert "layers[0].name" in problems_of({"input": {"kind": "features", "size": 1},
                                            "layers": [{"type": "relu", "name": "n" * 81}]})


@pytest.mark.parametrize("spec,cap", [
    ({"batch": 4096, "input": {"kind": "features", "size": 4096}, "layers": [{"type": "linear", "out": 1}]},
     "elements per tensor"),
    ({"input": {"kind": "features", "size": 4},
      "layers": [{"type": "repeat", "times": 64, "layers": [
          {"type": "repeat", "times": 64, "layers": [{"type": "linear", "out": 4}, {"type": "tanh"}] * 2}]}]},
     "tape entries"),
    ({"batch": 4096, "input": {"kind": "features", "size": 1024},
      "layers": [{"type": "repeat", "times": 16, "layers": [{"type": "linear", "out": 1024}]}]},
     "total bytes (256 MiB)"),
])
def test_caps_are_refused_by_name_before_anything_is_allocated(spec, cap):
    with pytest.raises(CapError) as error:
        validate_spec(spec)
    assert error.value.cap == cap and error.value.requested > error.value.limit
    assert cap in error.value.message


def test_tape_entry_cap_is_twenty_thousand():
    assert MAX_TAPE_ENTRIES == 20_000


@pytest.mark.parametrize("layer", [{"type": ["linear"]}, {"type": {"a": 1}}, {"type": None}, "relu", 7])
def test_malformed_layer_types_are_problems_not_crashes(layer):
    found = problems_of({"input": {"kind": "features", "size": 1}, "layers": [layer]})
    assert any(path.startswith("layers[0]") for path in found)


def test_a_model_without_parameters_is_refused_with_a_reason():
    found = problems_of({"input": {"kind": "features", "size": 2}, "layers": [{"type": "relu"}]})
    assert "no parameters" in found["layers"]
