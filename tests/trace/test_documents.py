"""What specific traces show: the seed's 5-op tape, the += at a tensor used twice, measured vs predicted peak,
each optimizer's state as optimizer memory."""
import json
from pathlib import Path

import numpy as np
import pytest

from backend.models import presets
from backend.driver import trace_spec
from backend.trace.document_versions import pack
from backend.trace.values import decode
from tests.schemas import assert_matches_schema

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCHEMA = json.loads((DOCS / "trace.schema.json").read_text())
EXPANDED_SCHEMA = json.loads((DOCS / "trace.v1.schema.json").read_text())


def by_id(document):
    return {t["id"]: t for t in document["tensors"]}


def test_seed_tape_is_the_chapters_five_op_table():
    document = trace_spec(presets.get("seed-tape"), measure=False)
    tensors = by_id(document)
    rows = [(e["op"], [tensors[i]["shape"] for i in e["inputs"]], [tensors[i]["name"] for i in e["saved"]])
            for e in document["tape"]]
    assert rows == [
        # The seed's table pins x and W1; PyTorch (and we) skip W1: x needs no gradient, so nothing reads W1.
        ("matmul", [[64, 1], [1, 64]], ["x"]),
        ("add", [[64, 64], [64]], []),
        ("relu", [[64, 64]], ["t2"]),
        ("matmul", [[64, 64], [64, 1]], ["t2", "layers[2].weight"]),
        ("sum", [[64, 1]], []),
    ]
    addresses = [tensors[i]["address"] for i in document["tape"][0]["inputs"]]
    assert addresses[0] == "0x7f21a000" and all(a.startswith("0x7f21") for a in addresses)


def test_lab1_trace_reports_the_labs_first_loss():
    document = trace_spec(presets.get("lab1-mlp"), measure=False)
    assert f"{document['loss']:.6f}" == "2.364331"
    assert [s["phase"] for s in document["steps"]][-3:] == ["optimizer"] * 3


def test_residual_unit_shows_both_contributions_and_their_sum_at_x():
    document = trace_spec(presets.get("residual-unit"), measure=False)
    tensors = by_id(document)
    merges = [acc for item in document["sweep"] for acc in item["accumulations"]
              if acc["into"] == "buffer" and tensors[acc["tensor"]]["scope"] == "layers[0]"]
    assert len(merges) == 1                 # x, the output of the layer named "x", feeds the skip and the branch
    merge = merges[0]
    skip, branch = (decode(tensors[p]["value"], tensors[p]["shape"]) for p in merge["parts"])
    total = decode(tensors[merge["total"]]["value"], tensors[merge["total"]]["shape"])
    np.testing.assert_allclose(skip + branch, total, rtol=2e-3, atol=2e-3)
    assert not np.allclose(skip, 0) and not np.allclose(branch, 0)
    senders = [c for i in document["sweep"] for c in i["contributions"] if c["to"] == merge["tensor"]]
    assert [c["grad"] for c in senders] == merge["parts"]


def test_predicted_and_measured_peaks_agree_at_the_chapters_lab3_shape():
    spec = {"name": "lab3", "dtype": "float64", "batch": 2048, "input": {"kind": "features", "size": 64},
            "layers": [{"type": "linear", "out": 2048}, {"type": "relu"}, {"type": "linear", "out": 1}],
            "loss": {"type": "sum"}}
    summary = trace_spec(spec)["summary"]
    predicted, measured = summary["peak_bytes"], summary["measured_peak_bytes"]
    assert predicted > 3 * 2048 * 2048 * 8 * 0.9
    assert abs(measured - predicted) / predicted < 0.05, (predicted, measured)


