"""Spec validation: every problem with its path, normalization, caps refused before allocating."""
import pytest

from backend.models import CapError, Model, SpecError, presets, validate_spec
from backend.models.caps import CAPS


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
    assert found["layers[0].out"] == "must be a whole number from 1 to 4,096; got 0"
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
    assert CAPS["tape_entries"] == 20_000


@pytest.mark.parametrize("layer", [{"type": ["linear"]}, {"type": {"a": 1}}, {"type": None}, "relu", 7])
def test_malformed_layer_types_are_problems_not_crashes(layer):
    found = problems_of({"input": {"kind": "features", "size": 1}, "layers": [layer]})
    assert any(path.startswith("layers[0]") for path in found)


def test_a_model_without_parameters_is_refused_with_a_reason():
    found = problems_of({"input": {"kind": "features", "size": 2}, "layers": [{"type": "relu"}]})
    assert "no parameters" in found["layers"]


def test_optimizers_get_torchs_defaults():
    def optimizer(config):
        return validate_spec({"input": {"kind": "features", "size": 2}, "layers": [{"type": "linear", "out": 1}],
                              "optimizer": config})["optimizer"]
    assert optimizer({"type": "none"}) == {"type": "none"}
    assert optimizer({"type": "sgd"}) == {"type": "sgd", "lr": 1e-3, "momentum": 0.0, "weight_decay": 0.0,
                                          "nesterov": False}
    assert optimizer({"type": "adam", "lr": 0.01}) == {"type": "adam", "lr": 0.01, "betas": [0.9, 0.999],
                                                      "weight_decay": 0.0}
    assert optimizer({"type": "adamw"}) == {"type": "adamw", "lr": 1e-3, "betas": [0.9, 0.999], "weight_decay": 0.01}
    assert optimizer({"type": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4, "nesterov": True}) == {
        "type": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4, "nesterov": True}
    assert optimizer({"type": "adamw", "betas": [0.8, 0.95], "weight_decay": 0.1})["betas"] == [0.8, 0.95]


def test_optimizer_built_from_the_spec_carries_its_hyperparameters():
    import backend.tape as T
    base = {"input": {"kind": "features", "size": 2}, "layers": [{"type": "linear", "out": 1}]}
    sgd = Model(validate_spec({**base, "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True}}))
    assert type(sgd.optimizer) is T.SGD and (sgd.optimizer.lr, sgd.optimizer.momentum, sgd.optimizer.nesterov) == (0.1, 0.9, True)
    adamw = Model(validate_spec({**base, "optimizer": {"type": "adamw", "betas": [0.8, 0.95]}})).optimizer
    assert type(adamw) is T.AdamW and (adamw.betas, adamw.weight_decay) == ((0.8, 0.95), 0.01)
    adam = Model(validate_spec({**base, "optimizer": {"type": "adam", "weight_decay": 0.1}})).optimizer
    assert type(adam) is T.Adam and adam.weight_decay == 0.1 and not adam.decoupled_weight_decay


@pytest.mark.parametrize("config,expected", [
    ({"type": "sgd", "momentum": 1.0}, {"optimizer.momentum": "must be a number from 0, below 1 (0.9 is usual; 0 turns momentum off)"}),
    ({"type": "sgd", "momentum": -0.1, "lr": 11}, {"optimizer.momentum": "below 1", "optimizer.lr": "from 0 to 10 (such as 0.001"}),
    ({"type": "sgd", "weight_decay": "lots"}, {"optimizer.weight_decay": "must be a number from 0 to 1 (0 turns it off"}),
    ({"type": "sgd", "nesterov": True}, {"optimizer.nesterov": "needs momentum: set optimizer.momentum above 0"}),
    ({"type": "sgd", "nesterov": "yes"}, {"optimizer.nesterov": "must be true or false"}),
    ({"type": "adamw", "betas": 0.9}, {"optimizer.betas": "must be a pair of two numbers from 0, below 1, such as [0.9, 0.999]"}),
    ({"type": "adam", "betas": [0.9, 0.999, 0.5]}, {"optimizer.betas": "must be a pair of two numbers"}),
    ({"type": "adamw", "betas": [0.9, 1.0]}, {"optimizer.betas[1]": "must be a number from 0, below 1 (the moments' decay rates"}),
    ({"type": "adam", "betas": [-0.1, True]}, {"optimizer.betas[0]": "below 1", "optimizer.betas[1]": "below 1"}),
    ({"type": "sgd", "betas": [0.9, 0.99]}, {"optimizer.betas": 'is a field of adam, adamw and adam8bit, not sgd: remove it, or set optimizer.type to "adam"'}),
    ({"type": "adamw", "momentum": 0.9}, {"optimizer.momentum": 'is a field of sgd, not adamw: remove it, or set optimizer.type to "sgd"'}),
    ({"type": "none", "weight_decay": 0.1}, {"optimizer.weight_decay": "is a field of sgd, adam, adamw and adam8bit, not none"}),
    ({"type": "adamw", "eps": 1e-8}, {"optimizer.eps": "is not a field here; the fields here are betas, lr, type, weight_decay"}),
    ({"type": "lion"}, {"optimizer.type": 'must be one of "none", "sgd", "adam", "adamw", "adam8bit"'}),
])
def test_bad_optimizer_fields_are_problems_at_their_paths(config, expected):
    found = problems_of({"input": {"kind": "features", "size": 2}, "layers": [{"type": "linear", "out": 1}],
                         "optimizer": config})
    assert set(found) == set(expected), found
    for path, text in expected.items():
        assert text in found[path], (path, found[path])
