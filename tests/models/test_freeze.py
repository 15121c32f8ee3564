"""Freezing half of a model as a spec edit (backend/models/freeze.py), and the two levers built on it."""
import numpy as np

from backend.models import presets, validate_spec
from backend.models.freeze import freeze_half, parameter_blocks
from backend.models.model import Model
from backend.planner.levers import levers
from backend.trace.run import record


def frozen_names(spec):
    return sorted(name for name, p in Model(spec).params.items() if not p.requires_grad)


def test_half_of_deep_mlps_blocks_split_its_repeat_and_keep_the_parameter_values():
    spec = validate_spec(presets.get("deep-mlp"))
    assert parameter_blocks(spec) == 17                     # 16 repeat iterations and the last linear
    first = validate_spec(freeze_half(spec, "first"))
    assert [(layer["type"], layer.get("times")) for layer in first["layers"]] == [("repeat", 8), ("repeat", 8),
                                                                                   ("linear", None)]
    assert first["layers"][0]["layers"][0]["frozen"] and "frozen" not in first["layers"][1]["layers"][0]
    last = validate_spec(freeze_half(spec, "last"))
    assert [layer.get("times") for layer in last["layers"]] == [9, 7, None] and last["layers"][2]["frozen"]
    assert len(frozen_names(first)) == len(frozen_names(last)) == 16             # 8 weights and 8 biases each
    plain = Model(spec).params
    for name, p in Model(first).params.items():            # renamed by the split, drawn in the same order
        assert any(np.array_equal(p.data, q.data) for q in plain.values()), name
    assert spec == validate_spec(presets.get("deep-mlp"))   # the edit copies


def test_a_model_with_one_parameter_block_has_no_half_to_freeze():
    assert freeze_half(validate_spec(presets.get("seed-tape")), "first") is not None
    single = validate_spec({"input": {"kind": "features", "size": 2}, "layers": [{"type": "linear", "out": 1}]})
    assert freeze_half(single, "first") is None


def test_the_freeze_levers_report_the_peaks_of_their_own_traces():
    spec = validate_spec({"batch": 32, "input": {"kind": "features", "size": 8}, "loss": {"type": "sum"},
                          "layers": [{"type": "repeat", "times": 4, "layers": [{"type": "linear", "out": 32},
                                                                              {"type": "tanh"}]},
                                     {"type": "linear", "out": 1}]})
    report = {lever.get("freeze"): lever for lever in levers(spec)["levers"] if lever.get("freeze")}
    for half in ("first", "last"):
        document, _ = record(validate_spec(freeze_half(spec, half)))
        assert report[half]["peak_bytes"] == document["summary"]["peak_bytes"]
        assert report[half]["grads_match"] is False          # frozen parameters get no gradient
    assert report["first"]["peak_bytes"] < report["last"]["peak_bytes"]