def test_forward_entries_say_whether_their_output_may_be_recomputed_and_why_not():
    document = trace_spec(presets.get("transformer-tiny"), measure=False)
    marks = {(e["op"], e["recompute"]["ok"]) for e in document["tape"]}
    assert ("softmax", True) in marks and ("gelu", True) in marks
    tensors = by_id(document)
    views = [e for e in document["tape"] if e["op"] == "reshape" and tensors[e["output"]].get("view")]
    assert views and all(not e["recompute"]["ok"] and "view" in e["recompute"]["reason"] for e in views)
    efficient = presets.get("transformer-tiny")
    for layer in efficient["layers"]:
        if layer["type"] == "transformer_block":
            layer["impl"] = "efficient"
    fused = [e for e in trace_spec(efficient, measure=False)["tape"] if e["op"] == "attention"]
    assert fused and all("fused op" in e["recompute"]["reason"] for e in fused)


@pytest.mark.parametrize("optimizer,buffers", [
    ({"type": "none"}, ()),
    ({"type": "sgd", "lr": 0.1}, ()),                                   # plain SGD keeps no state
    ({"type": "sgd", "lr": 0.1, "momentum": 0.9}, ("momentum",)),        # one buffer per parameter
    ({"type": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-4}, ("momentum",)),
    ({"type": "adam", "weight_decay": 0.1}, ("m", "v")),
    ({"type": "adamw"}, ("m", "v")),
])
def test_optimizer_state_is_optimizer_memory_born_at_each_parameters_step(optimizer, buffers):
    spec = {**presets.get("lab1-mlp"), "optimizer": optimizer}
    document = trace_spec(spec, measure=False)
    assert_matches_schema(document, EXPANDED_SCHEMA)
    assert_matches_schema(pack(document), SCHEMA)
    params = ("layers[0].weight", "layers[0].bias", "layers[2].weight")
    param_bytes = (64 + 64 + 64) * 8                                    # float64 (1,64), (64,), (64,1)
    summary = document["summary"]
    assert summary["by_kind_at_end"]["optimizer"] == len(buffers) * param_bytes
    assert summary["by_kind_at_end"]["param"] == param_bytes
    assert summary["by_kind_at_peak"]["optimizer"] == 0                # the peak is in backward, before any state
    state = [t for t in document["tensors"] if t["kind"] == "optimizer"]
    assert sorted(t["name"] for t in state) == sorted(f"{p}.{b}" for p in params for b in buffers)
    step_of = {document_tensor_name(document, s["param"]): s["index"] for s in document["steps"] if s["phase"] == "optimizer"}
    assert sorted(step_of) == (sorted(params) if optimizer["type"] != "none" else [])
    for t in state:
        assert t["born"] == step_of[t["name"].rsplit(".", 1)[0]] and t["freed"] is None
    by_step = [s["by_kind"]["optimizer"] for s in document["steps"]]
    assert by_step[-1] == len(buffers) * param_bytes and by_step[summary["forward_end_step"]] == 0


def document_tensor_name(document, uid):
    return next(t["name"] for t in document["tensors"] if t["id"] == uid)


@pytest.mark.parametrize("preset_id", presets.PRESETS)
def test_no_two_tensors_share_a_name_and_t_n_is_always_entry_ns_output(preset_id):
    """t<n> is the output of entry n: lab1-mlp's x² target was also called t4 beside sub's output t4 (found by a
    newcomer's walk), and so were frozen-backbone's unrecorded prefix, a micro-batch's rows and autocast's copy of x.
    Only a gradient's parts share d<name> (told apart by id), and constants of one value share `const <value>`."""
    document = trace_spec(presets.get(preset_id), measure=False)
    named = {}
    for t in document["tensors"]:
        if t["name"].startswith("t") and t["name"][1:].isdigit():
            assert t["produced_by"] == int(t["name"][1:]), t
        if t["kind"] != "grad" and not t["name"].startswith(("const ", "dt")):    # dt: a recorded backward's
            assert named.setdefault(t["name"], t["id"]) == t["id"], (t["name"], named[t["name"]], t["id"])
    names = {t["name"] for t in document["tensors"]}
    for t in document["tensors"]:       # x.view1 is named after a tensor that has that name (renamed with it)
        if ".view" in t["name"]:
            assert t["name"].rsplit(".view", 1)[0] in names, t["name"]
